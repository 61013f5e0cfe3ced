// Version 2 reads (spec 4.3, 2.8): the workspace, every list and get with their exact shapes, the
// shared page envelope and cursor, the sync filters, and the shape of ids.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  A,
  B,
  GETS,
  LISTS,
  TIMEZONE,
  UNKNOWN_ID,
  UUID,
  all,
  assertAscending,
  assertError,
  assertItemShape,
  assertPage,
  contactOfB,
  get,
  ids,
  msBefore,
  server,
  useV2Workspaces,
  walk,
  withOffset,
  withQuery,
} from './v2-support.js';
import { keyOf, rewriteCursor } from './cursor-forgery.js';

useV2Workspaces();

// ------------------------------------------------------------------------------------------ workspace

describe('GET /v2/workspace', () => {
  test('exactly id, name, status, timezone, created_at, updated_at of the key’s workspace, time zone as created', async () => {
    const r = await get('/v2/workspace');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json), ['data']);
    const w = r.json.data;
    assertItemShape(w, 'workspace', 'workspace');
    assert.equal(w.id, A.id);
    assert.equal(w.timezone, TIMEZONE);
    assert.equal(w.status, 'active');
    const { rows } = await server.db.query<{ name: string }>('SELECT name FROM workspaces WHERE id = $1', [A.id]);
    assert.equal(w.name, rows[0]!.name);

    const other = await get('/v2/workspace', B.key);
    assert.equal(other.json.data.id, B.id);
    assert.equal(other.json.data.timezone, 'UTC');

    const kolkata = await server.workspace({ timezone: 'Asia/Kolkata' });
    const k = await get('/v2/workspace', kolkata.key);
    assert.equal(k.status, 200);
    assert.equal(k.json.data.id, kolkata.id);
    assert.equal(k.json.data.timezone, 'Asia/Kolkata');
  });
});

// ------------------------------------------------------------------------------------------ lists

