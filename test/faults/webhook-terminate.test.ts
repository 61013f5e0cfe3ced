// PostgreSQL sessions terminated again and again while webhooks go out. A real `serve --workers 2`
// process (pools of 4, rate limits in Redis) reaches the database through a proxy this file starts;
// every 200–400 ms (KILL_EVERY_MS, jittered) its database traffic is held for STALL_MS, then every one of its sessions
// (pool connections and NOTIFY listeners) is terminated with pg_terminate_backend and the traffic
// let go. Meanwhile clients create contacts with batch upserts and then update them (two events
// per contact), each write sent again with its Idempotency-Key until it gets its 2xx, and a
// receiver answers every delivery 2xx after 10–40 ms. Once the kills stop, every event must have
// reached the receiver, each contact's two events in feed order, and an event answered 2xx may
// come again (delivery is at least once: the acknowledgement is retried while the delivery's lease
// is held, then given up) but seldom. Figures: deliveries the receiver got again after it had
// answered 2xx to the same `webhook-id`, the kill rounds and sessions terminated, and the 2xx
// answers given during a stall (whose acknowledgements met a kill).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ownerCommands } from '../../src/modules/owner/owner.service.js';
import { cleanUpProcesses, startServer, type ServerProcess } from '../processes.js';
import { Receiver, waitFor as waitUntil, type Delivery } from '../webhooks-support.js';
import {
  call,
  FaultProxy,
  fileFigures,
  newWorkspaceKey,
  openFaultDatabase,
  processState,
  REDIS_URL,
  report,
  serverEnv,
  sleep,
  throughProxy,
  type Answer,
  type FaultDatabase,
} from './support.js';

const TIMEOUT_MS = 1_000;
const CONTACTS = 300;
const BATCH = 10;
const WRITERS = 10;
/** The batches start spread over this long (later when the writes fall behind): the kills meet deliveries throughout. */
const WRITES_OVER_MS = 8_000;
/**
 * The pause between kill rounds, drawn anew each round. A fixed pause let the writers' retries fall
 * into step with the kills: all ten sent again at the same moment after a kill, queued behind each
 * other for the workspace's sync clock on backends that had just reconnected, and the last ones in
 * the queue met the next kill, round after round (one write failed 75 times in a row, another for
 * over 30 s on this 2-core host).
 */
const KILL_EVERY_MS = [200, 400] as const;
/** A client's pause before it sends a failed write again, jittered as clients are told to. */
const RETRY_AFTER_MS = [50, 250] as const;
const between = ([from, to]: readonly [number, number]) => from + Math.floor(Math.random() * (to - from));
const STALL_MS = 50;
/** Kills go on this long after the last write: the tail of the deliveries goes out under them too. */
const KILLING_AFTER_WRITES_MS = 3_000;
/**
 * Repeats after a 2xx allowed, as a share of the events: delivery is at least once, but an
 * acknowledgement that fails is tried again while its lease is held, so a kill alone does not send
 * an event again. Measured on 2 cores: none, in every run; with acknowledgements given up at their
 * first failure instead (the retry removed), 46 and 37 of the 600 events came again.
 */
const MAX_REPEAT_SHARE = 0.01;

let fdb: FaultDatabase;
let proxy: FaultProxy;
let server: ServerProcess;
let receiver: Receiver;
/** the endpoint of this file, deleted at the end: a shared DATABASE_URL keeps no endpoint of ours */
let endpointId: string | undefined;

before(async () => {
  fdb = await openFaultDatabase('webhook_term');
  proxy = await new FaultProxy(fdb.url).start();
  receiver = await new Receiver().start();
  server = await startServer(
    serverEnv({
      DATABASE_URL: throughProxy(fdb.url, proxy.port),
      DB_POOL_SIZE: '4',
      // Rate limits counted in Redis, not in the database the kills are about.
      REDIS_URL,
      // Each attempt is logged at info with its process id: which processes delivered.
      LOG_LEVEL: 'info',
      WEBHOOK_TARGETS: 'public+loopback',
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_POLL_INTERVAL_MS: '50',
      // The receiver always answers 2xx; a stray failed attempt must not stall the test.
      WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,1s,1s,1s,1s,1s',
      // Both processes deliver to the one endpoint at once.
      WEBHOOK_ENDPOINT_CONCURRENCY: '8',
      WEBHOOK_WORKSPACE_CONCURRENCY: '8',
    }),
    ['--workers', '2'],
  );
});

