// Keyset pagination of the lists (spec 2.5, 4.1.5, 8.4): walks against one big page, cursor
// binding and tamper evidence, millisecond timestamps as filters, rows moving while a client pages,
// the appointment filters and the query parameter rules (the index a page runs on: pagination-plans).
import assert from 'node:assert/strict';
import { createHash, createHmac, createSecretKey } from 'node:crypto';
import { describe, test } from 'node:test';
import { instanceSetting } from '../src/infra/instance-settings.js';
import { CursorCodec } from '../src/shared/cursor.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { idem, startTestServer, type TestResponse, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';
import { firstCursor as firstCursorOf, withCursor } from './pagination-support.js';

const MS_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TIED = 30;
const SEEDED = 25;
const TOTAL = TIED + SEEDED;
const APPOINTMENTS = 40;

/** TOTAL contacts: TIED of them in groups of five sharing one updated_at, the rest seeded at random. */
let ws: TestWorkspace;
/** APPOINTMENTS seeded appointments. */
let wsAppt: TestWorkspace;
/** every contact of ws, from one limit=100 page */
let all: any[];
/** every appointment of wsAppt, from one limit=100 page */
let allAppts: any[];
const server = useTestServer({
  setup: async () => {
    ws = await server.workspace();
    await insertTiedContacts(ws.id, TIED, 5);
    await ownerCommands.seed(server.owner, { workspaceId: ws.id, amounts: { contacts: SEEDED, appointments: 0 } });
    const page = await get(ws, '/v1/contacts?limit=100');
    assert.equal(page.status, 200);
    all = page.json.data;

    wsAppt = await server.workspace();
    await ownerCommands.seed(server.owner, {
      workspaceId: wsAppt.id,
      amounts: { contacts: 5, appointments: APPOINTMENTS },
    });
    const appts = await get(wsAppt, '/v1/appointments?limit=100');
    assert.equal(appts.status, 200);
    allAppts = appts.json.data;
  },
});

interface Sortable {
  updated_at: string;
  id: string;
}

/** (updated_at, id) ascending; both print in fixed-width forms whose text order is their value order. */
const byKey = (a: Sortable, b: Sortable) =>
  a.updated_at < b.updated_at ? -1 : a.updated_at > b.updated_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

const get = (w: TestWorkspace, path: string) => server.request('GET', path, { key: w.key });

/** `count` contacts in groups of `groupSize` sharing one updated_at: one INSERT (one stamp) a group. */
async function insertTiedContacts(workspaceId: string, count: number, groupSize: number): Promise<void> {
  for (let first = 0; first < count; first += groupSize) {
    await server.db.query(
      `INSERT INTO contacts (workspace_id, name, email, status)
       SELECT $1, 'Tie ' || g, 'tie' || g || '@example.com', (ARRAY['talking', 'lost', 'cold_list'])[1 + g % 3]
         FROM generate_series($2::int, $3::int) AS g`,
      [workspaceId, first, Math.min(first + groupSize, count) - 1],
    );
  }
}

interface Walk {
  items: any[];
  pages: { limit: number; has_more: boolean; next_cursor: string | null }[];
}

