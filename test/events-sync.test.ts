// What a synchronizing client needs from the events feed beyond reading it (docs/sync.md): the
// head position (GET /v2/events/head), 410 events_expired instead of a silent gap once retention
// has deleted events after a position (for after= and for a cursor), several resource types in
// one filter, and contact tombstones that name the external_id.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, eventIdAt, eventPosition, expireEvents, idem, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

const server = useTestServer();

const fresh = () => server.workspace({ rateLimitPerMinute: 1_000_000 });
const get = (w: TestWorkspace, path: string) => server.request('GET', path, { key: w.key });

async function createContact(w: TestWorkspace, externalId?: string): Promise<{ id: string }> {
  const r = externalId
    ? await server.request('PUT', `/v2/contacts/external/${encodeURIComponent(externalId)}`, {
        key: w.key,
        body: contactBody(),
        idem: idem(),
      })
    : await server.request('POST', '/v2/contacts', { key: w.key, body: contactBody(), idem: idem() });
  assert.equal(r.status, 201, r.text);
  return r.json.data;
}

/** Every event after `position` (the whole feed without it), following the cursor. */
async function feed(w: TestWorkspace, query: string, position?: string): Promise<any[]> {
  const events: any[] = [];
  let cursor: string | null = null;
  do {
    const from: string = cursor ? `cursor=${encodeURIComponent(cursor)}` : position ? `after=${position}` : '';
    const r = await get(w, `/v2/events?limit=100${query ? `&${query}` : ''}${from ? `&${from}` : ''}`);
    assert.equal(r.status, 200, r.text);
    events.push(...r.json.data);
    cursor = r.json.page.next_cursor;
  } while (cursor);
  return events;
}

async function head(w: TestWorkspace): Promise<string> {
  const r = await get(w, '/v2/events/head');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.json.data).sort(), ['position', 'taken_at']);
  assert.match(r.json.data.position, /^evt_[A-Za-z0-9_-]{22}$/);
  return r.json.data.position as string;
}

describe('GET /v2/events/head', () => {
  test('after=<head> gives exactly the changes made after it was taken, none before', async () => {
    const w = await fresh();
    await createContact(w);
    await createContact(w);
    const position = await head(w);
    assert.deepEqual(await feed(w, '', position), [], 'nothing after the head yet');
    const later = await createContact(w);
    const events = await feed(w, '', position);
    assert.deepEqual(
      events.map((e) => [e.type, e.resource_id]),
      [['contact.created', later.id]],
    );
    // The head moves on: taken again, it is at or after the last event.
    const again = await head(w);
    assert.deepEqual(await feed(w, '', again), []);
  });

  test('a head taken on an empty feed, then many changes: every one of them, once, in order', async () => {
    const w = await fresh();
    const position = await head(w);
    const created = [];
    for (let i = 0; i < 7; i++) created.push((await createContact(w)).id);
    const events = await feed(w, 'type=contact.created', position);
    assert.deepEqual(
      events.map((e) => e.resource_id),
      created,
    );
  });

  test('takes no query parameters: any one is 400, not silently ignored', async () => {
    const w = await fresh();
    for (const query of ['foo=1', 'resource_type=contact', 'after=evt_1_1']) {
      const r = await get(w, `/v2/events/head?${query}`);
      assert.equal(r.status, 400, `${query}: ${r.text}`);
      assert.equal(r.json.error.code, 'invalid_query_parameter');
    }
  });

  test('needs events:read like the feed itself', async () => {
    const w = await fresh();
    const contactsOnly = await w.newKey(['contacts:read']);
    const r = await server.request('GET', '/v2/events/head', { key: contactsOnly.key });
    assert.equal(r.status, 403);
    assert.equal(r.json.error.code, 'insufficient_scope');
    assert.equal((await server.request('GET', '/v2/events/head')).status, 401);
  });
});

