// A refused request body is read and thrown away after the refusal, before the connection closes.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How much of a refused body is read, and for how long, before the connection is cut. */
export const LINGER_LIMITS = { bytes: 16 * 1024 * 1024, milliseconds: 10_000 } as const;

/**
 * Lingering close, for a request answered before its body was read (a body over the limit). The
 * answer goes out at once, with `Connection: close`. Node would then close the socket with the
 * client's unread bytes in its buffer, and the kernel answers those with a reset, which many
 * clients (fetch, undici, most HTTP libraries) see before the answer, at random: they report a
 * network error instead of the 413. Instead, the service ends its side of the connection, reads and
 * discards what the client still sends, and closes once the client has sent it all — or cuts the
 * connection when more than `limits.bytes` arrive or `limits.milliseconds` pass. A body announced
 * beyond the bound is not waited for at all.
 */
export function lingerAfterRefusal(raw: IncomingMessage, lingering: Set<Socket>, limits = LINGER_LIMITS): void {
  const socket = raw.socket;
  if (raw.complete || socket.destroyed) return;
  if (Number(raw.headers['content-length']) > limits.bytes) return;
  // Node ends a `Connection: close` exchange with destroySoon(), which closes the socket as soon as
  // the answer is written; ending only our side keeps it readable. Net sockets of an HTTP server do
  // not allow half-open connections: once the client ends its side too, the socket is closed.
  Object.assign(socket, { destroySoon: () => socket.end() });
  // Counted on the socket, not the request: bytes sent after the body (a pipelined request, junk)
  // go to the HTTP parser, never to the request, and count as much.
  const from = socket.bytesRead;
  const cut = () => socket.destroy();
  const timer = setTimeout(cut, limits.milliseconds).unref();
  const watch = setInterval(() => {
    if (socket.bytesRead - from > limits.bytes) cut();
  }, 20).unref();
  lingering.add(socket);
  socket.once('close', () => {
    clearTimeout(timer);
    clearInterval(watch);
    lingering.delete(socket);
  });
  raw.on('data', () => {
    if (socket.bytesRead - from > limits.bytes) cut();
  });
  raw.once('end', () => socket.end());
  raw.resume();
}
