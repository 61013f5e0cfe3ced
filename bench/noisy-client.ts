// The noisy-neighbour scenario's requests and their client (bench/noisy-neighbour.ts runs it).
// Workspace B reads its first page of contacts, as a sync client does; workspace A sends the most
// expensive requests a key may send, in a closed loop. Each request's latency is taken here, from
// the moment it is handed to node:http to the last byte of its answer; a keep-alive agent per loop
// holds one connection per slot.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { CONTACT_STATUSES } from '../src/modules/contacts/contacts.schemas.js';
import { RESOURCE_TYPES } from '../src/modules/resources.js';
import { median, percentile } from './load.js';

/** B's request, and how many connections send it. */
export const B_PATH = '/v2/contacts?limit=50';
export const B_CONNECTIONS = 4;
/** A's requests in flight at once. */
export const A_PARALLEL = 8;
/** Items of A's batch upserts, valid or hostile (the most one batch may carry). */
export const A_BATCH_ITEMS = 100;
/** Unknown properties of each item of A's hostile batch. */
export const A_HOSTILE_PROPERTIES = 900;
/** Size of A's hostile batch: near the default BODY_LIMIT_BYTES (1 MiB), which would refuse it with 413. */
const A_HOSTILE_BYTES = 1_040_000;
/** Pages of GET /v2/contacts?limit=100 that A follows by cursor before it starts from the first again. */
export const A_DEEP_PAGES = 10;
/** A's list starts here: every contact, read from the oldest change on. */
export const A_UPDATED_AFTER = '2000-01-01T00:00:00Z';
/**
 * A stays within its quota: it waits out Retry-After (up to this) as a well-behaved client does, so
 * what it costs the others is its admitted work, not a stream of refusals.
 */
export const A_RETRY_AFTER_HONOURED_BELOW_MS = 120_000;
/** How much of an answer other than the one expected is kept, to show what it said. */
const EXAMPLE_BYTES = 300;
/** A request not answered in this time counts as an error. */
const REQUEST_TIMEOUT_MS = 120_000;

export const A_KINDS = ['batch', 'hostile', 'events', 'deep', 'lookup', 'partial', 'delete'] as const;
export type AKind = (typeof A_KINDS)[number];

export const A_KIND_LABELS: Record<AKind, string> = {
  batch: `POST /v2/contacts/batch/upsert, ${A_BATCH_ITEMS} valid items, every text near its longest`,
  hostile: `POST /v2/contacts/batch/upsert, ${A_BATCH_ITEMS} items × ${A_HOSTILE_PROPERTIES} unknown properties (about 1 MiB)`,
  events: `GET /v2/events?type=(all ${RESOURCE_TYPES.length * 3} types)&limit=100`,
  deep: `GET /v2/contacts?limit=100&updated_after=…, cursors followed ${A_DEEP_PAGES} pages in`,
  lookup: `GET /v2/contacts?external_id=(${A_BATCH_ITEMS} ids of 128 characters)&limit=100`,
  partial: `POST /v2/contacts/batch/upsert, mode partial, ${A_BATCH_ITEMS / 2} valid and ${A_BATCH_ITEMS / 2} invalid items (207)`,
  delete: `POST /v2/contacts/batch/delete, ${A_BATCH_ITEMS} external ids of an earlier batch`,
};

export interface Request {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface Answer {
  /** 0 when no answer came (a socket error or the time limit) */
  status: number;
  /** bytes of the answer's body */
  bytes: number;
  ms: number;
  retryAfter: string | undefined;
  /** what went wrong when no answer came */
  error?: string;
  /** the body's first `keep` bytes */
  text: string;
}

/** Sends one request and reads its whole answer; never rejects (a failure is status 0). */
export function send(agent: http.Agent, base: URL, r: Request, keep = 400): Promise<Answer> {
  return new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    const finish = (a: Omit<Answer, 'ms'>) => {
      if (settled) return;
      settled = true;
      resolve({ ...a, ms: performance.now() - started });
    };
    const headers = r.body ? { ...r.headers, 'content-length': String(r.body.length) } : r.headers;
    const req = http.request(
      { host: base.hostname, port: base.port, method: r.method, path: r.path, headers, agent },
      (res) => {
        let bytes = 0;
        const kept: Buffer[] = [];
        let keptBytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (keptBytes < keep) {
            kept.push(chunk);
            keptBytes += chunk.length;
          }
        });
        const retryAfter = res.headers['retry-after'];
        const done = (error?: string) =>
          finish({
            status: error ? 0 : (res.statusCode ?? 0),
            bytes,
            retryAfter,
            text: Buffer.concat(kept).subarray(0, keep).toString('utf8'),
            ...(error ? { error } : {}),
          });
        res.on('end', () => done());
        res.on('error', (err) => done(err.message));
        res.on('close', () => done(res.complete ? undefined : 'answer cut short'));
      },
    );
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish({ status: 0, bytes: 0, retryAfter: undefined, text: '', error: err.code ?? err.message }),
    );
    req.end(r.body);
  });
}

