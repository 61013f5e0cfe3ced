// A key's requests in flight and its rate limit, counted across every process of a deployment: two `serve` processes
// sharing Redis, and the README's default PostgreSQL deployment (default workers and one more
// process, no Redis: the places are rows in PostgreSQL). Several processes need PostgreSQL
// whatever store the rest of the suite runs on: without DATABASE_URL this file makes a database of
// its own on the local server and drops it at the end.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { ownerCommands, type OwnerContext } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, sleep } from './harness.js';
import { cleanUpProcesses, startServer, stopServer, type ServerProcess } from './processes.js';
import { describeOrSkip, processServers } from './servers.js';

const servers = await processServers('wsapi_admission');
const { databaseUrl: DATABASE_URL, redisUrl: REDIS_URL, withoutPostgres, withoutPostgresAndRedis } = servers;

let db: Database;
let owner: OwnerContext;

before(async () => {
  if (withoutPostgres) return;
  db = createPostgresDatabase(DATABASE_URL, 4);
  await migrate(db, GENERATED_DATABASE_CODE);
  owner = { db, defaultRateLimitPerMinute: 600 };
});

after(async () => {
  await cleanUpProcesses();
  await db?.close();
  await servers.drop();
});

function serverEnv(redis: boolean, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL,
    LOG_LEVEL: 'warn',
    DEMO_ON_FIRST_START: 'false',
    SHUTDOWN_GRACE_MS: '3000',
  };
  if (redis) env.REDIS_URL = REDIS_URL;
  else delete env.REDIS_URL;
  delete env.NODE_TEST_CONTEXT;
  delete env.DEFAULT_CONCURRENT_REQUESTS;
  return { ...env, ...extra };
}

async function patch(server: ServerProcess, key: string, contactId: string, n: number) {
  const res = await fetch(`${server.baseUrl}/v2/contacts/${contactId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idem() },
    body: JSON.stringify({ origin: `held-${n}` }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: JSON.parse(text) };
}

/**
 * `sent` PATCHes of one held contact, spread over `servers` at once, with a write-only key of
 * `limit` places (or the deployment's default): exactly `limit` are admitted and wait for the
 * contact, the others are 429 at once; once the contact is free the admitted ones answer 200, and
 * every place is back. The key's quota holds only the requests admitted, with 2 to spare: the
 * refusals are not counted, or the last requests would be refused by the quota.
 */
async function exactlyLimitAdmitted(servers: ServerProcess[], limit: number | undefined, sent: number) {
  const ws = await ownerCommands.createWorkspace(owner, { name: `admission-${randomUUID().slice(0, 8)}` });
  const key = await ownerCommands.createKey(owner, {
    workspaceId: ws.id,
    name: 'held',
    scopes: ['contacts:write'],
    // The creation, one request per process, the admitted and as many again, and 2 to spare.
    rateLimitPerMinute: 1 + servers.length + 2 * (limit ?? 10) + 2,
    ...(limit === undefined ? {} : { concurrencyLimit: limit }),
  });
  const places = limit ?? 10;
  const created = await fetch(`${servers[0]!.baseUrl}/v2/contacts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'idempotency-key': idem() },
    body: JSON.stringify(contactBody()),
  });
  const contactId = ((await created.json()) as { data: { id: string } }).data.id;
  // Every process has read the key once.
  for (const s of servers) assert.equal((await patch(s, key.key, contactId, 0)).status, 200);

  const holder = new pg.Client({ connectionString: DATABASE_URL });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM contacts WHERE id = $1 FOR UPDATE', [contactId]);
    const answers = Array.from({ length: sent }, (_, n) =>
      patch(servers[n % servers.length]!, key.key, contactId, n + 1),
    );
    const early: { status: number; json: { error: { code: string } } }[] = [];
    for (const a of answers) void a.then((r) => early.push(r));
    for (let waited = 0; early.length < sent - places; waited += 20) {
      assert.ok(waited < 10_000, `${early.length} answered while the contact is held`);
      await sleep(20);
    }
    await sleep(300);
    assert.equal(early.length, sent - places, 'no more than the refusals answered while the contact is held');
    for (const r of early) {
      assert.equal(r.status, 429);
      assert.equal(r.json.error.code, 'concurrency_limit_exceeded');
    }
    await holder.query('COMMIT');
    const all = await Promise.all(answers);
    assert.equal(all.filter((r) => r.status === 200).length, places);
    assert.equal(all.filter((r) => r.status === 429).length, sent - places);
  } finally {
    await holder.end();
  }
  // Every place came back with its answer, on every process.
  const again = await Promise.all(
    Array.from({ length: places }, (_, n) => patch(servers[n % servers.length]!, key.key, contactId, 100 + n)),
  );
  assert.deepEqual(
    again.map((r) => r.status),
    Array.from({ length: places }, () => 200),
  );
}

