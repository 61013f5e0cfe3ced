// `npm run bench`: prepares the dataset (or reuses it), starts the service (one worker and two) and
// the baselines, each a process of its own with the load generator in this one, measures them, and
// writes the report (stdout, bench-results/latest.json, its file in bench/results/, and
// docs/performance.md). Every process it starts is stopped before it exits, whether the run
// succeeds, fails or is interrupted. Last, the noisy-neighbour scenario (bench/noisy-neighbour.ts)
// runs on servers and a database of its own.
//
// The repetitions are interleaved: round 1 measures every scenario once, then round 2, and so on.
// Other work on this shared machine comes and goes; interleaved, a burst of it lands on one
// repetition of many scenarios instead of every repetition of one, and the medians (and the
// ratios between them) stay comparable. Servers not being measured sit idle meanwhile.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Database } from '../src/infra/database.js';
import { openDataset, type Dataset } from './dataset.js';
import { prepareFixtures, type Fixtures } from './fixtures.js';
import { measureAlternating, measureOnce, summarize, type Repetition, type Scenario } from './load.js';
import { pgbenchOnce } from './pgbench.js';
import { freePort, memoryOf, ROOT, rssMiB, startServer, stopAll, type Server } from './processes.js';
import { startService } from './service.js';
import { cpuProbe } from './cpu.js';
import { measureEmbeddedMemory } from './embedded.js';
import { buildReport, writeResults, type Measured } from './report.js';
import { bareWriteScenario, serviceScenarios, verifyService } from './scenarios.js';
import { runWebhookBench } from './webhooks.js';
import { noisyDatabaseUrl, runNoisyNeighbour } from './noisy-neighbour.js';
import { CONNECTIONS, parseOptions, POOL_SIZE, type RunOptions } from './settings.js';

