// Internal edits are invisible to sync (no updated_at move, no event), and events carry exactly the
// public representation, never the marker the seed wrote into every internal column.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { idem, sleep } from './harness.js';
import {
  A,
  countWhere,
  crawlList,
  hit,
  marker,
  seen,
  server,
  useSeededWorkspaces,
  waitForEvent,
} from './internal-data-support.js';

useSeededWorkspaces();

// ------------------------------------------------------------------------------------------ internal edits

describe('internal edits are not changes', () => {
  interface Case {
    resourceType: string;
    table: string;
    /** SET clause; $3 is the new internal text */
    set: string;
    /** the API representation of row `id` (its text) */
    read: (id: string) => Promise<string>;
  }
  const findIn = async (path: string, id: string) => {
    const items = await crawlList(path);
    const item = items.find((i) => i.id === id);
    assert.ok(item, `${id} in ${path}`);
    return JSON.stringify(item);
  };
  const readGet = (base: string) => async (id: string) => {
    const r = await hit('GET', `${base}/${id}`);
    assert.equal(r.status, 200);
    return r.text;
  };
  const CASES: Case[] = [
    {
      resourceType: 'contact',
      table: 'contacts',
      set: `notes = 'edited ' || $3, ai_memory = jsonb_build_object('summary', $3::text)`,
      read: readGet('/v2/contacts'),
    },
    {
      resourceType: 'appointment',
      table: 'appointments',
      set: `internal_notes = 'edited ' || $3`,
      read: readGet('/v2/appointments'),
    },
    {
      resourceType: 'catalog_item',
      table: 'catalog_items',
      set: `private_notes = 'edited ' || $3, internal_metadata = jsonb_build_object('x', $3::text)`,
      read: readGet('/v2/catalog/items'),
    },
    {
      resourceType: 'conversation',
      table: 'conversations',
      set: `provider_payload = jsonb_build_object('edited', $3::text), provider = 'p ' || $3,
            provider_conversation_id = 'c ' || $3, private_url = 'https://x.example/' || $3`,
      read: (id) => findIn('/v2/conversations', id),
    },
    {
      resourceType: 'message',
      table: 'messages',
      set: `provider_payload = jsonb_build_object('edited', $3::text), provider_message_id = 'm ' || $3,
            media_private_url = 'https://x.example/' || $3`,
      read: async (id) => {
        const { rows } = await server.db.query<{ contact_id: string }>(
          'SELECT contact_id FROM messages WHERE workspace_id = $1 AND id = $2',
          [A.id, id],
        );
        return findIn(`/v2/conversations/${rows[0]!.contact_id}/messages`, id);
      },
    },
    {
      resourceType: 'automation',
      table: 'automations',
      set: `rules = jsonb_build_object('r', $3::text), conditions = jsonb_build_array($3::text),
            actions = jsonb_build_array($3::text)`,
      read: readGet('/v2/automations'),
    },
    {
      resourceType: 'pipeline_stage',
      table: 'pipeline_stages',
      set: `internal_notes = 'edited ' || $3`,
      read: (id) => findIn('/v2/pipeline/stages', id),
    },
    {
      resourceType: 'workspace',
      table: 'workspaces',
      set: `billing_plan = 'edited ' || $3, billing_email = 'b@' || $3, internal_notes = 'edited ' || $3`,
      read: async () => (await hit('GET', '/v2/workspace')).text,
    },
  ];

  for (const c of CASES) {
    test(`${c.resourceType}: an SQL edit of internal columns only moves no updated_at, adds no event, changes no byte`, async () => {
      const owner = c.table === 'workspaces' ? 'id' : 'workspace_id';
      const { rows } = await server.db.query<{ id: string; updated_at: string }>(
        `SELECT id::text AS id, updated_at::text AS updated_at FROM ${c.table} WHERE ${owner} = $1 ORDER BY id LIMIT 1`,
        [A.id],
      );
      const { id, updated_at } = rows[0]!;
      const events = () =>
        countWhere('events WHERE workspace_id = $1 AND resource_type = $2 AND resource_id = $3', [
          A.id,
          c.resourceType,
          id,
        ]);
      const eventsBefore = await events();
      const textBefore = await c.read(id);
      await sleep(5);
      const edited = await server.db.query(`UPDATE ${c.table} SET ${c.set} WHERE ${owner} = $1 AND id::text = $2`, [
        A.id,
        id,
        marker,
      ]);
      assert.equal(edited.rowCount, 1);
      const after = await server.db.query<{ updated_at: string }>(
        `SELECT updated_at::text AS updated_at FROM ${c.table} WHERE ${owner} = $1 AND id::text = $2`,
        [A.id, id],
      );
      assert.equal(after.rows[0]!.updated_at, updated_at, 'updated_at did not move');
      assert.equal(await events(), eventsBefore, 'no event');
      const textAfter = await c.read(id);
      assert.equal(textAfter, textBefore);
      assert.ok(!textAfter.includes(marker));
    });
  }

  test('control: an SQL edit of a public column does move updated_at and add an event', async () => {
    const { rows } = await server.db.query<{ id: string; updated_at: string }>(
      `SELECT id::text AS id, updated_at::text AS updated_at FROM contacts WHERE workspace_id = $1 ORDER BY id LIMIT 1`,
      [A.id],
    );
    const { id, updated_at } = rows[0]!;
    const events = () =>
      countWhere(`events WHERE workspace_id = $1 AND resource_type = 'contact' AND resource_id = $2`, [A.id, id]);
    const before = await events();
    await sleep(5);
    await server.db.query(
      `UPDATE contacts SET origin = 'control-edit', notes = notes || '.' WHERE workspace_id = $1 AND id = $2`,
      [A.id, id],
    );
    const after = await server.db.query<{ updated_at: string }>(
      `SELECT updated_at::text AS updated_at FROM contacts WHERE workspace_id = $1 AND id = $2`,
      [A.id, id],
    );
    assert.notEqual(after.rows[0]!.updated_at, updated_at);
    assert.equal(await events(), before + 1);
    const event = (
      await waitForEvent(`?resource_type=contact&resource_id=${id}`, (e) => e.data.origin === 'control-edit')
    ).at(-1);
    const current = await hit('GET', `/v2/contacts/${id}`);
    assert.deepEqual(event.data, current.json.data);
    assert.ok(!JSON.stringify(event).includes(marker));
  });
});

