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

// Count the hit; the first hit of a window stores when the window ends (Redis's own clock, so all
// processes agree) and makes the hash expire then. Returns the count and that end, as epoch ms.
const HIT_SCRIPT = `
local count = redis.call('HINCRBY', KEYS[1], 'count', 1)
local reset = tonumber(redis.call('HGET', KEYS[1], 'reset'))
if count == 1 or reset == nil then
  local t = redis.call('TIME')
  reset = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
  redis.call('HSET', KEYS[1], 'reset', reset)
  redis.call('PEXPIREAT', KEYS[1], reset)
end
return {count, reset}
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
      const [count, resetAtMs] = await this.#redis.rateLimitHit(bucket, windowMs);
      return { count, resetAtMs };
    } catch (err) {
      this.#onDegraded(err as Error);
      return this.#fallback.hitNow(bucket, windowMs);
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
