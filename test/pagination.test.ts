// Keyset pagination of the lists (spec 2.5, 4.1.5, 8.4): walks against one big page, millisecond
// timestamps as filters, rows moving while a client pages, the appointment filters and the query
// parameter rules (cursor binding and tamper evidence: pagination-cursors; the index a page runs
// on: pagination-plans).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { idem, type TestWorkspace } from './harness.js';
import {
  APPOINTMENTS,
  assertError,
  assertInvalidCursor,
  ids,
  insertTiedContacts,
  useListFixture,
  plusMs,
  TIED,
  TOTAL,
  withCursor,
} from './pagination-support.js';

const MS_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let ws: TestWorkspace;
let all: any[];
let wsAppt: TestWorkspace;
let allAppts: any[];
const { server, get, firstCursor, walk } = useListFixture((f) => ({ ws, all, wsAppt, allAppts } = f));

interface Sortable {
  updated_at: string;
  id: string;
}

/** (updated_at, id) ascending; both print in fixed-width forms whose text order is their value order. */
const byKey = (a: Sortable, b: Sortable) =>
  a.updated_at < b.updated_at ? -1 : a.updated_at > b.updated_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

function assertSorted(rows: Sortable[]): void {
  for (let i = 1; i < rows.length; i++) {
    assert.equal(byKey(rows[i - 1]!, rows[i]!), -1, `row ${i} is after row ${i - 1} in (updated_at, id)`);
  }
}

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

  test('updated_after with digits past the microsecond selects by the instant it names', async () => {
    const t = all[7].updated_at as string;
    // Half a microsecond either side of a stored instant: PostgreSQL alone rounds both to it.
    for (const [value, keep] of [
      [`${plusMs(t, -1).slice(0, -1)}9995Z`, (u: string) => u >= t],
      [`${t.slice(0, -1)}0005Z`, (u: string) => u > t],
      [`${plusMs(t, -1).slice(0, -1)}9995+00:00`, (u: string) => u >= t],
    ] as const) {
      const r = await get(ws, `/v1/contacts?limit=100&updated_after=${encodeURIComponent(value)}`);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(ids(r.json.data), ids(all.filter((c) => keep(c.updated_at))), value);
    }
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
    await insertTiedContacts(server, w.id, 9, 1);
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

  test('starts_after / starts_before with digits past the microsecond bound by the instant they name', async () => {
    const t = sortedStarts()[10]!;
    // Half a microsecond either side of a stored start: PostgreSQL alone rounds both to it.
    const justBefore = `${plusMs(t, -1).slice(0, -1)}9995Z`;
    const justAfter = `${t.slice(0, -1)}0005Z`;
    for (const [query, keep] of [
      [`starts_after=${justBefore}`, (s: string) => s >= t],
      [`starts_after=${justAfter}`, (s: string) => s > t],
      [`starts_before=${justBefore}`, (s: string) => s < t],
      [`starts_before=${justAfter}`, (s: string) => s <= t],
    ] as const) {
      const r = await get(wsAppt, `/v1/appointments?limit=100&${query}`);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(ids(r.json.data), ids(withStart().filter((a) => keep(a.starts_at))), query);
    }
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