describe('v2 lists: shape, envelope, cursor walk, order, bounds', () => {
  for (const def of LISTS) {
    test(`${def.name}: exact item properties, every page enveloped, a walk of small pages equals big pages`, async () => {
      const path = def.path();
      const big = await all(path);
      const small = await walk(path, big.length < 20 ? 2 : 7);
      assert.ok(big.length >= 6, `${def.name}: the seed filled the list (${big.length})`);
      assert.ok(small.pages >= 3, `${def.name}: several small pages`);
      assert.deepEqual(small.items, big);
      assert.equal(new Set(ids(big)).size, big.length, 'no duplicates');
      for (const item of big) assertItemShape(item, def.resource, def.name);
      assertAscending(big, def.order, def.name);
      const first = await get(path);
      assert.equal(first.status, 200);
      assertPage(first.json, 50, `${def.name} default limit`);
    });

    test(`${def.name}: limit 1..100, anything else 400 invalid_query_parameter stating the range`, async () => {
      const path = def.path();
      for (const limit of [1, 100]) {
        const r = await get(withQuery(path, `limit=${limit}`));
        assert.equal(r.status, 200, r.text);
        assertPage(r.json, limit, `limit=${limit}`);
      }
      for (const bad of ['0', '101', '-1', 'abc', '1.5', '1e1', '']) {
        const r = await get(withQuery(path, `limit=${bad}`));
        assertError(r, 400, 'invalid_request', 'invalid_query_parameter', `${def.name} limit=${bad}`);
        assert.match(r.json.error.message, /1 to 100/);
      }
    });

    test(`${def.name}: forged, foreign and garbage cursors are 400; unknown query parameters are 400`, async () => {
      const path = def.path();
      const page = await get(withQuery(path, 'limit=2'));
      const cursor: string = page.json.page.next_cursor;
      assert.equal(typeof cursor, 'string');
      const [body, check] = cursor.split('.') as [string, string];
      // the cursor's payload is the sort key of the page's last item
      const key: unknown[] = keyOf(cursor);
      const moved = key.map((v) => (typeof v === 'string' ? `0${v}` : v));
      const forged = `${Buffer.from(JSON.stringify(moved)).toString('base64url')}.${check}`;
      const otherList = (await get(def.name === 'contacts' ? '/v2/automations?limit=1' : '/v2/contacts?limit=1')).json
        .page.next_cursor;
      const pathOfB = def.name === 'messages' ? `/v2/conversations/${contactOfB}/messages` : path;
      const otherWorkspace = (await get(withQuery(pathOfB, 'limit=1'), B.key)).json.page.next_cursor;
      for (const [label, bad] of [
        ['forged position', forged],
        ['bad check', `${body}.${check.slice(0, -2)}${check.endsWith('AA') ? 'BB' : 'AA'}`],
        ['garbage', 'not-a-cursor'],
        ['other list', otherList],
        ['other workspace', otherWorkspace],
      ] as const) {
        const r = await get(withQuery(path, `limit=2&cursor=${encodeURIComponent(bad)}`));
        assertError(r, 400, 'invalid_request', 'invalid_cursor', `${def.name} ${label}`);
      }
      const unknown = await get(withQuery(path, 'foo=1'));
      assertError(unknown, 400, 'invalid_request', 'invalid_query_parameter', `${def.name} foo=1`);
      assert.equal(unknown.json.error.details?.parameter, 'foo');
      if (def.since) {
        const r = await get(withQuery(path, `${def.since}=yesterday`));
        assertError(r, 400, 'invalid_request', 'invalid_query_parameter', `${def.name} ${def.since}=yesterday`);
      }
    });
    if (def.since) {
      const since = def.since;
      const column = def.order as 'updated_at' | 'created_at';
      test(`${def.name}: ${since} with digits past the microsecond selects by the instant it names`, async () => {
        const path = def.path();
        const items = await all(path);
        const t: string = items[2][column];
        // Half a microsecond either side of a stored instant: PostgreSQL alone rounds both to it.
        for (const [value, expected] of [
          [`${msBefore(t).slice(0, -1)}9995Z`, items.filter((i) => i[column] >= t)],
          [`${t.slice(0, -1)}0005Z`, items.filter((i) => i[column] > t)],
        ] as const) {
          const r = await get(withQuery(path, `limit=100&${since}=${value}`));
          assert.equal(r.status, 200, r.text);
          assert.deepEqual(ids(r.json.data), ids(expected), `${def.name} ${since}=${value}`);
        }
      });
    }

    test(`${def.name}: a cursor moved by its holder (the check is no signature) reads this list from its position, or is 400 before any query`, async () => {
      const path = def.path();
      // The weakest key that reads the list; for the feed, one that reads contacts' and stages' events only.
      const readable = def.order === 'feed' ? (['contacts:read', 'events:read'] as const) : ([def.scope] as const);
      const weakest = (await A.newKey([...readable])).key;
      const items = await all(path, weakest);
      const cursor: string = (await get(withQuery(path, 'limit=2'), weakest)).json.page.next_cursor;
      const key = keyOf(cursor);
      const keyOfItem = (item: any): string[] => (def.order === 'feed' ? [item.id] : [item[def.order], item.id]);
      const pageAfter = (k: readonly unknown[]) =>
        get(withQuery(path, `limit=2&cursor=${encodeURIComponent(rewriteCursor(cursor, k))}`), weakest);

      // Moved to a row further down: the page goes on after that row.
      const to = 3;
      assert.ok(items.length >= to + 3, `${def.name}: rows after the one moved to`);
      const moved = await pageAfter(keyOfItem(items[to]));
      assert.equal(moved.status, 200, moved.text);
      assert.deepEqual(
        ids(moved.json.data),
        ids(items.slice(to + 1, to + 3)),
        `${def.name}: the page after the row moved to`,
      );

      // Moved to no position of the list: refused before any query.
      const refused: unknown[][] =
        def.order === 'feed'
          ? [[], ['evt_'], [`${key[0]!}x`], [key[0], key[0]], [1]]
          : [
              [],
              [key[0]],
              ['not a time', key[1]],
              ['2026-02-30T00:00:00.000Z', key[1]],
              [Date.parse(key[0]!), key[1]],
              [key[0], null],
              [key[0], 'x'.repeat(129)],
              [key[0], 'a\u0000'],
              [key[0], key[1], key[1]],
              ...(UUID.test(key[1]!) ? [[key[0], 'not-a-uuid']] : []),
            ];
      for (const k of refused)
        assertError(await pageAfter(k), 400, 'invalid_request', 'invalid_cursor', `${def.name} ${JSON.stringify(k)}`);

      // Moved to a row of workspace B: the feed refuses B's event ids; a list reads the position in
      // A's own rows, never B's.
      const pathOfB = def.name === 'messages' ? `/v2/conversations/${contactOfB}/messages` : path;
      const [theirs] = (await all(pathOfB, B.key)).map(keyOfItem);
      assert.ok(theirs, `${def.name}: a row of B`);
      const across = await pageAfter(def.order === 'feed' ? theirs : [key[0]!, theirs[1]!]);
      if (def.order === 'feed') {
        assertError(across, 400, 'invalid_request', 'invalid_cursor', `${def.name}: B's event id`);
        // Moved to an event of a type the key does not read: the page holds only the types it reads.
        // contacts:read reads the events of contacts and of pipeline stages (spec 4.3: "Contacts and pipeline").
        const readsType = (type: string) => /^(contact|pipeline_stage)\./.test(type);
        const unreadable = (await all(path)).find((e) => !readsType(e.type));
        assert.ok(unreadable, 'the feed holds events the weakest key does not read');
        const past = await get(
          withQuery(path, `limit=100&cursor=${encodeURIComponent(rewriteCursor(cursor, [unreadable.id]))}`),
          weakest,
        );
        assert.equal(past.status, 200, past.text);
        assert.ok(past.json.data.length > 0, 'readable events follow the one moved to');
        assert.deepEqual(
          past.json.data.filter((e: any) => !readsType(e.type)),
          [],
          'only the types the key reads',
        );
      } else {
        assert.equal(across.status, 200, across.text);
        const ofA = new Set(ids(items));
        assert.deepEqual(
          ids(across.json.data).filter((id) => !ofA.has(id)),
          [],
          `${def.name}: only A's rows`,
        );
      }
    });
  }

  test('events: ?after=<id> continues the feed right after that event', async () => {
    const feed = await all('/v2/events');
    const pivot = feed[Math.floor(feed.length / 2)];
    const rest = await all(`/v2/events?after=${pivot.id}`);
    assert.deepEqual(ids(rest), ids(feed.slice(feed.indexOf(pivot) + 1)).slice(0, rest.length));
    assert.ok(rest.length >= feed.length - feed.indexOf(pivot) - 1);
  });
});

