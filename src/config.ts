// Configuration comes from environment variables only, validated against one schema at boot: a
// wrong value stops the process with a message naming the variable, before anything listens.
import { Type, type Static } from 'typebox';
import { Ajv } from 'ajv';
import { parseDuration } from './shared/durations.js';

/** Who outbound webhooks may reach (docs/security.md, "Webhook targets"). */
const WEBHOOK_TARGET_POLICIES = ['any', 'public', 'public+loopback'] as const;
export type WebhookTargetPolicy = (typeof WEBHOOK_TARGET_POLICIES)[number];

/**
 * Standard Webhooks' seven retries (about 28 hours), then two more a day apart: an endpoint that
 * is down over a weekend still gets every event, about three days in all (docs/webhooks.md).
 */
const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h,24h,24h';

const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATABASE_LISTEN_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATABASE_TRANSACTION_POOLER: Type.Boolean({ default: false }),
  // Streaming replicas of DATABASE_URL's PostgreSQL, comma-separated (docs/scaling.md, "Read replicas").
  DATABASE_READ_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://[^,]+(,postgres(ql)?://[^,]+)*$' })),
  DATABASE_READ_MAX_LAG_MS: Type.Integer({ minimum: 10, maximum: 600_000, default: 1_000 }),
  DATABASE_READ_WAIT_MS: Type.Integer({ minimum: 0, maximum: 5_000, default: 50 }),
  DATABASE_READ_CONSISTENCY: Type.Union([Type.Literal('fresh'), Type.Literal('token')], { default: 'fresh' }),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  DB_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 500, default: 10 }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  DEFAULT_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 600 }),
  UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 120 }),
  DEFAULT_CONCURRENT_REQUESTS: Type.Integer({ minimum: 1, maximum: 10_000, default: 10 }),
  LOAD_SHED_MAX_IN_FLIGHT: Type.Integer({ minimum: 1, maximum: 100_000, default: 128 }),
  LOAD_SHED_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 1_000 }),
  LOAD_SHED_MAX_POOL_WAITING: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024, default: 1024 * 1024 }),
  // At most 30 s: the longest a request may hold a connection and its rows' locks.
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 30_000, default: 30_000 }),
  CONNECTION_IDLE_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 3_600_000, default: 60_000 }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 3_600_000, default: 72_000 }),
  IDEMPOTENCY_TTL_HOURS: Type.Integer({ minimum: 1, maximum: 24 * 30, default: 48 }),
  EVENTS_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 3650, default: 30 }),
  AUTH_CACHE_TTL_MS: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 60_000 }),
  CURSOR_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  TRUST_PROXY: Type.Boolean({ default: false }),
  DEMO_ON_FIRST_START: Type.Boolean({ default: true }),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, maximum: 120_000, default: 10_000 }),
  WEBHOOK_DELIVERY: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  WEBHOOK_RETRY_SCHEDULE: Type.String({ minLength: 1, default: DEFAULT_RETRY_SCHEDULE }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 10_000 }),
  WEBHOOK_TARGETS: Type.Union(
    WEBHOOK_TARGET_POLICIES.map((p) => Type.Literal(p)),
    { default: 'public' },
  ),
  WEBHOOK_POLL_INTERVAL_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 250 }),
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 256, default: 8 }),
  WEBHOOK_ENDPOINT_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 256, default: 4 }),
  WEBHOOK_WORKSPACE_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1024, default: 4 }),
});

