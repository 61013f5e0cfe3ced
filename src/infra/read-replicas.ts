// Reads on streaming replicas of the primary, with read-your-writes (docs/scaling.md, "Read
// replicas").
//
// A replica applies the primary's write-ahead log in the primary's commit order, so what it shows
// is always the primary as it was at some earlier moment: for each workspace, a prefix of the
// changes in their sync-clock order (db/code/03_sync_clock.sql). The sync procedures stay exact
// there: a list or the feed read on a replica misses only changes later than everything it
// returned, which the next read after its position finds. What a replica cannot promise alone is
// that a client sees its own write at once. So every write's answer carries a consistency position,
// the primary's WAL position after the write committed (`PrimaryPositions`), and a read that
// presents one is served by a replica only once the replica has replayed that position, checked
// before the read's first statement (replay only moves forward, so each later snapshot holds the
// write); otherwise it waits up to `waitMs`, then the primary answers it. In `fresh` consistency
// (the default) every read must see the primary's position at its arrival, whatever token it
// carries: it sees every write committed before it, as on the primary, whoever wrote it. In `token`
// consistency a read must see its token's position, no further than the primary's: a token ahead
// of the primary (another cluster's, or made up) is taken as the primary's position now.
//
// A monitor asks every MONITOR_MS for the primary's flushed position and each replica's replayed
// one. A replica that does not answer, is no longer in recovery (promoted), is a standby of another
// cluster (its system identifier is not the primary's), or has not replayed what the primary had
// flushed `maxLagMs` ago serves no read until it catches up; each change of state is logged. A read that
// fails on a replica for a reason of the replica (unreachable, a statement cancelled by a recovery
// conflict) is run again on the primary: reads change nothing.
import type { ReadReplicasConfig } from '../config.js';
import { isStoreUnavailable, type Database, type Queryable } from './database.js';

/** How often the primary's and the replicas' positions are read. */
export const MONITOR_MS = 100;
/** How often a read waiting for its token asks the replicas again. */
const WAIT_POLL_MS = 2;

export type ReplicaHealth = 'ok' | 'lagging' | 'down';
/** Why a replica serves no read: logged when its state changes (never its URL). */
type DownReason = 'unreachable' | 'promoted' | 'not_streaming' | 'another_cluster' | 'failed_under_a_read';
/** Why a read went where it went (a label of wsapi_reads_total). */
export type ReadRoute =
  | 'replica'
  | 'primary_replicas_behind'
  | 'primary_no_replica_healthy'
  | 'primary_replica_failed'
  | 'primary_position_unknown';

