// Conventions every response shares (spec 4.1, 7, 9): the common headers, the exact error object
// with request_id equal to X-Request-Id, the public and deterministic interface description, the
// health probes, and odd requests that must end in the error object rather than a crash. The log
// line of each request: test/request-logs.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { before, describe, test } from 'node:test';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, sleep, type TestResponse, type TestWorkspace, UNKNOWN_ID } from './harness.js';
import { useTestServer } from './test-server.js';
import { dereference } from './openapi-documents.js';

const ERROR_KEYS = ['type', 'code', 'message', 'request_id', 'details'];
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const OPERATION_IDS = [
  'createContact',
  'getAppointment',
  'getContact',
  'listAppointments',
  'listContacts',
  'updateContact',
  'upsertContactByExternalId',
];

let ws: TestWorkspace;
let contactId: string;
let appointmentId: string;
const server = useTestServer({
  setup: async () => {
    ws = await server.workspace();
    await ownerCommands.seed(server.owner, { workspaceId: ws.id, amounts: { contacts: 2, appointments: 2 } });
    const contacts = await server.request('GET', '/v1/contacts', { key: ws.key });
    contactId = contacts.json.data[0].id;
    const appointments = await server.request('GET', '/v1/appointments', { key: ws.key });
    appointmentId = appointments.json.data[0].id;
  },
});
/** Every X-Request-Id seen in this file: each request gets its own. */
const requestIds: string[] = [];

// ------------------------------------------------------------------------------------------ assertions

/** X-Request-Id, Cache-Control: no-store, no X-Powered-By; RateLimit-* unless the route is unmetered. */
function assertCommonHeaders(r: TestResponse, { rateLimit = true }: { rateLimit?: boolean } = {}): void {
  const id = r.headers.get('x-request-id');
  assert.ok(id, `X-Request-Id missing (status ${r.status})`);
  requestIds.push(id);
  assert.equal(r.headers.get('cache-control'), 'no-store', 'Cache-Control');
  assert.equal(r.headers.get('x-powered-by'), null, 'X-Powered-By');
  if (rateLimit) {
    assert.match(r.headers.get('ratelimit-limit') ?? '', /^\d+$/, 'RateLimit-Limit');
    assert.match(r.headers.get('ratelimit-remaining') ?? '', /^\d+$/, 'RateLimit-Remaining');
    const reset = r.headers.get('ratelimit-reset') ?? '';
    assert.match(reset, RFC3339, 'RateLimit-Reset');
    assert.ok(!Number.isNaN(Date.parse(reset)), 'RateLimit-Reset is a date-time');
  }
}

function assertJson(r: TestResponse): void {
  assert.match(r.headers.get('content-type') ?? '', /^application\/json(;|$)/, 'Content-Type');
  assert.notEqual(r.json, undefined, 'the body is JSON');
}

/** The exact error object of spec 7, with the common headers. */
function assertError(r: TestResponse, status: number, type: string, code?: string): void {
  assert.equal(r.status, status, `status ${r.status}: ${r.text.slice(0, 300)}`);
  assertJson(r);
  assert.deepEqual(Object.keys(r.json), ['error'], 'only the error property at the top');
  const e = r.json.error;
  assert.ok(e && typeof e === 'object' && !Array.isArray(e), 'error is an object');
  for (const k of Object.keys(e)) assert.ok(ERROR_KEYS.includes(k), `unexpected error.${k}`);
  for (const k of ['type', 'code', 'message', 'request_id']) {
    assert.equal(typeof e[k], 'string', `error.${k} is a string`);
    assert.ok(e[k].length > 0, `error.${k} is not empty`);
  }
  if ('details' in e) assert.ok(e.details && typeof e.details === 'object' && !Array.isArray(e.details), 'details');
  assert.match(e.code, /^[a-z][a-z_]*$/);
  assert.equal(e.type, type);
  if (code) assert.equal(e.code, code);
  assertCommonHeaders(r);
  assert.equal(e.request_id, r.headers.get('x-request-id'), 'request_id equals X-Request-Id');
}

interface Operation {
  name: string;
  method: string;
  path: () => string;
  body?: () => unknown;
  success: number;
}

