// Rate limits through HTTP: per-key quotas refilled continuously (GCRA: a burst of the quota, then
// one request per 60/N s),
// the RateLimit-* headers on every answer (errors included), 429 with Retry-After that does nothing,
// per-address limits for requests without a valid key, and counts shared through Redis by several
// server processes (with a per-process fallback when Redis is unreachable). The admission stores
// below HTTP are test/admission-store.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Database } from '../src/infra/database.js';
import { issueKey } from '../src/modules/api-keys/key-format.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import {
  contactBody,
  idem,
  openTestDatabase,
  sleep,
  startTestServer,
  testConfig,
  type TestResponse,
  type TestServer,
} from './harness.js';
import { useTestServer } from './test-server.js';
import { describeOrSkip, findRedis } from './servers.js';

const redisServer = await findRedis();
const REDIS_URL = redisServer.url ?? '';
const WINDOW_MS = 60_000;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

let db: Database;
/** Its store is the file's: the servers some tests start besides share it. */
const server = useTestServer({ openDb: async () => (db = await openTestDatabase()) });

// ------------------------------------------------------------------------------------------ helpers

interface Limits {
  limit: number;
  remaining: number;
  reset: string;
  resetMs: number;
}

/** The RateLimit-* headers of a response, checked for presence and shape. */
function limits(r: TestResponse, label = ''): Limits {
  const limit = r.headers.get('ratelimit-limit');
  const remaining = r.headers.get('ratelimit-remaining');
  const reset = r.headers.get('ratelimit-reset');
  assert.ok(limit !== null && /^\d+$/.test(limit), `${label} RateLimit-Limit: ${limit}`);
  assert.ok(remaining !== null && /^\d+$/.test(remaining), `${label} RateLimit-Remaining: ${remaining}`);
  assert.ok(reset !== null && RFC3339.test(reset), `${label} RateLimit-Reset: ${reset}`);
  return { limit: Number(limit), remaining: Number(remaining), reset, resetMs: Date.parse(reset) };
}

function assertRateLimited(r: TestResponse, label = '', code = 'rate_limit_exceeded'): number {
  assert.equal(r.status, 429, `${label} ${r.text}`);
  assert.equal(r.json.error.type, 'rate_limit_error', label);
  assert.equal(r.json.error.code, code, label);
  const retryAfter = r.headers.get('retry-after');
  assert.ok(retryAfter !== null && /^\d+$/.test(retryAfter), `${label} Retry-After: ${retryAfter}`);
  const seconds = Number(retryAfter);
  assert.ok(seconds >= 1 && seconds <= 60, `${label} Retry-After ${seconds}`);
  assert.equal(limits(r, label).remaining, 0, label);
  return seconds;
}

/** Polls /readyz for up to 3 s; returns the last answer. */
async function waitUntilReady(s: TestServer): Promise<TestResponse> {
  const until = Date.now() + 3_000;
  for (;;) {
    const r = await s.request('GET', '/readyz');
    if (r.status === 200 || Date.now() > until) return r;
    await sleep(20);
  }
}

const list = (s: TestServer, key?: string) => s.request('GET', '/v1/contacts', key ? { key } : {});

