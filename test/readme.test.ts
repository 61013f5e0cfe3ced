// The README's first run, exactly as written: its first line (install and start on the embedded
// store) in a copy of this repository, then the block of "Using the API" — the demo key read from
// data/demo-api-key.txt and the curl lines — with PORT set, as a newcomer who changed the port
// would run them. Whatever store the rest of the suite runs on, the first line is the embedded one.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { sleep } from './harness.js';
import { freePort } from './processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The fenced code blocks of the README, in order, each as its lines. */
const blocks = [...README.matchAll(/^```[a-z]*\n([\s\S]*?)^```$/gm)].map((m) => m[1]!.trimEnd().split('\n'));

/** The block that follows a heading. */
function blockAfter(heading: string): string[] {
  const at = README.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `the README has no heading ${JSON.stringify(heading)}`);
  const block = /^```[a-z]*\n([\s\S]*?)^```$/m.exec(README.slice(at));
  assert.ok(block, `no code block after ${heading}`);
  return block[1]!.trimEnd().split('\n');
}

/** The JSON documents curl printed one after the other, without separators. */
function jsonDocuments(text: string): unknown[] {
  const docs: unknown[] = [];
  let rest = text.trim();
  while (rest) {
    let end = rest.indexOf('}{');
    for (;;) {
      const candidate = end < 0 ? rest : rest.slice(0, end + 1);
      try {
        docs.push(JSON.parse(candidate));
        rest = rest.slice(candidate.length).trim();
        break;
      } catch (err) {
        if (end < 0) throw new Error(`not JSON documents: ${text.slice(0, 300)}`, { cause: err });
        end = rest.indexOf('}{', end + 1);
      }
    }
  }
  return docs;
}

function run(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => resolve({ code, out }));
  });
}

let copy: string;
let port: number;
let env: NodeJS.ProcessEnv;
let server: ChildProcess | undefined;
let serverOutput = '';

before(async () => {
  // A copy of the sources (not data/, dist/ or the repository's history) sharing node_modules:
  // the first line writes ./data and ./dist where it runs, and must not touch the checkout's own.
  copy = mkdtempSync(join(tmpdir(), 'workspace-api-readme-'));
  cpSync(ROOT, copy, {
    recursive: true,
    filter: (source) => !/^(node_modules|\.git|data|dist)(\/|$)/.test(relative(ROOT, source)),
  });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  port = await freePort();
  env = { ...process.env, PORT: String(port) };
  // The README's first line runs on a machine's defaults: the embedded store, no settings.
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'DATA_DIR', 'HOST', 'NODE_TEST_CONTEXT', 'NODE_OPTIONS']) {
    delete env[name];
  }
});

after(async () => {
  if (server?.pid && server.exitCode === null) {
    const gone = new Promise((resolve) => server!.once('exit', resolve));
    process.kill(-server.pid, 'SIGTERM');
    await Promise.race([gone, sleep(15_000)]);
    if (server.exitCode === null) process.kill(-server.pid, 'SIGKILL');
  }
  rmSync(copy, { recursive: true, force: true });
});

describe("the README's first run", { timeout: 300_000 }, () => {
  test('the first line installs and starts the API on PORT; the key file holds the key alone', async () => {
    const first = blocks[0]![0]!;
    assert.equal(first, 'npm install && npm start', 'the first line of the README');
    // Its own process group: npm start's server is stopped with it.
    server = spawn('bash', ['-c', first], { cwd: copy, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    server.stdout!.on('data', (d: Buffer) => (serverOutput += d.toString()));
    server.stderr!.on('data', (d: Buffer) => (serverOutput += d.toString()));
    const keyFile = join(copy, 'data', 'demo-api-key.txt');
    const deadline = Date.now() + 240_000;
    for (;;) {
      assert.equal(server.exitCode, null, `the first line ended:\n${serverOutput}`);
      assert.ok(Date.now() < deadline, `no server on port ${port} after 240 s:\n${serverOutput}`);
      const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (up && existsSync(keyFile)) break;
      await sleep(250);
    }
    assert.match(readFileSync(keyFile, 'utf8'), /^wsk_[0-9A-Za-z]{16}\.[0-9A-Za-z]{46}\n$/);
    assert.match(serverOutput, new RegExp(`http://127\\.0\\.0\\.1:${port}/v1/contacts`), 'the curl line it prints');
  });

  test('the block of "Using the API", as written, lists the demo contacts and upserts one', async () => {
    const block = blockAfter('## Using the API');
    const { code, out } = await run(block.join('\n'), copy, env);
    assert.equal(code, 0, out);
    const [list, upserted] = jsonDocuments(out) as [any, any];
    assert.ok(Array.isArray(list.data) && list.data.length === 2, `the list: ${JSON.stringify(list)}`);
    assert.equal(upserted.data?.external_id, 'crm-42', JSON.stringify(upserted));
    assert.equal(upserted.data.name, 'Ana Souza');
  });

  test('the curl line the first start printed works as printed', async () => {
    const line = serverOutput.split('\n').find((l) => l.trim().startsWith('curl '));
    assert.ok(line, `no curl line in:\n${serverOutput}`);
    const { code, out } = await run(line.trim(), copy, env);
    assert.equal(code, 0, out);
    const [list] = jsonDocuments(out) as [any];
    assert.equal(list.data.length, 2, out);
  });
});
