// The service's processes under a supervisor (deploy/workspace-api.service): the unit passes
// `systemd-analyze verify`; a primary killed with SIGKILL leaves no worker behind, so the port is
// free and the same command started again serves; and the exit code says whether a shutdown was
// clean: 0 when everything in flight was answered within SHUTDOWN_GRACE_MS, 1 when the grace ran
// out, for one process on the store of this run and for `serve --workers 2` on PostgreSQL; and
// what the processes counted of a key's usage is written as they stop.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { sleep } from './harness.js';
import {
  children,
  cleanUpProcesses,
  cli,
  CLI,
  freePort,
  startServer,
  storeEnv,
  tempDir,
  type ServerProcess,
} from './processes.js';
import { describeOrSkip, processServers } from './servers.js';

const ROOT = resolve(import.meta.dirname, '..');
const UNIT = join(ROOT, 'deploy', 'workspace-api.service');
const GRACE_MS = 1_000;

const servers = await processServers('wsapi_tree');
after(async () => {
  await cleanUpProcesses();
  await servers.drop();
});

/** The unit's `Key=value` settings (the last one of each key). */
function unitSettings(text: string): Map<string, string> {
  const settings = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) settings.set(m[1]!, m[2]!);
  }
  return settings;
}

function systemdAnalyze(): string | undefined {
  try {
    execFileSync('systemd-analyze', ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'needs systemd-analyze (Debian package systemd), which this machine does not have';
  }
}

test(
  'deploy/workspace-api.service passes systemd-analyze verify, restarts whatever ended the service and outlasts the shutdown grace',
  { skip: systemdAnalyze() },
  async () => {
    const text = readFileSync(UNIT, 'utf8');
    // The unit names the release's place (/opt/workspace-api) and Debian's node: verified against
    // this checkout and this node, which systemd-analyze requires to exist.
    const dir = mkdtempSync(join(tmpdir(), 'workspace-api-unit-'));
    const unit = join(dir, 'workspace-api.service');
    writeFileSync(
      unit,
      text.replaceAll('/opt/workspace-api', ROOT).replace('ExecStart=/usr/bin/node ', `ExecStart=${process.execPath} `),
    );
    const verified = await new Promise<{ code: number; output: string }>((done) =>
      execFile('systemd-analyze', ['verify', unit], (err, stdout, stderr) =>
        done({ code: err ? Number(err.code ?? 1) : 0, output: stdout + stderr }),
      ),
    );
    // A setting systemd cannot parse is only warned about: the output must be empty too.
    assert.deepEqual(verified, { code: 0, output: '' });

    const s = unitSettings(text);
    assert.equal(s.get('Restart'), 'always');
    assert.equal(s.get('StartLimitIntervalSec'), '0', 'a database down at start must not stop the restarts');
    assert.equal(s.get('KillMode'), 'mixed', 'SIGTERM to the primary alone, which stops its workers');
    assert.match(s.get('ExecStart') ?? '', /bin\/workspace-api serve$/);
    // The default grace (10 s) and the 2 s after which the primary kills a stuck worker.
    assert.ok(Number(s.get('TimeoutStopSec')) >= 12, `TimeoutStopSec=${s.get('TimeoutStopSec')}`);
  },
);

const workerPids = (primary: number): number[] => {
  try {
    return execFileSync('pgrep', ['-P', String(primary)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);
  } catch {
    return [];
  }
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

function portFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', () => done(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => done(true)));
  });
}

async function newKey(env: NodeJS.ProcessEnv): Promise<{ key: string; id: string }> {
  const ws = await cli(['workspaces', 'create', '--name', 'tree', '--json'], env);
  assert.equal(ws.code, 0, ws.stderr);
  const key = await cli(
    [
      'keys',
      'create',
      '--workspace',
      JSON.parse(ws.stdout).id,
      '--scopes',
      'contacts:read,contacts:write',
      '--name',
      't',
      '--json',
    ],
    env,
  );
  assert.equal(key.code, 0, key.stderr);
  const { key: secret, id } = JSON.parse(key.stdout) as { key: string; id: string };
  return { key: secret, id };
}

/**
 * A write whose body never finishes arriving: headers and a part of the body, then nothing. It
 * stays in flight until the server gives up on it.
 */
async function stalledWrite(baseUrl: string, key: string): Promise<Socket> {
  const { port } = new URL(baseUrl);
  const socket = connect(Number(port), '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise<void>((r) => socket.once('connect', () => r()));
  socket.write(
    `POST /v1/contacts HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nIdempotency-Key: tree-${Date.now()}\r\nContent-Length: 100\r\n\r\n{"name":`,
  );
  await sleep(300);
  return socket;
}

/** SIGTERM, then the exit code and how long the process took to end. */
async function terminate(server: ServerProcess): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  server.proc.kill('SIGTERM');
  const code = await server.exited;
  return { code, ms: Date.now() - started };
}