const countContacts = async (workspaceId: string) =>
  (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1', [workspaceId]))
    .rows[0]!.n;

// ------------------------------------------------------------------------------------------ per key

describe('per-key quota', () => {
  test('a 5/min key: Remaining 4,3,2,1,0, then 429 with Retry-After of the next slot (12 s); Reset when the quota is whole again', async () => {
    const ws = await server.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 5 });
    const firstAt = Date.now();
    const seen: Limits[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await list(server, ws.key);
      assert.equal(r.status, 200, r.text);
      seen.push(limits(r, `request ${i + 1}`));
    }
    assert.deepEqual(
      seen.map((l) => l.remaining),
      [4, 3, 2, 1, 0],
    );
    assert.ok(seen.every((l) => l.limit === 5));
    // Each request pushes the instant the whole quota is back by one interval (60 s / 5).
    for (let i = 1; i < 5; i++) assert.ok(seen[i]!.resetMs > seen[i - 1]!.resetMs, 'Reset moves on with each request');
    const resetMs = seen[4]!.resetMs;
    assert.ok(
      resetMs >= firstAt + WINDOW_MS - 1_000 && resetMs <= Date.now() + WINDOW_MS + 1_000,
      `Reset ${seen[4]!.reset} is not about one minute after the burst`,
    );

    for (let i = 0; i < 2; i++) {
      const refused = await list(server, ws.key);
      const retryAfter = assertRateLimited(refused, `refused ${i + 1}`);
      const l = limits(refused);
      assert.equal(l.limit, 5);
      assert.equal(l.resetMs, resetMs, 'a refusal does not move Reset');
      // The next slot: one interval after the first request of the burst, not the whole window.
      assert.ok(retryAfter >= 11 && retryAfter <= 12, `Retry-After ${retryAfter}`);
      assert.equal(refused.json.error.request_id, refused.headers.get('x-request-id'));
    }
  });

  test('a 60/min key: 60 of a 90-request burst pass; the 429 says Retry-After 1, and after waiting it one more passes', async () => {
    const ws = await server.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 60 });
    const started = Date.now();
    const statuses = await Promise.all(Array.from({ length: 90 }, () => list(server, ws.key).then((r) => r)));
    // One request a second refills: a burst slower than a second may pass one more per second.
    const refilled = Math.floor((Date.now() - started) / 1000);
    const passed = statuses.filter((r) => r.status === 200).length;
    assert.ok(passed >= 60 && passed <= 60 + refilled, `${passed} of 90 passed in ${Date.now() - started} ms`);
    const refused = statuses.filter((r) => r.status === 429);
    assert.equal(refused.length, 90 - passed);
    const waits = refused.map((r) => assertRateLimited(r));
    assert.ok(
      waits.every((s) => s <= 2),
      `Retry-After ${waits.join(',')}`,
    );
    await sleep(Math.max(...waits) * 1000);
    assert.equal((await list(server, ws.key)).status, 200, 'the request after Retry-After passes');
    assertRateLimited(await list(server, ws.key), 'and the one right after it waits again');
  });

  test('refusals are recorded in the usage trail as rate_limited', async () => {
    const ws = await server.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 2 });
    for (let i = 0; i < 2; i++) assert.equal((await list(server, ws.key)).status, 200);
    for (let i = 0; i < 3; i++) assertRateLimited(await list(server, ws.key));
    await server.built.services.usage.flush();
    const { usage } = await ownerCommands.keyUsage(server.owner, { keyId: ws.keyId });
    assert.deepEqual(
      usage.map((u) => [u.operation, u.requests, u.client_errors, u.server_errors, u.rate_limited]),
      [['listContacts', 5, 0, 0, 3]],
    );
  });

  test('RateLimit-Limit is the quota of the key presenting the request', async () => {
    const ws = await server.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 7 });
    const big = await ws.newKey(['contacts:read'], { rateLimitPerMinute: 1_000 });
    const byDefault = await ws.newKey(['contacts:read']);
    const a = limits(await list(server, ws.key));
    assert.deepEqual([a.limit, a.remaining], [7, 6]);
    const b = limits(await list(server, big.key));
    assert.deepEqual([b.limit, b.remaining], [1_000, 999]);
    const c = limits(await list(server, byDefault.key));
    assert.equal(c.limit, testConfig().defaultRateLimitPerMinute);
    assert.equal(c.remaining, c.limit - 1);
  });

  test('a POST past the limit is refused and creates no contact (nor an idempotency record)', async () => {
    const ws = await server.workspace({ scopes: ['contacts:write', 'contacts:read'], rateLimitPerMinute: 2 });
    for (let i = 0; i < 2; i++) {
      const r = await server.request('POST', '/v1/contacts', { key: ws.key, body: contactBody(), idem: idem() });
      assert.equal(r.status, 201, r.text);
    }
    const refusedKey = idem();
    const refused = await server.request('POST', '/v1/contacts', {
      key: ws.key,
      body: contactBody({ name: 'Past The Limit' }),
      idem: refusedKey,
    });
    assertRateLimited(refused);
    assert.equal(await countContacts(ws.id), 2);
    const { rows } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM idempotency_keys WHERE workspace_id = $1 AND key = $2',
      [ws.id, refusedKey],
    );
    assert.equal(rows[0]!.n, 0);
    // Still refused, and still nothing written, for an upsert and an update.
    const upsert = await server.request('PUT', '/v1/contacts/external/ext-past-limit', {
      key: ws.key,
      body: contactBody(),
      idem: idem(),
    });
    assertRateLimited(upsert);
    assert.equal(await countContacts(ws.id), 2);
  });

  test('two keys of one workspace have independent quotas', async () => {
    const ws = await server.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 3 });
    const other = await ws.newKey(['contacts:read'], { rateLimitPerMinute: 3 });
    for (let i = 0; i < 3; i++) assert.equal((await list(server, ws.key)).status, 200);
    assertRateLimited(await list(server, ws.key));
    const r = await list(server, other.key);
    assert.equal(r.status, 200);
    assert.equal(limits(r).remaining, 2);
    assert.equal(limits(await list(server, other.key)).remaining, 1);
    assertRateLimited(await list(server, ws.key), 'the first key stays limited');
  });

  test('a rotated key and its successor share one quota during the grace period, and so does the next rotation', async () => {
    const ws = await server.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 5 });
    for (let i = 0; i < 3; i++) assert.equal((await list(server, ws.key)).status, 200);
    const rotated = await ownerCommands.rotateKey(server.owner, { keyId: ws.keyId, graceMs: 3_600_000 });
    const successor = rotated.new_key.key;
    const r = await list(server, successor);
    assert.equal(r.status, 200);
    assert.equal(limits(r).remaining, 1, 'the successor continues the count of the key it replaces');
    assert.equal(limits(await list(server, ws.key)).remaining, 0, 'the old key counts on the same quota');
    assertRateLimited(await list(server, successor));
    assertRateLimited(await list(server, ws.key));
    // A rotation of the successor stays in the lineage.
    const again = await ownerCommands.rotateKey(server.owner, { keyId: rotated.new_key.id, graceMs: 3_600_000 });
    assertRateLimited(await list(server, again.new_key.key), 'the third key of the chain shares it too');
  });

  test('every answer carries the headers, refusals and errors included, and each counts', async () => {
    const ws = await server.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 10 });
    const answers: [string, TestResponse][] = [
      ['200', await list(server, ws.key)],
      ['400', await server.request('GET', '/v1/contacts?limit=0', { key: ws.key })],
      [
        '404 resource',
        await server.request('GET', '/v1/contacts/00000000-0000-4000-8000-000000000000', { key: ws.key }),
      ],
      ['404 path', await server.request('GET', '/v1/nowhere', { key: ws.key })],
      ['403 scope', await server.request('POST', '/v1/contacts', { key: ws.key, body: contactBody(), idem: idem() })],
    ];
    const statuses = answers.map(([, r]) => r.status);
    assert.deepEqual(statuses, [200, 400, 404, 404, 403]);
    const remaining = answers.map(([label, r]) => {
      assert.ok(r.headers.get('x-request-id'), label);
      const l = limits(r, label);
      assert.equal(l.limit, 10, label);
      return l.remaining;
    });
    assert.deepEqual(remaining, [9, 8, 7, 6, 5]);
  });
});