/** Follows next_cursor from the first page to the last, checking the envelope of every page. */
async function walk(w: TestWorkspace, path: string, limit: number, between?: (pageNo: number) => Promise<void>) {
  const sep = path.includes('?') ? '&' : '?';
  const result: Walk = { items: [], pages: [] };
  let cursor: string | null = null;
  do {
    const r: TestResponse = await get(
      w,
      `${path}${sep}limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
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

function assertSorted(rows: Sortable[]): void {
  for (let i = 1; i < rows.length; i++) {
    assert.equal(byKey(rows[i - 1]!, rows[i]!), -1, `row ${i} is after row ${i - 1} in (updated_at, id)`);
  }
}

function assertError(r: TestResponse, status: number, type: string, code: string): void {
  assert.equal(r.status, status, r.text);
  assert.deepEqual(Object.keys(r.json), ['error']);
  assert.equal(r.json.error.type, type);
  assert.equal(r.json.error.code, code);
  assert.equal(r.json.error.request_id, r.headers.get('x-request-id'));
}

const assertInvalidCursor = (r: TestResponse) => assertError(r, 400, 'invalid_request', 'invalid_cursor');

const firstCursor = (w: TestWorkspace, path: string) => firstCursorOf(server, w, path);

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The cursor with the character at `i` replaced by its base64url neighbour (index XOR `bits`). */
const flip = (cursor: string, i: number, bits = 1) => {
  const at = BASE64URL.indexOf(cursor[i]!);
  const replacement = at < 0 ? 'A' : BASE64URL[at ^ bits]!;
  return cursor.slice(0, i) + replacement + cursor.slice(i + 1);
};

const plusMs = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

describe('walking the contact list', () => {
  test('the fixture: one limit=100 page holds every contact, sorted by (updated_at, id), ties included', async () => {
    assert.equal(all.length, TOTAL);
    assertSorted(all);
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
      [ws.id],
    );
    assert.equal(rows[0]!.n, TOTAL);
    const stamps = new Map<string, number>();
    for (const c of all) stamps.set(c.updated_at, (stamps.get(c.updated_at) ?? 0) + 1);
    assert.ok([...stamps.values()].filter((n) => n === 5).length >= TIED / 5, 'groups sharing one updated_at');
  });

  test('every page size serves each contact exactly once, in the order of the single page', async () => {
    for (const limit of [1, 2, 3, 5, 7, 54, 55, 100]) {
      const { items, pages } = await walk(ws, '/v1/contacts', limit);
      assert.deepEqual(ids(items), ids(all), `limit=${limit}`);
      assert.equal(new Set(ids(items)).size, TOTAL, `no duplicates at limit=${limit}`);
      assert.equal(pages.length, Math.max(1, Math.ceil(TOTAL / limit)), `pages at limit=${limit}`);
      assert.deepEqual(items, all, `same representations at limit=${limit}`);
    }
  });

  test('has_more / next_cursor: a last page that is exactly full ends the walk (no empty page)', async () => {
    const exact = await get(ws, `/v1/contacts?limit=${TOTAL}`);
    assert.equal(exact.json.data.length, TOTAL);
    assert.deepEqual(exact.json.page, { limit: TOTAL, has_more: false, next_cursor: null });
    const fives = await walk(ws, '/v1/contacts', 5);
    assert.equal(fives.pages.length, TOTAL / 5);
    assert.deepEqual(
      fives.pages.map((p) => p.has_more),
      [...Array<boolean>(TOTAL / 5 - 1).fill(true), false],
    );
    const oneShort = await get(ws, `/v1/contacts?limit=${TOTAL - 1}`);
    assert.equal(oneShort.json.page.has_more, true);
    const last = await get(
      ws,
      withCursor('/v1/contacts', oneShort.json.page.next_cursor).replace('limit=2', 'limit=5'),
    );
    assert.deepEqual(ids(last.json.data), [all.at(-1).id]);
    assert.deepEqual(last.json.page, { limit: 5, has_more: false, next_cursor: null });
  });

  test('without limit the page size is 50', async () => {
    const r = await get(ws, '/v1/contacts');
    assert.equal(r.status, 200);
    assert.equal(r.json.page.limit, 50);
    assert.equal(r.json.data.length, 50);
    assert.equal(r.json.page.has_more, true);
    assert.deepEqual(ids(r.json.data), ids(all.slice(0, 50)));
    const rest = await get(ws, `/v1/contacts?cursor=${encodeURIComponent(r.json.page.next_cursor)}`);
    assert.deepEqual(ids(rest.json.data), ids(all.slice(50)));
    assert.equal(rest.json.page.next_cursor, null);
  });

  test('an empty workspace has one empty last page', async () => {
    const empty = await server.workspace();
    for (const path of ['/v1/contacts', '/v1/contacts?limit=1', '/v1/appointments']) {
      const r = await get(empty, path);
      assert.equal(r.status, 200);
      assert.deepEqual(r.json.data, []);
      assert.equal(r.json.page.has_more, false);
      assert.equal(r.json.page.next_cursor, null);
    }
  });

  test('a status filter walk equals the single page filtered', async () => {
    for (const status of ['talking', 'lost']) {
      const expected = all.filter((c) => c.status === status);
      assert.ok(expected.length >= 10, `fixture has ${status} contacts`);
      const single = await get(ws, `/v1/contacts?limit=100&status=${status}`);
      assert.deepEqual(ids(single.json.data), ids(expected));
      const { items } = await walk(ws, `/v1/contacts?status=${status}`, 3);
      assert.deepEqual(ids(items), ids(expected));
    }
  });

  test('an updated_after walk equals the single page filtered', async () => {
    const from = all[12].updated_at as string;
    const expected = all.filter((c) => c.updated_at > from);
    const { items } = await walk(ws, `/v1/contacts?updated_after=${from}`, 4);
    assert.deepEqual(ids(items), ids(expected));
    const both = await walk(ws, `/v1/contacts?updated_after=${from}&status=talking`, 2);
    assert.deepEqual(ids(both.items), ids(expected.filter((c) => c.status === 'talking')));
  });
});

describe('cursors are opaque, tamper-evident and bound to what they were issued for', () => {
  test('a changed character anywhere in the cursor, or a forged one, is 400 invalid_cursor', async () => {
    const cursor = await firstCursor(ws, '/v1/contacts');
    const dot = cursor.indexOf('.');
    const positions = [0, Math.floor(dot / 2), dot - 1, dot + 1, Math.floor((dot + cursor.length) / 2)];
    for (const i of positions) {
      for (const bits of [1, 32]) assertInvalidCursor(await get(ws, withCursor('/v1/contacts', flip(cursor, i, bits))));
    }
    // a well-formed payload with another position, carrying the original signature
    const payload = [all[40].updated_at, all[40].id];
    const forged = `${Buffer.from(JSON.stringify(payload)).toString('base64url')}${cursor.slice(dot)}`;
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts', forged)));
    for (const junk of [
      'abc',
      'x.y',
      '.',
      cursor.slice(0, dot),
      cursor.slice(0, -2),
      cursor.slice(dot + 1),
      `${cursor}AA`,
      Buffer.from(JSON.stringify(payload)).toString('base64url'),
    ]) {
      assertInvalidCursor(await get(ws, withCursor('/v1/contacts', junk)));
    }
    // the untouched cursor still works
    const ok = await get(ws, withCursor('/v1/contacts', cursor));
    assert.equal(ok.status, 200);
    assert.deepEqual(ids(ok.json.data), ids(all.slice(2, 4)));
  });

  test('only the cursor exactly as issued is accepted (no alternative spellings of the signature)', async () => {
    const cursor = await firstCursor(ws, '/v1/contacts');
    const dot = cursor.indexOf('.');
    const variants = [
      flip(cursor, cursor.length - 1, 1), // low bits of the last base64url character
      `${cursor}=`,
      `${cursor}!`,
      `${cursor.slice(0, dot + 1)}!${cursor.slice(dot + 1)}`,
    ];
    const accepted: string[] = [];
    for (const v of variants) {
      const r = await get(ws, withCursor('/v1/contacts', v));
      if (r.status !== 400 || r.json?.error?.code !== 'invalid_cursor')
        accepted.push(`${r.status} for …${v.slice(-8)}`);
    }
    assert.deepEqual(accepted, [], 'altered cursors must be 400 invalid_cursor');
  });

  test('a cursor of workspace A is 400 in workspace B', async () => {
    const other = await server.workspace();
    await insertTiedContacts(other.id, 6, 1);
    const cursor = await firstCursor(ws, '/v1/contacts');
    assertInvalidCursor(await get(other, withCursor('/v1/contacts', cursor)));
    // and the other way round
    const theirs = await firstCursor(other, '/v1/contacts');
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts', theirs)));
  });

  test('a cursor issued with status=talking is 400 with another status or without the filter', async () => {
    const cursor = await firstCursor(ws, '/v1/contacts?status=talking');
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts?status=lost', cursor)));
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts', cursor)));
    assertInvalidCursor(
      await get(ws, withCursor(`/v1/contacts?status=talking&updated_after=${all[0].updated_at}`, cursor)),
    );
    const same = await get(ws, withCursor('/v1/contacts?status=talking', cursor));
    assert.equal(same.status, 200);
    // and a cursor issued without a filter is not valid with one
    const plain = await firstCursor(ws, '/v1/contacts');
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts?status=talking', plain)));
  });

  test('a cursor issued with one updated_after is 400 with another', async () => {
    const from = all[3].updated_at as string;
    const cursor = await firstCursor(ws, `/v1/contacts?updated_after=${from}`);
    assertInvalidCursor(await get(ws, withCursor(`/v1/contacts?updated_after=${plusMs(from, 1)}`, cursor)));
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts', cursor)));
    assert.equal((await get(ws, withCursor(`/v1/contacts?updated_after=${from}`, cursor))).status, 200);
  });

  test('a cursor is bound to the rows a filter selects, not to how its value is spelled', async () => {
    const path = (since: string) => `/v1/contacts?updated_after=${encodeURIComponent(since)}`;
    const cursor = await firstCursor(ws, path('2020-01-01T00:00:00Z'));
    const second = await get(ws, withCursor(path('2020-01-01T00:00:00Z'), cursor));
    assert.equal(second.status, 200, second.text);
    for (const same of [
      '2020-01-01T00:00:00.000Z',
      '2020-01-01T00:00:00.000000Z',
      '2020-01-01T00:00:00+00:00',
      '2020-01-01T02:00:00+02:00',
      '2019-12-31t23:00:00-01:00',
    ]) {
      const r = await get(ws, withCursor(path(same), cursor));
      assert.equal(r.status, 200, `${same}: ${r.text}`);
      assert.deepEqual(ids(r.json.data), ids(second.json.data), same);
    }
    // another instant, or one finer than a millisecond (bound as sent), is another filter
    for (const other of ['2020-01-01T00:00:00.001Z', '2020-01-01T00:00:00.0001Z', '2020-01-01T00:00:00+01:00']) {
      assertInvalidCursor(await get(ws, withCursor(path(other), cursor)));
    }
    // an appointment window and a v2 e-mail lookup (any case) likewise
    const window = '/v1/appointments?starts_after=2000-01-01T00:00:00Z';
    const inWindow = await firstCursor(wsAppt, window);
    const windowOn = await get(
      wsAppt,
      withCursor('/v1/appointments?starts_after=2000-01-01T01:00:00%2B01:00', inWindow),
    );
    assert.equal(windowOn.status, 200, windowOn.text);
    const emails = (list: string) => `/v2/contacts?email=${encodeURIComponent(list)}`;
    const lookup = await server.request('GET', `${emails('tie1@example.com,tie2@example.com')}&limit=1`, {
      key: ws.key,
    });
    assert.equal(lookup.status, 200, lookup.text);
    const next = await server.request(
      'GET',
      withCursor(`${emails('TIE1@example.com,Tie2@Example.COM')}`, lookup.json.page.next_cursor),
      { key: ws.key },
    );
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(
      [...ids(lookup.json.data), ...ids(next.json.data)].sort(),
      ids(all.filter((c) => ['tie1@example.com', 'tie2@example.com'].includes(c.email))).sort(),
    );
  });

  test('a cursor issued when lists bound the spelling of a filter is still followed with that spelling', async () => {
    const codec = new CursorCodec((await instanceSetting(server.db, 'cursor_secret'))!);
    const since = '2020-01-01T00:00:00Z';
    const asSent = codec.encode({ resource: 'contacts', workspaceId: ws.id, filters: { updated_after: since } }, [
      all[1].updated_at,
      all[1].id,
    ]);
    const r = await get(ws, withCursor(`/v1/contacts?updated_after=${since}`, asSent));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(ids(r.json.data), ids(all.slice(2, 4)));
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts?updated_after=2020-01-01T00:00:00.001Z', asSent)));
  });

  test('a contacts cursor is 400 on appointments and the other way round', async () => {
    const both = await server.workspace();
    await insertTiedContacts(both.id, 6, 1);
    await ownerCommands.seed(server.owner, { workspaceId: both.id, amounts: { contacts: 0, appointments: 6 } });
    const contactsCursor = await firstCursor(both, '/v1/contacts');
    const appointmentsCursor = await firstCursor(both, '/v1/appointments');
    assertInvalidCursor(await get(both, withCursor('/v1/appointments', contactsCursor)));
    assertInvalidCursor(await get(both, withCursor('/v1/contacts', appointmentsCursor)));
  });

  test('a cursor carries the position of the last row served and nothing else: no workspace, no filter', async () => {
    const cursor = await firstCursor(ws, '/v1/contacts?status=talking');
    const talking = all.filter((c) => c.status === 'talking');
    const body = JSON.parse(Buffer.from(cursor.slice(0, cursor.indexOf('.')), 'base64url').toString('utf8'));
    assert.deepEqual(body, [talking[1].updated_at, talking[1].id]);
    assert.ok(cursor.length <= 120, `a cursor of ${cursor.length} characters`);
  });

  test('a cursor of the earlier form (its binding in the payload) is still followed, and still bound', async () => {
    const secret = createSecretKey(Buffer.from((await instanceSetting(server.db, 'cursor_secret'))!, 'utf8'));
    const filters = createHash('sha256').update('{}').digest('base64url').slice(0, 16);
    const earlier = (workspaceId: string) => {
      const payload = { r: 'contacts', w: workspaceId, f: filters, k: [all[1].updated_at, all[1].id] };
      const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
      const mac = createHmac('sha256', secret).update(body).digest().subarray(0, 16).toString('base64url');
      return `${body}.${mac}`;
    };
    const r = await get(ws, withCursor('/v1/contacts', earlier(ws.id)));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(ids(r.json.data), ids(all.slice(2, 4)));
    // the next page's cursor is of the current form, and leads on
    const next = await get(ws, withCursor('/v1/contacts', r.json.page.next_cursor));
    assert.deepEqual(ids(next.json.data), ids(all.slice(4, 6)));
    const other = await server.workspace();
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts', earlier(other.id))));
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts?status=talking', earlier(ws.id))));
    assertInvalidCursor(await get(ws, withCursor('/v1/appointments', earlier(ws.id))));
  });

  test('a cursor signed with the secret whose sort key names no position of the list is 400, never a query', async () => {
    const codec = new CursorCodec((await instanceSetting(server.db, 'cursor_secret'))!);
    // Signed as the service signs: a key it would never issue is still refused before any query.
    const signed = (key: unknown[]) =>
      codec.encode({ resource: 'contacts', workspaceId: ws.id, filters: {} }, key as string[]);
    const at = all[1].updated_at as string;
    const id = all[1].id as string;
    const ok = await get(ws, withCursor('/v1/contacts', signed([at, id])));
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ids(ok.json.data), ids(all.slice(2, 4)));
    for (const key of [
      [],
      [at],
      [at, id, id],
      [Date.parse(at), id],
      [at, null],
      ['not a time', id],
      ['2026-02-30T00:00:00.000Z', id],
      ['2026-01-01T24:00:00.000Z', id],
      ['0000-01-01T00:00:00.000Z', id],
      [`${at} `, id],
      [at, 'not-a-uuid'],
      [at, `${id}0`],
    ]) {
      assertInvalidCursor(await get(ws, withCursor('/v1/contacts', signed(key))));
    }
  });

  test('contacts and appointments are one list in v1 and v2: a cursor of either version leads on in the other', async () => {
    const fromV1 = await firstCursor(ws, '/v1/contacts');
    const onV2 = await get(ws, withCursor('/v2/contacts', fromV1));
    assert.equal(onV2.status, 200, onV2.text);
    assert.deepEqual(ids(onV2.json.data), ids(all.slice(2, 4)));
    const fromV2 = await firstCursor(wsAppt, '/v2/appointments');
    const onV1 = await get(wsAppt, withCursor('/v1/appointments', fromV2));
    assert.equal(onV1.status, 200, onV1.text);
    assert.deepEqual(ids(onV1.json.data), ids(allAppts.slice(2, 4)));
  });

  test('a cursor is valid on another instance of the service over the same store', async () => {
    const cursor = await firstCursor(ws, '/v1/contacts');
    const twin = await startTestServer({ db: server.db });
    try {
      const r = await twin.request('GET', withCursor('/v1/contacts', cursor), { key: ws.key });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(ids(r.json.data), ids(all.slice(2, 4)));
    } finally {
      await twin.close();
    }
  });
});

describe('millisecond timestamps', () => {
  test('every timestamp is printed with exactly millisecond precision and stored at that precision', async () => {
    for (const c of all) {
      assert.match(c.created_at, MS_DATE_TIME);
      assert.match(c.updated_at, MS_DATE_TIME);
    }
    for (const a of allAppts) {
      for (const field of ['starts_at', 'ends_at']) if (a[field] !== null) assert.match(a[field], MS_DATE_TIME);
      assert.match(a.created_at, MS_DATE_TIME);
      assert.match(a.updated_at, MS_DATE_TIME);
    }
    const { rows } = await server.db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM contacts WHERE workspace_id = $1
                 AND (updated_at <> date_trunc('milliseconds', updated_at)
                      OR created_at <> date_trunc('milliseconds', created_at)))
            + (SELECT count(*) FROM appointments WHERE workspace_id = $2
                 AND (updated_at <> date_trunc('milliseconds', updated_at)
                      OR starts_at <> date_trunc('milliseconds', starts_at)))::int AS n`,
      [ws.id, wsAppt.id],
    );
    assert.equal(Number(rows[0]!.n), 0);
  });

  test("updated_after with an item's exact updated_at excludes that item and everything before it", async () => {
    for (const i of [0, 2, 7, 17, 31, 44, TOTAL - 2]) {
      const pivot = all[i];
      const r = await get(ws, `/v1/contacts?limit=100&updated_after=${pivot.updated_at}`);
      assert.equal(r.status, 200);
      assert.ok(!ids(r.json.data).includes(pivot.id), `item ${i} excluded`);
      assert.deepEqual(
        ids(r.json.data),
        ids(all.filter((c) => c.updated_at > pivot.updated_at)),
        `updated_after item ${i}`,
      );
      const justBefore = await get(ws, `/v1/contacts?limit=100&updated_after=${plusMs(pivot.updated_at, -1)}`);
      assert.ok(ids(justBefore.json.data).includes(pivot.id), `item ${i} included 1 ms earlier`);
    }
    const end = await get(ws, `/v1/contacts?updated_after=${all.at(-1).updated_at}`);
    assert.deepEqual(end.json.data, []);
    assert.equal(end.json.page.next_cursor, null);
  });

  test('the round trip holds for contacts stamped by the API: created, then updated', async () => {
    const w = await server.workspace();
    const created = await server.request('POST', '/v1/contacts', {
      key: w.key,
      body: { name: 'Stamp', email: 'stamp@example.com' },
      idem: idem(),
    });
    assert.equal(created.status, 201);
    const c = created.json.data;
    assert.match(c.updated_at, MS_DATE_TIME);
    const listed = await get(w, '/v1/contacts');
    assert.equal(listed.json.data[0].updated_at, c.updated_at);
    assert.deepEqual((await get(w, `/v1/contacts?updated_after=${c.updated_at}`)).json.data, []);

    const updated = await server.request('PATCH', `/v1/contacts/${c.id}`, {
      key: w.key,
      body: { name: 'Stamp Again' },
      idem: idem(),
    });
    assert.equal(updated.status, 200);
    const u = updated.json.data.updated_at as string;
    assert.match(u, MS_DATE_TIME);
    assert.ok(u > c.updated_at);
    assert.deepEqual((await get(w, `/v1/contacts?updated_after=${u}`)).json.data, []);
    const since = await get(w, `/v1/contacts?updated_after=${c.updated_at}`);
    assert.deepEqual(ids(since.json.data), [c.id]);
    assert.equal(since.json.data[0].updated_at, u);
    const { rows } = await server.db.query<{ exact: boolean }>(
      'SELECT updated_at = $2::timestamptz AS exact FROM contacts WHERE workspace_id = $1 AND id = $3',
      [w.id, u, c.id],
    );
    assert.equal(rows[0]!.exact, true, 'the stored value is the printed one');
  });
});