describe('v2 lists: updated_after / created_after', () => {
  for (const def of LISTS.filter((d) => d.since)) {
    test(`${def.name}: ${def.since} keeps exactly the items strictly after the instant, at millisecond precision`, async () => {
      const since = def.since!;
      const key = def.order as 'updated_at' | 'created_at';
      const path = def.path();
      const full = await all(path);
      const instants = [...new Set(full.map((i) => i[key] as string))].sort();
      assert.ok(instants.length >= 3, `${def.name}: several distinct ${key} values`);
      const pivots = [instants[0]!, instants[Math.floor(instants.length / 2)]!, instants.at(-1)!];
      for (const pivot of pivots) {
        for (const t of [pivot, msBefore(pivot)]) {
          const expected = full.filter((i) => i[key] > t);
          const got = await all(withQuery(path, `${since}=${encodeURIComponent(t)}`));
          assert.deepEqual(ids(got), ids(expected), `${def.name} ${since}=${t}`);
        }
        const offset = await all(withQuery(path, `${since}=${encodeURIComponent(withOffset(pivot))}`));
        assert.deepEqual(ids(offset), ids(full.filter((i) => i[key] > pivot)), `${def.name} ${since} with an offset`);
      }
      // The item on the pivot is excluded, the one a millisecond later is not.
      const last = full.at(-1)!;
      assert.deepEqual(await all(withQuery(path, `${since}=${encodeURIComponent(last[key])}`)), []);
      const justBefore = await all(withQuery(path, `${since}=${encodeURIComponent(msBefore(last[key]))}`));
      assert.ok(ids(justBefore).includes(last.id));
      // A filtered walk in small pages equals the filtered big page, and the cursor is bound to the filter.
      const mid = instants[Math.floor(instants.length / 3)]!;
      const filtered = `${since}=${encodeURIComponent(mid)}`;
      const walked = await walk(withQuery(path, filtered), 2);
      assert.deepEqual(walked.items, await all(withQuery(path, filtered)));
      const firstPage = await get(withQuery(path, `limit=1&${filtered}`));
      if (firstPage.json.page.next_cursor) {
        const mixed = await get(
          withQuery(path, `limit=1&cursor=${encodeURIComponent(firstPage.json.page.next_cursor)}`),
        );
        assertError(mixed, 400, 'invalid_request', 'invalid_cursor', `${def.name}: cursor without its filter`);
      }
    });
  }
});

// ------------------------------------------------------------------------------------------ gets

describe('v2 gets', () => {
  test('a get takes no query parameters: one is 400 invalid_query_parameter, as on the lists', async () => {
    const first = (await all(GETS[0]!.path))[0]!;
    for (const path of [`${GETS[0]!.path}/${first.id}?foo=1`, '/v2/workspace?fields=name']) {
      assertError(await get(path), 400, 'invalid_request', 'invalid_query_parameter', path);
    }
  });

  for (const g of GETS) {
    test(`${g.name}: every listed item equals its GET; unknown and foreign ids 404; malformed 400`, async () => {
      const items = await all(g.path);
      assert.ok(items.length > 0);
      for (const item of items) {
        const r = await get(`${g.path}/${item.id}`);
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(Object.keys(r.json), ['data']);
        assertItemShape(r.json.data, g.resource, g.name);
        assert.deepEqual(r.json.data, item);
      }
      assertError(await get(`${g.path}/${UNKNOWN_ID}`), 404, 'not_found', 'resource_not_found', `${g.name} unknown`);
      const foreign = await all(g.path, B.key);
      assert.ok(foreign.length > 0);
      for (const item of foreign.slice(0, 3)) {
        assertError(await get(`${g.path}/${item.id}`), 404, 'not_found', 'resource_not_found', `${g.name} of B`);
      }
      for (const bad of ['not-a-uuid', '12345', `${UNKNOWN_ID}0`]) {
        const r = await get(`${g.path}/${bad}`);
        assertError(r, 400, 'invalid_request', 'invalid_path_parameter', `${g.name} ${bad}`);
      }
    });
  }
});

test('ids: UUIDs for every resource but pipeline stages and events', async () => {
  for (const def of LISTS.filter((d) => !['pipeline_stage', 'event'].includes(d.resource))) {
    for (const item of await all(def.path())) assert.match(item.id, UUID, def.name);
  }
});
