// Several server processes behind one port (node:cluster): the primary applies migrations once,
// forks the workers, replaces any that dies, and on SIGTERM/SIGINT stops them all gracefully.
// The workers share nothing in memory: PostgreSQL holds the data and idempotency records, Redis
// the rate-limit counts, and PostgreSQL NOTIFY carries key revocations to every worker.
//
// The primary is the process a supervisor watches (deploy/workspace-api.service). Its exit code
// says how the shutdown went: 0 when every worker stopped cleanly, 1 when one was cut short (its
// grace ran out) or had to be killed. A primary that dies without a shutdown (SIGKILL, a crash)
// takes its workers with it at once (node:cluster ends a worker whose primary is gone), so none is
// left holding the port and the supervisor's restart starts a whole new tree.
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { Config } from './config.js';
import { openStore } from './infra/store.js';
import { GENERATED_DATABASE_CODE } from './modules/resources.js';
import { startServer, type RunningServer } from './server.js';

export class WorkersUnsupported extends Error {}

/** How long after its own grace a worker that has not exited is killed. */
const STUCK_WORKER_MS = 2_000;

/** Workers to run when none is asked for: one per core on PostgreSQL; the embedded store is one process. */
export function defaultWorkers(config: Config): number {
  return config.databaseUrl ? availableParallelism() : 1;
}

export async function serve(config: Config, workers: number): Promise<void> {
  if (workers > 1 && !config.databaseUrl) {
    throw new WorkersUnsupported(
      'The embedded store lives inside one process; several workers need PostgreSQL (set DATABASE_URL).',
    );
  }
  if (workers <= 1 || !cluster.isPrimary) {
    // A SIGTERM once this code runs, the server still starting (a supervisor stopping it, a primary
    // stopping its workers), stops it as soon as it is up: a shutdown, not a kill. Another SIGTERM
    // changes nothing (some tools send two); a second SIGINT (Ctrl-C) ends the process at once.
    let server: RunningServer | null = null;
    let terminated = false;
    const shutdown = () => {
      if (terminated) return;
      terminated = true;
      if (server) void server.stop().then(() => process.exit(0));
    };
    process.on('SIGTERM', shutdown);
    process.once('SIGINT', shutdown);
    server = await startServer(config);
    if (terminated) await server.stop().then(() => process.exit(0));
    return;
  }

  let stopping = false;
  const reforks = new Set<NodeJS.Timeout>();
  const listening = new Set<number>();
  cluster.on('listening', (worker) => listening.add(worker.id));
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const timer of reforks) clearTimeout(timer);
    const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
    let remaining = alive.length;
    let clean = true;
    if (remaining === 0) process.exit(0);
    // A worker ends itself (exit 1) when its grace runs out; one that cannot (its event loop stuck)
    // is killed a little after that.
    const kill = setTimeout(() => {
      for (const w of alive) if (!w.isDead()) w.process.kill('SIGKILL');
    }, config.shutdownGraceMs + STUCK_WORKER_MS);
    kill.unref();
    for (const w of alive) {
      w.once('exit', (code, signal) => {
        // A worker still loading its code when the SIGTERM came (forked a moment before) dies of
        // it: it never listened, so nothing was cut short.
        const diedUnstarted = signal === 'SIGTERM' && !listening.has(w.id);
        if ((code !== 0 || signal) && !diedUnstarted) clean = false;
        if (--remaining === 0) process.exit(clean ? 0 : 1);
      });
      w.process.kill('SIGTERM');
    }
  };
  process.on('SIGTERM', stop);
  process.once('SIGINT', stop);

  const store = await openStore(config, { code: GENERATED_DATABASE_CODE, poolSize: 1 }); // applies pending migrations, once
  await store.close();
  if (stopping) return;

  // A worker that dies is replaced a second later. The timer keeps the primary alive while no
  // worker runs (all of them failed at once, the database down at their start).
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    process.stderr.write(`worker ${worker.process.pid} exited (${signal ?? code}); starting another\n`);
    const timer = setTimeout(() => {
      reforks.delete(timer);
      cluster.fork();
    }, 1_000);
    reforks.add(timer);
  });
  for (let i = 0; i < workers; i++) cluster.fork();
}
