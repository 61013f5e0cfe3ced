// Per-key (and, before authentication, per-client-address) request quotas: `limit` requests per
// minute, refilled continuously (GCRA, src/infra/rate-limit-store.ts). A key of N per minute may
// burst N requests, then gets one every 60/N seconds.
import type { RateLimitStore } from './rate-limit-store.js';

export const RATE_LIMIT_WINDOW_MS = 60_000;

export interface RateLimitDecision {
  allowed: boolean;
  /** RateLimit-Limit: the quota, requests per minute */
  limit: number;
  /** RateLimit-Remaining: requests that would pass right now, after this one */
  remaining: number;
  /** RateLimit-Reset: when the whole quota is available again */
  resetAtMs: number;
  /** when refused: ms until this request would pass (Retry-After, rounded up to seconds) */
  retryAfterMs: number;
}

export class RateLimiter {
  readonly #store: RateLimitStore;

  constructor(store: RateLimitStore) {
    this.#store = store;
  }

  async consume(bucket: string, limit: number): Promise<RateLimitDecision> {
    // A bucket's state means something only at its own rate: one bucket per (subject, quota), so
    // processes configured with other quotas (or a key whose quota was changed) never share one.
    const s = await this.#store.take(`${bucket}/${limit}`, limit, RATE_LIMIT_WINDOW_MS);
    return { allowed: s.allowed, limit, remaining: s.remaining, resetAtMs: s.fullAtMs, retryAfterMs: s.retryAfterMs };
  }

  /** Forgets buckets that are full again, where the store keeps them outside this process. */
  async purge(): Promise<void> {
    await this.#store.purge?.();
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}
