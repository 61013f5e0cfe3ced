// Reading the events feed: filters, cursors and after=, workspace isolation and scope, retention.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { eventsRepository } from '../src/modules/events/events.repository.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { eventIdAt, idem, type TestWorkspace } from './harness.js';
import {
  assertError,
  createContact,
  eventsPath,
  feed,
  feedServer,
  fresh,
  get,
  ids,
  position,
  since,
  sqlContact,
  useFeedServer,
  walk,
} from './events-support.js';

useFeedServer();

// ------------------------------------------------------------------------------------------ reading the feed

describe('reading the feed: filters, cursors, after=', () => {
  let w: TestWorkspace;
  let all: any[];
  let contacts: string[];
  let appointment: string;

  before(async () => {
    w = await fresh();
    contacts = [];
    for (let i = 0; i < 4; i++) {
      const r = await createContact(w, { name: `Filter ${i}` });
      assert.equal(r.status, 201);
      contacts.push(r.json.data.id);
    }
    for (const [i, status] of ['meeting', 'nurturing', 'lost'].entries()) {
      const r = await feedServer().request('PATCH', `/v2/contacts/${contacts[i % 2]}`, {
        key: w.key,
        body: { status },
        idem: idem(),
      });
      assert.equal(r.status, 200);
    }
    appointment = (
      await feedServer().db.query<{ id: string }>(
        `INSERT INTO appointments (workspace_id, contact_id, timezone) VALUES ($1, $2, 'UTC') RETURNING id`,
        [w.id, contacts[3]],
      )
    ).rows[0]!.id;
    await feedServer().db.query(`UPDATE appointments SET status = 'confirmed' WHERE workspace_id = $1 AND id = $2`, [
      w.id,
      appointment,
    ]);
    await feedServer().db.query(
      `INSERT INTO catalog_items (workspace_id, kind, name) VALUES ($1, 'product', 'Thing')`,
      [w.id],
    );
    await ownerCommands.deleteContact(feedServer().owner, { contactId: contacts[3]! });
    await ownerCommands.deleteContact(feedServer().owner, { contactId: contacts[2]! });
    all = await feed(w);
    assert.ok(all.length >= 20, `${all.length} events`);
  });

  test('walks with small pages give the same events as one big page', async () => {
    for (const limit of [1, 2, 3, 7]) assert.deepEqual(ids(await walk(w, {}, limit)), ids(all), `limit ${limit}`);
    const byDefault = await get(w, '/v2/events');
    assert.equal(byDefault.status, 200);
    assert.deepEqual(ids(byDefault.json.data), ids(all).slice(0, byDefault.json.page.limit));
  });

  test('type (single and comma list), resource_type, resource_id and their combinations, with cursor walks', async () => {
    const cases: [Record<string, string>, (e: any) => boolean][] = [
      [{ type: 'contact.created' }, (e) => e.type === 'contact.created'],
      [{ type: 'contact.updated' }, (e) => e.type === 'contact.updated'],
      [{ type: 'contact.created,contact.deleted' }, (e) => ['contact.created', 'contact.deleted'].includes(e.type)],
      [
        { type: 'appointment.updated,catalog_item.created,workspace.created' },
        (e) => ['appointment.updated', 'catalog_item.created', 'workspace.created'].includes(e.type),
      ],
      [{ type: 'automation.created' }, () => false],
      [{ resource_type: 'contact' }, (e) => e.resource_type === 'contact'],
      [{ resource_type: 'pipeline_stage' }, (e) => e.resource_type === 'pipeline_stage'],
      [{ resource_type: 'appointment' }, (e) => e.resource_type === 'appointment'],
      [{ resource_id: contacts[0]! }, (e) => e.resource_id === contacts[0]],
      [{ resource_id: appointment }, (e) => e.resource_id === appointment],
      [{ resource_id: 'lost' }, (e) => e.resource_id === 'lost'],
      [{ resource_id: 'no-such-thing' }, () => false],
      [
        { type: 'contact.updated', resource_id: contacts[1]! },
        (e) => e.type === 'contact.updated' && e.resource_id === contacts[1],
      ],
      [
        { resource_type: 'contact', type: 'contact.deleted,appointment.updated' },
        (e) => e.resource_type === 'contact' && e.type === 'contact.deleted',
      ],
      [
        { resource_type: 'appointment', resource_id: appointment },
        (e) => e.resource_type === 'appointment' && e.resource_id === appointment,
      ],
      [{ resource_type: 'contact', resource_id: appointment }, () => false],
      [
        { type: 'contact.created,contact.updated', resource_type: 'contact', resource_id: contacts[0]! },
        (e) => e.resource_id === contacts[0] && ['contact.created', 'contact.updated'].includes(e.type),
      ],
    ];
    for (const [query, keep] of cases) {
      const expected = ids(all.filter(keep));
      for (const limit of [1, 2, 100]) {
        assert.deepEqual(ids(await walk(w, query, limit)), expected, `${JSON.stringify(query)} limit ${limit}`);
      }
    }
    // the interesting ones are not empty
    assert.equal(all.filter((e) => e.type === 'contact.created').length, 4);
    assert.equal(all.filter((e) => e.type === 'contact.updated' && e.resource_id === contacts[1]).length, 1);
    assert.equal(all.filter((e) => e.type === 'contact.deleted').length, 2);
  });

  test('after= continues exactly after the given event (with and without filters)', async () => {
    for (let i = 0; i < all.length; i++) {
      const rest = await walk(w, { after: all[i].id }, 3);
      assert.deepEqual(ids(rest), ids(all.slice(i + 1)), `after #${i}`);
    }
    for (const i of [0, 5, 11, all.length - 3]) {
      const rest = await walk(w, { after: all[i].id, type: 'contact.updated,contact.deleted' }, 1);
      assert.deepEqual(
        ids(rest),
        ids(all.slice(i + 1).filter((e) => ['contact.updated', 'contact.deleted'].includes(e.type))),
      );
      const ofOne = await walk(w, { after: all[i].id, resource_id: contacts[0]! }, 2);
      assert.deepEqual(ids(ofOne), ids(all.slice(i + 1).filter((e) => e.resource_id === contacts[0])));
    }
    // a position no event has: everything after it (here: past the last event of the first transaction)
    const [stamp] = position(all[0].id);
    const firstTx = all.filter((e) => position(e.id)[0] === stamp).length;
    const between = await walk(w, { after: eventIdAt(feedServer(), w.id, stamp, 2n ** 48n - 1n) }, 5);
    assert.deepEqual(ids(between), ids(all.slice(firstTx)));
  });

  test('after= the very last event: an empty page, has_more false, next_cursor null; later changes follow', async () => {
    const lastId = all.at(-1).id;
    const r = await get(w, eventsPath({ after: lastId, limit: '5' }));
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { data: [], page: { limit: 5, has_more: false, next_cursor: null } });
    // the reader resumes later with the same after= and gets exactly the new events
    const made = await createContact(w);
    const patched = await feedServer().request('PATCH', `/v2/contacts/${made.json.data.id}`, {
      key: w.key,
      body: { status: 'nurturing' },
      idem: idem(),
    });
    assert.equal(patched.status, 200);
    const resumed = await since(w, lastId);
    assert.deepEqual(
      resumed.map((e) => [e.type, e.resource_id, e.request_id]),
      [
        ['contact.created', made.json.data.id, made.headers.get('x-request-id')],
        ['contact.updated', made.json.data.id, patched.headers.get('x-request-id')],
      ],
    );
    all = await feed(w);
  });

  test('after together with cursor is 400; malformed after is 400; bad filters are 400', async () => {
    const first = await get(w, eventsPath({ limit: '2' }));
    assert.equal(first.json.page.has_more, true);
    assertError(
      await get(w, eventsPath({ limit: '2', cursor: first.json.page.next_cursor, after: all[0].id })),
      400,
      'invalid_request',
      'cursor + after',
    );
    for (const bad of [
      '',
      'evt_',
      'evt_1',
      'evt_1_',
      'evt__1',
      'evt_1_2_3',
      'evt_-1_2',
      'evt_1_-2',
      'EVT_1_2',
      'evt_a_b',
      '12_34',
      `evt_${'1'.repeat(21)}_1`,
      'evt_1_2 ',
      // the shape of an id, but not issued for this workspace
      'evt_AAAAAAAAAAAAAAAAAAAAAA',
      `${all[0].id.slice(0, -1)}${all[0].id.endsWith('A') ? 'B' : 'A'}`,
    ]) {
      assertError(await get(w, `/v2/events?after=${encodeURIComponent(bad)}`), 400, 'invalid_request', `after=${bad}`);
    }
    for (const [name, value] of [
      ['type', 'contact'],
      ['type', 'contact.changed'],
      ['type', 'contact.created,'],
      ['type', 'Contact.created'],
      ['resource_type', 'contacts'],
      ['resource_type', 'events'],
      ['resource_id', ''],
      ['limit', '0'],
      ['limit', '101'],
      ['unknown', 'x'],
    ] as const) {
      assertError(await get(w, eventsPath({ [name]: value })), 400, 'invalid_request', `${name}=${value}`);
    }
  });

  test('after= in the earlier format, which this workspace never issued, is answered as an id made up', async () => {
    const errorOf = (r: { json: any }) => ({ ...r.json.error, request_id: undefined });
    const madeUp = await get(w, eventsPath({ after: 'evt_AAAAAAAAAAAAAAAAAAAAAA' }));
    assertError(madeUp, 400, 'invalid_request', 'an id made up');
    // the first three would name a position on a store that issued them; the others match the
    // pattern ^evt_[0-9]{1,20}_[0-9]{1,20}$ but pass the range of an xid8 (18446744073709551615) or
    // of a bigint (9223372036854775807)
    for (const after of [
      'evt_0_0',
      'evt_99999999_1',
      'evt_18446744073709551615_9223372036854775807',
      'evt_99999999999999999999_1',
      'evt_18446744073709551616_0',
      'evt_1_99999999999999999999',
      'evt_1_9223372036854775808',
    ]) {
      const r = await get(w, eventsPath({ after }));
      assert.equal(r.status, 400, `after=${after}: ${r.text}`);
      assert.deepEqual(errorOf(r), errorOf(madeUp), `after=${after}`);
    }
  });

  test('a cursor is bound to its filters: 400 with other filters, fine with the same ones', async () => {
    const first = await get(w, eventsPath({ type: 'contact.created', limit: '1' }));
    assert.equal(first.json.page.has_more, true);
    const cursor: string = first.json.page.next_cursor;
    for (const other of [
      {},
      { type: 'contact.deleted' },
      { type: 'contact.created,contact.deleted' },
      { resource_type: 'contact' },
      { type: 'contact.created', resource_type: 'contact' },
      { type: 'contact.created', resource_id: contacts[0]! },
    ]) {
      assertError(
        await get(w, eventsPath({ ...other, cursor, limit: '1' })),
        400,
        'invalid_request',
        JSON.stringify(other),
      );
    }
    const same = await get(w, eventsPath({ type: 'contact.created', cursor, limit: '1' }));
    assert.equal(same.status, 200);
    assert.deepEqual(ids(same.json.data), ids(all.filter((e) => e.type === 'contact.created').slice(1, 2)));
    // a cursor of another list is not an events cursor
    const contactsPage = await get(w, '/v2/contacts?limit=1');
    assert.equal(contactsPage.json.page.has_more, true);
    assertError(
      await get(w, eventsPath({ cursor: contactsPage.json.page.next_cursor })),
      400,
      'invalid_request',
      'contacts cursor',
    );
    const unfiltered = await get(w, eventsPath({ limit: '1' }));
    assertError(
      await get(w, eventsPath({ resource_type: 'contact', cursor: unfiltered.json.page.next_cursor })),
      400,
      'invalid_request',
      'unfiltered cursor with a filter',
    );
  });
});

