// Redis goes away (and, separately, hangs) under load. Two real `serve` processes share PostgreSQL
// and reach Redis through a proxy this file controls. The documented behaviour
// (docs/api-conventions.md, Rate limits): while Redis cannot answer, each process counts requests in
// its own memory, so the API stays available and a key's limit holds per process (a key may get up
// to its limit from each process until Redis is back); /readyz says Redis is unavailable. We chose
// availability over exact counting: a missing counter must not turn every request into an error.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { cleanUpProcesses, startServer, type ServerProcess } from '../processes.js';
import {
  call,
  contactsByEmail,
  FaultProxy,
  newWorkspaceKey,
  openFaultDatabase,
  processState,
  REDIS_URL,
  report,
  serverEnv,
  sleep,
  startLoad,
  throughProxy,
  waitFor,
  type Answer,
  type FaultDatabase,
  type Sent,
  fileFigures,
} from './support.js';

let fdb: FaultDatabase;
let proxy: FaultProxy;
let a: ServerProcess;
let b: ServerProcess;

before(async () => {
  fdb = await openFaultDatabase('redis');
  proxy = await new FaultProxy(REDIS_URL).start();
  const env = serverEnv({ DATABASE_URL: fdb.url, REDIS_URL: throughProxy(REDIS_URL, proxy.port), DB_POOL_SIZE: '4' });
  [a, b] = await Promise.all([startServer(env, ['--workers', '1']), startServer(env, ['--workers', '1'])]);
});

after(async () => {
  fileFigures('redis-outage.test.ts');
  await cleanUpProcesses();
  await proxy?.close();
  await fdb?.drop();
});

const get = (server: ServerProcess, key: string) => call(server.baseUrl, 'GET', '/v1/contacts?limit=1', { key });
const remaining = (r: Answer) => Number(r.headers['ratelimit-remaining']);

/** `n` GETs to `server`, one after another: their statuses. */
async function burst(server: ServerProcess, key: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await get(server, key)).status);
  return statuses;
}

/** A quota shared by both processes: `limit` requests alternating between them, then 429 on each. */
async function assertSharedQuota(limit: number): Promise<void> {
  const { key } = await newWorkspaceKey(fdb.owner, { rateLimitPerMinute: limit });
  const left: number[] = [];
  for (let i = 0; i < limit; i++) {
    const r = await get(i % 2 === 0 ? a : b, key);
    assert.equal(r.status, 200);
    left.push(remaining(r));
  }
  assert.deepEqual(
    left,
    Array.from({ length: limit }, (_, i) => limit - 1 - i),
    'one count across both processes',
  );
  for (const server of [a, b]) assert.equal((await get(server, key)).status, 429);
}

/** The process's wsapi_rate_limit_counts_in_memory on /metrics. */
async function countsInMemory(server: ServerProcess): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  return Number(/^wsapi_rate_limit_counts_in_memory (\d+)$/m.exec(text)?.[1]);
}

async function readyz(server: ServerProcess): Promise<Answer> {
  return call(server.baseUrl, 'GET', '/readyz');
}

function assertAllSucceeded(sent: Sent[], context: string): void {
  const failed = sent.filter((s) => s.answer.status !== 200 && s.answer.status !== 201);
  assert.deepEqual(
    failed.map(
      (s) => `${s.op} ${s.phaseAtStart}: ${s.answer.status} ${s.answer.error ?? JSON.stringify(s.answer.json)}`,
    ),
    [],
    `${context}: every request succeeds`,
  );
}

async function assertWritesStoredOnce(sent: Sent[], workspaceId: string): Promise<number> {
  const creates = sent.filter((s) => s.op === 'create');
  const stored = await contactsByEmail(fdb.db, workspaceId);
  for (const s of creates) {
    assert.deepEqual(stored.get((s.write!.body as { email: string }).email), [s.answer.json.data.id]);
  }
  assert.equal([...stored.values()].flat().length, creates.length);
  return creates.length;
}

function latencies(sent: Sent[]) {
  const ms = sent.map((s) => s.answer.endedAt - s.answer.startedAt).sort((x, y) => x - y);
  return { p50: ms[Math.floor(ms.length / 2)] ?? 0, max: ms[ms.length - 1] ?? 0 };
}

