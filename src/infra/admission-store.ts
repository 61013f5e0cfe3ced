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
  if (next - now <= windowMs + 1e-6) {
    return {
      state: {
        allowed: true,
        remaining: Math.max(0, Math.floor((windowMs - (next - now)) / interval + 1e-9)),
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

/** Admissions per call: a turn of the event loop with more sends several calls. */
const MAX_PER_CALL = 256;

/**
 * The batching shared by the Redis and PostgreSQL stores: the admissions and releases of one turn
 * go in one call of `send`; when it fails, each admission is counted in memory and each release
 * kept for the next call. A place is given back where it was taken: in the store, or in memory.
 */
abstract class TurnBatchedStore implements AdmissionStore {
  readonly #fallback = new MemoryAdmissionStore();
  readonly #onDegraded: (err: Error) => void;
  #pending: Pending[] = [];
  #released: Released[] = [];
  #scheduled = false;
  /** holder → bucket: the places this process holds in the store */
  readonly #inStore = new Map<string, string>();
  /** holder → bucket: places given back while the store failed */
  readonly #unreleased = new Map<string, string>();

  /** `onDegraded`: told of each call the store failed, whose requests were counted in memory. */
  constructor(onDegraded: (err: Error) => void) {
    this.#onDegraded = onDegraded;
  }

  /** One call to the store: the places given back first, then the admissions, each bucket's in order. */
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
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const pending = this.#pending;
    const released = this.#released;
    this.#pending = [];
    this.#released = [];
    const givenBack: [string, string][] = released.map((r) => [r.bucket, r.holder]);
    for (const [holder, bucket] of this.#unreleased) givenBack.push([bucket, holder]);
    this.#unreleased.clear();
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
      // Counted in memory below; the places given back are kept for the next call.
      this.#onDegraded(err as Error);
    }
    if (verdicts === null) {
      for (const [bucket, holder] of givenBack) this.#remember(bucket, holder);
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

  #remember(bucket: string, holder: string): void {
    if (this.#unreleased.size >= MAX_UNRELEASED) this.#unreleased.delete(this.#unreleased.keys().next().value!);
    this.#unreleased.set(holder, bucket);
  }

  async close(): Promise<void> {
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
  if nextTat - now <= window + 0.000001 then
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

  constructor(redis: RedisConnection, onDegraded: (err: Error) => void = () => undefined) {
    super(onDegraded);
    // No numberOfKeys: each call says how many keys it carries.
    redis.client.defineCommand('admitRequests', { lua: ADMIT_SCRIPT });
    this.#redis = redis;
  }

  protected async send(released: readonly [string, string][], admissions: readonly Pending[]): Promise<Verdict[]> {
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
    if (reply === null) throw failure;
    const now = Number(reply[0]);
    return admissions.map((_, j) => ({
      now,
      allowed: reply[3 * j + 1] === 1,
      priorTat: Number(reply[3 * j + 2]),
      placed: reply[3 * j + 3] === -1 ? null : reply[3 * j + 3] === 1,
    }));
  }
}

// ------------------------------------------------------------------------------------- PostgreSQL

/**
 * Counts and places in PostgreSQL, for several processes (or machines) without Redis: one call of
 * admit_requests (db/code/09_admission.sql) a turn, on the database's clock, on UNLOGGED tables (a
 * count need not survive a crash). Places are counted per process (a row per key and process,
 * updated in place), so a request writes no row of its own.
 */
export class PostgresAdmissionStore extends TurnBatchedStore {
  readonly #db: Queryable;
  /** this process among those counting places in the database */
  readonly #process = randomUUID();

  constructor(db: Queryable, onDegraded: (err: Error) => void = () => undefined) {
    super(onDegraded);
    this.#db = db;
  }

  protected async send(released: readonly [string, string][], admissions: readonly Pending[]): Promise<Verdict[]> {
    const { rows } = await this.#db.query<{
      now_ms: number;
      prior_tat: number | null;
      allowed: boolean;
      placed: boolean | null;
    }>(
      'SELECT now_ms, prior_tat, allowed, placed FROM admit_requests($1, $2, $3, $4, $5, $6, $7, $8) ORDER BY item',
      [
        this.#process,
        released.map(([bucket]) => bucket),
        admissions.map((a) => a.take.bucket),
        admissions.map((a) => (a.take.windowMs / a.take.limit) * a.take.cost),
        admissions.map((a) => a.take.windowMs),
        admissions.map((a) => a.place?.bucket ?? null),
        admissions.map((a) => a.place?.limit ?? null),
        admissions.map((a) => a.place?.leaseMs ?? null),
      ],
      'admit_requests',
    );
    if (rows.length !== admissions.length) throw new Error('admit_requests answered another number of rows');
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
