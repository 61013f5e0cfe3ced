// The service under test, started as a user runs it (`bin/workspace-api serve`) on the benchmark's
// database, with or without Redis. One place for its settings, shared by the benchmark and the profiler.
import { join } from 'node:path';
import { freePort, processTree, ROOT, startServer, type Server } from './processes.js';
import { POOL_SIZE } from './settings.js';

export interface ServiceOptions {
  databaseUrl: string;
  /** Redis for the rate-limit counts; null runs the README's default, counts in PostgreSQL */
  redisUrl: string | null;
  workers: number;
  /** LOG_LEVEL of the service: `info` is its default, `warn` leaves only problems */
  logLevel: 'info' | 'warn';
  /** a name of its own in reports; derived from the workers and log level when absent */
  name?: string;
  /** options for node itself (the profiler's --cpu-prof) */
  nodeArgs?: string[];
}

export async function startService(o: ServiceOptions): Promise<Server> {
  const port = await freePort();
  const name = o.name ?? `service, ${o.workers === 1 ? '1 worker' : `${o.workers} workers`}, LOG_LEVEL=${o.logLevel}`;
  const server = await startServer(
    name,
    process.execPath,
    [...(o.nodeArgs ?? []), join(ROOT, 'bin/workspace-api'), 'serve', '--workers', String(o.workers)],
    {
      DATABASE_URL: o.databaseUrl,
      ...(o.redisUrl ? { REDIS_URL: o.redisUrl } : {}),
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: o.logLevel,
      DB_POOL_SIZE: String(POOL_SIZE),
      // The dataset may be older than the default 30 days, and the service's housekeeping would
      // then delete its events.
      EVENTS_RETENTION_DAYS: '3650',
      // The webhook benchmark's receiver is on this machine.
      WEBHOOK_TARGETS: 'public+loopback',
    },
    port,
    '/readyz',
  );
  // /readyz answers once one worker listens; the measurements wait for all of them.
  const deadline = Date.now() + 30_000;
  while (o.workers > 1 && processTree(server.pid).length < o.workers + 1) {
    if (Date.now() > deadline) throw new Error(`${name}: its workers did not all start`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return server;
}