const OPERATIONS: Operation[] = [
  { name: 'listContacts', method: 'GET', path: () => '/v1/contacts', success: 200 },
  { name: 'createContact', method: 'POST', path: () => '/v1/contacts', body: () => contactBody(), success: 201 },
  { name: 'getContact', method: 'GET', path: () => `/v1/contacts/${contactId}`, success: 200 },
  {
    name: 'updateContact',
    method: 'PATCH',
    path: () => `/v1/contacts/${contactId}`,
    body: () => ({ origin: `o-${randomUUID().slice(0, 8)}` }),
    success: 200,
  },
  {
    name: 'upsertContactByExternalId',
    method: 'PUT',
    path: () => `/v1/contacts/external/conv-${randomUUID()}`,
    body: () => ({ name: 'Upserted' }),
    success: 201,
  },
  { name: 'listAppointments', method: 'GET', path: () => '/v1/appointments', success: 200 },
  { name: 'getAppointment', method: 'GET', path: () => `/v1/appointments/${appointmentId}`, success: 200 },
];
const WRITES = OPERATIONS.filter((o) => o.body);

const call = (op: Operation, key?: string) =>
  server.request(op.method, op.path(), { key, ...(op.body ? { body: op.body(), idem: idem() } : {}) });

// ------------------------------------------------------------------------------------------ tests

