// The benchmark's writer (bench/report.ts) on made-up figures, in a directory of its own: a run goes
// into a result file named by its date and in place of the latest run in the performance page, the
// text around that section stays, and the files of earlier runs are left as they were. No store is
// involved: the same checks run in either mode.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { summarize, type Repetition } from '../bench/load.js';
import { buildReport, recordRun, resultFileName, writeResults, type Measured, type Report } from '../bench/report.js';

const dir = mkdtempSync(join(tmpdir(), 'wsapi-bench-report-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const paths = {
  json: join(dir, 'bench-results/latest.json'),
  performance: join(dir, 'docs/performance.md'),
  scaling: join(dir, 'docs/scaling.md'),
  results: join(dir, 'bench/results'),
};
const BEFORE = '# Performance\n\nHow to run it, what it measures, the targets.\n\n## Results of the last run\n\n';
const AFTER =
  '\n\n## Webhook delivery\n\nIts method.\n\n<!-- webhooks:start -->\n\nan earlier run\n\n<!-- webhooks:end -->\n';

/** A scenario measured in three rounds around `rps` requests a second and `serverMs` of CPU each. */
function measured(name: string, rps: number, serverMs: number): ReturnType<typeof summarize> {
  const reps: Repetition[] = [0.98, 1, 1.02].map((f) => ({
    rps: rps * f,
    p50_ms: 1000 / rps,
    p99_ms: 3000 / rps,
    answered: Math.round(rps * 6),
    unexpected: 0,
    cpu: {
      server_ms: serverMs * f,
      postgres_ms: serverMs,
      redis_ms: 0.03,
      generator_ms: 0.1,
      machine_cores: 1.7,
      others_cores: 0.1,
    },
  }));
  return summarize(name, 50, reps);
}

function fakeReport(date: string, listRps: number): Report {
  const names: (keyof Measured)[] = [
    'list',
    'get',
    'lookup',
    'appointments',
    'events',
    'create',
    'replay',
    'upsert',
    'batch',
    'listInfo',
    'listTwoWorkers',
    'bareList',
    'bareWrite',
    'bareHttp',
    'pgbench',
    'firstPage',
    'deepPage',
    'eventsFirst',
    'eventsLast',
  ];
  const m = Object.fromEntries(
    names.map((n, i) => [n, measured(n, n === 'list' ? listRps : 100 * (i + 1), 0.1 * (i + 1))]),
  ) as unknown as Measured;
  return buildReport(m, {
    date,
    machine: { cores: 2, memory_gib: 24, node: 'v20.0.0', postgresql: '15' },
    settings: { connections: 50, pool_size: 10, duration: 6, repetitions: 3, warmup: 2 },
    dataset: {
      version: 2,
      loaded_at: '2026-01-01T00:00:00.000Z',
      load_seconds: 100,
      workspaces: 100,
      contacts: 1_000_000,
      appointments: 500_000,
      events: 2_000_000,
      big_workspace_id: '00000000-0000-4000-8000-000000000001',
      write_workspace_id: '00000000-0000-4000-8000-000000000002',
      loaded_this_run: false,
    },
    appointments_in_window: 10_000,
    bare_list_identical: true,
    memory: [{ process: 'service', pid: 1, before_mib: 100, after_mib: 120 }],
    embedded: {
      contacts: 20_000,
      idle: { rss_mib: 300, heap_used_mib: 30, external_mib: 200 },
      under_load: { rss_mib: 350, heap_used_mib: 50, external_mib: 200 },
      peak_rss_mib: 360,
      list_rps: 500,
    },
    total_seconds: 700,
  });
}

/** What lies between the section's markers. */
const section = (doc: string, name: string) =>
  doc.slice(doc.indexOf(`<!-- ${name}:start -->`), doc.indexOf(`<!-- ${name}:end -->`));

test('a run writes its dated result file and replaces the latest run in the performance page', async () => {
  mkdirSync(join(dir, 'docs'));
  writeFileSync(paths.performance, `${BEFORE}<!-- bench:start -->\n\nan earlier run\n\n<!-- bench:end -->${AFTER}`);
  writeFileSync(paths.scaling, '# Scaling\n\n<!-- sizing:start -->\n\nold sizing\n\n<!-- sizing:end -->\n');

  const first = fakeReport('2026-11-26T08:56:56.931Z', 1_668);
  await writeResults(first, paths);
  const firstFile = join(paths.results, '2026-11-26-085656-bench.md');
  assert.deepEqual(readdirSync(paths.results), ['2026-11-26-085656-bench.md']);
  const firstText = readFileSync(firstFile, 'utf8');
  assert.match(
    firstText,
    /^# Benchmark: run of 2026-11-26T08:56:56\.931Z\n\nRun of 2026-11-26T08:56:56\.931Z: 2 cores/,
  );
  assert.match(firstText, /\| 1,668 /, "the run's own figures");

  let doc = readFileSync(paths.performance, 'utf8');
  assert.ok(doc.startsWith(`${BEFORE}<!-- bench:start -->`), 'the text before the section stays');
  assert.ok(doc.endsWith(`<!-- bench:end -->${AFTER}`), 'the text after it, another section included, stays');
  assert.doesNotMatch(doc, /an earlier run\n\n<!-- bench:end/);
  assert.match(section(doc, 'bench'), /Run of 2026-11-26T08:56:56\.931Z/);
  assert.match(section(doc, 'bench'), /\| 1,668 /);
  assert.match(
    section(doc, 'bench'),
    /This run's file: \[\.\.\/bench\/results\/2026-11-26-085656-bench\.md\]\(\.\.\/bench\/results\/2026-11-26-085656-bench\.md\)\./,
  );
  assert.match(readFileSync(paths.scaling, 'utf8'), /From the run of 2026-11-26T08:56:56\.931Z/);

  const second = fakeReport('2026-11-27T10:05:01.002Z', 2_345);
  await writeResults(second, paths);
  assert.deepEqual(readdirSync(paths.results).sort(), ['2026-11-26-085656-bench.md', '2026-11-27-100501-bench.md']);
  assert.equal(readFileSync(firstFile, 'utf8'), firstText, "an earlier run's file is left as it was");
  assert.match(readFileSync(join(paths.results, '2026-11-27-100501-bench.md'), 'utf8'), /\| 2,345 /);
  doc = readFileSync(paths.performance, 'utf8');
  assert.match(section(doc, 'bench'), /Run of 2026-11-27T10:05:01\.002Z/);
  assert.doesNotMatch(doc, /2026-11-26T08:56|1,668/, 'only the latest run stays in the page');
  assert.match(section(doc, 'bench'), /\(\.\.\/bench\/results\/2026-11-27-100501-bench\.md\)/);
  assert.ok(doc.startsWith(BEFORE) && doc.endsWith(`<!-- bench:end -->${AFTER}`));
  assert.equal(JSON.parse(readFileSync(paths.json, 'utf8')).date, '2026-11-27T10:05:01.002Z');
  assert.match(readFileSync(paths.scaling, 'utf8'), /From the run of 2026-11-27T10:05:01\.002Z/);
});

test('the other kinds of run keep their own section and name their files by kind', async () => {
  const file = await recordRun('webhooks', '2026-11-28T00:00:09.000Z', 'Run of 2026-11-28: 3,302 events/s.', paths);
  assert.equal(file, join(paths.results, '2026-11-28-000009-webhooks.md'));
  assert.match(
    readFileSync(file, 'utf8'),
    /^# Webhook delivery: run of 2026-11-28T00:00:09\.000Z\n\nRun of 2026-11-28/,
  );
  const doc = readFileSync(paths.performance, 'utf8');
  assert.match(section(doc, 'webhooks'), /3,302 events\/s[\s\S]*2026-11-28-000009-webhooks\.md/);
  assert.doesNotMatch(doc, /an earlier run/);
  assert.match(section(doc, 'bench'), /Run of 2026-11-27T10:05:01\.002Z/, 'the benchmark section is untouched');
  await assert.rejects(recordRun('noisy', '2026-11-28T00:00:10.000Z', 'x', paths), /no <!-- noisy:start -->/);
  assert.throws(() => resultFileName('bench', 'yesterday'), /not an ISO 8601 date/);
});