// ------------------------------------------------------------------------------------------ events

describe('events carry the public representation only', () => {
  test('after a v2 PATCH, the contact.updated event data equals GET /v2/contacts/{id} data, property for property', async () => {
    const contact = (await crawlList('/v2/contacts'))[4];
    const patch = await hit('PATCH', `/v2/contacts/${contact.id}`, {
      key: A.key,
      body: { origin: `events-${randomUUID().slice(0, 8)}`, status: 'meeting' },
      idem: idem(),
    });
    assert.equal(patch.status, 200, patch.text);
    const requestId = patch.headers.get('x-request-id');
    const events = await waitForEvent(
      `?resource_type=contact&resource_id=${contact.id}`,
      (e) => e.request_id === requestId,
    );
    const event = events.find((e) => e.request_id === requestId);
    assert.equal(event.type, 'contact.updated');
    assert.equal(event.resource_id, contact.id);
    assert.equal(events.at(-1), event, 'it is the latest event of the contact');
    const got = await hit('GET', `/v2/contacts/${contact.id}`);
    assert.deepEqual(Object.keys(event.data).sort(), Object.keys(got.json.data).sort());
    assert.deepEqual(event.data, got.json.data);
    assert.deepEqual(event.data, patch.json.data);
  });

  test('the latest event of every resource equals what the API answers for it now', async () => {
    // The crawl changed a few contacts last; wait for the feed to show the newest change.
    const last = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE workspace_id = $1', [
      A.id,
    ]);
    const feed = await (async () => {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const f = await crawlList('/v2/events');
        if (f.length >= last.rows[0]!.n) return f;
        assert.ok(Date.now() < deadline, 'the feed catches up');
        await sleep(100);
      }
    })();
    const latest = new Map<string, any>();
    for (const e of feed) latest.set(`${e.resource_type}/${e.resource_id}`, e);
    const current = new Map<string, unknown>();
    const put = (type: string, items: any[]) => items.forEach((i) => current.set(`${type}/${i.id}`, i));
    put('contact', await crawlList('/v2/contacts'));
    put('appointment', await crawlList('/v2/appointments'));
    put('pipeline_stage', await crawlList('/v2/pipeline/stages'));
    put('catalog_item', await crawlList('/v2/catalog/items'));
    put('automation', await crawlList('/v2/automations'));
    const conversations = await crawlList('/v2/conversations');
    put('conversation', conversations);
    for (const contactId of new Set(conversations.map((c) => c.contact_id as string))) {
      put('message', await crawlList(`/v2/conversations/${contactId}/messages`));
    }
    put('workspace', [(await hit('GET', '/v2/workspace')).json.data]);
    let compared = 0;
    for (const [k, item] of current) {
      const event = latest.get(k);
      assert.ok(event, `an event for ${k}`);
      assert.deepEqual(event.data, item, k);
      compared++;
    }
    assert.ok(compared > 150);
    for (const e of feed) assert.ok(!JSON.stringify(e).includes(marker));
  });

  test('a deleted contact: contact.deleted (and its conversations and messages) with data {id} only (a contact: also external_id)', async () => {
    const conversation = (await crawlList('/v2/conversations'))[0];
    const contactId: string = conversation.contact_id;
    await ownerCommands.deleteContact(server.owner, { contactId });
    const events = await waitForEvent(
      `?type=contact.deleted,conversation.deleted,message.deleted`,
      (e) => e.type === 'contact.deleted' && e.resource_id === contactId,
    );
    const deleted = events.filter((e) => e.resource_id === contactId || e.resource_id === conversation.id);
    assert.ok(deleted.some((e) => e.type === 'conversation.deleted'));
    for (const e of events) {
      // Only the id, and for the contact its external_id (public, for mirrors keyed by it).
      const tombstone = e.type === 'contact.deleted' ? { id: e.resource_id, external_id: null } : { id: e.resource_id };
      assert.deepEqual(e.data, tombstone, e.type);
      assert.ok(!JSON.stringify(e).includes(marker));
    }
    assert.equal((await hit('GET', `/v2/contacts/${contactId}`)).status, 404);
    assert.equal((await hit('GET', `/v2/conversations/${contactId}/messages`)).status, 404);
    for (const s of seen.slice(-5)) assert.ok(!s.text.includes(marker));
  });
});
