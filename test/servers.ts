// The servers some tests need whatever store the suite runs on: several server processes share one
// PostgreSQL, and Redis is the count they share. Each is, in this order: the one named by
// DATABASE_URL / REDIS_URL; the machine's own on its standard port; a private one this test file
// starts from the machine's binaries (initdb and postgres, redis-server) on a free port and stops
// when it exits; or none, and then the tests that need it are skipped with the reason, which
// node:test prints and counts in its summary (`# skipped`). CI has both servers and fails on any
// skip (.ci/no-skips).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  accessSync,
  chownSync,
  closeSync,
  constants,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import { createEmbeddedDatabase, createPostgresDatabase, type Database } from '../src/infra/database.js';
import { sleep, STORE } from './harness.js';
import { freePort } from './processes.js';

/** A server found or started, or the reason there is none. */
export type Found = { url: string; skip?: undefined } | { url?: undefined; skip: string };

/** Whether something accepts TCP connections at host:port within the time given. */
function accepting(port: number, host = '127.0.0.1', timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host, timeout: timeoutMs });
    const done = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

/** The first executable file of that name on PATH then in `also`, or, given `only`, in those alone. */
function executable(name: string, where: { also?: string[]; only?: string[] } = {}): string | null {
  const dirs = where.only ?? [...(process.env.PATH ?? '').split(':').filter(Boolean), ...(where.also ?? [])];
  for (const dir of dirs) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      if (statSync(path).isFile()) return path;
    } catch {
      // not there, or not executable: the next directory
    }
  }
  return null;
}

