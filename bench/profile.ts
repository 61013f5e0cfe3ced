// `npm run profile`: where the service's CPU goes per request, stage by stage. Starts the service
// (one worker, on the benchmark's dataset) under `--cpu-prof`, sends one scenario of the benchmark
// for a fixed time after a warm-up, stops it, and charges every profile sample taken during the
// measured time to a stage (bench/profile-analysis.ts). Prints the stages and the functions with
// the most self time; a change it guides keeps its before-and-after summary in bench/results/.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openDataset, type Dataset } from './dataset.js';
import { prepareFixtures } from './fixtures.js';
import { measureOnce } from './load.js';
import { freePort, ROOT, startServer, stopAll } from './processes.js';
import { summarizeProfile, type CpuProfile, type ProfileSummary } from './profile-analysis.js';
import { serviceScenarios, type Scenarios } from './scenarios.js';
import { startService } from './service.js';
import { parseOptions, POOL_SIZE, wholeNumber } from './settings.js';

const SCENARIOS = ['list', 'get', 'events', 'create', 'replay', 'upsert', 'batch'] as const;
type ScenarioName = (typeof SCENARIOS)[number];

const USAGE = `Usage: npm run profile -- [--scenario ${SCENARIOS.join('|')}] [--duration S] [--warmup S] [--log-level warn|info] [--counts redis|postgres] [--rate N] [--bare]

Profiles the service (one worker, PostgreSQL, the rate-limit counts in Redis or with --counts postgres
in PostgreSQL, the benchmark's dataset) under one scenario of the benchmark and prints CPU per request by stage; --bare profiles the bare Fastify list instead,
for comparison. --rate N sends N requests a second instead of as many as the server answers: with
cores to spare, the samples are the process's own work rather than waits for a core. Writes bench-results/profile-<scenario>.json and the .cpuprofile beside it.`;

const log = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      scenario: { type: 'string', default: 'list' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      'log-level': { type: 'string', default: 'warn' },
      counts: { type: 'string', default: 'redis' },
      rate: { type: 'string' },
      bare: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    log(USAGE);
    return;
  }
  const scenario = values.scenario as ScenarioName;
  if (!SCENARIOS.includes(scenario)) throw new Error(`--scenario must be one of ${SCENARIOS.join(', ')}`);
  const logLevel = values['log-level'];
  if (logLevel !== 'warn' && logLevel !== 'info') throw new Error('--log-level must be warn or info');
  const counts = values.counts;
  if (counts !== 'redis' && counts !== 'postgres') throw new Error('--counts must be redis or postgres');
  const duration = Number(values.duration);
  const warmup = Number(values.warmup);
  const { databaseUrl, redisUrl } = parseOptions([])!;

  const interrupted = () => void stopAll().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const profiles = mkdtempSync(join(tmpdir(), 'profile-'));
  const { db, dataset } = await openDataset(databaseUrl, false, log);
  try {
    const fixtures = await prepareFixtures(db, dataset);
    const scenarios: Scenarios = serviceScenarios(fixtures, `p${Date.now().toString(36)}`);
    const profiling = ['--cpu-prof', `--cpu-prof-dir=${profiles}`];
    if (values.bare && scenario !== 'list') throw new Error('--bare profiles the bare Fastify list: --scenario list');
    const server = values.bare
      ? await startBareFastify(profiling, databaseUrl, dataset)
      : await startService({
          databaseUrl,
          redisUrl: counts === 'redis' ? redisUrl : null,
          workers: 1,
          logLevel,
          nodeArgs: profiling,
        });
    const rate = values.rate === undefined ? {} : { rate: wholeNumber('rate', values.rate, 1) };
    const load = {
      ...(values.bare ? { ...scenarios.list, path: '/contacts', headers: {} } : scenarios[scenario]),
      ...rate,
    };
    const label = values.bare ? 'bare Fastify list' : `${scenario}, LOG_LEVEL=${logLevel}, counts in ${counts}`;
    log(`profiling ${label}: ${warmup} s of warm-up, ${duration} s measured`);
    if (warmup > 0) await measureOnce(server.url, load, warmup);
    await new Promise((r) => setTimeout(r, 500));
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const cpuBefore = processCpuMs(server.pid);
    const { repetition } = await measureOnce(server.url, load, duration);
    const cpuMs = processCpuMs(server.pid) - cpuBefore;
    const toUs = Number(process.hrtime.bigint() / 1000n);
    await server.stop(); // the profile is written as the process exits
    mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
    const file = readdirSync(profiles).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('the service wrote no CPU profile');
    const raw = readFileSync(join(profiles, file), 'utf8');
    const profile = JSON.parse(raw) as CpuProfile;
    // For reading in Chrome's DevTools or speedscope.
    writeFileSync(join(ROOT, `bench-results/profile-${values.bare ? 'bare-list' : scenario}.cpuprofile`), raw);
    const requests = repetition.answered + repetition.unexpected;
    const summary = summarizeProfile(profile, requests, { fromUs, toUs });
    const name = values.bare ? 'bare-list' : scenario;
    const out = join(ROOT, `bench-results/profile-${name}.json`);
    const cpuUsPerRequest = (cpuMs * 1000) / requests;
    writeFileSync(
      out,
      `${JSON.stringify({ scenario: label, rps: repetition.rps, cpu_us_per_request: cpuUsPerRequest, ...summary }, null, 2)}\n`,
    );
    log(render(label, repetition.rps, cpuUsPerRequest, summary));
    log(`written: ${out}`);
  } finally {
    await stopAll();
    await db.close();
    rmSync(profiles, { recursive: true, force: true });
  }
}

/** The bare Fastify baseline of the benchmark (bench/baseline-fastify.ts), under the profiler. */
async function startBareFastify(nodeArgs: string[], databaseUrl: string, dataset: Dataset) {
  const port = await freePort();
  return startServer(
    'bare Fastify',
    process.execPath,
    [...nodeArgs, '--import', 'tsx', join(ROOT, 'bench/baseline-fastify.ts')],
    {
      DATABASE_URL: databaseUrl,
      POOL_SIZE: String(POOL_SIZE),
      LIST_WORKSPACE_ID: dataset.big_workspace_id,
      WRITE_WORKSPACE_ID: dataset.write_workspace_id,
      PORT: String(port),
    },
    port,
    '/readyz',
  );
}

/** CPU time (user and system) the process has used so far, ms, from /proc (clock ticks of 10 ms). */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function render(label: string, rps: number, cpuUs: number, s: ProfileSummary): string {
  const f = (n: number) => n.toFixed(n >= 100 ? 0 : 1);
  const lines = [
    `\n${label}: ${s.requests} requests (${rps} req/s); the process used ${f(cpuUs)} µs of CPU per request (/proc); ` +
      `the profiler sampled ${f(s.us_per_request)} µs per request on its thread, split below (wall clock while not idle: waits for a core count)`,
    '',
    '| stage | µs per request | share |',
    '| --- | --- | --- |',
    ...s.stages.map((x) => `| ${x.stage} | ${f(x.us_per_request)} | ${(x.share * 100).toFixed(1)}% |`),
    '',
    '| function (self time) | where | µs per request |',
    '| --- | --- | --- |',
    ...s.top.map((t) => `| ${t.fn} | ${t.where} | ${f(t.us_per_request)} |`),
  ];
  return lines.join('\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`profile: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