const started = Date.now();
const SETTLE_MS = 500;
const log = (line: string) =>
  process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (!options) return;
  // Interrupted (Ctrl-C, a CI timeout): the servers go with us.
  const interrupted = () => void stopAll().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  const scratch = mkdtempSync(join(tmpdir(), 'bench-'));
  let db: Database | null = null;
  try {
    const opened = await openDataset(options.databaseUrl, options.reset, log);
    db = opened.db;
    const fixtures = await prepareFixtures(db, opened.dataset);
    const postgresql = (await db.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]!.v;
    const { rows: window } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM appointments
        WHERE workspace_id = $1 AND starts_at >= $2::timestamptz AND starts_at <= $3::timestamptz`,
      [opened.dataset.big_workspace_id, fixtures.window.after, fixtures.window.before],
    );

    const { measured, memory, bareListIdentical } = await measureEverything(
      options,
      db,
      fixtures,
      opened.dataset,
      scratch,
    );
    log('embedded store: seeding a workspace, then memory at idle and under the list load');
    const embedded = await measureEmbeddedMemory(scratch, options.duration);
    const report = buildReport(measured, {
      embedded,
      date: new Date().toISOString(),
      machine: {
        cores: availableParallelism(),
        memory_gib: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        postgresql,
      },
      settings: {
        connections: CONNECTIONS,
        pool_size: POOL_SIZE,
        duration: options.duration,
        repetitions: options.repetitions,
        warmup: options.warmup,
      },
      dataset: { ...opened.dataset, loaded_this_run: opened.loaded },
      appointments_in_window: window[0]!.n,
      bare_list_identical: bareListIdentical,
      memory,
      total_seconds: (Date.now() - started) / 1000,
    });
    const markdown = await writeResults(report, {
      json: join(ROOT, 'bench-results/latest.json'),
      performance: join(ROOT, 'docs/performance.md'),
      scaling: join(ROOT, 'docs/scaling.md'),
      results: join(ROOT, 'bench/results'),
    });
    process.stdout.write(`\n${markdown}\n\n`);
    log(
      'written: bench-results/latest.json, the run in bench/results/ and docs/performance.md, the sizing in docs/scaling.md',
    );
    // Then webhook delivery (bench/webhooks.ts) on a database of its own.
    log('webhooks: write-to-receipt latency, a backlog, a drain of a re-enabled endpoint');
    await runWebhookBench(options.redisUrl, log);
    // Last, one workspace's heaviest requests beside another's list (bench/noisy-neighbour.ts), with
    // the run's duration, repetitions and warm-up, on servers and a database of its own.
    log('noisy neighbour: workspace B alone and beside workspace A, on PostgreSQL and on the embedded store');
    await runNoisyNeighbour(
      {
        duration: options.duration,
        repetitions: options.repetitions,
        warmup: options.warmup,
        databaseUrl: noisyDatabaseUrl(),
      },
      log,
    );
  } finally {
    await stopAll();
    await db?.close();
    rmSync(scratch, { recursive: true, force: true });
  }
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

type Key = keyof Measured;

/** What one entry of a round measures: an HTTP scenario, GET paths in turn on one connection, or pgbench. */
type Planned =
  | { key: Key; label: string; server: Server; scenario: Scenario }
  | {
      keys: readonly [Key, Key];
      labels: readonly [string, string];
      server: Server;
      headers: Record<string, string>;
      paths: readonly [string, string];
    }
  | { key: Key; label: string; pgbench: { workspaceId: string; clients: number } };

interface Result {
  key: Key;
  label: string;
  connections: number;
  repetition: Repetition;
}

async function measureEverything(
  options: RunOptions,
  db: Database,
  fixtures: Fixtures,
  dataset: Dataset,
  scratch: string,
) {
  const runId = randomBytes(4).toString('hex');
  const s = serviceScenarios(fixtures, runId);
  const loadGeneratorBefore = rssMiB(process.pid);

  // Each list is measured on a process that serves nothing else, the bare route too: a process
  // that also served the other scenarios carries their compiled code and garbage, and spends about
  // a third more CPU per page than the same build serving only the list.
  const service = (workers: number, deployment: 'tuned' | 'default', purpose: string) => {
    const name = `service, ${workers === 1 ? '1 worker' : `${workers} workers`}${deployment === 'default' ? ', the README defaults' : ''}, ${purpose}`;
    log(`starting ${name}`);
    return startService({
      databaseUrl: options.databaseUrl,
      redisUrl: deployment === 'tuned' ? options.redisUrl : null,
      workers,
      logLevel: deployment === 'tuned' ? 'warn' : 'info',
      name,
    });
  };
  // Tuned: LOG_LEVEL=warn and the rate-limit counts in Redis.
  const list = await service(1, 'tuned', 'the list');
  // The deployment a user gets from the README: LOG_LEVEL=info (a line per request), no REDIS_URL
  // (the rate-limit counts in PostgreSQL).
  const listInfo = await service(1, 'default', 'the list');
  const two = await service(2, 'tuned', 'the list');
  const one = await service(1, 'tuned', 'every other request');
  const listBody = await verifyService(one.url, s, fixtures, runId);
  const bare = (purpose: string) =>
    startBaseline(`bare Fastify, ${purpose}`, 'bench/baseline-fastify.ts', {
      DATABASE_URL: options.databaseUrl,
      POOL_SIZE: String(POOL_SIZE),
      LIST_WORKSPACE_ID: dataset.big_workspace_id,
      WRITE_WORKSPACE_ID: dataset.write_workspace_id,
    });
  const fastifyList = await bare('the list');
  const fastify = await bare('the transaction');
  const bareBody = await fetch(`${fastifyList.url}/contacts`, { signal: AbortSignal.timeout(30_000) });
  // The same items, byte for byte; the bare route's cursor is its own (bench/baseline-fastify.ts).
  const items = (body: string) => body.slice(0, body.indexOf(',"page":'));
  const bareListIdentical = items(await bareBody.text()) === items(listBody);
  const bodyFile = join(scratch, 'list-body.json');
  writeFileSync(bodyFile, listBody);
  const http = await startBaseline('bare node:http', 'bench/baseline-http.ts', { BODY_FILE: bodyFile });
  const servers = [list, listInfo, two, one, fastifyList, fastify, http];
  const memory = servers.map(memoryOf);

  // In each round, what a target compares is measured one after the other (the service's list at
  // both log levels beside the bare route, each write beside the bare transaction): the report
  // compares the figures of a round with each other (bench/report.ts). Each group runs in its
  // order in odd rounds and in reverse in even ones, so that whatever the first of a pair meets
  // (a cooler cache, a machine still busy with the entry before) falls on each side as often.
  const plan: Planned[][] = [
    [
      { key: 'list', label: 'GET /v1/contacts?limit=50', server: list, scenario: s.list },
      {
        key: 'bareList',
        label: 'bare Fastify list',
        server: fastifyList,
        scenario: { ...s.list, path: '/contacts', headers: {} },
      },
      { key: 'listInfo', label: 'GET /v1/contacts?limit=50, README defaults', server: listInfo, scenario: s.list },
    ],
    [
      { key: 'bareHttp', label: 'bare node:http', server: http, scenario: { ...s.list, headers: {} } },
      {
        key: 'pgbench',
        label: 'pgbench, same SQL',
        pgbench: { workspaceId: dataset.big_workspace_id, clients: POOL_SIZE },
      },
      { key: 'listTwoWorkers', label: 'GET /v1/contacts?limit=50, 2 workers', server: two, scenario: s.list },
      { key: 'get', label: 'GET /v1/contacts/{id}', server: one, scenario: s.get },
      { key: 'lookup', label: 'GET /v2/contacts?email=…', server: one, scenario: s.lookup },
      { key: 'appointments', label: 'GET /v1/appointments, 7-day window', server: one, scenario: s.appointments },
      { key: 'events', label: 'GET /v2/events?limit=100', server: one, scenario: s.events },
    ],
    [
      { key: 'create', label: 'POST /v1/contacts', server: one, scenario: s.create },
      { key: 'bareWrite', label: 'bare Fastify transaction', server: fastify, scenario: bareWriteScenario(runId) },
      { key: 'upsert', label: 'PUT /v1/contacts/external/{id}', server: one, scenario: s.upsert },
    ],
    [
      { key: 'replay', label: 'POST /v1/contacts, replay', server: one, scenario: s.replay },
      { key: 'batch', label: 'POST /v2/contacts/batch/upsert', server: one, scenario: s.batch },
      {
        keys: ['firstPage', 'deepPage'],
        labels: ['contacts page 1 (in turn with page 10,001)', 'contacts page 10,001 (in turn with page 1)'],
        server: one,
        headers: s.growth.headers,
        paths: s.growth.contacts,
      },
      {
        keys: ['eventsFirst', 'eventsLast'],
        labels: ['events first page (in turn with the last)', 'events last page (in turn with the first)'],
        server: one,
        headers: s.growth.headers,
        paths: s.growth.events,
      },
    ],
  ];
  const cpu = await cpuProbe(db, options.redisUrl);
  const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));
  /** One repetition of an entry: its figures, the answers it did not expect, how busy the machine was. */
  const once = async (p: Planned): Promise<{ results: Result[]; statuses: Record<string, number> }> => {
    if ('pgbench' in p) {
      const { workspaceId, clients } = p.pgbench;
      if (options.warmup > 0) await pgbenchOnce(options.databaseUrl, workspaceId, clients, options.warmup, scratch);
      const before = await cpu.sample(null);
      const repetition = await pgbenchOnce(options.databaseUrl, workspaceId, clients, options.duration, scratch);
      // pgbench and its sessions are gone by the second reading: only the machine's total is known.
      const { machine_cores } = cpu.use(before, await cpu.sample(null), repetition.answered);
      const unknown = { server_ms: null, postgres_ms: null, redis_ms: null, generator_ms: null, others_cores: null };
      const result = { ...repetition, cpu: { ...unknown, machine_cores } };
      return { results: [{ key: p.key, label: p.label, connections: clients, repetition: result }], statuses: {} };
    }
    if ('paths' in p) {
      if (options.warmup > 0) await measureAlternating(p.server.url, p.headers, p.paths, options.warmup);
      const run = await measureAlternating(p.server.url, p.headers, p.paths, options.duration);
      // The two share one run, so CPU per request cannot be told apart: none is reported for them.
      return {
        results: p.keys.map((key, i) => ({
          key,
          label: p.labels[i]!,
          connections: 1,
          repetition: run.repetitions[i]!,
        })),
        statuses: run.statuses,
      };
    }
    if (options.warmup > 0) {
      await measureOnce(p.server.url, p.scenario, options.warmup);
      // autocannon stops with requests still in flight; let the server finish them first, or they
      // would slow the measured run (and a replayed key still held would answer 409 in_use).
      await settle();
    }
    const before = await cpu.sample(p.server);
    const { repetition, statuses } = await measureOnce(p.server.url, p.scenario, options.duration);
    const result = { ...repetition, cpu: cpu.use(before, await cpu.sample(p.server), repetition.answered) };
    return {
      results: [{ key: p.key, label: p.label, connections: p.scenario.connections, repetition: result }],
      statuses,
    };
  };

  const runs = new Map<Key, Result[]>();
  const unexpected = new Map<Key, Record<string, number>>();
  for (let round = 1; round <= options.repetitions; round++) {
    for (const p of plan.flatMap((group) => (round % 2 === 0 ? [...group].reverse() : group))) {
      const { results, statuses } = await once(p);
      for (const r of results) {
        runs.set(r.key, [...(runs.get(r.key) ?? []), r]);
        const counts = unexpected.get(r.key) ?? {};
        for (const [status, n] of Object.entries(statuses)) counts[status] = (counts[status] ?? 0) + n;
        unexpected.set(r.key, counts);
        const x = r.repetition;
        log(
          `round ${round}/${options.repetitions}  ${r.label.padEnd(40)}` +
            ` ${String(x.rps).padStart(7)} req/s  p50 ${x.p50_ms} ms  p99 ${x.p99_ms} ms` +
            (x.cpu ? `  machine ${x.cpu.machine_cores} cores busy` : '') +
            (x.unexpected ? `  unexpected: ${x.unexpected}` : ''),
        );
      }
    }
  }

  const samples = [
    ...memory.flatMap((m) => m.finish()),
    {
      process: 'load generator (autocannon, this process)',
      pid: process.pid,
      before_mib: loadGeneratorBefore,
      after_mib: rssMiB(process.pid),
    },
  ];
  await Promise.all(servers.map((server) => server.stop()));

  const measured = Object.fromEntries(
    [...runs].map(([key, list]) => [
      key,
      summarize(
        list[0]!.label,
        list[0]!.connections,
        list.map((r) => r.repetition),
        unexpected.get(key),
      ),
    ]),
  ) as unknown as Measured;
  return { measured, memory: samples, bareListIdentical };
}

async function startBaseline(name: string, file: string, env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  log(`starting ${name}`);
  return startServer(
    name,
    process.execPath,
    ['--import', 'tsx', join(ROOT, file)],
    { ...env, PORT: String(port) },
    port,
    '/readyz',
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
