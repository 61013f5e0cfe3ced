// Rate limits through HTTP: per-key quotas refilled continuously (GCRA: a burst of the quota, then
// one request per 60/N s),
// the RateLimit-* headers on every answer (errors included), 429 with Retry-After that does nothing,
// per-address limits for requests without a valid key, and counts shared through Redis by several
// server processes (with a per-process fallback when Redis is unreachable).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import type { Database, Queryable } from '../src/infra/database.js';
import { issueKey } from '../src/modules/api-keys/key-format.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import {
  MemoryAdmissionStore,
  PostgresAdmissionStore,
  RedisAdmissionStore,
  type Admission,
  type AdmissionStore,
} from '../src/infra/admission-store.js';
import { RedisConnection } from '../src/infra/redis.js';
import {
  contactBody,
  idem,
  openTestDatabase,
  sleep,
  startTestServer,
  STORE,
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

  test('admissions sent in the same turn are counted exactly (Redis)', async () => {
    const redis = new RedisConnection(REDIS_URL);
    const store = new RedisAdmissionStore(redis, (err) => assert.fail(`Redis degraded: ${err.message}`));
    try {
      await redis.connected();
      await admissionsOfOneTurn(store, `redis-${process.pid}-${Date.now()}`);
    } finally {
      await store.close();
      redis.close();
    }
  });

  test('places given back while Redis could not be reached are given back there once it answers', async () => {
    const redis = new RedisConnection(REDIS_URL);
    const store = new RedisAdmissionStore(redis);
    try {
      await redis.connected();
      const bucket = `leftovers-${process.pid}-${Date.now()}`;
      const place = (holder: string) => admitWithPlace(store, bucket, holder, 2);
      assert.equal(await place('first'), true);
      assert.equal(await place('second'), true);
      // Redis goes away while both requests end: their releases cannot reach it.
      const ended = once(redis.client, 'end');
      redis.client.disconnect();
      await ended;
      await store.release(bucket, 'first');
      await store.release(bucket, 'second');
      const ready = once(redis.client, 'ready');
      redis.client.connect().catch(() => undefined);
      await ready;
      // Back: without the leftovers given back, both places would stay taken for 45 s.
      assert.equal(await place('third'), true);
      assert.equal(await place('fourth'), true);
      assert.equal(await place('fifth'), false, 'the limit holds');
      // Counted in Redis, not in this process's memory: this process holds two places there.
      const counts = Object.values(await redis.client.hgetall(`wsapi:places:${bucket}`));
      assert.deepEqual(
        counts.map((value) => value.split(':')[0]),
        ['2'],
      );
    } finally {
      await store.close();
      redis.close();
    }
  });

  test('the places of the last requests are given back in Redis as the process closes', async () => {
    const bucket = `closing-${process.pid}-${Date.now()}`;
    const first = new RedisConnection(REDIS_URL);
    const second = new RedisConnection(REDIS_URL);
    const stopping = new RedisAdmissionStore(first);
    const other = new RedisAdmissionStore(second);
    try {
      await Promise.all([first.connected(), second.connected()]);
      assert.equal(await admitWithPlace(stopping, bucket, 'a1', 2), true);
      assert.equal(await admitWithPlace(stopping, bucket, 'a2', 2), true);
      // The last requests end as the process stops: it gives their places back, closes, and its
      // connection goes.
      void stopping.release(bucket, 'a1');
      void stopping.release(bucket, 'a2');
      await stopping.close();
      first.close();
      assert.deepEqual(
        [await admitWithPlace(other, bucket, 'b1', 2), await admitWithPlace(other, bucket, 'b2', 2)],
        [true, true],
        'both places free at once, not after their lease',
      );
    } finally {
      first.close();
      await other.close();
      second.close();
    }
  });

  test('a place held longer than its lease stays taken: the holding process renews it (Redis)', async () => {
    const first = new RedisConnection(REDIS_URL);
    const second = new RedisConnection(REDIS_URL);
    try {
      await Promise.all([first.connected(), second.connected()]);
      await leaseRenewed(
        new RedisAdmissionStore(first),
        new RedisAdmissionStore(second),
        `lease-${process.pid}-${Date.now()}`,
      );
    } finally {
      first.close();
      second.close();
    }
  });

  test('while Redis cannot answer, the places a process holds there are not free in its memory', async () => {
    await withRedisStore(async (store, redis) => {
      const bucket = `outage-held-${process.pid}-${Date.now()}`;
      assert.equal(await admitWithPlace(store, bucket, 'first', 3), true);
      assert.equal(await admitWithPlace(store, bucket, 'second', 3), true);
      const ended = once(redis.client, 'end');
      redis.client.disconnect();
      await ended;
      // Counted in memory now: one place of three is left, not three.
      assert.deepEqual(
        [await admitWithPlace(store, bucket, 'third', 3), await admitWithPlace(store, bucket, 'fourth', 3)],
        [true, false],
      );
    });
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

/** Runs `use` with a Redis admission store of its own, closed after it. */
async function withRedisStore(use: (store: RedisAdmissionStore, redis: RedisConnection) => Promise<void>) {
  const redis = new RedisConnection(REDIS_URL);
  const store = new RedisAdmissionStore(redis);
  try {
    await redis.connected();
    await use(store, redis);
  } finally {
    await store.close();
    redis.close();
  }
}

/** Takes a place of `bucket` (of `limit`) for `holder`, on a quota that never refuses. */
async function admitWithPlace(store: AdmissionStore, bucket: string, holder: string, limit: number, leaseMs = 45_000) {
  const { count, placed } = await store.admit(
    { bucket: `${bucket}:count`, limit: 1_000_000, windowMs: WINDOW_MS, cost: 1 },
    { bucket, holder, limit, leaseMs },
  );
  assert.equal(count.allowed, true);
  return placed;
}

/**
 * `holding` takes the one place of a bucket on a lease of 600 ms and keeps it for more than two
 * leases, with no other request of its own: `other` (another process) finds it taken all along,
 * and free once it is given back.
 */
async function leaseRenewed(holding: AdmissionStore, other: AdmissionStore, bucket: string): Promise<void> {
  const LEASE_MS = 600;
  try {
    assert.equal(await admitWithPlace(holding, bucket, 'long', 1, LEASE_MS), true);
    await new Promise((resolve) => setTimeout(resolve, 2.5 * LEASE_MS));
    assert.equal(await admitWithPlace(other, bucket, 'meanwhile', 1, LEASE_MS), false, 'still held after 2.5 leases');
    await holding.release(bucket, 'long');
    assert.equal(await admitWithPlace(other, bucket, 'after', 1, LEASE_MS), true, 'free once given back');
  } finally {
    await holding.close();
    await other.close();
  }
}

/**
 * Admissions of one turn of the event loop, in one call: 120 counts on a 50/min bucket and 30 on a
 * 10/min one, interleaved, with 4 requests taking the 4 places of a bucket; then, in the next turn,
 * 40 more counts on the first bucket, 2 of the places given back and 6 more requests asking for one;
 * then requests of differing costs on a third bucket.
 */
async function admissionsOfOneTurn(store: AdmissionStore, run: string): Promise<void> {
  const sent: { bucket: 'a' | 'b'; admission: Promise<Admission> }[] = [];
  const take = (bucket: 'a' | 'b', limit: number) =>
    sent.push({ bucket, admission: store.admit({ bucket: `${run}:${bucket}`, limit, windowMs: WINDOW_MS, cost: 1 }) });
  for (let i = 0; i < 120; i++) {
    take('a', 50);
    if (i % 4 === 0) take('b', 10);
  }
  const places = `${run}:places`;
  const first = await Promise.all([0, 1, 2, 3].map((n) => admitWithPlace(store, places, `h${n}`, 4)));
  for (let i = 0; i < 40; i++) take('a', 50);
  const releases = [store.release(places, 'h0'), store.release(places, 'h1')];
  const second = await Promise.all([4, 5, 6, 7, 8, 9].map((n) => admitWithPlace(store, places, `h${n}`, 4)));
  await Promise.all(releases);
  assert.deepEqual(first, [true, true, true, true], 'four places of four');
  assert.deepEqual(second, [true, true, false, false, false, false], 'the two given back in the same turn, no more');

  // Requests of one bucket that cost differently, in one turn: each counted in its order, and a
  // refusal of a larger cost does not refuse a smaller one after it.
  const costs = [1, 1, 5, 1, 3, 1];
  const mixed = await Promise.all(
    costs.map((cost) => store.admit({ bucket: `${run}:c`, limit: 10, windowMs: WINDOW_MS, cost })),
  );
  assert.deepEqual(
    mixed.map((a) => [a.count.allowed, a.count.remaining]),
    [
      [true, 9],
      [true, 8],
      [true, 3],
      [true, 2],
      [false, 0],
      [true, 1],
    ],
    'costs 1, 1, 5, 1, 3, 1 of a quota of 10',
  );

  const states = await Promise.all(sent.map((t) => t.admission));
  for (const [name, limit] of [
    ['a', 50],
    ['b', 10],
  ] as const) {
    const bucket = states.filter((_, i) => sent[i]!.bucket === name).map((s) => s.count);
    assert.equal(bucket.length, name === 'a' ? 160 : 30);
    const allowed = bucket.filter((s) => s.allowed);
    assert.equal(allowed.length, limit, `bucket ${name}: exactly its quota passes`);
    // Each allowed take saw its own count: limit-1 … 0, each once, in the order they were sent.
    assert.deepEqual(
      allowed.map((s) => s.remaining),
      Array.from({ length: limit }, (_, i) => limit - 1 - i),
      `bucket ${name}`,
    );
    assert.ok(
      bucket.slice(limit).every((s) => !s.allowed && s.retryAfterMs > 0),
      `bucket ${name}: the rest refused`,
    );
  }
}

test(`a place held longer than its lease stays taken: the holding process renews it (PostgreSQL admission store, ${STORE} store)`, async () => {
  await leaseRenewed(
    new PostgresAdmissionStore(db),
    new PostgresAdmissionStore(db),
    `lease-${process.pid}-${Date.now()}`,
  );
});

test(`admissions sent in the same turn are counted exactly (PostgreSQL admission store, ${STORE} store)`, async () => {
  const store = new PostgresAdmissionStore(db, (err) => assert.fail(`the database failed: ${err.message}`));
  try {
    await admissionsOfOneTurn(store, `pg-${process.pid}-${Date.now()}`);
  } finally {
    await store.close();
  }
});

test(`two processes' calls that name the same buckets in opposite orders never deadlock, and count exactly (${STORE} store)`, async () => {
  // Two stores stand for two processes: each call of one names buckets a and b in one order, each
  // call of the other in the other order, at once, many times.
  const failures: string[] = [];
  const stores = [0, 1].map(() => new PostgresAdmissionStore(db, (err) => failures.push(err.message)));
  const run = `cross-${process.pid}-${Date.now()}`;
  // An hour's window: 300 per hour gives one back every 12 s, so none comes back during the test
  // (300 per minute gave one back every 200 ms, and a slow run admitted 301).
  const windowMs = 3_600_000;
  try {
    const admitted = { a: 0, b: 0 };
    for (let round = 0; round < 40; round++) {
      const calls = stores.map((store, n) => {
        const order = n === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const);
        return order.flatMap((bucket) =>
          [0, 1, 2, 3, 4].map(async () => {
            const { count } = await store.admit({
              bucket: `${run}:${bucket}`,
              limit: 300,
              windowMs,
              cost: 1,
            });
            if (count.allowed) admitted[bucket]++;
          }),
        );
      });
      await Promise.all(calls.flat());
    }
    assert.deepEqual(failures, [], 'no call failed (a deadlock would, and be counted in memory)');
    // 40 rounds × 2 stores × 5 = 400 requests per bucket against a quota of 300.
    assert.deepEqual(admitted, { a: 300, b: 300 }, 'exactly the quota, shared');
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
});

test(`places given back while the database could not be reached are given back with the next call (${STORE} store)`, async () => {
  // The database fails every call while "down": a terminated session, an outage.
  let down = false;
  const flaky: Queryable = {
    query: (sql, params, name) =>
      down ? Promise.reject(new Error('Connection terminated')) : db.query(sql, params, name),
    exec: (script) => db.exec(script),
  };
  const store = new PostgresAdmissionStore(flaky);
  const bucket = `pg-leftovers-${process.pid}-${Date.now()}`;
  const place = (holder: string) => admitWithPlace(store, bucket, holder, 2);
  assert.equal(await place('first'), true);
  assert.equal(await place('second'), true);
  down = true;
  await store.release(bucket, 'first');
  await store.release(bucket, 'second');
  down = false;
  // Without the leftovers given back, both places would stay taken for 45 s.
  assert.equal(await place('third'), true);
  assert.equal(await place('fourth'), true);
  assert.equal(await place('fifth'), false, 'the limit holds');
  const { rows } = await db.query<{ held: number }>(
    'SELECT coalesce(sum(held), 0)::int AS held FROM concurrency_places WHERE bucket = $1',
    [bucket],
  );
  assert.equal(rows[0]!.held, 2, 'counted in the database, not in memory');
  await store.close();
});

/** The test's database, whose answers are lost while `losing`: each statement runs, its caller hears a failure. */
function answersLost() {
  const lossy = {
    losing: false,
    db: {
      query: async <R>(sql: string, params?: readonly unknown[], name?: string) => {
        const result = await db.query<R>(sql, params, name);
        if (lossy.losing) throw new Error('Connection terminated');
        return result;
      },
      exec: (script: string) => db.exec(script),
    } satisfies Queryable,
  };
  return lossy;
}

test(`a call the database applied but whose answer was lost leaks no place: the next call sets the process's count right (${STORE} store)`, async () => {
  const lossy = answersLost();
  const store = new PostgresAdmissionStore(lossy.db);
  const bucket = `pg-lost-${process.pid}-${Date.now()}`;
  const place = (holder: string) => admitWithPlace(store, bucket, holder, 2);
  const heldInDatabase = async () =>
    (
      await db.query<{ held: number }>(
        'SELECT coalesce(sum(held), 0)::int AS held FROM concurrency_places WHERE bucket = $1',
        [bucket],
      )
    ).rows[0]!.held;
  try {
    assert.equal(await place('a'), true);
    // The database takes b's place, the process hears a failure and counts b in its memory.
    lossy.losing = true;
    assert.equal(await place('b'), true);
    lossy.losing = false;
    assert.equal(await heldInDatabase(), 2, 'the database counted b');
    await store.release(bucket, 'b');
    // b is over: of the two places, a holds one and the other is free again.
    assert.equal(await place('c'), true, 'the place b took in the database came back');
    assert.equal(await place('d'), false, 'the limit holds');
    assert.equal(await heldInDatabase(), 2, 'a and c');
    await store.release(bucket, 'a');
    await store.release(bucket, 'c');
    assert.equal(await heldInDatabase(), 0, 'nothing held once every request ended');
  } finally {
    await store.close();
  }
});

test(`clients of a key that each send one request after another never find their own last place still taken (${STORE} store)`, async () => {
  // Four clients of a key of four places, each sending its next request once its answer came: a
  // request gives its place back as its answer goes, and the next one asks for a place in a later
  // turn, while the other clients' requests come and go. The place given back must be counted
  // before the next request is, whichever connection each goes through.
  const store = new PostgresAdmissionStore(db, (err) => assert.fail(`the database failed: ${err.message}`));
  const bucket = `pg-sequential-${process.pid}-${Date.now()}`;
  const refused: string[] = [];
  try {
    await Promise.all(
      [0, 1, 2, 3].map(async (client) => {
        for (let i = 0; i < 150; i++) {
          const holder = `c${client}-r${i}`;
          if (!(await admitWithPlace(store, bucket, holder, 4))) {
            refused.push(holder);
            continue;
          }
          const released = store.release(bucket, holder);
          // The answer goes; the client's next request arrives a turn later.
          await new Promise((resolve) => setImmediate(resolve));
          if (i === 149) await released;
        }
      }),
    );
    assert.deepEqual(refused, [], 'no request of a client that waits for its answers is refused');
  } finally {
    await store.close();
  }
});

test('a fresh quota of any size shows all but one request remaining after the first, and lets a burst of all of it through', () => {
  const store = new MemoryAdmissionStore();
  try {
    for (const limit of [7, 9, 360, 600, 100_000]) {
      const now = Date.now() + 0.37;
      const bucket = `fresh-${limit}`;
      const first = store.admitNow({ bucket, limit, windowMs: WINDOW_MS, cost: 1 }, undefined, now).count;
      assert.deepEqual([first.allowed, first.remaining], [true, limit - 1], `${limit}/min`);
      // The rest of the burst at the same instant: every one of them passes, the next does not.
      let last = first;
      for (let n = 2; n <= Math.min(limit, 1_000); n++) {
        last = store.admitNow({ bucket, limit, windowMs: WINDOW_MS, cost: 1 }, undefined, now).count;
        assert.deepEqual([last.allowed, last.remaining], [true, limit - n], `${limit}/min, request ${n}`);
      }
      if (limit <= 1_000) {
        assert.equal(
          store.admitNow({ bucket, limit, windowMs: WINDOW_MS, cost: 1 }, undefined, now).count.allowed,
          false,
        );
      }
    }
  } finally {
    void store.close();
  }
});

test(`a place another process's lost answer left counted in the database comes back within seconds, with no request of that process (${STORE} store)`, async () => {
  const lossy = answersLost();
  const first = new PostgresAdmissionStore(lossy.db);
  const second = new PostgresAdmissionStore(db);
  const bucket = `pg-lost-elsewhere-${process.pid}-${Date.now()}`;
  try {
    assert.equal(await admitWithPlace(first, bucket, 'a', 2), true);
    lossy.losing = true;
    assert.equal(await admitWithPlace(first, bucket, 'b', 2), true, "counted in the first process's memory");
    lossy.losing = false;
    await first.release(bucket, 'b');
    // The other process finds both places taken until the first one writes its count again.
    const deadline = Date.now() + 5_000;
    let n = 0;
    while (!(await admitWithPlace(second, bucket, `x${n++}`, 2))) {
      assert.ok(Date.now() < deadline, 'the place b left in the database is still counted after 5 s');
      await sleep(100);
    }
  } finally {
    await first.close();
    await second.close();
  }
});
