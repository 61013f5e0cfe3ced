// Webhook delivery, measured end to end: a receiver in this process (it answers 204 at once), an
// endpoint of the write workspace, the service as a user runs it (one worker, default webhook
// settings: poll interval, concurrency, time limit).
//   throughput: the endpoint is disabled while a backlog of contact.created events is written (batch
//               upserts), then enabled; events per second from the enable to the last receipt.
//   latency:    single POSTs at a steady pace with the endpoint idle; for each, from the moment the
//               service's 201 arrived (its transaction had committed) to the receipt of its event.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/infra/database.js';
import { webhookCommands, type WebhookContext } from '../src/modules/webhooks/webhooks.service.js';
import { BENCH_ORIGIN } from './dataset.js';
import { percentile } from './load.js';
import type { Fixtures } from './fixtures.js';
import type { Server } from './processes.js';
import { BATCH_SIZE } from './settings.js';

export interface WebhookFigures {
  backlog_events: number;
  events_per_second: number;
  latency_writes: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  /** deliveries the receiver got more than once (a 2xx is never lost here: expected 0) */
  duplicates: number;
  poll_interval_ms: number;
  concurrency: number;
}

const BACKLOG = 5_000;
const LATENCY_WRITES = 200;
const LATENCY_PACE_MS = 50;
const WAIT_LIMIT_MS = 120_000;

interface Receipt {
  at: number;
  resourceId: string;
}

export async function measureWebhooks(
  db: Database,
  fixtures: Fixtures,
  writeWorkspaceId: string,
  service: Server,
  runId: string,
  log: (line: string) => void,
): Promise<WebhookFigures> {
  const receipts = new Map<string, Receipt>();
  let duplicates = 0;
  const receiver = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const at = performance.now();
      const id = String(request.headers['webhook-id']);
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resource_id: string };
      if (receipts.has(id)) duplicates++;
      else receipts.set(id, { at, resourceId: event.resource_id });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const config = loadConfig({});
  const ctx: WebhookContext = { db, webhooks: { timeoutMs: config.webhooks.timeoutMs, targets: 'public+loopback' } };
  const endpoint = await webhookCommands.createWebhook(ctx, {
    workspaceId: writeWorkspaceId,
    url,
    scopes: ['contacts:read'],
    events: ['contact.created'],
  });
  const write = { authorization: `Bearer ${fixtures.writeKey}`, 'content-type': 'application/json' };
  const until = async (done: () => boolean, what: string) => {
    const deadline = Date.now() + WAIT_LIMIT_MS;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`webhooks: ${what} not received within ${WAIT_LIMIT_MS} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  try {
    // Throughput: a backlog written while the endpoint is disabled, delivered once it is enabled.
    await webhookCommands.setWebhookStatus(ctx, { id: endpoint.id, status: 'disabled' });
    for (let n = 0; n < BACKLOG / BATCH_SIZE; n++) {
      const items = Array.from({ length: BATCH_SIZE }, (_, k) => ({
        external_id: `bench-${runId}-wh${n * BATCH_SIZE + k}`,
        name: 'Bench webhook',
        origin: BENCH_ORIGIN,
      }));
      const res = await fetch(`${service.url}/v2/contacts/batch/upsert`, {
        method: 'POST',
        headers: { ...write, 'idempotency-key': `bench-${runId}-wh-${n}` },
        body: JSON.stringify({ items }),
      });
      if (res.status !== 200) throw new Error(`webhooks: backlog batch ${res.status} ${await res.text()}`);
    }
    log(`webhooks: ${BACKLOG} events written while the endpoint was disabled; enabling it`);
    const enabledAt = performance.now();
    await webhookCommands.setWebhookStatus(ctx, { id: endpoint.id, status: 'active' });
    await until(() => receipts.size >= BACKLOG, `${BACKLOG} backlog events`);
    const lastAt = Math.max(...[...receipts.values()].map((r) => r.at));
    const eventsPerSecond = Math.round(BACKLOG / ((lastAt - enabledAt) / 1000));
    log(`webhooks: backlog delivered at ${eventsPerSecond} events/s`);

    // Latency: one write every LATENCY_PACE_MS, each timed from its answer to its event's receipt.
    const answered = new Map<string, number>();
    for (let i = 0; i < LATENCY_WRITES; i++) {
      const sent = performance.now();
      const res = await fetch(`${service.url}/v1/contacts`, {
        method: 'POST',
        headers: { ...write, 'idempotency-key': `bench-${runId}-whl-${i}` },
        body: JSON.stringify({
          name: 'Bench webhook latency',
          email: `wh.${runId}.${i}@example.com`,
          origin: BENCH_ORIGIN,
        }),
      });
      const at = performance.now();
      if (res.status !== 201) throw new Error(`webhooks: latency write ${res.status}`);
      answered.set(((await res.json()) as { data: { id: string } }).data.id, at);
      const rest = LATENCY_PACE_MS - (performance.now() - sent);
      if (rest > 0) await new Promise((r) => setTimeout(r, rest));
    }
    const receivedAt = () => new Map([...receipts.values()].map((r) => [r.resourceId, r.at]));
    await until(() => {
      const received = receivedAt();
      return [...answered.keys()].every((id) => received.has(id));
    }, 'latency events');
    const byResource = receivedAt();
    const latencies = [...answered].map(([id, at]) => byResource.get(id)! - at).sort((a, b) => a - b);
    return {
      backlog_events: BACKLOG,
      events_per_second: eventsPerSecond,
      latency_writes: LATENCY_WRITES,
      latency_p50_ms: Math.round(percentile(latencies, 0.5) * 10) / 10,
      latency_p99_ms: Math.round(percentile(latencies, 0.99) * 10) / 10,
      duplicates,
      poll_interval_ms: config.webhooks.pollIntervalMs,
      concurrency: config.webhooks.concurrency,
    };
  } finally {
    await webhookCommands.deleteWebhook(ctx, { id: endpoint.id }).catch(() => undefined);
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  }
}
