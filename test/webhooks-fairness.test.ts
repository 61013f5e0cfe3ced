// One workspace's webhook receivers cannot hold back another's deliveries. Workspace A has three
// endpoints whose receiver accepts every connection and never answers; one batch of 40 contacts
// in A gives them 120 deliveries, each of which holds its attempt for the whole time limit. Then
// workspace B's endpoint, which answers at once, must still receive each of B's changes within a
// second. Real `serve` processes with the README's default delivery settings (on PostgreSQL
// `serve --workers 2` over a database of this file's own; on the embedded store the one process).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { contactBody, sleep, STORE } from './harness.js';
import { cleanUpProcesses, cli, startServer, storeEnv, tempDir, type ServerProcess } from './processes.js';
import { ownPostgresDatabase, Receiver, waitFor, type Delivery } from './webhooks-support.js';

let own: { url: string; drop(): Promise<void> } | null = null;
let env: NodeJS.ProcessEnv;
let server: ServerProcess;
let receiver: Receiver;

before(async () => {
  if (STORE === 'postgres') own = await ownPostgresDatabase('wsapi_webhooks_fair');
  env = storeEnv(tempDir(), {
    ...(own ? { DATABASE_URL: own.url } : {}),
    REDIS_URL: undefined,
    // the receiver is on this machine
    WEBHOOK_TARGETS: 'public+loopback',
  });
  receiver = await new Receiver().start();
  receiver.answer = (d) =>
    d.path.startsWith('/hang/') ? 'hold' : d.path === '/steady' ? { status: 204, delayMs: 5 } : { status: 204 };
  server = await startServer(env, STORE === 'postgres' ? ['--workers', '2'] : []);
});

after(async () => {
  await receiver?.close();
  await cleanUpProcesses();
  await own?.drop();
});

async function cliJson(args: string[]): Promise<any> {
  const r = await cli([...args, '--json'], env);
  assert.equal(r.code, 0, `${args.slice(0, 2).join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function post(path: string, key: string, body: unknown): Promise<any> {
  const res = await fetch(server.baseUrl + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  assert.ok(res.status < 300, `${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function workspaceWithEndpoints(paths: string[]): Promise<{ key: string; endpoints: string[] }> {
  const ws = await cliJson(['workspaces', 'create', '--name', `fair-${randomUUID().slice(0, 8)}`]);
  const { key } = await cliJson(['keys', 'create', '--workspace', ws.id, '--scopes', 'contacts:write', '--name', 'w']);
  const endpoints: string[] = [];
  for (const path of paths) {
    const e = await cliJson([
      'webhooks',
      'create',
      '--workspace',
      ws.id,
      '--url',
      receiver.url + path,
      '--scopes',
      'contacts:read',
    ]);
    endpoints.push(e.id);
  }
  return { key, endpoints };
}

/** The most attempts of `deliveries` in flight at one time (received, not yet closed). */
function peakInFlight(deliveries: Delivery[], now: number): number {
  const edges = deliveries.flatMap((d) => [
    { at: d.receivedAt, step: 1 },
    { at: d.closedAt ?? now, step: -1 },
  ]);
  edges.sort((x, y) => x.at - y.at || x.step - y.step);
  let open = 0;
  let peak = 0;
  for (const e of edges) peak = Math.max(peak, (open += e.step));
  return peak;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

describe(`fair webhook delivery (${STORE === 'postgres' ? 'PostgreSQL, serve --workers 2' : 'embedded store'}, default settings)`, () => {
  test("three endpoints of one workspace that never answer do not delay another workspace's deliveries", async (t) => {
    const hostile = await workspaceWithEndpoints(['/hang/1', '/hang/2', '/hang/3']);
    const prompt = await workspaceWithEndpoints(['/prompt']);

    const items = Array.from({ length: 40 }, (_, i) => ({ external_id: `h-${i}`, name: `Hostile ${i}` }));
    await post('/v2/contacts/batch/upsert', hostile.key, { items });
    // The hostile endpoints hold every attempt they get: wait until they hold all they may.
    await waitFor('the hanging endpoints to receive attempts', () =>
      receiver.deliveries.some((d) => d.path.startsWith('/hang/')),
    );
    await sleep(1_000);

    const written = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      const { data } = await post('/v2/contacts', prompt.key, contactBody({ name: `Prompt ${i}` }));
      written.set(data.id, Date.now());
      await sleep(150);
    }
    const receivedAt = (id: string) =>
      receiver.deliveries.find((d) => d.path === '/prompt' && JSON.parse(d.body).resource_id === id)?.receivedAt;
    await waitFor(
      'every change of the prompt workspace to arrive',
      () => [...written.keys()].every((id) => receivedAt(id) !== undefined),
      20_000,
    );

    const latencies = [...written].map(([id, at]) => Math.max(0, receivedAt(id)! - at)).sort((x, y) => x - y);
    const hanging = receiver.deliveries.filter((d) => d.path.startsWith('/hang/'));
    const now = Date.now();
    const figures = {
      promptLatencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) },
      hangingAttempts: hanging.length,
      peakInFlightPerHangingEndpoint: ['/hang/1', '/hang/2', '/hang/3'].map((p) =>
        peakInFlight(
          hanging.filter((d) => d.path === p),
          now,
        ),
      ),
      peakInFlightHostileWorkspace: peakInFlight(hanging, now),
    };
    t.diagnostic(`figures ${JSON.stringify(figures)}`);
    assert.ok(
      figures.promptLatencyMs.p99 <= 1_000,
      `prompt workspace p99 ${figures.promptLatencyMs.p99} ms: ${latencies.join(' ')}`,
    );
    // The caps of the README's defaults: 4 per endpoint, 4 per workspace, across every process.
    assert.ok(
      figures.peakInFlightHostileWorkspace <= 4,
      `hostile workspace held ${figures.peakInFlightHostileWorkspace} attempts at once`,
    );
    assert.ok(figures.peakInFlightHostileWorkspace >= 1);
  });
  test('a backlog to an endpoint that answers goes out in runs from both processes, never more than 4 attempts at once', async (t) => {
    const steady = await workspaceWithEndpoints(['/steady']);
    const batches = 6;
    for (let b = 0; b < batches; b++) {
      const items = Array.from({ length: 100 }, (_, i) => ({ external_id: `s-${b}-${i}`, name: `Steady ${b}-${i}` }));
      await post('/v2/contacts/batch/upsert', steady.key, { items });
    }
    const received = () => receiver.deliveries.filter((d) => d.path === '/steady');
    await waitFor(
      'every event of the backlog to arrive',
      () => new Set(received().map((d) => d.id)).size === batches * 100,
      30_000,
    );
    await waitFor('every attempt to be answered', () => received().every((d) => d.closedAt !== null), 5_000);

    const deliveries = received();
    const figures = {
      attempts: deliveries.length,
      distinct: new Set(deliveries.map((d) => d.id)).size,
      peakInFlight: peakInFlight(deliveries, Date.now()),
      spanMs: Math.max(...deliveries.map((d) => d.receivedAt)) - Math.min(...deliveries.map((d) => d.receivedAt)),
    };
    t.diagnostic(`figures ${JSON.stringify(figures)}`);
    assert.equal(figures.attempts, figures.distinct, 'each event sent once');
    // WEBHOOK_ENDPOINT_CONCURRENCY's default, across both processes, while slots take their next runs.
    assert.ok(figures.peakInFlight <= 4, `${figures.peakInFlight} attempts at once`);
    assert.ok(figures.peakInFlight >= 2, 'the backlog went out in several slots side by side');
  });
});