/**
 * A read-only key of 30 requests a minute: of 40 lists sent at once, spread over `servers`, exactly
 * 30 pass, each seeing its own RateLimit-Remaining (29 … 0 once each), and 10 are refused.
 */
async function exactlyQuotaPasses(servers: ServerProcess[]) {
  const ws = await ownerCommands.createWorkspace(owner, { name: `quota-${randomUUID().slice(0, 8)}` });
  const key = await ownerCommands.createKey(owner, {
    workspaceId: ws.id,
    name: 'reader',
    scopes: ['contacts:read'],
    rateLimitPerMinute: 30,
    concurrencyLimit: 100,
  });
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, n) =>
      fetch(`${servers[n % servers.length]!.baseUrl}/v1/contacts`, {
        headers: { authorization: `Bearer ${key.key}` },
      }).then(async (r) => ({
        status: r.status,
        remaining: Number(r.headers.get('ratelimit-remaining')),
        body: await r.text(),
      })),
    ),
  );
  const passed = answers.filter((a) => a.status === 200);
  assert.equal(passed.length, 30, JSON.stringify(answers.map((a) => a.status)));
  assert.deepEqual(
    passed.map((a) => a.remaining).sort((x, y) => y - x),
    Array.from({ length: 30 }, (_, i) => 29 - i),
  );
  for (const a of answers.filter((r) => r.status !== 200)) {
    assert.equal(a.status, 429, a.body);
    assert.equal((JSON.parse(a.body) as { error: { code: string } }).error.code, 'rate_limit_exceeded');
  }
}

describeOrSkip(withoutPostgresAndRedis, 'two processes sharing Redis', () => {
  let a: ServerProcess;
  let b: ServerProcess;
  before(async () => {
    [a, b] = await Promise.all([
      startServer(serverEnv(true), ['--workers', '1']),
      startServer(serverEnv(true), ['--workers', '1']),
    ]);
  });
  after(() => Promise.all([stopServer(a), stopServer(b)]));

  test('a key of 3 places: of 12 requests over both processes, exactly 3 run at once', async () => {
    await exactlyLimitAdmitted([a, b], 3, 12);
  });

  test('a read-only key of 30/min: of 40 lists at once over both processes, exactly 30 pass', async () => {
    await exactlyQuotaPasses([a, b]);
  });
});

describeOrSkip(
  withoutPostgres,
  'the default PostgreSQL deployment: serve with its default workers and no Redis',
  () => {
    let cluster: ServerProcess;
    let single: ServerProcess;
    before(async () => {
      [cluster, single] = await Promise.all([
        startServer(serverEnv(false), ['--workers', '2']),
        startServer(serverEnv(false)),
      ]);
    });
    after(() => Promise.all([stopServer(cluster), stopServer(single)]));

    test('a key of 3 places: of 12 requests over every process, exactly 3 run at once', async () => {
      await exactlyLimitAdmitted([cluster, single, cluster], 3, 12);
    });

    test('a key without a limit of its own has the default 10 places across every process', async () => {
      await exactlyLimitAdmitted([cluster, single], undefined, 16);
    });

    test('a read-only key of 30/min: of 40 lists at once over every process, exactly 30 pass', async () => {
      await exactlyQuotaPasses([cluster, single, cluster]);
    });
  },
);

