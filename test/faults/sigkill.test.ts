// A server process killed outright (SIGKILL: no shutdown code runs) in the middle of a stream of
// writes, three times over. Every write carries its own Idempotency-Key and a unique email, and is
// recorded with its outcome: acknowledged (201), refused, or no answer (in flight at the kill).
// Promised: every acknowledged write is in the database; on a new process, retrying EVERY request
// with its key and body gives exactly one contact per key, and acknowledged ones replay their id.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { cleanUpProcesses, startServer, stopServer, type ServerProcess } from '../processes.js';
import {
  call,
  contactFor,
  contactsByEmail,
  eachLimited,
  FaultProxy,
  newWorkspaceKey,
  openFaultDatabase,
  REDIS_URL,
  report,
  retryUntilDone,
  serverEnv,
  sleep,
  throughProxy,
  type Answer,
  type FaultDatabase,
  fileFigures,
} from './support.js';

let fdb: FaultDatabase;

before(async () => {
  fdb = await openFaultDatabase('kill');
});

after(async () => {
  fileFigures('sigkill.test.ts');
  await cleanUpProcesses();
  await fdb?.drop();
});

interface Write {
  idem: string;
  body: { email: string };
  round: number;
  answer?: Answer;
  /** in flight when the process was killed */
  inFlightAtKill: boolean;
}

const start = () => startServer(serverEnv({ DATABASE_URL: fdb.url, DB_POOL_SIZE: '4' }), ['--workers', '1']);

test('SIGKILL in the middle of writes: acknowledged writes are stored, every retry has exactly one effect', async (t) => {
  const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
  const writes: Write[] = [];
  const rounds = 3;
  const inFlightPerKill: number[] = [];
  let server: ServerProcess | null = null;

  for (let round = 0; round < rounds; round++) {
    server = await start();
    const target = server;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const inFlight = new Set<Write>();
    let killed = false;
    const worker = async () => {
      while (!killed) {
        const tag = `kill-${round}-${writes.length}-${randomUUID().slice(0, 8)}`;
        const w: Write = { idem: `fault-${tag}`, body: contactFor(tag), round, inFlightAtKill: false };
        writes.push(w);
        inFlight.add(w);
        w.answer = await call(target.baseUrl, 'POST', '/v1/contacts', { key, idem: w.idem, body: w.body, agent });
        inFlight.delete(w);
      }
    };
    const workers = Array.from({ length: 8 }, () => worker());
    // Kill once the stream is flowing: some writes acknowledged, others in flight.
    const acknowledgedBefore = writes.filter((w) => w.answer?.status === 201).length;
    const deadline = Date.now() + 10_000;
    while (writes.filter((w) => w.answer?.status === 201).length < acknowledgedBefore + 40 && Date.now() < deadline) {
      await sleep(20);
    }
    await sleep(Math.floor(Math.random() * 50));
    for (const w of inFlight) w.inFlightAtKill = true;
    inFlightPerKill.push(inFlight.size);
    target.proc.kill('SIGKILL');
    await target.exited;
    killed = true;
    await Promise.all(workers);
    agent.destroy();
  }

  // 1. Every acknowledged write is in the database, once, with the id it was acknowledged with.
  let stored = await contactsByEmail(fdb.db, workspaceId);
  const acknowledged = writes.filter((w) => w.answer?.status === 201);
  for (const w of acknowledged) {
    assert.deepEqual(stored.get(w.body.email), [w.answer!.json.data.id], `${w.idem} acknowledged and stored once`);
  }
  // Nothing else came back from a live process: only 201s, or no answer at all around a kill.
  for (const w of writes) {
    assert.ok(w.answer?.status === 201 || w.answer?.status === 0, `${w.idem}: ${w.answer?.status}`);
  }
  const unanswered = writes.filter((w) => w.answer?.status === 0);
  const committedButUnanswered = unanswered.filter((w) => stored.has(w.body.email)).length;

  // 2. A new process; every request again with its key and body.
  const fresh = await start();
  let replayed = 0;
  await eachLimited(writes, 8, async (w) => {
    const again = await retryUntilDone(fresh.baseUrl, key, {
      method: 'POST',
      path: '/v1/contacts',
      idem: w.idem,
      body: w.body,
    });
    assert.equal(again.status, 201, w.idem);
    if (again.headers['idempotent-replayed'] === 'true') replayed++;
    if (w.answer?.status === 201) {
      assert.equal(again.headers['idempotent-replayed'], 'true', `${w.idem} is a replay`);
      assert.equal(again.json.data.id, w.answer.json.data.id, `${w.idem} replays the acknowledged id`);
    }
  });
  stored = await contactsByEmail(fdb.db, workspaceId);
  for (const w of writes) assert.equal(stored.get(w.body.email)?.length, 1, `${w.idem}: exactly one contact`);
  assert.equal([...stored.values()].flat().length, writes.length, 'one contact per request, no more');

  assert.ok(
    inFlightPerKill.every((n) => n > 0),
    `requests in flight at each kill: ${inFlightPerKill.join(', ')}`,
  );
  report(t, {
    kills: rounds,
    requests: writes.length,
    acknowledged: acknowledged.length,
    unanswered: unanswered.length,
    inFlightPerKill,
    committedButUnanswered,
    retried: writes.length,
    replayedOnRetry: replayed,
    contacts: writes.length,
  });
});