after(async () => {
  fileFigures('webhook-terminate.test.ts');
  if (endpointId) await ownerCommands.deleteWebhook(fdb.owner, { id: endpointId }).catch(() => undefined);
  await receiver?.close();
  await cleanUpProcesses();
  await proxy?.close();
  await fdb?.drop();
});

/**
 * Every KILL_EVERY_MS until `stop()`: the server's database traffic is held for STALL_MS (the
 * proxy's `pause()`: a network that stalls), then every session of this file's server is
 * terminated and the traffic let go. The statements the server sent during the stall never reach
 * PostgreSQL: among them the acknowledgements of the 2xx answers the receiver gave meanwhile, so
 * every round lands where a 2xx is answered and its record is lost (a kill alone seldom does: an
 * acknowledgement runs for a millisecond or two, many 2xx answers in one statement).
 */
function startKilling() {
  let stopped = false;
  const figures = { rounds: 0, terminated: 0, failed: 0 };
  /** [start, end] of each stall, to count the 2xx answers given during one */
  const stalls: [number, number][] = [];
  const loop = (async () => {
    while (!stopped) {
      const stalledAt = Date.now();
      proxy.pause();
      try {
        await sleep(STALL_MS);
        // Only this server's sessions: those that came through this file's proxy. A terminated
        // backend ends at its next check for interrupts: it runs nothing it gets after the signal.
        const { rows } = await fdb.db.query<{ n: number }>(
          `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
            WHERE datname = $1 AND application_name LIKE 'workspace-public-api%'
              AND client_port = ANY($2::int[]) AND pid <> pg_backend_pid()`,
          [fdb.name, proxy.upstreamPorts()],
        );
        figures.rounds += 1;
        figures.terminated += rows[0]!.n;
      } catch {
        figures.failed += 1;
      } finally {
        proxy.resume();
        stalls.push([stalledAt, Date.now()]);
      }
      await sleep(between(KILL_EVERY_MS));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { ...figures, stalls };
    },
  };
}

describe('PostgreSQL sessions terminated again and again while webhooks are delivered', () => {
  test('every event arrives, in order per resource; repeats after a 2xx are counted and few', async (t) => {
    const startedAt = Date.now();
    const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
    const reader = await ownerCommands.createKey(fdb.owner, {
      workspaceId,
      name: 'feed reader',
      scopes: ['events:read', 'contacts:read'],
      rateLimitPerMinute: 1_000_000,
      concurrencyLimit: 10_000,
    });
    const endpoint = await ownerCommands.createWebhook(
      { ...fdb.owner, webhooks: { timeoutMs: TIMEOUT_MS, targets: 'public+loopback' } },
      { workspaceId, url: `${receiver.url}/terminate`, scopes: ['contacts:read'] },
    );
    endpointId = endpoint.id;
    receiver.secrets = [endpoint.secret];
    // A receiver takes a moment to apply an event: attempts are in flight when a stall begins, and
    // their 2xx answers arrive during it.
    receiver.answer = () => ({ status: 200, delayMs: 10 + Math.floor(Math.random() * 30) });
    // The feed's end now: the events after it (the writes below) are the ones the endpoint gets.
    const head = await call(server.baseUrl, 'GET', '/v2/events/head', { key: reader.key });
    assert.equal(head.status, 200);

    // Each write is sent again with its key until it gets its 2xx, as a client does.
    const statuses = new Map<string, number>();
    let longestWriteMs = 0;
    const writeUntilDone = async (body: unknown): Promise<Answer> => {
      const idem = randomUUID();
      const deadline = Date.now() + 60_000;
      for (;;) {
        const a = await call(server.baseUrl, 'POST', '/v2/contacts/batch/upsert', { key, idem, body });
        const label = a.status === 0 ? `network ${a.error}` : `${a.status} ${a.json?.error?.code ?? ''}`.trim();
        statuses.set(label, (statuses.get(label) ?? 0) + 1);
        if (a.status === 200) {
          longestWriteMs = Math.max(longestWriteMs, Date.now() - (deadline - 60_000));
          return a;
        }
        const transient =
          a.status === 0 || a.status >= 500 || (a.status === 409 && a.json?.error?.code === 'idempotency_key_in_use');
        assert.ok(transient, `batch upsert: ${a.status} ${JSON.stringify(a.json)}`);
        assert.ok(Date.now() < deadline, `a batch upsert still fails after 60 s: ${a.status} ${a.error ?? ''}`);
        await sleep(between(RETRY_AFTER_MS));
      }
    };

    const run = randomUUID().slice(0, 8);
    const batches = Array.from({ length: CONTACTS / BATCH }, (_, b) =>
      Array.from({ length: BATCH }, (_, i) => `term-${run}-${b * BATCH + i}`),
    );
    // The writers run under the kills; so do the deliveries, which follow the writes closely.
    const killer = startKilling();
    let next = 0;
    const writer = async () => {
      while (next < batches.length) {
        const b = next++;
        const ids = batches[b]!;
        await sleep(startedAt + (b * WRITES_OVER_MS) / batches.length - Date.now());
        const created = await writeUntilDone({
          items: ids.map((id) => ({ external_id: id, name: `Created ${id}`, email: `${id}@faults.example.com` })),
        });
        assert.ok(created.json.data.every((r: any) => r.result === 'created'));
        const updated = await writeUntilDone({ items: ids.map((id) => ({ external_id: id, name: `Updated ${id}` })) });
        assert.ok(updated.json.data.every((r: any) => r.result === 'updated'));
      }
    };
    let writesMs = 0;
    let kills: Awaited<ReturnType<typeof killer.stop>>;
    try {
      await Promise.all(Array.from({ length: WRITERS }, writer));
      writesMs = Date.now() - startedAt;
      await sleep(KILLING_AFTER_WRITES_MS);
    } finally {
      kills = await killer.stop();
    }
    const killedUntil = Date.now();

    // The feed is what was to be delivered: two events per contact, in feed order.
    const expected: any[] = [];
    for (let path = `/v2/events?limit=100&after=${head.json.data.position}`; ;) {
      const page = await call(server.baseUrl, 'GET', path, { key: reader.key });
      assert.equal(page.status, 200, `the feed: ${page.status} ${JSON.stringify(page.json)}`);
      expected.push(...page.json.data);
      if (!page.json.page.has_more) break;
      path = `/v2/events?limit=100&cursor=${page.json.page.next_cursor}`;
    }
    const perResource = new Map<string, any[]>();
    for (const e of expected) perResource.set(e.resource_id, [...(perResource.get(e.resource_id) ?? []), e]);
    const odd = [...perResource.values()].filter(
      (es) => es.map((e) => e.type).join() !== 'contact.created,contact.updated',
    );
    assert.deepEqual(
      odd.map((es) => es.map((e) => `${e.type} ${e.data.external_id} ${e.data.name}`)),
      [],
      `one contact.created then one contact.updated per contact (${expected.length} events)`,
    );
    assert.equal(perResource.size, CONTACTS);

    const received = () => new Set(receiver.deliveries.map((d) => d.id));
    await waitUntil(
      'every event received',
      () => {
        const got = received();
        return expected.every((e) => got.has(e.id));
      },
      60_000,
    );
    const allReceivedMs = Date.now() - killedUntil;
    // Every acknowledgement recorded: nothing is left to be sent again.
    await waitUntil(
      'every delivery acknowledged',
      async () =>
        (await ownerCommands.listWebhooks(fdb.owner, { workspaceId })).find((e) => e.id === endpoint.id)!.pending === 0,
      30_000,
    );
    await sleep(500); // a delivery sent after the last acknowledgement would show now

    // Deliveries the receiver got again after it had answered 2xx to the same webhook-id.
    const firstAcked = new Map<string, Delivery>();
    for (const d of receiver.acked()) if (!firstAcked.has(d.id)) firstAcked.set(d.id, d);
    const repeats = receiver.deliveries.filter((d) => {
      const acked = firstAcked.get(d.id);
      return acked !== undefined && d !== acked && d.receivedAt >= acked.answeredAt!;
    });
    const sentAgain = receiver.deliveries.length - received().size;
    const stderr = server.output().stderr;
    const workersRestarted = (stderr.match(/worker \d+ exited/g) ?? []).length;
    // The processes that logged an attempt (the lines are written asynchronously: not a count).
    const deliveringProcesses = new Set(
      server
        .output()
        .stdout.split('\n')
        .filter((line) => line.includes('"msg":"webhook attempt"'))
        .map((line) => (JSON.parse(line) as { pid: number }).pid),
    ).size;
    // 2xx answers given while the server's database traffic was held before a kill: their
    // acknowledgements were sent into connections about to be terminated.
    const answeredDuringStalls = receiver
      .acked()
      .filter((d) => kills.stalls.some(([from, to]) => d.answeredAt! >= from && d.answeredAt! <= to)).length;
    const figures = {
      events: expected.length,
      deliveries: receiver.deliveries.length,
      repeatsAfter2xx: repeats.length,
      eventsRepeatedAfter2xx: new Set(repeats.map((d) => d.id)).size,
      sentAgainInAll: sentAgain,
      killRounds: kills.rounds,
      sessionsTerminated: kills.terminated,
      answeredDuringStalls,
      writeAttempts: Object.fromEntries(statuses),
      longestWriteMs,
      deliveringProcesses,
      workersRestarted,
      writesMs,
      allReceivedAfterKillsMs: allReceivedMs,
      durationMs: Date.now() - startedAt,
    };
    report(t, figures);

    const state = processState(server);
    assert.ok(state.alive, `the server process must survive the kills; it ${state.description}`);
    assert.ok(
      kills.rounds >= 20 && kills.terminated >= kills.rounds,
      `kills: ${kills.rounds} rounds, ${kills.terminated} sessions`,
    );
    assert.ok(
      answeredDuringStalls >= 10,
      `only ${answeredDuringStalls} 2xx answers during a stall: the kills missed the acknowledgements`,
    );
    assert.deepEqual(
      receiver.deliveries.filter((d) => !d.verified).map((d) => d.id),
      [],
      'every delivery verifies with the endpoint secret',
    );
    assert.deepEqual(
      [...received()].sort(),
      expected.map((e) => e.id).sort(),
      'exactly the events of the feed were sent',
    );
    assert.deepEqual([...receiver.overlapping], [], 'no event was attempted by two processes at once');

    // Order per resource: no event arrives before the 2xx of the resource's event before it, and
    // none arrives (again) after a later event of its resource did.
    const byId = new Map<string, Delivery[]>();
    for (const d of receiver.deliveries) byId.set(d.id, [...(byId.get(d.id) ?? []), d]);
    const outOfOrder: string[] = [];
    for (const [resource, events] of perResource) {
      const ids = events.map((e) => e.id as string);
      for (let i = 1; i < ids.length; i++) {
        const earlier = byId.get(ids[i - 1]!)!;
        const later = byId.get(ids[i]!)!;
        const laterFirst = Math.min(...later.map((d) => d.receivedAt));
        const earlierAck = firstAcked.get(ids[i - 1]!)?.answeredAt;
        if (earlierAck == null || laterFirst < earlierAck || earlier.some((d) => d.receivedAt > laterFirst)) {
          outOfOrder.push(`${resource}: ${ids[i - 1]} / ${ids[i]}`);
        }
      }
    }
    assert.deepEqual(outOfOrder, [], 'each resource’s events arrive in feed order');

    assert.ok(
      repeats.length <= MAX_REPEAT_SHARE * expected.length,
      `${repeats.length} deliveries of ${expected.length} events came again after their 2xx`,
    );
  });
});
