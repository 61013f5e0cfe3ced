// Several server processes behind one port (node:cluster): the primary applies migrations once,
// forks the workers, replaces any that dies, and on SIGTERM/SIGINT stops them all gracefully.
// The workers share nothing in memory: PostgreSQL holds the data and idempotency records, Redis
// the rate-limit counts, and PostgreSQL NOTIFY carries key revocations to every worker.
import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { Config } from './config.js';
import { openStore } from './infra/store.js';
import { GENERATED_DATABASE_CODE } from './modules/resources.js';
import { startServer } from './server.js';

export class WorkersUnsupported extends Error {}

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
    const server = await startServer(config);
    const shutdown = () => void server.stop().then(() => process.exit(0));
    process.once('SIGTERM', shutdown);
    process.once('SIGINT', shutdown);
    return;
  }

  const store = await openStore(config, { code: GENERATED_DATABASE_CODE, poolSize: 1 }); // applies pending migrations, once
  await store.close();

  let stopping = false;
  const fork = () => cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    process.stderr.write(`worker ${worker.process.pid} exited (${signal ?? code}); starting another\n`);
    setTimeout(fork, 1_000).unref();
  });
  for (let i = 0; i < workers; i++) fork();

  const stop = () => {
    if (stopping) return;
    stopping = true;
    const alive = Object.values(cluster.workers ?? {}).filter((w) => w && !w.isDead());
    let remaining = alive.length;
    if (remaining === 0) process.exit(0);
    for (const w of alive) {
      w!.once('exit', () => {
        if (--remaining === 0) process.exit(0);
      });
      w!.process.kill('SIGTERM');
    }
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
