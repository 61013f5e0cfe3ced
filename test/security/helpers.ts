// Shared parts of the security suite (test/security): the operations read from the OpenAPI documents
// the running server publishes, the scope each one requires, valid requests built from their schemas,
// a raw HTTP/1.1 client (raw-http.ts), the exact error object of spec 7, a
// fingerprint of everything a workspace owns in the database, and the figures each file prints.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import type { Database } from '../../src/infra/database.js';
import { KEY_PREFIX } from '../../src/modules/api-keys/key-format.js';
import type { Scope } from '../../src/shared/scopes.js';
import { ownerCommands } from '../../src/modules/owner/owner.service.js';
import { STORE, type TestResponse, type TestServer } from '../harness.js';
import { dereference } from '../openapi-documents.js';
import type { RawAnswer } from './raw-http.js';

export { STORE };

/** Requests without a valid key are limited per address; these files send many on purpose. */
export const OPEN_ADDRESS_LIMIT = { unauthenticatedRateLimitPerMinute: 1_000_000 };

// ------------------------------------------------------------------------------------------ the contract

/**
 * The scope each operation requires (docs/api-conventions.md, docs/resources-v2.md). The OpenAPI
 * documents name the scopes only in prose, so this table is the expectation; every documented
 * operation must appear in it (a new operation without an entry fails the scope matrix).
 */
export const REQUIRED_SCOPE: Record<string, Scope> = {
  listContacts: 'contacts:read',
  getContact: 'contacts:read',
  getContactByExternalId: 'contacts:read',
  createContact: 'contacts:write',
  updateContact: 'contacts:write',
  upsertContactByExternalId: 'contacts:write',
  batchUpsertContacts: 'contacts:write',
  deleteContact: 'contacts:write',
  deleteContactByExternalId: 'contacts:write',
  batchDeleteContacts: 'contacts:write',
  listAppointments: 'appointments:read',
  getAppointment: 'appointments:read',
  getWorkspace: 'workspace:read',
  listPipelineStages: 'contacts:read',
  listCatalogItems: 'catalog:read',
  getCatalogItem: 'catalog:read',
  listConversations: 'conversations:read',
  listMessages: 'messages:read',
  listAutomations: 'automations:read',
  getAutomation: 'automations:read',
  listEvents: 'events:read',
  getEventsHead: 'events:read',
};

/** The error type of each status (docs/api-conventions.md, Errors). */
export const STATUS_TYPE: Record<number, string> = {
  400: 'invalid_request',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found',
  409: 'idempotency_error',
  410: 'invalid_request',
  413: 'invalid_request',
  415: 'invalid_request',
  422: 'validation_error',
  431: 'invalid_request',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'api_error',
};

/** The codes each status may carry. */
export const STATUS_CODES: Record<number, string[]> = {
  400: [
    'invalid_query_parameter',
    'invalid_path_parameter',
    'invalid_cursor',
    'invalid_json',
    'idempotency_key_missing',
    'idempotency_key_invalid',
    'invalid_header',
    'malformed_request',
  ],
  401: ['invalid_api_key'],
  403: ['insufficient_scope', 'workspace_suspended'],
  404: ['resource_not_found', 'route_not_found'],
  409: ['idempotency_key_reused', 'idempotency_key_in_use'],
  413: ['payload_too_large'],
  431: ['headers_too_large'],
  415: ['unsupported_media_type'],
  422: ['validation_failed'],
  429: ['rate_limit_exceeded', 'address_rate_limit_exceeded'],
  500: ['internal_error'],
  503: ['service_unavailable'],
};