/** Approximate bytes of a request on the wire: request line, headers, body. */
export function requestBytes(r: Request): number {
  const head =
    `${r.method} ${r.path} HTTP/1.1\r\n` +
    Object.entries(r.headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('') +
    (r.body ? `content-length: ${r.body.length}\r\n` : '') +
    '\r\n';
  return Buffer.byteLength(head) + (r.body?.length ?? 0);
}

/** `connections` loops, each sending its next request as soon as the previous one is answered, until `stop()`. */
async function closedLoop(
  connections: number,
  stop: () => boolean,
  one: (slot: number) => Promise<void>,
): Promise<void> {
  await Promise.all(
    Array.from({ length: connections }, async (_, slot) => {
      while (!stop()) await one(slot);
    }),
  );
}

export interface LatencyFigures {
  /** latencies are of the 200 answers */
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
  max_ms: number;
  /** requests answered 200 */
  completed: number;
  /** every other answer, errors included */
  non_200: number;
  /** status (or "error") → count, of the non-200 answers */
  statuses: Record<string, number>;
  /** status (or "error") → the beginning of the first such answer (or what went wrong) */
  examples: Record<string, string>;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

function latencyFigures(
  latencies: number[],
  statuses: Record<string, number>,
  examples: Record<string, string> = {},
): LatencyFigures {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    p50_ms: round2(percentile(sorted, 0.5)),
    p99_ms: round2(percentile(sorted, 0.99)),
    mean_ms: round2(sorted.reduce((a, b) => a + b, 0) / sorted.length),
    max_ms: round2(sorted.at(-1) ?? Number.NaN),
    completed: sorted.length,
    non_200: Object.values(statuses).reduce((a, b) => a + b, 0),
    statuses,
    examples,
  };
}

/** B's load: `connections` closed loops of GET /v2/contacts?limit=50 for `seconds`. */
export async function runB(url: string, key: string, seconds: number, connections = B_CONNECTIONS) {
  const base = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const request: Request = { method: 'GET', path: B_PATH, headers: { authorization: `Bearer ${key}` } };
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const examples: Record<string, string> = {};
  const end = performance.now() + seconds * 1000;
  try {
    await closedLoop(
      connections,
      () => performance.now() >= end,
      async () => {
        const a = await send(agent, base, request, EXAMPLE_BYTES);
        if (a.status === 200) latencies.push(a.ms);
        else {
          const status = a.status === 0 ? 'error' : String(a.status);
          statuses[status] = (statuses[status] ?? 0) + 1;
          examples[status] ??= a.error ?? a.text;
        }
      },
    );
  } finally {
    agent.destroy();
  }
  return latencyFigures(latencies, statuses, examples);
}

/**
 * A's requests, one kind after another: each call of `next(kind, slot)` gives a request of that
 * kind, with a fresh Idempotency-Key on every write; `answered` feeds the deep list's cursors back.
 */
export function aRequests(key: string, runId: string) {
  const read = { authorization: `Bearer ${key}` };
  const write = { ...read, 'content-type': 'application/json' };
  let n = 0;
  const idempotencyKey = () => `noisy-${runId}-${n++}`;
  const text = (seed: string, length: number) => seed.padEnd(length, ' abcdefghij').slice(0, length);
  // Longest valid e-mail: 254 characters, labels of at most 63.
  const domain = `${'d'.repeat(61)}.${'e'.repeat(61)}.${'f'.repeat(61)}.example`;
  const fixed = {
    name: text('Noisy neighbour contact', 160),
    company_name: text('Noisy neighbour company', 160),
    origin: text('noisy-neighbour', 120),
  };
  /** the external ids of a valid batch's items */
  const externalIds = (batch: number) =>
    Array.from({ length: A_BATCH_ITEMS }, (_, k) => `${runId}-${batch}-${k}-`.padEnd(128, 'x'));
  /** valid batches sent and not yet deleted, oldest first: what lookups and batch deletes name */
  const written: number[] = [];
  const validBatch = () => {
    const batch = n;
    written.push(batch);
    const items = Array.from({ length: A_BATCH_ITEMS }, (_, k) => {
      const id = `${runId}-${batch}-${k}-`;
      return {
        external_id: id.padEnd(128, 'x'),
        ...fixed,
        email: `${id.replace(/-/g, '.')}`.padEnd(254 - 1 - domain.length, 'x') + `@${domain}`,
        phone: `+5511${String(k).padStart(11, '0')}`,
        whatsapp: `+5521${String(batch % 1e11).padStart(11, '0')}`,
        status: CONTACT_STATUSES[k % CONTACT_STATUSES.length]!,
      };
    });
    return Buffer.from(JSON.stringify({ items }));
  };
  const hostile = hostileBatch(runId);
  const types = RESOURCE_TYPES.flatMap((t) => [`${t}.created`, `${t}.updated`, `${t}.deleted`]).join(',');
  const eventsPath = `/v2/events?type=${types}&limit=100`;
  const firstPage = `/v2/contacts?limit=100&updated_after=${encodeURIComponent(A_UPDATED_AFTER)}`;
  const chains = new Map<number, { cursor: string | null; depth: number }>();
  return {
    hostileBytes: hostile.length,
    next(kind: AKind, slot: number): Request {
      switch (kind) {
        case 'batch':
          return {
            method: 'POST',
            path: '/v2/contacts/batch/upsert',
            headers: { ...write, 'idempotency-key': idempotencyKey() },
            body: validBatch(),
          };
        case 'hostile':
          return {
            method: 'POST',
            path: '/v2/contacts/batch/upsert',
            headers: { ...write, 'idempotency-key': idempotencyKey() },
            body: hostile,
          };
        case 'events':
          return { method: 'GET', path: eventsPath, headers: read };
        case 'deep': {
          const chain = chains.get(slot);
          const cursor = chain?.cursor ? `&cursor=${encodeURIComponent(chain.cursor)}` : '';
          return { method: 'GET', path: firstPage + cursor, headers: read };
        }
        case 'lookup': {
          const ids = externalIds(written.at(-1) ?? -1).join(',');
          return {
            method: 'GET',
            path: `/v2/contacts?limit=100&external_id=${encodeURIComponent(ids)}`,
            headers: read,
          };
        }
        case 'partial': {
          const batch = n;
          const items = Array.from({ length: A_BATCH_ITEMS }, (_, k) => ({
            external_id: `${runId}-partial-${batch}-${k}`,
            ...fixed,
            email: k % 2 === 0 ? `partial.${batch}.${k}@example.com` : 'not an e-mail address',
          }));
          return {
            method: 'POST',
            path: '/v2/contacts/batch/upsert',
            headers: { ...write, 'idempotency-key': idempotencyKey() },
            body: Buffer.from(JSON.stringify({ mode: 'partial', items })),
          };
        }
        case 'delete':
          return {
            method: 'POST',
            path: '/v2/contacts/batch/delete',
            headers: { ...write, 'idempotency-key': idempotencyKey() },
            body: Buffer.from(JSON.stringify({ external_ids: externalIds(written.shift() ?? -1) })),
          };
      }
    },
    /** How many bytes of an answer of this kind `answered` needs. */
    keep: (kind: AKind) => (kind === 'deep' ? Number.POSITIVE_INFINITY : EXAMPLE_BYTES),
    answered(kind: AKind, slot: number, a: Answer): void {
      if (kind !== 'deep') return;
      const chain = chains.get(slot) ?? { cursor: null, depth: 0 };
      const next = a.status === 200 ? /"next_cursor":"([^"]+)"/.exec(a.text)?.[1] : undefined;
      chains.set(
        slot,
        next && chain.depth + 1 < A_DEEP_PAGES ? { cursor: next, depth: chain.depth + 1 } : { cursor: null, depth: 0 },
      );
    },
  };
}

