// Rate-limit counts as GCRA (the generic cell rate algorithm, a token bucket kept as one number):
// a bucket of `limit` requests per `windowMs` refills continuously, one request every
// windowMs / limit. Its state is the theoretical arrival time (TAT): the instant at which the
// bucket would be full again. A request is allowed when, after adding its own interval, the TAT is
// at most one window ahead of now. One atomic step per request: in process memory, in PostgreSQL
// (several processes without Redis) or in one Lua script round trip in Redis.
import { Redis } from 'ioredis';
import type { Queryable } from './database.js';

export interface BucketState {
  allowed: boolean;
  /** requests that would pass right now after this one */
  remaining: number;
  /** epoch ms when the bucket is full again (all `limit` requests available) */
  fullAtMs: number;
  /** when refused: ms until this request would pass */
  retryAfterMs: number;
}

export interface RateLimitStore {
  take(bucket: string, limit: number, windowMs: number): Promise<BucketState>;
  purge?(): Promise<void>;
  close(): Promise<void>;
}

/** The GCRA step, given the stored TAT (or null for a new bucket) and the clock. */
export function gcra(
  storedTat: number | null,
  now: number,
  limit: number,
  windowMs: number,
): { state: BucketState; tat: number | null } {
  const interval = windowMs / limit;
  const tat = Math.max(storedTat ?? now, now);
  const next = tat + interval;
  if (next - now <= windowMs + 1e-6) {
    return {
      state: {
        allowed: true,
        remaining: Math.max(0, Math.floor((windowMs - (next - now)) / interval + 1e-9)),
        fullAtMs: Math.ceil(next),
        retryAfterMs: 0,
      },
      tat: next,
    };
  }
  return {
    state: { allowed: false, remaining: 0, fullAtMs: Math.ceil(tat), retryAfterMs: next - windowMs - now },
    tat: null,
  };
}

export class MemoryRateLimitStore implements RateLimitStore {
  readonly #tats = new Map<string, number>();
  readonly #sweeper: NodeJS.Timeout;

  constructor() {
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [bucket, tat] of this.#tats) if (tat <= now) this.#tats.delete(bucket);
    }, 30_000);
    this.#sweeper.unref();
  }

  async take(bucket: string, limit: number, windowMs: number): Promise<BucketState> {
    return this.takeNow(bucket, limit, windowMs);
  }

  takeNow(bucket: string, limit: number, windowMs: number, now = Date.now()): BucketState {
    const { state, tat } = gcra(this.#tats.get(bucket) ?? null, now, limit, windowMs);
    if (tat !== null) this.#tats.set(bucket, tat);
    return state;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
  }
}

// The GCRA step on Redis's own clock (all processes agree); the key expires when the bucket is
// full again. Returns {allowed, now, tat} with the numbers as strings (Lua would truncate floats).
const TAKE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local nextTat = tat + interval
if nextTat - now <= window + 0.000001 then
  redis.call('SET', KEYS[1], tostring(nextTat), 'PX', math.ceil(nextTat - now) + 1)
  return {1, tostring(now), tostring(tat)}
end
return {0, tostring(now), tostring(tat)}
`;

type RedisWithTake = Redis & {
  rateLimitTake(key: string, interval: number, windowMs: number): Promise<[number, string, string]>;
};

/**
 * Shared counts in Redis. When Redis cannot answer, the request is counted in this process's memory
 * instead (the limit then holds per process): availability of the API is worth more than the
 * precision of the count during a Redis outage. The fallback is reported through `onDegraded`.
 */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #redis: RedisWithTake;
  readonly #fallback = new MemoryRateLimitStore();
  readonly #onDegraded: (err: Error) => void;

  constructor(url: string, onDegraded: (err: Error) => void) {
    const redis = new Redis(url, {
      keyPrefix: 'wsapi:gcra:',
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectTimeout: 2_000,
      commandTimeout: 500,
      lazyConnect: false,
    });
    redis.defineCommand('rateLimitTake', { numberOfKeys: 1, lua: TAKE_SCRIPT });
    redis.on('error', () => undefined);
    this.#redis = redis as RedisWithTake;
    this.#onDegraded = onDegraded;
  }

  get redis(): Redis {
    return this.#redis;
  }

  async take(bucket: string, limit: number, windowMs: number): Promise<BucketState> {
    try {
      const [, now, tat] = await this.#redis.rateLimitTake(bucket, windowMs / limit, windowMs);
      // The script applied the same step; replaying it here gives the numbers of the answer.
      return gcra(Number(tat), Number(now), limit, windowMs).state;
    } catch (err) {
      this.#onDegraded(err as Error);
      return this.#fallback.takeNow(bucket, limit, windowMs);
    }
  }

  /** Resolves once connected (or after `timeoutMs`, leaving the fallback to count meanwhile). */
  async connected(timeoutMs = 2_000): Promise<void> {
    if (this.#redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#redis.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.#redis.once('ready', done);
    });
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.#redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await this.#fallback.close();
    this.#redis.disconnect();
  }
}

/**
 * Shared counts in PostgreSQL, for several processes (or machines) without Redis: one statement
 * per request on the database's clock, on an UNLOGGED table (a count need not survive a crash).
 * When the database cannot answer, the request is counted in process memory, as with Redis.
 */
export class PostgresRateLimitStore implements RateLimitStore {
  readonly #db: Queryable;
  readonly #fallback = new MemoryRateLimitStore();

  constructor(db: Queryable) {
    this.#db = db;
  }

  async take(bucket: string, limit: number, windowMs: number): Promise<BucketState> {
    const interval = windowMs / limit;
    try {
      const { rows } = await this.#db.query<{ now_ms: number; prior_tat: number | null; taken: boolean }>(
        `WITH clock AS (SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS now_ms),
         taken AS (
           INSERT INTO rate_limit_buckets AS b (bucket, tat_ms)
           SELECT $1, now_ms + $2 FROM clock
           ON CONFLICT (bucket) DO UPDATE SET tat_ms = greatest(b.tat_ms, (SELECT now_ms FROM clock)) + $2
            WHERE greatest(b.tat_ms, (SELECT now_ms FROM clock)) + $2 - (SELECT now_ms FROM clock) <= $3 + 0.000001
           RETURNING tat_ms)
         SELECT (SELECT now_ms FROM clock) AS now_ms,
                (SELECT tat_ms - $2 FROM taken) AS prior_tat,
                EXISTS (SELECT 1 FROM taken) AS taken`,
        [bucket, interval, windowMs],
        'rate_limit_take',
      );
      const row = rows[0]!;
      if (row.taken) return gcra(row.prior_tat, row.now_ms, limit, windowMs).state;
      // Refused: the bucket's current TAT gives the exact wait.
      const { rows: current } = await this.#db.query<{ tat_ms: number }>(
        'SELECT tat_ms FROM rate_limit_buckets WHERE bucket = $1',
        [bucket],
        'rate_limit_peek',
      );
      return gcra(current[0]?.tat_ms ?? row.now_ms, row.now_ms, limit, windowMs).state;
    } catch {
      return this.#fallback.takeNow(bucket, limit, windowMs);
    }
  }

  /** Drops buckets that are full again (nothing to remember); run in the background. */
  async purge(): Promise<void> {
    await this.#db.query(
      'DELETE FROM rate_limit_buckets WHERE tat_ms < extract(epoch FROM clock_timestamp())::float8 * 1000',
    );
  }

  async close(): Promise<void> {
    await this.#fallback.close();
  }
}
