// Where the two cores went during a measured run: CPU time of the server's processes, of this
// database's PostgreSQL backends (and PostgreSQL's own background processes), of Redis and of the
// load generator, per request; and how busy the whole machine was, including with other people's
// work. Read from /proc before and after the run: a load generator on the same two cores takes CPU
// the server would otherwise have, and these figures show how much.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Redis } from 'ioredis';
import type { Database } from '../src/infra/database.js';
import { processTree, type Server } from './processes.js';

// Linux reports CPU time in USER_HZ ticks, 100 per second on every architecture it runs on.
const TICK_MS = 10;

type Ticks = Map<number, number>;

interface Sample {
  machine: { busy: number; total: number };
  server: Ticks;
  postgres: Ticks;
  redis: Ticks;
  generator: Ticks;
}

export interface CpuUse {
  /** CPU ms per answered request, by process group (null: not attributable in this run) */
  server_ms: number | null;
  postgres_ms: number | null;
  redis_ms: number | null;
  generator_ms: number | null;
  /** cores busy on the whole machine during the run */
  machine_cores: number;
  /** the part of machine_cores no process above accounts for: other people's work */
  others_cores: number | null;
}

export interface CpuProbe {
  sample(server: Server | null): Promise<Sample>;
  use(before: Sample, after: Sample, requests: number): CpuUse;
}

export async function cpuProbe(db: Database, redisUrl: string): Promise<CpuProbe> {
  const redisPid = await localRedisPid(redisUrl);
  const ticksOf = (pids: number[]): Ticks => {
    const ticks: Ticks = new Map();
    for (const pid of pids) {
      const t = processTicks(pid);
      if (t !== null) ticks.set(pid, t);
    }
    return ticks;
  };
  return {
    async sample(server) {
      const { rows } = await db.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
          WHERE (datname = current_database() OR backend_type <> 'client backend') AND pid <> pg_backend_pid()`,
      );
      return {
        machine: machineTicks(),
        server: ticksOf(server ? processTree(server.pid) : []),
        postgres: ticksOf(rows.map((r) => r.pid)),
        redis: ticksOf(redisPid === null ? [] : [redisPid]),
        generator: ticksOf([process.pid]),
      };
    },
    use(before, after, requests) {
      const spent = (group: keyof Omit<Sample, 'machine'>) => {
        let ticks = 0;
        // A process that started during the run counts whole; one that ended during it is lost.
        for (const [pid, t] of after[group]) ticks += t - (before[group].get(pid) ?? 0);
        return ticks;
      };
      const groups = {
        server: spent('server'),
        postgres: spent('postgres'),
        redis: spent('redis'),
        generator: spent('generator'),
      };
      const ours = groups.server + groups.postgres + groups.redis + groups.generator;
      const busy = after.machine.busy - before.machine.busy;
      const coreTicks = (after.machine.total - before.machine.total) / availableParallelism();
      // To the microsecond: a run counts hundreds of clock ticks per process, and the ratios of the
      // targets are taken of these figures (rounded to 0.01 ms, 0.23 against 0.30 ms can move a
      // ratio by 4%).
      const perRequest = (ticks: number) =>
        requests > 0 ? Math.round(((ticks * TICK_MS) / requests) * 1000) / 1000 : Number.NaN;
      return {
        server_ms: after.server.size > 0 ? perRequest(groups.server) : null,
        postgres_ms: perRequest(groups.postgres),
        redis_ms: perRequest(groups.redis),
        generator_ms: perRequest(groups.generator),
        machine_cores: round(busy / coreTicks),
        others_cores: round(Math.max(0, busy - ours) / coreTicks),
      };
    },
  };
}

/** The pid of the Redis server when it runs on this machine (it tells its own pid), else null. */
async function localRedisPid(url: string): Promise<number | null> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const pid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim().startsWith('redis') ? pid : null;
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

function machineTicks(): { busy: number; total: number } {
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return { busy: total - fields[3]! - fields[4]!, total };
}

function processTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name: state is field 3, utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
