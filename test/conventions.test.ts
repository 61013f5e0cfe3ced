// Conventions every response shares (spec 4.1, 7, 9): the common headers, the exact error object
// with request_id equal to X-Request-Id, the public and deterministic interface description, the
// health probes, odd requests that must end in the error object rather than a crash, and logs that
// never carry an API key.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { before, describe, test } from 'node:test';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import {
  contactBody,
  idem,
  sleep,
  startTestServer,
  type TestResponse,
  type TestServer,
  type TestWorkspace,
  logLines,
} from './harness.js';
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
const UNKNOWN_ID = '6f1c2a9e-0000-4000-8000-00000000abcd';

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

describe('logs', () => {
  test('at info, one line per request as it is answered: method, path, address, status, time, request id', async () => {
    for (const level of ['info', 'debug'] as const) {
      const { lines, stream } = logLines();
      const logged = await startTestServer({ logger: { logger: { level, stream } } });
      const ids: string[] = [];
      try {
        const w = await logged.workspace();
        for (const [path, key] of [
          ['/v1/contacts?limit=1', w.key],
          ['/v1/contacts', undefined],
          ['/v1/nope', w.key],
        ] as const) {
          const r = await logged.request('GET', path, key ? { key } : {});
          ids.push(r.headers.get('x-request-id') ?? '');
        }
      } finally {
        await logged.close();
      }
      const entries = lines.map((l) => JSON.parse(l) as Record<string, any>);
      for (const [i, id] of ids.entries()) {
        const mine = entries.filter((e) => e.reqId === id);
        const answered = mine.filter((e) => e.msg === 'request completed');
        assert.equal(answered.length, 1, `${level}: request ${i} answered in one line`);
        assert.equal(answered[0]!.level, 30);
        assert.deepEqual(Object.keys(answered[0]!.req).sort(), ['method', 'path', 'remoteAddress']);
        assert.equal(answered[0]!.req.method, 'GET');
        assert.doesNotMatch(answered[0]!.req.path, /\?/, 'the path without its query');
        assert.equal(answered[0]!.res.statusCode, [200, 401, 404][i]);
        assert.equal(typeof answered[0]!.responseTime, 'number');
        const arrivals = mine.filter((e) => e.msg === 'incoming request');
        assert.equal(arrivals.length, level === 'debug' ? 1 : 0, `${level}: arrival lines of request ${i}`);
        assert.equal(mine.length, answered.length + arrivals.length, `${level}: no other line for request ${i}`);
      }
    }
  });

  test('the external id of an upsert is not written to the log: it may be an e-mail address', async () => {
    const { lines, stream } = logLines();
    const logged = await startTestServer({ logger: { logger: { level: 'debug', stream } } });
    try {
      const w = await logged.workspace();
      // Upserts as the router takes them (raw, "/" and "@" encoded, a query, letters of the route
      // percent-encoded), and paths no route takes, answered 404.
      for (const [path, status] of [
        ['/v1/contacts/external/ana.souza@example.com', 201],
        ['/v2/contacts/external/crm/ana.souza%40example.com', 201],
        ['/v1/contacts/external/ana.souza@example.com?x=1', 200],
        ['/v1/contacts/%65xternal/ana.souza@example.com', 200],
        ['/v2/contact%73/ext%65rnal/ana.souza@example.com', 200],
        ['/v1/contacts//external/ana.souza@example.com', 404],
        ['/v1/contacts%2Fexternal%2Fana.souza@example.com', 404],
      ] as const) {
        const r = await logged.request('PUT', path, { key: w.key, body: { name: 'Ana' }, idem: idem() });
        assert.equal(r.status, status, path);
      }
      // An e-mail address or a phone number sent where an id belongs, plain, encoded once or twice
      // (the router decodes once), and on paths no route takes.
      for (const path of [
        '/v2/contacts/ana.souza@example.com',
        '/v2/contact/external/ana.souza%40example.com',
        '/v2/contacts/+5511987654321/x',
        '/v2/contacts/ana.souza%2540example.com',
        '/v2/contacts/%252B5511987654321',
        '/v2/contacts/%2B%2055%2011%2098765-4321',
        '/v2/contacts/5511987654321',
      ]) {
        const r = await logged.request('GET', path, { key: w.key });
        assert.ok(r.status === 400 || r.status === 404, `${path}: ${r.status}`);
      }
    } finally {
      await logged.close();
    }
    assert.doesNotMatch(
      lines.join('\n'),
      /ana\.souza|5511987654321|98765-4321/,
      'no line carries the external id, e-mail or phone',
    );
    const paths = lines
      .map((l) => JSON.parse(l) as { msg?: string; req?: { path?: string } })
      .filter((e) => e.msg === 'request completed')
      .map((e) => e.req?.path);
    assert.deepEqual(paths, [
      '/v1/contacts/external/[redacted]',
      '/v2/contacts/external/[redacted]',
      '/v1/contacts/external/[redacted]',
      '/v1/contacts/external/[redacted]',
      '/v2/contacts/external/[redacted]',
      '/v1/contacts//external/[redacted]',
      '/v1/contacts/external/[redacted]',
      '/v2/contacts/[redacted]',
      '/v2/[redacted]/external/[redacted]',
      '/v2/contacts/[redacted]/[redacted]',
      '/v2/contacts/[redacted]',
      '/v2/contacts/[redacted]',
      '/v2/contacts/[redacted]',
      '/v2/contacts/[redacted]',
    ]);
  });

  test('a request its client leaves, and one the HTTP parser refuses, still have their one line', async () => {
    const { lines, stream } = logLines();
    const logged = await startTestServer({ logger: { logger: { level: 'info', stream } } });
    let refusedId = '';
    try {
      const w = await logged.workspace();
      const port = Number(new URL(logged.baseUrl).port);
      // Half a body, then the client goes.
      const leaving = connect(port, '127.0.0.1');
      await new Promise<void>((resolve) => leaving.once('connect', () => resolve()));
      leaving.write(
        `POST /v1/contacts HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${w.key}\r\nContent-Type: application/json\r\n` +
          `Idempotency-Key: ${idem()}\r\nContent-Length: 100\r\n\r\n{"name":`,
      );
      await sleep(200);
      leaving.destroy();
      // Half a body, then the client ends its side of the connection (a FIN, as curl does when it
      // gives up): it has left too, and gets no answer (the parser's error is not a refusal).
      const ending = connect(port, '127.0.0.1');
      const endingAnswer: string[] = [];
      ending.on('data', (d: Buffer) => endingAnswer.push(d.toString('latin1')));
      await new Promise<void>((resolve) => ending.once('connect', () => resolve()));
      ending.write(
        `PUT /v1/contacts/external/crm-9 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${w.key}\r\n` +
          `Content-Type: application/json\r\nIdempotency-Key: ${idem()}\r\nContent-Length: 100\r\n\r\n{"name":`,
      );
      await sleep(200);
      ending.end();
      await new Promise((resolve) => ending.once('close', resolve));
      assert.equal(endingAnswer.join(''), '', 'no answer to a client that left');
      // A header line the parser cannot read.
      const refused = connect(port, '127.0.0.1');
      const answer: string[] = [];
      refused.on('data', (d: Buffer) => answer.push(d.toString('latin1')));
      await new Promise<void>((resolve) => refused.once('connect', () => resolve()));
      refused.write('GET /v1/contacts HTTP/1.1\r\nHost: t\r\nNot a header\r\n\r\n');
      await new Promise((resolve) => refused.once('close', resolve));
      refusedId = /x-request-id: (\S+)/i.exec(answer.join(''))?.[1] ?? '';
      await sleep(200);
    } finally {
      await logged.close();
    }
    const entries = lines.map((l) => JSON.parse(l) as Record<string, any>);
    const aborted = entries.filter((e) => e.msg === 'request aborted');
    assert.deepEqual(
      aborted.map((e) => e.req.method),
      ['POST', 'PUT'],
      'the requests their clients left',
    );
    assert.deepEqual(
      entries.filter((e) => e.msg === 'request refused').map((e) => e.reqId),
      [refusedId],
      'the only refusal is the unreadable request',
    );
    assert.match(refusedId, /^req_/);
    const refusedLines = entries.filter((e) => e.reqId === refusedId);
    assert.equal(refusedLines.length, 1, 'the request the parser refused');
    assert.equal(refusedLines[0]!.res.statusCode, 400);
    assert.ok(!JSON.stringify(refusedLines[0]).includes('Not a header'), 'nothing of what it sent');
  });

  test('never contain the API key, its secret or the Authorization header', async () => {
    const { lines, stream } = logLines();
    const logged = await startTestServer({ logger: { logger: { level: 'trace', stream } } });
    let key = '';
    const ids: string[] = [];
    try {
      const w = await logged.workspace({ rateLimitPerMinute: 6 });
      key = w.key;
      const revoked = await w.newKey(['contacts:read']);
      await ownerCommands.revokeKey(logged.owner, { keyId: revoked.id });
      const wrongSecret = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
      const requests: [string, string, Parameters<TestServer['request']>[2]][] = [
        ['GET', '/v1/contacts', { key }],
        ['POST', '/v1/contacts', { key, body: contactBody(), idem: idem() }],
        ['POST', '/v1/contacts', { key, body: { name: 1 }, idem: idem() }],
        ['GET', `/v1/contacts/${UNKNOWN_ID}`, { key }],
        ['GET', '/v1/contacts', { key: wrongSecret }],
        ['GET', '/v1/contacts', { key: revoked.key }],
        ['GET', '/v1/contacts', {}],
        ['GET', '/v1/nope', { key }],
        ['GET', '/v1/contacts', { key }],
        ['GET', '/v1/contacts', { key }], // the 7th request of a 6/min key: 429
        // The key in the path, its dot percent-encoded: not a word of a route, so written as [redacted].
        ['GET', `/v1/contacts/${key.replace('.', '%2E')}`, { key }],
      ];
      const statuses: number[] = [];
      for (const [method, path, options] of requests) {
        const r = await logged.request(method, path, options);
        statuses.push(r.status);
        ids.push(r.headers.get('x-request-id') ?? '');
      }
      assert.deepEqual(statuses, [200, 201, 422, 404, 401, 401, 401, 404, 200, 429, 429]);
    } finally {
      await logged.close();
    }
    assert.ok(lines.length > 0, 'nothing was logged');
    assert.ok(
      ids.every((id) => lines.some((l) => l.includes(id))),
      'every request was logged (so the check below looked at something)',
    );
    const secret = key.slice(key.indexOf('.') + 1);
    const forbidden = [key, secret, secret.slice(0, 40), secret.slice(0, 20)];
    const leaks = lines.filter((l) => forbidden.some((f) => l.includes(f)));
    assert.equal(leaks.length, 0, `${leaks.length} log line(s) contain the key or its secret`);
    const headerLines = lines.filter((l) => /authorization|bearer/i.test(l));
    assert.equal(headerLines.length, 0, `${headerLines.length} log line(s) mention the Authorization header`);
  });
});
