// What is left of a refused request body is read and thrown away before the refusal is sent.
import type { IncomingMessage } from 'node:http';

/** Bounds of the draining: past either, the connection is closed as soon as the answer is sent. */
export const DRAIN_LIMITS = { bytes: 16 * 1024 * 1024, milliseconds: 10_000 } as const;

/**
 * Reads and discards the rest of a request body. Answering while the client is still sending (a
 * body over the limit) and then closing the connection reaches many clients (fetch, undici, most
 * HTTP libraries) as a reset instead of the 413, at random; once the body is read, the client gets
 * the answer every time and keeps its connection. Nothing read is kept. Resolves true when the body
 * ended within the bounds; false when it is larger than the bound in bytes, takes longer than the
 * bound in time, or the connection failed — the caller then closes the connection.
 */
export function drainRequestBody(raw: IncomingMessage, limits = DRAIN_LIMITS): Promise<boolean> {
  if (raw.complete) return Promise.resolve(true);
  const declared = Number(raw.headers['content-length']);
  if (declared > limits.bytes) return Promise.resolve(false);
  return new Promise((resolve) => {
    let received = 0;
    const finish = (drained: boolean) => {
      clearTimeout(timer);
      raw.off('data', onData).off('end', onEnd).off('error', onFailure).off('close', onFailure);
      resolve(drained);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limits.bytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onFailure = () => finish(raw.complete);
    const timer = setTimeout(() => finish(false), limits.milliseconds);
    raw.on('data', onData).on('end', onEnd).on('error', onFailure).on('close', onFailure);
    raw.resume();
  });
}
