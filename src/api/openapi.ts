// The published interface descriptions: one OpenAPI 3.1 document per version, generated from the
// route schemas themselves (so they cannot drift from what the service validates and sends), with
// the conventions every operation shares added once here.
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { RouteOptions } from '../services.js';
import { renderDurations } from '../shared/documented-durations.js';
import { ERROR_CODES, type ErrorCode } from '../shared/errors.js';
import { ERROR_CODES_KEY } from '../http/responses.js';
import { componentize } from './openapi-components.js';

interface DocumentInfo {
  title: string;
  version: string;
  description: string;
}

export interface VersionOptions extends RouteOptions {
  /** Publish every schema inline, as the routes declare them (tests compare it with the components). */
  inlineOpenApi?: boolean;
}

const TAGS: { name: string; description: string }[] = [
  { name: 'Workspace', description: 'The workspace the API key belongs to.' },
  { name: 'Contacts', description: 'Contacts (leads) and the stages of the pipeline they move through.' },
  { name: 'Appointments', description: 'Appointments booked with contacts; read-only.' },
  { name: 'Catalog', description: 'Public products and services.' },
  { name: 'Conversations', description: 'Conversations per contact and channel, and their messages.' },
  { name: 'Automations', description: 'Operational summaries of the workspace automations.' },
  { name: 'Events', description: 'The feed of every change, deletions included.' },
  { name: 'Webhooks', description: 'The requests the service sends to webhook endpoints: changes and test messages.' },
];

type Json = Record<string, unknown>;

const NO_SNIFF: Json = {
  description: 'Always nosniff: the body is what Content-Type says.',
  required: true,
  schema: { type: 'string', enum: ['nosniff'] },
};
const CHALLENGE: Json = {
  description:
    'RFC 6750 challenge: Bearer realm="workspace-api", with error="invalid_token" once a key was presented (401), or error="insufficient_scope" and the scope needed (403 for a scope).',
  schema: { type: 'string', maxLength: 200 },
};

const COMMON_HEADERS: Json = {
  'X-Request-Id': {
    description: 'Identifier of this request; equals error.request_id on errors.',
    required: true,
    schema: { type: 'string', pattern: '^req_[A-Za-z0-9_-]+$', maxLength: 64 },
  },
  'RateLimit-Limit': {
    required: true,
    description: 'The quota: requests per minute of this API key (or, without a valid key, of the client address).',
    schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 1_000_000 },
  },
  'RateLimit-Remaining': {
    required: true,
    description:
      'Requests that would pass right now, after this one (the quota refills continuously, one request every 60/limit seconds).',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 1_000_000 },
  },
  'RateLimit-Reset': {
    required: true,
    description: 'When the whole quota is available again if no request comes meanwhile (RFC 3339 date-time).',
    schema: { type: 'string', format: 'date-time', maxLength: 35 },
  },
  'X-Content-Type-Options': NO_SNIFF,
};

const UNKNOWN_QUERY =
  'A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.';

const RETRY_AFTER: Json = {
  description: 'Seconds to wait before retrying: on 429, until the next request passes (rounded up).',
  schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 3600 },
};
const LOCATION: Json = {
  description: 'Path of the created resource (e.g. /v2/contacts/{id}); sent on every 201, replays included.',
  required: true,
  schema: { type: 'string', format: 'uri-reference', maxLength: 64 },
};
/** The form of a consistency position (infra/read-replicas.ts). */
const CONSISTENCY_POSITION_SCHEMA: Json = {
  type: 'string',
  pattern: '^1\\.[0-9a-f]{16}$',
  minLength: 18,
  maxLength: 18,
};
const CONSISTENCY_POSITION: Json = {
  description:
    "On deployments that serve reads from replicas: this write's position. Send it as the Consistency-Position header of a later read to see this write there (of two tokens, the later write's is the greater string).",
  schema: CONSISTENCY_POSITION_SCHEMA,
};
const CONSISTENCY_POSITION_PARAMETER: Json = {
  name: 'Consistency-Position',
  in: 'header',
  required: false,
  description:
    "The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header.",
  schema: CONSISTENCY_POSITION_SCHEMA,
};

const REPLAYED: Json = {
  description:
    'Present and true when this response is the stored response of an earlier request with the same Idempotency-Key.',
  schema: { type: 'string', enum: ['true'] },
};

/**
 * An example value written from a schema: its first `examples` entry where it has one, otherwise
 * a plausible value of its type and format. Every documented response gets one.
 */
function exampleOf(schema: Json | undefined): unknown {
  if (!schema) return null;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (Array.isArray(schema.enum)) return schema.enum[0];
  // A union: an example of its first alternative.
  if (Array.isArray(schema.anyOf)) return exampleOf(schema.anyOf[0] as Json);
  const type = Array.isArray(schema.type) ? (schema.type as string[]).find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Json>;
      return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, exampleOf(v)]));
    }
    case 'array':
      return [exampleOf(schema.items as Json | undefined)];
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? Math.max(schema.minimum, 1) : 1;
    case 'boolean':
      return true;
    case 'string':
      if (schema.format === 'uuid') return '0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41';
      if (schema.format === 'date-time') return '2026-11-22T06:05:43.123Z';
      if (schema.format === 'email') return 'ana.souza@example.com';
      return 'string';
    default:
      return null;
  }
}