describe('Redis goes away under load (two processes)', () => {
  test('gone: requests keep succeeding, counted per process; /readyz 503 until it is back; then shared again', async (t) => {
    await assertSharedQuota(6);
    const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
    const load = startLoad({ baseUrls: [a.baseUrl, b.baseUrl], key, workers: 6, tag: 'redisdown' });
    await sleep(1_000);

    const logBefore = [a, b].map((server) => server.output().stdout.length);
    load.setPhase('down');
    const cutAt = Date.now();
    proxy.cut();
    for (const server of [a, b]) {
      const ms = await waitFor(5_000, async () => (await readyz(server)).status === 503);
      assert.ok(ms !== null, `${server.baseUrl} /readyz goes 503 while Redis is gone`);
      assert.deepEqual((await readyz(server)).json, {
        status: 'unavailable',
        checks: { database: 'ok', redis: 'unavailable' },
      });
      assert.equal((await call(server.baseUrl, 'GET', '/healthz')).status, 200);
      // Within the command timeout (500 ms) of the store's call in flight at the cut.
      const shown = await waitFor(2_000, async () => (await countsInMemory(server)) === 1);
      assert.ok(shown !== null, `${server.baseUrl} shows its counts in memory on /metrics`);
    }
    // The limit holds per process: a key of 5 per minute gets 5 from each process, then 429.
    const { key: small } = await newWorkspaceKey(fdb.owner, { rateLimitPerMinute: 5 });
    const perProcess = { a: await burst(a, small, 6), b: await burst(b, small, 6) };
    assert.deepEqual(perProcess.a, [200, 200, 200, 200, 200, 429], 'process A counts alone');
    assert.deepEqual(perProcess.b, [200, 200, 200, 200, 200, 429], 'process B counts alone');
    await sleep(2_000);

    load.setPhase('back');
    const restoredAt = Date.now();
    proxy.restore();
    const back: (number | null)[] = [];
    for (const server of [a, b]) back.push(await waitFor(10_000, async () => (await readyz(server)).status === 200));
    assert.ok(
      back.every((ms) => ms !== null),
      `/readyz 200 again on both after Redis is back (${back.join(', ')} ms)`,
    );
    await assertSharedQuota(4);
    for (const server of [a, b]) assert.equal(await countsInMemory(server), 0, 'counts shared again on /metrics');
    load.setPhase('after');
    await sleep(1_000);
    const sent = await load.stop();

    for (const server of [a, b]) assert.ok(processState(server).alive, processState(server).description);
    assertAllSucceeded(sent, 'under load through the Redis outage');
    // Each process says once that its limits went per process, and once that they are shared again.
    [a, b].forEach((server, i) => {
      const lines = server
        .output()
        .stdout.slice(logBefore[i])
        .split('\n')
        .filter((line) => line.includes('"component":"rate limits"'))
        .map((line) => JSON.parse(line) as { level: number; store: string; msg: string; failure?: string });
      assert.deepEqual(
        lines.map((l) => [l.level, l.store, l.msg]),
        [
          [50, 'redis', 'the rate-limit store is not answering: limits are counted per process until it does'],
          [40, 'redis', 'the rate-limit store answers again: limits are counted across processes'],
        ],
        `the rate-limit log lines of ${server.baseUrl}`,
      );
      // Why, by a code: the connection lost (as the client saw it first), never only "Error".
      assert.ok(
        ['CONNECTION_CLOSED', 'NOT_CONNECTED', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE'].includes(lines[0]!.failure!),
        `the failure of ${server.baseUrl}: ${lines[0]!.failure}`,
      );
    });
    const during = sent.filter((s) => s.answer.startedAt > cutAt && s.answer.endedAt < restoredAt);
    assert.ok(during.length > 20, `requests while Redis was gone: ${during.length}`);
    assert.ok(latencies(during).max < 3_000, `slowest request while Redis was gone: ${latencies(during).max} ms`);
    const writes = await assertWritesStoredOnce(sent, workspaceId);
    report(t, {
      requests: sent.length,
      writesStoredOnce: writes,
      duringOutage: during.length,
      latencyDuringOutageMs: latencies(during),
      status5xx: sent.filter((s) => s.answer.status >= 500).length,
      readyAgainMs: back,
      perProcessDuringOutage: perProcess,
    });
  });

  test('hanging: each request waits at most the command timeout, then is counted in memory', async (t) => {
    const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
    const load = startLoad({ baseUrls: [a.baseUrl, b.baseUrl], key, workers: 6, tag: 'redishang' });
    await sleep(1_000);
    const logBefore = [a, b].map((server) => server.output().stdout.length);
    load.setPhase('hanging');
    const pausedAt = Date.now();
    proxy.pause();
    const unready = await waitFor(5_000, async () => (await readyz(a)).status === 503);
    assert.ok(unready !== null, '/readyz says Redis is unavailable while it hangs');
    await sleep(2_500);
    load.setPhase('resumed');
    const resumedAt = Date.now();
    proxy.resume();
    const back: (number | null)[] = [];
    for (const server of [a, b]) back.push(await waitFor(10_000, async () => (await readyz(server)).status === 200));
    assert.ok(
      back.every((ms) => ms !== null),
      `/readyz 200 again after Redis answers (${back.join(', ')} ms)`,
    );
    load.setPhase('after');
    await sleep(1_000);
    const sent = await load.stop();

    for (const server of [a, b]) assert.ok(processState(server).alive, processState(server).description);
    assertAllSucceeded(sent, 'under load while Redis hangs');
    const during = sent.filter((s) => s.answer.startedAt > pausedAt && s.answer.endedAt < resumedAt);
    assert.ok(during.length > 100, `requests while Redis hung: ${during.length}`);
    // The command timeout is 500 ms. A request waits for one Redis command at most, though it
    // touches two stores in Redis (its rate-limit count and its place among the key's requests in
    // flight); and once one has timed out, the others of the process do not wait at all for a while.
    const slowest = latencies(during);
    assert.ok(slowest.max < 1_000, `slowest request while Redis hung: ${slowest.max} ms (two command timeouts?)`);
    assert.ok(slowest.p50 < 100, `median request while Redis hung: ${slowest.p50} ms (each waiting for Redis?)`);
    const afterwards = sent.filter((s) => s.phaseAtStart === 'after');
    assert.ok(afterwards.length > 10);
    // Each process says why its counts went to memory: a command that timed out.
    [a, b].forEach((server, i) => {
      const failures = server
        .output()
        .stdout.slice(logBefore[i])
        .split('\n')
        .filter((line) => line.includes('"component":"rate limits"') && line.includes('"level":50'))
        .map((line) => (JSON.parse(line) as { failure?: string }).failure);
      assert.deepEqual(failures, ['COMMAND_TIMEOUT'], `the rate-limit error lines of ${server.baseUrl}`);
    });
    // Counting is shared through Redis again (not stuck on the timeout path).
    await assertSharedQuota(4);
    const writes = await assertWritesStoredOnce(sent, workspaceId);
    report(t, {
      requests: sent.length,
      writesStoredOnce: writes,
      duringHang: during.length,
      latencyDuringHangMs: latencies(during),
      latencyAfterMs: latencies(afterwards),
      status5xx: sent.filter((s) => s.answer.status >= 500).length,
      readyAgainMs: back,
    });
  });

  test('a server started while Redis is gone serves requests, and uses Redis once it is back', async () => {
    proxy.cut();
    const env = serverEnv({ DATABASE_URL: fdb.url, REDIS_URL: throughProxy(REDIS_URL, proxy.port), DB_POOL_SIZE: '2' });
    const late = await startServer(env, ['--workers', '1']);
    const { key } = await newWorkspaceKey(fdb.owner);
    assert.equal((await get(late, key)).status, 200);
    assert.equal((await readyz(late)).status, 503);
    proxy.restore();
    for (const server of [late, a, b]) {
      const ms = await waitFor(10_000, async () => (await readyz(server)).status === 200);
      assert.ok(ms !== null, `${server.baseUrl}: /readyz 200 once Redis is reachable`);
    }
    // Shared again: a count started on `a` goes on on the late server.
    const { key: shared } = await newWorkspaceKey(fdb.owner, { rateLimitPerMinute: 3 });
    assert.equal(remaining(await get(a, shared)), 2);
    assert.equal(remaining(await get(late, shared)), 1);
  });
});
