// `npm run bench:webhooks` (and a step of `npm run bench`): webhook delivery measured end to end, on
// a database of its own made anew by every run. A receiver in this process answers 204 at once; an
// endpoint of one workspace points at it; the service runs as a user runs it (one worker, the
// default webhook settings, loopback targets allowed for the receiver).
//   latency:  single POSTs at a steady pace with the endpoint idle; for each, from the moment the
//             service's 201 arrived (its transaction had committed) to the receipt of its event.
//   backlog:  the endpoint is disabled while BACKLOG contact.created events are written (batch
//             upserts), then enabled; events per second from the enable to the last receipt. A
//             first backlog of WARM_UP events goes before it, reported apart: the first second of
//             a process's first backlog runs at about half speed while V8 compiles the path.
//   drain:    the same with DRAIN events (written by SQL statements, the store's triggers making the
//             events); receipts counted second by second from the enable, so a slow start (or a
//             stall halfway) shows as its slowest second.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import prettier from 'prettier';
import { loadConfig } from '../src/config.js';
import { createPostgresDatabase } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { webhookCommands, type WebhookContext } from '../src/modules/webhooks/webhooks.service.js';
import { BENCH_ORIGIN, withAdmin } from './dataset.js';
import { percentile } from './load.js';
import { ROOT, runAsScript, type Server } from './processes.js';
import { recordRun } from './report.js';
import { startService } from './service.js';
import { BATCH_SIZE } from './settings.js';

export interface WebhookFigures {
  date: string;
  machine: { cores: number; memory_gib: number; node: string; postgresql: string };
  latency_writes: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  /** the process's first backlog, delivered while its code is still being compiled (not a target) */
  warm_up_events: number;
  warm_up_events_per_second: number;
  backlog_events: number;
  backlog_events_per_second: number;
  drain_events: number;
  /** receipts in each whole second from the enable (the last, partial second left out) */
  drain_per_second: number[];
  drain_first_second: number;
  drain_slowest_second: number;
  drain_events_per_second: number;
  /** deliveries the receiver got more than once (nothing fails here: expected 0) */
  duplicates: number;
  settings: { poll_interval_ms: number; concurrency: number; endpoint_concurrency: number };
  total_seconds: number;
}

export const TARGETS = { latencyP50Ms: 50, backlogEventsPerSecond: 3_000, drainEventsPerSecond: 1_000 } as const;

const LATENCY_WRITES = 200;
const LATENCY_PACE_MS = 50;
/** A first backlog, before the measured one: the process compiles its delivery path meanwhile. */
const WARM_UP = 2_000;
const BACKLOG = 5_000;
const DRAIN = 100_000;
/** Contacts per statement of the drain's backlog. */
const SQL_BATCH = 5_000;
/** Batch upserts in flight while a backlog is written. */
const WRITERS = 4;
const WAIT_LIMIT_MS = 300_000;
// Quota far above anything a run sends: no request of the benchmark may be a 429.
const RATE_LIMIT_PER_MINUTE = 100_000_000;

export const webhooksDatabaseUrl = () =>
  process.env.BENCH_WEBHOOKS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/workspace_api_webhooks';

/** Runs the measurements, writes their results, and returns the markdown it wrote. */
export async function runWebhookBench(redisUrl: string, log: (line: string) => void): Promise<string> {
  const figures = await measureWebhooks(webhooksDatabaseUrl(), redisUrl, log);
  mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
  writeFileSync(join(ROOT, 'bench-results/webhooks.json'), `${JSON.stringify(figures, null, 2)}\n`);
  const markdown = renderWebhookMarkdown(figures);
  await recordRun('webhooks', figures.date, markdown, {
    performance: join(ROOT, 'docs/performance.md'),
    results: join(ROOT, 'bench/results'),
  });
  const style = (await prettier.resolveConfig(join(ROOT, 'docs/performance.md'))) ?? {};
  process.stdout.write(`\n${await prettier.format(markdown, { ...style, parser: 'markdown' })}\n`);
  log('written: bench-results/webhooks.json, the run in bench/results/ and docs/performance.md');
  return markdown;
}

interface Receipt {
  at: number;
  resourceId: string;
}

