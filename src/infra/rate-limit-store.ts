// Rate-limit counts as GCRA (the generic cell rate algorithm, a token bucket kept as one number):
// a bucket of `limit` requests per `windowMs` refills continuously, one request every
// windowMs / limit. Its state is the theoretical arrival time (TAT): the instant at which the
// bucket would be full again. A request is allowed when, after adding its own interval, the TAT is
// at most one window ahead of now. One atomic step per request: in process memory, in PostgreSQL
// (several processes without Redis) or in one Lua script round trip in Redis.
import type { Redis } from 'ioredis';
import type { Queryable } from './database.js';
import type { RedisConnection } from './redis.js';

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
  /** `cost`: how many requests this one counts as (docs/api-conventions.md, "Rate limits") */
  take(bucket: string, limit: number, windowMs: number, cost?: number): Promise<BucketState>;
  purge?(): Promise<void>;
  close(): Promise<void>;
}

/** The GCRA step of a request counting as `cost` requests, given the stored TAT (or null for a new bucket) and the clock. */
function gcra(
  storedTat: number | null,
  now: number,
  limit: number,
  windowMs: number,
  cost = 1,
): { state: BucketState; tat: number | null } {
  const interval = windowMs / limit;
  const tat = Math.max(storedTat ?? now, now);
  const next = tat + interval * cost;
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

  async take(bucket: string, limit: number, windowMs: number, cost = 1): Promise<BucketState> {
    return this.takeNow(bucket, limit, windowMs, cost);
  }

  takeNow(bucket: string, limit: number, windowMs: number, cost = 1, now = Date.now()): BucketState {
    const { state, tat } = gcra(this.#tats.get(bucket) ?? null, now, limit, windowMs, cost);
    if (tat !== null) this.#tats.set(bucket, tat);
    return state;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
  }
}

// The GCRA step on Redis's own clock (all processes agree) for each key of the call, in order: a
// key named twice sees its first step's count. A key expires when its bucket is full again.
// ARGV holds each key's interval and window. The answer is Redis's clock, then for each key whether
// it was allowed and its stored TAT before the step; the numbers are strings of 17 significant
// digits, which give back the very same double (Lua's tostring keeps 14, and a TAT rounded up
// by it would refuse here what the caller's replay of the step allows).
const TAKE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local out = {string.format('%.17g', now)}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local window = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local nextTat = tat + interval
  local allowed = 0
  if nextTat - now <= window + 0.000001 then
    redis.call('SET', key, string.format('%.17g', nextTat), 'PX', math.ceil(nextTat - now) + 1)
    allowed = 1
  end
  out[2 * i] = allowed
  out[2 * i + 1] = string.format('%.17g', tat)
end
return out
`;

type RedisWithTake = Redis & {
  /** numberOfKeys, the keys, then each key's interval and window */
  rateLimitTake(...args: (string | number)[]): Promise<(string | number)[]>;
};

interface PendingTake {
  bucket: string;
  limit: number;
  windowMs: number;
  cost: number;
  resolve: (state: BucketState) => void;
}

const REDIS_KEY_PREFIX = 'wsapi:gcra:';

/** Keys per script call: a turn of the event loop with more takes sends several calls. */
const MAX_TAKES_PER_CALL = 256;

/**
 * Shared counts in Redis. The takes of one turn of the event loop go in one script call (run
 * atomically by Redis, in arrival order), so a busy process pays one round trip per turn rather
 * than per request; a request waits for nothing but the rest of its turn. When Redis cannot
 * answer, the request is counted in this process's memory instead (the limit then holds per
 * process): availability of the API is worth more than the precision of the count during a Redis
 * outage. Each failed call is reported through `onDegraded`.
 */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #redis: RedisConnection;
  readonly #fallback = new MemoryRateLimitStore();
  readonly #onDegraded: (err: Error) => void;
  #pending: PendingTake[] = [];

  constructor(redis: RedisConnection, onDegraded: (err: Error) => void = () => undefined) {
    // No numberOfKeys: each call says how many keys it carries.
    redis.client.defineCommand('rateLimitTake', { lua: TAKE_SCRIPT });
    this.#redis = redis;
    this.#onDegraded = onDegraded;
  }

  take(bucket: string, limit: number, windowMs: number, cost = 1): Promise<BucketState> {
    return new Promise((resolve) => {
      if (this.#pending.push({ bucket, limit, windowMs, cost, resolve }) === 1) setImmediate(this.#flush);
    });
  }

  readonly #flush = (): void => {
    const pending = this.#pending;
    this.#pending = [];
    for (let from = 0; from < pending.length; from += MAX_TAKES_PER_CALL) {
      void this.#send(pending.slice(from, from + MAX_TAKES_PER_CALL));
    }
  };

  async #send(takes: PendingTake[]): Promise<void> {
    const args: (string | number)[] = [takes.length];
    for (const t of takes) args.push(REDIS_KEY_PREFIX + t.bucket);
    for (const t of takes) args.push((t.windowMs / t.limit) * t.cost, t.windowMs);
    const reply = await this.#redis.run(
      (client) =>
        (client as RedisWithTake).rateLimitTake(...args).catch((err: Error) => {
          this.#onDegraded(err);
          throw err;
        }),
      () => null,
    );
    if (reply === null) {
      for (const t of takes) t.resolve(this.#fallback.takeNow(t.bucket, t.limit, t.windowMs, t.cost));
      return;
    }
    const now = Number(reply[0]);
    takes.forEach((t, i) => {
      // The script applied the same step on the same doubles; replaying it here gives the numbers
      // of the answer. Redis's verdict is the one that counted.
      const { state } = gcra(Number(reply[2 * i + 2]), now, t.limit, t.windowMs, t.cost);
      const allowed = reply[2 * i + 1] === 1;
      t.resolve(allowed || !state.allowed ? state : { ...state, allowed, remaining: 0, retryAfterMs: 1 });
    });
  }

  /** The connection is the process's (src/infra/redis.ts), closed by its owner. */
  async close(): Promise<void> {
    await this.#fallback.close();
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

  async take(bucket: string, limit: number, windowMs: number, cost = 1): Promise<BucketState> {
    const interval = (windowMs / limit) * cost;
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
      if (row.taken) return gcra(row.prior_tat, row.now_ms, limit, windowMs, cost).state;
      // Refused: the bucket's current TAT gives the exact wait.
      const { rows: current } = await this.#db.query<{ tat_ms: number }>(
        'SELECT tat_ms FROM rate_limit_buckets WHERE bucket = $1',
        [bucket],
        'rate_limit_peek',
      );
      return gcra(current[0]?.tat_ms ?? row.now_ms, row.now_ms, limit, windowMs, cost).state;
    } catch {
      return this.#fallback.takeNow(bucket, limit, windowMs, cost);
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
