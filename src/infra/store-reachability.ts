// Whether PostgreSQL can be reached, so that a request answers 503 within a second when it cannot.
//
// A database that refuses connections fails a request at once. One that stops answering (a host
// gone, a network that drops packets, a postmaster frozen) does not: new connections wait for the
// pool's connect timeout, and a statement already sent waits for an answer that never comes, as
// long as TCP keeps the connection (many minutes). Waiting is right when the database is slow and
// wrong when it is gone, and a statement's time cannot tell the two apart. So when any operation
// has been in flight for SUSPECT_AFTER_MS, a probe asks, on a connection of its own that nothing
// else queues on, for `SELECT 1`. A database that answers it within PROBE_TIMEOUT_MS is slow, not
// gone, and nothing changes. One that does not is unreachable: every pool connection is closed (the
// statements in flight fail; a transaction whose COMMIT went unanswered may have committed, which
// its write's Idempotency-Key replays) and every request fails at once, until a probe, every
// RECHECK_MS, is answered again.
import type pg from 'pg';

/** An operation in flight this long asks for a probe (at most one per RECHECK_MS). */
export const SUSPECT_AFTER_MS = 200;
/** A probe on the probe's open connection not answered within this long finds the database unreachable. */
export const PROBE_TIMEOUT_MS = 500;
/**
 * A probe on a new connection (the first, or after the last one failed) is given this long: a
 * connection takes several round trips, which a slow database makes long.
 */
export const CONNECT_TIMEOUT_MS = 2_000;
/** How often a probe runs while the database is unreachable, and at most while it is suspected. */
export const RECHECK_MS = 250;

/** The error of every operation refused or cut short while the database is unreachable. */
export class StoreUnreachableError extends Error {
  /** SQLSTATE connection_failure: what a lost connection says, for the same 503. */
  readonly code = '08006';
  constructor() {
    super('the database is not answering');
  }
}

/** An operation in flight: since when, whether it was given up, and how to reject it until it settles. */
interface InFlight {
  readonly since: number;
  gaveUp: boolean;
  reject: ((err: Error) => void) | null;
}

export class StoreReachability {
  readonly #openClient: () => pg.Client;
  readonly #cutConnections: () => void;
  #unreachable = false;
  /** the probe's own connection, kept between probes while the database answers */
  #client: pg.Client | null = null;
  #probing = false;
  /** a new connection for the probe is being opened, and the database has not answered it yet */
  #connecting = false;
  /**
   * When an operation was first found waiting too long while the probe had no open connection to
   * ask on; cleared by an answer. From then on a new connection the database does not answer has
   * PROBE_TIMEOUT_MS, not CONNECT_TIMEOUT_MS (#suspect).
   */
  #suspectedAt: number | null = null;
  #lastProbeAt = 0;
  #recheck: NodeJS.Timeout | null = null;
  #ticker: NodeJS.Timeout | null = null;
  #closed = false;
  /** the operations in flight */
  readonly #inFlight = new Set<InFlight>();

  /** told each time the database is found unreachable (false) and answering again (true) */
  readonly #listeners: ((reachable: boolean) => void)[] = [];

  constructor(openClient: () => pg.Client, cutConnections: () => void) {
    this.#openClient = openClient;
    this.#cutConnections = cutConnections;
  }

