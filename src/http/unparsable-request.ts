// The answer to a request Node's HTTP parser refused: written on the socket by hand, since no
// route (and no Fastify reply) ever sees it.
import type { Socket } from 'node:net';
import type { RateLimitDecision } from '../infra/rate-limiter.js';
import { ApiError } from '../shared/errors.js';

/**
 * The parser's errors about where the body ends (how request smuggling starts): the request is
 * refused as malformed, whichever header line the parser stopped in.
 */
const FRAMING_ERRORS = new Set([
  'HPE_UNEXPECTED_CONTENT_LENGTH',
  'HPE_INVALID_CONTENT_LENGTH',
  'HPE_INVALID_TRANSFER_ENCODING',
]);

/**
 * A request Node's HTTP parser could not read never reaches a route; it still gets the error
 * object and the contract's headers (spec 4.1.2), RateLimit-* counted against its address.
 */
export function answerUnparsableRequest(
  err: Error & { code?: string },
  socket: Socket,
  requestId: string,
  rateLimitOf: (address: string) => Promise<RateLimitDecision>,
  log: (line: Record<string, unknown>) => void,
): void {
  // Bytes that arrive after this side has ended the connection (a refused body's lingering close,
  // src/http/lingering-close.ts) can no longer be answered: the connection is cut.
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // The client ended its side of the connection in the middle of a request it had begun: it has
  // left. The request already has its "request aborted" line; answering would only refuse it again.
  if (err.code === 'HPE_INVALID_EOF_STATE' && requestInProgress(socket)) {
    socket.destroy();
    return;
  }
  const framing = err.code !== undefined && FRAMING_ERRORS.has(err.code);
  const header = err.code === 'HPE_HEADER_OVERFLOW' || framing ? null : unreadableHeader(err);
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError('headers_too_large')
      : framing
        ? new ApiError('malformed_request', {
            message:
              'The length of the request body cannot be read one way only: Content-Length beside ' +
              'Transfer-Encoding, two Content-Length headers, or one that is not a length.',
          })
        : header
          ? new ApiError('invalid_header', {
              message:
                `The value of the ${header} header is not one line of visible characters (a line break or ` +
                `control character was found in it; a value read from a file often ends in one).`,
              details: { header },
            })
          : new ApiError('malformed_request');
  // Its one log line, like every request's: nothing of what it sent, which could not be parsed.
  log({ reqId: requestId, remoteAddress: socket.remoteAddress, res: { statusCode: error.status }, code: error.code });
  const body = JSON.stringify({
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      ...(header ? { details: { header } } : {}),
      request_id: requestId,
    },
  });
  void rateLimitOf(socket.remoteAddress ?? 'unknown')
    .catch(() => null)
    .then((d) => {
      if (!socket.writable) return;
      const limits = d
        ? [
            `RateLimit-Limit: ${d.limit}`,
            `RateLimit-Remaining: ${d.remaining}`,
            `RateLimit-Reset: ${new Date(d.resetAtMs).toISOString()}`,
          ]
        : [];
      socket.end(
        [
          `HTTP/1.1 ${error.status} ${error.status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}`,
          'Content-Type: application/json; charset=utf-8',
          `Content-Length: ${Buffer.byteLength(body)}`,
          `X-Request-Id: ${requestId}`,
          'Cache-Control: no-store',
          'X-Content-Type-Options: nosniff',
          ...limits,
          'Connection: close',
          '',
          body,
        ].join('\r\n'),
      );
    });
}

/**
 * The name of the header whose line Node's parser stopped in, when it stopped in a header line
 * (a value with a line break or a control character: a key read from a file with its newline);
 * null when it stopped in the request line or the name is not a header name. Only the name is
 * taken from what was sent, never the value, and only when it is a short token.
 */
function unreadableHeader(err: Error & { bytesParsed?: number; rawPacket?: unknown }): string | null {
  if (!Buffer.isBuffer(err.rawPacket) || typeof err.bytesParsed !== 'number') return null;
  const sent = err.rawPacket.subarray(0, Math.min(err.bytesParsed, err.rawPacket.length));
  const requestLineEnd = sent.indexOf('\n');
  const lineStart = sent.lastIndexOf('\n', sent.length - 1) + 1;
  if (requestLineEnd < 0 || lineStart <= requestLineEnd) return null;
  const name = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}):/.exec(sent.subarray(lineStart).toString('latin1'));
  return name ? name[1]! : null;
}

/** Whether Node's HTTP server has handed a request of this connection on, and not answered it yet. */
function requestInProgress(socket: Socket): boolean {
  // Node's server sets the connection's current response here while a request is in progress.
  return (socket as Socket & { _httpMessage?: unknown })._httpMessage != null;
}