/** Text that would mean an error leaked its insides: stack frames, file paths, SQL, driver messages. */
export const LEAK_PATTERNS: RegExp[] = [
  /\bat [\w$.<>[\] ]+ \(/,
  /node_modules|\/work\/|\/src\/|\/home\/|file:\/\//,
  /\.(ts|js|mjs|cjs):\d+/,
  /\bSELECT\b[\s\S]*\bFROM\b/i,
  /\bINSERT INTO\b|\bUPDATE\b\s+\w+\s+SET\b|\bDELETE FROM\b/i,
  /SQLSTATE|syntax error at|violates [\w ]*constraint|duplicate key|relation "|invalid byte sequence|out of range/i,
  /\b(TypeError|ReferenceError|RangeError|SyntaxError): /,
  /FST_ERR|ERR_[A-Z_]{4,}/,
  /"stack"\s*:/,
];

// ------------------------------------------------------------------------------------------ operations

export type Version = 'v1' | 'v2';
export const VERSIONS: Version[] = ['v1', 'v2'];

export interface Param {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: any;
}

export interface Operation {
  version: Version;
  /** upper case */
  method: string;
  /** as documented, e.g. /v2/contacts/{id} */
  template: string;
  operationId: string;
  /** e.g. "GET /v2/contacts/{id}" */
  label: string;
  params: Param[];
  /** JSON Schema of the request body, or null */
  body: any;
  successStatuses: number[];
  responses: Record<string, any>;
  /** answers with the page envelope */
  isList: boolean;
}

export type Documents = Record<Version, any>;

/** The OpenAPI documents as the running server serves them, dereferenced. */
export async function publishedDocuments(server: TestServer): Promise<Documents> {
  const docs = {} as Documents;
  for (const v of VERSIONS) {
    const r = await server.request('GET', `/${v}/openapi.json`);
    assert.equal(r.status, 200, `/${v}/openapi.json: ${r.text.slice(0, 200)}`);
    docs[v] = dereference(r.json);
  }
  return docs;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every operation of both documents. */
export function operationsOf(docs: Documents): Operation[] {
  const ops: Operation[] = [];
  for (const version of VERSIONS) {
    for (const [template, item] of Object.entries<any>(docs[version].paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (!HTTP_METHODS.includes(method)) continue;
        const params: Param[] = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: any) => ({
          name: p.name,
          in: p.in,
          required: Boolean(p.required),
          schema: p.schema ?? {},
        }));
        const success = Object.keys(op.responses)
          .filter((s) => /^2\d\d$/.test(s))
          .map(Number);
        const schema200 = op.responses['200']?.content?.['application/json']?.schema;
        ops.push({
          version,
          method: method.toUpperCase(),
          template,
          operationId: op.operationId,
          label: `${method.toUpperCase()} ${template}`,
          params,
          body: op.requestBody?.content?.['application/json']?.schema ?? null,
          successStatuses: success,
          responses: op.responses,
          isList: Boolean(schema200?.properties?.page),
        });
      }
    }
  }
  return ops;
}

export const pathParams = (op: Operation) => op.params.filter((p) => p.in === 'path');
export const queryParams = (op: Operation) => op.params.filter((p) => p.in === 'query');
/** An operation that changes something: needs an Idempotency-Key (and the scope's write half). */
export const isWrite = (op: Operation) => op.method !== 'GET' && op.method !== 'HEAD';
/** A write that takes a JSON body (every write but a deletion). */
export const takesBody = (op: Operation) => op.body !== null;
/** A write whose body carries a resource's properties (each item's, for a batch): not a deletion. */
export const writesResource = (op: Operation): boolean =>
  takesBody(op) && 'name' in (resourceBodySchema(op).properties ?? {});

/** The template with its parameters filled in (percent-encoded unless `encode` says otherwise). */
export function fillPath(
  template: string,
  values: Record<string, string>,
  encode: (s: string) => string = encodeURIComponent,
): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = values[name];
    assert.ok(v !== undefined, `no value for {${name}} of ${template}`);
    return encode(v);
  });
}

// ------------------------------------------------------------------------------------------ schemas

export const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
addFormats.default(ajv);
const compiled = new WeakMap<object, ValidateFunction>();

