// What the benchmark loads and how hard it pushes: one place for every number docs/performance.md
// quotes, so the document and the code cannot drift apart.
import { parseArgs } from 'node:util';

/** Bumped whenever the dataset's shape changes: a database loaded by another version is reloaded. */
export const DATASET_VERSION = 2;

export const DATASET = {
  workspaces: 100,
  contacts: 1_000_000,
  appointments: 500_000,
  /** Inserts of contacts and appointments write 1.5M events; status updates of contacts make up the rest. */
  events: 2_000_000,
  /**
   * The workspace every read is measured in. A page 10,000 pages deep at limit=50 sits at row 500,000,
   * so this workspace alone needs more contacts than that.
   */
  bigWorkspaceContacts: 550_000,
  bigWorkspaceAppointments: 275_000,
} as const;

/** Concurrency of the measured runs (the "50 connections"). */
export const CONNECTIONS = 50;
/**
 * PostgreSQL connections per server process (the service's DB_POOL_SIZE, and the bare Fastify
 * baseline's pool), and pgbench's clients. On two cores PostgreSQL's throughput on the list query
 * levels off from 5 to 10 sessions (pgbench, 2 to 50 clients); more only queue. It also keeps
 * the run's connections (up to four server processes plus pgbench) well under max_connections on
 * a server other people's tests use too.
 */
export const POOL_SIZE = 10;
/** Page size of the list and of the deep page; the events feed is read 100 at a time. */
export const LIST_LIMIT = 50;
export const EVENTS_LIMIT = 100;
/** Row of the deep page: 10,000 pages of 50 in. */
export const DEEP_PAGE = 10_000;

/** Contacts per batch upsert request. */
export const BATCH_SIZE = 100;

export const TARGETS = {
  /** authenticated list throughput (LOG_LEVEL=warn, Redis) / bare Fastify route throughput */
  listVsBareFastify: 0.8,
  /** server process CPU per authenticated list request (LOG_LEVEL=warn, Redis) / the bare Fastify route's */
  listCpuVsBareFastify: 1.3,
  /** the same throughput ratio in the README's default deployment (LOG_LEVEL=info, no Redis) */
  listDefaultsVsBareFastify: 0.7,
  /** the same CPU ratio in the README's default deployment */
  listDefaultsCpuVsBareFastify: 1.5,
  /** server process CPU per events page of 100, ms */
  eventsPageServerCpuMs: 1.0,
  /** p99 of the authenticated list at 50 connections, ms */
  listP99Ms: 25,
  /** POST and PUT /v1/contacts throughput / bare transaction route throughput */
  writeVsBareTransaction: 0.85,
  /** p50 latency of a lookup by e-mail in the big workspace / of a get by id: index-backed, no scan */
  lookupVsGet: 1.5,
  /** p50 latency of the deep page / p50 latency of page 1 */
  deepVsFirstPage: 1.5,
  /** contacts per second through batch upserts of 100 / through single upserts (PUT) */
  batchVsSingleUpsert: 20,
  /** PostgreSQL CPU per batch upsert of 100 contacts, ms: the events of a batch written set-based */
  batchPostgresCpuMs: 10,
  /** list throughput with two workers / with one */
  twoWorkersVsOne: 1.5,
} as const;

export interface RunOptions {
  databaseUrl: string;
  redisUrl: string;
  reset: boolean;
  /** seconds per measured repetition */
  duration: number;
  repetitions: number;
  /** seconds of unmeasured load before each repetition */
  warmup: number;
}

const USAGE = `Usage: npm run bench -- [--reset] [--duration S] [--repetitions N] [--warmup S]

  --reset          drop and reload the benchmark database even when a complete dataset is there
  --duration S     seconds per measured repetition (default 6)
  --repetitions N  repetitions per scenario; medians are reported (default 5)
  --warmup S       seconds of unmeasured load before each repetition (default 2)

Environment: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/workspace_api_bench),
BENCH_REDIS_URL (default redis://127.0.0.1:6379).`;

export function parseOptions(argv: string[]): RunOptions | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      reset: { type: 'boolean', default: false },
      duration: { type: 'string', default: '6' },
      repetitions: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '2' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return null;
  }
  return {
    // Not DATABASE_URL: --reset drops this database, and DATABASE_URL often names one worth keeping.
    databaseUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/workspace_api_bench',
    redisUrl: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    reset: values.reset,
    duration: wholeNumber('duration', values.duration, 1),
    repetitions: wholeNumber('repetitions', values.repetitions, 1),
    warmup: wholeNumber('warmup', values.warmup, 0),
  };
}

/** The whole number an option `--name` gives, refused below `min`. */
export function wholeNumber(name: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number from ${min}`);
  return n;
}
