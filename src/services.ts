// The long-lived parts of the service, built once in app.ts and handed to the route modules.
import type { Config } from './config.js';
import type { Database } from './infra/database.js';
import type { Metrics } from './infra/metrics.js';
import type { Authenticator } from './modules/api-keys/authenticator.js';
import type { UsageRecorder } from './modules/api-keys/usage-recorder.js';
import type { EventIdCodec } from './modules/events/event-ids.js';
import type { CursorCodec } from './shared/cursor.js';
import type { IdempotencyStore } from './infra/idempotency-store.js';
import type { RateLimiter } from './infra/rate-limiter.js';
import type { ConcurrencyStore } from './infra/concurrency-store.js';
import type { LoadShedder } from './infra/load-shedder.js';
import type { RedisConnection } from './infra/redis.js';

export interface Services {
  config: Config;
  db: Database;
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  /** requests in flight per key, across the deployment (the rate limit's store) */
  concurrency: ConcurrencyStore;
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
