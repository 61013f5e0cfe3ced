// Shared parts of the events feed tests (test/events-*.test.ts): the file's server, fresh
// workspaces, reading the feed (walks, marks, positions decrypted to compare order), and the
// writers the tests use (API, plain SQL, tagged transactions).
import assert from 'node:assert/strict';
import { contactBody, eventPosition, idem, type TestResponse, type TestServer, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

export const EVENT_KEYS = ['data', 'id', 'occurred_at', 'request_id', 'resource_id', 'resource_type', 'type'];
export const EVENT_ID = /^evt_[A-Za-z0-9_-]{22}$/;
export const MS_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const INTERNAL = 'INTERNAL-MARKER-7f3a';

let server: TestServer;

/** Starts this file's server before its tests and stops it after them. */
export function useFeedServer(): void {
  server = useTestServer();
}

/** The running server of the calling file. */
export const feedServer = (): TestServer => server;

/** A fresh workspace whose key is not slowed down by the rate limit (the walks below are chatty). */
export const fresh = () => server.workspace({ rateLimitPerMinute: 1_000_000 });

// ------------------------------------------------------------------------------------------ helpers

/** The decrypted (stamp, seq) of an event id of the workspace whose feed the test reads. */
export const positions = new Map<string, [bigint, bigint]>();
export function position(id: string): [bigint, bigint] {
  const known = positions.get(id);
  assert.ok(known, `not an event id seen by this file: ${id}`);
  return known;
}
/** Remembers the position of every event id the feed answered, so ids can be compared. */
export function learn(w: TestWorkspace, events: { id: string }[]): void {
  for (const e of events) positions.set(e.id, eventPosition(server, w.id, e.id));
}

export function compareIds(a: string, b: string): number {
  const [ta, sa] = position(a);
  const [tb, sb] = position(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

export function assertStrictlyIncreasing(ids: string[], what: string): void {
  for (let i = 1; i < ids.length; i++) {
    assert.ok(
      compareIds(ids[i - 1]!, ids[i]!) < 0,
      `${what}: ${ids[i - 1]} ${position(ids[i - 1]!).join()} then ${ids[i]} ${position(ids[i]!).join()} (index ${i})`,
    );
  }
}

export const ids = (events: { id: string }[]) => events.map((e) => e.id);

export const get = (w: TestWorkspace, path: string) => server.request('GET', path, { key: w.key });

export function eventsPath(query: Record<string, string | undefined>): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, v);
  const s = qs.toString();
  return s ? `/v2/events?${s}` : '/v2/events';
}

export function assertEvent(e: any): void {
  assert.deepEqual(Object.keys(e).sort(), EVENT_KEYS);
  assert.match(e.id, EVENT_ID);
  assert.match(e.occurred_at, MS_DATE_TIME);
  assert.equal(e.type, `${e.resource_type}.${e.type.split('.')[1]}`);
  assert.match(e.type, /^[a-z_]+\.(created|updated|deleted)$/);
  assert.equal(typeof e.resource_id, 'string');
  assert.ok(e.request_id === null || typeof e.request_id === 'string');
  assert.equal(typeof e.data, 'object');
  assert.equal(e.data.id, e.resource_id);
}

export type Run = (sql: string, params: unknown[]) => Promise<{ rows: unknown[] }>;
let txTags = 0;

/**
 * Tags the calling transaction: its events carry the tag as request_id (as an API request's carry
 * its X-Request-Id), so the test can list the events it wrote without relying on internals.
 */
export async function tagTransaction(run: Run): Promise<string> {
  const tag = `tx-${++txTags}`;
  await run("SELECT set_config('app.request_id', $1, true)", [tag]);
  return tag;
}

/** Follows the cursor from the first page to the last one, checking every page envelope. */
export async function walk(
  w: TestWorkspace,
  query: Record<string, string | undefined> = {},
  limit = 4,
): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 10_000; pages++) {
    // the first page may start after= an event; the cursor then carries the position on its own
    const r = await get(
      w,
      eventsPath({ ...query, limit: String(limit), ...(cursor ? { cursor, after: undefined } : {}) }),
    );
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json).sort(), ['data', 'page']);
    assert.equal(r.json.page.limit, limit);
    assert.ok(r.json.data.length <= limit);
    for (const e of r.json.data) assertEvent(e);
    learn(w, r.json.data);
    out.push(...r.json.data);
    if (!r.json.page.has_more) {
      assert.equal(r.json.page.next_cursor, null);
      assertStrictlyIncreasing(ids(out), 'walk');
      return out;
    }
    assert.equal(r.json.data.length, limit);
    assert.equal(typeof r.json.page.next_cursor, 'string');
    cursor = r.json.page.next_cursor;
  }
  throw new Error('the walk did not end');
}