describe('a contact updated while a client pages', () => {
  test('moves to the end of the order and is seen again later in the walk; nothing is skipped', async () => {
    const w = await server.workspace();
    await insertTiedContacts(w.id, 9, 1);
    const before = (await get(w, '/v1/contacts?limit=100')).json.data as any[];
    assert.equal(before.length, 9);
    const seenEarly = before[0];
    const notYetSeen = before[7];
    const patched: any[] = [];
    const { items } = await walk(w, '/v1/contacts', 3, async (pageNo) => {
      if (pageNo !== 1) return;
      for (const [c, name] of [
        [seenEarly, 'Moved Seen'],
        [notYetSeen, 'Moved Unseen'],
      ] as const) {
        const r = await server.request('PATCH', `/v1/contacts/${c.id}`, { key: w.key, body: { name }, idem: idem() });
        assert.equal(r.status, 200);
        patched.push(r.json.data);
      }
    });
    const tail = [...patched].sort(byKey);
    const expected = [...before.filter((c) => c.id !== notYetSeen.id), ...tail];
    assert.deepEqual(ids(items), ids(expected));
    assert.deepEqual(items.slice(-2), tail, 'the moved contacts arrive with their new state');
    assert.equal(items.filter((c) => c.id === seenEarly.id).length, 2, 'the contact already seen is seen again');
    assert.equal(items.filter((c) => c.id === notYetSeen.id).length, 1, 'the contact not yet seen is seen once');
    assert.equal(new Set(ids(items)).size, 9, 'no contact is skipped');
    assert.ok(tail.every((c) => c.updated_at > before.at(-1).updated_at));
  });
});

