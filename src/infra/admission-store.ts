// What admits a request, counted across every process of a deployment: its rate-limit count and,
// for a request with an API key, its place among the key's requests in flight. In Redis when it is
// configured, else in PostgreSQL, else (the embedded store: one process) in process memory.
//
// Rate-limit counts are GCRA (the generic cell rate algorithm, a token bucket kept as one number):
// a bucket of `limit` requests per `windowMs` refills continuously, one request every
// windowMs / limit. Its state is the theoretical arrival time (TAT): the instant at which the
// bucket would be full again. A request is allowed when, after adding its own interval, the TAT is
// at most one window ahead of now. A place is taken only by a request its count allowed; a place
// whose process died is given back when its lease runs out.
//
// The shared stores send the admissions and the places given back of one turn of the event loop in
// one round trip (one Redis script, one PostgreSQL statement), applied atomically in arrival order
// per bucket: a busy process pays one round trip per turn rather than two or three per request.
// When the store cannot answer, requests are counted in this process's memory instead (the limits
// then hold per process): availability of the API is worth more than the precision of the count
// during an outage. Places given back meanwhile are given back there once it answers.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Queryable } from './database.js';
import type { RedisConnection } from './redis.js';

export interface BucketState {
  allowed: boolean;
  /** requests that would pass right now after this one */
  remaining: number;
  /** epoch ms when the bucket is full again (all `limit` requests available) */
  fullAtMs: number;
  /** when refused: ms until this request would pass */
  retryAfterMs: number;
}

/** A request's count against a bucket of `limit` requests per `windowMs`, as `cost` requests. */
export interface Take {
  bucket: string;
  limit: number;
  windowMs: number;
  cost: number;
}

/** One of `limit` places of `bucket` for `holder` (unique per request), held at most `leaseMs`. */
export interface Place {
  bucket: string;
  holder: string;
  limit: number;
  leaseMs: number;
}

export interface Admission {
  count: BucketState;
  /** whether the place was taken; null when none was asked for or the count refused the request */
  placed: boolean | null;
}

export interface AdmissionStore {
  /** Counts the request and, when the count allows it and `place` is given, takes its place. */
  admit(take: Take, place?: Place): Promise<Admission>;
  /** Gives a place back; resolves once the store has it (or it is kept to be given back later). */
  release(bucket: string, holder: string): Promise<void>;
  /** Forgets what is over (full buckets, expired places), where the store keeps it outside this process. */
  purge?(): Promise<void>;
  close(): Promise<void>;
}

/** The GCRA step of a request counting as `cost` requests, given the stored TAT (or null for a new bucket) and the clock. */
export function gcra(
  storedTat: number | null,
  now: number,
  limit: number,
  windowMs: number,
  cost = 1,
): { state: BucketState; tat: number | null } {
  const interval = windowMs / limit;
  const tat = Math.max(storedTat ?? now, now);
  const next = tat + interval * cost;
  // Instants are epoch milliseconds, which a double holds to about 0.0002 ms, and a TAT is a sum of
  // intervals: after a burst of a few hundred it can be some hundredths of a millisecond past the
  // exact instant. The check forgives 1 ms, or half the step for a shorter one (the same as the
  // stores' scripts), and what remains is counted with the same allowance, so a whole bucket is
  // whole.
  const slack = Math.min(1, (interval * cost) / 2);
  if (next - now <= windowMs + slack) {
    return {
      state: {
        allowed: true,
        remaining: Math.max(0, Math.floor((windowMs + slack - (next - now)) / interval)),
        fullAtMs: Math.ceil(next),
        retryAfterMs: 0,
      },
      tat: next,
    };
  }
  return {
    state: { allowed: false, remaining: 0, fullAtMs: Math.ceil(tat), retryAfterMs: next - windowMs - now },
    tat: null,
  };
}