/** The names of the service's configuration variables. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvSchema.properties);

type Env = Static<typeof EnvSchema>;

export interface Config {
  readonly port: number;
  readonly host: string;
  /** `null` selects the embedded store (PGlite) under `dataDir`. */
  readonly databaseUrl: string | null;
  /** where LISTEN connections go: a direct connection to PostgreSQL (`null`: `databaseUrl`) */
  readonly databaseListenUrl: string | null;
  /**
   * `databaseUrl` leads to a pooler in transaction mode (PgBouncer): statements are sent unnamed and
   * no startup options (docs/scaling.md, "PgBouncer in transaction mode").
   */
  readonly databaseTransactionPooler: boolean;
  readonly readReplicas: ReadReplicasConfig;
  readonly dataDir: string;
  readonly dbPoolSize: number;
  readonly redisUrl: string | null;
  readonly logLevel: string;
  readonly defaultRateLimitPerMinute: number;
  readonly unauthenticatedRateLimitPerMinute: number;
  /** requests in flight at once per key (all processes together), for a key without its own */
  readonly defaultConcurrentRequests: number;
  readonly loadShedding: LoadSheddingConfig;
  readonly bodyLimitBytes: number;
  readonly timeouts: TimeoutsConfig;
  readonly idempotencyTtlHours: number;
  readonly eventsRetentionDays: number;
  readonly authCacheTtlMs: number;
  readonly cursorSecret: string | null;
  readonly trustProxy: boolean;
  readonly demoOnFirstStart: boolean;
  readonly shutdownGraceMs: number;
  readonly webhooks: WebhookConfig;
}

/** When one process counts as saturated and sheds the heaviest workspaces' work (docs/api-conventions.md). */
export interface LoadSheddingConfig {
  /** requests in flight in this process */
  readonly maxInFlight: number;
  /** how late the event loop may run, ms: later counts as saturated for the next half second */
  readonly maxEventLoopDelayMs: number;
  /** requests waiting for a PostgreSQL connection (the embedded store runs one statement at a time by design) */
  readonly maxPoolWaiting: number;
}

/** Reads served by streaming replicas of the primary (infra/read-replicas.ts, docs/scaling.md). */
export interface ReadReplicasConfig {
  /** the replicas' URLs; none: every read goes to the primary */
  readonly urls: readonly string[];
  /** a replica further behind the primary than this serves no read until it catches up */
  readonly maxLagMs: number;
  /**
   * how long a read with a consistency position waits for a replica to apply that write before the
   * primary answers it instead
   */
  readonly waitMs: number;
  /**
   * What a read without a consistency position sees. `fresh`: every write committed before it arrived
   * (the primary's position is read for it, one read shared by the requests that arrive meanwhile).
   * `token`: what a replica within the lag bound has applied.
   */
  readonly consistency: 'fresh' | 'token';
}

/** How long the HTTP server waits on a client (docs/security.md, API4). */
export interface TimeoutsConfig {
  /** from a request's first byte to its last (headers and body): a client still sending is cut off */
  readonly requestMs: number;
  /** a connection on which nothing arrives or leaves for this long is closed */
  readonly connectionIdleMs: number;
  /** how long a connection stays open after an answer for the client's next request */
  readonly keepAliveMs: number;
}

export interface WebhookConfig {
  /** whether this process delivers (every process can still manage endpoints) */
  readonly delivery: boolean;
  /** waits before each retry, in milliseconds: attempts in all = 1 + its length */
  readonly retryScheduleMs: readonly number[];
  readonly timeoutMs: number;
  readonly targets: WebhookTargetPolicy;
  readonly pollIntervalMs: number;
  /** attempts in flight at once in one process */
  readonly concurrency: number;
  /** attempts in flight at once to one endpoint, across every process */
  readonly endpointConcurrency: number;
  /** attempts in flight at once to the endpoints of one workspace, across every process */
  readonly workspaceConcurrency: number;
}

/** "5s,5m,30m" as milliseconds; null when any part is not a duration. */
function parseRetrySchedule(text: string): number[] | null {
  const parts = text.split(',').map((part) => parseDuration(part));
  const durations = parts.filter((ms): ms is number => ms !== null);
  return durations.length === parts.length && parts.length <= 50 ? durations : null;
}

export class ConfigError extends Error {}

