// Webhooks end to end, as an owner and an integrator meet them: real `serve` processes (on
// PostgreSQL `serve --workers 2` over a database of this file's own; on the embedded store the one
// process), the owner CLI as a child process, and a real local receiver that checks every signature
// with the `standardwebhooks` package and the secret the CLI printed. The receiver is healthy, then
// down (503), then flaky (500s and slow answers) while writers change contacts through the API and
// the owner deletes some; at the end every subscribed event is acknowledged, in each resource's
// feed order, and nothing acknowledged was sent again. Then: a process killed with SIGKILL in the
// middle of a delivery leaves nothing stuck, and the CLI's other webhook commands.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { contactBody, sleep, STORE } from './harness.js';
import { cleanUpProcesses, cli, startServer, stopServer, storeEnv, tempDir, type ServerProcess } from './processes.js';
import { ownPostgresDatabase, Receiver, waitFor, type Delivery } from './webhooks-support.js';

const WEBHOOK_ENV = {
  // Long enough in all (about 12 s) to outlast the receiver's outage; short enough to keep the test fast.
  WEBHOOK_RETRY_SCHEDULE: '200ms,400ms,800ms,1s,1s,1s,1s,1s,1s,1s,1s,1s',
  WEBHOOK_TIMEOUT_MS: '1500',
  WEBHOOK_POLL_INTERVAL_MS: '100',
};

let own: { url: string; drop(): Promise<void> } | null = null;
let dataDir: string;
let env: NodeJS.ProcessEnv;
let server: ServerProcess;
let receiver: Receiver;

before(async () => {
  dataDir = tempDir();
  if (STORE === 'postgres') own = await ownPostgresDatabase('wsapi_webhooks_proc');
  // The README's default deployment: no REDIS_URL (webhooks never use Redis; the writers' rate
  // limits are then counted in PostgreSQL by every worker).
  env = storeEnv(dataDir, {
    ...WEBHOOK_ENV,
    ...(own ? { DATABASE_URL: own.url } : {}),
    LOG_LEVEL: 'info',
    REDIS_URL: undefined,
    // the receiver is on this machine
    WEBHOOK_TARGETS: 'public+loopback',
  });
  receiver = await new Receiver().start();
  server = await startServer(env, STORE === 'postgres' ? ['--workers', '2'] : []);
});

after(async () => {
  await receiver?.close();
  await cleanUpProcesses();
  await own?.drop();
});

