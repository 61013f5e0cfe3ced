// Load shedding in one process. Each admitted request is counted under its subject (its key's
// workspace, or a client address) until it ends. While the process is saturated — too many requests
// in flight, an event loop running late, or database connections queued for — a new request of
// the subject holding the most requests here is refused, so the work that is shed is the heaviest
// tenant's, and the others keep their latency. Probes are never counted nor refused (guard.ts).
import { performance } from 'node:perf_hooks';
import type { LoadSheddingConfig } from '../config.js';

/** How often a timer checks how late the event loop runs. */
const TICK_MS = 50;
/** How long one late run keeps the process saturated. */
const DELAY_WINDOW_MS = 500;

export type Saturation = 'in_flight' | 'event_loop_delay' | 'database_pool' | null;

export class LoadShedder {
  readonly #config: LoadSheddingConfig;
  readonly #poolWaiting: (() => number) | null;
  readonly #inFlight = new Map<string, number>();
  #total = 0;
  #ticker: NodeJS.Timeout | null = null;
  /** until when (performance.now()) the event loop counts as late */
  #lateUntil = 0;

  /** `poolWaiting`: the PostgreSQL pool's queue; null for the embedded store, which runs one statement at a time by design. */
  constructor(config: LoadSheddingConfig, poolWaiting: (() => number) | null) {
    this.#config = config;
    this.#poolWaiting = poolWaiting;
  }

  /**
   * Starts watching how late the event loop runs: once the server listens, so the synchronous work
   * of starting (loading code, compiling schemas) is not taken for overload of the first requests.
   */
  watchEventLoop(): void {
    if (this.#ticker) return;
    // A timer that fires late by more than the threshold marks the loop late for a while. Timers
    // run before the requests that waited meanwhile are read, so those already see it.
    let expected = performance.now() + TICK_MS;
    this.#ticker = setInterval(() => {
      const now = performance.now();
      if (now - expected > this.#config.maxEventLoopDelayMs) this.#lateUntil = now + DELAY_WINDOW_MS;
      expected = now + TICK_MS;
    }, TICK_MS);
    this.#ticker.unref();
  }

  /** Why the process is saturated now, or null. */
  saturation(): Saturation {
    if (this.#total >= this.#config.maxInFlight) return 'in_flight';
    if (performance.now() < this.#lateUntil) return 'event_loop_delay';
    if (this.#poolWaiting && this.#poolWaiting() > this.#config.maxPoolWaiting) return 'database_pool';
    return null;
  }

  /**
   * Whether a new request of `subject` is refused now: the process is saturated and no other
   * subject holds more requests in it. A subject with nothing in flight is always admitted.
   */
  sheds(subject: string): Saturation {
    const mine = this.#inFlight.get(subject) ?? 0;
    if (mine === 0) return null;
    const why = this.saturation();
    if (!why) return null;
    for (const theirs of this.#inFlight.values()) if (theirs > mine) return null;
    return why;
  }

  /** Counts a request of `subject` in flight; the function returned ends it (once). */
  enter(subject: string): () => void {
    this.#inFlight.set(subject, (this.#inFlight.get(subject) ?? 0) + 1);
    this.#total += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#total -= 1;
      const left = (this.#inFlight.get(subject) ?? 1) - 1;
      if (left === 0) this.#inFlight.delete(subject);
      else this.#inFlight.set(subject, left);
    };
  }

  /** Requests in flight in this process, all subjects together. */
  get inFlight(): number {
    return this.#total;
  }

  close(): void {
    if (this.#ticker) clearInterval(this.#ticker);
  }
}