export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const known = Object.keys(EnvSchema.properties);
  const raw: Record<string, unknown> = {};
  for (const name of known) {
    const value = source[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true });
  const validate = ajv.compile(EnvSchema);
  if (!validate(raw)) {
    const problems = (validate.errors ?? []).map(
      (e) => `${e.instancePath.slice(1) || 'environment'} ${e.message ?? ''}`,
    );
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const env = raw as Env;
  const retryScheduleMs = parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE);
  if (!retryScheduleMs) {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_RETRY_SCHEDULE must be comma-separated durations such as 5s,5m,30m,2h (at most 50)',
    );
  }
  if (env.DATABASE_TRANSACTION_POOLER && !(env.DATABASE_URL && env.DATABASE_LISTEN_URL)) {
    // Notifications do not pass a transaction pooler: revoked keys would keep working until their
    // cache entry expires, and webhooks would wait for their poll.
    throw new ConfigError(
      'Invalid configuration: DATABASE_TRANSACTION_POOLER needs DATABASE_URL (the pooler) and DATABASE_LISTEN_URL (PostgreSQL itself, for LISTEN)',
    );
  }
  const readUrls = env.DATABASE_READ_URL?.split(',') ?? [];
  if (readUrls.length > 0 && !env.DATABASE_URL) {
    throw new ConfigError(
      "Invalid configuration: DATABASE_READ_URL names replicas of DATABASE_URL's PostgreSQL; set DATABASE_URL too",
    );
  }
  return Object.freeze({
    port: env.PORT,
    host: env.HOST,
    databaseUrl: env.DATABASE_URL ?? null,
    databaseListenUrl: env.DATABASE_LISTEN_URL ?? null,
    databaseTransactionPooler: env.DATABASE_TRANSACTION_POOLER,
    readReplicas: Object.freeze({
      urls: Object.freeze(readUrls),
      maxLagMs: env.DATABASE_READ_MAX_LAG_MS,
      waitMs: env.DATABASE_READ_WAIT_MS,
      consistency: env.DATABASE_READ_CONSISTENCY,
    }),
    dataDir: env.DATA_DIR,
    dbPoolSize: env.DB_POOL_SIZE,
    redisUrl: env.REDIS_URL ?? null,
    logLevel: env.LOG_LEVEL,
    defaultRateLimitPerMinute: env.DEFAULT_RATE_LIMIT_PER_MINUTE,
    unauthenticatedRateLimitPerMinute: env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE,
    defaultConcurrentRequests: env.DEFAULT_CONCURRENT_REQUESTS,
    loadShedding: Object.freeze({
      maxInFlight: env.LOAD_SHED_MAX_IN_FLIGHT,
      maxEventLoopDelayMs: env.LOAD_SHED_EVENT_LOOP_DELAY_MS,
      maxPoolWaiting: env.LOAD_SHED_MAX_POOL_WAITING ?? 4 * env.DB_POOL_SIZE,
    }),
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
    timeouts: Object.freeze({
      requestMs: env.REQUEST_TIMEOUT_MS,
      connectionIdleMs: env.CONNECTION_IDLE_TIMEOUT_MS,
      keepAliveMs: env.KEEP_ALIVE_TIMEOUT_MS,
    }),
    idempotencyTtlHours: env.IDEMPOTENCY_TTL_HOURS,
    eventsRetentionDays: env.EVENTS_RETENTION_DAYS,
    authCacheTtlMs: env.AUTH_CACHE_TTL_MS,
    cursorSecret: env.CURSOR_SECRET ?? null,
    trustProxy: env.TRUST_PROXY,
    demoOnFirstStart: env.DEMO_ON_FIRST_START,
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
    webhooks: Object.freeze({
      delivery: env.WEBHOOK_DELIVERY === 'on',
      retryScheduleMs: Object.freeze(retryScheduleMs),
      timeoutMs: env.WEBHOOK_TIMEOUT_MS,
      targets: env.WEBHOOK_TARGETS,
      pollIntervalMs: env.WEBHOOK_POLL_INTERVAL_MS,
      concurrency: env.WEBHOOK_CONCURRENCY,
      endpointConcurrency: env.WEBHOOK_ENDPOINT_CONCURRENCY,
      workspaceConcurrency: env.WEBHOOK_WORKSPACE_CONCURRENCY,
    }),
  });
}
