// Configuration comes from environment variables only, validated against one schema at boot: a
// wrong value stops the process with a message naming the variable, before anything listens.
import { Type, type Static } from 'typebox';
import { Ajv } from 'ajv';

const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  DB_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 500, default: 10 }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  DEFAULT_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 600 }),
  UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 120 }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024, default: 1024 * 1024 }),
  IDEMPOTENCY_TTL_HOURS: Type.Integer({ minimum: 1, maximum: 24 * 30, default: 48 }),
  EVENTS_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 3650, default: 30 }),
  AUTH_CACHE_TTL_MS: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 60_000 }),
  CURSOR_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  TRUST_PROXY: Type.Boolean({ default: false }),
  DEMO_ON_FIRST_START: Type.Boolean({ default: true }),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, maximum: 120_000, default: 10_000 }),
});

export type Env = Static<typeof EnvSchema>;

export interface Config {
  readonly port: number;
  readonly host: string;
  /** `null` selects the embedded store (PGlite) under `dataDir`. */
  readonly databaseUrl: string | null;
  readonly dataDir: string;
  readonly dbPoolSize: number;
  readonly redisUrl: string | null;
  readonly logLevel: string;
  readonly defaultRateLimitPerMinute: number;
  readonly unauthenticatedRateLimitPerMinute: number;
  readonly bodyLimitBytes: number;
  readonly idempotencyTtlHours: number;
  readonly eventsRetentionDays: number;
  readonly authCacheTtlMs: number;
  readonly cursorSecret: string | null;
  readonly trustProxy: boolean;
  readonly demoOnFirstStart: boolean;
  readonly shutdownGraceMs: number;
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
  return Object.freeze({
    port: env.PORT,
    host: env.HOST,
    databaseUrl: env.DATABASE_URL ?? null,
    dataDir: env.DATA_DIR,
    dbPoolSize: env.DB_POOL_SIZE,
    redisUrl: env.REDIS_URL ?? null,
    logLevel: env.LOG_LEVEL,
    defaultRateLimitPerMinute: env.DEFAULT_RATE_LIMIT_PER_MINUTE,
    unauthenticatedRateLimitPerMinute: env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE,
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
    idempotencyTtlHours: env.IDEMPOTENCY_TTL_HOURS,
    eventsRetentionDays: env.EVENTS_RETENTION_DAYS,
    authCacheTtlMs: env.AUTH_CACHE_TTL_MS,
    cursorSecret: env.CURSOR_SECRET ?? null,
    trustProxy: env.TRUST_PROXY,
    demoOnFirstStart: env.DEMO_ON_FIRST_START,
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
  });
}
