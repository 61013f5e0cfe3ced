// PostgreSQL goes away under load and comes back. A real `serve` process reaches the database
// through a proxy this file controls: cutting the proxy resets every connection and refuses new
// ones (the database stopped), restoring it lets connections through again. Separately, real
// server-side kills (pg_terminate_backend of this server's own sessions) hit the pool under load.
// Promised: every answer is a 2xx or a clean 503 service_unavailable with Retry-After, the process
// never crashes, it serves again without a restart once the database is back, and every write is
// exactly once: acknowledged ones are stored, and retrying any of them with its key has one effect.
//
// Each test runs its scenario to the end whatever happens, then checks the writes (on a new server
// process if the first one died), then the answers and the process: a failure names every broken
// promise, not only the first.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ownerCommands } from '../../src/modules/owner/owner.service.js';
import { cleanUpProcesses, startServer, stopServer, type ServerProcess } from '../processes.js';
import {
  assertCleanUnavailable,
  call,
  contactsByEmail,
  eachLimited,
  FaultProxy,
  newWorkspaceKey,
  openFaultDatabase,
  processState,
  REDIS_URL,
  report,
  retryUntilDone,
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

/** How long a request may wait for a database that cannot be reached before its 503 (docs/reliability.md). */
const UNREACHABLE_ANSWER_MS = 1_000;

let fdb: FaultDatabase;
let proxy: FaultProxy;
let server: ServerProcess;

const start = () =>
  startServer(serverEnv({ DATABASE_URL: throughProxy(fdb.url, proxy.port), DB_POOL_SIZE: '4' }), ['--workers', '1']);

/** The server of this file, started again if an earlier test left it dead (each test stands alone). */
async function liveServer(): Promise<ServerProcess> {
  if (!server || !processState(server).alive) server = await start();
  return server;
}

before(async () => {
  fdb = await openFaultDatabase('db');
  proxy = await new FaultProxy(fdb.url).start();
});

after(async () => {
  fileFigures('database-outage.test.ts');
  await cleanUpProcesses();
  await proxy?.close();
  await fdb?.drop();
});

/**
 * The deployments a fault is tried in: the README's default (one process, rate limits and requests
 * in flight counted in PostgreSQL, which the fault reaches too), and two processes with Redis.
 */
const DEPLOYMENTS = [
  { label: 'one process, no Redis', workers: 1, redis: false },
  { label: 'two processes, Redis', workers: 2, redis: true },
] as const;
type Deployment = (typeof DEPLOYMENTS)[number];

/** The file's server for the default deployment; a server of its own (stopped by the test) for the other. */
const serverOf = async (deployment: Deployment): Promise<ServerProcess> =>
  deployment.redis
    ? startServer(serverEnv({ DATABASE_URL: throughProxy(fdb.url, proxy.port), DB_POOL_SIZE: '4', REDIS_URL }), [
        '--workers',
        String(deployment.workers),
      ])
    : liveServer();

/** Every answer is a 2xx or a clean 503; none is another error or a dropped connection. */
function assertOnlySuccessOrClean503(sent: Sent[]): void {
  const dropped = sent.filter((s) => s.answer.status === 0);
  assert.equal(
    dropped.length,
    0,
    `${dropped.length} of ${sent.length} requests got no HTTP answer (${[...new Set(dropped.map((s) => s.answer.error))].join(', ')})`,
  );
  for (const s of sent) {
    const context = `${s.op} (${s.phaseAtStart}→${s.phaseAtEnd})`;
    if (s.answer.status === 503) assertCleanUnavailable(s.answer, context);
    else
      assert.ok(
        [200, 201].includes(s.answer.status),
        `${context}: ${s.answer.status} ${JSON.stringify(s.answer.json)}`,
      );
  }
}

/** Each create stored iff acknowledged, then every create retried with its key: one contact per key. */
async function assertExactlyOnce(baseUrl: string, sent: Sent[], workspaceId: string, key: string) {
  const creates = sent.filter((s) => s.op === 'create');
  const acknowledged = creates.filter((s) => s.answer.status === 201);
  let stored = await contactsByEmail(fdb.db, workspaceId);
  for (const s of acknowledged) {
    const email = (s.write!.body as { email: string }).email;
    assert.deepEqual(stored.get(email), [s.answer.json.data.id], `acknowledged ${s.write!.idem} is stored once`);
  }
  await eachLimited(creates, 8, async (s) => {
    const again = await retryUntilDone(baseUrl, key, s.write!);
    assert.equal(again.status, 201);
    if (s.answer.status === 201) {
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.json.data.id, s.answer.json.data.id, `${s.write!.idem} replays the same contact`);
    }
  });
  stored = await contactsByEmail(fdb.db, workspaceId);
  for (const s of creates) {
    const email = (s.write!.body as { email: string }).email;
    assert.equal(stored.get(email)?.length, 1, `${s.write!.idem}: exactly one contact after its retry`);
  }
  assert.equal([...stored.values()].flat().length, creates.length, 'no contact without its request');
  return { creates: creates.length, acknowledged: acknowledged.length, retried: creates.length };
}

