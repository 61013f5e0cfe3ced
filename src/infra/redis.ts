// The one connection to Redis of a process, shared by every store that counts in it (rate-limit
// counts, requests in flight), with one view of whether Redis answers. A request touches several
// stores; without a shared view, a Redis that hangs would cost it one command timeout per store.
// Once a command fails (at once when Redis refuses connections, after the command timeout when it
// hangs), the stores count in process memory without asking Redis for `openMs`; then a single
// command tries Redis again while the others keep counting in memory, and its success makes every
// store use Redis again.
import { Redis } from 'ioredis';

export class RedisConnection {
  readonly client: Redis;
  readonly #openMs: number;
  /** epoch ms until which Redis is not asked; 0 while it answers */
  #openUntil = 0;
  #probing = false;

  constructor(url: string, { openMs = 1_000 } = {}) {
    this.client = new Redis(url, {
      maxRetriesPerRequest: 1,
      // A command while disconnected fails at once (and is counted in memory) instead of waiting.
      enableOfflineQueue: false,
      // No auto-pipelining: a pipeline holding a script asks Redis whether it knows the script
      // first, a second round trip (and a second command timeout while Redis hangs). The
      // rate-limit store batches its own takes.
      enableAutoPipelining: false,
      connectTimeout: 2_000,
      commandTimeout: 500,
    });
    // Failures show where they matter: in `run` (counted in memory) and on /readyz (`ping`).
    this.client.on('error', () => undefined);
    // A connection (re)made is Redis answering: the stores use it from the next request on.
    this.client.on('ready', () => (this.#openUntil = 0));
    this.#openMs = openMs;
  }

  /** Runs `command` on Redis, or `inMemory` when Redis failed lately or `command` fails. */
  async run<T>(command: (redis: Redis) => Promise<T>, inMemory: () => T): Promise<T> {
    const probe = this.#openUntil !== 0;
    if (probe && (this.#probing || Date.now() < this.#openUntil)) return inMemory();
    this.#probing = probe;
    try {
      const result = await command(this.client);
      this.#openUntil = 0;
      return result;
    } catch {
      this.#openUntil = Date.now() + this.#openMs;
      return inMemory();
    } finally {
      if (probe) this.#probing = false;
    }
  }

  /** Resolves once connected (or after `timeoutMs`, leaving the stores to count in memory meanwhile). */
  async connected(timeoutMs = 2_000): Promise<void> {
    if (this.client.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.client.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.client.once('ready', done);
    });
  }

  /** Asks Redis itself, whatever `run` last saw: the answer of /readyz. An answer is seen by `run` too. */
  async ping(): Promise<boolean> {
    try {
      const answers = (await this.client.ping()) === 'PONG';
      if (answers) this.#openUntil = 0;
      return answers;
    } catch {
      return false;
    }
  }

  close(): void {
    this.client.disconnect();
  }
}
