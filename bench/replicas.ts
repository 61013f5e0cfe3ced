// `npm run bench:replicas`: reads on a streaming replica (docs/scaling.md, "Read replicas") against
// reads on the primary. A private primary and a `pg_basebackup -R` replica of it (test/servers.ts),
// made anew by every run, hold one workspace of CONTACTS contacts; the service runs as a user runs
// it (one worker, Redis, LOG_LEVEL=warn) in three deployments: no replica, a replica in `fresh`
// consistency (the default), a replica in `token` consistency (reads without a token). Each serves
// the list GET /v2/contacts?limit=50 at CONNECTIONS connections; the deployments take turns,
// REPETITIONS rounds of SECONDS each, so that each meets the machine's load alike. CPU per request
// from /proc: the service, the primary's PostgreSQL (its backends, WAL sender included), the
// replica's (its backends, and its startup and WAL receiver processes, which replay).
//
// All of it runs on this machine's two cores: the replica takes CPU the primary would otherwise
// have. The figures say where a read's work goes and what routing costs, not how a deployment with
// a replica on a machine of its own scales.
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { seedContacts } from '../src/modules/owner/seed.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { readRoutes, startReplicaPair, withoutReplicaPair } from '../test/servers.js';
import { cpuProbe, type CpuUse } from './cpu.js';
import { measureOnce, median, type Repetition } from './load.js';
import { freePort, ROOT, runAsScript, startServer, stopAll, type Server } from './processes.js';
import { recordRun } from './report.js';
import { POOL_SIZE } from './settings.js';

const CONTACTS = 20_000;
const CONNECTIONS = 10;
const SECONDS = 5;
const REPETITIONS = 3;
const WARMUP_SECONDS = 2;
const PATH = '/v2/contacts?limit=50';

interface Deployment {
  name: string;
  env: Record<string, string | undefined>;
}

interface Round {
  repetition: Repetition;
  cpu: CpuUse;
  replicaPostgresMs: number | null;
}

const fmt = (n: number | null | undefined, digits = 2) =>
  n === null || n === undefined || !Number.isFinite(n)
    ? '—'
    : n.toLocaleString('en-US', { maximumFractionDigits: digits });

/** Where the process's reads went, by route. */
const routes = (server: Server) => readRoutes(server.url);