describe('appointments', () => {
  const withStart = () => allAppts.filter((a) => a.starts_at !== null);
  const sortedStarts = () => [...new Set(withStart().map((a) => a.starts_at as string))].sort();

  test('the fixture: one page of every appointment, sorted, with and without a start', async () => {
    assert.equal(allAppts.length, APPOINTMENTS);
    assertSorted(allAppts);
    assert.ok(allAppts.some((a) => a.starts_at === null));
    const { items } = await walk(wsAppt, '/v1/appointments', 7);
    assert.deepEqual(items, allAppts);
  });

  test('the status filter, walked, equals the single page filtered', async () => {
    for (const status of ['scheduled', 'cancelled', 'no_show']) {
      const expected = allAppts.filter((a) => a.status === status);
      assert.ok(expected.length >= 4, `fixture has ${status} appointments`);
      const { items } = await walk(wsAppt, `/v1/appointments?status=${status}`, 2);
      assert.deepEqual(ids(items), ids(expected));
    }
    const none = await get(wsAppt, '/v1/appointments?status=completed&starts_after=2999-01-01T00:00:00.000Z');
    assert.deepEqual(none.json.data, []);
  });

  test('starts_after / starts_before bound starts_at inclusively and leave out appointments without a start', async () => {
    const starts = sortedStarts();
    const lo = starts[5]!;
    const hi = starts[25]!;
    const inWindow = (a: any, from: string, to: string) =>
      a.starts_at !== null && a.starts_at >= from && a.starts_at <= to;
    const window = await get(wsAppt, `/v1/appointments?limit=100&starts_after=${lo}&starts_before=${hi}`);
    assert.equal(window.status, 200);
    const expected = allAppts.filter((a) => inWindow(a, lo, hi));
    assert.deepEqual(ids(window.json.data), ids(expected));
    assert.ok(
      window.json.data.some((a: any) => a.starts_at === lo),
      'starts_after is inclusive',
    );
    assert.ok(
      window.json.data.some((a: any) => a.starts_at === hi),
      'starts_before is inclusive',
    );
    const narrower = await get(
      wsAppt,
      `/v1/appointments?limit=100&starts_after=${plusMs(lo, 1)}&starts_before=${plusMs(hi, -1)}`,
    );
    assert.deepEqual(ids(narrower.json.data), ids(allAppts.filter((a) => inWindow(a, plusMs(lo, 1), plusMs(hi, -1)))));
    assert.ok(!narrower.json.data.some((a: any) => a.starts_at === lo || a.starts_at === hi));
    const after = await get(wsAppt, `/v1/appointments?limit=100&starts_after=${lo}`);
    assert.deepEqual(ids(after.json.data), ids(withStart().filter((a) => a.starts_at >= lo)));
    const beforeHi = await get(wsAppt, `/v1/appointments?limit=100&starts_before=${hi}`);
    assert.deepEqual(ids(beforeHi.json.data), ids(withStart().filter((a) => a.starts_at <= hi)));
    const point = await get(wsAppt, `/v1/appointments?limit=100&starts_after=${lo}&starts_before=${lo}`);
    assert.deepEqual(ids(point.json.data), ids(allAppts.filter((a) => a.starts_at === lo)));
    const inverted = await get(wsAppt, `/v1/appointments?starts_after=${hi}&starts_before=${lo}`);
    assert.equal(inverted.status, 200);
    assert.deepEqual(inverted.json.data, []);
  });

  test('a window, a status and a cursor walk together; the cursor is bound to the window', async () => {
    const starts = sortedStarts();
    const lo = starts[2]!;
    const hi = starts[30]!;
    const path = `/v1/appointments?starts_after=${lo}&starts_before=${hi}`;
    const expected = allAppts.filter((a) => a.starts_at !== null && a.starts_at >= lo && a.starts_at <= hi);
    assert.ok(expected.length > 6);
    const { items, pages } = await walk(wsAppt, path, 3);
    assert.deepEqual(ids(items), ids(expected));
    assert.ok(pages.length > 2);
    const status = expected[0].status as string;
    const withStatus = await walk(wsAppt, `${path}&status=${status}`, 1);
    assert.deepEqual(ids(withStatus.items), ids(expected.filter((a) => a.status === status)));
    const updatedAfter = expected[1].updated_at as string;
    const incremental = await walk(wsAppt, `${path}&updated_after=${updatedAfter}`, 2);
    assert.deepEqual(ids(incremental.items), ids(expected.filter((a) => a.updated_at > updatedAfter)));

    const cursor = await firstCursor(wsAppt, path);
    assert.equal((await get(wsAppt, withCursor(path, cursor))).status, 200);
    assertInvalidCursor(
      await get(wsAppt, withCursor(`/v1/appointments?starts_after=${lo}&starts_before=${starts[31]}`, cursor)),
    );
    assertInvalidCursor(await get(wsAppt, withCursor(`/v1/appointments?starts_after=${lo}`, cursor)));
    assertInvalidCursor(await get(wsAppt, withCursor(`${path}&status=${status}`, cursor)));
    assertInvalidCursor(await get(wsAppt, withCursor('/v1/appointments', cursor)));
  });
});