/** The store's answer for one admission, given what the store reports: its clock, the TAT before, its verdicts. */
function answerOf(
  take: Take,
  now: number,
  priorTat: number | null,
  allowed: boolean,
  placed: boolean | null,
): Admission {
  // The store applied the same step on the same doubles; replaying it here gives the numbers of
  // the answer. The store's verdict is the one that counted.
  const { state } = gcra(priorTat, now, take.limit, take.windowMs, take.cost);
  const count = allowed || !state.allowed ? state : { ...state, allowed, remaining: 0, retryAfterMs: 1 };
  return { count, placed: allowed ? placed : null };
}

// ------------------------------------------------------------------------------------- in memory

export class MemoryAdmissionStore implements AdmissionStore {
  readonly #tats = new Map<string, number>();
  /** bucket → holder → lease end (epoch ms) */
  readonly #places = new Map<string, Map<string, number>>();
  readonly #sweeper: NodeJS.Timeout;

  constructor() {
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [bucket, tat] of this.#tats) if (tat <= now) this.#tats.delete(bucket);
    }, 30_000);
    this.#sweeper.unref();
  }

  async admit(take: Take, place?: Place): Promise<Admission> {
    return this.admitNow(take, place);
  }

  admitNow(take: Take, place?: Place, now = Date.now()): Admission {
    const { state, tat } = gcra(this.#tats.get(take.bucket) ?? null, now, take.limit, take.windowMs, take.cost);
    if (tat === null) return { count: state, placed: null };
    this.#tats.set(take.bucket, tat);
    return { count: state, placed: place ? this.#acquire(place, now) : null };
  }

  #acquire({ bucket, holder, limit, leaseMs }: Place, now: number): boolean {
    let places = this.#places.get(bucket);
    if (!places) this.#places.set(bucket, (places = new Map<string, number>()));
    for (const [h, until] of places) if (until < now) places.delete(h);
    if (places.size >= limit) return false;
    places.set(holder, now + leaseMs);
    return true;
  }

  async release(bucket: string, holder: string): Promise<void> {
    this.releaseNow(bucket, holder);
  }

  releaseNow(bucket: string, holder: string): void {
    const places = this.#places.get(bucket);
    if (!places) return;
    places.delete(holder);
    if (places.size === 0) this.#places.delete(bucket);
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
  }
}

// ------------------------------------------------------------------------- shared, one call a turn

interface Pending {
  take: Take;
  place: Place | undefined;
  resolve: (admission: Admission) => void;
}

interface Released {
  bucket: string;
  holder: string;
  resolve: () => void;
}

/** What a shared store reports for one admission. */
interface Verdict {
  now: number;
  priorTat: number | null;
  allowed: boolean;
  placed: boolean | null;
}

/**
 * Places given back while the shared store could not be reached, given back there with the next
 * call, so that a key's places are not held until their leases run out after an outage. Bounded:
 * past 10,000, the oldest are left to their leases.
 */
const MAX_UNRELEASED = 10_000;

/** After a call failed, the next one is made within this long, requests or not. */
const RETRY_MS = 1_000;

/** Admissions per call: a turn of the event loop with more sends several calls. */
const MAX_PER_CALL = 256;

/**
 * The batching shared by the Redis and PostgreSQL stores: the admissions and releases of one turn
 * go in one call of `send`; when it fails, each admission is counted in memory. A place is given
 * back where it was taken: in the store, or in memory.
 */
abstract class TurnBatchedStore implements AdmissionStore {
  readonly #fallback = new MemoryAdmissionStore();
  readonly #onDegraded: (err: Error) => void;
  readonly #oneCallAtATime: boolean;
  #pending: Pending[] = [];
  #released: Released[] = [];
  #scheduled = false;
  #calling = false;
  #retry: NodeJS.Timeout | null = null;
  /** holder → bucket: the places this process holds in the store */
  readonly #inStore = new Map<string, string>();

  /**
   * `onDegraded`: told of each call the store failed, whose requests were counted in memory.
   * `oneCallAtATime`: a call waits for the one before it to answer (what gathers meanwhile goes
   * in the next): for a store whose calls could otherwise run in another order than they were sent.
   */
  constructor(onDegraded: (err: Error) => void, oneCallAtATime: boolean) {
    this.#onDegraded = onDegraded;
    this.#oneCallAtATime = oneCallAtATime;
  }

