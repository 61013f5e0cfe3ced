// `npm run soak`: several minutes of a bounded mixed load (reads, creates, replays, updates, upserts
// and requests with a small-quota key) against two server processes sharing PostgreSQL and Redis,
// then a consistency check against the database: contacts equal the distinct successful creates,
// no Idempotency-Key produced two effects, no 5xx, and the resident memory of each process flat.
// Prints a summary and writes bench-results/soak.json; exits 1 if any check fails. Every process
// it starts is stopped before it exits, whether the run succeeds, fails or is interrupted.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { ownerCommands, type OwnerContext } from '../src/modules/owner/owner.service.js';
import { MIX, runLoad, type LoadResult } from './soak-load.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'bin/workspace-api');

const USAGE = `Usage: npm run soak -- [--duration S] [--warmup S] [--concurrency N] [--rate R] [--limited-quota N]

  --duration S       seconds of load (default 240)
  --warmup S         seconds at the start left out of the memory trend (default 60, at most a quarter of the run)
  --concurrency N    requests in flight at most (default 24)
  --rate R           requests per second at most, across both servers; 0 = unpaced (default 150)
  --limited-quota N  per-minute quota of the key whose requests must be refused with 429 (default 60)
  --memory-growth P  largest growth of the last-minute RSS over the first minute after warm-up, % (default 20)

Environment: SOAK_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/workspace_api_soak, created
if missing), SOAK_REDIS_URL (default redis://127.0.0.1:6379).`;

interface Options {
  durationS: number;
  warmupS: number;
  concurrency: number;
  rate: number;
  limitedQuota: number;
  memoryGrowthPct: number;
  databaseUrl: string;
  redisUrl: string;
}

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string', default: '240' },
      warmup: { type: 'string', default: '60' },
      concurrency: { type: 'string', default: '24' },
      rate: { type: 'string', default: '150' },
      'limited-quota': { type: 'string', default: '60' },
      'memory-growth': { type: 'string', default: '20' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return null;
  }
  const whole = (name: string, text: string, min: number) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number from ${min}`);
    return n;
  };
  const durationS = whole('duration', values.duration, 10);
  return {
    durationS,
    warmupS: Math.min(whole('warmup', values.warmup, 0), Math.floor(durationS / 4)),
    concurrency: whole('concurrency', values.concurrency, 1),
    rate: whole('rate', values.rate, 0),
    limitedQuota: whole('limited-quota', values['limited-quota'], 1),
    memoryGrowthPct: whole('memory-growth', values['memory-growth'], 0),
    databaseUrl: process.env.SOAK_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/workspace_api_soak',
    redisUrl: process.env.SOAK_REDIS_URL || 'redis://127.0.0.1:6379',
  };
}

const started = Date.now();
const log = (line: string) =>
  process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

// ------------------------------------------------------------------------------------------ database

/** Creates the soak database when it is missing (through the server's `postgres` database). */
async function ensureDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      log(`created database ${name}`);
    }
  } finally {
    await client.end();
  }
}

// ------------------------------------------------------------------------------------------ servers

interface Server {
  name: string;
  url: string;
  pid: number;
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): string;
}

const servers: Server[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** `serve --workers 1` on a free port; resolves once /readyz answers 200. */
async function startServer(name: string, env: Record<string, string>): Promise<Server> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, 'serve', '--workers', '1'], {
      cwd: ROOT,
      env: { ...process.env, ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-65_536));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const server: Server = {
      name,
      url: `http://127.0.0.1:${port}`,
      pid: child.pid ?? -1,
      child,
      exited,
      output: () => output,
    };
    servers.push(server);
    const deadline = Date.now() + 60_000;
    while (child.exitCode === null && child.signalCode === null && Date.now() < deadline) {
      try {
        const res = await fetch(`${server.url}/readyz`);
        await res.body?.cancel();
        if (res.status === 200) return server;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    servers.splice(servers.indexOf(server), 1);
    // Someone else took the port between our probe and the server's bind: pick another one.
    if (/EADDRINUSE/.test(output) && attempt < 4) continue;
    throw new Error(`${name} did not become ready:\n${output}`);
  }
}