describe('query parameters', () => {
  test('limit=1 and limit=100 are accepted on both lists', async () => {
    for (const path of ['/v1/contacts', '/v1/appointments']) {
      const w = path === '/v1/contacts' ? ws : wsAppt;
      const one = await get(w, `${path}?limit=1`);
      assert.equal(one.status, 200);
      assert.equal(one.json.data.length, 1);
      assert.equal(one.json.page.limit, 1);
      const hundred = await get(w, `${path}?limit=100`);
      assert.equal(hundred.status, 200);
      assert.equal(hundred.json.page.limit, 100);
    }
  });

  test('a limit that is not an integer from 1 to 100 is 400 invalid_query_parameter naming 1 and 100', async () => {
    for (const path of ['/v1/contacts', '/v1/appointments']) {
      for (const query of [
        'limit=0',
        'limit=101',
        'limit=-1',
        'limit=1.5',
        'limit=abc',
        'limit=',
        'limit=1&limit=2',
        'limit=0x10',
        'limit=1e1',
        'limit=%2B5',
        'limit=%201',
      ]) {
        const r = await get(ws, `${path}?${query}`);
        assertError(r, 400, 'invalid_request', 'invalid_query_parameter');
        assert.match(r.json.error.message, /\b1\b/, `${path}?${query}: ${r.json.error.message}`);
        assert.match(r.json.error.message, /\b100\b/, `${path}?${query}: ${r.json.error.message}`);
      }
    }
  });

  test('unknown query parameters are 400', async () => {
    for (const path of ['/v1/contacts', '/v1/appointments']) {
      for (const query of [
        'foo=1',
        'offset=10',
        'page=2',
        'Limit=5',
        'limit=5&sort=desc',
        'starts_at=2026-01-01T00:00:00.000Z',
      ]) {
        const r = await get(ws, `${path}?${query}`);
        assertError(r, 400, 'invalid_request', 'invalid_query_parameter');
      }
    }
    // the appointment window is not a contact filter
    assertError(
      await get(ws, '/v1/contacts?starts_after=2026-01-01T00:00:00.000Z'),
      400,
      'invalid_request',
      'invalid_query_parameter',
    );
  });

  test('date-time and enum parameters must be valid: 400 invalid_query_parameter', async () => {
    const bad = ['yesterday', '2026-11-22', '2026-11-22T06:05:43', '2026-13-01T00:00:00.000Z', '1700000000', ''];
    for (const value of bad) {
      const v = encodeURIComponent(value);
      for (const path of [`/v1/contacts?updated_after=${v}`, `/v1/appointments?updated_after=${v}`]) {
        assertError(await get(ws, path), 400, 'invalid_request', 'invalid_query_parameter');
      }
      for (const p of ['starts_after', 'starts_before']) {
        assertError(await get(wsAppt, `/v1/appointments?${p}=${v}`), 400, 'invalid_request', 'invalid_query_parameter');
      }
    }
    for (const path of ['/v1/contacts?status=won', '/v1/contacts?status=', '/v1/appointments?status=talking']) {
      assertError(await get(ws, path), 400, 'invalid_request', 'invalid_query_parameter');
    }
    for (const path of ['/v1/contacts?cursor=', `/v1/contacts?cursor=${'a'.repeat(1025)}`]) {
      const r = await get(ws, path);
      assert.equal(r.status, 400);
      assert.equal(r.json.error.type, 'invalid_request');
    }
    // a valid date-time with an offset is the same instant
    const pivot = all[20].updated_at as string;
    const d = new Date(pivot);
    const offset = `${new Date(d.getTime() + 2 * 3600_000).toISOString().slice(0, 23)}+02:00`;
    const viaOffset = await get(ws, `/v1/contacts?limit=100&updated_after=${encodeURIComponent(offset)}`);
    assert.equal(viaOffset.status, 200);
    assert.deepEqual(ids(viaOffset.json.data), ids(all.filter((c) => c.updated_at > pivot)));
  });
});