// Saturation and who is shed are each process's own (load-shedder.ts); the admission store, Redis
// or PostgreSQL, counts the keys' places and quotas: shedding is tested with either store.
for (const redis of [false, true]) {
  describeOrSkip(
    redis ? withoutPostgresAndRedis : withoutPostgres,
    `load shedding in each process of a deployment ${redis ? 'sharing Redis' : 'without Redis'} (each saturated at 2 requests in flight)`,
    () => {
      let one: ServerProcess;
      let two: ServerProcess;
      before(async () => {
        const env = serverEnv(redis, { LOAD_SHED_MAX_IN_FLIGHT: '2' });
        [one, two] = await Promise.all([startServer(env, ['--workers', '1']), startServer(env, ['--workers', '1'])]);
      });
      after(() => Promise.all([stopServer(one), stopServer(two)]));

      test('in every process the workspace holding the most is refused with 503; a lighter one and the probes are served', async () => {
        const ws = await ownerCommands.createWorkspace(owner, { name: `shed-${randomUUID().slice(0, 8)}` });
        const heavy = await ownerCommands.createKey(owner, {
          workspaceId: ws.id,
          name: 'heavy',
          scopes: ['contacts:write'],
        });
        const lighter = await ownerCommands.createWorkspace(owner, { name: `shed-${randomUUID().slice(0, 8)}` });
        const light = await ownerCommands.createKey(owner, {
          workspaceId: lighter.id,
          name: 'light',
          scopes: ['contacts:read'],
        });
        const created = await fetch(`${one.baseUrl}/v2/contacts`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${heavy.key}`,
            'content-type': 'application/json',
            'idempotency-key': idem(),
          },
          body: JSON.stringify(contactBody()),
        });
        const contactId = ((await created.json()) as { data: { id: string } }).data.id;
        const list = (s: ServerProcess) =>
          fetch(`${s.baseUrl}/v2/contacts?limit=1`, { headers: { authorization: `Bearer ${light.key}` } });
        for (const s of [one, two]) {
          assert.equal((await patch(s, heavy.key, contactId, 0)).status, 200);
          assert.equal((await list(s)).status, 200);
        }

        const holder = new pg.Client({ connectionString: DATABASE_URL });
        await holder.connect();
        try {
          await holder.query('BEGIN');
          await holder.query('SELECT id FROM contacts WHERE id = $1 FOR UPDATE', [contactId]);
          // Two held requests of the heavy key in each process: each is saturated.
          const held = [one, one, two, two].map((s, n) => patch(s, heavy.key, contactId, n + 1));
          // Time for the four to reach the held contact; none may answer meanwhile.
          await sleep(1_500);
          assert.equal(
            await Promise.race([Promise.all(held).then(() => 'answered'), sleep(10).then(() => 'held')]),
            'held',
          );
          for (const s of [one, two]) {
            const shed = await patch(s, heavy.key, contactId, 99);
            assert.equal(shed.status, 503, `${s.baseUrl}: the heaviest workspace is shed`);
            assert.equal(shed.json.error.code, 'server_overloaded');
            assert.equal(shed.headers.get('retry-after'), '1');
            assert.equal((await list(s)).status, 200, `${s.baseUrl}: a lighter workspace is served`);
            for (const probe of ['/healthz', '/readyz'])
              assert.equal((await fetch(s.baseUrl + probe)).status, 200, `${s.baseUrl}${probe} is never shed`);
          }
          await holder.query('COMMIT');
          assert.deepEqual(
            (await Promise.all(held)).map((r) => r.status),
            [200, 200, 200, 200],
          );
        } finally {
          await holder.end();
        }
        for (const s of [one, two])
          assert.equal((await patch(s, heavy.key, contactId, 200)).status, 200, 'served again');
      });
    },
  );
}
