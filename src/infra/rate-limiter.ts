// Admission of requests: per-key (and, before authentication, per-client-address) request quotas
// of `limit` requests per minute, refilled continuously (GCRA), and a key's places among the
// requests in flight, both counted in the deployment's admission store
// (src/infra/admission-store.ts). A key of N per minute may burst N requests, then gets one every
// 60/N seconds.
import type { AdmissionStore, FallbackListener, Place } from './admission-store.js';

const RATE_LIMIT_WINDOW_MS = 60_000;

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
  readonly #store: AdmissionStore;
  /**
   * Buckets that refused a request, and until when (epoch ms) any request of them will be refused:
   * a refusal changes no count and other processes only ever take more, so until then the store
   * would answer the same. A client that ignores Retry-After costs no store round trip.
   */
  readonly #refusedUntil = new Map<string, { untilMs: number; resetAtMs: number }>();

  constructor(store: AdmissionStore) {
    this.#store = store;
  }

  /** `cost`: how many requests this counts as, at most the whole quota (a request never waits forever). */
  async consume(bucket: string, limit: number, cost = 1): Promise<RateLimitDecision> {
    return (await this.admit(bucket, limit, cost)).decision;
  }

  /**
   * The rest of a request's cost, `rest`, once `counted` of it was taken on arrival. A refusal's
   * wait covers the whole cost: the request sent again spends its arrival count first, and with a
   * wait for the rest alone it would arrive that count short every time.
   */
  async consumeRest(bucket: string, limit: number, rest: number, counted: number): Promise<RateLimitDecision> {
    const d = await this.consume(bucket, limit, rest);
    if (d.allowed) return d;
    return { ...d, retryAfterMs: d.retryAfterMs + (counted * RATE_LIMIT_WINDOW_MS) / limit };
  }

  /**
   * As `consume`, and when the quota allows the request, takes `place` in the same step: `placed`
   * says whether it was free (null when the quota refused the request, or no place was asked for).
   * A place taken is given back with `release`.
   */
  async admit(
    bucket: string,
    limit: number,
    cost = 1,
    place?: Place,
  ): Promise<{ decision: RateLimitDecision; placed: boolean | null }> {
    // A bucket's state means something only at its own rate: one bucket per (subject, quota), so
    // processes configured with other quotas (or a key whose quota was changed) never share one.
    const name = `${bucket}/${limit}`;
    const now = Date.now();
    const take = { bucket: name, limit, windowMs: RATE_LIMIT_WINDOW_MS, cost: Math.min(cost, limit) };
    const refused = this.#refusedUntil.get(name);
    if (refused && refused.untilMs > now) {
      // The remembered wait is a single request's; each further request of the cost comes back
      // one interval later.
      const interval = RATE_LIMIT_WINDOW_MS / limit;
      return {
        decision: {
          allowed: false,
          limit,
          remaining: 0,
          resetAtMs: refused.resetAtMs,
          retryAfterMs: refused.untilMs - now + (take.cost - 1) * interval,
        },
        placed: null,
      };
    }
    if (refused) this.#refusedUntil.delete(name);
    const { count: s, placed } = await this.#store.admit(take, place);
    // Only the refusal of a single request says when every request passes again.
    if (!s.allowed && cost === 1) {
      this.#refusedUntil.set(name, { untilMs: Date.now() + s.retryAfterMs, resetAtMs: s.fullAtMs });
    }
    return {
      decision: {
        allowed: s.allowed,
        limit,
        remaining: s.remaining,
        resetAtMs: s.fullAtMs,
        retryAfterMs: s.retryAfterMs,
      },
      placed,
    };
  }

  /** Gives back a place taken by `admit`. */
  release(bucket: string, holder: string): Promise<void> {
    return this.#store.release(bucket, holder);
  }

  /** Forgets buckets that are full again and expired places, where the store keeps them outside this process. */
  async purge(): Promise<void> {
    const now = Date.now();
    for (const [name, refused] of this.#refusedUntil) if (refused.untilMs <= now) this.#refusedUntil.delete(name);
    await this.#store.purge?.();
  }

  /** Tells `listener` when the counts go to this process's memory, the shared store failing, and back. */
  onStoreFallback(listener: FallbackListener): void {
    this.#store.onFallback?.(listener);
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}
