// The requests the benchmark sends, and a check of each one before it is measured: a scenario that
// answered 401 or an empty page would give fast, meaningless figures.
import { BENCH_ORIGIN } from './dataset.js';
import type { Fixtures } from './fixtures.js';
import type { Scenario } from './load.js';
import { BATCH_SIZE, CONNECTIONS, EVENTS_LIMIT, LIST_LIMIT, POOL_SIZE } from './settings.js';

/** Distinct external ids the upserts cycle over: the first pass creates them, later passes update them. */
const UPSERT_IDS = 5_000;

/** Each call: a fresh Idempotency-Key, and a contact body that names the run. */
function freshWrites(runId: string, tag: string) {
  let n = 0;
  return () => {
    const i = n++;
    return {
      i,
      key: `bench-${runId}-${tag}${i}`,
      body: { name: `Bench contact ${i}`, email: `bench.${runId}.${tag}${i}@example.com`, origin: BENCH_ORIGIN },
    };
  };
}

/**
 * Distinct external ids the batch upserts cycle over, 100 a request: the 50 batches in flight at
 * once never share an id (they would wait on each other's row locks, which measures the overlap, not
 * the batch), the first pass creates them and later passes update them.
 */
const BATCH_IDS = 50_000;

const REPLAY_BODY = JSON.stringify({ name: 'Bench replay', email: 'bench.replay@example.com', origin: BENCH_ORIGIN });

export interface Scenarios {
  list: Scenario;
  get: Scenario;
  /** GET /v2/contacts?email=…: one contact of the big workspace found by its e-mail */
  lookup: Scenario;
  appointments: Scenario;
  events: Scenario;
  create: Scenario;
  replay: Scenario;
  upsert: Scenario;
  /** POST /v2/contacts/batch/upsert, BATCH_SIZE contacts a request */
  batch: Scenario;
  /** cost growth: GET paths sent in turn on one connection (see measureAlternating) */
  growth: {
    headers: Record<string, string>;
    /** page 1, then the page after row DEEP_PAGE × LIST_LIMIT */
    contacts: readonly [string, string];
    /** the feed's first page, then its last */
    events: readonly [string, string];
  };
}

export function serviceScenarios(f: Fixtures, runId: string): Scenarios {
  const read = { authorization: `Bearer ${f.readKey}` };
  const write = { authorization: `Bearer ${f.writeKey}`, 'content-type': 'application/json' };
  const get = (path: string): Scenario => ({
    method: 'GET',
    path,
    headers: read,
    connections: CONNECTIONS,
    expect: [200],
  });
  const create = freshWrites(runId, 'c');
  const upsert = freshWrites(runId, 'u');
  const batch = freshWrites(runId, 'm');
  let nextId = 0;
  let nextEmail = 0;
  const window = `starts_after=${encodeURIComponent(f.window.after)}&starts_before=${encodeURIComponent(f.window.before)}`;
  return {
    list: get(`/v1/contacts?limit=${LIST_LIMIT}`),
    get: {
      ...get('/v1/contacts/{id}'),
      next: (request) => ({ ...request, path: `/v1/contacts/${f.contactIds[nextId++ % f.contactIds.length]}` }),
    },
    // The lookup a sync makes before creating: one contact of 550,000 by its e-mail, in capitals.
    lookup: {
      ...get('/v2/contacts?email={email}'),
      next: (request) => ({
        ...request,
        path: `/v2/contacts?email=${encodeURIComponent(f.contactEmails[nextEmail++ % f.contactEmails.length]!)}`,
      }),
    },
    appointments: get(`/v1/appointments?limit=${LIST_LIMIT}&${window}`),
    events: get(`/v2/events?limit=${EVENTS_LIMIT}`),
    create: {
      method: 'POST',
      path: '/v1/contacts',
      headers: write,
      connections: CONNECTIONS,
      expect: [201],
      next: (request) => {
        const w = create();
        return {
          ...request,
          headers: { ...request.headers, 'idempotency-key': w.key },
          body: JSON.stringify(w.body),
        };
      },
    },
    // Each connection replays a key of its own, as a client retrying its own request would: all
    // fifty on one key would measure the key's lock (concurrent duplicates are 409 in_use).
    replay: {
      method: 'POST',
      path: '/v1/contacts',
      headers: write,
      body: REPLAY_BODY,
      connections: CONNECTIONS,
      expect: [201],
      perConnection: (n) => ({ 'idempotency-key': replayKey(runId, n) }),
    },
    upsert: {
      method: 'PUT',
      path: '/v1/contacts/external/{id}',
      headers: write,
      connections: CONNECTIONS,
      expect: [200, 201],
      next: (request) => {
        const w = upsert();
        return {
          ...request,
          path: `/v1/contacts/external/bench-${runId}-${w.i % UPSERT_IDS}`,
          headers: { ...request.headers, 'idempotency-key': w.key },
          body: JSON.stringify({ name: w.body.name, origin: BENCH_ORIGIN }),
        };
      },
    },
    batch: {
      method: 'POST',
      path: '/v2/contacts/batch/upsert',
      headers: write,
      // A batch holds a pooled connection for its whole transaction: more batches at once than the
      // pool has connections only queue, and the service sheds them (503 server_overloaded). An
      // import sends a few at a time.
      connections: POOL_SIZE,
      expect: [200],
      next: (request) => {
        const w = batch();
        const first = (w.i * BATCH_SIZE) % BATCH_IDS;
        const items = Array.from({ length: BATCH_SIZE }, (_, k) => ({
          external_id: `bench-${runId}-b${first + k}`,
          name: `${w.body.name} ${k}`,
          origin: BENCH_ORIGIN,
        }));
        return {
          ...request,
          headers: { ...request.headers, 'idempotency-key': w.key },
          body: JSON.stringify({ items }),
        };
      },
    },
    growth: {
      headers: read,
      contacts: [`/v1/contacts?limit=${LIST_LIMIT}`, `/v1/contacts?limit=${LIST_LIMIT}&cursor=${f.deepCursor}`],
      events: [`/v2/events?limit=${EVENTS_LIMIT}`, `/v2/events?limit=${EVENTS_LIMIT}&after=${f.lastEventsAfter}`],
    },
  };
}

