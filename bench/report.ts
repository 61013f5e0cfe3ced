// Turns the measurements into the report: ratios to the baselines, each target beside the figure it
// judges, the cost growth and memory tables. The same markdown goes to stdout, into the run's own
// result file (bench/results/) and in place of the latest run's in docs/performance.md; the JSON
// holds every repetition as well.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { Dataset } from './dataset.js';
import type { EmbeddedMemory } from './embedded.js';
import { median, type Measurement, type Repetition } from './load.js';
import type { MemorySample } from './processes.js';
import * as prettier from 'prettier';
import { BATCH_SIZE, CONNECTIONS, DATASET, DEEP_PAGE, LIST_LIMIT, TARGETS } from './settings.js';

export interface Measured {
  list: Measurement;
  get: Measurement;
  lookup: Measurement;
  appointments: Measurement;
  events: Measurement;
  create: Measurement;
  replay: Measurement;
  upsert: Measurement;
  batch: Measurement;
  listInfo: Measurement;
  listTwoWorkers: Measurement;
  bareList: Measurement;
  bareWrite: Measurement;
  bareHttp: Measurement;
  pgbench: Measurement;
  firstPage: Measurement;
  deepPage: Measurement;
  eventsFirst: Measurement;
  eventsLast: Measurement;
}

export interface Context {
  date: string;
  machine: { cores: number; memory_gib: number; node: string; postgresql: string };
  settings: Record<string, number>;
  dataset: Dataset & { loaded_this_run: boolean };
  /** how many appointments the measured date window holds in the big workspace */
  appointments_in_window: number;
  /** whether the bare Fastify list answered the service's items byte for byte */
  bare_list_identical: boolean;
  memory: MemorySample[];
  /** the embedded store (PGlite) at idle and under the list load */
  embedded: EmbeddedMemory;
  total_seconds: number;
}

interface Ratio {
  of: string;
  to: string;
  /** what is compared: req/s, p50 latency or the server process's CPU per request */
  by: 'req/s' | 'p50' | 'server CPU' | 'contacts/s';
  /** the median over the rounds of the ratio within each round */
  value: number;
  /** the lowest and highest ratio of one round */
  rounds: [number, number];
}

interface Target {
  what: string;
  target: string;
  measured: string;
  met: boolean;
}

export interface Report extends Context {
  measured: Measured;
  ratios: Ratio[];
  targets: Target[];
}

const round2 = (n: number) => Math.round(n * 100) / 100;
const rps = (r: Repetition) => r.rps;
const p50 = (r: Repetition) => r.p50_ms;
const serverCpu = (r: Repetition) => r.cpu?.server_ms ?? Number.NaN;

/**
 * `a` against `b`, round by round: the median of the rounds' ratios, and their range. Every scenario
 * is measured once a round, and those compared are measured one after the other (bench/run.ts), so
 * the two figures of a round met about the same machine; the machine's speed drifts over minutes
 * (other people's work shares it), and the medians of each side alone may come from rounds far apart.
 */
function paired(a: Measurement, b: Measurement, figure: (r: Repetition) => number, scale = 1) {
  const each = a.repetitions.map((r, i) => (figure(r) * scale) / figure(b.repetitions[i]!));
  const sorted = [...each].sort((x, y) => x - y);
  return { value: round2(median(sorted)), rounds: [round2(sorted[0]!), round2(sorted.at(-1)!)] as [number, number] };
}

