// The long-lived parts of the service, built once (createServices, called by app.ts) and handed to
// the route modules.
import type { Config } from './config.js';
import { createPostgresDatabase, type Database } from './infra/database.js';
import { IdempotencyStore } from './infra/idempotency-store.js';
import { instanceSecret } from './infra/instance-settings.js';
import { LoadShedder } from './infra/load-shedder.js';
import { Metrics } from './infra/metrics.js';
import {
  MemoryAdmissionStore,
  PostgresAdmissionStore,
  RedisAdmissionStore,
  type AdmissionStore,
} from './infra/admission-store.js';
import { RateLimiter } from './infra/rate-limiter.js';
import { ReadReplicas } from './infra/read-replicas.js';
import { RedisConnection } from './infra/redis.js';
import { Authenticator } from './modules/api-keys/authenticator.js';
import { UsageRecorder } from './modules/api-keys/usage-recorder.js';
import { EventIdCodec } from './modules/events/event-ids.js';
import { CursorCodec } from './shared/cursor.js';

export interface Services {
  config: Config;
  db: Database;
  /** where reads run: the primary, or streaming replicas of it (DATABASE_READ_URL) */
  reads: ReadReplicas;
  authenticator: Authenticator;
  /** rate limits and a key's requests in flight, across the deployment */
  rateLimiter: RateLimiter;
  /** this process's saturation, and who holds the most of it */
  shedder: LoadShedder;
  usage: UsageRecorder;
  idempotency: IdempotencyStore;
  cursors: CursorCodec;
  /** the codec of event ids, once its secret is read from the store */
  eventIds: () => Promise<EventIdCodec>;
  metrics: Metrics;
  /** Present when a Redis is configured: the process's connection, shared by the counting stores. */
  redis: RedisConnection | null;
}

export interface RouteOptions {
  services: Services;
}

/** `load` run once; run again on the next call if it failed. */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | null = null;
  return () => {
    pending ??= load().catch((err: unknown) => {
      pending = null;
      throw err;
    });
    return pending;
  };
}

/** The long-lived parts of the service for this configuration and store. */
export async function createServices(config: Config, db: Database): Promise<Services> {
  let store: AdmissionStore;
  let redis: RedisConnection | null = null;
  if (config.redisUrl) {
    redis = new RedisConnection(config.redisUrl);
    await redis.connected();
    store = new RedisAdmissionStore(redis);
  } else if (db.kind === 'postgres') {
    // Several processes (serve --workers, several machines) share one count without Redis.
    store = new PostgresAdmissionStore(db);
  } else {
    store = new MemoryAdmissionStore();
  }
  const authenticator = new Authenticator(db, config.authCacheTtlMs);
  await authenticator.start();
  const metrics = new Metrics(db);
  const { urls, ...replication } = config.readReplicas;
  const reads = new ReadReplicas(
    db,
    urls.map((url) => createPostgresDatabase(url, config.dbPoolSize)),
    replication,
    (route) => metrics.readServed(route),
  );
  await reads.start();
  return {
    config,
    db,
    reads,
    authenticator,
    rateLimiter: new RateLimiter(store),
    shedder: new LoadShedder(config.loadShedding, db.kind === 'postgres' ? () => db.poolStats().waiting : null),
    usage: new UsageRecorder(db),
    idempotency: new IdempotencyStore(db, config.idempotencyTtlHours),
    cursors: new CursorCodec(config.cursorSecret ?? (await instanceSecret(db, 'cursor_secret'))),
    // Not configurable, unlike the cursor secret: followers keep event ids for as long as they
    // follow, so this secret must live as long as the store does. Read at first use, so the
    // service starts (and answers 503) while the store is down.
    eventIds: once(async () => new EventIdCodec(await instanceSecret(db, 'event_id_secret'))),
    metrics,
    redis,
  };
}