/** A WAL position ("16/B374D848", pg_lsn's text) as a number. */
export function parseLsn(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

/**
 * The consistency position of a WAL position: fixed width, so that of two tokens the later position
 * is the greater string (the clients keep the greatest they were given).
 */
export function tokenOf(position: bigint): string {
  return `1.${position.toString(16).padStart(16, '0')}`;
}

const TOKEN = /^1\.[0-9a-f]{16}$/;

/** The WAL position a token names; null when it is not a token of this service. */
export function positionOfToken(token: string): bigint | null {
  return TOKEN.test(token) ? BigInt(`0x${token.slice(2)}`) : null;
}

interface Replica {
  /** "replica_1", …: the name readiness and metrics use (never the URL, which may hold a password) */
  readonly name: string;
  readonly db: Database;
  health: ReplicaHealth;
  /** why it is down, while it is */
  reason: DownReason | null;
  /** its system identifier was found to be the primary's (checked again after each failure) */
  sameCluster: boolean;
  /** the last replayed position read, and when */
  replayed: bigint;
  /** the read of its position in flight, shared by the reads waiting on it */
  asking: Promise<bigint | null> | null;
}

/** A change of a replica's state, as logged. */
export type ReplicaLog = (change: { replica: string; state: ReplicaHealth; reason?: DownReason }) => void;

/**
 * The primary's WAL position now: a write's consistency position, and a fresh read's. A position read
 * sent after a commit ended is at or past it; callers that arrive while one is in flight share the
 * next one, so there is at most one such read in flight and one waiting.
 */
export class PrimaryPositions {
  readonly #primary: Database;
  #inFlight: Promise<bigint> | null = null;
  #queued: Promise<bigint> | null = null;

  constructor(primary: Database) {
    this.#primary = primary;
  }

  /** A position at or past every commit that ended before this call. */
  after(): Promise<bigint> {
    if (!this.#inFlight) return this.#send();
    this.#queued ??= this.#inFlight
      .catch(() => undefined)
      .then(() => {
        this.#queued = null;
        return this.#send();
      });
    return this.#queued;
  }

  #send(): Promise<bigint> {
    // The flushed position: a commit waits for its record to be flushed, and a replica can apply
    // only what was flushed (the insert position runs ahead of it with WAL that no commit has
    // flushed yet, such as a read's page pruning, for up to wal_writer_delay). Where commits do not
    // wait (synchronous_commit off), the insert position, which a commit's record is behind.
    const read: Promise<bigint> = this.#primary
      .query<{ lsn: string }>(
        `SELECT (CASE WHEN current_setting('synchronous_commit') = 'off' THEN pg_current_wal_insert_lsn()
                      ELSE pg_current_wal_flush_lsn() END)::text AS lsn`,
        [],
        'primary_position',
      )
      .then(({ rows }) => parseLsn(rows[0]!.lsn))
      .finally(() => {
        if (this.#inFlight === read) this.#inFlight = null;
      });
    this.#inFlight = read;
    return read;
  }
}

export class ReadReplicas {
  readonly #primary: Database;
  readonly #replicas: Replica[];
  readonly #maxLagMs: number;
  readonly #waitMs: number;
  readonly #fresh: boolean;
  readonly #onRead: (route: ReadRoute) => void;
  /** the primary's flushed positions over the last maxLagMs and more, oldest first */
  #samples: { at: number; lsn: bigint }[] = [];
  #timer: NodeJS.Timeout | null = null;
  #turn = 0;
  readonly #positions: PrimaryPositions;
  /** the primary's system identifier, once read */
  #cluster: string | null = null;
  #log: ReplicaLog = () => undefined;

  constructor(
    primary: Database,
    replicas: readonly Database[],
    config: Pick<ReadReplicasConfig, 'maxLagMs' | 'waitMs' | 'consistency'>,
    onRead: (route: ReadRoute) => void = () => undefined,
  ) {
    this.#primary = primary;
    this.#replicas = replicas.map((db, i) => ({
      name: `replica_${i + 1}`,
      db,
      health: 'down',
      reason: 'unreachable',
      sameCluster: false,
      replayed: 0n,
      asking: null,
    }));
    this.#maxLagMs = config.maxLagMs;
    this.#waitMs = config.waitMs;
    this.#fresh = config.consistency === 'fresh';
    this.#onRead = onRead;
    this.#positions = new PrimaryPositions(primary);
  }

  /** Where changes of a replica's state are told (the process's log), starting with each one's state now. */
  logTo(log: ReplicaLog): void {
    this.#log = log;
    for (const r of this.#replicas)
      log({ replica: r.name, state: r.health, ...(r.reason ? { reason: r.reason } : {}) });
  }

  /** The primary's position, at or past every commit that ended before this call. */
  positionNow(): Promise<bigint> {
    return this.#positions.after();
  }

  /** Whether any replica is configured: write answers then carry consistency positions. */
  get enabled(): boolean {
    return this.#replicas.length > 0;
  }

  /** Reads the positions once, then every MONITOR_MS until close. */
  async start(): Promise<void> {
    if (!this.enabled) return;
    await this.#check();
    const loop = () => {
      this.#timer = setTimeout(() => void this.#check().finally(loop), MONITOR_MS);
      this.#timer.unref();
    };
    loop();
  }

  /** Each replica's state, by name, for readiness. */
  health(): Record<string, ReplicaHealth> {
    return Object.fromEntries(this.#replicas.map((r) => [r.name, r.health]));
  }

  /**
   * Where a request's reads run: a replica that has replayed `position` (without one, in `fresh`
   * consistency, the primary's position now; in `token`, any healthy replica), else the primary.
   * The answer runs every statement on that replica and moves to the primary, for this statement
   * and the rest, if the replica fails under it.
   */
  route(position: bigint | null): Queryable | Promise<Queryable> {
    return this.enabled ? this.#replicaRoute(position) : this.#primary;
  }

  async #replicaRoute(token: bigint | null): Promise<Queryable> {
    let position = this.#fresh ? null : token;
    // Fresh: the primary's position now. Token: the token's, unless it is ahead of every position
    // the primary was seen at; then no further than the primary's now, which a real token of this
    // primary never passes.
    const ask = this.#fresh || (token !== null && token > (this.#samples.at(-1)?.lsn ?? 0n));
    if (ask && this.#healthy().length > 0) {
      try {
        const now = await this.#positions.after();
        position = position === null || position > now ? now : position;
      } catch {
        // The primary cannot tell its position: the read goes to it, and fails there as it would.
        this.#onRead('primary_position_unknown');
        return this.#primary;
      }
    }
    const chosen = await this.#choose(position);
    if (typeof chosen === 'string') {
      this.#onRead(chosen);
      return this.#primary;
    }
    this.#onRead('replica');
    return this.#routed(chosen);
  }

  async close(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await Promise.all(this.#replicas.map((r) => r.db.close()));
  }

  #healthy(): Replica[] {
    return this.#replicas.filter((r) => r.health === 'ok');
  }

  async #choose(position: bigint | null): Promise<Replica | Exclude<ReadRoute, 'replica'>> {
    const healthy = this.#healthy();
    if (healthy.length === 0) return 'primary_no_replica_healthy';
    const start = this.#turn++;
    const pick = (among: Replica[]) => among[start % among.length]!;
    if (position === null) return pick(healthy);
    const deadline = Date.now() + this.#waitMs;
    for (;;) {
      const caughtUp = this.#healthy().filter((r) => r.replayed >= position);
      if (caughtUp.length > 0) return pick(caughtUp);
      if (Date.now() >= deadline) return 'primary_replicas_behind';
      await Promise.all(this.#healthy().map((r) => this.#ask(r)));
      if (this.#healthy().some((r) => r.replayed >= position)) continue;
      await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
    }
  }

  /** Reads the replica's replayed position now (one read shared by whoever asks meanwhile). */
  #ask(replica: Replica): Promise<bigint | null> {
    replica.asking ??= replica.db
      .query<{ standby: boolean; lsn: string | null }>(
        'SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS lsn',
        [],
        'replica_position',
      )
      .then(({ rows }) => {
        const { standby, lsn } = rows[0]!;
        // Promoted (no longer a replica) or not streaming yet: it serves no read.
        if (!standby || lsn === null) {
          this.#set(replica, 'down', standby ? 'not_streaming' : 'promoted');
          return null;
        }
        const replayed = parseLsn(lsn);
        if (replayed > replica.replayed) replica.replayed = replayed;
        return replayed;
      })
      .catch(() => {
        this.#set(replica, 'down', 'unreachable');
        return null;
      })
      .finally(() => {
        replica.asking = null;
      });
    return replica.asking;
  }

  /** One round of the monitor: the primary's flushed position, then each replica's replayed one. */
  async #check(): Promise<void> {
    const now = Date.now();
    try {
      const { rows } = await this.#primary.query<{ lsn: string }>(
        'SELECT pg_current_wal_flush_lsn()::text AS lsn',
        [],
        'primary_flushed_position',
      );
      this.#samples.push({ at: now, lsn: parseLsn(rows[0]!.lsn) });
    } catch {
      // The primary is unreachable: the replicas are judged on the samples already taken.
    }
    // Kept long enough to tell any lag up to the bound.
    while (this.#samples.length > 1 && this.#samples[0]!.at < now - this.#maxLagMs - 1_000) this.#samples.shift();
    await Promise.all(
      this.#replicas.map(async (replica) => {
        const replayed = await this.#ask(replica);
        if (replayed === null) return;
        if (!replica.sameCluster && !(await this.#sameCluster(replica))) return;
        // The oldest sample the replica has not reached: it lags at least since then.
        const behind = this.#samples.find((s) => s.lsn > replayed);
        const lagMs = behind ? Date.now() - behind.at : 0;
        this.#set(replica, lagMs > this.#maxLagMs ? 'lagging' : 'ok', null);
      }),
    );
  }

  /**
   * Whether the replica is a standby of the primary's own cluster: a standby of another cluster
   * answers every question the monitor asks, with positions that mean nothing here.
   */
  async #sameCluster(replica: Replica): Promise<boolean> {
    const identifier = (db: Database) =>
      db
        .query<{ id: string }>(
          'SELECT system_identifier::text AS id FROM pg_control_system()',
          [],
          'cluster_identifier',
        )
        .then(({ rows }) => rows[0]!.id);
    try {
      this.#cluster ??= await identifier(this.#primary);
      replica.sameCluster = (await identifier(replica.db)) === this.#cluster;
    } catch {
      this.#set(replica, 'down', 'unreachable');
      return false;
    }
    if (!replica.sameCluster) this.#set(replica, 'down', 'another_cluster');
    return replica.sameCluster;
  }

  /** Sets a replica's state, and logs each change. */
  #set(replica: Replica, health: ReplicaHealth, reason: DownReason | null): void {
    if (health === 'down') replica.sameCluster = false;
    if (replica.health === health && replica.reason === reason) return;
    replica.health = health;
    replica.reason = reason;
    this.#log({ replica: replica.name, state: health, ...(reason ? { reason } : {}) });
  }

  /** The replica as a Queryable that moves to the primary when the replica fails under a read. */
  #routed(replica: Replica): Queryable {
    let target: Queryable = replica.db;
    const onPrimaryFrom = (err: unknown): boolean => {
      if (target === this.#primary || !failedWithReplica(err)) return false;
      // It serves no read until the monitor has heard from it again.
      this.#set(replica, 'down', 'failed_under_a_read');
      target = this.#primary;
      this.#onRead('primary_replica_failed');
      return true;
    };
    return {
      query: async (sql, params, name) => {
        try {
          return await target.query(sql, params, name);
        } catch (err) {
          if (!onPrimaryFrom(err)) throw err;
          return target.query(sql, params, name);
        }
      },
      exec: async (script) => {
        try {
          return await target.exec(script);
        } catch (err) {
          if (!onPrimaryFrom(err)) throw err;
          return target.exec(script);
        }
      },
    };
  }
}

/**
 * A failure of the replica rather than of the read: unreachable, or the statement cancelled because
 * replay needed what it read (SQLSTATE 40001, "conflict with recovery"; 57P04, its database dropped).
 */
function failedWithReplica(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return isStoreUnavailable(err) || code === '40001' || code === '57P04';
}
