// Several server processes, one truth: two real `serve` processes over one PostgreSQL and one
// Redis must share each key's quota, both refuse a revoked key or a suspended workspace within a
// second, and give one effect to one request sent to both at once. Several processes need
// PostgreSQL whatever store the rest of the suite runs on: without DATABASE_URL this file makes a
// database of its own on the local server and drops it at the end.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { ownerCommands, type OwnerContext } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, sleep } from './harness.js';
import { cleanUpProcesses, NO_SHEDDING, startServer, stopServer, type ServerProcess } from './processes.js';
import { describeOrSkip, processServers } from './servers.js';
import {
  batchesCountTenRequestsEach,
  call,
  cluster,
  newKey,
  overlappingDeletions,
  overlappingPartialBatches,
  parallelUpsertsOfOneNewId,
  parallelWritesOfDifferentProperties,
  writesCrossedByAnOutsideWriter,
} from './multi-process-support.js';

const servers = await processServers('wsapi_multiprocess');
const { databaseUrl: DATABASE_URL, redisUrl: REDIS_URL, withoutPostgres, withoutPostgresAndRedis } = servers;

let db: Database;
let owner: OwnerContext;
let a: ServerProcess;
let b: ServerProcess;

before(async () => {
  if (withoutPostgres) return;
  db = createPostgresDatabase(DATABASE_URL, 4);
  await migrate(db, GENERATED_DATABASE_CODE);
  owner = { db, defaultRateLimitPerMinute: 600 };
  Object.assign(cluster, { databaseUrl: DATABASE_URL, db, owner });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL,
    REDIS_URL,
    LOG_LEVEL: 'warn',
    DEMO_ON_FIRST_START: 'false',
    SHUTDOWN_GRACE_MS: '3000',
    ...NO_SHEDDING,
  };
  delete env.NODE_TEST_CONTEXT;
  if (withoutPostgresAndRedis) return;
  [a, b] = await Promise.all([startServer(env, ['--workers', '1']), startServer(env, ['--workers', '1'])]);
});

after(async () => {
  await cleanUpProcesses();
  await db?.close();
  await servers.drop();
});

/** Polls both servers until each answers `expected`; each must within `limitMs` of the call. */
async function bothRefuseWithin(limitMs: number, key: string, expected: number): Promise<void> {
  const start = Date.now();
  for (const server of [a, b]) {
    for (;;) {
      const r = await call(server, 'GET', '/v1/contacts?limit=1', key);
      if (r.status === expected) break;
      assert.ok(
        Date.now() - start <= limitMs,
        `${server.baseUrl} still answers ${r.status} after ${Date.now() - start} ms`,
      );
      await sleep(25);
    }
  }
  assert.ok(Date.now() - start <= limitMs, `took ${Date.now() - start} ms`);
}

