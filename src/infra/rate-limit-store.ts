// Fixed windows anchored at a bucket's first request: the first hit opens a window of `windowMs`,
// every hit in it counts, and the count starts again when it closes. One atomic step per request:
// in process memory by default, or one Lua script round trip in Redis when several processes must
// share the count.
import { Redis } from 'ioredis';

export interface WindowState {
  /** hits in the current window, this one included */
  count: number;
  /** epoch ms when the window closes */
  resetAtMs: number;
}

export interface RateLimitStore {
  hit(bucket: string, windowMs: number): Promise<WindowState>;
  close(): Promise<void>;
}

export class MemoryRateLimitStore implements RateLimitStore {
  readonly #windows = new Map<string, WindowState>();
  readonly #sweeper: NodeJS.Timeout;

  constructor() {
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [bucket, w] of this.#windows) if (w.resetAtMs <= now) this.#windows.delete(bucket);
    }, 30_000);
    this.#sweeper.unref();
  }

  async hit(bucket: string, windowMs: number): Promise<WindowState> {
    return this.hitNow(bucket, windowMs);
  }

  hitNow(bucket: string, windowMs: number, now = Date.now()): WindowState {
    let w = this.#windows.get(bucket);
    if (!w || w.resetAtMs <= now) {
      w = { count: 0, resetAtMs: now + windowMs };
      this.#windows.set(bucket, w);
    }
    w.count++;
    return { count: w.count, resetAtMs: w.resetAtMs };
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
  }
}

// INCR, open the window on the first hit, return count and time left: atomic in Redis.
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}
`;

type RedisWithHit = Redis & { rateLimitHit(key: string, windowMs: number): Promise<[number, number]> };

/**
 * Shared counts in Redis. When Redis cannot answer, the request is counted in this process's memory
 * instead (the limit then holds per process): availability of the API is worth more than the
 * precision of the count during a Redis outage. The fallback is reported through `onDegraded`.
 */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #redis: RedisWithHit;
  readonly #fallback = new MemoryRateLimitStore();
  readonly #onDegraded: (err: Error) => void;

  constructor(url: string, onDegraded: (err: Error) => void) {
    const redis = new Redis(url, {
      keyPrefix: 'wsapi:rl:',
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectTimeout: 2_000,
      commandTimeout: 500,
      lazyConnect: false,
    });
    redis.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    redis.on('error', () => undefined);
    this.#redis = redis as RedisWithHit;
    this.#onDegraded = onDegraded;
  }

  get redis(): Redis {
    return this.#redis;
  }

  async hit(bucket: string, windowMs: number): Promise<WindowState> {
    try {
      const [count, ttl] = await this.#redis.rateLimitHit(bucket, windowMs);
      return { count, resetAtMs: Date.now() + ttl };
    } catch (err) {
      this.#onDegraded(err as Error);
      return this.#fallback.hitNow(bucket, windowMs);
    }
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