export type ARequests = ReturnType<typeof aRequests>;

/**
 * A batch of valid items, each carrying A_HOSTILE_PROPERTIES properties the schema does not know,
 * their values padded so that the body comes to about A_HOSTILE_BYTES. Refused (422), it changes
 * nothing, so one body serves every request.
 */
function hostileBatch(runId: string): Buffer {
  const build = (value: string, rest: string) => {
    const unknown = Object.fromEntries(Array.from({ length: A_HOSTILE_PROPERTIES }, (_, j) => [`u${j}`, value]));
    const items = Array.from({ length: A_BATCH_ITEMS }, (_, k) => ({
      external_id: `hostile-${runId}-${k}`,
      name: 'Hostile',
      ...unknown,
      // The bytes the even padding leaves, in the last unknown value of the first item.
      ...(k === 0 ? { [`u${A_HOSTILE_PROPERTIES - 1}`]: value + rest } : {}),
    }));
    return Buffer.from(JSON.stringify({ items }));
  };
  const bare = build('', '').length;
  const value = 'v'.repeat(Math.max(0, Math.floor((A_HOSTILE_BYTES - bare) / (A_BATCH_ITEMS * A_HOSTILE_PROPERTIES))));
  return build(value, 'v'.repeat(Math.max(0, A_HOSTILE_BYTES - build(value, '').length)));
}