describe('410 events_expired: no silent gap after retention', () => {
  test('after= a position retention has passed is 410 with the error object; the head is fine again', async () => {
    const w = await fresh();
    const first = await createContact(w);
    const events = await feed(w, 'type=contact.created');
    const old = events.find((e) => e.resource_id === first.id)!.id as string;
    await createContact(w);
    await expireEvents(server, w.id);
    await createContact(w); // an event retention has not touched

    const r = await get(w, `/v2/events?after=${old}`);
    assert.equal(r.status, 410, r.text);
    assert.equal(r.json.error.type, 'invalid_request');
    assert.equal(r.json.error.code, 'events_expired');
    assert.equal(r.json.error.details.parameter, 'after');
    assert.match(r.json.error.message, /resynchronize/);
    assert.equal(r.json.error.request_id, r.headers.get('x-request-id'));
    // The documented way out: a new head.
    assert.equal((await get(w, `/v2/events?after=${await head(w)}`)).status, 200);
  });

  test('a cursor whose position retention has passed is 410 too', async () => {
    const w = await fresh();
    for (let i = 0; i < 3; i++) await createContact(w);
    const page = await get(w, '/v2/events?limit=1&type=contact.created');
    assert.equal(page.status, 200);
    const cursor = page.json.page.next_cursor as string;
    assert.ok(cursor);
    await expireEvents(server, w.id);
    const r = await get(w, `/v2/events?limit=1&type=contact.created&cursor=${encodeURIComponent(cursor)}`);
    assert.equal(r.status, 410, r.text);
    assert.equal(r.json.error.code, 'events_expired');
    assert.equal(r.json.error.details.parameter, 'cursor');
  });

  test('a position ahead of the feed (from another store, e.g. before a restore) is 410, not a silent wait', async () => {
    const w = await fresh();
    await createContact(w);
    const [stamp] = eventPosition(server, w.id, await head(w));
    for (const ahead of [eventIdAt(server, w.id, stamp + 1n, 0n), eventIdAt(server, w.id, 2n ** 48n - 1n, 0n)]) {
      const r = await get(w, `/v2/events?after=${ahead}`);
      assert.equal(r.status, 410, `${ahead}: ${r.text}`);
      assert.equal(r.json.error.code, 'events_expired');
      assert.match(r.json.error.message, /ahead of the end of the feed/);
    }
    // The head itself, and positions before it, are fine.
    assert.equal((await get(w, `/v2/events?after=${await head(w)}`)).status, 200);
    assert.equal((await get(w, `/v2/events?after=${eventIdAt(server, w.id, 1n, 1n)}`)).status, 200);
  });

  test('a position at or after the last event purged is not expired; other workspaces are untouched', async () => {
    const w = await fresh();
    const other = await fresh();
    await createContact(other);
    const otherEvents = await feed(other, '');
    await createContact(w);
    const all = await feed(w, '');
    const last = all.at(-1).id as string;
    await expireEvents(server, w.id);
    // Everything up to `last` was purged: resuming right after it misses nothing.
    const r = await get(w, `/v2/events?after=${last}`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data, []);
    // The other workspace's feed and positions are unaffected.
    assert.equal((await get(other, `/v2/events?after=${otherEvents[0].id}`)).status, 200);
    assert.deepEqual(await feed(other, ''), otherEvents);
  });

  test('a reader is told 410 only for events of the types it reads: a purge of others is none of its business', async () => {
    const w = await fresh();
    const contactsOnly = (await w.newKey(['events:read', 'contacts:read'], { rateLimitPerMinute: 1_000_000 })).key;
    const all = await head(w);
    const position = (await server.request('GET', '/v2/events/head', { key: contactsOnly })).json.data
      .position as string;
    // A catalog item is created, then only its event ages past retention and is purged.
    await server.db.query(`INSERT INTO catalog_items (workspace_id, kind, name) VALUES ($1, 'product', 'Gone')`, [
      w.id,
    ]);
    await expireEvents(server, w.id, 'catalog_item');
    const asContacts = await server.request('GET', `/v2/events?after=${position}`, { key: contactsOnly });
    assert.equal(asContacts.status, 200, asContacts.text);
    for (const query of [`after=${all}`, `after=${all}&resource_type=catalog_item`]) {
      const r = await get(w, `/v2/events?${query}`);
      assert.equal(r.status, 410, `${query}: ${r.text}`);
    }
    assert.equal((await get(w, `/v2/events?after=${all}&resource_type=contact`)).status, 200);
  });

  test('without after= or a cursor the feed starts at what retention kept', async () => {
    const w = await fresh();
    await createContact(w);
    await expireEvents(server, w.id);
    const kept = await createContact(w);
    const events = await feed(w, '');
    assert.deepEqual(
      events.map((e) => e.resource_id),
      [kept.id],
    );
  });
});

