// A finding of the security suite (test/security, Figures.finding) fails the test that raises it,
// and so the run: .ci/run runs the suite under .ci/no-skips, which keeps a failing run's status.
// A finding is never only printed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, test } from 'node:test';

const ROOT = resolve(import.meta.dirname, '..');
const HELPERS = pathToFileURL(join(ROOT, 'test', 'security', 'helpers.ts')).href;
const dir = mkdtempSync(join(tmpdir(), 'workspace-api-findings-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a test file using the security suite's figures under .ci/no-skips, as .ci/run does. */
function underCi(body: string): Promise<{ code: number; output: string }> {
  const file = join(dir, `case-${Math.random().toString(36).slice(2)}.test.ts`);
  writeFileSync(
    file,
    `import { test } from 'node:test';\nimport { Figures } from '${HELPERS}';\nconst figures = new Figures();\n${body}\n`,
  );
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  return new Promise((done) => {
    execFile(
      'bash',
      [join(ROOT, '.ci', 'no-skips'), process.execPath, '--import', 'tsx', '--test', file],
      { cwd: ROOT, env },
      (err, stdout, stderr) => done({ code: err ? Number(err.code) : 0, output: stdout + stderr }),
    );
  });
}

describe('security findings in CI', () => {
  test('a run whose figures raise no finding passes', async () => {
    const { code, output } = await underCi(`test('counts', () => { figures.add('requests'); });`);
    assert.equal(code, 0, output);
  });

  test('a raised finding fails its test and the run, with its id and evidence', async () => {
    const { code, output } = await underCi(
      `test('raises one', () => { figures.add('requests'); figures.finding('F-provoked', 'the evidence of it'); });`,
    );
    assert.equal(code, 1, output);
    assert.match(output, /not ok \d+ - raises one/);
    assert.match(output, /finding F-provoked: the evidence of it/);
  });
});
