// The published interface descriptions: one OpenAPI 3.1 document per version, generated from the
// route schemas themselves (so they cannot drift from what the service validates and sends), with
// the conventions every operation shares added once here.
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';

interface DocumentInfo {
  title: string;
  version: string;
  description: string;
}

type Json = Record<string, unknown>;

const COMMON_HEADERS: Json = {
  'X-Request-Id': {
    description: 'Identifier of this request; equals error.request_id on errors.',
    schema: { type: 'string' },
  },
  'RateLimit-Limit': { description: 'Requests allowed per window for this API key.', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  'RateLimit-Reset': {
    description: 'When the current window ends (RFC 3339 date-time).',
    schema: { type: 'string', format: 'date-time' },
  },
};

const RETRY_AFTER: Json = { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } };
const REPLAYED: Json = {
  description:
    'Present and true when this response is the stored response of an earlier request with the same Idempotency-Key.',
  schema: { type: 'string', enum: ['true'] },
};

/** Sorts object keys at every level so the same routes always give the same bytes. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Json)[k])]),
    );
  }
  return value;
}

export async function registerOpenApi(app: FastifyInstance, info: DocumentInfo): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info,
      components: {
        securitySchemes: {
          apiKey: {
            type: 'http',
            scheme: 'bearer',
            description: 'Workspace API key: Authorization: Bearer wsk_<id>.<secret>',
          },
        },
      },
      security: [{ apiKey: [] }],
    },
    transformObject: (document) => {
      const doc = (document as { openapiObject: Json }).openapiObject as Json & {
        paths?: Record<string, Record<string, Json>>;
      };
      for (const item of Object.values(doc.paths ?? {})) {
        for (const [method, op] of Object.entries(item)) {
          // Header parameters are matched case-insensitively; publish them in their usual casing.
          for (const p of (op.parameters ?? []) as Json[]) {
            if (p.in === 'header' && p.name === 'idempotency-key') p.name = 'Idempotency-Key';
          }
          const responses = (op.responses ?? {}) as Record<string, Json>;
          const isWrite = method !== 'get';
          for (const [status, response] of Object.entries(responses)) {
            const headers: Json = { ...COMMON_HEADERS, ...((response.headers as Json | undefined) ?? {}) };
            if (['429', '503', '409'].includes(status)) headers['Retry-After'] = RETRY_AFTER;
            if (isWrite && status.startsWith('2')) headers['Idempotent-Replayed'] = REPLAYED;
            response.headers = headers;
          }
        }
      }
      return sortKeys(doc) as Json;
    },
  });

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
}
