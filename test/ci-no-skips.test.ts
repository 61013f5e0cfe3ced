// CI fails when a test is skipped (.ci/no-skips wraps every test command of .ci/run): a suite that
// skips a test whose server is missing passes on a newcomer's machine, and must not pass in CI.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';

const ROOT = resolve(import.meta.dirname, '..');
const NO_SKIPS = join(ROOT, '.ci', 'no-skips');
const dir = mkdtempSync(join(tmpdir(), 'workspace-api-no-skips-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a test file of the given body under .ci/no-skips, as .ci/run runs the suite. */
function underNoSkips(body: string, reporterArgs: string[] = []): Promise<{ code: number; output: string }> {
  const file = join(dir, `case-${Math.random().toString(36).slice(2)}.test.mjs`);
  writeFileSync(file, `import { test } from 'node:test';\n${body}\n`);
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  return new Promise((done) => {
    execFile('bash', [NO_SKIPS, process.execPath, '--test', ...reporterArgs, file], { env }, (err, stdout, stderr) => {
      done({ code: err ? Number(err.code) : 0, output: stdout + stderr });
    });
  });
}

describe('.ci/no-skips', () => {
  test('passes a run where every test ran and passed', async () => {
    const { code, output } = await underNoSkips(`test('runs', () => {});`);
    assert.equal(code, 0, output);
  });

  test('fails a run that skipped a test, naming it and its reason', async () => {
    const { code, output } = await underNoSkips(
      `test('runs', () => {});\ntest('needs a server', { skip: 'needs Redis: nothing listens' }, () => {});`,
    );
    assert.equal(code, 1, output);
    assert.match(output, /no-skips: 1 test\(s\) and 1 test\(s\) or suite\(s\) marked skipped/);
    assert.match(output, /needs a server # SKIP needs Redis: nothing listens/);
  });

  test('fails a run that skipped a suite, which the summary does not count', async () => {
    const { code, output } = await underNoSkips(
      `import { describe } from 'node:test';\ntest('runs', () => {});\n` +
        `describe('needs PostgreSQL', { skip: 'nothing listens' }, () => { test('inner', () => {}); });`,
    );
    assert.equal(code, 1, output);
    assert.match(output, /needs PostgreSQL # SKIP nothing listens/);
  });

  test('fails a run whose output has no TAP summary, where a skip could not be seen', async () => {
    const { code, output } = await underNoSkips(`test('needs a server', { skip: 'needs Redis' }, () => {});`, [
      '--test-reporter=spec',
    ]);
    assert.equal(code, 1, output);
    assert.match(output, /no-skips: no TAP summary/);
  });

  test("keeps a failing run's own exit status", async () => {
    const { code, output } = await underNoSkips(`test('fails', () => { throw new Error('no'); });`);
    assert.equal(code, 1, output);
    assert.doesNotMatch(output, /no-skips:/);
  });

  test('wraps every test command of .ci/run', () => {
    const commands = readFileSync(join(ROOT, '.ci', 'run'), 'utf8')
      .split('\n')
      .filter((line) => /\bnpm (test|run test:\w+)\b/.test(line) && !line.trimStart().startsWith('#'));
    assert.ok(commands.length >= 6, commands.join('\n'));
    for (const line of commands) assert.match(line, /\.ci\/no-skips npm /, line);
  });
});