async function exitCodes(env: NodeJS.ProcessEnv, args: string[]): Promise<void> {
  const quick = await startServer(env, args);
  assert.deepEqual((await terminate(quick)).code, 0, 'nothing in flight: a clean shutdown exits 0');

  const stuck = await startServer(env, args);
  const { key } = await newKey(env);
  const socket = await stalledWrite(stuck.baseUrl, key);
  const ended = await terminate(stuck);
  socket.destroy();
  assert.equal(ended.code, 1, `a request outlasting the grace: exit ${String(ended.code)}, ${stuck.output().stderr}`);
  assert.ok(ended.ms >= GRACE_MS, `ended after ${ended.ms} ms, before the grace`);
}

/**
 * Requests answered, then SIGTERM: once the service has exited 0, its key's usage trail holds every
 * one. Each process writes its counts every 5 s and as it stops; rounds of requests are made until
 * some are not stored yet, so that what is checked is the write at the stop.
 */
async function usageWrittenAtStop(env: NodeJS.ProcessEnv, args: string[]): Promise<void> {
  const ROUND = 20;
  const server = await startServer(env, args);
  const { key, id } = await newKey(env);
  const stored = async () => {
    const usage = await cli(['keys', 'usage', id, '--json'], env);
    assert.equal(usage.code, 0, usage.stderr);
    const rows = JSON.parse(usage.stdout).usage as { operation: string; requests: number }[];
    return rows.filter((u) => u.operation === 'listContacts').reduce((sum, u) => sum + u.requests, 0);
  };
  let sent = 0;
  do {
    assert.ok(sent < 5 * ROUND, 'periodic writes stored every request of five rounds before the stop');
    for (let i = 0; i < ROUND; i++) {
      const answer = await fetch(`${server.baseUrl}/v1/contacts?limit=1`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await answer.body?.cancel();
      assert.equal(answer.status, 200);
    }
    sent += ROUND;
  } while ((await stored()) === sent);
  const ended = await terminate(server);
  assert.equal(ended.code, 0, server.output().stderr);
  assert.equal(await stored(), sent, 'requests answered before SIGTERM, in the usage trail');
}

test('one process: exit 0 after a clean shutdown, 1 when a request outlasts SHUTDOWN_GRACE_MS', async () => {
  await exitCodes(storeEnv(tempDir(), { SHUTDOWN_GRACE_MS: String(GRACE_MS) }), []);
});

test('one process: what it counted before SIGTERM is in the usage trail once it has stopped', async () => {
  await usageWrittenAtStop(storeEnv(tempDir(), {}), []);
});

describeOrSkip(servers.withoutPostgres, 'serve --workers 2 on PostgreSQL', () => {
  let env: NodeJS.ProcessEnv;
  before(() => {
    env = storeEnv(tempDir(), {
      DATABASE_URL: servers.databaseUrl,
      REDIS_URL: undefined,
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
    });
  });

  test('the primary exits 0 when every worker stopped cleanly, 1 when one was cut short', async () => {
    await exitCodes(env, ['--workers', '2']);
  });

  test('what each worker counted before SIGTERM is in the usage trail once the primary has exited', async () => {
    await usageWrittenAtStop(env, ['--workers', '2']);
  });

  test('a SIGTERM as the workers are forked, before they listen, is a clean stop: exit 0', async () => {
    const proc = spawn(process.execPath, [CLI, 'serve', '--workers', '2'], {
      env: { ...env, PORT: String(await freePort()) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(proc);
    let stderr = '';
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    const deadline = Date.now() + 60_000;
    while (workerPids(proc.pid!).length < 2) {
      assert.ok(Date.now() < deadline && proc.exitCode === null, `no workers forked: ${stderr}`);
      await sleep(5);
    }
    proc.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
  });

  test('a SIGKILL of the primary ends its workers at once, frees the port, and the same command started again serves', async () => {
    const first = await startServer(env, ['--workers', '2']);
    const port = Number(new URL(first.baseUrl).port);
    const workers = workerPids(first.proc.pid!);
    assert.equal(workers.length, 2);
    first.proc.kill('SIGKILL');
    await first.exited;
    const deadline = Date.now() + 5_000;
    while (workers.some(alive) && Date.now() < deadline) await sleep(50);
    assert.deepEqual(workers.filter(alive), [], 'workers left running after their primary was killed');
    assert.ok(await portFree(port), `port ${port} still taken after the primary and its workers ended`);

    // What the unit's Restart=always does: the same command again, on the same port.
    const again = await startServer(env, ['--workers', '2'], { port });
    const { key } = await newKey(env);
    const answer = await fetch(`${again.baseUrl}/v1/contacts`, { headers: { authorization: `Bearer ${key}` } });
    await answer.body?.cancel();
    assert.equal(answer.status, 200);
    assert.equal((await terminate(again)).code, 0);
  });
});