  /**
   * One call to the store: the places given back first, then the admissions, each bucket's in
   * order. When it fails, the store keeps what it must still give back for a later call.
   */
  protected abstract send(
    released: readonly [bucket: string, holder: string][],
    admissions: readonly Pending[],
  ): Promise<Verdict[]>;

  admit(take: Take, place?: Place): Promise<Admission> {
    return new Promise((resolve) => {
      this.#pending.push({ take, place, resolve });
      this.#schedule();
    });
  }

  async release(bucket: string, holder: string): Promise<void> {
    if (!this.#inStore.delete(holder)) {
      this.#fallback.releaseNow(bucket, holder);
      return;
    }
    return new Promise((resolve) => {
      this.#released.push({ bucket, holder, resolve });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || (this.#oneCallAtATime && this.#calling)) return;
    this.#scheduled = true;
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const released = this.#released;
    this.#released = [];
    const givenBack: [string, string][] = released.map((r) => [r.bucket, r.holder]);
    if (this.#oneCallAtATime) {
      const admissions = this.#pending.splice(0, MAX_PER_CALL);
      this.#calling = true;
      void this.#call(givenBack, released, admissions).finally(() => {
        this.#calling = false;
        if (this.#pending.length > 0 || this.#released.length > 0) this.#schedule();
      });
      return;
    }
    const pending = this.#pending;
    this.#pending = [];
    let from = 0;
    do {
      // The releases go with the first call: they free places the admissions after them may take.
      void this.#call(
        from === 0 ? givenBack : [],
        from === 0 ? released : [],
        pending.slice(from, from + MAX_PER_CALL),
      );
      from += MAX_PER_CALL;
    } while (from < pending.length);
  };

  async #call(givenBack: [string, string][], released: Released[], admissions: Pending[]): Promise<void> {
    let verdicts: Verdict[] | null = null;
    try {
      verdicts = await this.send(givenBack, admissions);
    } catch (err) {
      // Counted in memory below; what the store must still be told goes with a later call, made
      // in a second even if no request comes meanwhile.
      this.#onDegraded(err as Error);
      this.#retry ??= setTimeout(() => {
        this.#retry = null;
        this.#schedule();
      }, RETRY_MS).unref();
    }
    if (verdicts === null) {
      for (const a of admissions) a.resolve(this.#fallback.admitNow(a.take, a.place));
    } else {
      admissions.forEach((a, i) => {
        const v = verdicts[i]!;
        if (v.placed && a.place) this.#inStore.set(a.place.holder, a.place.bucket);
        a.resolve(answerOf(a.take, v.now, v.priorTat, v.allowed, v.placed));
      });
    }
    for (const r of released) r.resolve();
  }

  async close(): Promise<void> {
    if (this.#retry) clearTimeout(this.#retry);
    await this.#fallback.close();
  }
}

// ------------------------------------------------------------------------------------------ Redis

// The places given back (sorted sets scored by lease end), then each admission in order: the GCRA
// step on Redis's own clock (all processes agree; a key expires when its bucket is full again), and
// when it allows and a place is asked for, the place: expired places dropped, then one taken if one
// is free. KEYS: the sets of the places given back, then per admission its bucket and its set (its
// bucket again when it asks for no place). ARGV: how many places are given back, how many
// admissions, the holders given back, then per admission its interval, window, whether it asks for
// a place, holder, limit and lease. The answer is Redis's clock, then per admission whether its
// count allowed it, the bucket's TAT before the step and whether the place was taken (1, 0, or -1
// for none asked); the numbers are strings of 17 significant digits, which give back the very same
// double (Lua's tostring keeps 14, and a TAT rounded up by it would refuse here what the caller's
// replay of the step allows).
const ADMIT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local nowWholeMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local released = tonumber(ARGV[1])
local admissions = tonumber(ARGV[2])
for i = 1, released do
  redis.call('ZREM', KEYS[i], ARGV[2 + i])
