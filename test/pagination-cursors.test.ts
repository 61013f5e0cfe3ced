// List cursors (spec 2.5, 8.4): opaque, checked, bound to the workspace, the list and the rows their
// filters select, valid across versions and instances; a cursor moved by its holder reads only its
// own list; earlier, signed forms still followed.
import assert from 'node:assert/strict';
import { createHash, createHmac, createSecretKey } from 'node:crypto';
import { describe, test } from 'node:test';
import { instanceSetting } from '../src/infra/instance-settings.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { encodeCursor } from '../src/shared/cursor.js';
import { keyOf, rewriteCursor } from './cursor-forgery.js';
import { startTestServer, type TestWorkspace } from './harness.js';
import {
  assertError,
  assertInvalidCursor,
  ids,
  insertTiedContacts,
  useListFixture,
  plusMs,
  withCursor,
} from './pagination-support.js';

let ws: TestWorkspace;
let all: any[];
let wsAppt: TestWorkspace;
let allAppts: any[];
const { server, get, firstCursor, walk } = useListFixture((f) => ({ ws, all, wsAppt, allAppts } = f));

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The cursor with the character at `i` replaced by its base64url neighbour (index XOR `bits`). */
const flip = (cursor: string, i: number, bits = 1) => {
  const at = BASE64URL.indexOf(cursor[i]!);
  const replacement = at < 0 ? 'A' : BASE64URL[at ^ bits]!;
  return cursor.slice(0, i) + replacement + cursor.slice(i + 1);
};