describeOrSkip(withoutPostgresAndRedis, 'two server processes sharing PostgreSQL and Redis', () => {
  test('a key quota is one count across both processes', async () => {
    const { key } = await newKey({ rateLimitPerMinute: 6 });
    const remaining: number[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await call(i % 2 === 0 ? a : b, 'GET', '/v1/contacts?limit=1', key);
      assert.equal(r.status, 200);
      remaining.push(Number(r.headers.get('ratelimit-remaining')));
    }
    assert.deepEqual(remaining, [5, 4, 3, 2, 1, 0]);
    for (const server of [a, b]) {
      const r = await call(server, 'GET', '/v1/contacts?limit=1', key);
      assert.equal(r.status, 429);
      assert.equal(r.json.error.code, 'rate_limit_exceeded');
    }
  });

  test('a burst sent to both processes at once: exactly the quota passes, each with its own Remaining', async () => {
    // Two keys at once, so that the takes of one turn of each process mix buckets.
    const [first, second] = await Promise.all([newKey({ rateLimitPerMinute: 30 }), newKey({ rateLimitPerMinute: 12 })]);
    const burst = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        call(i % 2 === 0 ? a : b, 'GET', '/v1/contacts?limit=1', i % 4 < 2 ? first.key : second.key).then((r) => ({
          key: i % 4 < 2 ? 'first' : 'second',
          status: r.status,
          remaining: Number(r.headers.get('ratelimit-remaining')),
        })),
      ),
    );
    for (const [name, quota] of [
      ['first', 30],
      ['second', 12],
    ] as const) {
      const mine = burst.filter((r) => r.key === name);
      const passed = mine.filter((r) => r.status === 200);
      assert.equal(passed.length, quota, `${name}: ${passed.length} of ${mine.length} passed`);
      assert.ok(
        mine.every((r) => r.status === 200 || r.status === 429),
        `${name}: only 200 and 429`,
      );
      assert.deepEqual(
        passed.map((r) => r.remaining).sort((x, y) => y - x),
        Array.from({ length: quota }, (_, i) => quota - 1 - i),
        `${name}: every passing request saw its own count`,
      );
    }
  });

  test('a batch upsert of 100 is ten requests of a key quota across both processes, for a write-only key', async () => {
    await batchesCountTenRequestsEach([a, b]);
  });

  test('keys rotate with no grace: both processes refuse the old key within a second', async () => {
    const { key, keyId } = await newKey({ scopes: ['contacts:read'] });
    await bothRefuseWithin(1_000, key, 200);
    const { new_key } = await ownerCommands.rotateKey(owner, { keyId, graceMs: 0 });
    await bothRefuseWithin(1_000, key, 401);
    await bothRefuseWithin(1_000, new_key.key, 200);
  });

  test('a revoked key is refused by both processes within a second', async () => {
    const { key, keyId } = await newKey();
    for (const server of [a, b]) assert.equal((await call(server, 'GET', '/v1/contacts', key)).status, 200);
    await ownerCommands.revokeKey(owner, { keyId });
    await bothRefuseWithin(1_000, key, 401);
  });

  test('a suspended workspace is refused by both processes within a second, and resumed likewise', async () => {
    const { key, workspaceId } = await newKey();
    for (const server of [a, b]) assert.equal((await call(server, 'GET', '/v1/contacts', key)).status, 200);
    await ownerCommands.setWorkspaceStatus(owner, { workspaceId, status: 'suspended' });
    await bothRefuseWithin(1_000, key, 403);
    await ownerCommands.setWorkspaceStatus(owner, { workspaceId, status: 'active' });
    await bothRefuseWithin(1_000, key, 200);
  });

  test('one request sent to both processes at once has one effect', async () => {
    const { key, workspaceId } = await newKey();
    const rounds = 15;
    for (let i = 0; i < rounds; i++) {
      const body = contactBody({ email: `twice.${i}.${randomUUID().slice(0, 6)}@example.com` });
      const k = idem();
      const [first, second] = await Promise.all([
        call(a, 'POST', '/v1/contacts', key, body, k),
        call(b, 'POST', '/v1/contacts', key, body, k),
      ]);
      const statuses = [first.status, second.status].sort();
      assert.ok(
        (statuses[0] === 201 && statuses[1] === 201) || (statuses[0] === 201 && statuses[1] === 409),
        `statuses ${statuses.join(',')}`,
      );
      for (const r of [first, second]) {
        if (r.status === 409) assert.equal(r.json.error.code, 'idempotency_key_in_use');
      }
      const created = [first, second].filter((r) => r.status === 201).map((r) => r.json.data.id);
      assert.equal(new Set(created).size, 1, 'both 201s name the same contact');
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND email = $2',
        [workspaceId, body.email],
      );
      assert.equal(rows[0]!.n, 1, `round ${i}: one contact`);
    }
  });

  test('30 parallel PUTs of one new external_id over both processes: one contact, no deadlock', async () => {
    await parallelUpsertsOfOneNewId([a, b]);
  });

  test('8 overlapping partial batches with invalid items over both processes: all 207, no deadlock, only the valid items written', async () => {
    await overlappingPartialBatches([a, b]);
  });

  test('8 overlapping batch deletes and 8 single deletes over both processes: each contact deleted once, no deadlock', async () => {
    await overlappingDeletions([a, b]);
  });

  test('parallel writes of different properties of one contact over both processes keep every change', async () => {
    await parallelWritesOfDifferentProperties([a, b]);
  });

  test('API writes crossed by a writer outside the API: the deadlock PostgreSQL breaks is run again, every write answered 200', async () => {
    await writesCrossedByAnOutsideWriter([a, b]);
  });

  test('serve --workers 2 runs two workers behind one port and stops them all on SIGTERM', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL,
      REDIS_URL,
      LOG_LEVEL: 'warn',
      ...NO_SHEDDING,
      DEMO_ON_FIRST_START: 'false',
    };
    delete env.NODE_TEST_CONTEXT;
    const cluster = await startServer(env, ['--workers', '2']);
    const workers = () => {
      try {
        return execFileSync('pgrep', ['-P', String(cluster.proc.pid)], { encoding: 'utf8' })
          .trim()
          .split('\n');
      } catch {
        return [];
      }
    };
    assert.equal(workers().length, 2);
    const { key } = await newKey();
    const answers = await Promise.all(Array.from({ length: 20 }, () => call(cluster, 'GET', '/v1/contacts', key)));
    assert.deepEqual([...new Set(answers.map((r) => r.status))], [200]);
    assert.equal(await stopServer(cluster), 0);
    assert.deepEqual(workers(), []);
  });
});

