// The sync promise under real concurrency (docs/sync.md): while many writers create, update and
// upsert contacts through the API, the owner deletes contacts (which detaches their appointments)
// and the product renames catalog items in plain SQL, a client that follows the documented list procedure and a client that follows
// the documented recipe (head position, list export, feed) both end equal to a full listing taken
// once the writers stop: nothing missing, nothing stale, and for the feed nothing left undeleted.
//
// On PostgreSQL the writes go to two `serve` processes in the default configuration (no Redis), so
// transactions really commit out of order; on the embedded store to the in-process server.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { retryingConflicts, type Database } from '../src/infra/database.js';
import { ownerCommands, type OwnerContext } from '../src/modules/owner/owner.service.js';
import { seedAppointments, seedCatalogItems } from '../src/modules/owner/seed.js';
import { contactBody, openTestDatabase, sleep, startTestServer, STORE, type TestServer } from './harness.js';
import { cleanUpProcesses, startServer, storeEnv, tempDir } from './processes.js';
import { readRoutes } from './servers.js';

const WRITERS = 16;
const DELETERS = 2;
const PRODUCT_WRITERS = 2;
const WRITE_FOR_MS = 10_000;
const EXTERNAL_IDS = 150;

interface Row {
  id: string;
  updated_at: string;
  external_id?: string | null;
  [property: string]: unknown;
}

interface Page {
  data: Row[];
  page: { has_more: boolean; next_cursor: string | null };
}

interface WorkspaceEvent {
  id: string;
  type: string;
  resource_type: string;
  resource_id: string;
  data: Row;
}

let baseUrls: string[];
let db: Database;
let inProcess: TestServer | null = null;
let owner: OwnerContext;
let workspaceId: string;
let key: string;

before(async () => {
  if (STORE === 'postgres') {
    const env = storeEnv(tempDir(), { REDIS_URL: undefined });
    const servers = await Promise.all([startServer(env, ['--workers', '1']), startServer(env, ['--workers', '1'])]);
    baseUrls = servers.map((s) => s.baseUrl);
    db = await openTestDatabase();
  } else {
    inProcess = await startTestServer();
    baseUrls = [inProcess.baseUrl];
    db = inProcess.db;
  }
  owner = { db, defaultRateLimitPerMinute: 600 };
  const ws = await ownerCommands.createWorkspace(owner, { name: `sync-load-${randomUUID().slice(0, 8)}` });
  workspaceId = ws.id;
  const created = await ownerCommands.createKey(owner, {
    workspaceId,
    name: 'sync under load',
    scopes: ['contacts:read', 'contacts:write', 'appointments:read', 'catalog:read', 'events:read'],
    rateLimitPerMinute: 10_000_000,
    // 16 writers and the followers at once: more than the default requests in flight of one key.
    concurrencyLimit: 1_000,
  });
  key = created.key;
});

after(async () => {
  await cleanUpProcesses();
  if (inProcess) await inProcess.close();
  else await db?.close();
});

// ------------------------------------------------------------------------------------------ HTTP

let turn = 0;
/**
 * Where reads may come from replicas (DATABASE_READ_URL): the consistency position of the write made
 * once every writer has stopped, sent by every read after it, so that the followers' last rounds
 * and the full listings see every change. Before it, reads send none: the replica serves them.
 */
let readToken: string | null = null;
async function call(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: any; token: string | null }> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (method === 'GET' && readToken) headers['consistency-position'] = readToken;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['idempotency-key'] = randomUUID();
  }
  const base = baseUrls[turn++ % baseUrls.length]!;
  const res = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    json: text ? JSON.parse(text) : undefined,
    token: res.headers.get('consistency-position'),
  };
}

async function get<T>(path: string): Promise<T> {
  const r = await call('GET', path);
  assert.equal(r.status, 200, `GET ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json as T;
}

/** Every page of a list from `path` (which may carry filters), following next_cursor. */
async function* walk(path: string): AsyncGenerator<Row[]> {
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page: Page = await get<Page>(
      `${path}${sep}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    yield page.data;
    cursor = page.page.next_cursor;
  } while (cursor);
}

// ------------------------------------------------------------------------------------------ writers

const known: string[] = [];
let writes = 0;
let deletions = 0;

async function writer(stopAt: number, n: number): Promise<void> {
  const v = n % 2 === 0 ? 'v1' : 'v2';
  while (Date.now() < stopAt) {
    const dice = Math.random();
    if (dice < 0.3 || known.length < 20) {
      const r = await call('POST', `/${v}/contacts`, contactBody({ name: `created by ${n}` }));
      assert.equal(r.status, 201, JSON.stringify(r.json));
      known.push(r.json.data.id as string);
    } else if (dice < 0.65) {
      const id = known[Math.floor(Math.random() * known.length)]!;
      const r = await call('PATCH', `/${v}/contacts/${id}`, { origin: `patch ${n}.${writes}` });
      assert.ok([200, 404].includes(r.status), JSON.stringify(r.json)); // 404: deleted meanwhile
    } else {
      const externalId = `crm/${Math.floor(Math.random() * EXTERNAL_IDS)}`;
      const r = await call('PUT', `/${v}/contacts/external/${encodeURIComponent(externalId)}`, {
        name: `upserted by ${n}`,
        company_name: `round ${writes}`,
        email: `${Math.floor(Math.random() * 1e9)}@example.com`,
      });
      assert.ok([200, 201].includes(r.status), JSON.stringify(r.json));
      if (r.status === 201) known.push(r.json.data.id as string);
    }
    writes++;
  }
}