/** How A's answers are counted. */
type AClass = '2xx' | '422' | '429' | '503' | 'other' | 'error';
const classOf = (status: number): AClass =>
  status === 0
    ? 'error'
    : status >= 200 && status < 300
      ? '2xx'
      : status === 422 || status === 429 || status === 503
        ? (String(status) as AClass)
        : 'other';

interface AKindFigures {
  sent: number;
  answers: Record<AClass, number>;
  /** every status seen, and "error" for no answer */
  statuses: Record<string, number>;
  /** status (or "error") other than the kind's success → the beginning of its first answer */
  examples: Record<string, string>;
  /** latency of every answer of the kind, whatever its status */
  p50_ms: number;
  max_ms: number;
  /** the largest answer of the kind, and the request it answered */
  largest_answer: { status: number; bytes: number; request_bytes: number };
}

export interface AFigures {
  kinds: Record<AKind, AKindFigures>;
  /** the largest answer that was not a 2xx, and the request it answered */
  largest_error: { kind: AKind; status: number; bytes: number; request_bytes: number; ratio: number } | null;
  slowest: { kind: AKind; status: number; ms: number } | null;
  /** Retry-After waits honoured (under a second) */
  waits: number;
  /** from the first request sent to the last answer received, s */
  seconds: number;
}

/** Adds up the figures of several runs of A (the repetitions of one deployment). */
export function combineA(runs: AFigures[]): AFigures {
  const kinds = Object.fromEntries(
    A_KINDS.map((kind) => {
      const of = runs.map((r) => r.kinds[kind]);
      const sum = <K extends string>(pick: (k: AKindFigures) => Record<K, number>) => {
        const total: Record<string, number> = {};
        for (const k of of) for (const [s, c] of Object.entries<number>(pick(k))) total[s] = (total[s] ?? 0) + c;
        return total as Record<K, number>;
      };
      const largest = of.reduce((a, b) => (b.largest_answer.bytes > a.largest_answer.bytes ? b : a), of[0]!);
      return [
        kind,
        {
          sent: of.reduce((a, b) => a + b.sent, 0),
          answers: sum((k) => k.answers),
          statuses: sum((k) => k.statuses),
          examples: Object.assign({}, ...of.map((k) => k.examples).reverse()) as Record<string, string>,
          p50_ms: median(of.map((k) => k.p50_ms)),
          max_ms: Math.max(...of.map((k) => k.max_ms)),
          largest_answer: largest.largest_answer,
        } satisfies AKindFigures,
      ];
    }),
  ) as Record<AKind, AKindFigures>;
  const pick = <T>(items: (T | null)[], size: (t: T) => number): T | null =>
    items.reduce<T | null>((a, b) => (b !== null && (a === null || size(b) > size(a)) ? b : a), null);
  return {
    kinds,
    largest_error: pick(
      runs.map((r) => r.largest_error),
      (e) => e.bytes,
    ),
    slowest: pick(
      runs.map((r) => r.slowest),
      (s) => s.ms,
    ),
    waits: runs.reduce((a, r) => a + r.waits, 0),
    seconds: runs.reduce((a, r) => a + r.seconds, 0),
  };
}

