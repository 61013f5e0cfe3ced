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
  /** What the connection last heard went wrong, or that it closed (see `failureCode`); cleared once it is ready. */
  #connectionFailure: string | null = null;

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
    // Failures show where they matter: in `run` (counted in memory), on /readyz (`ping`) and, by
    // their code, in the stores' notice of counting in memory (`failureCode`).
    this.client.on('error', (err: unknown) => (this.#connectionFailure = codeOf(err) ?? this.#connectionFailure));
    this.client.on('close', () => (this.#connectionFailure ??= 'CONNECTION_CLOSED'));
    // A connection (re)made is Redis answering: the stores use it from the next request on.
    this.client.on('ready', () => {
      this.#openUntil = 0;
      this.#connectionFailure = null;
    });
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

  /**
   * Why a command failed, as a word safe to log: a system error code (ECONNREFUSED, ENOTFOUND…), a
   * Redis error code (WRONGPASS, NOAUTH, READONLY…), COMMAND_TIMEOUT (Redis hangs), CONNECTION_CLOSED
   * or NOT_CONNECTED — for a command that failed for want of a connection, why the connection
   * failed when it is known; never a message, which may name hosts or users.
   */
  failureCode(err: unknown): string {
    const own = codeOf(err);
    // A command that failed for want of a connection failed for the connection's reason, when known.
    const forWantOfConnection = own === null || NOT_CONNECTED.has(own) || this.client.status !== 'ready';
    if (forWantOfConnection && this.#connectionFailure) return this.#connectionFailure;
    return own ?? ((err as Error | null)?.name || 'Error');
  }

  close(): void {
    this.client.disconnect();
  }
}

/** ioredis's errors that have no code, by their fixed messages. */
const CLIENT_FAILURES = new Map([
  ['Command timed out', 'COMMAND_TIMEOUT'],
  ['Connection is closed.', 'CONNECTION_CLOSED'],
  ["Stream isn't writeable and enableOfflineQueue options is false", 'NOT_CONNECTED'],
]);
/** The client's codes that say only that there was no connection, not why. */
const NOT_CONNECTED = new Set(['CONNECTION_CLOSED', 'NOT_CONNECTED']);

/** The code of a Redis client's error, when it has one safe to log (see `failureCode`). */
function codeOf(err: unknown): string | null {
  const e = err as { code?: unknown; name?: unknown; message?: unknown } | null;
  if (typeof e?.code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(e.code)) return e.code;
  if (typeof e?.message !== 'string') return null;
  // An error reply starts with its code, by the protocol: "WRONGPASS invalid username-password pair".
  if (e.name === 'ReplyError') return /^([A-Z]+)(?: |$)/.exec(e.message)?.[1] ?? null;
  return CLIENT_FAILURES.get(e.message) ?? null;
}