export function buildReport(m: Measured, context: Context): Report {
  const ratios: Ratio[] = [
    { of: 'list', to: 'bare Fastify', by: 'req/s', ...paired(m.list, m.bareList, rps) },
    { of: 'list, README defaults', to: 'bare Fastify', by: 'req/s', ...paired(m.listInfo, m.bareList, rps) },
    { of: 'list', to: 'bare node:http', by: 'req/s', ...paired(m.list, m.bareHttp, rps) },
    { of: 'list', to: 'pgbench', by: 'req/s', ...paired(m.list, m.pgbench, rps) },
    { of: 'bare Fastify list', to: 'pgbench', by: 'req/s', ...paired(m.bareList, m.pgbench, rps) },
    { of: 'POST', to: 'bare transaction', by: 'req/s', ...paired(m.create, m.bareWrite, rps) },
    { of: 'PUT upsert', to: 'bare transaction', by: 'req/s', ...paired(m.upsert, m.bareWrite, rps) },
    { of: 'replay', to: 'bare transaction', by: 'req/s', ...paired(m.replay, m.bareWrite, rps) },
    {
      of: 'batch upsert',
      to: 'single upserts (PUT)',
      by: 'contacts/s',
      ...paired(m.batch, m.upsert, rps, BATCH_SIZE),
    },
    { of: 'list, 2 workers', to: 'list, 1 worker', by: 'req/s', ...paired(m.listTwoWorkers, m.list, rps) },
    { of: 'list', to: 'bare Fastify', by: 'server CPU', ...paired(m.list, m.bareList, serverCpu) },
    { of: 'list, README defaults', to: 'bare Fastify', by: 'server CPU', ...paired(m.listInfo, m.bareList, serverCpu) },
    { of: 'lookup by e-mail', to: 'get by id', by: 'p50', ...paired(m.lookup, m.get, p50) },
    { of: 'deep page', to: 'page 1', by: 'p50', ...paired(m.deepPage, m.firstPage, p50) },
    { of: 'events last page', to: 'events first page', by: 'p50', ...paired(m.eventsLast, m.eventsFirst, p50) },
  ];
  // Without `by`, the first ratio of the pair: req/s where there is one.
  const r = (of: string, to: string, by?: Ratio['by']) =>
    ratios.find((x) => x.of === of && x.to === to && (by === undefined || x.by === by))!;
  const roundsText = (x: Ratio) => ` (rounds ${x.rounds[0]}–${x.rounds[1]}×)`;
  const atMost = (what: string, x: Ratio, max: number): Target => ({
    what,
    target: `≤ ${max}×`,
    measured: `${x.value}×${roundsText(x)}`,
    met: x.value <= max,
  });
  const atLeast = (what: string, x: Ratio, min: number): Target => ({
    what,
    target: `≥ ${min}×`,
    measured: `${x.value}×${roundsText(x)}`,
    met: x.value >= min,
  });
  const targets: Target[] = [
    atLeast(
      'list req/s (LOG_LEVEL=warn, Redis) vs bare Fastify route',
      r('list', 'bare Fastify'),
      TARGETS.listVsBareFastify,
    ),
    atLeast(
      'list req/s, README defaults (LOG_LEVEL=info, no Redis) vs bare Fastify route',
      r('list, README defaults', 'bare Fastify'),
      TARGETS.listDefaultsVsBareFastify,
    ),
    atMost(
      'server CPU per list request (LOG_LEVEL=warn, Redis) vs bare Fastify route',
      r('list', 'bare Fastify', 'server CPU'),
      TARGETS.listCpuVsBareFastify,
    ),
    atMost(
      'server CPU per list request, README defaults vs bare Fastify route',
      r('list, README defaults', 'bare Fastify', 'server CPU'),
      TARGETS.listDefaultsCpuVsBareFastify,
    ),
    {
      what: `list p99 at ${CONNECTIONS} connections`,
      target: `< ${TARGETS.listP99Ms} ms`,
      measured: `${m.list.p99_ms} ms`,
      met: m.list.p99_ms < TARGETS.listP99Ms,
    },
    atLeast('POST req/s vs bare transaction', r('POST', 'bare transaction'), TARGETS.writeVsBareTransaction),
    atLeast(
      'PUT upsert req/s vs bare transaction',
      r('PUT upsert', 'bare transaction'),
      TARGETS.writeVsBareTransaction,
    ),
    {
      what: 'server CPU per events page (100 events)',
      target: `≤ ${TARGETS.eventsPageServerCpuMs} ms`,
      measured: `${round2(m.events.cpu?.server_ms ?? Number.NaN)} ms`,
      met: (m.events.cpu?.server_ms ?? Number.NaN) <= TARGETS.eventsPageServerCpuMs,
    },
    atMost(
      `lookup by e-mail among ${DATASET.bigWorkspaceContacts.toLocaleString('en')} contacts vs get by id (p50)`,
      r('lookup by e-mail', 'get by id'),
      TARGETS.lookupVsGet,
    ),
    atMost(
      `page ${DEEP_PAGE.toLocaleString('en')} pages deep vs page 1 (p50)`,
      r('deep page', 'page 1'),
      TARGETS.deepVsFirstPage,
    ),
    atLeast(
      `contacts/s through batch upserts of ${BATCH_SIZE} vs single upserts`,
      r('batch upsert', 'single upserts (PUT)'),
      TARGETS.batchVsSingleUpsert,
    ),
    {
      what: `PostgreSQL CPU per batch upsert of ${BATCH_SIZE}`,
      target: `≤ ${TARGETS.batchPostgresCpuMs} ms`,
      measured: `${round2(m.batch.cpu?.postgres_ms ?? Number.NaN)} ms`,
      met: (m.batch.cpu?.postgres_ms ?? Number.NaN) <= TARGETS.batchPostgresCpuMs,
    },
    atLeast('list req/s, 2 workers vs 1', r('list, 2 workers', 'list, 1 worker'), TARGETS.twoWorkersVsOne),
  ];
  return { ...context, measured: m, ratios, targets };
}

