// The usage trail of each key (requests per UTC day and operation, errors, rate-limit rejections,
// last use), counted in memory and written in one batched statement every few seconds, so the
// request path never waits on it. A process that stops flushes what it counted first.
import type { Database } from '../../infra/database.js';
import { apiKeysRepository, type UsageCount } from './api-keys.repository.js';

type Counter = UsageCount;

export class UsageRecorder {
  readonly #db: Database;
  /**
   * By day, key and operation: maps of the strings the request already holds, so counting makes no
   * string of its own (a joined id had to be built and hashed on every request).
   */
  #counters = new Map<string, Map<string, Map<string, Counter>>>();
  readonly #timer: NodeJS.Timeout;
  #flushing: Promise<void> = Promise.resolve();

  constructor(db: Database, flushEveryMs = 5_000) {
    this.#db = db;
    this.#timer = setInterval(() => void this.flush(), flushEveryMs);
    this.#timer.unref();
  }

  /** The UTC day of the last record, and the range of times it covers: one date format a day. */
  #day = { name: '', from: 0, to: -1 };

  record(keyId: string, operation: string, statusCode: number, now = Date.now()): void {
    const day = this.#dayOf(now);
    const c = this.#counter(day, keyId, operation);
    c.requests++;
    if (statusCode === 429) c.rateLimited++;
    else if (statusCode >= 500) c.serverErrors++;
    else if (statusCode >= 400) c.clientErrors++;
    c.lastUsedMs = Math.max(c.lastUsedMs, now);
  }

  #counter(day: string, keyId: string, operation: string): Counter {
    let ofDay = this.#counters.get(day);
    if (!ofDay) this.#counters.set(day, (ofDay = new Map<string, Map<string, Counter>>()));
    let ofKey = ofDay.get(keyId);
    if (!ofKey) ofDay.set(keyId, (ofKey = new Map<string, Counter>()));
    let c = ofKey.get(operation);
    if (!c) {
      c = { keyId, day, operation, requests: 0, clientErrors: 0, serverErrors: 0, rateLimited: 0, lastUsedMs: 0 };
      ofKey.set(operation, c);
    }
    return c;
  }

  #dayOf(now: number): string {
    if (now < this.#day.from || now > this.#day.to) {
      const from = now - (now % 86_400_000);
      this.#day = { name: new Date(now).toISOString().slice(0, 10), from, to: from + 86_399_999 };
    }
    return this.#day.name;
  }

  /** Writes what was counted; counts that fail to write are kept for the next flush. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      const batch = [...this.#counters.values()].flatMap((ofDay) =>
        [...ofDay.values()].flatMap((ofKey) => [...ofKey.values()]),
      );
      if (batch.length === 0) return;
      this.#counters = new Map();
      try {
        await apiKeysRepository.addUsage(this.#db, batch);
      } catch {
        for (const c of batch) {
          const now = this.#counter(c.day, c.keyId, c.operation);
          now.requests += c.requests;
          now.clientErrors += c.clientErrors;
          now.serverErrors += c.serverErrors;
          now.rateLimited += c.rateLimited;
          now.lastUsedMs = Math.max(now.lastUsedMs, c.lastUsedMs);
        }
      }
    });
    return this.#flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }
}