test('retries of an acknowledged write sent all at once (a client catching up after a crash) each replay it', async (t) => {
  // The database answers 50 ms late, so the retries surely overlap inside the server.
  const slow = await new FaultProxy(fdb.url).start();
  t.after(() => slow.close());
  const server = await startServer(serverEnv({ DATABASE_URL: throughProxy(fdb.url, slow.port) }), ['--workers', '1']);
  const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
  const tag = `burst-${randomUUID().slice(0, 8)}`;
  const w = { method: 'POST', path: '/v1/contacts', idem: `fault-${tag}`, body: contactFor(tag) };
  const first = await call(server.baseUrl, w.method, w.path, { key, idem: w.idem, body: w.body });
  assert.equal(first.status, 201);
  slow.delayMs = 50;
  const retries = await Promise.all(
    Array.from({ length: 10 }, () => call(server.baseUrl, w.method, w.path, { key, idem: w.idem, body: w.body })),
  );
  slow.delayMs = 0;
  await stopServer(server);
  const stored = await contactsByEmail(fdb.db, workspaceId);
  assert.deepEqual(stored.get(w.body.email), [first.json.data.id], 'one effect');
  const outcomes: Record<string, number> = {};
  for (const r of retries) {
    const k = `${r.status} ${r.json?.error?.code ?? `replayed=${String(r.headers['idempotent-replayed'])}`}`;
    outcomes[k] = (outcomes[k] ?? 0) + 1;
  }
  report(t, { retries: retries.length, outcomes });
  // docs/api-conventions.md: same key, same request → the first status and body again;
  // 409 idempotency_key_in_use is only for a key whose first request is still running.
  assert.deepEqual(outcomes, { '201 replayed=true': retries.length });
  for (const r of retries) assert.equal(r.json.data.id, first.json.data.id);
});

/** How long a key's place outlives its process at most (plugins/guard.ts), and the test's slack. */
const PLACE_LEASE_MS = 15_000;
const SLACK_MS = 2_000;

for (const counts of ['PostgreSQL', 'Redis'] as const) {
  test(`a killed process's places come back within the lease (counts in ${counts})`, async (t) => {
    const env = serverEnv({
      DATABASE_URL: fdb.url,
      DB_POOL_SIZE: '4',
      ...(counts === 'Redis' ? { REDIS_URL } : {}),
    });
    const [doomed, survivor] = await Promise.all([
      startServer(env, ['--workers', '1']),
      startServer(env, ['--workers', '1']),
    ]);
    const { key } = await newWorkspaceKey(fdb.owner, { concurrencyLimit: 1 });
    const created = await call(doomed.baseUrl, 'POST', '/v1/contacts', {
      key,
      idem: `fault-${randomUUID()}`,
      body: contactFor(`lease-${randomUUID().slice(0, 8)}`),
    });
    assert.equal(created.status, 201);
    // The doomed process's request waits on the contact's row lock, holding the key's one place.
    const lock = new pg.Client({ connectionString: fdb.url });
    await lock.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('SELECT 1 FROM contacts WHERE id = $1 FOR UPDATE', [created.json.data.id]);
      const held = call(doomed.baseUrl, 'PATCH', `/v2/contacts/${created.json.data.id}`, {
        key,
        idem: `fault-${randomUUID()}`,
        body: { name: 'Held' },
      });
      const list = () => call(survivor.baseUrl, 'GET', '/v1/contacts?limit=1', { key });
      let before: Answer | null = null;
      for (let waited = 0; waited < 5_000; waited += 100) {
        before = await list();
        if (before.status === 429) break;
        await sleep(100);
      }
      assert.equal(before?.json?.error?.code, 'concurrency_limit_exceeded', 'the other process sees the place taken');
      doomed.proc.kill('SIGKILL');
      await doomed.exited;
      const killedAt = Date.now();
      assert.equal((await held).status, 0, 'the held request died with its process');
      let back: number | null = null;
      while (Date.now() - killedAt < PLACE_LEASE_MS + SLACK_MS + 5_000) {
        const r = await list();
        if (r.status === 200) {
          back = Date.now() - killedAt;
          break;
        }
        assert.equal(r.json?.error?.code, 'concurrency_limit_exceeded');
        await sleep(200);
      }
      assert.ok(back !== null, 'the place came back');
      assert.ok(back <= PLACE_LEASE_MS + SLACK_MS, `the place came back ${back} ms after the kill`);
      report(t, { counts, placeBackAfterKillMs: back });
    } finally {
      await lock.query('ROLLBACK').catch(() => undefined);
      await lock.end();
      await stopServer(survivor);
    }
  });
}