const fmt = (n: number) => (Number.isNaN(n) ? '—' : n >= 100 ? Math.round(n).toLocaleString('en') : n.toFixed(2));

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function renderMarkdown(report: Report): string {
  const m = report.measured;
  const d = report.dataset;
  const ratioText = (of: string) =>
    report.ratios
      .filter((x) => x.of === of && (x.by === 'req/s' || x.by === 'contacts/s'))
      .map((x) => (x.by === 'req/s' ? `${x.value}× ${x.to}` : `${x.value}× the contacts/s of ${x.to}`))
      .join(', ') || '';
  const unexpected = (x: Measurement) =>
    Object.keys(x.unexpected).length === 0
      ? ''
      : ` (unexpected: ${Object.entries(x.unexpected)
          .map(([status, n]) => `${n}× ${status}`)
          .join(', ')})`;
  const rows: [label: string, x: Measurement, ratiosOf?: string][] = [
    ['GET /v1/contacts?limit=50', m.list, 'list'],
    ['GET /v1/contacts/{id}', m.get],
    [`GET /v2/contacts?email=… (one of ${DATASET.bigWorkspaceContacts.toLocaleString('en')}, any case)`, m.lookup],
    [
      `GET /v1/appointments, 7-day window (${report.appointments_in_window.toLocaleString('en')} in it)`,
      m.appointments,
    ],
    ['GET /v2/events?limit=100', m.events],
    ['POST /v1/contacts, new Idempotency-Key each', m.create, 'POST'],
    ['POST /v1/contacts, Idempotency-Key replay', m.replay, 'replay'],
    ['PUT /v1/contacts/external/{id}, new key each', m.upsert, 'PUT upsert'],
    [`POST /v2/contacts/batch/upsert, ${BATCH_SIZE} contacts each`, m.batch, 'batch upsert'],
    ['GET /v1/contacts?limit=50, README defaults: LOG_LEVEL=info, no Redis', m.listInfo, 'list, README defaults'],
    ['GET /v1/contacts?limit=50, 2 workers', m.listTwoWorkers, 'list, 2 workers'],
    ['baseline: bare Fastify, same SQL, response schema', m.bareList, 'bare Fastify list'],
    ['baseline: bare Fastify, same inserts in one transaction', m.bareWrite],
    ['baseline: bare node:http, same response bytes', m.bareHttp],
    ['baseline: pgbench, same SQL, prepared (clients = pool)', m.pgbench],
  ];
  const throughput = table(
    ['request', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'ratio (req/s) to'],
    rows.map(([label, x, of]) => [
      label + unexpected(x),
      String(x.connections),
      fmt(x.rps),
      fmt(x.p50_ms),
      fmt(x.p99_ms),
      of ? ratioText(of) : '',
    ]),
  );
  const orDash = (n: number | null | undefined) => (n === null || n === undefined ? '—' : fmt(n));
  const cpu = table(
    ['request', 'server', 'PostgreSQL', 'Redis', 'load generator', 'machine busy, cores', 'of which others'],
    rows.map(([label, x]) => [
      label,
      orDash(x.cpu?.server_ms),
      orDash(x.cpu?.postgres_ms),
      orDash(x.cpu?.redis_ms),
      orDash(x.cpu?.generator_ms),
      orDash(x.cpu?.machine_cores),
      orDash(x.cpu?.others_cores),
    ]),
  );
  const targets = table(
    ['target', 'wanted', 'measured', ''],
    report.targets.map((t) => [t.what, t.target, t.measured, t.met ? 'met' : '**missed**']),
  );
  const p50ratio = (of: string) => `${report.ratios.find((x) => x.of === of && x.by === 'p50')!.value}×`;
  const growth = table(
    ['request, 1 connection', 'p50 ms', 'p99 ms', 'p50 vs the first'],
    [
      ['GET /v1/contacts?limit=50, page 1', fmt(m.firstPage.p50_ms), fmt(m.firstPage.p99_ms), ''],
      [
        `GET /v1/contacts?limit=50, page ${(DEEP_PAGE + 1).toLocaleString('en')} (cursor after row ${(DEEP_PAGE * LIST_LIMIT).toLocaleString('en')})`,
        fmt(m.deepPage.p50_ms),
        fmt(m.deepPage.p99_ms),
        p50ratio('deep page'),
      ],
      ['GET /v2/events?limit=100, first page', fmt(m.eventsFirst.p50_ms), fmt(m.eventsFirst.p99_ms), ''],
      [
        'GET /v2/events?limit=100, last page (after=)',
        fmt(m.eventsLast.p50_ms),
        fmt(m.eventsLast.p99_ms),
        p50ratio('events last page'),
      ],
    ],
  );
  const memory = table(
    ['process', 'RSS before MiB', 'RSS after MiB'],
    report.memory.map((s) => [s.process, fmt(s.before_mib ?? Number.NaN), fmt(s.after_mib ?? Number.NaN)]),
  );
  const e = report.embedded;
  const embedded = table(
    ['embedded store (PGlite), 1 process', 'RSS MiB', 'JavaScript heap used MiB', 'outside the heap MiB'],
    [
      ['idle, after start', fmt(e.idle.rss_mib ?? Number.NaN), fmt(e.idle.heap_used_mib), fmt(e.idle.external_mib)],
      [
        `after ${report.settings.duration} s of the list at ${CONNECTIONS} connections (${fmt(e.list_rps)} req/s)`,
        fmt(e.under_load.rss_mib ?? Number.NaN),
        fmt(e.under_load.heap_used_mib),
        fmt(e.under_load.external_mib),
      ],
      ['highest RSS during the load', fmt(e.peak_rss_mib), '', ''],
    ],
  );
  const s = report.settings;
  return [
    `Run of ${report.date}: ${report.machine.cores} cores, ${report.machine.memory_gib} GiB, Node.js ${report.machine.node}, ` +
      `PostgreSQL ${report.machine.postgresql}. Dataset: ${d.workspaces} workspaces, ${d.contacts.toLocaleString('en')} contacts, ` +
      `${d.appointments.toLocaleString('en')} appointments, ${d.events.toLocaleString('en')} events ` +
      `(${d.loaded_this_run ? `loaded by this run in ${d.load_seconds} s` : `loaded ${d.loaded_at} in ${d.load_seconds} s, reused`}). ` +
      `Each figure is the median of ${s.repetitions} runs of ${s.duration} s after ${s.warmup} s of warm-up; ` +
      `server pools ${s.pool_size} connections. Whole run: ${Math.round(report.total_seconds)} s.`,
    '',
    throughput,
    '',
    report.bare_list_identical
      ? 'The bare Fastify route answered the same items as the service, byte for byte (its cursor is its own).'
      : 'The bare Fastify route did **not** answer the same items as the service: see bench-results/latest.json.',
    '',
    targets,
    '',
    'CPU milliseconds per request, by process (medians), and how busy the two cores were meanwhile:',
    '',
    cpu,
    '',
    growth,
    '',
    memory,
    '',
    `The embedded store, with ${e.contacts.toLocaleString('en')} contacts in one workspace:`,
    '',
    embedded,
  ].join('\n');
}