const started: { child: ChildProcess; stop: NodeJS.Signals }[] = [];
const startedDirs: string[] = [];
// A private server lives as long as the test file that started it (SIGQUIT: PostgreSQL's
// immediate shutdown, which also ends its backends).
process.once('exit', () => {
  for (const { child, stop } of started) child.kill(stop);
  for (const dir of startedDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Starts a private server and waits until it is ready. Its output goes to a file in `dir` (shown if
 * it fails to start), and it does not keep the test file's process alive.
 */
async function startPrivate(
  what: string,
  command: { binary: string; args: string[]; dir: string; stop: NodeJS.Signals; uid?: number; gid?: number },
  ready: () => Promise<boolean>,
): Promise<ChildProcess> {
  const logFile = join(command.dir, 'server.log');
  const out = openSync(logFile, 'a');
  const child = spawn(command.binary, command.args, {
    stdio: ['ignore', out, out],
    ...(command.uid === undefined ? {} : { uid: command.uid, gid: command.gid }),
  });
  closeSync(out);
  child.unref();
  started.push({ child, stop: command.stop });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  const deadline = Date.now() + 30_000;
  while (!(await ready())) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}):\n${log()}`);
    if (Date.now() > deadline) throw new Error(`${what} did not start within 30 s:\n${log()}`);
    await sleep(100);
  }
  return child;
}

/** PostgreSQL's binaries: on PATH, or where Debian and Ubuntu install them. */
function postgresBinaries(): { initdb: string; postgres: string; basebackup: string | null } | null {
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => join(debian, v, 'bin'))
    : [];
  const initdb = executable('initdb', { also: versions });
  if (!initdb) return null;
  // The server of the same installation as initdb.
  const installed = [dirname(realpathSync(initdb))];
  const postgres = executable('postgres', { only: installed });
  return postgres ? { initdb, postgres, basebackup: executable('pg_basebackup', { only: installed }) } : null;
}

/**
 * The account a private PostgreSQL runs as: this process's own (undefined), or, since PostgreSQL
 * refuses to run as root, the `postgres` account when this process is root; null when root and
 * there is no such account.
 */
function postgresAccount(): { uid: number; gid: number } | undefined | null {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: 'pipe' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8', stdio: 'pipe' }).trim());
    return { uid, gid };
  } catch {
    return null;
  }
}

async function startPrivatePostgres(): Promise<string> {
  const binaries = postgresBinaries()!;
  const dir = mkdtempSync(join(tmpdir(), 'workspace-api-postgres-'));
  startedDirs.push(dir);
  const account = postgresAccount() ?? undefined;
  if (account) chownSync(dir, account.uid, account.gid);
  const as = account ?? {};
  const data = join(dir, 'data');
  execFileSync(binaries.initdb, ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], {
    ...as,
    stdio: 'pipe',
  });
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  await startPrivate(
    'a private PostgreSQL',
    {
      binary: binaries.postgres,
      args: ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
      dir,
      stop: 'SIGQUIT',
      ...as,
    },
    () => accepts(url),
  );
  return url;
}

/** A primary and a streaming replica of it: its URLs, and the replica's process to stop. */
export interface ReplicaPair {
  primaryUrl: string;
  replicaUrl: string;
  /** stops the replica (immediate shutdown): nothing listens on its port afterwards */
  stopReplica(): void;
  /** Creates a database on the primary and waits until the replica has it: its URL on each. */
  createDatabase(name: string): Promise<{ primaryUrl: string; replicaUrl: string }>;
}

/**
 * The count of each route of wsapi_replica_routed_reads_total in the /metrics of the process at
 * `baseUrl`: where its reads went (replica, or primary and why).
 */
export async function readRoutes(baseUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^wsapi_replica_routed_reads_total\{route="([a-z_]+)"\} (\d+)/gm)) {
    counts[m[1]!] = Number(m[2]);
  }
  return counts;
}

/** Why no replica pair can be started here, or undefined. */
export function withoutReplicaPair(): string | undefined {
  const binaries = postgresBinaries();
  if (!binaries) return 'needs PostgreSQL binaries (initdb, postgres, pg_basebackup) to start a primary and a replica';
  if (!binaries.basebackup) return 'needs pg_basebackup beside initdb';
  if (postgresAccount() === null) return 'as root, needs a postgres account to run PostgreSQL as';
  return undefined;
}

/**
 * Starts a private primary and a streaming replica of it (pg_basebackup -R), each on a free port,
 * living as long as this process. The primary's pg_hba (initdb -A trust) lets replication in from
 * 127.0.0.1. Check withoutReplicaPair first.
 */
export async function startReplicaPair(): Promise<ReplicaPair> {
  const binaries = postgresBinaries()!;
  const account = postgresAccount() ?? undefined;
  const as = account ?? {};
  const dir = mkdtempSync(join(tmpdir(), 'workspace-api-replication-'));
  startedDirs.push(dir);
  if (account) chownSync(dir, account.uid, account.gid);
  const primaryData = join(dir, 'primary');
  const replicaData = join(dir, 'replica');
  execFileSync(binaries.initdb, ['-D', primaryData, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], {
    ...as,
    stdio: 'pipe',
  });
  const serverArgs = (data: string, port: number) => [
    ...['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
    // As many as the tests' servers open (the replica must allow at least the primary's).
    ...['-c', 'max_connections=200'],
  ];
  const primaryPort = await freePort();
  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
  await startPrivate(
    'a private primary',
    { binary: binaries.postgres, args: serverArgs(primaryData, primaryPort), dir, stop: 'SIGQUIT', ...as },
    () => accepts(primaryUrl),
  );
  execFileSync(
    binaries.basebackup!,
    ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', replicaData, '-R', '-X', 'stream'],
    { ...as, stdio: 'pipe' },
  );
  const replicaPort = await freePort();
  const replicaUrl = `postgres://postgres@127.0.0.1:${replicaPort}/postgres`;
  const replica = await startPrivate(
    'a private replica',
    { binary: binaries.postgres, args: serverArgs(replicaData, replicaPort), dir, stop: 'SIGQUIT', ...as },
    () => accepts(replicaUrl),
  );
  const on = (url: string, name: string) => Object.assign(new URL(url), { pathname: `/${name}` }).href;
  return {
    primaryUrl,
    replicaUrl,
    stopReplica: () => replica.kill('SIGQUIT'),
    async createDatabase(name) {
      const admin = new pg.Client({ connectionString: primaryUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await admin.end();
      }
      // The new database reaches the replica with the rest of the log.
      for (let i = 0; !(await accepts(on(replicaUrl, name))); i++) {
        if (i > 100) throw new Error('the replica never received the new database');
        await sleep(100);
      }
      return { primaryUrl: on(primaryUrl, name), replicaUrl: on(replicaUrl, name) };
    },
  };
}

async function accepts(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

let postgresServer: Promise<Found> | undefined;

/**
 * A PostgreSQL server to make databases on, whatever store the suite runs on: its administrator
 * URL (DATABASE_URL's server, the machine's, or a private one), or why there is none.
 */
export function findPostgres(): Promise<Found> {
  postgresServer ??= (async (): Promise<Found> => {
    if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL };
    if (await accepting(5432)) return { url: 'postgres://postgres@127.0.0.1:5432/postgres' };
    const missing = 'needs PostgreSQL: nothing listens on 127.0.0.1:5432, DATABASE_URL is unset';
    if (!postgresBinaries()) return { skip: `${missing} and no PostgreSQL binaries (initdb, postgres) are installed` };
    if (postgresAccount() === null)
      return { skip: `${missing} and, as root, there is no postgres account to run one as` };
    return { url: await startPrivatePostgres() };
  })();
  return postgresServer;
}

/** A new database on the PostgreSQL server of `serverUrl` (an administrator's URL), and its drop. */
export async function newDatabase(serverUrl: string, prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomUUID().slice(0, 8)}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * A database of its own, empty: PGlite in memory, or a new database on DATABASE_URL's server with
 * `poolSize` connections (1: every statement runs in the same session).
 */
export async function emptyDatabase(poolSize = 2): Promise<{ db: Database; url?: string; drop(): Promise<void> }> {
  if (STORE === 'embedded') {
    const db = await createEmbeddedDatabase(null);
    return { db, drop: () => db.close() };
  }
  const own = await newDatabase(process.env.DATABASE_URL!, 'workspace_api_empty');
  const db = createPostgresDatabase(own.url, poolSize);
  return {
    db,
    url: own.url,
    async drop() {
      await db.close();
      await own.drop();
    },
  };
}

/**
 * A PostgreSQL database for the processes of one test file: DATABASE_URL's when it is set (the
 * suite runs on PostgreSQL), otherwise a database of its own that `drop` removes.
 */
export async function processDatabase(
  prefix: string,
): Promise<({ url: string; drop(): Promise<void> } & { skip?: undefined }) | { skip: string }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, drop: async () => undefined };
  const server = await findPostgres();
  if (server.skip !== undefined) return { skip: server.skip };
  return newDatabase(server.url, prefix);
}