describeOrSkip(
  withoutPostgres,
  'the default PostgreSQL deployment: serve with its default workers and no Redis',
  () => {
    // Two workers (the default is one per core) and a second process beside them: three processes
    // that must agree through PostgreSQL alone.
    let cluster: ServerProcess;
    let single: ServerProcess;
    before(async () => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL,
        LOG_LEVEL: 'warn',
        ...NO_SHEDDING,
        DEMO_ON_FIRST_START: 'false',
      };
      delete env.REDIS_URL;
      delete env.NODE_TEST_CONTEXT;
      [cluster, single] = await Promise.all([startServer(env, ['--workers', '2']), startServer(env)]);
    });
    after(() => Promise.all([stopServer(cluster), stopServer(single)]));

    test('a 60/min key passes exactly 60 of a 90-request burst spread over the workers; Retry-After is the next slot; the usage trail counts every request', async () => {
      {
        const { key, keyId } = await newKey({ rateLimitPerMinute: 60, scopes: ['contacts:read'] });
        const started = Date.now();
        const answers = await Promise.all(
          Array.from({ length: 90 }, (_, i) =>
            call(i % 3 === 0 ? single : cluster, 'GET', '/v1/contacts?limit=1', key),
          ),
        );
        // The quota refills one request a second: a burst that takes longer than a second on a busy
        // machine may rightly pass one more per second it took (with per-process counts: all 90).
        const refilled = Math.floor((Date.now() - started) / 1000);
        const passed = answers.filter((r) => r.status === 200).length;
        assert.ok(passed >= 60 && passed <= 60 + refilled, `${passed} of 90 passed in ${Date.now() - started} ms`);
        const waits = answers.filter((r) => r.status === 429).map((r) => Number(r.headers.get('retry-after')));
        assert.equal(waits.length, 90 - passed);
        assert.ok(
          waits.every((s) => s >= 1 && s <= 2),
          `Retry-After ${[...new Set(waits)].join(',')}`,
        );
        await sleep(Math.max(...waits) * 1000);
        assert.equal((await call(single, 'GET', '/v1/contacts?limit=1', key)).status, 200, 'passes after Retry-After');

        // Each process counts in memory and writes every 5 s: the trail adds up across the three.
        const wanted = { requests: 91, rate_limited: waits.length };
        let trail: typeof wanted | undefined;
        for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(250)) {
          const { rows } = await db.query<typeof wanted>(
            `SELECT coalesce(sum(requests), 0)::int AS requests, coalesce(sum(rate_limited), 0)::int AS rate_limited
             FROM api_key_usage WHERE key_id = $1`,
            [keyId],
          );
          trail = rows[0];
          if (trail!.requests >= wanted.requests) break;
        }
        assert.deepEqual(trail, wanted, 'usage trail of the key');
      }
    });

    test('one write sent to every process at once has one effect and one answer, byte for byte; a write-only key suffices', async () => {
      const { key, workspaceId } = await newKey({ scopes: ['contacts:write'] });
      const servers = [cluster, single, cluster, single, cluster, single];
      for (let i = 0; i < 5; i++) {
        const email = `everywhere.${i}.${randomUUID().slice(0, 6)}@example.com`;
        for (const [method, path] of [
          ['POST', '/v2/contacts'],
          ['PUT', `/v2/contacts/external/everywhere-${i}-${randomUUID().slice(0, 6)}`],
        ] as const) {
          const body = method === 'POST' ? contactBody({ email }) : { name: `Everywhere ${i}`, email: `put.${email}` };
          const k = idem();
          const burst = await Promise.all(servers.map((server) => call(server, method, path, key, body, k)));
          const done = burst.filter((r) => r.status === 201);
          assert.ok(done.length >= 1, `${method} round ${i}: ${burst.map((r) => r.status).join(',')}`);
          for (const r of burst) {
            if (r.status !== 201) assert.equal(r.json?.error?.code, 'idempotency_key_in_use', `${method} ${r.status}`);
          }
          // After the burst, every process replays the one answer, as written.
          const replays = await Promise.all(
            [cluster, single].map((server) => call(server, method, path, key, body, k)),
          );
          for (const r of [...done, ...replays])
            assert.equal(r.text, done[0]!.text, `${method} round ${i}: one answer`);
          for (const r of replays) assert.equal(r.headers.get('idempotent-replayed'), 'true');
          const { rows } = await db.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND email = $2',
            [workspaceId, body.email],
          );
          assert.equal(rows[0]!.n, 1, `${method} round ${i}: one contact`);
        }
      }
    });

    test('a batch upsert of 100 is ten requests of a key quota across every process, for a write-only key', async () => {
      await batchesCountTenRequestsEach([cluster, single]);
    });

    test('30 parallel PUTs of one new external_id over every process: one contact, no deadlock', async () => {
      await parallelUpsertsOfOneNewId([cluster, single]);
    });

    test('parallel writes of different properties of one contact over every process keep every change', async () => {
      await parallelWritesOfDifferentProperties([cluster, single]);
    });

    test('API writes crossed by a writer outside the API over every process: the deadlock is run again, every write answered 200', async () => {
      await writesCrossedByAnOutsideWriter([cluster, single]);
    });

    test('8 overlapping batch upserts spread over every process: all 200, one contact per external id, one creation each', async () => {
      const { key, workspaceId } = await newKey({ scopes: ['contacts:write'] });
      const pool = Array.from({ length: 60 }, (_, i) => `spread-${i}-${randomUUID().slice(0, 6)}`);
      const servers = [cluster, single, cluster, single, cluster, single, cluster, single];
      const answers = await Promise.all(
        servers.map((server, n) => {
          const ids = [...pool].sort(() => Math.random() - 0.5).slice(0, 40);
          const items = ids.map((external_id) => ({ external_id, origin: `process-batch-${n}` }));
          return call(server, 'POST', '/v2/contacts/batch/upsert', key, { items }, idem());
        }),
      );
      for (const r of answers) assert.equal(r.status, 200, r.text);
      const { rows } = await db.query<{ external_id: string; n: number }>(
        `SELECT external_id, count(*)::int AS n FROM contacts
        WHERE workspace_id = $1 AND external_id = ANY($2::text[]) GROUP BY external_id`,
        [workspaceId, pool],
      );
      assert.ok(
        rows.every((r) => r.n === 1),
        JSON.stringify(rows.filter((r) => r.n !== 1)),
      );
      const created = answers.flatMap((r) => r.json.data.filter((x: { result: string }) => x.result === 'created'));
      assert.equal(created.length, rows.length, 'each contact was created by exactly one batch');
    });

    test('8 overlapping partial batches with invalid items over every process: all 207, no deadlock, only the valid items written, each once', async () => {
      await overlappingPartialBatches([cluster, single]);
    });

    test('8 overlapping batch deletes and 8 single deletes over every process, for a write-only key: each contact deleted once, no deadlock', async () => {
      await overlappingDeletions([cluster, single]);
    });

    test('the feed reads the same bytes from every process, its data as GET writes it, for a key of the feed and contacts only', async () => {
      const writer = await newKey({ scopes: ['contacts:write'] });
      const reader = await newKey({ workspaceId: writer.workspaceId, scopes: ['events:read', 'contacts:read'] });
      await Promise.all(
        [cluster, single, cluster].map((server, i) =>
          call(server, 'POST', '/v2/contacts', writer.key, contactBody({ name: `Feed "${i}" \u2028 🐙` }), idem()),
        ),
      );
      const pages = await Promise.all(
        [cluster, single, cluster].map((s) => call(s, 'GET', '/v2/events?limit=100', reader.key)),
      );
      for (const page of pages) {
        assert.equal(page.status, 200);
        assert.equal(page.text, pages[0]!.text, 'the same page from every process');
      }
      const created = (pages[0]!.json.data as { type: string; resource_id: string; data: unknown }[]).filter(
        (e) => e.type === 'contact.created',
      );
      assert.equal(created.length, 3);
      for (const e of created) {
        const got = await call(single, 'GET', `/v2/contacts/${e.resource_id}`, reader.key);
        assert.equal(JSON.stringify(e.data), JSON.stringify(got.json.data), 'event data as GET writes it');
      }
      assert.ok(
        (pages[0]!.json.data as { resource_type: string }[]).every((e) =>
          ['contact', 'pipeline_stage'].includes(e.resource_type),
        ),
        'nothing the key may not read',
      );
    });

    test('a lookup walk moves between processes, its addresses reordered and recased, for a contacts:read key', async () => {
      const writer = await newKey({ scopes: ['contacts:write'] });
      const reader = await newKey({ workspaceId: writer.workspaceId, scopes: ['contacts:read'] });
      const emails = Array.from({ length: 5 }, (_, i) => `walk${i}-${idem().slice(0, 8)}@example.com`);
      const made = await Promise.all(
        emails.map((email, i) =>
          call(i % 2 ? cluster : single, 'POST', '/v2/contacts', writer.key, contactBody({ email }), idem()),
        ),
      );
      assert.deepEqual(
        made.map((r) => r.status),
        [201, 201, 201, 201, 201],
      );
      // Each page from the other kind of process, with the same addresses in another order and case.
      const spellings = [emails, [...emails].reverse().map((e) => e.toUpperCase()), [...emails.slice(2), ...emails]];
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 3; page++) {
        const query = `email=${encodeURIComponent(spellings[page]!.join(','))}&limit=2`;
        const path: string = `/v2/contacts?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const r = await call(page % 2 ? single : cluster, 'GET', path, reader.key);
        assert.equal(r.status, 200, r.text);
        seen.push(...(r.json.data as { id: string }[]).map((c) => c.id));
        cursor = r.json.page.next_cursor;
      }
      assert.equal(cursor, null, 'three pages of two hold the five');
      assert.deepEqual([...seen].sort(), made.map((r) => r.json.data.id as string).sort());
    });
  },
);
