// Response schemas every route shares: the error object under each status it can answer with.
import type { TSchema } from 'typebox';
import { ErrorBody } from '../shared/schemas.js';

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (bad query or path parameter, malformed JSON, missing or bad Idempotency-Key, foreign cursor).',
  401: 'Missing, malformed, unknown, expired or revoked API key.',
  403: 'Workspace suspended, or the key lacks the required scope.',
  404: 'No such resource in this workspace.',
  409: 'Idempotency-Key reused with a different request, or still in use by a concurrent request.',
  410: 'events_expired: retention deleted events after this position; resynchronize (docs/sync.md).',
  413: 'Request body too large.',
  415: 'Request body is not application/json.',
  422: 'The body breaks its schema or a cross-field rule.',
  429: 'Rate limit exceeded; see Retry-After.',
  500: 'Unexpected error.',
  503: 'Service temporarily unavailable; see Retry-After.',
};

const READ_ERRORS = [400, 401, 403, 404, 429, 500, 503];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503];

function errorResponses(statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((s) => [s, { ...ErrorBody, description: ERROR_DESCRIPTIONS[s] }]));
}

export const readResponses = <R extends Record<number, TSchema>>(success: R) => ({
  ...success,
  ...errorResponses(READ_ERRORS),
});
/** The events feed: a read that can also answer 410 when its position has expired. */
export const feedResponses = <R extends Record<number, TSchema>>(success: R) => ({
  ...success,
  ...errorResponses([...READ_ERRORS, 410]),
});
export const writeResponses = <R extends Record<number, TSchema>>(success: R) => ({
  ...success,
  ...errorResponses(WRITE_ERRORS),
});