export async function measureWebhooks(
  databaseUrl: string,
  redisUrl: string,
  log: (line: string) => void,
): Promise<WebhookFigures> {
  const started = performance.now();
  const postgresql = await withAdmin(databaseUrl, async (client, name) => {
    log(`webhooks: creating database ${name} anew`);
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    return (await client.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]!.v;
  });
  const db = createPostgresDatabase(databaseUrl, 2);
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
  let service: Server | null = null;
  try {
    await migrate(db, GENERATED_DATABASE_CODE);
    const workspace = await ownerCommands.createWorkspace({ db, defaultRateLimitPerMinute: 600 }, { name: 'webhooks' });
    const { key } = await ownerCommands.createKey(
      { db, defaultRateLimitPerMinute: RATE_LIMIT_PER_MINUTE },
      {
        workspaceId: workspace.id,
        name: 'bench',
        scopes: ['contacts:write'],
        rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
      },
    );
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const config = loadConfig({});
    const ctx: WebhookContext = { db, webhooks: { timeoutMs: config.webhooks.timeoutMs, targets: 'public+loopback' } };
    const endpoint = await webhookCommands.createWebhook(ctx, {
      workspaceId: workspace.id,
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
      scopes: ['contacts:read'],
      events: ['contact.created'],
    });
    service = await startService({ databaseUrl, redisUrl, workers: 1, logLevel: 'warn', name: 'service, webhooks' });
    const url = service.url;
    const write = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const until = async (done: () => boolean, what: string) => {
      const deadline = Date.now() + WAIT_LIMIT_MS;
      while (!done()) {
        if (Date.now() > deadline) throw new Error(`webhooks: ${what} not received within ${WAIT_LIMIT_MS} ms`);
        await new Promise((r) => setTimeout(r, 5));
      }
    };

    // Latency: one write every LATENCY_PACE_MS, each timed from its answer to its event's receipt.
    log(`webhooks: latency, ${LATENCY_WRITES} writes one per ${LATENCY_PACE_MS} ms`);
    const answered = new Map<string, number>();
    for (let i = 0; i < LATENCY_WRITES; i++) {
      const sent = performance.now();
      const res = await fetch(`${url}/v1/contacts`, {
        method: 'POST',
        headers: { ...write, 'idempotency-key': `latency-${i}` },
        body: JSON.stringify({ name: 'Bench webhook latency', email: `wh.${i}@example.com`, origin: BENCH_ORIGIN }),
      });
      const at = performance.now();
      if (res.status !== 201) throw new Error(`webhooks: latency write ${res.status} ${await res.text()}`);
      answered.set(((await res.json()) as { data: { id: string } }).data.id, at);
      const rest = LATENCY_PACE_MS - (performance.now() - sent);
      if (rest > 0) await new Promise((r) => setTimeout(r, rest));
    }
    const receivedAt = () => new Map([...receipts.values()].map((r) => [r.resourceId, r.at]));
    await until(() => receipts.size >= LATENCY_WRITES, 'latency events');
    const byResource = receivedAt();
    const latencies = [...answered].map(([id, at]) => byResource.get(id)! - at).sort((a, b) => a - b);

    // A backlog written while the endpoint is disabled, delivered once it is enabled.
    const backlog = async (size: number, label: string, through: 'api' | 'sql') => {
      await webhookCommands.setWebhookStatus(ctx, { id: endpoint.id, status: 'disabled' });
      const before = receipts.size;
      if (through === 'sql') {
        // The same rows and events as the API writes (the store's triggers make the events), a
        // statement per SQL_BATCH contacts: a backlog of this size through the API would take
        // minutes of this machine's two cores before the measurement starts.
        for (let n = 0; n < size; n += SQL_BATCH) {
          await db.query(
            `INSERT INTO contacts (workspace_id, external_id, name, origin)
             SELECT $1, $2 || g, 'Bench webhook', $3 FROM generate_series($4::int, $5::int) g`,
            [workspace.id, `${label}-`, BENCH_ORIGIN, n, Math.min(n + SQL_BATCH, size) - 1],
          );
        }
      }
      let next = through === 'api' ? 0 : size;
      const writer = async () => {
        for (let n = next++; n < size / BATCH_SIZE; n = next++) {
          const items = Array.from({ length: BATCH_SIZE }, (_, k) => ({
            external_id: `${label}-${n * BATCH_SIZE + k}`,
            name: 'Bench webhook',
            origin: BENCH_ORIGIN,
          }));
          const res = await fetch(`${url}/v2/contacts/batch/upsert`, {
            method: 'POST',
            headers: { ...write, 'idempotency-key': `webhooks-${label}-${n}` },
            body: JSON.stringify({ items }),
          });
          if (res.status !== 200) throw new Error(`webhooks: backlog batch ${res.status} ${await res.text()}`);
        }
      };
      await Promise.all(Array.from({ length: WRITERS }, writer));
      log(`webhooks: ${size.toLocaleString('en')} events written while the endpoint was disabled; enabling it`);
      const enabledAt = performance.now();
      await webhookCommands.setWebhookStatus(ctx, { id: endpoint.id, status: 'active' });
      await until(() => receipts.size >= before + size, `${size} backlog events`);
      const times = [...receipts.values()].slice(before).map((r) => r.at - enabledAt);
      const seconds = Math.max(...times) / 1000;
      const perSecond: number[] = Array.from({ length: Math.floor(seconds) }, () => 0);
      for (const t of times) if (t < perSecond.length * 1000) perSecond[Math.floor(t / 1000)]!++;
      const perTenth: number[] = Array.from({ length: Math.ceil(seconds * 10) }, () => 0);
      for (const t of times) perTenth[Math.min(perTenth.length - 1, Math.floor(t / 100))]!++;
      return { rate: Math.round(size / seconds), perSecond, perTenth };
    };
    log(`webhooks: warm-up backlog of ${WARM_UP.toLocaleString('en')}`);
    const warmUp = await backlog(WARM_UP, 'warm-up', 'api');
    log(`webhooks: warm-up backlog delivered at ${warmUp.rate} events/s; by 100 ms: ${warmUp.perTenth.join(' ')}`);
    log(`webhooks: backlog of ${BACKLOG.toLocaleString('en')}`);
    const small = await backlog(BACKLOG, 'backlog', 'api');
    log(`webhooks: backlog delivered at ${small.rate} events/s; by 100 ms: ${small.perTenth.join(' ')}`);
    log(`webhooks: drain of ${DRAIN.toLocaleString('en')}`);
    const drain = await backlog(DRAIN, 'drain', 'sql');
    log(`webhooks: drained at ${drain.rate} events/s; by second: ${drain.perSecond.join(' ')}`);
    const cfg = config.webhooks;
    return {
      date: new Date().toISOString(),
      machine: {
        cores: availableParallelism(),
        memory_gib: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        postgresql,
      },
      latency_writes: LATENCY_WRITES,
      latency_p50_ms: Math.round(percentile(latencies, 0.5) * 10) / 10,
      latency_p99_ms: Math.round(percentile(latencies, 0.99) * 10) / 10,
      warm_up_events: WARM_UP,
      warm_up_events_per_second: warmUp.rate,
      backlog_events: BACKLOG,
      backlog_events_per_second: small.rate,
      drain_events: DRAIN,
      drain_per_second: drain.perSecond,
      drain_first_second: drain.perSecond[0] ?? DRAIN,
      drain_slowest_second: drain.perSecond.length ? Math.min(...drain.perSecond) : DRAIN,
      drain_events_per_second: drain.rate,
      duplicates,
      settings: {
        poll_interval_ms: cfg.pollIntervalMs,
        concurrency: cfg.concurrency,
        endpoint_concurrency: cfg.endpointConcurrency,
      },
      total_seconds: Math.round((performance.now() - started) / 1000),
    };
  } finally {
    await service?.stop();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
    await db.close();
  }
}