/**
 * What a test file of several server processes needs: a database of its own (processDatabase) and
 * Redis, and the reason each group of its tests cannot run here, if any.
 */
export async function processServers(prefix: string) {
  const database = await processDatabase(prefix);
  const redis = await findRedis();
  return {
    databaseUrl: database.skip === undefined ? database.url : '',
    redisUrl: redis.url ?? '',
    withoutPostgres: database.skip,
    withoutPostgresAndRedis: database.skip ?? redis.skip,
    drop: () => (database.skip === undefined ? database.drop() : Promise.resolve()),
  };
}

let redisServer: Promise<Found> | undefined;

/** A Redis server: REDIS_URL's, the machine's on 6379, or a private one. */
export function findRedis(): Promise<Found> {
  redisServer ??= (async (): Promise<Found> => {
    if (process.env.REDIS_URL) return { url: process.env.REDIS_URL };
    if (await accepting(6379)) return { url: 'redis://127.0.0.1:6379' };
    const binary = executable('redis-server');
    if (!binary) {
      return {
        skip: 'needs Redis: nothing listens on 127.0.0.1:6379, REDIS_URL is unset and redis-server is not installed',
      };
    }
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'workspace-api-redis-'));
    startedDirs.push(dir);
    await startPrivate(
      'a private Redis',
      {
        binary,
        args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
        dir,
        stop: 'SIGKILL',
      },
      () => accepting(port),
    );
    return { url: `redis://127.0.0.1:${port}` };
  })();
  return redisServer;
}

let registry: Promise<string | undefined> | undefined;

/**
 * Why the npm registry cannot be used here (installing a package into a fresh directory needs it
 * for the package's dependencies), or undefined when it answers a TCP connection.
 */
export function withoutRegistry(): Promise<string | undefined> {
  registry ??= (async () => {
    const url = new URL(
      process.env.npm_config_registry ||
        execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim(),
    );
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const up = await accepting(port, url.hostname, 3_000);
    return up ? undefined : `needs the npm registry: ${url.host} cannot be reached`;
  })();
  return registry;
}

/**
 * A group of tests that needs a server: run as `describe`, or, when `skip` gives the reason it
 * cannot run here, one skipped test of the group's name. node:test reports a skipped suite with
 * its reason but leaves it out of the summary's count; a skipped test is counted there.
 */
export function describeOrSkip(skip: string | undefined, name: string, group: () => void): void {
  if (skip === undefined) describe(name, group);
  else test(name, { skip }, () => undefined);
}
