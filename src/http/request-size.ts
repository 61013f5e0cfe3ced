// How large a request was as the client sent it: what an error answer is held to, and what a
// large body counts for against the rate limit.
import type { FastifyRequest } from 'fastify';

/**
 * The body's bytes: as announced in Content-Length, or, for a chunked body (which announces no
 * length), its parsed JSON written out again, never more than what was sent.
 */
export function bodyBytes(request: FastifyRequest): number {
  const announced = Number(request.raw.headers['content-length']);
  if (Number.isFinite(announced)) return announced;
  return request.body === undefined ? 0 : Buffer.byteLength(JSON.stringify(request.body) ?? '');
}

/** Request line, headers and body. */
export function requestBytes(request: FastifyRequest): number {
  const raw = request.raw;
  let bytes = (raw.method?.length ?? 0) + (raw.url?.length ?? 0) + ' HTTP/1.1\r\n\r\n'.length;
  for (const part of raw.rawHeaders) bytes += part.length + 2;
  return bytes + bodyBytes(request);
}