const fmt = (n: number) => n.toLocaleString('en');

export function renderWebhookMarkdown(f: WebhookFigures): string {
  const met = (ok: boolean) => (ok ? 'met' : '**not met**');
  const rows: [string, string, string][] = [
    [
      `from a write's 201 to the receipt of its event, p50 (${f.latency_writes} writes, one per ${LATENCY_PACE_MS} ms)`,
      `${f.latency_p50_ms} ms`,
      `≤ ${TARGETS.latencyP50Ms} ms: ${met(f.latency_p50_ms <= TARGETS.latencyP50Ms)}`,
    ],
    ['the same, p99', `${f.latency_p99_ms} ms`, ''],
    [
      `backlog of ${fmt(f.backlog_events)} contact.created events, from enable to the last receipt`,
      `${fmt(f.backlog_events_per_second)} events/s`,
      `≥ ${fmt(TARGETS.backlogEventsPerSecond)}: ${met(f.backlog_events_per_second >= TARGETS.backlogEventsPerSecond)}`,
    ],
    [
      `the same for the process's first backlog (${fmt(f.warm_up_events)} events, delivered before the one above)`,
      `${fmt(f.warm_up_events_per_second)} events/s`,
      '',
    ],
    [
      `backlog of ${fmt(f.drain_events)}: the first second after enable`,
      `${fmt(f.drain_first_second)} events`,
      `≥ ${fmt(TARGETS.drainEventsPerSecond)}: ${met(f.drain_first_second >= TARGETS.drainEventsPerSecond)}`,
    ],
    [
      'the same: its slowest whole second',
      `${fmt(f.drain_slowest_second)} events`,
      `≥ ${fmt(TARGETS.drainEventsPerSecond)}: ${met(f.drain_slowest_second >= TARGETS.drainEventsPerSecond)}`,
    ],
    ['the same: from enable to the last receipt', `${fmt(f.drain_events_per_second)} events/s`, ''],
    ['events received more than once', String(f.duplicates), '0'],
  ];
  const table = [
    '| webhook delivery to a receiver on this machine | figure | target |',
    '| --- | --- | --- |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
  return [
    `Run of ${f.date}: ${f.machine.cores} cores, ${f.machine.memory_gib} GiB, Node.js ${f.machine.node}, ` +
      `PostgreSQL ${f.machine.postgresql}; one service process with the default webhook settings ` +
      `(${f.settings.concurrency} attempts at once per process, ${f.settings.endpoint_concurrency} per endpoint, ` +
      `a poll every ${fmt(f.settings.poll_interval_ms)} ms besides the wake-ups on commit). Whole run: ${f.total_seconds} s.`,
    '',
    table,
  ].join('\n');
}

runAsScript(import.meta.url, 'bench:webhooks', async (log) => {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(
      'Usage: npm run bench:webhooks\n\nEnvironment: BENCH_WEBHOOKS_DATABASE_URL (default ' +
        'postgres://postgres@127.0.0.1:5432/workspace_api_webhooks), dropped and created anew by every run;\n' +
        'BENCH_REDIS_URL (default redis://127.0.0.1:6379).\n',
    );
    return;
  }
  await runWebhookBench(process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', log);
});
