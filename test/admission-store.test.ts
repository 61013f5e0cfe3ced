// The admission stores themselves (src/infra/admission-store.ts), below the HTTP layer: counts and
// places of one call exact and in arrival order, groups of differing costs, places given back after
// an outage, on closing and when an answer was lost, leases renewed while a place is held, the
// memory fallback, and two processes' calls on PostgreSQL that never deadlock. Rate limits
// through HTTP are test/rate-limit.test.ts.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import type { Database, Queryable } from '../src/infra/database.js';
import {
  MemoryAdmissionStore,
  PostgresAdmissionStore,
  RedisAdmissionStore,
  type Admission,
  type AdmissionStore,
} from '../src/infra/admission-store.js';
import { RedisConnection } from '../src/infra/redis.js';
import { openTestDatabase, sleep, STORE } from './harness.js';
import { freePort } from './processes.js';
import { describeOrSkip, findRedis } from './servers.js';

const redisServer = await findRedis();
const REDIS_URL = redisServer.url ?? '';
const WINDOW_MS = 60_000;

let db: Database;
before(async () => {
  db = await openTestDatabase();
});
after(() => db.close());

describeOrSkip(redisServer.skip, 'RedisAdmissionStore', () => {
  test('admissions sent in the same turn are counted exactly (Redis)', async () => {
    await withRedisStore(
      (store) => admissionsOfOneTurn(store, `redis-${process.pid}-${Date.now()}`),
      (err) => assert.fail(`Redis degraded: ${err.message}`),
    );
  });

  test('places given back while Redis could not be reached are given back there once it answers', async () => {
    await withRedisStore(async (store, redis) => {
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
    });
  });

  test('the notice of counting in memory says why by a code, never a message: a wrong password, a closed port', async () => {
    const redisUrl = new URL(REDIS_URL);
    const wrongPassword = new URL(REDIS_URL);
    wrongPassword.username = 'nobody';
    wrongPassword.password = 'not-the-password';
    const closedPort = await freePort();
    for (const [url, code] of [
      [wrongPassword.href, 'WRONGPASS'],
      [`redis://${redisUrl.hostname}:${closedPort}`, 'ECONNREFUSED'],
    ] as const) {
      const redis = new RedisConnection(url);
      const store = new RedisAdmissionStore(redis);
      const told: unknown[] = [];
      store.onFallback(({ inMemory, failure }) => told.push([inMemory, (failure as { code?: unknown } | null)?.code]));
      try {
        await redis.connected(1_000);
        const { count } = await store.admit({ bucket: `why-${process.pid}`, limit: 10, windowMs: WINDOW_MS, cost: 1 });
        assert.equal(count.allowed, true, 'counted in memory');
        assert.deepEqual(told, [[true, code]], url);
      } finally {
        await store.close();
        redis.close();
      }
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
});

/** Runs `use` with a Redis admission store of its own, closed after it. */
async function withRedisStore(
  use: (store: RedisAdmissionStore, redis: RedisConnection) => Promise<void>,
  onDegraded?: (err: Error) => void,
) {
  const redis = new RedisConnection(REDIS_URL);
  const store = new RedisAdmissionStore(redis, onDegraded);
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

  // Five requests of one key in one turn, two places: the three refused for want of a place are
  // not counted, so each sees the quota as the two placed left it, and so does the next request.
  const placeOf = (n: number) => ({ bucket: `${run}:p`, holder: `p${n}`, limit: 2, leaseMs: 45_000 });
  const crowded = await Promise.all(
    [0, 1, 2, 3, 4].map((n) =>
      store.admit({ bucket: `${run}:q`, limit: 10, windowMs: WINDOW_MS, cost: 1 }, placeOf(n)),
    ),
  );
  assert.deepEqual(
    crowded.map((a) => [a.count.allowed, a.count.remaining, a.placed]),
    [
      [true, 9, true],
      [true, 8, true],
      [true, 8, false],
      [true, 8, false],
      [true, 8, false],
    ],
    'refused for want of a place: not counted',
  );
  const next = await store.admit({ bucket: `${run}:q`, limit: 10, windowMs: WINDOW_MS, cost: 1 });
  assert.equal(next.count.remaining, 7, 'the next request finds the two placed counted, no more');

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

test(`the store says once when the counts go to memory and once when they are shared again (${STORE} store)`, async () => {
  let down = false;
  const flaky: Queryable = {
    query: (sql, params, name) =>
      down
        ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))
        : db.query(sql, params, name),
    exec: (script) => db.exec(script),
  };
  const store = new PostgresAdmissionStore(flaky);
  const told: { inMemory: boolean; store: string; failure: string | null }[] = [];
  store.onFallback(({ inMemory, store: kind, failure }) =>
    told.push({ inMemory, store: kind, failure: failure?.message ?? null }),
  );
  const bucket = `pg-fallback-${process.pid}-${Date.now()}`;
  const admit = () => store.admit({ bucket, limit: 100, windowMs: WINDOW_MS, cost: 1 });
  assert.equal((await admit()).count.allowed, true);
  down = true;
  // Three calls fail, one after another: one notice.
  for (let i = 0; i < 3; i++) assert.equal((await admit()).count.allowed, true, 'counted in memory meanwhile');
  // The store's retry a second later, with nothing to send, learns nothing: still in memory.
  await sleep(1_300);
  assert.equal(told.length, 1, 'no notice of being back while the store still fails');
  down = false;
  for (let i = 0; i < 2; i++) assert.equal((await admit()).count.allowed, true);
  assert.deepEqual(told, [
    { inMemory: true, store: 'postgresql', failure: 'connect ECONNREFUSED' },
    { inMemory: false, store: 'postgresql', failure: null },
  ]);
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
