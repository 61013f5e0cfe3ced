// Conventions of every response and every JSON write: the request id header, no caching of API
// answers, JSON as the only request body format, and the Idempotency-Key header on writes
// (checked before the body, so a write without a key is refused the same way whatever its body).
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../shared/errors.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../shared/schemas.js';
import { describeRule, type ParamSchema } from './errors.js';
import './types.js';

const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);

export function isJsonContentType(request: FastifyRequest): boolean {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/json';
}

export default fp(
  async function requestConventions(app: FastifyInstance) {
    app.addHook('onRequest', async (request, reply) => {
      reply.header('x-request-id', request.id);
      reply.header('cache-control', 'no-store');
      // HTTP/1.1 requires Host (RFC 9112, 3.2); refused here rather than by Node, so the answer
      // has the error object and every header of the contract.
      if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
        // A client this far from HTTP/1.1 is not trusted with the rest of its connection.
        reply.header('connection', 'close');
        throw new ApiError('invalid_header', {
          message: 'An HTTP/1.1 request must carry a Host header.',
          details: { header: 'Host' },
        });
      }
    });

    // Only JSON bodies are accepted; any other media type is a 415 before the body is read.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));

    // Integers in a query string are written in decimal digits: the validator's number coercion
    // would also take 0x10, 1e1, +5 or " 1", which no client means as a page size.
    app.addHook('preValidation', async (request) => {
      const schema = request.routeOptions.schema?.querystring as
        { properties?: Record<string, ParamSchema> } | undefined;
      if (!schema?.properties) return;
      const query = request.query as Record<string, unknown>;
      for (const [name, rule] of Object.entries(schema.properties)) {
        const value = query[name];
        if (rule.type === 'integer' && typeof value === 'string' && !/^-?[0-9]+$/.test(value)) {
          throw new ApiError('invalid_query_parameter', {
            message: `${describeRule(name, rule)}.`,
            details: { parameter: name },
          });
        }
      }
    });

    app.addHook('preValidation', async (request) => {
      if (!request.routeOptions.config.idempotentWrite) return;
      if (!isJsonContentType(request)) throw new ApiError('unsupported_media_type');
      const key = request.headers['idempotency-key'];
      if (key === undefined) throw new ApiError('idempotency_key_missing', { details: { header: 'Idempotency-Key' } });
      if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
        throw new ApiError('idempotency_key_invalid', { details: { header: 'Idempotency-Key' } });
      }
    });
  },
  { name: 'request-conventions' },
);