/**
 * The product's own writes in plain SQL, one statement each, stamped by the same triggers as the
 * API's: catalog items renamed (and their internal notes edited), retried on a deadlock as
 * docs/sync.md asks of such writers.
 */
let productWrites = 0;
async function productWriter(stopAt: number, n: number): Promise<void> {
  while (Date.now() < stopAt) {
    await retryingConflicts(() =>
      db.query(
        `UPDATE catalog_items SET name = 'Item ' || $2::text, private_notes = $2::text
          WHERE workspace_id = $1
            AND id = (SELECT id FROM catalog_items WHERE workspace_id = $1 ORDER BY random() LIMIT 1)`,
        [workspaceId, `${n}.${productWrites}`],
      ),
    );
    productWrites++;
    await sleep(20);
  }
}

async function deleter(stopAt: number): Promise<void> {
  while (Date.now() < stopAt) {
    await sleep(20);
    const id = known[Math.floor(Math.random() * known.length)];
    if (!id) continue;
    try {
      await ownerCommands.deleteContact(owner, { contactId: id });
      deletions++;
    } catch {
      // deleted by the other deleter first
    }
  }
}

// ------------------------------------------------------------------------------------------ followers

type Mirror = Map<string, Row>;

/** How many events of each type the feed follower applied. */
const eventCounts: Record<string, number> = {};

/**
 * The documented list procedure: walk the list with updated_after = the updated_at of the last
 * row of the previous complete walk, following next_cursor to the end; store every row as given.
 */
async function listFollower(path: string, mirror: Mirror, stopped: () => boolean): Promise<number> {
  let position: string | null = null;
  let rounds = 0;
  for (let last = false; ;) {
    last = stopped();
    const filter: string = position ? `?updated_after=${encodeURIComponent(position)}` : '';
    for await (const rows of walk(path + filter)) {
      for (const row of rows) mirror.set(row.id, row);
      if (rows.length) position = rows.at(-1)!.updated_at;
    }
    rounds++;
    // One more complete walk after the writers stopped: it must bring everything.
    if (last) return rounds;
  }
}

/**
 * The documented recipe: take the head, export the lists, follow the feed from the head, round
 * after round, until `settled()` says the copy is complete.
 */
async function feedFollower(mirrors: Record<string, Mirror>, settled: () => Promise<boolean>): Promise<number> {
  const head = await get<{ data: { position: string } }>('/v2/events/head');
  for (const [resource, mirror] of Object.entries(mirrors)) {
    for await (const rows of walk(`/v2/${resource}s`)) for (const row of rows) mirror.set(row.id, row);
  }
  let after = head.data.position;
  let applied = 0;
  for (;;) {
    let cursor: string | null = null;
    do {
      const page: Page & { data: unknown[] } = await get(
        `/v2/events?resource_type=contact,appointment&limit=100&${cursor ? `cursor=${encodeURIComponent(cursor)}` : `after=${after}`}`,
      );
      for (const event of page.data as WorkspaceEvent[]) {
        const mirror = mirrors[event.resource_type]!;
        eventCounts[event.type] = (eventCounts[event.type] ?? 0) + 1;
        if (event.type.endsWith('.deleted')) mirror.delete(event.resource_id);
        else mirror.set(event.resource_id, event.data);
        after = event.id;
        applied++;
      }
      cursor = page.page.next_cursor;
    } while (cursor);
    if (await settled()) return applied;
    await sleep(20);
  }
}

async function fullListing(resource: string): Promise<Mirror> {
  const all: Mirror = new Map();
  for await (const rows of walk(`/v2/${resource}`)) for (const row of rows) all.set(row.id, row);
  return all;
}

function compare(truth: Mirror, mirror: Mirror): { missing: string[]; stale: string[]; notDeleted: string[] } {
  const missing: string[] = [];
  const stale: string[] = [];
  for (const [id, row] of truth) {
    const copy = mirror.get(id);
    if (!copy) missing.push(id);
    else if (JSON.stringify(copy) !== JSON.stringify(row)) stale.push(id);
  }
  const notDeleted = [...mirror.keys()].filter((id) => !truth.has(id));
  return { missing, stale, notDeleted };
}

// ------------------------------------------------------------------------------------------ the test

