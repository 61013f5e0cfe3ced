// The one place where errors become responses: every failure, whatever raised it, leaves as the
// spec's error object (section 7) with request_id equal to the X-Request-Id header. Messages are
// written here or in ApiError throws; nothing from an unexpected error (SQL, stack, values)
// reaches the client.
import type { Socket } from 'node:net';
import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { isRolledBackConflict, isStoreUnavailable } from '../infra/database.js';
import { lingerAfterRefusal } from '../http/lingering-close.js';
import { requestBytes } from '../http/request-size.js';
import { ApiError, clipName } from '../shared/errors.js';
import './types.js';

// Bodies are validated by src/http/body-validator.ts, which answers with its own ApiError.
type ValidationContext = 'querystring' | 'params' | 'headers';

export function renderError(request: FastifyRequest, reply: FastifyReply, err: ApiError): FastifyReply {
  // Also set here: an error can be raised before the hook that sets them has run.
  reply
    .header('x-request-id', request.id)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff');
  if (err.retryAfter !== undefined) reply.header('retry-after', err.retryAfter);
  if (err.challenge !== undefined) reply.header('www-authenticate', err.challenge);
  const error: Record<string, unknown> = {
    type: err.type,
    code: err.code,
    message: err.message,
    request_id: request.id,
  };
  const budget = errorAnswerBudget(request);
  if (err.details) {
    const fixedBytes = Buffer.byteLength(JSON.stringify({ error })) + ',"details":'.length;
    error.details = err.detailsWithin(budget - fixedBytes);
    // Details that cannot be shortened and still do not fit are left out: the bound holds for
    // every answer, whatever built it.
    if (Buffer.byteLength(JSON.stringify({ error })) > budget) delete error.details;
  }
  return reply.code(err.status).type('application/json; charset=utf-8').send({ error });
}

/** No error answer is larger than this (docs/security.md, API4)... */
const MAX_ERROR_ANSWER_BYTES = 64 * 1024;
/** ...nor than its request, except that this much is always allowed: the error object's own fields and the few problems a small body holds. */
const MIN_ERROR_ANSWER_BYTES = 4 * 1024;

/** The bytes an error answer to this request may take. */
function errorAnswerBudget(request: FastifyRequest): number {
  return Math.min(MAX_ERROR_ANSWER_BYTES, Math.max(MIN_ERROR_ANSWER_BYTES, requestBytes(request)));
}

interface ErrorsOptions {
  /**
   * Adds the RateLimit headers to an error answered before the guard could (the store failed
   * during authentication, the request was malformed before routing): every answer carries them.
   */
  ensureRateLimitHeaders: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** where connections reading the rest of a refused body are kept while they do */
  lingering: Set<Socket>;
}

export default fp<ErrorsOptions>(
  async function errors(app: FastifyInstance, opts: ErrorsOptions) {
    app.setErrorHandler(async (raw: FastifyError, request, reply) => {
      // A request that matched no route is a 404 whatever else is wrong with it (a body method
      // without a body, say): its answer must not depend on how we would have parsed it.
      // A static file path that leaves its folder (/docs/static/../../x) names no page: 404.
      const err =
        (request.is404 && !(raw instanceof ApiError)) || raw.code === 'FST_STATIC_FORBIDDEN_PATH'
          ? routeNotFound(request)
          : toApiError(raw, request.method);
      // A shed request is a refusal by design, not a failure: its "request completed" line and
      // wsapi_load_shed_total tell of it, without an error line and its stack for each one.
      // A store that cannot answer is an outage, not a fault of the code: one warning line each,
      // without a stack (an outage answers hundreds a second, every one the same).
      if (err.code === 'service_unavailable') {
        request.log.warn({ error: { name: raw.name, code: raw.code }, code: err.code }, 'request failed');
      } else if (err.status >= 500 && err.code !== 'server_overloaded') {
        // Only what identifies the failure: driver messages and error properties can carry the
        // statement's parameters, which are a tenant's data.
        request.log.error(
          { error: { name: raw.name, code: raw.code, stack: stackFrames(raw) }, code: err.code },
          'request failed',
        );
      }
      // Refused before its body was read: Fastify closes the connection after the answer; the rest
      // of the body is read first, so the client sees the answer rather than a reset.
      if (err.code === 'payload_too_large') lingerAfterRefusal(request.raw, opts.lingering);
      if (!request.routeOptions.config.unmetered) await opts.ensureRateLimitHeaders(request, reply);
      return renderError(request, reply, err);
    });

    app.setNotFoundHandler(async (request, reply) => renderError(request, reply, routeNotFound(request)));
  },
  { name: 'errors' },
);

export function routeNotFound(request: FastifyRequest): ApiError {
  return new ApiError('route_not_found', {
    message: `No operation ${request.method} ${shortPath(request.url)}. The interface descriptions are at /v1/openapi.json and /v2/openapi.json.`,
  });
}

/** The stack without its first line, which repeats the message. */
function stackFrames(err: Error): string | undefined {
  return err.stack?.split('\n').slice(1).join('\n');
}