describe('every v1 operation', () => {
  test('answers with the common headers and a JSON body', async () => {
    for (const op of OPERATIONS) {
      const r = await call(op, ws.key);
      assert.equal(r.status, op.success, `${op.name}: ${r.text.slice(0, 300)}`);
      assertCommonHeaders(r);
      assertJson(r);
      assert.ok('data' in r.json, op.name);
      assert.equal(r.headers.get('ratelimit-limit'), '600', `${op.name}: the key's own limit`);
    }
  });

  test('401 authentication_error without a key, with a malformed, unknown or revoked key', async () => {
    const malformed = `${ws.key.slice(0, -1)}${ws.key.endsWith('A') ? 'B' : 'A'}`; // checksum broken
    const revoked = await ws.newKey(['contacts:read']);
    await ownerCommands.revokeKey(server.owner, { keyId: revoked.id });
    const unknown = `wsk_${'Z'.repeat(16)}.${ws.key.slice(ws.key.indexOf('.') + 1)}`; // checksum broken too
    for (const op of OPERATIONS) {
      assertError(await call(op), 401, 'authentication_error', 'invalid_api_key');
    }
    for (const key of ['not-a-key', malformed, unknown, revoked.key]) {
      assertError(await call(OPERATIONS[0]!, key), 401, 'authentication_error', 'invalid_api_key');
    }
    const basic = await server.request('GET', '/v1/contacts', { headers: { authorization: `Basic ${ws.key}` } });
    assertError(basic, 401, 'authentication_error', 'invalid_api_key');
  });

  test('403 permission_error for a missing scope, naming the scope', async () => {
    const other = await ws.newKey(['workspace:read']);
    for (const op of OPERATIONS) {
      const r = await call(op, other.key);
      assertError(r, 403, 'permission_error', 'insufficient_scope');
      assert.match(r.json.error.details.required_scope, /^(contacts|appointments):(read|write)$/);
    }
  });

  test('403 permission_error for every operation of a suspended workspace', async () => {
    const suspended = await server.workspace();
    assert.equal((await server.request('GET', '/v1/contacts', { key: suspended.key })).status, 200);
    await ownerCommands.setWorkspaceStatus(server.owner, { workspaceId: suspended.id, status: 'suspended' });
    const deadline = Date.now() + 1_000;
    let r = await server.request('GET', '/v1/contacts', { key: suspended.key });
    while (r.status !== 403 && Date.now() < deadline) {
      await sleep(25);
      r = await server.request('GET', '/v1/contacts', { key: suspended.key });
    }
    assertError(r, 403, 'permission_error', 'workspace_suspended');
    for (const op of OPERATIONS) assertError(await call(op, suspended.key), 403, 'permission_error');
  });

  test('404 not_found for unknown ids', async () => {
    const cases: [string, string, unknown?][] = [
      ['GET', `/v1/contacts/${UNKNOWN_ID}`],
      ['PATCH', `/v1/contacts/${UNKNOWN_ID}`, { name: 'x' }],
      ['GET', `/v1/appointments/${UNKNOWN_ID}`],
    ];
    for (const [method, path, body] of cases) {
      const r = await server.request(method, path, { key: ws.key, ...(body ? { body, idem: idem() } : {}) });
      assertError(r, 404, 'not_found', 'resource_not_found');
    }
  });

  test('404 not_found for unknown routes, v2 resources under /v1 and methods v1 does not offer', async () => {
    const cases: [string, string][] = [
      ['GET', '/v1/nope'],
      ['GET', '/v1'],
      ['GET', '/'],
      ['GET', '/v0/contacts'],
      // v2 resources are not part of v1.
      ['GET', '/v1/workspace'],
      ['GET', '/v1/catalog/items'],
      ['GET', '/v1/events'],
      ['POST', '/v1/appointments'],
      ['DELETE', `/v1/contacts/${contactId}`],
      ['PUT', '/v1/contacts'],
      ['PATCH', `/v1/appointments/${appointmentId}`],
      ['OPTIONS', '/v1/contacts'],
    ];
    for (const [method, path] of cases) {
      const r = await server.request(method, path, { key: ws.key });
      assertError(r, 404, 'not_found', 'route_not_found');
    }
  });

  test('400 invalid_request for a limit outside 1 to 100, on both lists', async () => {
    for (const path of ['/v1/contacts', '/v1/appointments']) {
      for (const limit of ['0', '101', 'abc', '1.5', '-1', '']) {
        const r = await server.request('GET', `${path}?limit=${limit}`, { key: ws.key });
        assertError(r, 400, 'invalid_request', 'invalid_query_parameter');
        assert.match(r.json.error.message, /1 to 100/, `${path}?limit=${limit}`);
      }
    }
  });

  test('400 invalid_request for malformed JSON and a missing Idempotency-Key', async () => {
    for (const op of WRITES) {
      const malformed = await server.request(op.method, op.path(), { key: ws.key, raw: '{"name":', idem: idem() });
      assertError(malformed, 400, 'invalid_request', 'invalid_json');
      const noKey = await server.request(op.method, op.path(), { key: ws.key, body: op.body!() });
      assertError(noKey, 400, 'invalid_request', 'idempotency_key_missing');
    }
  });

  test('409 idempotency_error when an Idempotency-Key is reused with another body', async () => {
    for (const op of WRITES) {
      const key = idem();
      const path = op.path();
      const first = await server.request(op.method, path, { key: ws.key, body: op.body!(), idem: key });
      assert.equal(first.status, op.success, first.text);
      const other = op.method === 'POST' ? contactBody({ name: 'Different' }) : { name: 'Different' };
      const r = await server.request(op.method, path, { key: ws.key, body: other, idem: key });
      assertError(r, 409, 'idempotency_error', 'idempotency_key_reused');
    }
  });

  test('413 for an oversized body, 415 for a body that is not JSON, 422 for a body that breaks its schema', async () => {
    for (const op of WRITES) {
      const huge = await server.request(op.method, op.path(), {
        key: ws.key,
        body: contactBody({ origin: 'x'.repeat(2_000_000) }),
        idem: idem(),
      });
      assertError(huge, 413, 'invalid_request', 'payload_too_large');
      const text = await server.request(op.method, op.path(), {
        key: ws.key,
        raw: JSON.stringify(op.body!()),
        contentType: 'text/plain',
        idem: idem(),
      });
      assertError(text, 415, 'invalid_request', 'unsupported_media_type');
      const invalid = await server.request(op.method, op.path(), {
        key: ws.key,
        body: { name: 42, status: 'won', email: 'a@example.com' },
        idem: idem(),
      });
      assertError(invalid, 422, 'validation_error', 'validation_failed');
      assert.ok(Array.isArray(invalid.json.error.details.errors));
    }
  });

  test('429 rate_limit_error past the limit of a 1/min key, with Retry-After', async () => {
    const limited = await ws.newKey(['contacts:read', 'contacts:write', 'appointments:read'], {
      rateLimitPerMinute: 1,
    });
    const first = await server.request('GET', '/v1/contacts', { key: limited.key });
    assert.equal(first.status, 200);
    assertCommonHeaders(first);
    assert.equal(first.headers.get('ratelimit-limit'), '1');
    assert.equal(first.headers.get('ratelimit-remaining'), '0');
    for (const op of OPERATIONS) {
      const r = await call(op, limited.key);
      assertError(r, 429, 'rate_limit_error', 'rate_limit_exceeded');
      assert.equal(r.headers.get('ratelimit-remaining'), '0');
      const retryAfter = Number(r.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    }
  });

  test('request ids are unique per request', async () => {
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 3 === 0
          ? server.request('GET', '/v1/contacts', { key: ws.key })
          : i % 3 === 1
            ? server.request('GET', `/v1/contacts/${UNKNOWN_ID}`, { key: ws.key })
            : server.request('GET', '/v1/nope', { key: ws.key }),
      ),
    );
    const ids = responses.map((r) => r.headers.get('x-request-id'));
    assert.equal(new Set(ids).size, ids.length);
    for (const r of responses.filter((x) => x.status >= 400)) {
      assert.equal(r.json.error.request_id, r.headers.get('x-request-id'));
    }
    assert.equal(new Set(requestIds).size, requestIds.length, 'a request id was given twice in this file');
  });
});

