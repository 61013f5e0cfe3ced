// Conventions of every response and every JSON write: the request id header, no caching of API
// answers, no content sniffing, JSON in UTF-8 as the only request body format, and the
// Idempotency-Key header on writes (checked before the body, so a write without a key is refused
// the same way whatever its body).
import { isUtf8 } from 'node:buffer';
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest, preValidationHookHandler } from 'fastify';
import { ApiError, validationFailed } from '../shared/errors.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../shared/schemas.js';
import { describeRule, type ParamSchema } from './errors.js';
import { recordBodyBytes } from '../http/request-size.js';
import { hooksOf } from '../http/route-hooks.js';
import './types.js';

const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);

function isJsonContentType(request: FastifyRequest): boolean {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/json';
}

const LONE_SURROGATE = /\p{Surrogate}/u;
/** Valid UTF-8 cannot encode a surrogate: JSON text holds one only as a \uD800-\uDFFF escape. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
/** Whether `text` is JSON by the language's own parser, which keeps any key. */
const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};
const PROTOTYPE_KEY_PROBLEM =
  'holds a "__proto__" key, or a "constructor" key with "prototype" in it: no body has a property of either name';

/** Whether a parsed JSON value holds, in a key or a string, a surrogate that is not half of a pair. */
function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).some(([k, v]) => LONE_SURROGATE.test(k) || hasLoneSurrogate(v));
  }
  return false;
}

/** The query parameters a route declares as integers, with their rules (for the message). */
function integerQueryParameters(schema: unknown): [string, ParamSchema][] {
  const properties = (schema as { properties?: Record<string, ParamSchema> } | undefined)?.properties ?? {};
  return Object.entries(properties).filter(([, rule]) => rule.type === 'integer');
}

/**
 * Integers in a query string are written in decimal digits: the validator's number coercion would
 * also take 0x10, 1e1, +5 or " 1", which no client means as a page size.
 */
function decimalIntegersOnly(integers: [string, ParamSchema][]): preValidationHookHandler {
  return (request, _reply, done) => {
    const query = request.query as Record<string, unknown>;
    for (const [name, rule] of integers) {
      const value = query[name];
      if (typeof value === 'string' && !/^-?[0-9]+$/.test(value)) {
        done(
          new ApiError('invalid_query_parameter', {
            message: `${describeRule(name, rule)}.`,
            details: { parameter: name },
          }),
        );
        return;
      }
    }
    done();
  };
}

/**
 * A write is JSON with a well-formed Idempotency-Key, checked before its body is validated. A
 * write that takes no body (a deletion) needs no Content-Type.
 */
const idempotentWriteHeaders: preValidationHookHandler = (request, _reply, done) => {
  const takesBody = request.routeOptions.schema?.body !== undefined;
  if (takesBody && !isJsonContentType(request)) return done(new ApiError('unsupported_media_type'));
  const key = request.headers['idempotency-key'];
  if (key === undefined)
    return done(new ApiError('idempotency_key_missing', { details: { header: 'Idempotency-Key' } }));
  if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
    return done(new ApiError('idempotency_key_invalid', { details: { header: 'Idempotency-Key' } }));
  }
  done();
};

interface RequestConventionsOptions {
  /**
   * Whether shutdown has begun: a request that arrives then is refused with the API's own 503,
   * in-flight ones finish, and every answer closes its connection.
   */
  closing: () => boolean;
}

export default fp<RequestConventionsOptions>(
  async function requestConventions(app: FastifyInstance, opts: RequestConventionsOptions) {
    // A callback, not an async function: nothing here waits, and every request runs it.
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id);
      reply.header('cache-control', 'no-store');
      reply.header('x-content-type-options', 'nosniff');
      if (opts.closing()) {
        done(new ApiError('service_unavailable', { retryAfter: 1 }));
        return;
      }
      // HTTP/1.1 requires Host (RFC 9112, 3.2); refused here rather than by Node, so the answer
      // has the error object and every header of the contract.
      if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
        // A client this far from HTTP/1.1 is not trusted with the rest of its connection.
        reply.header('connection', 'close');
        done(
          new ApiError('invalid_header', {
            message: 'An HTTP/1.1 request must carry a Host header.',
            details: { header: 'Host' },
          }),
        );
        return;
      }
      done();
    });
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (opts.closing()) reply.header('connection', 'close');
      done(null, payload);
    });

    // Only JSON bodies are accepted; any other media type is a 415 before the body is read. JSON is
    // UTF-8 (RFC 8259, 8.1) without lone surrogates (I-JSON, RFC 7493): a body that breaks either
    // is refused, rather than stored with U+FFFD in place of what the client sent.
    app.removeAllContentTypeParsers();
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
      recordBodyBytes(request, body.length);
      // A write without a body (a deletion) sent by a client that labels every request as JSON.
      if (body.length === 0 && request.routeOptions.schema?.body === undefined) {
        done(null, undefined);
        return;
      }
      if (!isUtf8(body)) {
        done(new ApiError('invalid_json', { message: 'The request body is not valid UTF-8.' }), undefined);
        return;
      }
      const text = body.toString('utf8');
      void parseJson(request, text, (err, value) => {
        if (!err && SURROGATE_ESCAPE.test(text) && hasLoneSurrogate(value)) {
          done(
            new ApiError('invalid_json', {
              message: 'The request body holds a lone surrogate (a \\uD800-\\uDFFF escape without its pair).',
            }),
            undefined,
          );
          return;
        }
        // Valid JSON, refused for a key that names an object's prototype (the parser, secure-json-parse,
        // says no more than "not valid JSON"): no body has a property of that name, so it is a 422
        // like any unknown property.
        if (err && isJson(text)) {
          done(validationFailed([{ field: null, message: PROTOTYPE_KEY_PROBLEM }]), undefined);
          return;
        }
        done(err, value);
      });
    });

    // The checks below concern some routes only: they are attached to those routes as they are
    // declared, so no other request pays for them.
    app.addHook('onRoute', (route) => {
      const checks: preValidationHookHandler[] = [];
      const integers = integerQueryParameters(route.schema?.querystring);
      if (integers.length > 0) checks.push(decimalIntegersOnly(integers));
      if (route.config?.idempotentWrite) checks.push(idempotentWriteHeaders);
      if (checks.length === 0) return;
      route.preValidation = [...checks, ...hooksOf(route.preValidation)];
    });
  },
  { name: 'request-conventions' },
);