const replayKey = (runId: string, n: number) => `bench-${runId}-r${n}`;

/** The bare Fastify route's writes: the same bodies, a fresh key each. */
export function bareWriteScenario(runId: string): Scenario {
  const write = freshWrites(runId, 'b');
  return {
    method: 'POST',
    path: '/contacts',
    headers: { 'content-type': 'application/json' },
    connections: CONNECTIONS,
    expect: [201],
    next: (request) => {
      const w = write();
      return { ...request, headers: { ...request.headers, 'idempotency-key': w.key }, body: JSON.stringify(w.body) };
    },
  };
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function send(url: string, method: string, path: string, headers: Record<string, string>, body?: string) {
  const res = await fetch(url + path, {
    method,
    headers,
    signal: AbortSignal.timeout(30_000),
    ...(body !== undefined ? { body } : {}),
  });
  return { status: res.status, headers: res.headers, text: await res.text() } satisfies Answer;
}

function expectPage(what: string, a: Answer, items: number, hasMore: boolean): void {
  const page = a.status === 200 ? (JSON.parse(a.text) as { data: unknown[]; page: { has_more: boolean } }) : null;
  if (!page || page.data.length !== items || page.page.has_more !== hasMore) {
    throw new Error(
      `${what}: expected 200 with ${items} items (has_more ${hasMore}), got ${a.status}: ${a.text.slice(0, 300)}`,
    );
  }
}

/**
 * Sends each request once and checks the answer; creates the keys the replay scenario replays.
 * Returns the list's response body, which the node:http baseline sends back byte for byte.
 */
export async function verifyService(url: string, s: Scenarios, f: Fixtures, runId: string): Promise<string> {
  const read = s.list.headers!;
  const list = await send(url, 'GET', s.list.path, read);
  expectPage('GET /v1/contacts?limit=50', list, LIST_LIMIT, true);
  expectPage('deep page', await send(url, 'GET', s.growth.contacts[1], read), LIST_LIMIT, true);
  expectPage('events, first page', await send(url, 'GET', s.growth.events[0], read), EVENTS_LIMIT, true);
  expectPage('events, last page', await send(url, 'GET', s.growth.events[1], read), EVENTS_LIMIT, false);
  const appointments = await send(url, 'GET', s.appointments.path, read);
  expectPage('appointments in the window', appointments, LIST_LIMIT, true);
  const one = await send(url, 'GET', `/v1/contacts/${f.contactIds[0]}`, read);
  if (one.status !== 200) throw new Error(`GET /v1/contacts/{id}: ${one.status} ${one.text.slice(0, 300)}`);
  // A lookup that finds nothing would measure an empty answer: the first e-mail must find its contact.
  const found = await send(url, 'GET', `/v2/contacts?email=${encodeURIComponent(f.contactEmails[0]!)}`, read);
  if (found.status !== 200 || (JSON.parse(found.text) as { data: unknown[] }).data.length === 0) {
    throw new Error(`GET /v2/contacts?email=: ${found.status} ${found.text.slice(0, 300)}`);
  }

  const write = s.replay.headers!;
  for (let n = 0; n < CONNECTIONS; n++) {
    const first = await send(
      url,
      'POST',
      '/v1/contacts',
      { ...write, 'idempotency-key': replayKey(runId, n) },
      REPLAY_BODY,
    );
    if (first.status !== 201) throw new Error(`POST /v1/contacts: ${first.status} ${first.text.slice(0, 300)}`);
  }
  const again = await send(
    url,
    'POST',
    '/v1/contacts',
    { ...write, 'idempotency-key': replayKey(runId, 0) },
    REPLAY_BODY,
  );
  if (again.status !== 201 || again.headers.get('idempotent-replayed') !== 'true') {
    throw new Error(`replay: expected 201 with Idempotent-Replayed, got ${again.status} ${again.text.slice(0, 300)}`);
  }
  const put = await send(
    url,
    'PUT',
    `/v1/contacts/external/bench-${runId}-check`,
    { ...write, 'idempotency-key': `bench-${runId}-check` },
    JSON.stringify({ name: 'Bench upsert', origin: BENCH_ORIGIN }),
  );
  if (put.status !== 201) throw new Error(`PUT upsert: ${put.status} ${put.text.slice(0, 300)}`);
  const items = Array.from({ length: BATCH_SIZE }, (_, k) => ({
    external_id: `bench-${runId}-check-${k}`,
    name: 'Bench batch',
    origin: BENCH_ORIGIN,
  }));
  const batch = await send(
    url,
    'POST',
    '/v2/contacts/batch/upsert',
    { ...write, 'idempotency-key': `bench-${runId}-check-batch` },
    JSON.stringify({ items }),
  );
  const results = batch.status === 200 ? (JSON.parse(batch.text) as { data: unknown[] }).data : [];
  if (results.length !== BATCH_SIZE) throw new Error(`batch upsert: ${batch.status} ${batch.text.slice(0, 300)}`);
  return list.text;
}
