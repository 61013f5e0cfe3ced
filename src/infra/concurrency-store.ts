// Requests in flight per key, counted across every process of a deployment: in Redis when it is
// configured, else in PostgreSQL, else (the embedded store: one process) in process memory; the
// same choice as the rate-limit counts. A request takes a place when it is admitted and gives it
// back when it ends; a place whose process died is given back when its lease runs out.
import type { Redis } from 'ioredis';
import type { Queryable } from './database.js';
import type { RedisConnection } from './redis.js';

export interface ConcurrencyStore {
  /** Takes one of `limit` places of `bucket` for `holder` (unique per request); false when all are taken. */
  acquire(bucket: string, holder: string, limit: number, leaseMs: number): Promise<boolean>;
  release(bucket: string, holder: string): Promise<void>;
  /** Forgets places whose lease ran out, where the store keeps them outside this process. */
  purge?(): Promise<void>;
  close(): Promise<void>;
}

export class MemoryConcurrencyStore implements ConcurrencyStore {
  /** bucket → holder → lease end (epoch ms) */
  readonly #held = new Map<string, Map<string, number>>();

  async acquire(bucket: string, holder: string, limit: number, leaseMs: number): Promise<boolean> {
    return this.acquireNow(bucket, holder, limit, leaseMs);
  }

  acquireNow(bucket: string, holder: string, limit: number, leaseMs: number, now = Date.now()): boolean {
    let places = this.#held.get(bucket);
    if (!places) this.#held.set(bucket, (places = new Map<string, number>()));
    for (const [h, until] of places) if (until < now) places.delete(h);
    if (places.size >= limit) return false;
    places.set(holder, now + leaseMs);
    return true;
  }

  async release(bucket: string, holder: string): Promise<void> {
    this.releaseNow(bucket, holder);
  }

  releaseNow(bucket: string, holder: string): void {
    const places = this.#held.get(bucket);
    if (!places) return;
    places.delete(holder);
    if (places.size === 0) this.#held.delete(bucket);
  }

  async close(): Promise<void> {}
}

// One sorted set per bucket, scored by lease end on Redis's clock: expired places are dropped, then
// a place is taken if one is free. Atomic, as every script is.
const ACQUIRE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

type RedisWithAcquire = Redis & {
  concurrencyAcquire(bucket: string, holder: string, limit: number, leaseMs: number): Promise<number>;
};

const REDIS_KEY_PREFIX = 'wsapi:inflight:';

/**
 * Places given back while the shared store could not be reached, remembered to be given back there
 * once it answers (before the next place is taken), so that a key's places are not held until their
 * leases run out after an outage. Bounded: past 10,000, the oldest are left to their leases.
 */
class UnreleasedPlaces {
  static readonly MAX = 10_000;
  /** holder → bucket */
  readonly #places = new Map<string, string>();

  get size(): number {
    return this.#places.size;
  }

  remember(bucket: string, holder: string): void {
    if (this.#places.size >= UnreleasedPlaces.MAX) this.#places.delete(this.#places.keys().next().value!);
    this.#places.set(holder, bucket);
  }

  /** Gives them back with `giveBack`; those it could not give back are remembered again. */
  async release(giveBack: (places: [holder: string, bucket: string][]) => Promise<unknown>): Promise<void> {
    const places = [...this.#places];
    this.#places.clear();
    try {
      await giveBack(places);
    } catch (err) {
      for (const [holder, bucket] of places) this.#places.set(holder, bucket);
      throw err;
    }
  }
}

/**
 * Places in Redis. When Redis cannot answer, places are counted in this process's memory instead
 * (the limit then holds per process), as the rate-limit counts are: the API stays available
 * through a Redis outage.
 */
export class RedisConcurrencyStore implements ConcurrencyStore {
  readonly #redis: RedisConnection;
  readonly #fallback = new MemoryConcurrencyStore();
  readonly #unreleased = new UnreleasedPlaces();

  constructor(redis: RedisConnection) {
    redis.client.defineCommand('concurrencyAcquire', { numberOfKeys: 1, lua: ACQUIRE_SCRIPT });
    this.#redis = redis;
  }

  async acquire(bucket: string, holder: string, limit: number, leaseMs: number): Promise<boolean> {
    return this.#redis.run(
      async (client) => {
        if (this.#unreleased.size > 0) {
          await this.#unreleased.release(async (places) => {
            const pipeline = client.pipeline();
            for (const [holder, bucket] of places) pipeline.zrem(REDIS_KEY_PREFIX + bucket, holder);
            await pipeline.exec();
          });
        }
        const key = REDIS_KEY_PREFIX + bucket;
        return (await (client as RedisWithAcquire).concurrencyAcquire(key, holder, limit, leaseMs)) === 1;
      },
      () => this.#fallback.acquireNow(bucket, holder, limit, leaseMs),
    );
  }

  /** Tried even while Redis fails: it is off the request's path, and a place left held would wait for its lease. */
  async release(bucket: string, holder: string): Promise<void> {
    this.#fallback.releaseNow(bucket, holder);
    try {
      await this.#redis.client.zrem(REDIS_KEY_PREFIX + bucket, holder);
    } catch {
      this.#unreleased.remember(bucket, holder);
    }
  }

  /** The connection is the process's (src/infra/redis.ts), closed by its owner. */
  async close(): Promise<void> {}
}

/**
 * Places in PostgreSQL, for several processes (or machines) without Redis: one row per request in
 * an UNLOGGED table, taken by the concurrency_acquire function (db/migrations), which puts the
 * takers of one bucket in line. When the database cannot answer, places are counted in memory.
 */
export class PostgresConcurrencyStore implements ConcurrencyStore {
  readonly #db: Queryable;
  readonly #fallback = new MemoryConcurrencyStore();
  readonly #unreleased = new UnreleasedPlaces();

  constructor(db: Queryable) {
    this.#db = db;
  }

  async acquire(bucket: string, holder: string, limit: number, leaseMs: number): Promise<boolean> {
    try {
      if (this.#unreleased.size > 0) {
        await this.#unreleased.release((places) =>
          this.#db.query(
            `DELETE FROM concurrency_leases l USING unnest($1::text[], $2::text[]) AS p(holder, bucket)
              WHERE l.bucket = p.bucket AND l.holder = p.holder`,
            [places.map(([holder]) => holder), places.map(([, b]) => b)],
          ),
        );
      }
      const { rows } = await this.#db.query<{ taken: boolean }>(
        'SELECT concurrency_acquire($1, $2, $3, $4) AS taken',
        [bucket, holder, limit, leaseMs],
        'concurrency_acquire',
      );
      return rows[0]!.taken;
    } catch {
      return this.#fallback.acquireNow(bucket, holder, limit, leaseMs);
    }
  }

  /** Tried even while the database fails; one that cannot reach it is given back with the next take. */
  async release(bucket: string, holder: string): Promise<void> {
    this.#fallback.releaseNow(bucket, holder);
    await this.#db
      .query(
        'DELETE FROM concurrency_leases WHERE bucket = $1 AND holder = $2',
        [bucket, holder],
        'concurrency_release',
      )
      .catch(() => this.#unreleased.remember(bucket, holder));
  }

  async purge(): Promise<void> {
    await this.#db.query(
      'DELETE FROM concurrency_leases WHERE expires_at_ms < extract(epoch FROM clock_timestamp())::float8 * 1000',
    );
  }

  async close(): Promise<void> {}
}
