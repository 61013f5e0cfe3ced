// The processes the benchmark starts: servers under test and baselines, each in a process of its own
// so none shares an event loop with the load generator. Every one is registered when it starts, and
// stopAll() (called from run.ts's finally) ends whatever is still running, so a failed run leaves
// nothing behind.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface Server {
  name: string;
  url: string;
  pid: number;
  /** Stops the process and, for a cluster primary, its workers. */
  stop(): Promise<void>;
}

const running = new Set<Server>();
/** Commands run from the repository root, wherever `npm run bench` was started. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A port nothing listens on right now; other people's tests share this machine, so none is fixed. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * Starts `command` with `env` added to this process's environment, and resolves once `readyPath`
 * answers 200. Its output (the service's log lines at LOG_LEVEL=info) goes to a file, as a
 * deployment's would, not through a pipe: this process is the load generator, and reading a pipe
 * of a few thousand lines a second would take CPU from the two cores it measures. The file's last
 * 64 KiB are shown if the process fails to start; the file is removed when it stops.
 */
export async function startServer(
  name: string,
  command: string,
  args: string[],
  env: Record<string, string | undefined>,
  port: number,
  readyPath: string,
): Promise<Server> {
  // A variable given as undefined is removed from what the process inherits.
  const merged = definedOnly({ ...process.env, ...env });
  const logDir = mkdtempSync(join(tmpdir(), 'bench-server-'));
  const logFile = join(logDir, 'output.log');
  const fd = openSync(logFile, 'w');
  const child = spawn(command, args, { cwd: ROOT, env: merged, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const output = () => lastBytes(logFile, 65_536);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const removeOutput = () => rmSync(logDir, { recursive: true, force: true });
  const url = `http://127.0.0.1:${port}`;
  const server: Server = {
    name,
    url,
    pid: child.pid ?? -1,
    stop: async () => {
      running.delete(server);
      await stopProcess(child, exited);
      removeOutput();
    },
  };
  running.add(server);

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      running.delete(server);
      const text = output();
      removeOutput();
      throw new Error(`${name} exited before it was ready (${child.exitCode ?? child.signalCode}):\n${text}`);
    }
    try {
      const res = await fetch(url + readyPath, { signal: AbortSignal.timeout(5_000) });
      await res.body?.cancel();
      if (res.status === 200) return server;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      const text = output();
      await server.stop();
      throw new Error(`${name} was not ready within 60 s:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The last `n` bytes of a file, as text ('' once it is gone). */
function lastBytes(file: string, n: number): string {
  try {
    const size = statSync(file).size;
    const length = Math.min(size, n);
    const buffer = Buffer.alloc(length);
    const fd = openSync(file, 'r');
    try {
      readSync(fd, buffer, 0, length, size - length);
    } finally {
      closeSync(fd);
    }
    return buffer.toString('utf8');
  } catch {
    return '';
  }
}

/** SIGTERM (the servers shut down gracefully), then SIGKILL for the whole tree if it takes over 15 s. */
async function stopProcess(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const tree = processTree(child.pid);
  child.kill('SIGTERM');
  const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000).unref());
  if ((await Promise.race([exited, timer])) === 'timeout') {
    for (const pid of tree) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await exited;
  }
}

/**
 * Registers a process started elsewhere (a helper of a scenario, a CLI command) so that stopAll()
 * ends it too; its `stop` stops it now. Its url is empty: it serves nothing.
 */
export function adopt(name: string, child: ChildProcess): Server {
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const server: Server = {
    name,
    url: '',
    pid: child.pid ?? -1,
    stop: async () => {
      running.delete(server);
      await stopProcess(child, exited);
    },
  };
  running.add(server);
  void exited.then(() => running.delete(server));
  return server;
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((s) => s.stop()));
}

/** `pid` and its descendants (a cluster primary's workers), read from /proc. */
export function processTree(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name in field 2 may hold spaces; the parent pid is the second field after ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // the process ended while we looked
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(parents.get(tree[i]!) ?? []));
  return tree;
}

/** Resident memory of one process in MiB (VmRSS), or null once it is gone. */
export function rssMiB(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

export interface MemorySample {
  process: string;
  pid: number;
  before_mib: number | null;
  after_mib: number | null;
}

/** RSS of a server's whole process tree now; `finish` takes the second reading. */
export function memoryOf(server: Server): { finish(): MemorySample[] } {
  const tree = processTree(server.pid);
  const before = tree.map((pid) => rssMiB(pid));
  // Children are cluster workers (node) or, for the baselines run through tsx, its esbuild helper.
  const label = (pid: number, i: number) => {
    if (i === 0) return tree.length > 1 && commandName(tree[1]!) === 'node' ? `${server.name}, primary` : server.name;
    const command = commandName(pid);
    return command === 'node' ? `${server.name}, worker ${i}` : `${server.name}, its ${command} helper`;
  };
  return {
    finish: () =>
      tree.map((pid, i) => ({
        process: label(pid, i),
        pid,
        before_mib: before[i] ?? null,
        after_mib: rssMiB(pid),
      })),
  };
}

function commandName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return 'exited';
  }
}

/** An environment without the variables set to undefined (which spawn would pass as "undefined"). */
export const definedOnly = (env: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));

/**
 * Runs `main` when the module at `moduleUrl` is the script node was started with (not when it is
 * imported by another benchmark): lines logged with the seconds since the start, the servers it
 * started stopped however it ends (an interrupt, a CI timeout too), a failure printed under
 * `name` with exit code 1.
 */
export function runAsScript(
  moduleUrl: string,
  name: string,
  main: (log: (line: string) => void) => Promise<void>,
): void {
  const entry = process.argv[1];
  if (!entry || moduleUrl !== pathToFileURL(realpathSync(entry)).href) return;
  const started = Date.now();
  const log = (line: string) =>
    process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
  const interrupted = () => void stopAll().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  main(log)
    .finally(() => stopAll())
    .then(
      () => log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`),
      (err: unknown) => {
        process.stderr.write(`${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
        process.exitCode = 1;
      },
    );
}