async function caughtUp(primary: Database, replica: Database): Promise<void> {
  const { rows } = await primary.query<{ lsn: string }>('SELECT pg_current_wal_flush_lsn()::text AS lsn');
  for (let i = 0; i < 600; i++) {
    const r = await replica.query<{ behind: boolean }>('SELECT pg_last_wal_replay_lsn() < $1::pg_lsn AS behind', [
      rows[0]!.lsn,
    ]);
    if (!r.rows[0]!.behind) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the replica did not catch up within a minute');
}

runAsScript(import.meta.url, 'bench:replicas', async (log) => {
  const missing = withoutReplicaPair();
  if (missing) throw new Error(`cannot start a primary and a replica here: ${missing}`);
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const date = new Date().toISOString();
  const started = Date.now();
  log('starting a primary and a replica');
  const pair = await startReplicaPair();
  const urls = await pair.createDatabase('workspace_api_bench_replicas');
  const primary = createPostgresDatabase(urls.primaryUrl, 2);
  const replica = createPostgresDatabase(urls.replicaUrl, 2);
  try {
    await migrate(primary, GENERATED_DATABASE_CODE);
    const owner = { db: primary, defaultRateLimitPerMinute: 600 };
    const ws = await ownerCommands.createWorkspace(owner, { name: 'replica bench' });
    const { key } = await ownerCommands.createKey(owner, {
      workspaceId: ws.id,
      name: 'replica bench',
      scopes: ['contacts:read'],
      rateLimitPerMinute: 1_000_000_000,
      concurrencyLimit: 10_000,
    });
    log(`seeding ${CONTACTS.toLocaleString('en-US')} contacts`);
    await seedContacts(primary, ws.id, CONTACTS);
    await primary.query('ANALYZE');
    await caughtUp(primary, replica);

    const deployments: Deployment[] = [
      { name: 'primary only', env: { DATABASE_READ_URL: undefined } },
      { name: 'replica, fresh (the default)', env: { DATABASE_READ_URL: urls.replicaUrl } },
      {
        name: 'replica, token (reads without a token)',
        env: { DATABASE_READ_URL: urls.replicaUrl, DATABASE_READ_CONSISTENCY: 'token' },
      },
    ];
    const servers: Server[] = [];
    for (const d of deployments) {
      const port = await freePort();
      servers.push(
        await startServer(
          d.name,
          process.execPath,
          [join(ROOT, 'bin/workspace-api'), 'serve', '--workers', '1'],
          {
            DATABASE_URL: urls.primaryUrl,
            REDIS_URL: redisUrl,
            HOST: '127.0.0.1',
            PORT: String(port),
            LOG_LEVEL: 'warn',
            DB_POOL_SIZE: String(POOL_SIZE),
            DEMO_ON_FIRST_START: 'false',
            ...d.env,
          },
          port,
          '/readyz',
        ),
      );
    }
    const scenario = {
      method: 'GET' as const,
      path: PATH,
      headers: { authorization: `Bearer ${key}` },
      connections: CONNECTIONS,
      expect: [200],
    };
    const primaryCpu = await cpuProbe(primary, redisUrl);
    const replicaCpu = await cpuProbe(replica, redisUrl);
    const rounds: Round[][] = deployments.map(() => []);
    const before = await Promise.all(servers.map(routes));
    for (let r = 0; r < REPETITIONS; r++) {
      // The other way round every other repetition.
      const order = r % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
      for (const i of order) {
        const server = servers[i]!;
        if (r === 0) await measureOnce(server.url, scenario, WARMUP_SECONDS);
        const [p0, r0] = await Promise.all([primaryCpu.sample(server), replicaCpu.sample(null)]);
        const { repetition } = await measureOnce(server.url, scenario, SECONDS);
        const [p1, r1] = await Promise.all([primaryCpu.sample(server), replicaCpu.sample(null)]);
        rounds[i]!.push({
          repetition,
          cpu: primaryCpu.use(p0, p1, repetition.answered),
          replicaPostgresMs: replicaCpu.use(r0, r1, repetition.answered).postgres_ms,
        });
        log(`${deployments[i]!.name}, round ${r + 1}: ${fmt(repetition.rps)} req/s, p50 ${fmt(repetition.p50_ms)} ms`);
      }
    }
    const after = await Promise.all(servers.map(routes));

    const rows = deployments.map((d, i) => {
      const of = (pick: (x: Round) => number | null) =>
        median(rounds[i]!.map(pick).filter((v): v is number => v !== null));
      const routed = Object.entries(after[i]!)
        .map(([route, n]) => [route, n - (before[i]![route] ?? 0)] as const)
        .filter(([, n]) => n > 0)
        .map(([route, n]) => `${route} ${n.toLocaleString('en-US')}`)
        .join(', ');
      return `| ${d.name} | ${fmt(
        of((x) => x.repetition.rps),
        0,
      )} | ${fmt(of((x) => x.repetition.p50_ms))} | ${fmt(
        of((x) => x.repetition.p99_ms),
      )} | ${fmt(of((x) => x.cpu.server_ms))} | ${fmt(of((x) => x.cpu.postgres_ms))} | ${fmt(
        of((x) => x.replicaPostgresMs),
      )} | ${fmt(of((x) => x.cpu.machine_cores))} | ${routed || '—'} |`;
    });
    const versions = await primary.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    const markdown = [
      `Run of ${date}: ${availableParallelism()} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node.js ${process.version}, ` +
        `PostgreSQL ${versions.rows[0]!.v} (a private primary and a \`pg_basebackup -R\` replica on this machine). ` +
        `One workspace of ${CONTACTS.toLocaleString('en-US')} contacts; \`GET ${PATH}\` at ${CONNECTIONS} connections, ` +
        `one worker, Redis, LOG_LEVEL=warn; each figure the median of ${REPETITIONS} rounds of ${SECONDS} s, the ` +
        `deployments in turn. Whole run: ${Math.round((Date.now() - started) / 1000)} s.`,
      '',
      '| deployment | req/s | p50 ms | p99 ms | service CPU ms/req | primary PostgreSQL CPU ms/req | replica PostgreSQL CPU ms/req | machine busy, cores | reads by route |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...rows,
      '',
      'The primary and the replica share the two cores with the service and the load generator: the ' +
        "replica's figure is CPU the primary would otherwise have had. In `fresh` consistency each read " +
        "also asks the primary for its position (shared by the reads in flight) and waits until the replica's " +
        'replay has reached it.',
    ].join('\n');
    process.stdout.write(`\n${markdown}\n\n`);
    const file = await recordRun('replicas', date, markdown, {
      performance: join(ROOT, 'docs/performance.md'),
      results: join(ROOT, 'bench/results'),
    });
    log(`written: ${file} and docs/performance.md`);
  } finally {
    await stopAll();
    await Promise.all([primary.close(), replica.close()]);
    pair.stopReplica();
  }
});