test(`list and feed followers lose nothing under ${WRITERS} writers and owner deletions (${STORE})`, async () => {
  // Contacts with appointments, so that deleting a contact also changes appointments.
  for (let i = 0; i < 40; i++) {
    const r = await call('POST', '/v1/contacts', contactBody());
    known.push(r.json.data.id as string);
  }
  await seedAppointments(db, workspaceId, 200);
  await seedCatalogItems(db, workspaceId, 30);

  const stopAt = Date.now() + WRITE_FOR_MS;
  let writersDone = false;
  const load = Promise.all([
    ...Array.from({ length: WRITERS }, (_, n) => writer(stopAt, n)),
    ...Array.from({ length: DELETERS }, () => deleter(stopAt)),
    ...Array.from({ length: PRODUCT_WRITERS }, (_, n) => productWriter(stopAt, n)),
  ])
    .then(async () => {
      const last = await call('POST', '/v1/contacts', contactBody({ name: 'after every writer' }));
      assert.equal(last.status, 201);
      readToken = last.token;
    })
    .finally(() => (writersDone = true));
  // Followers start while the writers run, and each does one last round once they have stopped.
  await sleep(500);
  const stopped = () => writersDone;
  const listed = {
    v1: new Map() as Mirror,
    v2: new Map() as Mirror,
    appointments: new Map() as Mirror,
    catalog: new Map() as Mirror,
  };
  const fed = { contact: new Map() as Mirror, appointment: new Map() as Mirror };
  // The truth: a full listing once the writers have stopped (a list shows every committed row).
  let truth: { contacts: Mirror; appointments: Mirror } | null = null;
  const finalTruth = async () => {
    await load;
    truth ??= { contacts: await fullListing('contacts'), appointments: await fullListing('appointments') };
    return truth;
  };
  // An event is visible as soon as its transaction commits (docs/events.md): one complete round
  // of the feed started after the writers stopped must bring the copy up to date, like the lists'.
  let roundsAfterWriters = 0;
  const settled = async () => {
    if (!writersDone) return false;
    await finalTruth();
    return ++roundsAfterWriters > 1;
  };
  const [, listRounds, , , , applied] = await Promise.all([
    load,
    listFollower('/v1/contacts', listed.v1, stopped),
    listFollower('/v2/contacts', listed.v2, stopped),
    listFollower('/v2/appointments', listed.appointments, stopped),
    listFollower('/v2/catalog/items', listed.catalog, stopped),
    feedFollower(fed, settled),
  ]);

  const { contacts, appointments } = await finalTruth();
  const catalog = await fullListing('catalog/items');
  const report = {
    writes,
    deletions,
    listRounds,
    eventsApplied: applied,
    eventCounts,
    contacts: contacts.size,
    v1List: compare(contacts, listed.v1),
    v2List: compare(contacts, listed.v2),
    appointmentList: compare(appointments, listed.appointments),
    productWrites,
    catalogList: compare(catalog, listed.catalog),
    contactFeed: compare(contacts, fed.contact),
    appointmentFeed: compare(appointments, fed.appointment),
  };
  const summary = JSON.stringify(report, (k, v: unknown) => (Array.isArray(v) ? v.length : v));
  console.log(`sync under load: ${summary}`);

  // Enough to interleave many transactions even on a busy two-core machine (the embedded store
  // runs every statement one at a time, so it gets through fewer).
  assert.ok(writes > 100 && deletions > 10, `enough concurrent work happened: ${summary}`);
  assert.ok((eventCounts['appointment.updated'] ?? 0) > 0, `deletions detached appointments: ${summary}`);
  assert.ok(listRounds > 3, `the list follower read while writes were going on: ${summary}`);
  assert.ok(productWrites > 20, `the product wrote alongside: ${summary}`);
  for (const name of ['v1List', 'v2List', 'appointmentList', 'catalogList'] as const) {
    // A list shows no deletions; what it must show is every row in its latest state.
    assert.deepEqual([report[name].missing.length, report[name].stale.length], [0, 0], `${name}: ${summary}`);
  }
  for (const name of ['contactFeed', 'appointmentFeed'] as const) {
    const r = report[name];
    assert.deepEqual([r.missing.length, r.stale.length, r.notDeleted.length], [0, 0, 0], `${name}: ${summary}`);
  }
  if (process.env.DATABASE_READ_URL) {
    // The servers' reads by where they went: the replica must have served most of them.
    const routes: Record<string, number> = {};
    for (const base of baseUrls) {
      for (const [route, n] of Object.entries(await readRoutes(base))) routes[route] = (routes[route] ?? 0) + n;
    }
    const all = Object.values(routes).reduce((a, b) => a + b, 0);
    console.log(`reads by route: ${JSON.stringify(routes)}`);
    assert.ok(readToken, 'write answers carry consistency positions');
    assert.ok((routes.replica ?? 0) > all / 2, `the replica served most reads: ${JSON.stringify(routes)}`);
  }
});