/** Problems of `value` against `schema`, empty when it is valid. */
export function schemaProblems(schema: any, value: unknown): string[] {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`);
}

/** The documented schema of a response, or undefined. */
export const responseSchema = (op: Operation, status: number) =>
  op.responses[String(status)]?.content?.['application/json']?.schema;

const typesOf = (schema: any): string[] => ([] as string[]).concat(schema?.type ?? []);

/** One value of `schema` that is valid, written from the schema alone (fixed seed: reproducible). */
export function validValue(schema: any, name: string): unknown {
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  const types = typesOf(schema);
  if (types.includes('string')) {
    if (schema.format === 'email') return `sec.${randomUUID().slice(0, 8)}@example.com`;
    if (schema.format === 'uuid') return randomUUID();
    if (schema.format === 'date-time') return new Date().toISOString();
    if (schema.pattern) {
      const [sample] = fc.sample(fc.stringMatching(new RegExp(schema.pattern)), { numRuns: 1, seed: 42 });
      return sample!.slice(0, schema.maxLength ?? 64);
    }
    return `sec ${name}`.slice(0, schema.maxLength ?? 64);
  }
  if (types.includes('integer') || types.includes('number')) return schema.minimum ?? 1;
  if (types.includes('boolean')) return true;
  if (types.includes('array')) {
    return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => validValue(schema.items, name));
  }
  if (types.includes('object')) {
    return Object.fromEntries(Object.entries<any>(schema.properties ?? {}).map(([k, v]) => [k, validValue(v, k)]));
  }
  return null;
}

/** A body that satisfies the operation's request schema, every property filled. */
export function validBody(op: Operation): Record<string, unknown> {
  assert.ok(op.body, `${op.label} has no request body`);
  const body: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries<any>(op.body.properties ?? {})) body[name] = validValue(schema, name);
  assert.deepEqual(schemaProblems(op.body, body), [], `${op.label}: the generated valid body is not valid`);
  return body;
}

/** The body of a valid request of `op`: validBody's, or none for a write that takes none (a deletion). */
export const requestBody = (op: Operation): Record<string, unknown> | undefined =>
  takesBody(op) ? validBody(op) : undefined;

/**
 * Where a write's resource properties live: the body itself, or each item of a batch body
 * (`{"items": [...]}`). The checks below put what they send there, so a batch operation is tested
 * for what its items take, not only for its envelope.
 */
const isBatch = (op: Operation): boolean => op.body?.properties?.items?.type === 'array';

/** The schema of the object a write's resource properties are sent in. */
export const resourceBodySchema = (op: Operation): any => (isBatch(op) ? op.body.properties.items.items : op.body);

/** A valid body of the write with `properties` set on its resource (the first item of a batch). */
export function withProperties(op: Operation, properties: Record<string, unknown>): Record<string, unknown> {
  const body = validBody(op);
  if (!isBatch(op)) return { ...body, ...properties };
  const [first, ...rest] = body.items as Record<string, unknown>[];
  return { ...body, items: [{ ...first, ...properties }, ...rest] };
}

/** How a 422 names a property of the resource sent: `name`, or `items/0/name` in a batch. */
export const propertyField = (op: Operation, name: string): string | null =>
  isBatch(op) ? `items/0/${name}` : name === '' ? null : name;

/** The schema of the resource a write answers with (the contact of each result of a batch). */
export const writtenSchema = (op: Operation, success: any): any =>
  isBatch(op) ? success.properties.data.items.properties.contact : success.properties.data;

/** The resource a write answered with (the first of a batch). */
export const writtenOf = (op: Operation, json: any): any => (isBatch(op) ? json.data[0].contact : json.data);

// ------------------------------------------------------------------------------------------ fixtures

/** Amounts small enough to seed in a blink, large enough for every list to have a second page. */
export const SMALL_SEED = {
  contacts: 4,
  appointments: 3,
  catalogItems: 3,
  conversations: 2,
  messagesPerConversation: 3,
  automations: 2,
};

export async function seedSmall(server: TestServer, workspaceId: string, internalMarker?: string): Promise<void> {
  await ownerCommands.seed(server.owner, {
    workspaceId,
    amounts: SMALL_SEED,
    ...(internalMarker ? { internalMarker } : {}),
  });
}

/**
 * A real value for every path parameter of every operation, found through the API itself: `{id}`
 * (or `{contact_id}`) is the property of that name of the first item of the documented list the
 * template continues (`/v2/conversations/{contact_id}/messages` → an item of `/v2/conversations`);
 * a parameter without such a list (`{external_id}`) gets a fresh value matching its schema.
 */
export async function pathValues(
  server: TestServer,
  key: string,
  ops: Operation[],
): Promise<Map<string, Record<string, string>>> {
  const out = new Map<string, Record<string, string>>();
  for (const op of ops) {
    const values: Record<string, string> = {};
    for (const p of pathParams(op)) {
      const parent = op.template.slice(0, op.template.indexOf(`/{${p.name}}`));
      const list = ops.find((o) => o.version === op.version && o.method === 'GET' && o.template === parent && o.isList);
      if (op.method === 'DELETE') {
        // A deletion deletes a record made for it, so the other operations keep theirs.
        values[p.name] = await recordToDelete(server, key, ops, op, p);
      } else if (list) {
        const r = await server.request('GET', `${parent}?limit=100`, { key });
        assert.equal(r.status, 200, `${parent}: ${r.text.slice(0, 200)}`);
        const item = r.json.data.find((i: any) => typeof i[p.name] === 'string');
        assert.ok(item, `${parent} has no item with ${p.name}: seed more`);
        values[p.name] = item[p.name];
      } else if (op.method === 'GET') {
        // A read by a value the caller chose reads a record that has one: made by the operation
        // that writes at the same path (the upsert of /v2/contacts/external/{external_id}).
        values[p.name] = await recordCalledBy(server, key, ops, op, p);
      } else {
        values[p.name] = freshValue(p);
      }
    }
    out.set(op.label, values);
  }
  return out;
}

/**
 * A value of `p` naming a new record for the deletion `op` to delete: written by the PUT at its path
 * (a value the caller chooses), or created by the POST of the collection its path continues.
 */
async function recordToDelete(
  server: TestServer,
  key: string,
  ops: Operation[],
  op: Operation,
  p: Param,
): Promise<string> {
  if (ops.some((o) => o.method === 'PUT' && o.template === op.template)) return recordCalledBy(server, key, ops, op, p);
  const parent = op.template.slice(0, op.template.indexOf(`/{${p.name}}`));
  const create = ops.find((o) => o.method === 'POST' && o.template === parent);
  assert.ok(create, `${op.label}: no POST at ${parent} makes a record to delete`);
  const r = await server.request('POST', parent, { key, body: validBody(create), idem: `sec-${randomUUID()}` });
  assert.equal(r.status, 201, `${create.label}: ${r.text.slice(0, 200)}`);
  return r.json.data[p.name] as string;
}

/** Path values of the deletion `op` naming new records, one for each parameter. */
export async function recordsToDelete(
  server: TestServer,
  key: string,
  ops: Operation[],
  op: Operation,
): Promise<Record<string, string>> {
  const values: Record<string, string> = {};
  for (const p of pathParams(op)) values[p.name] = await recordToDelete(server, key, ops, op, p);
  return values;
}

/**
 * A fresh value of `p` that names a record, written by the PUT documented at `op`'s path: what a
 * read by a value the caller chooses finds.
 */
export async function recordCalledBy(
  server: TestServer,
  key: string,
  ops: Operation[],
  op: Operation,
  p: Param,
): Promise<string> {
  const writer = ops.find((o) => o.method === 'PUT' && o.template === op.template);
  assert.ok(writer, `${op.label}: no PUT at its path writes the record it reads`);
  const value = freshValue(p);
  const r = await server.request('PUT', fillPath(op.template, { [p.name]: value }), {
    key,
    body: { name: 'Read by the value its caller chose' },
    idem: `sec-${randomUUID()}`,
  });
  assert.ok(r.status === 200 || r.status === 201, `${writer.label}: ${r.text.slice(0, 200)}`);
  return value;
}

/** A fresh value of a parameter that names something the caller chooses (an external id). */
export function freshValue(p: Param): string {
  const v = `sec-${randomUUID()}`;
  assert.deepEqual(schemaProblems(p.schema, v), [], `${p.name}: ${v} does not match its schema`);
  return v;
}

// ------------------------------------------------------------------------------------------ keys

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * A key of the documented format (wsk_<id>.<secret><checksum>, checksum = 6 base62 digits of the
 * CRC-32 of everything before it) for any id and secret: a well-formed key the service must still
 * refuse. test/auth.test.ts checks this format against the module's own keys.
 */
export function forgeKey(id: string, secret: string): string {
  const body = `${KEY_PREFIX}_${id}.${secret}`;
  let n = crc32(body);
  let sum = '';
  for (let i = 0; i < 6; i++) {
    sum = BASE62[n % 62]! + sum;
    n = Math.floor(n / 62);
  }
  return body + sum;
}

export const secretOf = (key: string) => key.slice(key.indexOf('.') + 1, -6);
export const idOf = (key: string) => key.slice(KEY_PREFIX.length + 1, key.indexOf('.'));

// ------------------------------------------------------------------------------------------ raw HTTP

// In raw-http.ts; exported from here too, so the suite imports its shared parts from one module.
export * from './raw-http.js';

// ------------------------------------------------------------------------------------------ answers

export type AnyAnswer = TestResponse | RawAnswer;

export function headerOf(r: AnyAnswer, name: string): string | null {
  if (r.headers instanceof Headers) return r.headers.get(name);
  return r.headers[name.toLowerCase()] ?? null;
}

export function headerNames(r: AnyAnswer): string[] {
  const names = r.headers instanceof Headers ? [...r.headers.keys()] : Object.keys(r.headers);
  return names.map((n) => n.toLowerCase()).sort();
}

/** The answer of Node's HTTP parser / Fastify's default client-error handler, not the service's. */
export function isParserRefusal(r: AnyAnswer): boolean {
  return (
    headerOf(r, 'x-request-id') === null &&
    r.json !== undefined &&
    typeof r.json === 'object' &&
    typeof r.json.statusCode === 'number' &&
    typeof r.json.error === 'string'
  );
}

/** What is wrong with `r` as the spec's error object (spec 7 and docs/api-conventions.md); [] when nothing. */
export function errorProblems(
  r: AnyAnswer,
  expected: { status?: number; type?: string; code?: string } = {},
): string[] {
  const problems: string[] = [];
  const add = (p: string) => problems.push(p);
  if (expected.status !== undefined && r.status !== expected.status)
    add(`status ${r.status}, expected ${expected.status}`);
  if (r.status < 400 || r.status > 599) add(`status ${r.status} is not an error`);
  if (!/^application\/json(;|$)/.test(headerOf(r, 'content-type') ?? '')) {
    add(`content-type ${headerOf(r, 'content-type')}`);
  }
  const body = r.json;
  if (!body || typeof body !== 'object' || Array.isArray(body))
    return [...problems, `body is not a JSON object: ${r.text.slice(0, 200)}`];
  if (Object.keys(body).join() !== 'error') add(`top-level keys ${Object.keys(body).join()}`);
  const e = body.error;
  if (!e || typeof e !== 'object' || Array.isArray(e))
    return [...problems, `error is not an object: ${r.text.slice(0, 200)}`];
  for (const k of Object.keys(e)) {
    if (!['type', 'code', 'message', 'request_id', 'details'].includes(k)) add(`unexpected error.${k}`);
  }
  for (const k of ['type', 'code', 'message', 'request_id']) {
    if (typeof e[k] !== 'string' || e[k].length === 0) add(`error.${k} is not a non-empty string`);
  }
  if ('details' in e && (!e.details || typeof e.details !== 'object' || Array.isArray(e.details))) add('error.details');
  const requestId = headerOf(r, 'x-request-id');
  if (!requestId) add('no X-Request-Id');
  else if (e.request_id !== requestId) add(`request_id ${e.request_id} differs from X-Request-Id ${requestId}`);
  if (STATUS_TYPE[r.status] !== undefined && e.type !== STATUS_TYPE[r.status]) {
    add(`type ${e.type} for status ${r.status}`);
  }
  if (STATUS_CODES[r.status] && !STATUS_CODES[r.status]!.includes(e.code)) add(`code ${e.code} for status ${r.status}`);
  if (expected.type !== undefined && e.type !== expected.type) add(`type ${e.type}, expected ${expected.type}`);
  if (expected.code !== undefined && e.code !== expected.code) add(`code ${e.code}, expected ${expected.code}`);
  problems.push(...headerProblems(r));
  problems.push(...leakProblems(r.text));
  return problems;
}

/** Headers every API answer carries or never carries. */
export function headerProblems(r: AnyAnswer): string[] {
  const problems: string[] = [];
  if (headerOf(r, 'cache-control') !== 'no-store') problems.push(`Cache-Control ${headerOf(r, 'cache-control')}`);
  if (headerOf(r, 'x-powered-by') !== null) problems.push(`X-Powered-By ${headerOf(r, 'x-powered-by')}`);
  if (headerOf(r, 'server') !== null) problems.push(`Server ${headerOf(r, 'server')}`);
  if (headerOf(r, 'access-control-allow-origin') !== null) problems.push('Access-Control-Allow-Origin');
  return problems;
}

export function leakProblems(text: string): string[] {
  return LEAK_PATTERNS.filter((p) => p.test(text)).map((p) => `body matches ${p}: ${text.slice(0, 300)}`);
}

export function assertErrorObject(
  r: AnyAnswer,
  expected: { status?: number; type?: string; code?: string } = {},
  label = '',
): void {
  assert.deepEqual(errorProblems(r, expected), [], `${label}: ${r.status} ${r.text.slice(0, 300)}`);
}

/** The body with its request id replaced: two answers that differ only by request id compare equal. */
export function withoutRequestId(r: AnyAnswer): string {
  const id = r.json?.error?.request_id;
  return typeof id === 'string' ? r.text.split(id).join('<request_id>') : r.text;
}

// ------------------------------------------------------------------------------------------ database

const tablesByDb = new WeakMap<Database, string[]>();

/** Tables holding rows of a workspace (a workspace_id column), the API keys aside. */
async function workspaceTables(db: Database): Promise<string[]> {
  let tables = tablesByDb.get(db);
  if (!tables) {
    const { rows } = await db.query<{ t: string }>(
      `SELECT DISTINCT table_name AS t FROM information_schema.columns
        WHERE column_name = 'workspace_id' AND table_schema = current_schema() AND table_name <> 'api_keys'
        ORDER BY 1`,
    );
    tables = rows.map((r) => r.t);
    assert.ok(tables.includes('contacts') && tables.includes('events') && tables.includes('idempotency_keys'));
    tablesByDb.set(db, tables);
  }
  return tables;
}

/**
 * Everything the workspace owns, as `table: rows:md5` per table: the workspace row, every table
 * with a workspace_id (contacts, appointments, idempotency keys, events, …) and its API keys
 * without last_used_at (the usage trail, which every authenticated request moves by design; so
 * does api_key_usage, which has no workspace_id).
 */
export async function fingerprint(db: Database, workspaceId: string): Promise<Record<string, string>> {
  const tables = await workspaceTables(db);
  const parts = tables.map(
    (t) =>
      `SELECT '${t}' AS t, count(*)::int AS n, coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '') AS h
         FROM ${t} x WHERE workspace_id = $1`,
  );
  parts.push(
    `SELECT 'workspaces', count(*)::int, coalesce(md5(string_agg(x::text, ',')), '') FROM workspaces x WHERE id = $1`,
    `SELECT 'api_keys', count(*)::int, coalesce(md5(string_agg(concat_ws('|', id, name, scopes::text,
            rate_limit_per_minute, expires_at, revoked_at, rotated_to), ',' ORDER BY id)), '')
       FROM api_keys WHERE workspace_id = $1`,
  );
  const { rows } = await db.query<{ t: string; n: number; h: string }>(parts.join(' UNION ALL '), [workspaceId]);
  return Object.fromEntries(rows.map((r) => [r.t, `${r.n}:${r.h}`]));
}

/** The tables whose fingerprint differs. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys({ ...before, ...after }).filter((t) => before[t] !== after[t]);
}

// ------------------------------------------------------------------------------------------ figures

export interface Finding {
  id: string;
  evidence: string;
}

/** Counters and findings of one file, printed as one line at its end. */
export class Figures {
  readonly counts = new Map<string, number>();
  readonly findings = new Map<string, Finding>();

  add(name: string, n = 1): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + n);
  }

  get(name: string): number {
    return this.counts.get(name) ?? 0;
  }

  /**
   * A deviation from what docs/security.md promises, with its evidence: it fails the test that
   * raised it (and so the run), and is named in the figures printed at the end of the file.
   */
  finding(id: string, evidence: string): never {
    if (!this.findings.has(id)) this.findings.set(id, { id, evidence });
    this.add(`finding:${id}`);
    assert.fail(`finding ${id}: ${evidence}`);
  }

  print(file: string, parts: string[]): void {
    const findings = [...this.findings.values()].map((f) => `${f.id} ×${this.get(`finding:${f.id}`)}`);
    console.log(
      `[security] ${file} (${STORE}): ${parts.join(', ')}; findings: ${findings.length ? findings.join(', ') : 'none'}`,
    );
    for (const f of this.findings.values()) console.log(`[security] ${file} finding ${f.id}: ${f.evidence}`);
  }
}