// -------------------------------------------------------------------------------- per address

describe('requests without a valid key', () => {
  test('are limited per client address: 3 × 401 with headers, then 429; valid keys are not affected', async () => {
    // The address's quota starts full: on PostgreSQL its count outlives a run of this file by a minute.
    await db.query(`DELETE FROM rate_limit_buckets WHERE bucket LIKE 'ip:%/3'`);
    const s = await startTestServer({ db, config: { unauthenticatedRateLimitPerMinute: 3 } });
    try {
      const ws = await s.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 50 });
      assert.equal((await list(s, ws.key)).status, 200, 'a valid key does not use the address quota');

      const refused = [
        await list(s),
        await list(s, issueKey().key),
        await s.request('GET', '/v1/contacts', { headers: { authorization: 'Bearer not-a-key' } }),
      ];
      const seen = refused.map((r, i) => {
        assert.equal(r.status, 401, `attempt ${i + 1}: ${r.text}`);
        assert.equal(r.json.error.type, 'authentication_error');
        const l = limits(r, `401 #${i + 1}`);
        assert.equal(l.limit, 3);
        return l;
      });
      assert.deepEqual(
        seen.map((l) => l.remaining),
        [2, 1, 0],
      );
      assert.ok(seen.every((l, i) => l.resetMs > Date.now() && (i === 0 || l.resetMs > seen[i - 1]!.resetMs)));

      const limited = await list(s, issueKey().key);
      assertRateLimited(limited, 'address over quota', 'address_rate_limit_exceeded');
      assert.equal(limits(limited).limit, 3);
      assertRateLimited(await list(s), 'no header, over quota', 'address_rate_limit_exceeded');

      // The address is the connection's: without trustProxy, X-Forwarded-For does not open a new quota.
      const spoofed = await s.request('GET', '/v1/contacts', { headers: { 'x-forwarded-for': '203.0.113.9' } });
      assertRateLimited(spoofed, 'X-Forwarded-For ignored', 'address_rate_limit_exceeded');

      const ok = await list(s, ws.key);
      assert.equal(ok.status, 200, 'a valid key from the same address still works');
      assert.deepEqual([limits(ok).limit, limits(ok).remaining], [50, 48]);
    } finally {
      await s.close();
    }
  });
});