end
local out = {string.format('%.17g', now)}
for j = 1, admissions do
  local bucket = KEYS[released + 2 * j - 1]
  local a = 2 + released + 6 * (j - 1)
  local interval = tonumber(ARGV[a + 1])
  local window = tonumber(ARGV[a + 2])
  local tat = tonumber(redis.call('GET', bucket)) or now
  if tat < now then tat = now end
  local nextTat = tat + interval
  local allowed = 0
  local placed = -1
  if nextTat - now <= window + math.min(1, interval / 2) then
    redis.call('SET', bucket, string.format('%.17g', nextTat), 'PX', math.ceil(nextTat - now) + 1)
    allowed = 1
    if ARGV[a + 3] == '1' then
      local places = KEYS[released + 2 * j]
      redis.call('ZREMRANGEBYSCORE', places, '-inf', nowWholeMs)
      if redis.call('ZCARD', places) >= tonumber(ARGV[a + 5]) then
        placed = 0
      else
        redis.call('ZADD', places, nowWholeMs + tonumber(ARGV[a + 6]), ARGV[a + 4])
        redis.call('PEXPIRE', places, ARGV[a + 6])
        placed = 1
      end
    end
  end
  out[3 * j - 1] = allowed
  out[3 * j] = string.format('%.17g', tat)
  out[3 * j + 1] = placed