/** The path of a URL, cut short: a message repeats enough of the request to recognize it, no more. */
function shortPath(url: string): string {
  const path = url.split('?')[0]!;
  return path.length > 100 ? `${path.slice(0, 100)}…` : path;
}

function outOfRange(method: string): ApiError {
  return method === 'GET' || method === 'HEAD'
    ? new ApiError('invalid_query_parameter', {
        message:
          'A parameter holds a value the service cannot compare: a NUL character, a date before year 1 or after 9999, or an offset beyond ±15:59.',
      })
    : new ApiError('validation_failed', {
        message: 'The body holds a value the service cannot store, such as a NUL character.',
      });
}

function toApiError(err: FastifyError, method: string): ApiError {
  if (err instanceof ApiError) return err;
  if (err.validation)
    return fromValidation(err.validationContext as ValidationContext, err.validation as ErrorObject[]);
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', { message: 'The request body is empty; send a JSON object.' });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_json');
    default:
      break;
  }
  if (err instanceof SyntaxError || err.statusCode === 400) return new ApiError('invalid_json');
  if (err.statusCode === 413) return new ApiError('payload_too_large');
  if (err.statusCode === 415) return new ApiError('unsupported_media_type');
  if (isStoreUnavailable(err)) return new ApiError('service_unavailable', { retryAfter: 2 });
  // Crossed by other writers of the workspace on every attempt (retryingConflicts): nothing was
  // written, and the request may be sent again as it is.
  if (isRolledBackConflict(err)) {
    return new ApiError('service_unavailable', {
      retryAfter: 1,
      message:
        'Other writes to this workspace crossed this request each time it was run; nothing was written. Retry after the time in Retry-After.',
    });
  }
  // SQLSTATE class 22, data exception: a value the validator let through that PostgreSQL cannot
  // hold (a NUL character, a date beyond its range, an offset beyond ±15:59).
  if (typeof err.code === 'string' && /^22[0-9A-Z]{3}$/.test(err.code)) return outOfRange(method);
  return new ApiError('internal_error');
}

// ------------------------------------------------------------------------------- validation messages

export interface ParamSchema {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  enum?: unknown[];
  /** a list of values in one parameter: at most `maxValues`, each matching `value` */
  'x-comma-separated'?: { maxValues: number; value: string };
}

/** "limit must be an integer from 1 to 100", written from the parameter's own schema. */
export function describeRule(name: string, schema: ParamSchema | undefined): string {
  if (!schema) return `${name} is invalid`;
  if (schema.enum) return `${name} must be one of: ${schema.enum.join(', ')}`;
  if (schema.type === 'integer' && schema.minimum !== undefined && schema.maximum !== undefined) {
    return `${name} must be an integer from ${schema.minimum} to ${schema.maximum}`;
  }
  if (schema.type === 'boolean') return `${name} must be true or false`;
  if (schema.format === 'date-time') return `${name} must be an RFC 3339 date-time, e.g. 2026-11-22T06:05:43.123Z`;
  if (schema.format === 'uuid') return `${name} must be a UUID`;
  const list = schema['x-comma-separated'];
  if (list) return `${name} must be 1 to ${list.maxValues} comma-separated values, each matching ${list.value}`;
  // An empty value breaks a minimum length of 1 or a pattern: the rule says both bounds then.
  const length = schema.minLength
    ? `${schema.minLength} to ${schema.maxLength ?? 'any number of'} characters`
    : schema.maxLength !== undefined
      ? `at most ${schema.maxLength} characters`
      : undefined;
  if (schema.pattern) return `${name} must be ${length ?? 'characters'} matching ${schema.pattern}`;
  if (length) return `${name} must be ${length}`;
  return `${name} is invalid`;
}

function fromValidation(context: ValidationContext, errors: ErrorObject[]): ApiError {
  const first = errors[0];
  const name = first ? clipName(parameterName(first)) : 'parameter';
  const unknown = first?.keyword === 'additionalProperties';
  // A query parameter given more than once arrives as a list of its values.
  const repeated = first?.keyword === 'type' && Array.isArray(first.data) ? first.data.length : 0;
  const message = unknown
    ? `Unknown parameter ${name}.`
    : repeated
      ? `${name} is given ${repeated} times; give it once (${describeRule(name, first?.parentSchema as ParamSchema)}).`
      : `${describeRule(name, first?.parentSchema as ParamSchema)}.`;
  switch (context) {
    case 'querystring':
      return new ApiError('invalid_query_parameter', { message, details: { parameter: name } });
    case 'params':
      return new ApiError('invalid_path_parameter', { message, details: { parameter: name } });
    case 'headers':
      return name === 'idempotency-key'
        ? new ApiError('idempotency_key_invalid', { details: { header: 'Idempotency-Key' } })
        : new ApiError('invalid_header', { message, details: { header: name } });
  }
}

function parameterName(e: ErrorObject): string {
  const p = e.params as { additionalProperty?: string; missingProperty?: string };
  return p.additionalProperty ?? p.missingProperty ?? (e.instancePath.replace(/^\//, '') || 'parameter');
}