// ------------------------------------------------------------------------------------------ isolation, scope

describe('isolation and scope', () => {
  test('workspace B never sees events of A, not even through after= an id of A', async () => {
    const a = await fresh();
    const b = await fresh();
    const aContacts: string[] = [];
    const bContacts: string[] = [];
    for (let i = 0; i < 3; i++) {
      aContacts.push((await createContact(a)).json.data.id);
      bContacts.push((await createContact(b)).json.data.id);
      aContacts.push(await sqlContact(a));
    }
    const allA = await feed(a);
    const allB = await feed(b);
    const idsA = new Set(ids(allA));
    const resourcesA = new Set([a.id, ...aContacts]);
    for (const e of allB) {
      assert.ok(!idsA.has(e.id), e.id);
      assert.ok(!resourcesA.has(e.resource_id), e.resource_id);
    }
    assert.ok(allB.some((e) => e.resource_id === bContacts[2]));
    for (const e of allA) assert.ok(!bContacts.includes(e.resource_id));

    // an event id of A used by B names nothing in B's feed: refused like a malformed one
    for (const pivot of [allA[0], allA[allA.length - 4], allA.at(-1)]) {
      const r = await get(b, eventsPath({ after: pivot.id }));
      assertError(r, 400, 'invalid_request', `A's id ${pivot.id} used by B`);
      assert.equal(r.json.error.details.parameter, 'after');
    }
    // filtering on A's resources from B finds nothing
    assert.deepEqual(await walk(b, { resource_id: aContacts[0]! }), []);
    assert.deepEqual(await walk(b, { resource_id: a.id }), []);
    // A's cursor is not B's
    const pageA = await get(a, eventsPath({ limit: '1' }));
    assertError(
      await get(b, eventsPath({ limit: '1', cursor: pageA.json.page.next_cursor })),
      400,
      'invalid_request',
      "A's cursor used by B",
    );
  });

  test('the feed needs events:read', async () => {
    const w = await fresh();
    const without = await w.newKey(['contacts:read', 'contacts:write']);
    const r = await feedServer().request('GET', '/v2/events', { key: without.key });
    assertError(r, 403, 'permission_error', 'no events:read');
    const onlyEvents = await w.newKey(['events:read']);
    assert.equal((await feedServer().request('GET', '/v2/events', { key: onlyEvents.key })).status, 200);
  });
});

