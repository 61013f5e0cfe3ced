// `npm run bench:noisy` (and the end of `npm run bench`): does one workspace, sending its most
// expensive requests in parallel within its key's quota, slow another workspace down?
//
// Workspace B reads its first page of contacts over a few connections, alone and then beside
// workspace A's load (bench/noisy-client.ts says what A sends; bench/noisy-a.ts sends it from a
// process of its own), in two deployments as a user runs them: PostgreSQL as the README's default
// (`serve` with DATABASE_URL, no Redis, the default workers and pool) and the embedded store. The
// workspaces and keys are made with the owner CLI only. The repetitions alternate which of the two
// measurements comes first; the report gives the medians, the ratios beside / alone with their
// targets, how A's requests were answered, and the largest error answer A received.
//
// Every process it starts (the servers, the CLI, A's load) is stopped when it ends, fails or is
// interrupted.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import * as prettier from 'prettier';
import { SCOPES } from '../src/shared/scopes.js';
import { CONFIG_VARIABLES } from '../src/config.js';
import { withAdmin } from './dataset.js';
import { median } from './load.js';
import {
  A_BATCH_ITEMS,
  A_DEEP_PAGES,
  A_HOSTILE_PROPERTIES,
  A_KIND_LABELS,
  A_KINDS,
  A_PARALLEL,
  A_RETRY_AFTER_HONOURED_BELOW_MS,
  A_UPDATED_AFTER,
  aRequests,
  B_CONNECTIONS,
  B_PATH,
  combineA,
  requestBytes,
  runB,
  send,
  type AFigures,
  type AKind,
  type LatencyFigures,
} from './noisy-client.js';
import { adopt, definedOnly, freePort, processTree, ROOT, runAsScript, startServer } from './processes.js';
import { recordRun } from './report.js';
import { wholeNumber } from './settings.js';

export const NOISY_TARGETS = {
  /** B's p50 beside A / alone */
  p50: 2,
  /** B's p99 beside A / alone */
  p99: 3,
  /** B's mean beside A / alone */
  mean: 2,
} as const;

/** What each workspace holds: the CLI's seed, every resource, so the feed has events of many types. */
const SEED = [
  ['--contacts', '2000'],
  ['--appointments', '200'],
  ['--catalog-items', '20'],
  ['--conversations', '20'],
  ['--messages-per-conversation', '5'],
  ['--automations', '5'],
].flat();
/** B's key may never be refused for its own load. */
const B_RATE_LIMIT = '1000000/min';
/** Pause after each measurement, for the server to finish what is still in flight. */
const SETTLE_MS = 500;

export interface NoisyOptions {
  /** seconds of each measurement of B */
  duration: number;
  repetitions: number;
  /** seconds of A and B together, unmeasured, before the first repetition of each deployment */
  warmup: number;
  /** the PostgreSQL deployment's own database, dropped and created anew by every run */
  databaseUrl: string;
}

export const noisyDatabaseUrl = () =>
  process.env.BENCH_NOISY_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/workspace_api_noisy';

type Figure = 'p50' | 'p99' | 'mean' | 'completed';
const FIGURES: Record<Figure, (f: LatencyFigures) => number> = {
  p50: (f) => f.p50_ms,
  p99: (f) => f.p99_ms,
  mean: (f) => f.mean_ms,
  completed: (f) => f.completed,
};

interface Ratio {
  /** median over the repetitions of beside / alone within each repetition */
  value: number;
  /** the lowest and highest of one repetition */
  rounds: [number, number];
}

interface NoisyTarget {
  what: string;
  target: string;
  measured: string;
  met: boolean;
}

export interface DeploymentFigures {
  deployment: string;
  /** how the service was started */
  how: string;
  server_processes: number;
  repetitions: { order: ('alone' | 'beside')[]; alone: LatencyFigures; beside: LatencyFigures; a: AFigures }[];
  /** medians of B's figures over the repetitions */
  alone: Record<Figure, number>;
  beside: Record<Figure, number>;
  ratios: Record<Figure, Ratio>;
  targets: NoisyTarget[];
  /** A's answers over every measured window, added up */
  a: AFigures;
  /** the check before measuring: A's hostile batch sent once, alone */
  hostile_check: { status: number; answer_bytes: number; request_bytes: number; ms: number };
}