/** SIGTERM (graceful), SIGKILL after 15 s; resolves with the exit code. */
async function stopServer(server: Server): Promise<number | null> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return server.exited;
  server.child.kill('SIGTERM');
  const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000).unref());
  if ((await Promise.race([server.exited, timer])) === 'timeout') server.child.kill('SIGKILL');
  return server.exited;
}

/** Resident memory of a process in MiB (VmRSS), or null once it is gone. */
function rssMiB(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

// ------------------------------------------------------------------------------------------ checks

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

interface MemoryTrend {
  process: string;
  pid: number;
  samples: { t: number; mib: number }[];
  first_window_mib: number;
  last_window_mib: number;
  growth_pct: number;
}

const round1 = (n: number) => Math.round(n * 10) / 10;
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

function memoryTrend(server: Server, samples: { t: number; mib: number }[], o: Options): MemoryTrend {
  // The first minute after warm-up against the last minute (shorter windows for short runs).
  const window = Math.min(60, (o.durationS - o.warmupS) / 2);
  const first = samples.filter((s) => s.t >= o.warmupS && s.t < o.warmupS + window).map((s) => s.mib);
  const last = samples.filter((s) => s.t > o.durationS - window).map((s) => s.mib);
  const firstMean = mean(first);
  const lastMean = mean(last);
  return {
    process: server.name,
    pid: server.pid,
    samples: samples.map((s) => ({ t: s.t, mib: round1(s.mib) })),
    first_window_mib: round1(firstMean),
    last_window_mib: round1(lastMean),
    growth_pct: round1(((lastMean - firstMean) / firstMean) * 100),
  };
}

async function consistency(
  db: Database,
  workspaceId: string,
  load: LoadResult,
): Promise<{ checks: Check[]; lost: number; doubled: number }> {
  const checks: Check[] = [];
  const { rows: total } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
    [workspaceId],
  );
  const expected = load.creates.length + load.upsertCreated.size;
  checks.push({
    name: 'contacts in the database = distinct successful creates + upsert-creates',
    ok: total[0]!.n === expected,
    detail: `${total[0]!.n} in the database; ${load.creates.length} creates + ${load.upsertCreated.size} upsert-creates = ${expected}`,
  });

  // Every create's contact is there, once, with the id the client was given.
  const { rows: byEmail } = await db.query<{ email: string; ids: string[] }>(
    `SELECT email, array_agg(id::text) AS ids FROM contacts WHERE workspace_id = $1 AND email IS NOT NULL GROUP BY email`,
    [workspaceId],
  );
  const ids = new Map(byEmail.map((r) => [r.email, r.ids]));
  const doubled = byEmail.filter((r) => r.ids.length > 1).length;
  const missing = load.creates.filter((c) => !ids.get(c.body.email as string)?.includes(c.id)).length;
  checks.push({
    name: 'no Idempotency-Key produced two contacts',
    ok: doubled === 0 && missing === 0,
    detail: `${doubled} emails with more than one contact; ${missing} acknowledged creates not found with their id`,
  });
  const twice = [...load.upsertCreated.values()].filter((v) => v.length > 1).length;
  const { rows: ext } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT external_id FROM contacts WHERE workspace_id = $1 AND external_id IS NOT NULL
       GROUP BY external_id HAVING count(*) > 1) d`,
    [workspaceId],
  );
  checks.push({
    name: 'each external id created once',
    ok: twice === 0 && ext[0]!.n === 0,
    detail: `${twice} external ids answered 201 twice; ${ext[0]!.n} external ids on two contacts`,
  });
  const r = load.replays;
  checks.push({
    name: 'every replay answered the first id, marked Idempotent-Replayed',
    ok:
      r.sameId === r.answered201 &&
      r.markedReplayed === r.answered201 &&
      r.answered201 + r.inUseWhileConcurrent === r.total,
    detail: `${r.total} replays: ${r.answered201} answered 201 (${r.sameId} with the first id, ${r.markedReplayed} marked), ${r.inUseWhileConcurrent} answered 409 idempotency_key_in_use while another replay of the same key was in flight`,
  });
  const { rows: keys } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM idempotency_keys WHERE workspace_id = $1',
    [workspaceId],
  );
  const writes = load.creates.length + load.otherWriteKeys;
  checks.push({
    name: 'one stored Idempotency-Key per successful write',
    ok: keys[0]!.n === writes,
    detail: `${keys[0]!.n} stored; ${writes} distinct keys answered 2xx`,
  });
  return { checks, lost: missing, doubled: doubled + twice + ext[0]!.n };
}

// ------------------------------------------------------------------------------------------ main

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2));
  if (!o) return 0;
  const interrupted = () => void Promise.all(servers.map((s) => stopServer(s))).finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  await ensureDatabase(o.databaseUrl);
  const db = createPostgresDatabase(o.databaseUrl, 4);
  try {
    await migrate(db, GENERATED_DATABASE_CODE);
    const owner: OwnerContext = { db, defaultRateLimitPerMinute: 600 };
    const ws = await ownerCommands.createWorkspace(owner, { name: `soak-${new Date().toISOString()}` });
    const scopes = ['contacts:read', 'contacts:write'];
    const main = await ownerCommands.createKey(owner, {
      workspaceId: ws.id,
      name: 'soak',
      scopes,
      rateLimitPerMinute: 1_000_000,
    });
    const limited = await ownerCommands.createKey(owner, {
      workspaceId: ws.id,
      name: 'soak, small quota',
      scopes,
      rateLimitPerMinute: o.limitedQuota,
    });
    log(
      `workspace ${ws.id}; ${o.durationS} s of load, ${o.concurrency} in flight at most, ${o.rate || 'unpaced'} req/s`,
    );

    const env = {
      DATABASE_URL: o.databaseUrl,
      REDIS_URL: o.redisUrl,
      LOG_LEVEL: 'warn',
      DEMO_ON_FIRST_START: 'false',
      DB_POOL_SIZE: '10',
    };
    const [a, b] = await Promise.all([startServer('server A', env), startServer('server B', env)]);
    log(`servers ${a.url} (pid ${a.pid}) and ${b.url} (pid ${b.pid}) ready`);

    const samples = new Map<Server, { t: number; mib: number }[]>([
      [a, []],
      [b, []],
    ]);
    const sample = (t: number) => {
      for (const [s, list] of samples) {
        const mib = rssMiB(s.pid);
        if (mib !== null) list.push({ t, mib });
      }
    };
    sample(0);
    let lastProgress = 0;
    const load = await runLoad({
      servers: [a.url, b.url],
      key: main.key,
      limitedKey: limited.key,
      concurrency: o.concurrency,
      rate: o.rate,
      durationMs: o.durationS * 1000,
      tickMs: 5_000,
      onTick: (t) => {
        sample(t);
        if (t - lastProgress >= 30) {
          lastProgress = t;
          const rss = [...samples.values()].map((l) => `${round1(l[l.length - 1]?.mib ?? NaN)} MiB`).join(', ');
          log(`${t} s: RSS ${rss}`);
        }
      },
    });
    sample(Math.round(load.durationS));
    log(`load done: ${load.requests} requests in ${load.durationS.toFixed(0)} s`);

    const { checks, lost, doubled } = await consistency(db, ws.id, load);
    const fiveXX = Object.values(load.statuses)
      .flatMap((byStatus) => Object.entries(byStatus))
      .filter(([status]) => /^(5|network)/.test(status))
      .reduce((n, [, c]) => n + c, 0);
    checks.push({ name: 'zero 5xx (and no dropped connection)', ok: fiveXX === 0, detail: `${fiveXX} seen` });
    checks.push({
      name: 'every answer was one its operation may give',
      ok: load.unexpected.length === 0,
      detail: load.unexpected.length
        ? `${load.unexpected.length} unexpected, e.g. ${JSON.stringify(load.unexpected.slice(0, 3))}`
        : 'none unexpected',
    });
    // The small-quota key: 429s seen, and never more successes in one window than its quota,
    // across both processes (the count is shared through Redis).
    const busiestWindow = Math.max(0, ...load.limited.okPerWindow.values());
    checks.push({
      name: 'small-quota key: refused with 429, quota shared by both processes',
      ok: load.limited.rateLimited > 0 && busiestWindow <= o.limitedQuota,
      detail: `${load.limited.ok} allowed, ${load.limited.rateLimited} refused; at most ${busiestWindow} allowed in one window (quota ${o.limitedQuota})`,
    });
    const trends = [...samples.entries()].map(([s, list]) => memoryTrend(s, list, o));
    for (const m of trends) {
      checks.push({
        name: `${m.process}: memory flat`,
        ok: Number.isFinite(m.growth_pct) && m.growth_pct <= o.memoryGrowthPct,
        detail: `RSS ${m.first_window_mib} MiB in the first minute after warm-up, ${m.last_window_mib} MiB in the last (${m.growth_pct >= 0 ? '+' : ''}${m.growth_pct}%, limit +${o.memoryGrowthPct}%)`,
      });
    }
    const exits = await Promise.all([a, b].map((s) => stopServer(s)));
    checks.push({
      name: 'both servers stop gracefully (exit 0 on SIGTERM)',
      ok: exits.every((c) => c === 0),
      detail: `exit codes ${exits.join(', ')}`,
    });

    const passed = checks.every((c) => c.ok);
    const result = {
      date: new Date().toISOString(),
      passed,
      machine: { cores: availableParallelism(), memory_gib: Math.round(totalmem() / 2 ** 30), node: process.version },
      settings: {
        duration_s: o.durationS,
        warmup_s: o.warmupS,
        concurrency: o.concurrency,
        rate_per_s: o.rate,
        limited_quota_per_min: o.limitedQuota,
        memory_growth_limit_pct: o.memoryGrowthPct,
        mix_pct: MIX,
        servers: 2,
      },
      workspace_id: ws.id,
      requests: load.requests,
      requests_per_s: round1(load.requests / load.durationS),
      statuses: load.statuses,
      latency_ms: load.latencyMs,
      writes: {
        creates: load.creates.length,
        upsert_creates: load.upsertCreated.size,
        replays: load.replays,
        other_writes: load.otherWriteKeys,
      },
      rate_limited: { allowed: load.limited.ok, refused_429: load.limited.rateLimited },
      status_5xx: fiveXX,
      effects_lost: lost,
      effects_doubled: doubled,
      memory: trends,
      checks,
    };
    mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench-results/soak.json'), `${JSON.stringify(result, null, 2)}\n`);

    process.stdout.write('\n');
    process.stdout.write(
      `${load.requests} requests in ${load.durationS.toFixed(0)} s (${result.requests_per_s}/s) to 2 servers\n`,
    );
    for (const [op, byStatus] of Object.entries(load.statuses)) {
      const l = load.latencyMs[op]!;
      process.stdout.write(
        `  ${op.padEnd(8)} ${Object.entries(byStatus)
          .map(([s, n]) => `${s}: ${n}`)
          .join(', ')
          .padEnd(40)} p50 ${l.p50} ms, p99 ${l.p99} ms\n`,
      );
    }
    process.stdout.write('\n');
    for (const c of checks) process.stdout.write(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}\n`);
    process.stdout.write(`\nwritten to bench-results/soak.json\n`);
    return passed ? 0 : 1;
  } finally {
    await Promise.all(servers.map((s) => stopServer(s)));
    await db.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    for (const s of servers) if (s.output()) process.stderr.write(`--- ${s.name}:\n${s.output().slice(-4000)}\n`);
    void Promise.all(servers.map((s) => stopServer(s))).finally(() => process.exit(1));
  },
);