  /** Calls `listener` at every change: unreachable (false), answering again (true). */
  onChange(listener: (reachable: boolean) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Runs `operation` as one operation in flight: refused at once while the database is unreachable,
   * and rejected as soon as it is found so (whatever `operation` does later is left to it).
   * `operation` gets the way to learn that it was given up, to undo what it obtained since.
   */
  track<T>(operation: (givenUp: () => boolean) => Promise<T>): Promise<T> {
    if (this.#unreachable) return Promise.reject(new StoreUnreachableError());
    // The record is made before the promise it settles, and holds the promise's reject only while
    // the operation is in flight. Measured under the list load: while a long-lived set held a
    // closure over the promise (as giving up by a callback did), the answers that settled it
    // (every row of a page) outlived two scavenges and were copied into the old generation, and
    // the process spent three times as long in garbage collection (bench/results/2026-11-29-list-gc.md).
    const entry: InFlight = { since: Date.now(), gaveUp: false, reject: null };
    this.#inFlight.add(entry);
    this.#tick();
    if (!this.#client && !this.#probing && entry.since - this.#lastProbeAt >= RECHECK_MS) void this.#open();
    return new Promise<T>((resolve, reject) => {
      entry.reject = reject;
      operation(() => entry.gaveUp).then(
        (value) => {
          this.#settled(entry);
          resolve(value);
        },
        (err: Error) => {
          this.#settled(entry);
          reject(err);
        },
      );
    });
  }

  #settled(entry: InFlight): void {
    entry.reject = null;
    this.#inFlight.delete(entry);
  }

  close(): void {
    this.#closed = true;
    if (this.#recheck) clearTimeout(this.#recheck);
    if (this.#ticker) clearInterval(this.#ticker);
    this.#ticker = null;
    this.#dropClient();
  }

  /** Looks, every few tens of milliseconds while operations are in flight, for one that waits too long. */
  #tick(): void {
    if (this.#ticker || this.#closed) return;
    this.#ticker = setInterval(() => {
      if (this.#inFlight.size === 0) {
        clearInterval(this.#ticker!);
        this.#ticker = null;
        this.#suspectedAt = null;
        return;
      }
      const now = Date.now();
      for (const { since } of this.#inFlight) {
        if (now - since >= SUSPECT_AFTER_MS) {
          void this.#suspect();
          return;
        }
      }
      // Nothing waits too long (any more): a later suspicion starts its own count.
      this.#suspectedAt = null;
    }, SUSPECT_AFTER_MS / 4);
    this.#ticker.unref();
  }

  /**
   * Opens the probe's connection ahead of the first probe, with the first operation: a probe on an
   * open connection tells a stalled database within PROBE_TIMEOUT_MS.
   */
  async #open(): Promise<void> {
    this.#probing = true;
    try {
      if ((await this.#connectAndAsk()) !== 'answered') this.#dropClient();
    } finally {
      this.#probing = false;
      this.#lastProbeAt = Date.now();
    }
  }

  /**
   * The probe's connection lost while the database answers (its session terminated, a restart, an
   * idle connection dropped on the way) is opened again at once, not by the next probe: that one
   * would have to give a new connection CONNECT_TIMEOUT_MS, and a stall would take that long to
   * tell.
   */
  #watch(client: pg.Client): void {
    const lost = () => {
      if (this.#client !== client) return;
      this.#client = null;
      setTimeout(() => {
        if (!this.#client && !this.#probing && !this.#closed && !this.#unreachable) void this.#open();
      }, RECHECK_MS).unref();
    };
    client.on('error', lost);
    client.on('end', lost);
  }

  async #suspect(): Promise<void> {
    if (this.#unreachable) return;
    // Without an open connection to ask on (it was lost, and a new one is being opened), the probe
    // would give the new connection CONNECT_TIMEOUT_MS, and a database that stopped answering as
    // the connection was lost (a failover dropping every session, then silent) would take that
    // long twice to tell. An operation waiting too long meanwhile gives a connection the database
    // has not answered PROBE_TIMEOUT_MS, as a probe on an open connection has; one it answered is
    // a database that answers, however slowly, and the probe's own allowances apply.
    if (this.#connecting || !this.#client) {
      const now = Date.now();
      this.#suspectedAt ??= now;
      if (now - this.#suspectedAt >= PROBE_TIMEOUT_MS) return this.#becomeUnreachable();
    }
    if (this.#probing || Date.now() - this.#lastProbeAt < RECHECK_MS) return;
    if (!(await this.#probe())) this.#becomeUnreachable();
  }

  #becomeUnreachable(): void {
    if (this.#unreachable || this.#closed) return;
    this.#unreachable = true;
    this.#suspectedAt = null;
    this.#cutConnections();
    for (const listener of this.#listeners) listener(false);
    // Each operation in flight gives up: those still waiting to start do not start (`givenUp`).
    for (const entry of this.#inFlight) {
      entry.gaveUp = true;
      entry.reject?.(new StoreUnreachableError());
      entry.reject = null;
    }
    // One probe at a time: one still under way (its new connection's allowance) is waited for.
    const recheck = async () => {
      this.#recheck = null;
      if (this.#closed) return;
      if (!this.#probing && (await this.#probe())) {
        this.#unreachable = false;
        for (const listener of this.#listeners) listener(true);
      } else if (!this.#closed) this.#recheck = setTimeout(() => void recheck(), RECHECK_MS).unref();
    };
    this.#recheck = setTimeout(() => void recheck(), RECHECK_MS).unref();
  }

  /**
   * `SELECT 1` on the probe's connection, answered within PROBE_TIMEOUT_MS. A connection that fails
   * (its session terminated, an idle timeout) is not an unreachable database: the probe then asks
   * again on a new connection, which must answer within CONNECT_TIMEOUT_MS. One that does not
   * answer in time is dropped.
   */
  async #probe(): Promise<boolean> {
    this.#probing = true;
    try {
      if (this.#client) {
        const answer = await this.#ask(this.#client, PROBE_TIMEOUT_MS);
        if (answer === 'answered') return true;
        this.#dropClient();
        if (answer === 'late') return false;
      }
      const answer = await this.#connectAndAsk();
      if (answer !== 'answered') this.#dropClient();
      return answer === 'answered';
    } finally {
      this.#probing = false;
      this.#lastProbeAt = Date.now();
    }
  }

  /** A new connection for the probe, kept as its connection, asked `SELECT 1` within CONNECT_TIMEOUT_MS. */
  async #connectAndAsk(): Promise<'answered' | 'late' | 'failed'> {
    const client = this.#openClient();
    this.#watch(client);
    this.#client = client;
    this.#connecting = true;
    try {
      return await this.#ask(client, CONNECT_TIMEOUT_MS, () => {
        this.#connecting = false;
      });
    } finally {
      this.#connecting = false;
    }
  }

  /**
   * `SELECT 1` on `client` within `withinMs`; when `connected` is given, the client is connected
   * first, and `connected` told once the database has answered the connection.
   */
  async #ask(client: pg.Client, withinMs: number, connected?: () => void): Promise<'answered' | 'late' | 'failed'> {
    let timer: NodeJS.Timeout | undefined;
    const answered = (async () => {
      if (connected) {
        await client.connect();
        connected();
        // The probe's connection never keeps a process alive (a command of the CLI ends when its work does).
        socketOf(client).unref();
      }
      await client.query('SELECT 1');
      return 'answered' as const;
    })().catch(() => 'failed' as const);
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), withinMs);
    });
    try {
      const answer = await Promise.race([answered, late]);
      // The database answers: operations waiting meanwhile are not suspected of waiting for nothing.
      if (answer === 'answered') this.#suspectedAt = null;
      return answer;
    } finally {
      clearTimeout(timer);
    }
  }

  #dropClient(): void {
    const client = this.#client;
    this.#client = null;
    if (client) destroyConnection(client);
  }
}

/**
 * Closes a client's socket at once: `end()` would wait for the answers of statements already sent,
 * which an unreachable database never gives. pg closes a hung connection the same way.
 */
export function destroyConnection(client: pg.Client | pg.PoolClient): void {
  socketOf(client).destroy();
}

/** The socket of a client's connection (pg keeps it as `connection.stream`). */
const socketOf = (client: pg.Client | pg.PoolClient) =>
  (client as unknown as { connection: { stream: { destroy(): void; unref(): void } } }).connection.stream;