export interface NoisyReport {
  date: string;
  machine: { cores: number; memory_gib: number; node: string; postgresql: string };
  settings: {
    duration: number;
    repetitions: number;
    warmup: number;
    b_connections: number;
    b_request: string;
    a_parallel: number;
    a_requests: Record<AKind, string>;
  };
  deployments: DeploymentFigures[];
  total_seconds: number;
}

const round2 = (n: number) => Math.round(n * 100) / 100;
const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));

/** Runs the scenario on both deployments, writes its results, and returns the markdown it wrote. */
export async function runNoisyNeighbour(options: NoisyOptions, log: (line: string) => void): Promise<string> {
  const report = await measureNoisyNeighbour(options, log);
  const markdown = await writeNoisyResults(report, {
    json: join(ROOT, 'bench-results/noisy-neighbour.json'),
    performance: join(ROOT, 'docs/performance.md'),
    results: join(ROOT, 'bench/results'),
  });
  // Formatted as the document is, so that its tables line up on a terminal too.
  const style = (await prettier.resolveConfig(join(ROOT, 'docs/performance.md'))) ?? {};
  process.stdout.write(`\n${await prettier.format(markdown, { ...style, parser: 'markdown' })}\n`);
  log('written: bench-results/noisy-neighbour.json, the run in bench/results/ and docs/performance.md');
  return markdown;
}

