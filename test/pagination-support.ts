// What the pagination tests share: the fixture of two workspaces (contacts with tied updated_at,
// appointments), the cursor of a list's first page, a path continued by it, and the error checks.
import assert from 'node:assert/strict';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import type { TestResponse, TestServer, TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

export const TIED = 30;
export const SEEDED = 25;
export const TOTAL = TIED + SEEDED;
export const APPOINTMENTS = 40;

export interface ListFixture {
  /** TOTAL contacts: TIED of them in groups of five sharing one updated_at, the rest seeded at random */
  ws: TestWorkspace;
  /** every contact of ws, from one limit=100 page */
  all: any[];
  /** APPOINTMENTS seeded appointments */
  wsAppt: TestWorkspace;
  /** every appointment of wsAppt, from one limit=100 page */
  allAppts: any[];
}

/**
 * A test server for a file's tests, the fixture made once before them (handed to `made`), and the
 * reads the pagination tests make: a GET with a workspace's key, a first page's cursor, a walk.
 */
export function useListFixture(made: (fixture: ListFixture) => void) {
  const server = useTestServer({ setup: async () => made(await listFixture(server)) });
  return {
    server,
    get: (w: TestWorkspace, path: string) => server.request('GET', path, { key: w.key }),
    firstCursor: (w: TestWorkspace, path: string) => firstCursor(server, w, path),
    walk: (w: { key: string }, path: string, limit: number, between?: (pageNo: number) => Promise<void>) =>
      walk(server, w, path, limit, between),
  };
}

async function listFixture(server: TestServer): Promise<ListFixture> {
  const ws = await server.workspace();
  await insertTiedContacts(server, ws.id, TIED, 5);
  await ownerCommands.seed(server.owner, { workspaceId: ws.id, amounts: { contacts: SEEDED, appointments: 0 } });
  const page = await server.request('GET', '/v1/contacts?limit=100', { key: ws.key });
  assert.equal(page.status, 200);

  const wsAppt = await server.workspace();
  await ownerCommands.seed(server.owner, {
    workspaceId: wsAppt.id,
    amounts: { contacts: 5, appointments: APPOINTMENTS },
  });
  const appts = await server.request('GET', '/v1/appointments?limit=100', { key: wsAppt.key });
  assert.equal(appts.status, 200);
  return { ws, all: page.json.data, wsAppt, allAppts: appts.json.data };
}

/** `count` contacts in groups of `groupSize` sharing one updated_at: one INSERT (one stamp) a group. */
export async function insertTiedContacts(
  server: TestServer,
  workspaceId: string,
  count: number,
  groupSize: number,
): Promise<void> {
  for (let first = 0; first < count; first += groupSize) {
    await server.db.query(
      `INSERT INTO contacts (workspace_id, name, email, status)
       SELECT $1, 'Tie ' || g, 'tie' || g || '@example.com', (ARRAY['talking', 'lost', 'cold_list'])[1 + g % 3]
         FROM generate_series($2::int, $3::int) AS g`,
      [workspaceId, first, Math.min(first + groupSize, count) - 1],
    );
  }
}

export const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

export const plusMs = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

export function assertError(r: TestResponse, status: number, type: string, code: string): void {
  assert.equal(r.status, status, r.text);
  assert.deepEqual(Object.keys(r.json), ['error']);
  assert.equal(r.json.error.type, type);
  assert.equal(r.json.error.code, code);
  assert.equal(r.json.error.request_id, r.headers.get('x-request-id'));
}

export const assertInvalidCursor = (r: TestResponse) => assertError(r, 400, 'invalid_request', 'invalid_cursor');

export interface Walk {
  items: any[];
  pages: { limit: number; has_more: boolean; next_cursor: string | null }[];
}

/**
 * Follows next_cursor with `w`'s key from the first page of `path` to the last, `limit` a page,
 * checking the envelope of every page; `between` runs after each page that has a next.
 */
export async function walk(
  server: TestServer,
  w: { key: string },
  path: string,
  limit: number,
  between?: (pageNo: number) => Promise<void>,
): Promise<Walk> {
  const sep = path.includes('?') ? '&' : '?';
  const result: Walk = { items: [], pages: [] };
  let cursor: string | null = null;
  do {
    const r: TestResponse = await server.request(
      'GET',
      `${path}${sep}limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      { key: w.key },
    );
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json).sort(), ['data', 'page']);
    assert.deepEqual(Object.keys(r.json.page).sort(), ['has_more', 'limit', 'next_cursor']);
    const { data, page } = r.json;
    assert.equal(page.limit, limit);
    assert.ok(data.length <= limit);
    if (page.has_more) {
      assert.equal(typeof page.next_cursor, 'string');
      assert.equal(data.length, limit, 'a page followed by another is full');
    } else {
      assert.equal(page.next_cursor, null);
    }
    result.items.push(...data);
    result.pages.push(page);
    assert.ok(result.pages.length <= 1000, 'the walk ends');
    cursor = page.next_cursor;
    if (cursor !== null && between) await between(result.pages.length);
  } while (cursor !== null);
  return result;
}

/** The next_cursor of the first page of `path` (two items a page), which must have a second page. */
export async function firstCursor(server: TestServer, w: TestWorkspace, path: string): Promise<string> {
  const sep = path.includes('?') ? '&' : '?';
  const r = await server.request('GET', `${path}${sep}limit=2`, { key: w.key });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.page.has_more, true);
  return r.json.page.next_cursor as string;
}

/** `path` at its page after `cursor`, two items a page. */
export const withCursor = (path: string, cursor: string) =>
  `${path}${path.includes('?') ? '&' : '?'}limit=2&cursor=${encodeURIComponent(cursor)}`;