const countStatuses = (sent: Sent[]) => {
  const counts: Record<string, number> = {};
  for (const s of sent) {
    const k = s.answer.status === 0 ? `no answer (${s.answer.error})` : String(s.answer.status);
    counts[k] = (counts[k] ?? 0) + 1;
  }
  return counts;
};

describe('PostgreSQL stops in the middle of a load', () => {
  test('503 service_unavailable with Retry-After while it is gone, no crash, recovery without a restart', async (t) => {
    const first = await liveServer();
    const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
    const load = startLoad({ baseUrls: [first.baseUrl], key, workers: 8, tag: 'dbdown' });
    await sleep(1_500);

    load.setPhase('down');
    const cutAt = Date.now();
    proxy.cut();
    const readyzDownMs = await waitFor(6_000, async () => {
      const r = await call(first.baseUrl, 'GET', '/readyz');
      return (r.status === 503 && r.json?.checks?.database === 'unavailable') || !processState(first).alive;
    });
    const readyzDown = await call(first.baseUrl, 'GET', '/readyz');
    const healthzDown = await call(first.baseUrl, 'GET', '/healthz');
    await sleep(3_000);

    load.setPhase('recovering');
    const restoredAt = Date.now();
    proxy.restore();
    const recoveryMs = await waitFor(10_000, async () => {
      if (!processState(first).alive) return true;
      return (await call(first.baseUrl, 'GET', '/v1/contacts?limit=1', { key })).status === 200;
    });
    const readyAt = Date.now();
    const readyzAfter = await call(first.baseUrl, 'GET', '/readyz');
    load.setPhase('after');
    await sleep(1_500);
    const sent = await load.stop();
    const state = processState(first);

    const figures = {
      requests: sent.length,
      statuses: countStatuses(sent),
      connectionsRefusedByProxy: proxy.refused,
      recoveryMs,
      process: state.alive ? 'alive' : 'died',
    };
    report(t, figures);

    // The writes first (on a new process if this one died): nothing acknowledged lost, nothing doubled.
    const writes = await assertExactlyOnce((await liveServer()).baseUrl, sent, workspaceId, key);
    report(t, writes);

    assert.ok(state.alive, `the server process must survive the outage; it ${state.description}`);
    assert.ok(readyzDownMs !== null, '/readyz reports the database unavailable during the outage');
    assert.equal(readyzDown.status, 503);
    assert.deepEqual(readyzDown.json, { status: 'unavailable', checks: { database: 'unavailable' } });
    assert.equal(healthzDown.status, 200, '/healthz while the database is gone');
    assertOnlySuccessOrClean503(sent);
    const during = sent.filter((s) => s.answer.startedAt > cutAt + 50 && s.answer.endedAt < restoredAt);
    assert.ok(during.length > 10, `requests while the database was gone: ${during.length}`);
    assert.deepEqual([...new Set(during.map((s) => s.answer.status))], [503], 'all 503 while it is gone');
    const slowest = Math.max(...during.map((s) => s.answer.endedAt - s.answer.startedAt));
    assert.ok(slowest <= UNREACHABLE_ANSWER_MS, `a 503 while it is gone took ${slowest} ms`);
    assert.ok(recoveryMs !== null && recoveryMs < 10_000, `recovery took ${recoveryMs} ms`);
    assert.equal(readyzAfter.status, 200, '/readyz once the database is back');
    const afterReady = sent.filter((s) => s.answer.startedAt > readyAt);
    assert.ok(afterReady.length > 10, `requests after recovery: ${afterReady.length}`);
    assert.deepEqual([...new Set(afterReady.map((s) => s.answer.status))].sort(), [200, 201], 'all 2xx after');
  });

  test('server-side connection kills (pg_terminate_backend) under load are survived', async (t) => {
    const first = await liveServer();
    const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
    const load = startLoad({ baseUrls: [first.baseUrl], key, workers: 8, tag: 'terminate' });
    await sleep(1_000);
    const terminated: number[] = [];
    const recoveries: (number | null)[] = [];
    for (let round = 0; round < 3 && processState(first).alive; round++) {
      load.setPhase(`kill ${round}`);
      // Only this server's sessions: the ones that came through this file's proxy.
      const { rows } = await fdb.db.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE datname = $1 AND application_name LIKE 'workspace-public-api%' AND client_port = ANY($2::int[])`,
        [fdb.name, proxy.upstreamPorts()],
      );
      terminated.push(rows[0]!.n);
      recoveries.push(
        await waitFor(5_000, async () => {
          if (!processState(first).alive) return true;
          return (await call(first.baseUrl, 'GET', '/v1/contacts?limit=1', { key })).status === 200;
        }),
      );
      await sleep(700);
    }
    load.setPhase('after');
    await sleep(1_000);
    const sent = await load.stop();
    const state = processState(first);
    report(t, {
      requests: sent.length,
      sessionsTerminated: terminated,
      recoveryMs: recoveries,
      statuses: countStatuses(sent),
      process: state.alive ? 'alive' : 'died',
    });

    const writes = await assertExactlyOnce((await liveServer()).baseUrl, sent, workspaceId, key);
    report(t, writes);

    assert.ok(state.alive, `the server process must survive the kills; it ${state.description}`);
    assert.equal(terminated.length, 3);
    assert.ok(
      terminated.every((n) => n > 0),
      `sessions terminated per round: ${terminated.join(', ')}`,
    );
    assert.ok(
      recoveries.every((ms) => ms !== null),
      `answers again after each kill: ${recoveries.join(', ')}`,
    );
    assertOnlySuccessOrClean503(sent);
    const tail = sent.filter((s) => s.phaseAtStart === 'after');
    assert.ok(tail.length > 10);
    assert.ok(
      tail.every((s) => s.answer.status === 200 || s.answer.status === 201),
      'everything after the last kill succeeds',
    );
  });

  // A cancel can land on any statement of a transaction, its COMMIT included; the connection must
  // serve the next request either way.
  for (const deployment of DEPLOYMENTS) {
    test(`statements cancelled by the database under load (pg_cancel_backend, as a statement_timeout does) are clean 503s, each write once (${deployment.label})`, async (t) => {
      const first = await serverOf(deployment);
      try {
        const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
        const load = startLoad({ baseUrls: [first.baseUrl], key, workers: 8, tag: 'cancel' });
        await sleep(1_000);
        load.setPhase('cancelling');
        let signalled = 0;
        for (const deadline = Date.now() + 3_000; Date.now() < deadline; await sleep(25)) {
          const { rows } = await fdb.db.query<{ n: number }>(
            `SELECT count(*) FILTER (WHERE pg_cancel_backend(pid))::int AS n FROM pg_stat_activity
              WHERE datname = $1 AND state = 'active' AND application_name LIKE 'workspace-public-api%'
                AND client_port = ANY($2::int[])`,
            [fdb.name, proxy.upstreamPorts()],
          );
          signalled += rows[0]!.n;
        }
        load.setPhase('after');
        await sleep(1_000);
        const sent = await load.stop();
        const state = processState(first);
        const statuses = countStatuses(sent);
        report(t, { requests: sent.length, cancelsSignalled: signalled, statuses });

        const writes = await assertExactlyOnce(
          (state.alive ? first : await liveServer()).baseUrl,
          sent,
          workspaceId,
          key,
        );
        report(t, writes);

        assert.ok(state.alive, `the server process must survive the cancels; it ${state.description}`);
        assert.ok(signalled > 0, 'statements were cancelled');
        assert.ok(
          sent.some((s) => s.answer.status === 503),
          `some cancel hit a request: ${JSON.stringify(statuses)}`,
        );
        assertOnlySuccessOrClean503(sent);
        const tail = sent.filter((s) => s.phaseAtStart === 'after');
        assert.ok(
          tail.every((s) => s.answer.status === 200 || s.answer.status === 201),
          'everything after the cancels succeeds',
        );
      } finally {
        if (deployment.redis) await stopServer(first);
      }
    });
  }

  test('after the outage the NOTIFY listeners are back, and a revoked key is refused at once', async () => {
    const current = await liveServer();
    // One session per channel: the key cache's invalidations, and webhook delivery's wake-ups.
    const listening = await waitFor(5_000, async () => {
      const { rows } = await fdb.db.query<{ channels: string[] }>(
        `SELECT coalesce(array_agg(application_name ORDER BY application_name), '{}') AS channels FROM pg_stat_activity
          WHERE datname = $1 AND application_name LIKE 'workspace-public-api-listener %' AND client_port = ANY($2::int[])`,
        [fdb.name, proxy.upstreamPorts()],
      );
      return (
        rows[0]!.channels.join(',') ===
        'workspace-public-api-listener auth_changed,workspace-public-api-listener webhook_work'
      );
    });
    assert.ok(listening !== null, 'the LISTEN sessions of the server are connected again');
    const { key, keyId } = await newWorkspaceKey(fdb.owner);
    assert.equal((await call(current.baseUrl, 'GET', '/v1/contacts?limit=1', { key })).status, 200);
    await ownerCommands.revokeKey(fdb.owner, { keyId });
    // Refused: 401, or 429 address_rate_limit_exceeded, which the guard only answers once the key is
    // judged invalid (the 503s of the outage were counted against this client address).
    const refusedMs = await waitFor(1_500, async () => {
      const r = await call(current.baseUrl, 'GET', '/v1/contacts?limit=1', { key });
      return r.status === 401 || (r.status === 429 && r.json?.error?.code === 'address_rate_limit_exceeded');
    });
    assert.ok(refusedMs !== null, 'the revoked key is refused within a second');
  });
});

describe('PostgreSQL stops answering (a stalled network) in the middle of a load', () => {
  // Each process of a deployment has its own probe.
  for (const deployment of DEPLOYMENTS) {
    test(`every request is answered within 1 s, a clean 503 while it does not answer; recovery without a restart; each write once (${deployment.label})`, async (t) => {
      const first = await serverOf(deployment);
      try {
        const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
        const load = startLoad({ baseUrls: [first.baseUrl], key, workers: 8, tag: 'stall' });
        await sleep(1_000);
        // The connection the server probes on is lost first (a terminated session, a restart): the
        // server opens it again before it is needed, or the stall would take its new connection's 2 s.
        const { rows } = await fdb.db.query<{ n: number }>(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND application_name = 'workspace-public-api-probe' AND client_port = ANY($2::int[])`,
          [fdb.name, proxy.upstreamPorts()],
        );
        const probesTerminated = rows[0]!.n;
        await sleep(1_000);

        load.setPhase('stalled');
        const stalledAt = Date.now();
        // The file's shared server logged the outages of the tests before this one.
        const logBefore = first.output().stdout.length;
        // Connections stay open and new ones are accepted, but nothing reaches PostgreSQL or comes back.
        proxy.pause();
        await sleep(500);
        const readyz = await call(first.baseUrl, 'GET', '/readyz');
        await sleep(2_500);

        load.setPhase('recovering');
        const resumedAt = Date.now();
        proxy.resume();
        const recoveryMs = await waitFor(10_000, async () => {
          if (!processState(first).alive) return true;
          return (await call(first.baseUrl, 'GET', '/v1/contacts?limit=1', { key })).status === 200;
        });
        load.setPhase('after');
        await sleep(1_000);
        const sent = await load.stop();
        const state = processState(first);

        // Requests that were waiting on the database when it stalled, and those sent while it was stalled.
        const inFlight = sent.filter((s) => s.answer.startedAt < stalledAt && s.answer.endedAt > stalledAt);
        const during = sent.filter((s) => s.answer.startedAt >= stalledAt && s.answer.startedAt < resumedAt);
        const waited = (s: Sent) => s.answer.endedAt - Math.max(s.answer.startedAt, stalledAt);
        const longest = (list: Sent[]) => Math.max(0, ...list.map(waited));
        report(t, {
          requests: sent.length,
          statuses: countStatuses(sent),
          inFlightAtStall: inFlight.length,
          longestInFlightMs: longest(inFlight),
          duringStall: during.length,
          longestDuringStallMs: longest(during),
          readyzMs: readyz.endedAt - readyz.startedAt,
          probesTerminated,
          recoveryMs,
          process: state.alive ? 'alive' : 'died',
        });

        const writes = await assertExactlyOnce(
          (processState(first).alive ? first : await liveServer()).baseUrl,
          sent,
          workspaceId,
          key,
        );
        report(t, writes);

        assert.ok(state.alive, `the server process must survive the stall; it ${state.description}`);
        // Every process's probe connection (the file's other server, when it runs, has its own too).
        assert.ok(
          probesTerminated >= deployment.workers,
          `probe connections terminated before the stall: ${probesTerminated}`,
        );
        // Each 503 of the outage is one warning line, without a stack, and names no address.
        const failedLines = first
          .output()
          .stdout.split('\n')
          .filter((line) => line.includes('"msg":"request failed"'))
          .map((line) => JSON.parse(line) as { level: number; error?: Record<string, unknown> });
        assert.ok(failedLines.length > 0, 'the 503s are logged');
        assert.deepEqual(
          failedLines.filter((l) => l.level !== 40 || 'stack' in (l.error ?? {})),
          [],
          'a 503 of an outage is logged at warn, without a stack',
        );
        assert.doesNotMatch(first.output().stdout, /127\.0\.0\.1|postgres:\/\//, 'no address in the log');
        // Each process that found the database not answering (one with an operation that waited on it)
        // says so once, then once that it answers again.
        const outageLines = new Map<number, [number, boolean][]>();
        for (const line of first.output().stdout.slice(logBefore).split('\n')) {
          if (!line.includes('"component":"database"')) continue;
          const { pid, level, reachable } = JSON.parse(line) as { pid: number; level: number; reachable: boolean };
          outageLines.set(pid, [...(outageLines.get(pid) ?? []), [level, reachable]]);
        }
        assert.ok(outageLines.size >= 1, 'the outage is logged');
        for (const lines of outageLines.values()) {
          assert.deepEqual(
            lines,
            [
              [50, false],
              [40, true],
            ],
            'the outage’s start (error) and end (warn), logged',
          );
        }
        assertOnlySuccessOrClean503(sent);
        const late = [...inFlight, ...during].filter((s) => waited(s) > UNREACHABLE_ANSWER_MS);
        assert.deepEqual(
          late.map((s) => `${s.op} ${s.answer.status} after ${waited(s)} ms`),
          [],
          `every request answered within ${UNREACHABLE_ANSWER_MS} ms of the stall or of its arrival`,
        );
        assert.ok(during.length > 20, `requests while the database was stalled: ${during.length}`);
        const stillAnswered = during.filter((s) => s.answer.endedAt < resumedAt);
        assert.deepEqual([...new Set(stillAnswered.map((s) => s.answer.status))], [503], 'all 503 while it is stalled');
        assert.equal(readyz.status, 503, '/readyz while the database is stalled');
        assert.ok(readyz.endedAt - readyz.startedAt <= UNREACHABLE_ANSWER_MS, '/readyz answers within 1 s');
        assert.ok(recoveryMs !== null && recoveryMs < 5_000, `recovery took ${recoveryMs} ms`);
        const tail = sent.filter((s) => s.phaseAtStart === 'after');
        assert.ok(tail.length > 10, `requests after recovery: ${tail.length}`);
        assert.deepEqual([...new Set(tail.map((s) => s.answer.status))].sort(), [200, 201], 'all 2xx after');
      } finally {
        if (deployment.redis) await stopServer(first);
      }
    });
  }

  test('a slow database is waited for: answers that take over a second are 2xx, never a 503', async (t) => {
    const first = await liveServer();
    const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
    // Every answer of PostgreSQL arrives 250 ms late: a statement takes a quarter of a second, a
    // request several.
    proxy.delayMs = 250;
    let sent: Sent[];
    try {
      const load = startLoad({ baseUrls: [first.baseUrl], key, workers: 6, tag: 'slow' });
      await sleep(4_000);
      sent = await load.stop();
    } finally {
      proxy.delayMs = 0;
    }
    const took = sent.map((s) => s.answer.endedAt - s.answer.startedAt);
    report(t, {
      requests: sent.length,
      statuses: countStatuses(sent),
      slowestMs: Math.max(...took),
      overOneSecond: took.filter((ms) => ms > 1_000).length,
    });
    await assertExactlyOnce(first.baseUrl, sent, workspaceId, key);
    assert.deepEqual(
      [...new Set(sent.map((s) => s.answer.status))].sort(),
      [200, 201],
      'every answer a 2xx: a slow database is not an unreachable one',
    );
    assert.ok(
      took.some((ms) => ms > UNREACHABLE_ANSWER_MS),
      `some request took over ${UNREACHABLE_ANSWER_MS} ms (slowest ${Math.max(...took)} ms): the test did not make the database slow enough`,
    );
  });

  test('its probe connection lost as it stalls: a lone request is answered 503 within 1 s', async (t) => {
    // A failover that drops the server's sessions and then stays silent: the server sees the
    // connection it probes on lost, and opens a new one while nothing answers. That connection is
    // given 2 s; a request waiting meanwhile must not wait for it. With Redis, so that the request
    // waits on the database for its rows, not for its count.
    const first = await startServer(
      serverEnv({ DATABASE_URL: throughProxy(fdb.url, proxy.port), DB_POOL_SIZE: '4', REDIS_URL }),
      ['--workers', '1'],
    );
    t.after(() => stopServer(first));
    const { key } = await newWorkspaceKey(fdb.owner);
    const list = () => call(first.baseUrl, 'GET', '/v1/contacts?limit=1', { key });
    assert.equal((await list()).status, 200);
    await sleep(500);
    const { rows } = await fdb.db.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND application_name = 'workspace-public-api-probe' AND client_port = ANY($2::int[])`,
      [fdb.name, proxy.upstreamPorts()],
    );
    await sleep(10);
    proxy.pause();
    let answer: Answer;
    try {
      answer = await list();
    } finally {
      proxy.resume();
    }
    const waitedMs = answer.endedAt - answer.startedAt;
    report(t, { probesTerminated: rows[0]!.n, status: answer.status, waitedMs });
    assert.ok(rows[0]!.n >= 1, 'the probe connection was terminated');
    assertCleanUnavailable(answer, 'the lone request');
    assert.ok(waitedMs <= UNREACHABLE_ANSWER_MS, `answered after ${waitedMs} ms`);
    const recoveredMs = await waitFor(5_000, async () => (await list()).status === 200);
    assert.ok(recoveredMs !== null, 'serves again once the database answers');
  });
});
