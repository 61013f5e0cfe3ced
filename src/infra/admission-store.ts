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
// The shared stores make one call at a time (one Redis script, one PostgreSQL statement), carrying
// the admissions and the places given back that gathered meanwhile, applied atomically in arrival
// order per bucket; a bucket's admissions that ask the same go as one group, counted together. A
// busy process pays one round trip, and one step of the store per bucket, for many requests.
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

/**
 * One of `limit` places of `bucket` for `holder` (unique per request). In a shared store it counts
 * until `leaseMs` after its process last wrote it (a live process writes it again in time); in
 * memory, until given back.
 */
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

export type FallbackListener = (change: {
  inMemory: boolean;
  store: 'redis' | 'postgresql';
  failure: Error | null;
}) => void;

export interface AdmissionStore {
  /** Counts the request and, when the count allows it and `place` is given, takes its place. */
  admit(take: Take, place?: Place): Promise<Admission>;
  /** Gives a place back; resolves once the store has it (or it is kept to be given back later). */
  release(bucket: string, holder: string): Promise<void>;
  /** Forgets what is over (full buckets, expired places), where the store keeps it outside this process. */
  purge?(): Promise<void>;
  /**
   * Tells `listener` each time the counts go to this process's memory because the shared store
   * failed (`inMemory` true, with the failure), and each time the store answers again (false).
   */
  onFallback?(listener: FallbackListener): void;
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

/**
 * The answer to a request its count allowed but that found no place free: it is refused and not
 * counted, so its numbers are the bucket's before it (`state` is what counting it would have left).
 */
function uncounted(state: BucketState, take: Take, priorTat: number | null, now: number): BucketState {
  return { ...state, remaining: state.remaining + take.cost, fullAtMs: Math.ceil(Math.max(priorTat ?? now, now)) };
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
  /** bucket → the holders of its places */
  readonly #places = new Map<string, Set<string>>();
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
    const prior = this.#tats.get(take.bucket) ?? null;
    const { state, tat } = gcra(prior, now, take.limit, take.windowMs, take.cost);
    if (tat === null) return { count: state, placed: null };
    if (place && !this.#acquire(place)) return { count: uncounted(state, take, prior, now), placed: false };
    this.#tats.set(take.bucket, tat);
    return { count: state, placed: place ? true : null };
  }

  /**
   * In memory a place is this process's own, held until given back whatever its lease: a lease is
   * for places whose process died, and this one is alive while it counts them.
   */
  #acquire({ bucket, holder, limit }: Place): boolean {
    let places = this.#places.get(bucket);
    if (!places) this.#places.set(bucket, (places = new Set<string>()));
    if (places.size >= limit) return false;
    places.add(holder);
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

/**
 * Admissions of one bucket that ask the same (cost, quota, place), in arrival order: the store
 * counts them as one. With equal steps on one clock, the count allows a prefix of them (a refused
 * request leaves the bucket as it was, so every later one is refused too); and, no place being
 * given back within a call, the places go to a prefix of those allowed.
 */
export interface AdmissionGroup {
  /** the count every member asks for */
  take: Take;
  /** the places every member asks one of, without the holder (undefined: none asked for) */
  place: Omit<Place, 'holder'> | undefined;
  /** how many requests */
  size: number;
}

/** A process's count of places of a bucket, which a call writes before taking more. */
export interface HeldPlaces {
  bucket: string;
  held: number;
}

/** What a shared store reports for one group. */
export interface GroupVerdict {
  /** the store's clock, epoch ms */
  now: number;
  /** the bucket's TAT before the group (null: a new bucket) */
  priorTat: number | null;
  /** how many of the group the count allowed: the first ones */
  allowed: number;
  /**
   * how many of those allowed took a place: the first ones (0 when none was asked for). In a group
   * that asks for places only these were counted: a request refused for want of one does nothing.
   */
  placed: number;
}

/** The group of each member, in arrival order within each bucket. */
function groupsOf(pending: readonly Pending[]): { group: AdmissionGroup; members: Pending[] }[] {
  const groups: { group: AdmissionGroup; members: Pending[] }[] = [];
  const open = new Map<string, { group: AdmissionGroup; members: Pending[] }>();
  for (const p of pending) {
    const last = open.get(p.take.bucket);
    if (last && asksTheSame(last.group, p)) {
      last.members.push(p);
      last.group.size++;
      continue;
    }
    const place = p.place && { bucket: p.place.bucket, limit: p.place.limit, leaseMs: p.place.leaseMs };
    const next = { group: { take: p.take, place, size: 1 }, members: [p] };
    groups.push(next);
    open.set(p.take.bucket, next);
  }
  return groups;
}

function asksTheSame(g: AdmissionGroup, p: Pending): boolean {
  const a = g.take;
  const b = p.take;
  if (a.limit !== b.limit || a.windowMs !== b.windowMs || a.cost !== b.cost) return false;
  if (!g.place || !p.place) return !g.place && !p.place;
  return g.place.bucket === p.place.bucket && g.place.limit === p.place.limit && g.place.leaseMs === p.place.leaseMs;
}

/**
 * Each member's answer, replaying the group's steps from the TAT the store reported. When the
 * group asks for places, only those that took one were counted; the members after them are
 * refused for want of a place when the count would still allow one more, else by the count.
 */
function answersOf(group: AdmissionGroup, v: GroupVerdict): Admission[] {
  const { take } = group;
  const step = (take.windowMs / take.limit) * take.cost;
  const counted = group.place ? v.placed : v.allowed;
  const answers: Admission[] = [];
  let tat = v.priorTat;
  for (let j = 0; j < group.size; j++) {
    if (j >= counted && group.place && v.allowed > v.placed) {
      const { state } = gcra(tat, v.now, take.limit, take.windowMs, take.cost);
      answers.push({ count: uncounted(state, take, tat, v.now), placed: false });
      continue;
    }
    answers.push(answerOf(take, v.now, tat, j < counted, group.place ? j < counted : null));
    // The store's own step, in its order: the same doubles as the TAT it stored.
    if (j < counted) tat = Math.max(tat ?? v.now, v.now) + step;
  }
  return answers;
}

interface Released {
  bucket: string;
  resolve: () => void;
}

/** After a call failed, the next one is made within this long, requests or not. */
const RETRY_MS = 1_000;

/** Groups per call: a turn of the event loop with more sends several calls, one after another. */
const MAX_GROUPS_PER_CALL = 256;

/**
 * The batching shared by the Redis and PostgreSQL stores. One call at a time, carrying the
 * admissions and releases that gathered meanwhile, the admissions grouped. Places are counted per
 * bucket and process: each call first writes this process's count of every bucket it gave places
 * back to or takes places of, as this process knows it; so a call whose answer was lost (the store
 * counted its places, the process counted them in memory) is set right by the next call on that
 * bucket, and a place given back twice is not two. One call at a time, so that no call writes a
 * count an earlier one is still changing. When a call fails, its admissions are counted in memory;
 * a place is given back where it was taken: in the store, or in memory.
 */
abstract class TurnBatchedStore implements AdmissionStore {
  readonly #fallback = new MemoryAdmissionStore();
  readonly #onDegraded: (err: Error) => void;
  #pending: Pending[] = [];
  #released: Released[] = [];
  #scheduled = false;
  #calling = false;
  /** the call made last, settled once it has answered or failed */
  #lastCall: Promise<void> = Promise.resolve();
  #closed = false;
  /** the timer that renews the leases of the places held, and the lease it was set for */
  #renewal: { timer: NodeJS.Timeout; leaseMs: number } | null = null;
  #retry: NodeJS.Timeout | null = null;
  /** holder → bucket: the places this process holds in the store */
  readonly #inStore = new Map<string, string>();
  /** bucket → the places this process holds in the store */
  readonly #held = new Map<string, number>();
  /** buckets whose count the next call must write: places given back, or a call that failed */
  readonly #stale = new Set<string>();
  /** the lease of the places last asked for: a count written without a place taken gets it too */
  #leaseMs = 15_000;
  /** whether the last call failed, its admissions counted in memory */
  #countingInMemory = false;
  readonly #fallbackListeners: FallbackListener[] = [];
  /** what the store is, for those told of its failures */
  protected abstract readonly kind: 'redis' | 'postgresql';

  /** `onDegraded`: told of each call the store failed, whose requests were counted in memory. */
  constructor(onDegraded: (err: Error) => void) {
    this.#onDegraded = onDegraded;
  }

  /**
   * One call to the store: this process's counts of places `held` written first (a count held
   * until `leaseMs` after it is written), then the groups, each bucket's in order.
   */
  protected abstract send(
    held: readonly HeldPlaces[],
    leaseMs: number,
    groups: readonly AdmissionGroup[],
  ): Promise<GroupVerdict[]>;

  onFallback(listener: FallbackListener): void {
    this.#fallbackListeners.push(listener);
  }

  /** Tells the listeners when the counts go to memory or back to the store: once each way. */
  #countedInMemory(inMemory: boolean, failure: Error | null): void {
    if (this.#countingInMemory === inMemory) return;
    this.#countingInMemory = inMemory;
    for (const listener of this.#fallbackListeners) listener({ inMemory, store: this.kind, failure });
  }

  admit(take: Take, place?: Place): Promise<Admission> {
    if (this.#closed) return Promise.resolve(this.#fallback.admitNow(take, place));
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
    if (this.#closed) {
      // Written by the call that closing makes, if it has not been made yet.
      this.#giveBack(bucket);
      return;
    }
    return new Promise((resolve) => {
      this.#released.push({ bucket, resolve });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#calling || this.#closed) return;
    this.#scheduled = true;
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const released = this.#released;
    this.#released = [];
    const groups = groupsOf(this.#pending);
    const now = groups.slice(0, MAX_GROUPS_PER_CALL);
    // The groups left for the next call: a bucket's later groups stay after its earlier ones.
    this.#pending = groups.slice(MAX_GROUPS_PER_CALL).flatMap((g) => g.members);
    this.#calling = true;
    this.#lastCall = this.#call(released, now).finally(() => {
      this.#calling = false;
      if (this.#pending.length > 0 || this.#released.length > 0) this.#schedule();
    });
  };

  async #call(released: Released[], groups: { group: AdmissionGroup; members: Pending[] }[]): Promise<void> {
    for (const { bucket } of released) this.#giveBack(bucket);
    const written = new Set(this.#stale);
    for (const { group } of groups) {
      if (!group.place) continue;
      written.add(group.place.bucket);
      this.#leaseMs = group.place.leaseMs;
      this.#renewEvery(group.place.leaseMs);
    }
    const held = [...written].map((bucket) => ({ bucket, held: this.#held.get(bucket) ?? 0 }));
    const nothingToSend = held.length === 0 && groups.length === 0;
    let verdicts: GroupVerdict[] | null = null;
    try {
      verdicts = nothingToSend
        ? []
        : await this.send(
            held,
            this.#leaseMs,
            groups.map((g) => g.group),
          );
      if (verdicts.length !== groups.length) throw new Error('the store answered another number of groups');
    } catch (err) {
      verdicts = null;
      // Whether the store applied the call is unknown: its counts are written again next time,
      // made in a second even if no request comes meanwhile. Its admissions are counted in memory.
      for (const { bucket } of held) this.#stale.add(bucket);
      this.#onDegraded(err as Error);
      this.#countedInMemory(true, err as Error);
      if (!this.#closed)
        this.#retry ??= setTimeout(() => {
          this.#retry = null;
          this.#schedule();
        }, RETRY_MS).unref();
    }
    if (verdicts === null) {
      for (const { members } of groups) for (const m of members) m.resolve(this.#inMemory(m));
    } else {
      // A call that sent nothing (a retry with nothing left to write) learned nothing of the store.
      if (!nothingToSend) this.#countedInMemory(false, null);
      for (const { bucket } of held) this.#stale.delete(bucket);
      groups.forEach(({ group, members }, i) => {
        const v = verdicts[i]!;
        const answers = answersOf(group, v);
        members.forEach((m, j) => {
          const answer = answers[j]!;
          if (answer.placed && m.place) {
            this.#inStore.set(m.place.holder, m.place.bucket);
            this.#held.set(m.place.bucket, (this.#held.get(m.place.bucket) ?? 0) + 1);
          }
          m.resolve(answer);
        });
      });
      for (const [bucket, count] of this.#held) if (count === 0) this.#held.delete(bucket);
    }
    for (const r of released) r.resolve();
  }

  /**
   * Waits for the calls in progress, then writes the counts of places given back since (the last
   * requests', given back as they ended), so that other processes, or this one started again, do
   * not wait for the places' leases to run out.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    if (this.#renewal) clearInterval(this.#renewal.timer);
    // A call scheduled for this turn starts first.
    await new Promise((resolve) => setImmediate(resolve));
    await this.#lastCall;
    if (this.#pending.length > 0 || this.#released.length > 0 || this.#stale.size > 0) {
      const released = this.#released;
      this.#released = [];
      await this.#call(released, groupsOf(this.#pending.splice(0)));
    }
    await this.#fallback.close();
  }

  /**
   * A request counted in memory while the store cannot answer: of its key's places, those this
   * process already holds in the store are not free in memory either.
   */
  #inMemory({ take, place }: Pending): Admission {
    const inStore = place ? (this.#held.get(place.bucket) ?? 0) : 0;
    return this.#fallback.admitNow(
      take,
      place && inStore > 0 ? { ...place, limit: Math.max(0, place.limit - inStore) } : place,
    );
  }

  /**
   * Every `leaseMs / 3`, the counts of the buckets where this process holds places are written
   * again, which renews their lease: a request that runs longer than a lease (a statement waiting
   * on a lock) keeps its place, and a key with no other request meanwhile is no exception.
   */
  #renewLeases = (): void => {
    for (const [bucket, held] of this.#held) if (held > 0) this.#stale.add(bucket);
    if (this.#stale.size > 0) this.#schedule();
  };

  #renewEvery(leaseMs: number): void {
    if (this.#closed || this.#renewal?.leaseMs === leaseMs) return;
    if (this.#renewal) clearInterval(this.#renewal.timer);
    this.#renewal = { timer: setInterval(this.#renewLeases, Math.max(1, leaseMs / 3)).unref(), leaseMs };
  }

  /** One place of `bucket` given back: the count the next call writes is one less. */
  #giveBack(bucket: string): void {
    this.#held.set(bucket, Math.max(0, (this.#held.get(bucket) ?? 0) - 1));
    this.#stale.add(bucket);
  }
}

// ------------------------------------------------------------------------------------------ Redis

// This process's counts of places written first, then each group in order: the GCRA steps of its
// requests on Redis's own clock (all processes agree; a bucket's key expires when it is full
// again) while they pass, and when a place is asked for, the places of those that passed while
// places are free. A bucket's places are a hash of one field per process, "held:lease end", whose
// held places count until the lease ends: a process that died stops counting on its own. KEYS: the
// places of the counts written, then per group its bucket and its places (its bucket again when it
// asks for none). ARGV: the process, the lease, how many counts are written, how many groups, the
// counts, then per group its size, step (interval times cost), window, whether it asks for a place
// and the place limit. The answer is Redis's clock, then per group how many its count allowed, the
// bucket's TAT before it and how many took a place (in a group that asks for places, only those
// are counted); the numbers are strings of 17 significant
// digits, which give back the very same double (Lua's tostring keeps 14, and a TAT rounded by it
// would differ from the caller's replay of the steps).
const ADMIT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local nowWholeMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local proc = ARGV[1]
local lease = tonumber(ARGV[2])
local written = tonumber(ARGV[3])
local groups = tonumber(ARGV[4])
local own = {}
local function hold(places, held)
  own[places] = held
  if held > 0 then
    redis.call('HSET', places, proc, string.format('%d:%d', held, nowWholeMs + lease))
    redis.call('PEXPIRE', places, lease)
  else
    redis.call('HDEL', places, proc)
  end
end
for i = 1, written do
  hold(KEYS[i], tonumber(ARGV[4 + i]))
end
local out = {string.format('%.17g', now)}
for g = 1, groups do
  local bucket = KEYS[written + 2 * g - 1]
  local a = 4 + written + 5 * (g - 1)
  local size = tonumber(ARGV[a + 1])
  local step = tonumber(ARGV[a + 2])
  local bound = tonumber(ARGV[a + 3]) + math.min(1, step / 2)
  local tat = tonumber(redis.call('GET', bucket)) or now
  if tat < now then tat = now end
  local prior = tat
  local allowed = 0
  while allowed < size and tat + step - now <= bound do
    tat = tat + step
    allowed = allowed + 1
  end
  local placed = 0
  if allowed > 0 then
    if ARGV[a + 4] == '1' then
      local places = KEYS[written + 2 * g]
      local fields = redis.call('HGETALL', places)
      local taken = 0
      for f = 1, #fields, 2 do
        local held, untilMs = string.match(fields[f + 1], '^(%d+):(%d+)$')
        if held and tonumber(untilMs) >= nowWholeMs then
          taken = taken + tonumber(held)
        else
          redis.call('HDEL', places, fields[f])
        end
      end
      placed = math.min(allowed, math.max(0, tonumber(ARGV[a + 5]) - taken))
      if placed > 0 then hold(places, (own[places] or 0) + placed) end
      -- Only those that took a place count: a request refused for want of one does nothing.
      tat = prior
      for k = 1, placed do tat = tat + step end
    end
    if tat > prior then
      redis.call('SET', bucket, string.format('%.17g', tat), 'PX', math.ceil(tat - now) + 1)
    end
  end
  out[3 * g - 1] = allowed
  out[3 * g] = string.format('%.17g', prior)
  out[3 * g + 1] = placed
end
return out
`;

type RedisWithAdmit = Redis & {
  /** numberOfKeys, the keys, then the arguments (ADMIT_SCRIPT) */
  admitRequests(...args: (string | number)[]): Promise<(string | number)[]>;
};

const RATE_KEY_PREFIX = 'wsapi:gcra:';
const PLACES_KEY_PREFIX = 'wsapi:places:';

export class RedisAdmissionStore extends TurnBatchedStore {
  protected readonly kind = 'redis';
  readonly #redis: RedisConnection;
  /** this process among those counting places in Redis */
  readonly #process = randomUUID();

  constructor(redis: RedisConnection, onDegraded: (err: Error) => void = () => undefined) {
    super(onDegraded);
    // No numberOfKeys: each call says how many keys it carries.
    redis.client.defineCommand('admitRequests', { lua: ADMIT_SCRIPT });
    this.#redis = redis;
  }

  protected async send(
    held: readonly HeldPlaces[],
    leaseMs: number,
    groups: readonly AdmissionGroup[],
  ): Promise<GroupVerdict[]> {
    const keys: string[] = held.map((h) => PLACES_KEY_PREFIX + h.bucket);
    const args: (string | number)[] = [this.#process, leaseMs, held.length, groups.length];
    for (const h of held) args.push(h.held);
    for (const { take, place, size } of groups) {
      const bucket = RATE_KEY_PREFIX + take.bucket;
      keys.push(bucket, place ? PLACES_KEY_PREFIX + place.bucket : bucket);
      args.push(size, (take.windowMs / take.limit) * take.cost, take.windowMs, place ? 1 : 0, place?.limit ?? 0);
    }
    let failure: Error = new Error('Redis failed lately: counted in memory until it answers again');
    const reply = await this.#redis.run(
      (client) =>
        (client as RedisWithAdmit).admitRequests(keys.length, ...keys, ...args).catch((err: unknown) => {
          failure = Object.assign(new Error('Redis failed'), { code: this.#redis.failureCode(err) });
          throw err;
        }),
      () => null,
    );
    if (reply === null) throw failure;
    const now = Number(reply[0]);
    return groups.map((_, g) => ({
      now,
      allowed: Number(reply[3 * g + 1]),
      priorTat: Number(reply[3 * g + 2]),
      placed: Number(reply[3 * g + 3]),
    }));
  }
}

// ------------------------------------------------------------------------------------- PostgreSQL

/**
 * Counts and places in PostgreSQL, for several processes (or machines) without Redis: one call of
 * admit_requests (db/code/09_admission.sql) at a time, on the database's clock, on UNLOGGED tables
 * (a count need not survive a crash); a bucket's places are a row per process holding how many it
 * has.
 */
export class PostgresAdmissionStore extends TurnBatchedStore {
  protected readonly kind = 'postgresql';
  readonly #db: Queryable;
  /** this process among those counting places in the database */
  readonly #process = randomUUID();

  constructor(db: Queryable, onDegraded: (err: Error) => void = () => undefined) {
    super(onDegraded);
    this.#db = db;
  }

  protected async send(
    held: readonly HeldPlaces[],
    leaseMs: number,
    groups: readonly AdmissionGroup[],
  ): Promise<GroupVerdict[]> {
    const { rows } = await this.#db.query<{ now_ms: number; prior_tat: number; allowed: number; placed: number }>(
      'SELECT now_ms, prior_tat, allowed, placed FROM admit_requests($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ORDER BY item',
      [
        this.#process,
        leaseMs,
        held.map((h) => h.bucket),
        held.map((h) => h.held),
        groups.map((g) => g.take.bucket),
        groups.map((g) => g.size),
        groups.map((g) => (g.take.windowMs / g.take.limit) * g.take.cost),
        groups.map((g) => g.take.windowMs),
        groups.map((g) => g.place?.bucket ?? null),
        groups.map((g) => g.place?.limit ?? null),
      ],
      'admit_requests',
    );
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
