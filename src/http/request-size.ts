// How large a request was as the client sent it: what an error answer is held to, and what a
// large body counts for against the rate limit.
import type { FastifyRequest } from 'fastify';

/** The bytes of each body read whole, as received (set by the JSON body parser). */
const received = new WeakMap<FastifyRequest, number>();

export function recordBodyBytes(request: FastifyRequest, bytes: number): void {
  received.set(request, bytes);
}

/**
 * The body's bytes: as received once it has been read, else as announced in Content-Length (a
 * body not read yet, or refused before it was), else 0.
 */
export function bodyBytes(request: FastifyRequest): number {
  const read = received.get(request);
  if (read !== undefined) return read;
  const announced = Number(request.raw.headers['content-length']);
  return Number.isFinite(announced) ? announced : 0;
}

/** Request line, headers and body. */
export function requestBytes(request: FastifyRequest): number {
  const raw = request.raw;
  let bytes = (raw.method?.length ?? 0) + (raw.url?.length ?? 0) + ' HTTP/1.1\r\n\r\n'.length;
  for (const part of raw.rawHeaders) bytes += part.length + 2;
  return bytes + bodyBytes(request);
}