describe('the v1 interface description', () => {
  let doc: any;
  before(async () => {
    const r = await server.request('GET', '/v1/openapi.json');
    doc = dereference(r.json);
  });

  test('is public, JSON, OpenAPI 3.1, version 1.0.0, and the same bytes every time', async () => {
    const first = await server.request('GET', '/v1/openapi.json');
    assert.equal(first.status, 200);
    assertCommonHeaders(first);
    assertJson(first);
    const second = await server.request('GET', '/v1/openapi.json');
    const withKey = await server.request('GET', '/v1/openapi.json', { key: ws.key });
    assert.equal(second.text, first.text, 'two fetches differ');
    assert.equal(withKey.text, first.text, 'a fetch with a key differs');
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(doc.info.version, '1.0.0');
    assert.equal(typeof doc.info.title, 'string');
  });

  test('describes exactly the seven v1 operations and no v2 path', () => {
    const ids: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      assert.ok(path.startsWith('/v1/'), `path ${path}`);
      assert.ok(!path.includes('/v2'), `path ${path}`);
      for (const op of Object.values<any>(item)) if (op.operationId) ids.push(op.operationId);
    }
    assert.deepEqual(ids.sort(), OPERATION_IDS);
  });

  test('every operation documents 401, 403 and 429; writes document 409, 415, 422 and Idempotency-Key', () => {
    for (const item of Object.values<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const statuses = Object.keys(op.responses);
        for (const s of ['401', '403', '429']) assert.ok(statuses.includes(s), `${op.operationId} lacks ${s}`);
        for (const s of ['401', '403', '429']) {
          assert.ok(op.responses[s].content['application/json'].schema, `${op.operationId} ${s} has no schema`);
        }
        if (method === 'get') continue;
        for (const s of ['409', '415', '422']) assert.ok(statuses.includes(s), `${op.operationId} lacks ${s}`);
        const header = (op.parameters ?? []).find(
          (p: any) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key',
        );
        assert.ok(header, `${op.operationId} does not document Idempotency-Key`);
        assert.equal(header.required, true, `${op.operationId}: Idempotency-Key is required`);
      }
    }
  });

  test('every object of every response schema is closed (additionalProperties: false)', () => {
    const open: string[] = [];
    const resolve = (ref: string) =>
      ref
        .replace(/^#\//, '')
        .split('/')
        .reduce((node: any, part) => node?.[part], doc);
    const walk = (schema: any, where: string, refs: Set<string>): void => {
      if (!schema || typeof schema !== 'object') return;
      if (typeof schema.$ref === 'string') {
        if (refs.has(schema.$ref)) return;
        walk(resolve(schema.$ref), `${where}(${schema.$ref})`, new Set([...refs, schema.$ref]));
        return;
      }
      const types = ([] as unknown[]).concat(schema.type ?? []);
      const isObject = types.includes('object') || schema.properties !== undefined;
      // error.details is the one free-form object the spec allows.
      if (isObject && schema.additionalProperties !== false && !where.endsWith('.error.details')) open.push(where);
      for (const [k, v] of Object.entries(schema.properties ?? {})) walk(v, `${where}.${k}`, refs);
      if (schema.items) walk(schema.items, `${where}[]`, refs);
      for (const kw of ['anyOf', 'oneOf', 'allOf']) {
        (schema[kw] ?? []).forEach((s: unknown, i: number) => walk(s, `${where}/${kw}[${i}]`, refs));
      }
    };
    let schemas = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          for (const [type, media] of Object.entries<any>(response.content ?? {})) {
            schemas++;
            walk(media.schema, `${method.toUpperCase()} ${path} ${status} ${type}`, new Set());
          }
        }
      }
    }
    assert.ok(schemas >= 7 * 8, `only ${schemas} response schemas`);
    assert.deepEqual(open, []);
  });
});

describe('health probes', () => {
  test('/healthz and /readyz answer 200 without a key', async () => {
    const health = await server.request('GET', '/healthz');
    assert.equal(health.status, 200);
    assertCommonHeaders(health, { rateLimit: false });
    assertJson(health);
    const ready = await server.request('GET', '/readyz');
    assert.equal(ready.status, 200);
    assertCommonHeaders(ready, { rateLimit: false });
    assertJson(ready);
    assert.equal(ready.json.status, 'ready');
    assert.equal(ready.json.checks.database, 'ok');
  });
});