describe('cursors are opaque, checked and bound to what they were issued for', () => {
  test('a changed character anywhere in the cursor, or a forged one, is 400 invalid_cursor', async () => {
    const cursor = await firstCursor(ws, '/v1/contacts');
    const dot = cursor.indexOf('.');
    const positions = [0, Math.floor(dot / 2), dot - 1, dot + 1, Math.floor((dot + cursor.length) / 2)];
    for (const i of positions) {
      for (const bits of [1, 32]) assertInvalidCursor(await get(ws, withCursor('/v1/contacts', flip(cursor, i, bits))));
    }
    // a well-formed payload with another position, carrying the original check
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

  test('only the cursor exactly as issued is accepted (no alternative spellings of the check)', async () => {
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
    await insertTiedContacts(server, other.id, 6, 1);
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
      // Another order, a value repeated, other case: the same set of addresses, so the same rows.
      withCursor(`${emails('Tie2@Example.COM,TIE1@example.com,tie2@example.com')}`, lookup.json.page.next_cursor),
      { key: ws.key },
    );
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(
      [...ids(lookup.json.data), ...ids(next.json.data)].sort(),
      ids(all.filter((c) => ['tie1@example.com', 'tie2@example.com'].includes(c.email))).sort(),
    );
    // The phone lookup likewise: three numbers, then the same three reversed with one repeated.
    const phones = all
      .filter((c) => c.phone)
      .slice(0, 3)
      .map((c) => c.phone as string);
    const byPhone = (list: string[]) => `/v2/contacts?phone=${encodeURIComponent(list.join(','))}`;
    const phoneFirst = await server.request('GET', `${byPhone(phones)}&limit=1`, { key: ws.key });
    assert.equal(phoneFirst.status, 200, phoneFirst.text);
    const phoneNext = await server.request(
      'GET',
      withCursor(byPhone([...phones].reverse().concat(phones[0]!)), phoneFirst.json.page.next_cursor),
      { key: ws.key },
    );
    assert.equal(phoneNext.status, 200, phoneNext.text);
    assert.deepEqual(
      [...ids(phoneFirst.json.data), ...ids(phoneNext.json.data)].sort(),
      ids(all.filter((c) => phones.includes(c.phone))).sort(),
    );
  });

  test('a cursor issued when lists bound the spelling of a filter is still followed with that spelling', async () => {
    const since = '2020-01-01T00:00:00Z';
    const asSent = encodeCursor({ resource: 'contacts', workspaceId: ws.id, filters: { updated_after: since } }, [
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
    await insertTiedContacts(server, both.id, 6, 1);
    await ownerCommands.seed(server.owner, { workspaceId: both.id, amounts: { contacts: 0, appointments: 6 } });
    const contactsCursor = await firstCursor(both, '/v1/contacts');
    const appointmentsCursor = await firstCursor(both, '/v1/appointments');
    assertInvalidCursor(await get(both, withCursor('/v1/appointments', contactsCursor)));
    assertInvalidCursor(await get(both, withCursor('/v1/contacts', appointmentsCursor)));
  });

  test('a cursor carries the position of the last row served and nothing else: no workspace, no filter', async () => {
    const cursor = await firstCursor(ws, '/v1/contacts?status=talking');
    const talking = all.filter((c) => c.status === 'talking');
    assert.deepEqual(keyOf(cursor), [talking[1].updated_at, talking[1].id]);
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

  test('a cursor of the signed form (an HMAC where the check is now) is still followed, and still bound', async () => {
    const secret = createSecretKey(Buffer.from((await instanceSetting(server.db, 'cursor_secret'))!, 'utf8'));
    const signed = (workspaceId: string, filters: string) => {
      const body = Buffer.from(JSON.stringify([all[1].updated_at, all[1].id])).toString('base64url');
      const text = `contacts\n${workspaceId}\n${filters}\n${body}`;
      return `${body}.${createHmac('sha256', secret).update(text).digest().subarray(0, 16).toString('base64url')}`;
    };
    const r = await get(ws, withCursor('/v1/contacts', signed(ws.id, '{}')));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(ids(r.json.data), ids(all.slice(2, 4)));
    assert.match(r.json.page.next_cursor, /^[\w-]+\.[0-9a-f]{8}$/, 'the next cursor is of the current form');
    const other = await server.workspace();
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts', signed(other.id, '{}'))));
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts?status=talking', signed(ws.id, '{}'))));
    assertInvalidCursor(await get(ws, withCursor('/v1/contacts', signed(ws.id, '{"status":"talking"}'))));
  });

  test('a cursor moved by its holder to another position (the check is no signature) reads its own list from there', async () => {
    const cursor = await firstCursor(ws, '/v1/contacts');
    const moved = await get(ws, withCursor('/v1/contacts', rewriteCursor(cursor, [all[9].updated_at, all[9].id])));
    assert.equal(moved.status, 200, moved.text);
    assert.deepEqual(ids(moved.json.data), ids(all.slice(10, 12)));
    // Moved to a contact of another workspace: a position like any other, the page is of this one.
    const other = await server.workspace();
    await insertTiedContacts(server, other.id, 6, 1);
    const [, theirId] = keyOf(await firstCursor(other, '/v1/contacts'));
    const across = await get(ws, withCursor('/v1/contacts', rewriteCursor(cursor, [all[9].updated_at, theirId!])));
    assert.equal(across.status, 200, across.text);
    assert.ok(across.json.data.length > 0);
    const ours = new Set(ids(all));
    assert.deepEqual(
      ids(across.json.data).filter((id) => !ours.has(id)),
      [],
      'only this workspace’s contacts',
    );
  });

  test('a cursor whose check holds (anyone can write one) but whose sort key names no position of the list is 400, never a query', async () => {
    // Written as the service writes them: a key it would never issue is still refused before any query.
    const written = (key: unknown[]) =>
      encodeCursor({ resource: 'contacts', workspaceId: ws.id, filters: {} }, key as string[]);
    const at = all[1].updated_at as string;
    const id = all[1].id as string;
    const ok = await get(ws, withCursor('/v1/contacts', written([at, id])));
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
      assertInvalidCursor(await get(ws, withCursor('/v1/contacts', written(key))));
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

  test('the weakest key that reads a list walks it by cursor; a key without its scope gets 403, never a page', async () => {
    const contactsOnly = await ws.newKey(['contacts:read']);
    const appointmentsOnly = await wsAppt.newKey(['appointments:read']);
    const lookedUp = ['tie3@example.com', 'tie11@example.com', 'tie12@example.com', 'tie27@example.com'];
    const contactWalks: [string, any[]][] = [
      ['/v1/contacts', all],
      ['/v2/contacts', all],
      ['/v1/contacts?status=talking', all.filter((c) => c.status === 'talking')],
      [`/v2/contacts?email=${lookedUp.join(',')}`, all.filter((c) => lookedUp.includes(c.email))],
      [
        `/v1/contacts?updated_after=${encodeURIComponent(all[12].updated_at)}`,
        all.filter((c) => c.updated_at > all[12].updated_at),
      ],
    ];
    for (const [path, expected] of contactWalks) {
      assert.deepEqual(ids((await walk(contactsOnly, path, 7)).items), ids(expected), path);
    }
    for (const path of ['/v1/appointments', '/v2/appointments']) {
      assert.deepEqual(ids((await walk(appointmentsOnly, path, 7)).items), ids(allAppts), path);
    }

    // A cursor is the workspace's, not the key's: one issued to the all-scope key leads on with the
    // weakest, and the other way round.
    const issuedToAll = await firstCursor(ws, '/v1/contacts');
    const followed = await server.request('GET', withCursor('/v1/contacts', issuedToAll), { key: contactsOnly.key });
    assert.equal(followed.status, 200, followed.text);
    assert.deepEqual(ids(followed.json.data), ids(all.slice(2, 4)));
    const first = await server.request('GET', '/v1/contacts?limit=2', { key: contactsOnly.key });
    const back = await get(ws, withCursor('/v1/contacts', first.json.page.next_cursor));
    assert.deepEqual(ids(back.json.data), ids(all.slice(2, 4)));

    // A key of the workspace without the list's scope, sent a good cursor or a bad one: 403 either way.
    const noContacts = await ws.newKey(['appointments:read']);
    for (const cursor of [issuedToAll, 'forged']) {
      for (const list of ['/v1/contacts', '/v2/contacts']) {
        assertError(
          await server.request('GET', withCursor(list, cursor), { key: noContacts.key }),
          403,
          'permission_error',
          'insufficient_scope',
        );
      }
    }
  });

  test('a cursor needs no secret: one issued under a CURSOR_SECRET is followed under another', async () => {
    const first = await startTestServer({ db: server.db, config: { cursorSecret: 'a'.repeat(32) } });
    const second = await startTestServer({ db: server.db, config: { cursorSecret: 'b'.repeat(32) } });
    const { key } = await ws.newKey(['contacts:read']);
    try {
      const issued = await first.request('GET', '/v1/contacts?limit=2', { key });
      assert.equal(issued.status, 200, issued.text);
      const r = await second.request('GET', withCursor('/v1/contacts', issued.json.page.next_cursor), { key });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(ids(r.json.data), ids(all.slice(2, 4)));
    } finally {
      await first.close();
      await second.close();
    }
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