/** A success's example from its schema; an error's is its first code, as the service words it. */
function exampleFor(response: Json): unknown {
  const codes = response[ERROR_CODES_KEY] as ErrorCode[] | undefined;
  if (codes?.[0] === undefined) {
    return exampleOf((response.content as Record<string, Json> | undefined)?.['application/json']?.schema as Json);
  }
  const { type, message } = ERROR_CODES[codes[0]];
  return { error: { type, code: codes[0], message, request_id: 'req_3kTq9xVb2mR8LwZp' } };
}

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

/** Every string of the document with its duration markers rendered (shared/documented-durations). */
function renderStrings(value: unknown, config: Config): unknown {
  if (typeof value === 'string') return renderDurations(value, config);
  if (Array.isArray(value)) return value.map((v) => renderStrings(v, config));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderStrings(v, config)]));
  }
  return value;
}

export async function registerOpenApi(
  app: FastifyInstance,
  info: DocumentInfo,
  {
    config,
    inline = false,
    webhooks,
  }: { config: Config; inline?: boolean | undefined; webhooks?: Record<string, object> | undefined },
): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      ...(webhooks ? { webhooks } : {}),
      info: { ...info, license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
      // Relative: the document is served by the API itself, so its base is where it was fetched.
      servers: [{ url: '/', description: 'production: the server that serves this document (the API is self-hosted)' }],
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
    // Each operation's scope as its security requirement (OpenAPI 3.1 allows role names for an
    // http scheme), so clients and readers see it without the prose.
    // A query schema that admits no other property refuses an unknown parameter: the operation
    // says so, beside its 400.
    transform: ({ schema, url, route }) => {
      const scope = (route.config as { scope?: string } | undefined)?.scope;
      const closedQuery =
        (schema.querystring as { additionalProperties?: unknown } | undefined)?.additionalProperties === false;
      const description = closedQuery
        ? `${schema.description ?? ''}${schema.description ? ' ' : ''}${UNKNOWN_QUERY}`
        : schema.description;
      return { schema: { ...schema, description, ...(scope ? { security: [{ apiKey: [scope] }] } : {}) }, url };
    },
    transformObject: (document) => {
      const doc = (document as { openapiObject: Json }).openapiObject as Json & {
        paths?: Record<string, Record<string, Json>>;
        webhooks?: Record<string, Record<string, Json>>;
      };
      // Only the tags this document's operations and webhooks use, in a fixed order.
      const used = new Set(
        [...Object.values(doc.paths ?? {}), ...Object.values(doc.webhooks ?? {})].flatMap((item) =>
          Object.values(item).flatMap((op) => (op.tags as string[]) ?? []),
        ),
      );
      doc.tags = TAGS.filter((t) => used.has(t.name));
      for (const item of Object.values(doc.paths ?? {})) {
        for (const [method, op] of Object.entries(item)) {
          // Header parameters are matched case-insensitively; publish them in their usual casing.
          for (const p of (op.parameters ?? []) as Json[]) {
            if (p.in === 'header' && p.name === 'idempotency-key') p.name = 'Idempotency-Key';
          }
          const isWrite = method !== 'get';
          if (!isWrite && op.security !== undefined)
            op.parameters = [...((op.parameters as Json[]) ?? []), CONSISTENCY_POSITION_PARAMETER];
          const responses = (op.responses ?? {}) as Record<string, Json>;
          for (const [status, response] of Object.entries(responses)) {
            const headers: Json = { ...COMMON_HEADERS, ...((response.headers as Json | undefined) ?? {}) };
            // Always sent on 429 and 503; on 409 only for a key still in use; the challenge always
            // on 401, on 403 only for a missing scope.
            if (['429', '503'].includes(status)) headers['Retry-After'] = { ...RETRY_AFTER, required: true };
            if (status === '409') headers['Retry-After'] = RETRY_AFTER;
            if (status === '401') headers['WWW-Authenticate'] = { ...CHALLENGE, required: true };
            if (status === '403') headers['WWW-Authenticate'] = CHALLENGE;
            if (isWrite && status.startsWith('2')) headers['Idempotent-Replayed'] = REPLAYED;
            if (isWrite && status.startsWith('2') && op.security !== undefined)
              headers['Consistency-Position'] = CONSISTENCY_POSITION;
            if (isWrite && status === '201') headers.Location = LOCATION;
            response.headers = headers;
            const content = (response.content as Record<string, Json> | undefined)?.['application/json'];
            // An error's codes, declared on its schema (http/responses.ts), belong to the answer.
            const schema = content?.schema as Json | undefined;
            if (schema?.[ERROR_CODES_KEY] !== undefined) {
              response[ERROR_CODES_KEY] = schema[ERROR_CODES_KEY];
              delete schema[ERROR_CODES_KEY];
            }
            if (content && content.example === undefined) content.example = exampleFor(response);
          }
        }
      }
      return sortKeys(renderStrings(inline ? doc : componentize(doc), config)) as Json;
    },
  });

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
}