/** Everything the feed shows for `w`: a change is visible as soon as it is committed. */
export async function feed(
  w: TestWorkspace,
  query: Record<string, string | undefined> = {},
  limit = 100,
): Promise<any[]> {
  return walk(w, query, limit);
}

/** Id of the last event of the feed: the point to resume from. */
export async function mark(w: TestWorkspace): Promise<string> {
  const all = await feed(w);
  assert.ok(all.length > 0, 'a workspace always has its workspace.created event');
  return all.at(-1).id;
}

/** Events after `from`. */
export async function since(
  w: TestWorkspace,
  from: string,
  query: Record<string, string | undefined> = {},
): Promise<any[]> {
  return feed(w, { ...query, after: from });
}

export const eventCount = async (w: TestWorkspace): Promise<number> =>
  (await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE workspace_id = $1', [w.id]))
    .rows[0]!.n;

/** The raw `data` stored for one event, before the repository's own filtering. */
export async function storedData(w: TestWorkspace, eventId: string): Promise<Record<string, unknown>> {
  const [stamp, seq] = position(eventId);
  const { rows } = await server.db.query<{ data: Record<string, unknown> }>(
    'SELECT data FROM events WHERE workspace_id = $1 AND stamp = $2 AND seq = $3',
    [w.id, stamp.toString(), seq.toString()],
  );
  assert.equal(rows.length, 1, eventId);
  return rows[0]!.data;
}

export function assertError(r: TestResponse, status: number, type: string, what: string): void {
  assert.equal(r.status, status, `${what}: ${r.text}`);
  assert.equal(r.json?.error?.type, type, what);
}

/** What GET of the v2 API answers for one resource now. */
export async function publicView(w: TestWorkspace, resourceType: string, id: string, contactId?: string): Promise<any> {
  const find = async (path: string) => {
    const r = await get(w, path);
    assert.equal(r.status, 200, r.text);
    const found = r.json.data.find((x: { id: string }) => x.id === id);
    assert.ok(found, `${resourceType} ${id} in ${path}`);
    return found;
  };
  const single = async (path: string) => {
    const r = await get(w, path);
    assert.equal(r.status, 200, r.text);
    return r.json.data;
  };
  switch (resourceType) {
    case 'contact':
      return single(`/v2/contacts/${id}`);
    case 'appointment':
      return single(`/v2/appointments/${id}`);
    case 'catalog_item':
      return single(`/v2/catalog/items/${id}`);
    case 'automation':
      return single(`/v2/automations/${id}`);
    case 'workspace':
      return single('/v2/workspace');
    case 'pipeline_stage':
      return find('/v2/pipeline/stages?limit=100');
    case 'conversation':
      return find(`/v2/conversations?contact_id=${contactId}&limit=100`);
    case 'message':
      return find(`/v2/conversations/${contactId}/messages?limit=100`);
    default:
      throw new Error(`unknown resource type ${resourceType}`);
  }
}

export const createContact = (w: TestWorkspace, overrides: Record<string, unknown> = {}) =>
  server.request('POST', '/v2/contacts', { key: w.key, body: contactBody(overrides), idem: idem() });

export async function sqlContact(w: TestWorkspace, name = 'SQL Contact'): Promise<string> {
  const { rows } = await server.db.query<{ id: string }>(
    `INSERT INTO contacts (workspace_id, name, email, status, notes)
     VALUES ($1, $2, 'sql.' || gen_random_uuid() || '@example.com', 'talking', $3) RETURNING id`,
    [w.id, name, INTERNAL],
  );
  return rows[0]!.id;
}