// ------------------------------------------------------------------------------------------ retention

describe('retention', () => {
  test('30 days by default, documented, and purgeOlderThan removes older events while newer ones stay', async () => {
    assert.equal(loadConfig({}).eventsRetentionDays, 30);
    const doc = await feedServer().request('GET', '/v2/openapi.json');
    assert.equal(doc.status, 200);
    assert.match(doc.json.paths['/v2/events'].get.description, /30 days/);

    const w = await fresh();
    const old: string[] = [];
    for (let i = 0; i < 3; i++) old.push(await sqlContact(w, `Old ${i}`));
    const borderline = await sqlContact(w, 'Borderline');
    const recent: string[] = [];
    for (let i = 0; i < 2; i++) recent.push((await createContact(w)).json.data.id);
    const initial = await feed(w);
    await feedServer().db.query(
      `UPDATE events SET occurred_at = now() - interval '31 days'
        WHERE workspace_id = $1 AND (resource_id = ANY($2) OR resource_type IN ('workspace', 'pipeline_stage'))`,
      [w.id, old],
    );
    await feedServer().db.query(
      `UPDATE events SET occurred_at = now() - interval '29 days' WHERE workspace_id = $1 AND resource_id = $2`,
      [w.id, borderline],
    );
    const gone = new Set(
      ids(
        initial.filter((e) => old.includes(e.resource_id) || ['workspace', 'pipeline_stage'].includes(e.resource_type)),
      ),
    );
    assert.equal(gone.size, 3 + 1 + 10);

    // Every server's housekeeping runs the same purge as it starts, over the whole database: one
    // started by another test file meanwhile may delete these events first, so what is checked is
    // what is left, not the count this call answers.
    await eventsRepository.purgeOlderThan(feedServer().db, 30);
    const afterPurge = await feed(w);
    assert.deepEqual(ids(afterPurge), ids(initial.filter((e) => !gone.has(e.id))));
    assert.deepEqual(
      afterPurge.map((e) => e.resource_id),
      [borderline, ...recent],
    );
    const { rows } = await feedServer().db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM events WHERE workspace_id = $1 AND occurred_at < now() - interval '30 days'`,
      [w.id],
    );
    assert.equal(rows[0]!.n, 0);
    // a reader whose last event was purged still resumes right after it
    const lastPurged = initial.filter((e) => gone.has(e.id)).at(-1);
    assert.deepEqual(ids(await walk(w, { after: lastPurged.id }, 2)), ids(afterPurge));
  });
});
