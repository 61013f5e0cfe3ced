// The error answers of each operation: every status the service can give for it, each with the
// error object and the codes it can carry there (listed in the description and, for programs and
// tests, as x-error-codes). The route declares what it is (a read,
// a list, a write; with a path, with a 404, with a 410) and the codes follow from that here, in
// one place. The same schemas serialize the answers and make the published documents.
import type { TSchema } from 'typebox';
import type { ErrorCode } from '../shared/errors.js';
import { ErrorBody } from '../shared/schemas.js';

/** What an operation is, as far as its errors go. */
export interface ErrorTraits {
  /** a write: JSON body, Idempotency-Key, 409/413/415/422 */
  write?: boolean;
  /** a write that takes no body (a deletion): no 422; a stray body is still parsed, so 400/413/415 stay */
  bodiless?: boolean;
  /** path parameters: 400 invalid_path_parameter */
  path?: boolean;
  /** a query schema (every read): 400 invalid_query_parameter for a bad or unknown parameter */
  query?: boolean;
  /** pages with a cursor: 400 invalid_cursor */
  cursor?: boolean;
  /** 404 resource_not_found (an id that names nothing; a write's erased stored answer) */
  notFound?: boolean;
  /** 410 events_expired (the events feed) */
  expires?: boolean;
}

/** What each code means, as the documents list it under its status. */
const WHEN: Record<ErrorCode, string> = {
  invalid_query_parameter:
    'a query parameter is invalid, or is not one this operation takes (unknown query parameter: "Unknown parameter <name>."); details.parameter names it',
  invalid_path_parameter: 'a path parameter breaks its schema (e.g. an id that is not a UUID)',
  invalid_cursor: 'the cursor was not issued for this workspace, list and filters',
  invalid_json: 'the body is not JSON: malformed, empty, invalid UTF-8, a lone surrogate',
  idempotency_key_missing: 'no Idempotency-Key header',
  idempotency_key_invalid: 'Idempotency-Key is not 8 to 128 visible ASCII characters',
  invalid_header:
    'a header is refused: an HTTP/1.1 request without Host, a header value with a line break or control character (details.header names it), Content-Length with Transfer-Encoding',
  malformed_request: 'the HTTP parser cannot read the request; the connection is closed',
  headers_too_large: 'the request headers or URL are too large for the HTTP parser; the connection is closed',
  invalid_api_key: 'the API key is missing, malformed, unknown, expired or revoked',
  insufficient_scope: 'the key lacks the scope the operation (or a filter of it) needs; details.required_scope',
  workspace_suspended: 'the workspace of the key is suspended',
  resource_not_found: 'no such resource in the workspace of the key',
  route_not_found: 'no such operation',
  idempotency_key_reused: 'the Idempotency-Key was used with a different request',
  idempotency_key_in_use: 'a request with this Idempotency-Key is still running; see Retry-After',
  events_expired: 'retention deleted events after this position; resynchronize (docs/sync.md)',
  payload_too_large: 'the body is over the size limit; refused before it is read',
  unsupported_media_type: 'the body is not application/json',
  validation_failed: 'the body breaks its schema or a cross-field rule; details.errors lists the problems',
  rate_limit_exceeded: 'the key is past its rate limit; see Retry-After',
  concurrency_limit_exceeded: 'the key already has its number of requests in progress; see Retry-After',
  address_rate_limit_exceeded: 'requests without a valid key from this address are past their limit; see Retry-After',
  internal_error: 'an unexpected error, logged with the request id',
  service_unavailable: 'the store cannot be reached or gave up; see Retry-After',
  server_overloaded: "the process is saturated and this key's workspace holds the most of it; see Retry-After",
};

/** The codes of `codes` when `on`; none otherwise. */
const when = (on: boolean | undefined, codes: ErrorCode[]): ErrorCode[] => (on ? codes : []);

/**
 * Each error status: the name of its answer (and of its schema) in the published documents, what
 * it says, and the codes an operation with these traits can answer under it (none: the operation
 * does not answer this status).
 */