/**
 * A's load: A_PARALLEL closed loops, slot s starting at kind s mod A_KINDS.length and cycling through them,
 * until `stop()`; then waits for the requests in flight. A 429 or 503 is counted, and its
 * Retry-After waited out: A pushes as hard as its quota lets it.
 */
export async function runA(url: string, requests: ARequests, stop: () => boolean): Promise<AFigures> {
  const base = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: A_PARALLEL });
  const latencies = new Map<AKind, number[]>(A_KINDS.map((k) => [k, []]));
  const kinds = Object.fromEntries(
    A_KINDS.map((k) => [
      k,
      {
        sent: 0,
        answers: { '2xx': 0, '422': 0, '429': 0, '503': 0, other: 0, error: 0 },
        statuses: {},
        examples: {},
        p50_ms: Number.NaN,
        max_ms: Number.NaN,
        largest_answer: { status: 0, bytes: 0, request_bytes: 0 },
      } satisfies AKindFigures,
    ]),
  ) as Record<AKind, AKindFigures>;
  let largestError: AFigures['largest_error'] = null;
  let slowest: AFigures['slowest'] = null;
  let waits = 0;
  const turn = new Map<number, number>();
  const started = performance.now();
  try {
    await closedLoop(A_PARALLEL, stop, async (slot) => {
      const t = turn.get(slot) ?? slot;
      turn.set(slot, t + 1);
      const kind = A_KINDS[t % A_KINDS.length]!;
      const request = requests.next(kind, slot);
      const a = await send(agent, base, request, requests.keep(kind));
      requests.answered(kind, slot, a);
      const k = kinds[kind];
      k.sent++;
      k.answers[classOf(a.status)]++;
      const status = a.status === 0 ? 'error' : String(a.status);
      k.statuses[status] = (k.statuses[status] ?? 0) + 1;
      if (a.status !== 200) k.examples[status] ??= (a.error ?? a.text).slice(0, EXAMPLE_BYTES);
      latencies.get(kind)!.push(a.ms);
      const size = requestBytes(request);
      if (a.bytes > k.largest_answer.bytes)
        k.largest_answer = { status: a.status, bytes: a.bytes, request_bytes: size };
      if (a.status !== 0 && (a.status < 200 || a.status >= 300) && a.bytes > (largestError?.bytes ?? -1)) {
        largestError = {
          kind,
          status: a.status,
          bytes: a.bytes,
          request_bytes: size,
          ratio: Number((a.bytes / size).toPrecision(3)),
        };
      }
      if (a.ms > (slowest?.ms ?? -1)) slowest = { kind, status: a.status, ms: round2(a.ms) };
      if ((a.status === 429 || a.status === 503) && a.retryAfter !== undefined) {
        const ms = Number(a.retryAfter) * 1000;
        if (Number.isFinite(ms) && ms >= 0 && ms < A_RETRY_AFTER_HONOURED_BELOW_MS) {
          waits++;
          await new Promise((r) => setTimeout(r, ms));
        }
      }
    });
  } finally {
    agent.destroy();
  }
  for (const kind of A_KINDS) {
    const sorted = latencies.get(kind)!.sort((a, b) => a - b);
    kinds[kind].p50_ms = round2(percentile(sorted, 0.5));
    kinds[kind].max_ms = round2(sorted.at(-1) ?? Number.NaN);
  }
  return {
    kinds,
    largest_error: largestError,
    slowest,
    waits,
    seconds: round2((performance.now() - started) / 1000),
  };
}
