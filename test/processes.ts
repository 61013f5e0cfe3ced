// Real server processes for tests: `bin/workspace-api serve` on a free port, the owner CLI as a
// child process, and cleanup of everything a test file started.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep, STORE } from './harness.js';

export const CLI = fileURLToPath(new URL('../bin/workspace-api', import.meta.url));

export const children: ChildProcess[] = [];

/**
 * Load shedding out of the way: tests of other promises send bursts that a busy machine would see
 * shed; test/admission-processes.test.ts runs shedding as configured.
 */
export const NO_SHEDDING = {
  LOAD_SHED_MAX_IN_FLIGHT: '100000',
  LOAD_SHED_EVENT_LOOP_DELAY_MS: '60000',
  LOAD_SHED_MAX_POOL_WAITING: '1000000',
} as const;
export const tempDirs: string[] = [];

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'workspace-api-cli-test-'));
  tempDirs.push(dir);
  return dir;
}

/** The environment of one store: the servers and the CLI calls of that store share it. */
export function storeEnv(dataDir: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOG_LEVEL: 'warn',
    DEMO_ON_FIRST_START: 'false',
    DATA_DIR: dataDir,
    // A shutdown that hangs is cut short (exit 1) after 3s instead of 10s.
    SHUTDOWN_GRACE_MS: '3000',
    ...NO_SHEDDING,
  };
  delete env.NODE_TEST_CONTEXT;
  delete env.PORT;
  if (STORE === 'embedded') delete env.DATABASE_URL;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface ServerProcess {
  proc: ChildProcess;
  baseUrl: string;
  output(): { stdout: string; stderr: string };
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

/**
 * Starts `serve` with `args` on a free port (or on `port`, when the test needs that one) and waits
 * until it answers /healthz.
 */
export async function startServer(
  env: NodeJS.ProcessEnv,
  args: string[] = [],
  options: { port?: number } = {},
): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    const proc = spawn(process.execPath, [CLI, 'serve', ...args], {
      env: { ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(proc);
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    let ended = false;
    const exited = new Promise<number | null>((resolve) =>
      proc.once('exit', (code) => {
        ended = true;
        resolve(code);
      }),
    );
    const baseUrl = `http://127.0.0.1:${port}`;
    // Generous: an embedded store starts in seconds, but a loaded 2-core machine can take much longer.
    const deadline = Date.now() + 120_000;
    while (!ended && Date.now() < deadline) {
      try {
        const r = await fetch(`${baseUrl}/healthz`);
        await r.body?.cancel();
        if (r.status === 200) return { proc, baseUrl, exited, output: () => ({ stdout, stderr }) };
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    if (!ended) proc.kill('SIGKILL');
    await exited;
    // Someone else took the port between our probe and the server's bind: pick another one.
    if (/EADDRINUSE/.test(stderr) && attempt < 4 && options.port === undefined) continue;
    throw new Error(`the server did not become healthy (exit ${String(proc.exitCode)}):\n${stderr}`);
  }
}

export async function stopServer(server: ServerProcess): Promise<number | null> {
  server.proc.kill('SIGTERM');
  return server.exited;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the owner CLI; `input` is written to its standard input (closed at once otherwise). */
export function cli(args: string[], env: NodeJS.ProcessEnv, input = ''): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { env, timeout: 45_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end(input);
    children.push(child);
  });
}

/** Kills what is still running and removes the temporary directories; for `after()`. */
export async function cleanUpProcesses(): Promise<void> {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await Promise.race([gone, sleep(5_000)]);
    }
  }
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}