/**
 * What one core serves, from the CPU each request took: the table docs/scaling.md sizes a
 * deployment with, and a worked example at 60% busy.
 */
function renderSizing(report: Report): string {
  const m = report.measured;
  const rows: [string, Measurement][] = [
    ['GET /v1/contacts?limit=50', m.list],
    ['GET /v1/contacts/{id}', m.get],
    [`GET /v2/contacts?email=… (one of ${DATASET.bigWorkspaceContacts.toLocaleString('en')}, any case)`, m.lookup],
    ['GET /v1/appointments, 7-day window', m.appointments],
    ['GET /v2/events?limit=100', m.events],
    ['POST /v1/contacts', m.create],
    ['POST /v1/contacts, replay', m.replay],
    ['PUT /v1/contacts/external/{id}', m.upsert],
    [`POST /v2/contacts/batch/upsert (${BATCH_SIZE} contacts)`, m.batch],
  ];
  const perCore = (ms: number | null | undefined) => (ms ? fmt(1000 / ms) : '—');
  const orDash = (n: number | null | undefined) => (n === null || n === undefined ? '—' : fmt(n));
  const sizing = table(
    [
      'request',
      'service CPU ms',
      'req/s per service core',
      'PostgreSQL CPU ms',
      'req/s per database core',
      'Redis CPU ms',
    ],
    rows.map(([label, x]) => [
      label,
      orDash(x.cpu?.server_ms),
      perCore(x.cpu?.server_ms),
      orDash(x.cpu?.postgres_ms),
      perCore(x.cpu?.postgres_ms),
      orDash(x.cpu?.redis_ms),
    ]),
  );
  // A sync-heavy mix: list pages, gets, and a tenth as many creates.
  const mix: [number, Measurement][] = [
    [1000, m.list],
    [1000, m.get],
    [100, m.create],
  ];
  const cores = (pick: (x: Measurement) => number | null | undefined) => {
    const n = mix.reduce((sum, [rate, x]) => sum + rate * (pick(x) ?? 0), 0) / 1000 / 0.6;
    // A small share keeps its second digit: Redis's would otherwise read "0.0".
    return n < 0.1 ? n.toFixed(2) : n.toFixed(1);
  };
  return [
    `From the run of ${report.date} (${report.machine.cores} cores, Node.js ${report.machine.node}, PostgreSQL ${report.machine.postgresql}):`,
    '',
    sizing,
    '',
    `For example, 1,000 list pages, 1,000 gets and 100 creates per second, with every core at most 60% busy, need about ` +
      `${cores((x) => x.cpu?.server_ms)} service cores, ${cores((x) => x.cpu?.postgres_ms)} database cores and ` +
      `${cores((x) => x.cpu?.redis_ms)} of a Redis core.`,
  ].join('\n');
}