end
return out
`;

type RedisWithAdmit = Redis & {
  /** numberOfKeys, the keys, then the arguments (ADMIT_SCRIPT) */
  admitRequests(...args: (string | number)[]): Promise<(string | number)[]>;
};

const RATE_KEY_PREFIX = 'wsapi:gcra:';
const PLACES_KEY_PREFIX = 'wsapi:inflight:';

export class RedisAdmissionStore extends TurnBatchedStore {
  readonly #redis: RedisConnection;
  /** holder → bucket: places given back while Redis failed, sent with the next call */
  readonly #unreleased = new Map<string, string>();

  constructor(redis: RedisConnection, onDegraded: (err: Error) => void = () => undefined) {
    // One connection, whose commands Redis runs in the order they were sent: calls need not wait.
    super(onDegraded, false);
    // No numberOfKeys: each call says how many keys it carries.
    redis.client.defineCommand('admitRequests', { lua: ADMIT_SCRIPT });
    this.#redis = redis;
  }

  protected async send(given: readonly [string, string][], admissions: readonly Pending[]): Promise<Verdict[]> {
    const released: [string, string][] = [...given];
    for (const [holder, bucket] of this.#unreleased) released.push([bucket, holder]);
    this.#unreleased.clear();
    if (released.length === 0 && admissions.length === 0) return [];
    const keys: string[] = released.map(([bucket]) => PLACES_KEY_PREFIX + bucket);
    const args: (string | number)[] = [released.length, admissions.length, ...released.map(([, holder]) => holder)];
    for (const { take, place } of admissions) {
      const bucket = RATE_KEY_PREFIX + take.bucket;
      keys.push(bucket, place ? PLACES_KEY_PREFIX + place.bucket : bucket);
      args.push((take.windowMs / take.limit) * take.cost, take.windowMs);
      if (place) args.push(1, place.holder, place.limit, place.leaseMs);
      else args.push(0, '', 0, 0);
    }
    let failure: Error = new Error('Redis failed lately: counted in memory until it answers again');
    const reply = await this.#redis.run(
      (client) =>
        (client as RedisWithAdmit).admitRequests(keys.length, ...keys, ...args).catch((err: Error) => {
          failure = err;
          throw err;
        }),
      () => null,
    );
    if (reply === null) {
      // Given back with the next call (ZREM of a place already gone changes nothing).
      for (const [bucket, holder] of released) this.#remember(bucket, holder);
      throw failure;
    }
    const now = Number(reply[0]);
    return admissions.map((_, j) => ({
      now,
      allowed: reply[3 * j + 1] === 1,
      priorTat: Number(reply[3 * j + 2]),
      placed: reply[3 * j + 3] === -1 ? null : reply[3 * j + 3] === 1,
    }));
  }

  #remember(bucket: string, holder: string): void {
    if (this.#unreleased.size >= MAX_UNRELEASED) this.#unreleased.delete(this.#unreleased.keys().next().value!);
    this.#unreleased.set(holder, bucket);
  }
}

// ------------------------------------------------------------------------------------- PostgreSQL

/**
 * Counts and places in PostgreSQL, for several processes (or machines) without Redis: one call of
 * admit_requests (db/code/09_admission.sql) at a time, carrying what gathered meanwhile, on the
 * database's clock, on UNLOGGED tables (a count need not survive a crash). Places are counted per
 * key and process: a row holding how many the process has, which each call writes as this process
 * knows it before taking more. So a call whose answer was lost (the database counted its places,
 * the process counted them in memory) is set right by the process's next call on that key, and a
 * place given back twice is not two; and one call at a time, each place given back is counted
 * before the next request of the key is.
 */
export class PostgresAdmissionStore extends TurnBatchedStore {
  readonly #db: Queryable;
  /** this process among those counting places in the database */
  readonly #process = randomUUID();
  /** bucket → the places this process holds in the database */
  readonly #held = new Map<string, number>();
  /** buckets whose row the next call must write: places given back, or a call that failed */
  readonly #stale = new Set<string>();
  /** the lease of the places last taken: a row written without a place taken gets it too */
  #leaseMs = 45_000;

  constructor(db: Queryable, onDegraded: (err: Error) => void = () => undefined) {
    super(onDegraded, true);
    this.#db = db;
  }

  protected async send(released: readonly [string, string][], admissions: readonly Pending[]): Promise<Verdict[]> {
    for (const [bucket] of released) {
      this.#held.set(bucket, Math.max(0, (this.#held.get(bucket) ?? 0) - 1));
      this.#stale.add(bucket);
    }
    const written = new Set(this.#stale);
    for (const { place } of admissions) {
      if (!place) continue;
      written.add(place.bucket);
      this.#leaseMs = place.leaseMs;
    }
    const buckets = [...written];
    if (buckets.length === 0 && admissions.length === 0) return [];
    let rows: { now_ms: number; prior_tat: number | null; allowed: boolean; placed: boolean | null }[];
    try {
      ({ rows } = await this.#db.query(
        'SELECT now_ms, prior_tat, allowed, placed FROM admit_requests($1, $2, $3, $4, $5, $6, $7, $8, $9) ORDER BY item',
        [
          this.#process,
          this.#leaseMs,
          buckets,
          buckets.map((b) => this.#held.get(b) ?? 0),
          admissions.map((a) => a.take.bucket),
          admissions.map((a) => (a.take.windowMs / a.take.limit) * a.take.cost),
          admissions.map((a) => a.take.windowMs),
          admissions.map((a) => a.place?.bucket ?? null),
          admissions.map((a) => a.place?.limit ?? null),
        ],
        'admit_requests',
      ));
      if (rows.length !== admissions.length) throw new Error('admit_requests answered another number of rows');
    } catch (err) {
      // Whether the database applied the call is unknown: its rows are written again next time.
      for (const b of buckets) this.#stale.add(b);
      throw err;
    }
    for (const b of buckets) this.#stale.delete(b);
    rows.forEach((r, i) => {
      const bucket = admissions[i]!.place?.bucket;
      if (r.placed && bucket !== undefined) this.#held.set(bucket, (this.#held.get(bucket) ?? 0) + 1);
    });
    for (const [bucket, held] of this.#held) if (held === 0) this.#held.delete(bucket);
    return rows.map((r) => ({ now: r.now_ms, priorTat: r.prior_tat, allowed: r.allowed, placed: r.placed }));
  }

  /** Drops buckets that are full again and rows of places whose lease ran out; run in the background. */
  async purge(): Promise<void> {
    await this.#db.query(
      'DELETE FROM rate_limit_buckets WHERE tat_ms < extract(epoch FROM clock_timestamp())::float8 * 1000',
    );
    await this.#db.query(
      'DELETE FROM concurrency_places WHERE expires_at_ms < extract(epoch FROM clock_timestamp())::float8 * 1000',
    );
  }
}