const STATUSES: Record<number, { name: string; summary: string; codes: (t: ErrorTraits) => ErrorCode[] }> = {
  400: {
    name: 'BadRequest',
    summary: 'The request is invalid.',
    codes: (t) => [
      ...when(t.query, ['invalid_query_parameter']),
      ...when(t.path, ['invalid_path_parameter']),
      ...when(t.cursor, ['invalid_cursor']),
      ...when(t.write, ['invalid_json', 'idempotency_key_missing', 'idempotency_key_invalid']),
      // Any request: a header the service refuses (no Host on HTTP/1.1), or one Node cannot parse.
      'invalid_header',
      'malformed_request',
    ],
  },
  401: { name: 'Unauthorized', summary: 'No valid API key.', codes: () => ['invalid_api_key'] },
  403: {
    name: 'Forbidden',
    summary: 'The key may not do this.',
    codes: () => ['insufficient_scope', 'workspace_suspended'],
  },
  404: { name: 'NotFound', summary: 'No such resource.', codes: (t) => when(t.notFound, ['resource_not_found']) },
  409: {
    name: 'Conflict',
    summary: 'The Idempotency-Key cannot be used for this request now.',
    codes: (t) => when(t.write, ['idempotency_key_reused', 'idempotency_key_in_use']),
  },
  410: {
    name: 'Gone',
    summary: 'The position is no longer in the feed.',
    codes: (t) => when(t.expires, ['events_expired']),
  },
  413: {
    name: 'BodyTooLarge',
    summary: 'The request body is too large.',
    codes: (t) => when(t.write, ['payload_too_large']),
  },
  415: {
    name: 'UnsupportedMediaType',
    summary: 'The request body is not JSON.',
    codes: (t) => when(t.write, ['unsupported_media_type']),
  },
  422: {
    name: 'UnprocessableEntity',
    summary: 'The request body is invalid.',
    codes: (t) => when(t.write && !t.bodiless, ['validation_failed']),
  },
  // A request without a valid key counts against its address, so any operation can answer it.
  429: {
    name: 'TooManyRequests',
    summary: 'Too many requests; nothing was done.',
    codes: () => ['rate_limit_exceeded', 'concurrency_limit_exceeded', 'address_rate_limit_exceeded'],
  },
  // Request headers or URL past the HTTP parser's limit, whatever the operation.
  431: { name: 'HeadersTooLarge', summary: 'Request header fields too large.', codes: () => ['headers_too_large'] },
  500: { name: 'ServerError', summary: 'Unexpected error.', codes: () => ['internal_error'] },
  503: {
    name: 'ServiceUnavailable',
    summary: 'Service temporarily unavailable; retry after Retry-After.',
    codes: () => ['service_unavailable', 'server_overloaded'],
  },
};

/** The extension of an error answer in the documents that lists the codes it can carry. */
export const ERROR_CODES_KEY = 'x-error-codes';

/**
 * The name of an error answer in the documents (components.responses): its status's, and for a
 * 400, whose codes differ with the operation, the kind of operation its codes show.
 */
export function errorResponseName(status: number, codes: readonly string[]): string {
  const name = STATUSES[status]?.name;
  if (name === undefined) throw new Error(`no name for the error status ${status}`);
  if (status !== 400) return name;
  const path = codes.includes('invalid_path_parameter');
  if (codes.includes('idempotency_key_missing')) return `${path ? 'WriteById' : 'Write'}${name}`;
  if (codes.includes('invalid_cursor')) return `${path ? 'NestedList' : 'List'}${name}`;
  return `${path ? 'Get' : 'Read'}${name}`;
}

/** The error object under `status`, with the codes it can carry there listed and explained. */
function errorAnswer(status: number, codes: ErrorCode[]): TSchema {
  const list = codes.map((c) => `\n- \`${c}\`: ${WHEN[c]}`).join('');
  return {
    ...ErrorBody,
    description: `${STATUSES[status]!.summary} error.code is one of:${list}`,
    [ERROR_CODES_KEY]: codes,
  };
}

function errorResponses(t: ErrorTraits): Record<number, TSchema> {
  const answers: Record<number, TSchema> = {};
  for (const [status, { codes }] of Object.entries(STATUSES)) {
    const answered = codes(t);
    if (answered.length > 0) answers[Number(status)] = errorAnswer(Number(status), answered);
  }
  return answers;
}

/** A read's answers: `success`, and the errors of a read with these traits. */
export const readResponses = <R extends Record<number, TSchema>>(success: R, traits: Omit<ErrorTraits, 'write'>) => ({
  ...success,
  ...errorResponses({ query: true, ...traits }),
});

/** A write's answers: `success`, and the errors of a write (every write may answer 404: a replay whose stored answer was erased). */
export const writeResponses = <R extends Record<number, TSchema>>(
  success: R,
  traits: { path?: boolean; bodiless?: boolean } = {},
) => ({
  ...success,
  ...errorResponses({ write: true, notFound: true, ...traits }),
});