describe('unusual requests end in the error object, never a 5xx', () => {
  test('HEAD answers with the headers only, never a 5xx', async () => {
    const ok = await server.request('HEAD', '/v1/contacts', { key: ws.key });
    assert.equal(ok.status, 200);
    assert.equal(ok.text, '');
    assertCommonHeaders(ok);
    const unknown = await server.request('HEAD', '/v1/nope', { key: ws.key });
    assert.equal(unknown.status, 404);
    assertCommonHeaders(unknown);
    const noKey = await server.request('HEAD', '/v1/contacts');
    assert.equal(noKey.status, 401);
    assertCommonHeaders(noKey);
  });

  test('a trailing slash answers with the error object', async () => {
    for (const path of ['/v1/contacts/', '/v1/appointments/', '/v1/contacts/external/', `/v1/contacts/${contactId}/`]) {
      const r = await server.request('GET', path, { key: ws.key });
      assert.ok(r.status >= 400 && r.status < 500, `${path}: ${r.status}`);
      assertError(r, r.status, r.json?.error?.type ?? '?');
    }
  });

  test('a 5000-character query parameter answers 400 with the error object', async () => {
    const long = 'x'.repeat(5_000);
    assertError(
      await server.request('GET', `/v1/contacts?cursor=${long}`, { key: ws.key }),
      400,
      'invalid_request',
      'invalid_query_parameter',
    );
    assertError(
      await server.request('GET', `/v1/appointments?status=${long}`, { key: ws.key }),
      400,
      'invalid_request',
      'invalid_query_parameter',
    );
    assertError(await server.request('GET', `/v1/${long}`, { key: ws.key }), 404, 'not_found', 'route_not_found');
  });

  test('a 5000-character path parameter answers 4xx with the error object', async () => {
    const long = 'x'.repeat(5_000);
    const cases: [string, string, unknown?][] = [
      ['GET', `/v1/contacts/${long}`],
      ['GET', `/v1/appointments/${long}`],
      ['PATCH', `/v1/contacts/${long}`, { name: 'x' }],
      ['PUT', `/v1/contacts/external/${long}`, { name: 'x' }],
    ];
    for (const [method, path, body] of cases) {
      const r = await server.request(method, path, { key: ws.key, ...(body ? { body, idem: idem() } : {}) });
      assert.ok(r.status >= 400 && r.status < 500, `${method} ${path.slice(0, 30)}...: ${r.status}`);
      assertError(r, r.status, r.json?.error?.type ?? '?');
    }
  });

  test('a header value with a line break is refused with a message naming the header, never its value', async () => {
    const port = Number(new URL(server.baseUrl).port);
    const exchange = (head: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        const answer: Buffer[] = [];
        socket.on('data', (d: Buffer) => answer.push(d));
        socket.once('error', reject);
        socket.once('close', () => resolve(Buffer.concat(answer).toString('utf8')));
        socket.once('connect', () => socket.write(`${head}\r\n\r\n`));
      });
    const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    // What `-H "Authorization: Bearer $(cat file)"` sends when the file holds more than the key.
    const secret = ws.key.slice(-12);
    for (const value of [`Bearer \nDemo key:\n${ws.key}`, `Bearer ${ws.key}\nTry it`, `Bearer ${ws.key}\r`]) {
      const answer = await exchange(`GET /v1/contacts HTTP/1.1\r\nHost: t\r\nAuthorization: ${value}\r\nAccept: */*`);
      assert.match(answer, /^HTTP\/1\.1 400 /, JSON.stringify(value));
      const { error } = bodyOf(answer);
      assert.equal(error.code, 'invalid_header');
      assert.deepEqual(error.details, { header: 'Authorization' });
      assert.match(error.message, /Authorization header .*line break/);
      assert.ok(!answer.includes(secret), 'the answer never carries the value');
    }
    // A line that is no header at all, and a broken request line, name none.
    for (const head of [
      'GET /v1/contacts HTTP/1.1\r\nHost: t\r\nNot a header',
      'GET /v1/con tacts HTTP/1.1\r\nHost: t',
    ]) {
      const { error } = bodyOf(await exchange(head));
      assert.equal(error.code, 'malformed_request', head);
      assert.equal(error.details, undefined);
    }
  });
});
