// `npm run profile`: where the service's CPU goes per request, stage by stage. Starts the service
// (one worker, on the benchmark's dataset) under `--cpu-prof`, sends one scenario of the benchmark
// for a fixed time after a warm-up, stops it, and charges every profile sample taken during the
// measured time to a stage (bench/profile-analysis.ts). Prints the stages and the functions with
// the most self time; docs/performance.md keeps the summary before and after each change.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openDataset } from './dataset.js';
import { prepareFixtures } from './fixtures.js';
import { measureOnce } from './load.js';
import { ROOT, stopAll } from './processes.js';
import { summarizeProfile, type CpuProfile, type ProfileSummary } from './profile-analysis.js';
import { serviceScenarios, type Scenarios } from './scenarios.js';
import { startService } from './service.js';
import { parseOptions } from './settings.js';

const SCENARIOS = ['list', 'get', 'events', 'create', 'replay', 'upsert'] as const;
type ScenarioName = (typeof SCENARIOS)[number];

const USAGE = `Usage: npm run profile -- [--scenario ${SCENARIOS.join('|')}] [--duration S] [--warmup S] [--log-level warn|info]

Profiles the service (one worker, PostgreSQL and Redis, the benchmark's dataset) under one scenario
of the benchmark and prints CPU per request by stage. Writes bench-results/profile-<scenario>.json.`;

const log = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      scenario: { type: 'string', default: 'list' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      'log-level': { type: 'string', default: 'warn' },
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
    const server = await startService(
      {
        databaseUrl,
        redisUrl,
        workers: 1,
        logLevel,
        env: { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profiles}` },
      },
      fixtures,
    );
    log(`profiling ${scenario} at LOG_LEVEL=${logLevel}: ${warmup} s of warm-up, ${duration} s measured`);
    if (warmup > 0) await measureOnce(server.url, scenarios[scenario], warmup);
    await new Promise((r) => setTimeout(r, 500));
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const { repetition } = await measureOnce(server.url, scenarios[scenario], duration);
    const toUs = Number(process.hrtime.bigint() / 1000n);
    await server.stop(); // the profile is written as the process exits
    const file = readdirSync(profiles).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('the service wrote no CPU profile');
    const profile = JSON.parse(readFileSync(join(profiles, file), 'utf8')) as CpuProfile;
    const requests = repetition.answered + repetition.unexpected;
    const summary = summarizeProfile(profile, requests, { fromUs, toUs });
    const out = join(ROOT, `bench-results/profile-${scenario}.json`);
    writeFileSync(out, `${JSON.stringify({ scenario, logLevel, rps: repetition.rps, ...summary }, null, 2)}\n`);
    log(render(scenario, logLevel, repetition.rps, summary));
    log(`written: ${out}`);
  } finally {
    await stopAll();
    await db.close();
    rmSync(profiles, { recursive: true, force: true });
  }
}

function render(scenario: string, logLevel: string, rps: number, s: ProfileSummary): string {
  const f = (n: number) => n.toFixed(n >= 100 ? 0 : 1);
  const lines = [
    `\n${scenario}, LOG_LEVEL=${logLevel}: ${s.requests} requests (${rps} req/s), ${f(s.busy_ms)} ms of CPU sampled, ${f(s.us_per_request)} µs per request`,
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