/** Replaces what lies between `<!-- NAME:start -->` and `<!-- NAME:end -->` in a markdown file, formatted as the repository formats markdown. */
export async function rewriteSection(path: string, name: string, markdown: string): Promise<void> {
  const doc = readFileSync(path, 'utf8');
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (from < 0 || to < from) throw new Error(`${path} has no ${start} … ${end} section to rewrite`);
  const rewritten = `${doc.slice(0, from + start.length)}\n\n${markdown}\n\n${doc.slice(to)}`;
  const options = (await prettier.resolveConfig(path)) ?? {};
  writeFileSync(path, await prettier.format(rewritten, { ...options, filepath: path }));
}

/** The kinds of run that keep their latest results in docs/performance.md, and the title of each one's file. */
const RUN_TITLES = {
  bench: 'Benchmark',
  webhooks: 'Webhook delivery',
  noisy: 'One workspace beside another (noisy neighbour)',
  replicas: 'Reads on a streaming replica',
} as const;
export type RunKind = keyof typeof RUN_TITLES;

/** The result file of a run of `kind` started at `date` (ISO 8601, UTC): YYYY-MM-DD-HHMMSS-kind.md. */
export function resultFileName(kind: RunKind, date: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}):(\d{2})/.exec(date);
  if (!m) throw new Error(`not an ISO 8601 date: ${date}`);
  return `${m[1]}-${m[2]}${m[3]}${m[4]}-${kind}.md`;
}

/**
 * Records one run: its markdown goes into a result file of its own in `paths.results` (named by
 * the run's date, resultFileName), and replaces the latest run of its kind in `paths.performance`
 * (the `<!-- KIND:start -->` … `<!-- KIND:end -->` section), with a link to that file; the files of
 * earlier runs stay as they are. Returns the result file's path.
 */
export async function recordRun(
  kind: RunKind,
  date: string,
  markdown: string,
  paths: { performance: string; results: string },
): Promise<string> {
  mkdirSync(paths.results, { recursive: true });
  const file = join(paths.results, resultFileName(kind, date));
  const options = (await prettier.resolveConfig(file)) ?? {};
  const text = `# ${RUN_TITLES[kind]}: run of ${date}\n\n${markdown}\n`;
  writeFileSync(file, await prettier.format(text, { ...options, filepath: file }));
  const link = relative(dirname(paths.performance), file).split('\\').join('/');
  await rewriteSection(paths.performance, kind, `${markdown}\n\nThis run's file: [${link}](${link}).`);
  return file;
}

/**
 * Writes the JSON, the run's result file and its results into docs/performance.md (recordRun), and
 * the sizing table into docs/scaling.md.
 */
export async function writeResults(
  report: Report,
  paths: { json: string; performance: string; scaling: string; results: string },
): Promise<string> {
  mkdirSync(dirname(paths.json), { recursive: true });
  writeFileSync(paths.json, `${JSON.stringify(report, null, 2)}\n`);
  const markdown = renderMarkdown(report);
  await recordRun('bench', report.date, markdown, paths);
  await rewriteSection(paths.scaling, 'sizing', renderSizing(report));
  return markdown;
}
