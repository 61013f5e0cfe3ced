// Conventions of every response and every JSON write: the request id header, no caching of API
// answers, JSON as the only request body format, and the Idempotency-Key header on writes
// (checked before the body, so a write without a key is refused the same way whatever its body).
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../shared/errors.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../shared/schemas.js';
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
    });

    // Only JSON bodies are accepted; any other media type is a 415 before the body is read.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));

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