export async function measureNoisyNeighbour(o: NoisyOptions, log: (line: string) => void): Promise<NoisyReport> {
  const started = Date.now();
  const scratch = mkdtempSync(join(tmpdir(), 'bench-noisy-'));
  try {
    const postgresql = await recreateDatabase(o.databaseUrl, log);
    const cores = availableParallelism();
    const deployments: DeploymentFigures[] = [];
    deployments.push(
      await measureDeployment(
        {
          deployment: 'PostgreSQL',
          how: `bin/workspace-api serve, DATABASE_URL set, no REDIS_URL, default workers (${cores}) and DB_POOL_SIZE, LOG_LEVEL=warn`,
          env: { DATABASE_URL: o.databaseUrl, LOG_LEVEL: 'warn' },
          workers: cores,
        },
        o,
        log,
      ),
    );
    deployments.push(
      await measureDeployment(
        {
          deployment: 'embedded store',
          how: 'bin/workspace-api serve, DATABASE_URL unset (PGlite in the process), DATA_DIR a new directory, DEMO_ON_FIRST_START=false, LOG_LEVEL=warn',
          env: { DATA_DIR: join(scratch, 'embedded'), DEMO_ON_FIRST_START: 'false', LOG_LEVEL: 'warn' },
          workers: 1,
        },
        o,
        log,
      ),
    );
    return {
      date: new Date().toISOString(),
      machine: { cores, memory_gib: Math.round(totalmem() / 2 ** 30), node: process.version, postgresql },
      settings: {
        duration: o.duration,
        repetitions: o.repetitions,
        warmup: o.warmup,
        b_connections: B_CONNECTIONS,
        b_request: `GET ${B_PATH}`,
        a_parallel: A_PARALLEL,
        a_requests: A_KIND_LABELS,
      },
      deployments,
      total_seconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

interface Deployment {
  deployment: string;
  how: string;
  /** the service's variables for this deployment (every other one is removed) */
  env: Record<string, string>;
  /** processes that serve: a cluster's workers, not its primary */
  workers: number;
}

async function measureDeployment(d: Deployment, o: NoisyOptions, log: (line: string) => void) {
  const env: Record<string, string | undefined> = {
    ...Object.fromEntries(CONFIG_VARIABLES.map((name) => [name, undefined])),
    ...d.env,
  };
  const runId = randomBytes(4).toString('hex');
  const say = (line: string) => log(`noisy neighbour, ${d.deployment}: ${line}`);

  say('workspaces, keys and data through the owner CLI');
  const workspaceA = await cli(env, ['workspaces', 'create', '--name', 'Noisy neighbour A']);
  const workspaceB = await cli(env, ['workspaces', 'create', '--name', 'Noisy neighbour B']);
  // A: every scope, the default quota. B: what its list needs, and a quota its load never reaches.
  const keyA = String(
    (
      await cli(env, [
        'keys',
        'create',
        '--workspace',
        String(workspaceA.id),
        '--scopes',
        SCOPES.join(','),
        '--name',
        'A',
      ])
    ).key,
  );
  const keyB = String(
    (
      await cli(env, [
        'keys',
        'create',
        '--workspace',
        String(workspaceB.id),
        '--scopes',
        'contacts:read',
        '--name',
        'B',
        '--rate-limit',
        B_RATE_LIMIT,
      ])
    ).key,
  );
  for (const workspace of [workspaceA, workspaceB])
    await cli(env, ['seed', '--workspace', String(workspace.id), ...SEED]);

  const port = await freePort();
  say('starting the service');
  const server = await startServer(
    `service, ${d.deployment}, noisy neighbour`,
    process.execPath,
    [join(ROOT, 'bin/workspace-api'), 'serve'],
    { ...env, HOST: '127.0.0.1', PORT: String(port) },
    port,
    '/readyz',
  );
  try {
    // /readyz answers once one worker listens; the measurements wait for all of them.
    const deadline = Date.now() + 30_000;
    while (d.workers > 1 && processTree(server.pid).length < d.workers + 1) {
      if (Date.now() > deadline) throw new Error(`${server.name}: its workers did not all start`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const hostileCheck = await verify(server.url, keyA, keyB, runId, say);

    const beside = async (seconds: number, tag: string) => {
      const a = await startA(keyA, `${runId}${tag}`);
      a.go(server.url);
      const b = await runB(server.url, keyB, seconds);
      return { b, a: await a.finish() };
    };
    if (o.warmup > 0) {
      say(`warm-up: ${o.warmup} s of A and B together`);
      await beside(o.warmup, 'w');
      await settle();
    }
    const repetitions: DeploymentFigures['repetitions'] = [];
    for (let rep = 1; rep <= o.repetitions; rep++) {
      const order: ('alone' | 'beside')[] = rep % 2 === 1 ? ['alone', 'beside'] : ['beside', 'alone'];
      let alone: LatencyFigures | null = null;
      let next: { b: LatencyFigures; a: AFigures } | null = null;
      for (const phase of order) {
        if (phase === 'alone') alone = await runB(server.url, keyB, o.duration);
        else next = await beside(o.duration, `r${rep}`);
        await settle();
      }
      repetitions.push({ order, alone: alone!, beside: next!.b, a: next!.a });
      const line = (f: LatencyFigures) =>
        `p50 ${f.p50_ms} ms, p99 ${f.p99_ms} ms, mean ${f.mean_ms} ms, ${f.completed} done` +
        (f.non_200 ? `, ${f.non_200} not 200` : '');
      const answers = A_KINDS.map((k) => next!.a.kinds[k].answers);
      const total = (c: keyof (typeof answers)[number]) => answers.reduce((s, x) => s + x[c], 0);
      say(
        `repetition ${rep}/${o.repetitions} (${order.join(' first, then ')})\n` +
          `    B alone:    ${line(alone!)}\n` +
          `    B beside A: ${line(next!.b)}\n` +
          `    A: ${total('2xx')} 2xx, ${total('422')} 422, ${total('429')} 429, ${total('503')} 503, ` +
          `${total('other')} other, ${total('error')} without answer; slowest ${next!.a.slowest?.ms ?? '—'} ms (${next!.a.slowest?.kind ?? '—'})`,
      );
    }
    return summarizeDeployment(d, repetitions, hostileCheck);
  } finally {
    await server.stop();
  }
}

/** Sends B's request and each of A's once, and checks the answers: a scenario answered 401 would measure nothing. */
async function verify(url: string, keyA: string, keyB: string, runId: string, say: (line: string) => void) {
  const base = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const b = await send(
      agent,
      base,
      { method: 'GET', path: B_PATH, headers: { authorization: `Bearer ${keyB}` } },
      1e6,
    );
    const items = b.status === 200 ? (JSON.parse(b.text) as { data: unknown[] }).data.length : 0;
    if (items !== 50) throw new Error(`B's GET ${B_PATH}: expected 200 with 50 contacts, got ${b.status}: ${b.text}`);
    const a = aRequests(keyA, `${runId}c`);
    for (const kind of ['batch', 'events', 'deep', 'deep', 'hostile'] as const) {
      const request = a.next(kind, 0);
      const answer = await send(agent, base, request, a.keep(kind));
      a.answered(kind, 0, answer);
      if (kind === 'hostile') {
        if (answer.status < 400 || answer.status >= 500)
          throw new Error(`A's hostile batch: expected a 4xx, got ${answer.status}: ${answer.text.slice(0, 300)}`);
        if (answer.status !== 422) say(`note: A's hostile batch was answered ${answer.status}, not 422`);
        const check = {
          status: answer.status,
          answer_bytes: answer.bytes,
          request_bytes: requestBytes(request),
          ms: round2(answer.ms),
        };
        say(
          `checked; A's hostile batch alone: ${check.status}, ${check.answer_bytes.toLocaleString('en')} bytes ` +
            `answering ${check.request_bytes.toLocaleString('en')} in ${check.ms} ms`,
        );
        return check;
      }
      if (answer.status !== 200)
        throw new Error(`A's ${A_KIND_LABELS[kind]}: ${answer.status} ${answer.text.slice(0, 300)}`);
    }
    throw new Error('unreachable');
  } finally {
    agent.destroy();
  }
}

/** A's load in a process of its own, built and ready to go. */
async function startA(key: string, runId: string) {
  const child = fork(join(ROOT, 'bench/noisy-a.ts'), [], {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const tracked = adopt('noisy neighbour, A', child);
  const message = <T>(type: string) => awaitMessage<T>(child, type);
  try {
    const ready = message('ready');
    child.send({ type: 'prepare', key, runId });
    await ready;
  } catch (err) {
    await tracked.stop();
    throw err;
  }
  const result = message<{ figures: AFigures }>('result');
  // Until finish() looks at it, a failure of A's process is held here rather than thrown unhandled.
  result.catch(() => undefined);
  return {
    go: (url: string) => child.send({ type: 'go', url }),
    /** Stops A, waits for its requests in flight, and returns its figures. */
    finish: async (): Promise<AFigures> => {
      child.send({ type: 'stop' });
      try {
        return (await result).figures;
      } finally {
        await tracked.stop();
      }
    },
  };
}

function awaitMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onMessage = (m: { type: string }) => {
      if (m.type !== type) return;
      child.off('exit', onExit);
      child.off('message', onMessage);
      resolve(m as T);
    };
    const onExit = (code: number | null, signal: string | null) => {
      child.off('message', onMessage);
      reject(new Error(`A's load process ended (${code ?? signal}) before it sent '${type}'`));
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Runs `bin/workspace-api ARGS --json` and returns what it printed. */
async function cli(env: Record<string, string | undefined>, args: string[]): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/workspace-api'), ...args, '--json'], {
    cwd: ROOT,
    env: definedOnly({ ...process.env, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tracked = adopt(`workspace-api ${args.slice(0, 2).join(' ')}`, child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (c) => resolve(c));
    });
    if (code !== 0) throw new Error(`workspace-api ${args.join(' ')} failed (${code}): ${err || out}`);
    return JSON.parse(out) as Record<string, unknown>;
  } finally {
    await tracked.stop();
  }
}

/** Drops and creates the PostgreSQL deployment's database; returns the server's version. */
async function recreateDatabase(url: string, log: (line: string) => void): Promise<string> {
  return withAdmin(url, async (client, name) => {
    log(`noisy neighbour: creating database ${name} anew`);
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    return (await client.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]!.v;
  });
}

function summarizeDeployment(
  d: Deployment,
  repetitions: DeploymentFigures['repetitions'],
  hostileCheck: DeploymentFigures['hostile_check'],
): DeploymentFigures {
  const medians = (side: 'alone' | 'beside') =>
    Object.fromEntries(
      Object.entries(FIGURES).map(([name, pick]) => [name, median(repetitions.map((r) => pick(r[side])))]),
    ) as Record<Figure, number>;
  const ratios = Object.fromEntries(
    Object.entries(FIGURES).map(([name, pick]) => {
      const each = repetitions.map((r) => pick(r.beside) / pick(r.alone)).sort((x, y) => x - y);
      return [name, { value: round2(median(each)), rounds: [round2(each[0]!), round2(each.at(-1)!)] }];
    }),
  ) as Record<Figure, Ratio>;
  const target = (figure: 'p50' | 'p99' | 'mean', label: string): NoisyTarget => {
    const r = ratios[figure];
    return {
      what: `B's ${label} beside A / alone`,
      target: `≤ ${NOISY_TARGETS[figure]}×`,
      measured: `${r.value}× (repetitions ${r.rounds[0]}–${r.rounds[1]}×)`,
      met: r.value <= NOISY_TARGETS[figure],
    };
  };
  return {
    deployment: d.deployment,
    how: d.how,
    server_processes: d.workers,
    repetitions,
    alone: medians('alone'),
    beside: medians('beside'),
    ratios,
    targets: [target('p50', 'p50'), target('p99', 'p99'), target('mean', 'mean latency')],
    a: combineA(repetitions.map((r) => r.a)),
    hostile_check: hostileCheck,
  };
}

const count = (n: number) => Math.round(n).toLocaleString('en');
const fmt = (n: number | null | undefined) =>
  n === null || n === undefined || Number.isNaN(n)
    ? '—'
    : Math.abs(n) >= 100
      ? Math.round(n).toLocaleString('en')
      : n.toFixed(2);

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function renderNoisyMarkdown(report: NoisyReport): string {
  const s = report.settings;
  const m = report.machine;
  const b = table(
    ['deployment', `B's GET ${B_PATH}`, 'p50 ms', 'p99 ms', 'mean ms', 'requests done', 'not 200'],
    report.deployments.flatMap((d) => {
      const notOk = (side: 'alone' | 'beside') => {
        const statuses: Record<string, number> = {};
        for (const r of d.repetitions)
          for (const [status, n] of Object.entries(r[side].statuses)) statuses[status] = (statuses[status] ?? 0) + n;
        const total = Object.values(statuses).reduce((a, b) => a + b, 0);
        const which = Object.entries(statuses).map(([status, n]) => `${n}× ${status}`);
        return total === 0 ? '0' : `${total} (${which.join(', ')})`;
      };
      return [
        [
          d.deployment,
          'alone',
          fmt(d.alone.p50),
          fmt(d.alone.p99),
          fmt(d.alone.mean),
          count(d.alone.completed),
          notOk('alone'),
        ],
        [
          '',
          'beside A',
          fmt(d.beside.p50),
          fmt(d.beside.p99),
          fmt(d.beside.mean),
          count(d.beside.completed),
          notOk('beside'),
        ],
        [
          '',
          'beside / alone',
          `${d.ratios.p50.value}×`,
          `${d.ratios.p99.value}×`,
          `${d.ratios.mean.value}×`,
          `${d.ratios.completed.value}×`,
          '',
        ],
      ];
    }),
  );
  const targets = table(
    ['target', 'deployment', 'wanted', 'measured', ''],
    report.deployments.flatMap((d) =>
      d.targets.map((t) => [t.what, d.deployment, t.target, t.measured, t.met ? 'PASS' : '**MISS**']),
    ),
  );
  const a = table(
    [
      "A's request",
      'deployment',
      'sent',
      '2xx',
      '422',
      '429',
      '503',
      'other',
      'no answer',
      'p50 ms, every answer',
      'slowest ms',
    ],
    report.deployments.flatMap((d) =>
      A_KINDS.map((kind) => {
        const k = d.a.kinds[kind];
        return [
          A_KIND_LABELS[kind],
          d.deployment,
          String(k.sent),
          String(k.answers['2xx']),
          String(k.answers['422']),
          String(k.answers['429']),
          String(k.answers['503']),
          String(k.answers.other),
          String(k.answers.error),
          fmt(k.p50_ms),
          fmt(k.max_ms),
        ];
      }),
    ),
  );
  const largest = report.deployments.map((d) => {
    const e = d.a.largest_error;
    const h = d.hostile_check;
    return (
      `- ${d.deployment}: ` +
      (e
        ? `the largest error answer A received was ${e.bytes.toLocaleString('en')} bytes (${e.status}, to a ${e.kind} request of ` +
          `${e.request_bytes.toLocaleString('en')} bytes: ${e.ratio}× its size)`
        : 'A received no error answer') +
      `; the hostile batch sent alone before the measurements was answered ${h.status} with ${h.answer_bytes.toLocaleString('en')} bytes ` +
      `in ${fmt(h.ms)} ms. A's slowest request: ${fmt(d.a.slowest?.ms)} ms (${d.a.slowest?.kind ?? '—'}, answered ${d.a.slowest?.status ?? '—'}).`
    );
  });
  const how =
    `How A's load is made (bench/noisy-client.ts, sent from a process of its own, bench/noisy-a.ts): a key of A with every scope ` +
    `and the default quota (600 a minute) keeps ${s.a_parallel} requests in flight, each slot sending its next request as soon as ` +
    `the previous one is answered and cycling through ${A_KINDS.length} kinds, so that each is always in flight: a batch upsert of ` +
    `${A_BATCH_ITEMS} valid contacts with every text at or near its longest (external ids of 128 characters, new on every ` +
    `request; names of 160, e-mails of 254, phones of 16); the same operation with a body of about 1 MiB, ${A_BATCH_ITEMS} items ` +
    `each carrying ${A_HOSTILE_PROPERTIES} properties the schema does not know, which is refused (422); the events feed filtered by ` +
    `every one of its event types, 100 a page; the list of contacts 100 a page from updated_after=${A_UPDATED_AFTER}, ` +
    `following its cursors ${A_DEEP_PAGES} pages in and starting again; a lookup of the list by the ${A_BATCH_ITEMS} external ids ` +
    `of the latest valid batch (a URL of about 13 KB); a batch upsert in partial mode, half its ${A_BATCH_ITEMS} items invalid, ` +
    `answered 207 with each invalid item's problems; and a batch delete of the ${A_BATCH_ITEMS} external ids of the oldest ` +
    `valid batch not yet deleted. Every write has Content-Type: application/json and an ` +
    `Idempotency-Key of its own. A 429 or 503 is counted and its Retry-After waited out (as long as it is under ` +
    `${A_RETRY_AFTER_HONOURED_BELOW_MS / 1000} s): A pushes as hard as its quota and limits let it. B's key reads contacts only, with a quota its ` +
    `${s.b_connections} connections never reach. Workspaces, keys and data (2,000 contacts each, and some of every other ` +
    `resource) are made with the owner CLI.`;
  return [
    `Run of ${report.date}: ${m.cores} cores, ${m.memory_gib} GiB, Node.js ${m.node}, PostgreSQL ${m.postgresql}. ` +
      `B: ${s.b_connections} connections in a closed loop; A: ${s.a_parallel} requests in flight. Each figure is the median of ` +
      `${s.repetitions} repetitions of ${s.duration} s (B alone, then B beside A, the other way round every other ` +
      `repetition), after ${s.warmup} s of both together; a ratio is the median of the repetitions' ratios. Whole ` +
      `scenario: ${report.total_seconds} s.`,
    '',
    ...report.deployments.map((d) => `- ${d.deployment}: ${d.how}.`),
    '',
    b,
    '',
    targets,
    '',
    "A's answers over the measured windows (every repetition):",
    '',
    a,
    '',
    ...largest,
    '',
    how,
  ].join('\n');
}

/** Writes the JSON, the run's result file and its section of docs/performance.md; returns the markdown. */
export async function writeNoisyResults(
  report: NoisyReport,
  paths: { json: string; performance: string; results: string },
): Promise<string> {
  mkdirSync(join(paths.json, '..'), { recursive: true });
  writeFileSync(paths.json, `${JSON.stringify(report, null, 2)}\n`);
  const markdown = renderNoisyMarkdown(report);
  await recordRun('noisy', report.date, markdown, paths);
  return markdown;
}

const USAGE = `Usage: npm run bench:noisy -- [--duration S] [--repetitions N] [--warmup S]

  --duration S     seconds of each measurement of B, alone and beside A (default 8)
  --repetitions N  repetitions per deployment; medians are reported (default 3)
  --warmup S       seconds of A and B together before the first repetition (default 2)

Environment: BENCH_NOISY_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/workspace_api_noisy),
dropped and created anew by every run.`;

export function parseNoisyOptions(argv: string[]): NoisyOptions | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string', default: '8' },
      repetitions: { type: 'string', default: '3' },
      warmup: { type: 'string', default: '2' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return null;
  }
  return {
    duration: wholeNumber('duration', values.duration, 1),
    repetitions: wholeNumber('repetitions', values.repetitions, 1),
    warmup: wholeNumber('warmup', values.warmup, 0),
    databaseUrl: noisyDatabaseUrl(),
  };
}

runAsScript(import.meta.url, 'bench:noisy', async (log) => {
  const options = parseNoisyOptions(process.argv.slice(2));
  if (options) await runNoisyNeighbour(options, log);
});