// ------------------------------------------------------------------------------------------ Redis

describeOrSkip(redisServer.skip, 'RedisRateLimitStore', () => {
  test('two server processes over one Redis share one count', async () => {
    const a = await startTestServer({ db, config: { redisUrl: REDIS_URL } });
    const b = await startTestServer({ db, config: { redisUrl: REDIS_URL } });
    try {
      // The servers listen before their Redis connection is up (and say so on /readyz): wait for ready.
      for (const s of [a, b]) {
        const ready = await waitUntilReady(s);
        assert.equal(ready.status, 200, `Redis at ${REDIS_URL} must be reachable: ${ready.text}`);
        assert.equal(ready.json.checks.redis, 'ok');
      }
      const ws = await a.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 6 });
      const seen: Limits[] = [];
      for (let i = 0; i < 6; i++) {
        const s = i % 2 === 0 ? a : b;
        const r = await list(s, ws.key);
        assert.equal(r.status, 200, `request ${i + 1} on server ${i % 2 === 0 ? 'a' : 'b'}: ${r.text}`);
        seen.push(limits(r, `request ${i + 1}`));
      }
      assert.deepEqual(
        seen.map((l) => l.remaining),
        [5, 4, 3, 2, 1, 0],
      );
      assert.ok(seen.every((l) => l.limit === 6));
      assert.ok(seen.every((l) => l.resetMs > Date.now() && l.resetMs <= Date.now() + WINDOW_MS));
      // One bucket in Redis, on Redis's clock: each request, whichever server took it, moves the
      // instant the quota is whole again by one interval (10 s for 6/min).
      for (let i = 1; i < 6; i++) {
        const step = seen[i]!.resetMs - seen[i - 1]!.resetMs;
        assert.ok(Math.abs(step - 10_000) <= 50, `one bucket: ${seen.map((l) => l.reset).join(' ')}`);
      }

      assertRateLimited(await list(a, ws.key), 'server a');
      assertRateLimited(await list(b, ws.key), 'server b');

      // Another key of the same workspace is counted on its own, on both servers.
      const other = await ws.newKey(['contacts:read'], { rateLimitPerMinute: 6 });
      assert.equal(limits(await list(b, other.key)).remaining, 5);
      assert.equal(limits(await list(a, other.key)).remaining, 4);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('when Redis is unreachable, requests still succeed with headers, counted per process', async () => {
    const s = await startTestServer({ db, config: { redisUrl: 'redis://127.0.0.1:1' } });
    try {
      const ws = await s.workspace({ scopes: ['contacts:read'], rateLimitPerMinute: 3 });
      const started = Date.now();
      const seen: Limits[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await list(s, ws.key);
        assert.equal(r.status, 200, `request ${i + 1}: ${r.text}`);
        seen.push(limits(r, `request ${i + 1}`));
      }
      assert.deepEqual(
        seen.map((l) => [l.limit, l.remaining]),
        [
          [3, 2],
          [3, 1],
          [3, 0],
        ],
      );
      assertRateLimited(await list(s, ws.key), 'fallback count');
      const unauthenticated = await list(s);
      assert.equal(unauthenticated.status, 401, unauthenticated.text);
      limits(unauthenticated, 'fallback 401');
      assert.ok(Date.now() - started < 5_000, 'an unreachable Redis does not stall requests');
    } finally {
      await s.close();
    }
  });
});
