// When the store cannot be reached the service answers 503 with Retry-After and the error object,
// stays up, and tells orchestrators through /readyz; /healthz still says the process is alive.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildApp, type BuiltApp } from '../src/app.js';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { issueKey } from '../src/modules/api-keys/key-format.js';
import { testConfig } from './harness.js';

let built: BuiltApp;
let db: Database;
let base: string;

before(async () => {
  // Port 1 on loopback: nothing listens there, every connection is refused at once.
  db = createPostgresDatabase('postgres://postgres@127.0.0.1:1/none', 2);
  built = await buildApp(testConfig({ cursorSecret: 'x'.repeat(32) }), db, { logger: false });
  base = await built.app.listen({ port: 0, host: '127.0.0.1' });
});
after(async () => {
  await built.close();
  await db.close();
});

test('an API request while the store is down is 503 service_unavailable with Retry-After', async () => {
  const res = await fetch(`${base}/v1/contacts`, { headers: { authorization: `Bearer ${issueKey().key}` } });
  assert.equal(res.status, 503);
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
  for (const h of ['x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
    assert.ok(res.headers.get(h), h);
  const body = (await res.json()) as { error: Record<string, string> };
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(body.error.type, 'api_error');
  assert.equal(body.error.code, 'service_unavailable');
  assert.equal(body.error.request_id, res.headers.get('x-request-id'));
  assert.doesNotMatch(JSON.stringify(body), /ECONNREFUSED|127\.0\.0\.1|postgres/i);
});

test('a request without a usable key is still 401: refusing it needs no store', async () => {
  const res = await fetch(`${base}/v1/contacts`, { headers: { authorization: 'Bearer nope' } });
  assert.equal(res.status, 401);
});

test('/readyz reports the store unavailable, /healthz stays 200', async () => {
  const ready = await fetch(`${base}/readyz`);
  assert.equal(ready.status, 503);
  assert.deepEqual(await ready.json(), { status: 'unavailable', checks: { database: 'unavailable' } });
  assert.equal((await fetch(`${base}/healthz`)).status, 200);
});