describe('resource_type takes several values', () => {
  test('contact,appointment gives exactly the events of both, in feed order', async () => {
    const w = await fresh();
    const start = await head(w);
    await ownerCommands.seed(server.owner, {
      workspaceId: w.id,
      amounts: { contacts: 4, appointments: 3, catalogItems: 2, automations: 1 },
    });
    const all = await feed(w, '', start);
    const both = await feed(w, 'resource_type=contact,appointment', start);
    const expected = all.filter((e) => e.resource_type === 'contact' || e.resource_type === 'appointment');
    assert.ok(expected.some((e) => e.resource_type === 'appointment'));
    assert.ok(all.length > expected.length, 'the other types are left out');
    assert.deepEqual(both, expected);
    // One value still works, and order does not matter.
    assert.deepEqual(await feed(w, 'resource_type=appointment,contact', start), expected);
    assert.deepEqual(
      await feed(w, 'resource_type=catalog_item', start),
      all.filter((e) => e.resource_type === 'catalog_item'),
    );
  });

  test('a cursor is bound to its set of resource types (not their order); unknown or empty values are 400', async () => {
    const w = await fresh();
    for (let i = 0; i < 3; i++) await createContact(w);
    const first = await get(w, '/v2/events?limit=1&resource_type=contact,appointment');
    const cursor = encodeURIComponent(first.json.page.next_cursor as string);
    const other = await get(w, `/v2/events?limit=1&resource_type=contact&cursor=${cursor}`);
    assert.equal(other.status, 400);
    assert.equal(other.json.error.code, 'invalid_cursor');
    for (const same of ['appointment,contact', 'contact,appointment,contact']) {
      const r = await get(w, `/v2/events?limit=1&resource_type=${same}&cursor=${cursor}`);
      assert.equal(r.status, 200, `${same}: ${r.text}`);
    }
    for (const bad of [
      'contact,',
      ',contact',
      'contact,,appointment',
      'contact,deal',
      'CONTACT',
      'contact appointment',
    ]) {
      const r = await get(w, `/v2/events?resource_type=${encodeURIComponent(bad)}`);
      assert.equal(r.status, 400, `resource_type=${bad}: ${r.text}`);
      assert.equal(r.json.error.code, 'invalid_query_parameter');
    }
    // Event types name known resource types too: a typo is an error, not an empty feed.
    for (const bad of ['deal.created', 'contact.created,contcat.deleted']) {
      const r = await get(w, `/v2/events?type=${encodeURIComponent(bad)}`);
      assert.equal(r.status, 400, `type=${bad}: ${r.text}`);
    }
  });
});

describe('the messages of refused feed parameters state the rule', () => {
  test('an empty value is refused with the rule it breaks, naming the parameter', async () => {
    const w = await fresh();
    const expected: Record<string, RegExp> = {
      after: /^after must be at most 45 characters matching /,
      resource_type: /^resource_type must be at most 200 characters matching /,
      resource_id: /^resource_id must be 1 to 128 characters\.$/,
      cursor: /^cursor must be 1 to \d+ characters/,
    };
    for (const [name, rule] of Object.entries(expected)) {
      const r = await get(w, `/v2/events?${name}=`);
      assert.equal(r.status, 400, `${name}=: ${r.text}`);
      assert.equal(r.json.error.code, 'invalid_query_parameter');
      assert.equal(r.json.error.details.parameter, name);
      assert.match(r.json.error.message, rule, name);
    }
  });
});

describe('contact tombstones carry the external_id', () => {
  test('deleted by the owner: data is {id, external_id}; without an external id, external_id is null', async () => {
    const w = await fresh();
    const keyed = await createContact(w, 'hubspot/4711');
    const plain = await createContact(w);
    const start = await head(w);
    await ownerCommands.deleteContact(server.owner, { contactId: keyed.id });
    await ownerCommands.deleteContact(server.owner, { contactId: plain.id });
    const deleted = await feed(w, 'type=contact.deleted', start);
    assert.deepEqual(
      deleted.map((e) => e.data),
      [
        { id: keyed.id, external_id: 'hubspot/4711' },
        { id: plain.id, external_id: null },
      ],
    );
  });
});