async function cliJson(args: string[], e: NodeJS.ProcessEnv = env): Promise<any> {
  const r = await cli([...args, '--json'], e);
  assert.equal(r.code, 0, `${args.slice(0, 2).join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function api(base: string, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': randomUUID() }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function workspaceWithKey(base: string) {
  const ws = await cliJson(['workspaces', 'create', '--name', `hooks-${randomUUID().slice(0, 8)}`]);
  const key = await cliJson([
    'keys',
    'create',
    '--workspace',
    ws.id,
    '--scopes',
    // every read scope too: the head it takes is then the workspace's clock, the position at
    // which an endpoint created next starts
    'workspace:read,contacts:read,contacts:write,appointments:read,catalog:read,conversations:read,messages:read,automations:read,events:read',
    '--name',
    'writer',
  ]);
  const head = (await api(base, 'GET', '/v2/events/head', key.key)).json.data.position as string;
  return { ws, key: key.key as string, head };
}

async function feed(base: string, key: string, afterId: string): Promise<any[]> {
  const events: any[] = [];
  let path = `/v2/events?limit=100&after=${afterId}`;
  for (;;) {
    const page = await api(base, 'GET', path, key);
    assert.equal(page.status, 200);
    events.push(...page.json.data);
    if (!page.json.page.has_more) return events;
    path = `/v2/events?limit=100&cursor=${page.json.page.next_cursor}`;
  }
}

const ackedOn = (path: string) => receiver.acked().filter((d) => d.path === path);

describe(`webhooks with real processes (${STORE === 'postgres' ? 'PostgreSQL, serve --workers 2' : 'embedded store'})`, () => {
  test('healthy, down, then flaky receiver under concurrent writers and owner deletions: every subscribed event acknowledged, in order per resource, once', async (t) => {
    const { ws, key, head } = await workspaceWithKey(server.baseUrl);
    const all = await cliJson([
      'webhooks',
      'create',
      '--workspace',
      ws.id,
      '--url',
      `${receiver.url}/all`,
      '--scopes',
      'contacts:read',
    ]);
    const some = await cliJson([
      'webhooks',
      'create',
      '--workspace',
      ws.id,
      '--url',
      `${receiver.url}/some`,
      '--scopes',
      'contacts:read',
      '--events',
      'contact.created,contact.deleted',
    ]);
    for (const e of [all, some]) {
      assert.match(e.secret, /^whsec_/);
      assert.equal(e.status, 'active');
    }
    assert.equal(all.events, null);
    assert.deepEqual(some.events, ['contact.created', 'contact.deleted']);
    receiver.secrets = [all.secret, some.secret];

    let phase: 'healthy' | 'down' | 'flaky' = 'healthy';
    receiver.answer = () => {
      if (phase === 'down') return { status: 503 };
      if (phase === 'flaky') {
        const dice = Math.random();
        if (dice < 0.3) return { status: 500 };
        // slow, but well within the 1.5 s limit: a 2xx the sender did not wait for would be sent again
        if (dice < 0.6) return { status: 200, delayMs: 50 + Math.floor(Math.random() * 250) };
      }
      return { status: 200 };
    };

    // Writers: three loops creating and renaming contacts through the API for four seconds, and
    // the owner deleting some of them with the CLI meanwhile.
    const created: string[] = [];
    const writingUntil = Date.now() + 4_000;
    const writer = async () => {
      while (Date.now() < writingUntil) {
        const c = await api(server.baseUrl, 'POST', '/v1/contacts', key, contactBody());
        assert.equal(c.status, 201);
        created.push(c.json.data.id);
        const target = created[Math.floor(Math.random() * created.length)]!;
        const u = await api(server.baseUrl, 'PATCH', `/v1/contacts/${target}`, key, { name: `n${Math.random()}` });
        assert.ok([200, 404].includes(u.status), `update: ${u.status}`);
        await sleep(30);
      }
    };
    const deleted: string[] = [];
    const owner = async () => {
      while (Date.now() < writingUntil) {
        await sleep(300);
        const victim = created[Math.floor(Math.random() * created.length)];
        if (!victim || deleted.includes(victim)) continue;
        deleted.push(victim);
        const r = await cli(['contacts', 'delete', victim], env);
        assert.equal(r.code, 0, r.stderr);
      }
    };
    const phases = (async () => {
      await sleep(1_000);
      phase = 'down';
      await sleep(1_500);
      phase = 'flaky';
      await sleep(1_500);
      phase = 'healthy';
    })();
    // Two owners: a CLI run opens the store itself on PostgreSQL, which takes a second or more.
    await Promise.all([writer(), writer(), writer(), owner(), owner(), phases]);
    assert.ok(deleted.length >= 2, `${deleted.length} deletions`);

    const reader = await cliJson([
      'keys',
      'create',
      '--workspace',
      ws.id,
      '--scopes',
      'events:read,contacts:read',
      '--name',
      'reader',
    ]);
    const expectedAll = await feed(server.baseUrl, reader.key, head);
    const expectedSome = expectedAll.filter((e) => ['contact.created', 'contact.deleted'].includes(e.type));
    assert.ok(expectedAll.length > 30, `${expectedAll.length} events`);
    assert.ok(expectedSome.some((e) => e.type === 'contact.deleted'));

    const complete = (path: string, expected: any[]) => {
      const acked = new Set(ackedOn(path).map((d) => d.id));
      return expected.every((e) => acked.has(e.id));
    };
    await waitFor(
      'every subscribed event acknowledged',
      () => complete('/all', expectedAll) && complete('/some', expectedSome),
      90_000,
    );
    await sleep(500); // anything sent after the last acknowledgement would show now

    const failures = receiver.deliveries.filter((d) => d.answered !== null && d.answered >= 500);
    assert.ok(failures.length > 0, 'the outage and the flaky phase failed some attempts');
    for (const [path, expected, secretIndex] of [
      ['/all', expectedAll, 0],
      ['/some', expectedSome, 1],
    ] as const) {
      const mine = receiver.deliveries.filter((d) => d.path === path);
      // Exactly the subscribed events: nothing else was ever sent.
      assert.deepEqual(
        [...new Set(mine.map((d) => d.id))].sort(),
        expected.map((e) => e.id).sort(),
        `${path}: the events sent are the subscribed ones`,
      );
      for (const d of mine) {
        assert.ok(d.verifiedBy[secretIndex], `${path}: ${d.id} verifies with standardwebhooks and the printed secret`);
        const body = JSON.parse(d.body);
        assert.equal(body.id, d.id, 'webhook-id is the event id');
        const event = expected.find((e) => e.id === d.id);
        assert.equal(body.type, event.type);
        assert.equal(body.resource_id, event.resource_id);
      }
      // Acknowledged once, and never sent again after its 2xx.
      const acked = ackedOn(path);
      assert.equal(acked.length, expected.length, `${path}: one 2xx per event`);
      for (const a of acked) {
        const later = mine.filter((d) => d.id === a.id && d.receivedAt > a.answeredAt!);
        assert.deepEqual(later, [], `${path}: ${a.id} was sent again after its 2xx`);
      }
      // Each resource's events were acknowledged in feed order.
      const byResource = new Map<string, string[]>();
      for (const e of expected) byResource.set(e.resource_id, [...(byResource.get(e.resource_id) ?? []), e.id]);
      for (const [resource, ids] of byResource) {
        const ackOrder = acked.filter((d) => JSON.parse(d.body).resource_id === resource).map((d) => d.id);
        assert.deepEqual(ackOrder, ids, `${path}: events of ${resource} acknowledged in feed order`);
      }
    }
    assert.deepEqual([...receiver.overlapping], [], 'no event was attempted by two processes at once');

    // Every answer was sent; the senders record the last acknowledgements just after.
    await waitFor('the acknowledgements recorded', async () =>
      (await cliJson(['webhooks', 'list', '--workspace', ws.id])).every((e: any) => e.pending === 0),
    );
    const listed = await cliJson(['webhooks', 'list', '--workspace', ws.id]);
    assert.deepEqual(
      listed.map((e: any) => [e.id, e.status, e.pending]),
      [
        [all.id, 'active', 0],
        [some.id, 'active', 0],
      ],
    );
    const history = await cliJson(['webhooks', 'deliveries', all.id, '--limit', '500']);
    assert.ok(history.attempts.some((a: any) => a.outcome === 'failed' && a.status === 503));
    assert.ok(history.attempts.some((a: any) => a.outcome === 'acked' && a.status === 200));
    // Log lines name the event and the endpoint; no secret appears in the logs or the list.
    const { stdout, stderr } = server.output();
    const attemptLines = stdout.split('\n').filter((l) => l.includes('"msg":"webhook attempt"'));
    assert.ok(attemptLines.length >= expectedAll.length);
    const sample = JSON.parse(attemptLines[0]!);
    assert.match(sample.event_id, /^evt_/);
    assert.ok([all.id, some.id].includes(sample.endpoint_id));
    const senders = new Set(attemptLines.map((l) => (JSON.parse(l) as { pid: number }).pid));
    if (STORE === 'postgres') assert.ok(senders.size >= 2, 'both workers delivered');
    t.diagnostic(
      `figures ${JSON.stringify({
        events: expectedAll.length,
        deletions: deleted.length,
        attempts: receiver.deliveries.length,
        failed_attempts: failures.length,
        sending_processes: senders.size,
      })}`,
    );
    const table = await cli(['webhooks', 'list', '--workspace', ws.id], env);
    for (const secret of [all.secret, some.secret]) {
      const body = secret.slice(6, 30);
      assert.ok(!stdout.includes(body) && !stderr.includes(body), 'no secret in the logs');
      assert.ok(!table.stdout.includes(body) && !JSON.stringify(listed).includes(body), 'no secret in the list');
    }
    for (const e of [all, some]) await cliJson(['webhooks', 'delete', e.id]);
  });

  test('a process killed mid-delivery: the delivery is sent again after its lease, and acknowledged once', async () => {
    await stopServer(server);
    const start = (e: NodeJS.ProcessEnv) => startServer(e, ['--workers', '1']);
    // The process to be killed gets a long time limit: killed while its attempt is still held, not
    // after the attempt ran out and was retried by the same process (starting the second process
    // can take longer than the suite's 1.5 s). Its lease is that limit + 5 s.
    const heldLimitMs = 8_000;
    let first = await start({ ...env, WEBHOOK_TIMEOUT_MS: String(heldLimitMs) });
    const { ws, key } = await workspaceWithKey(first.baseUrl);
    const endpoint = await cliJson([
      'webhooks',
      'create',
      '--workspace',
      ws.id,
      '--url',
      `${receiver.url}/kill`,
      '--scopes',
      'contacts:read',
    ]);
    receiver.secrets = [endpoint.secret];
    receiver.answer = (d) =>
      d.path === '/kill' && receiver.deliveries.filter((x) => x.path === '/kill').length === 1
        ? 'hold'
        : { status: 200 };
    // The lease starts when the delivery is claimed, after the contact's event has committed: never
    // before this request was sent.
    const writtenFrom = Date.now();
    const c = await api(first.baseUrl, 'POST', '/v1/contacts', key, contactBody());
    assert.equal(c.status, 201);
    await waitFor('the delivery held open', () => receiver.deliveries.some((d) => d.path === '/kill'));
    const held: Delivery = receiver.deliveries.find((d) => d.path === '/kill')!;
    // Another process is running when the first dies (on PostgreSQL; the embedded store is one
    // process, which is started again on the same data).
    let second: ServerProcess;
    if (STORE === 'postgres') {
      second = await start(env);
      first.proc.kill('SIGKILL');
      await first.exited;
    } else {
      first.proc.kill('SIGKILL');
      await first.exited;
      // The killed process's lock on DATA_DIR goes stale only after 15 s; it is known dead here.
      rmSync(`${dataDir}.lock`, { recursive: true, force: true });
      second = await start(env);
    }
    first = second;
    server = first;
    await waitFor(
      'the delivery sent again and acknowledged',
      () => ackedOn('/kill').some((d) => d.id === held.id),
      30_000,
    );
    const attempts = receiver.deliveries.filter((d) => d.path === '/kill' && d.id === held.id);
    assert.equal(attempts.length, 2, 'sent twice: the attempt cut by the kill, then once more');
    assert.ok(attempts.every((d) => d.verified));
    // The lease (time limit + 5 s) had to expire first: no one took it while it was held. Counted
    // from before the write, not from the first receipt, which a busy machine delays after the
    // claim; 10 ms for the store's millisecond rounding.
    assert.ok(
      attempts[1]!.receivedAt - writtenFrom >= heldLimitMs + 5_000 - 10,
      `retried after the lease: ${attempts[1]!.receivedAt - writtenFrom} ms after the write was sent (first ${held.receivedAt - writtenFrom})`,
    );
    await waitFor(
      'nothing stays pending',
      async () => (await cliJson(['webhooks', 'list', '--workspace', ws.id]))[0].pending === 0,
    );
  });

  test('the CLI: test, rotate-secret with both signatures, disable, enable, replay, deliveries, delete, usage errors', async () => {
    const { ws, key, head } = await workspaceWithKey(server.baseUrl);
    const path = '/cli';
    const endpoint = await cliJson([
      'webhooks',
      'create',
      '--workspace',
      ws.id,
      '--url',
      `${receiver.url}${path}`,
      '--scopes',
      'contacts:read',
    ]);
    receiver.secrets = [endpoint.secret];
    receiver.answer = () => ({ status: 200 });
    const test1 = await cli(['webhooks', 'test', endpoint.id], env);
    assert.equal(test1.code, 0, test1.stderr);
    assert.match(test1.stdout, /^test message test_[A-Za-z0-9_-]+: acked \(HTTP 200\) in \d+ ms\n$/);
    const sent = receiver.deliveries.at(-1)!;
    assert.ok(sent.verified);
    assert.equal(JSON.parse(sent.body).type, 'webhook.test');

    const rotated = await cliJson(['webhooks', 'rotate-secret', endpoint.id, '--grace', '1h']);
    assert.notEqual(rotated.secret, endpoint.secret);
    assert.ok(rotated.previous_secret_expires_at);
    receiver.secrets = [endpoint.secret, rotated.secret];
    await cliJson(['webhooks', 'test', endpoint.id]);
    assert.deepEqual(receiver.deliveries.at(-1)!.verifiedBy, [true, true], 'both secrets verify during the grace');
    // After a leak: --grace 0 and the old secret signs nothing more.
    const leaked = await cliJson(['webhooks', 'rotate-secret', endpoint.id, '--grace', '0']);
    receiver.secrets = [rotated.secret, leaked.secret];
    await cliJson(['webhooks', 'test', endpoint.id]);
    assert.deepEqual(receiver.deliveries.at(-1)!.verifiedBy, [false, true], 'only the new secret signs');

    const disabled = await cli(['webhooks', 'disable', endpoint.id], env);
    assert.equal(disabled.stdout, `webhook endpoint ${endpoint.id} is disabled\n`);
    const table = await cli(['webhooks', 'list', '--workspace', ws.id], env);
    assert.match(table.stdout, /disabled by the owner/);
    const c = await api(server.baseUrl, 'POST', '/v1/contacts', key, contactBody());
    await sleep(500);
    assert.equal(receiver.deliveries.filter((d) => d.path === path && d.id.startsWith('evt_')).length, 0);
    await cliJson(['webhooks', 'enable', endpoint.id]);
    await waitFor('delivered after enable', () => ackedOn(path).some((d) => d.id.startsWith('evt_')));
    const eventId = ackedOn(path).find((d) => d.id.startsWith('evt_'))!.id;
    assert.equal(JSON.parse(ackedOn(path).find((d) => d.id === eventId)!.body).resource_id, c.json.data.id);

    const replay = await cliJson(['webhooks', 'replay', endpoint.id, '--after', head]);
    assert.equal(replay.endpoint.status, 'active');
    await waitFor('replayed', () => ackedOn(path).filter((d) => d.id === eventId).length === 2);

    const deliveries = await cli(['webhooks', 'deliveries', endpoint.id], env);
    assert.equal(deliveries.code, 0);
    assert.match(deliveries.stdout, /ATTEMPTED_AT\s+EVENT\s+TYPE\s+OUTCOME\s+STATUS\s+DURATION\s+ERROR/);
    assert.ok(deliveries.stdout.includes(eventId));

    const refusals = await Promise.all([
      cli(['webhooks', 'replay', endpoint.id, '--after', 'evt_AAAAAAAAAAAAAAAAAAAAAA'], env),
      cli(['webhooks', 'create', '--workspace', ws.id, '--url', 'ftp://x/', '--scopes', 'contacts:read'], env),
      cli(['webhooks', 'enable', randomUUID()], env),
    ]);
    for (const r of refusals) {
      assert.equal(r.code, 1, r.stdout);
      assert.ok(r.stderr.startsWith('workspace-api: '));
    }
    const usage = await cli(['webhooks'], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /webhooks needs one of/);

    const gone = await cli(['webhooks', 'delete', endpoint.id], env);
    assert.equal(gone.code, 0);
    assert.deepEqual(await cliJson(['webhooks', 'list', '--workspace', ws.id]), []);
  });
});
