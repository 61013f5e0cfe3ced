// Per-key (and, before authentication, per-client-address) request quotas over one-minute windows.
import type { RateLimitStore } from '../infra/rate-limit-store.js';

export const RATE_LIMIT_WINDOW_MS = 60_000;

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetAtMs: number;
}

export class RateLimiter {
  readonly #store: RateLimitStore;

  constructor(store: RateLimitStore) {
    this.#store = store;
  }

  async consume(bucket: string, limit: number): Promise<RateLimitDecision> {
    const { count, resetAtMs } = await this.#store.hit(bucket, RATE_LIMIT_WINDOW_MS);
    return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetAtMs };
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}
