// The feed's pages are spliced from the JSON the store writes for each event (db/code/04_events_feed.sql)
// instead of being serialized on every read. Checked here, through HTTP into the real store: the
// store's lists of public properties are the API schemas'; a page is byte for byte what the
// route's schema serializer (Page of Event) writes for the same values, odd characters included;
// data the store holds beyond the public properties never reaches the page; and an erasure
// rewrites the event's text with its data.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Appointment } from '../src/modules/appointments/appointments.schemas.js';
import { Automation } from '../src/modules/automations/automations.schemas.js';
import { CatalogItem } from '../src/modules/catalog/catalog.schemas.js';
import { Contact } from '../src/modules/contacts/contacts.schemas.js';
import { Conversation, Message } from '../src/modules/conversations/conversations.schemas.js';
import { Event } from '../src/modules/events/events.schemas.js';
import { RESOURCE_TYPES, RESOURCES, type ResourceType } from '../src/modules/resources.js';
import { PipelineStage } from '../src/modules/pipeline/pipeline.schemas.js';
import { Workspace } from '../src/modules/workspaces/workspaces.schemas.js';
import { Page } from '../src/shared/schemas.js';
import { ODD, schemaText } from './schema-text.js';
import { feedServer, fresh, INTERNAL, useFeedServer } from './events-support.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, idem } from './harness.js';
import { SAMPLE_ID, SAMPLE_TIME, sampleOf } from './samples.js';

useFeedServer();

const SCHEMAS: Record<ResourceType, { properties: Record<string, unknown> }> = {
  workspace: Workspace,
  contact: Contact,
  pipeline_stage: PipelineStage,
  appointment: Appointment,
  catalog_item: CatalogItem,
  conversation: Conversation,
  message: Message,
  automation: Automation,
};

describe('events as the store writes them', () => {
  test("the store's public properties of every resource type are its schema's, in the same order", async () => {
    for (const type of RESOURCE_TYPES) {
      const { rows } = await feedServer().db.query<{ properties: string[] }>(
        'SELECT api_properties($1) AS properties',
        [type],
      );
      assert.deepEqual(rows[0]!.properties, Object.keys(SCHEMAS[type].properties), type);
    }
  });

  test("a row's text (a write's answer) is byte for byte the feed's text of its representation, for every type", async () => {
    for (const type of RESOURCE_TYPES) {
      const item = SCHEMAS[type] as Parameters<typeof sampleOf>[0];
      // Every property filled (strings odd, numbers with fractions), then every nullable one null.
      const filled = Object.fromEntries(
        Object.entries(sampleOf(item)).map(([name, value]) => {
          const schema = item.properties[name] as { type?: unknown; enum?: unknown; format?: unknown };
          const types = Array.isArray(schema.type) ? schema.type : [schema.type];
          if (schema.enum) return [name, value];
          if (schema.format === 'uuid') return [name, SAMPLE_ID];
          if (schema.format === 'date-time') return [name, SAMPLE_TIME];
          if (schema.format === 'int64') return [name, 9007199254740991];
          if (types.includes('string')) return [name, ODD];
          if (types.includes('number')) return [name, 1234.5678];
          if (types.includes('integer')) return [name, 42];
          if (types.includes('boolean')) return [name, false];
          return [name, value];
        }),
      );
      for (const row of [filled, sampleOf(item)]) {
        const { rows } = await feedServer().db.query<{ text: string; feed: string }>(
          `SELECT api_${type}_text(r) AS text, api_public_json($2, api_${type}_json(r)) AS feed
             FROM jsonb_populate_record(NULL::${RESOURCES[type].table}, $1::jsonb) r`,
          [JSON.stringify(row), type],
        );
        assert.equal(rows[0]!.text, rows[0]!.feed, type);
        assert.deepEqual(Object.keys(JSON.parse(rows[0]!.text) as object), Object.keys(item.properties), type);
      }
    }
  });

  test('a page is byte for byte what the Page(Event) serializer writes, odd characters included', async () => {
    const w = await fresh();
    const made = await feedServer().request('POST', '/v2/contacts', {
      key: w.key,
      idem: idem(),
      body: contactBody({ name: ODD, company_name: `${ODD} Ltda` }),
    });
    assert.equal(made.status, 201, made.text);
    // Changed in the product too (no request id), then erased: a tombstone with its external_id.
    await feedServer().db.query(`UPDATE contacts SET name = $2 || ' (edited)', external_id = 'crm-1' WHERE id = $1`, [
      made.json.data.id,
      ODD,
    ]);
    await feedServer().db.query('DELETE FROM contacts WHERE id = $1', [made.json.data.id]);
    const again = await feedServer().request('POST', '/v2/contacts', {
      key: w.key,
      idem: idem(),
      body: contactBody({ name: ODD }),
    });
    assert.equal(again.status, 201, again.text);

    for (const query of ['?limit=2', '?limit=100', '?resource_type=contact&limit=1']) {
      const page = await feedServer().request('GET', `/v2/events${query}`, { key: w.key });
      assert.equal(page.status, 200, page.text);
      assert.ok(page.json.data.length > 0, query);
      assert.equal(page.text, await schemaText(Page(Event), page.text), query);
    }
    const last = await feedServer().request('GET', `/v2/events?resource_id=${again.json.data.id}`, { key: w.key });
    const created = last.json.data[0];
    assert.equal(created.data.name, ODD);
    // The data is the text GET writes for the contact.
    const get = await feedServer().request('GET', `/v2/contacts/${again.json.data.id}`, { key: w.key });
    assert.ok(last.text.includes(`"data":${JSON.stringify(get.json.data)}}`), last.text);
  });

  test('data the store holds beyond the public properties never reaches the page', async () => {
    const w = await fresh();
    // Written around the representation functions, as a faulty writer could: keys of no schema,
    // the public ones in the store's own order.
    const data = {
      notes: INTERNAL,
      zeta: 1,
      name: 'Direct',
      id: 'c-direct',
      ai_memory: { m: INTERNAL },
      // Public names holding what no public property holds: left out too.
      email: { notes: INTERNAL },
      phone: [INTERNAL],
    };
    await feedServer().db.query(
      `INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, data)
       VALUES ($1, 1, 'contact.updated', 'contact', 'c-direct', $2)`,
      [w.id, JSON.stringify(data)],
    );
    // What such a writer stored is no documented event (its data is no contact), so the page is
    // read around the harness's check against the documents: what matters here is what it leaves out.
    const page = await fetch(`${feedServer().baseUrl}/v2/events?resource_id=c-direct`, {
      headers: { authorization: `Bearer ${w.key}` },
    });
    const text = await page.text();
    assert.equal(page.status, 200, text);
    assert.ok(!text.includes(INTERNAL) && !text.includes('zeta'), text);
    assert.ok(text.includes('"data":{"id":"c-direct","name":"Direct"}'), text);
  });

  test('a session that skips triggers (session_replication_role = replica) still gets the text, and cannot set it', async () => {
    const w = await fresh();
    await feedServer().db.transaction(async (tx) => {
      await tx.query('SET LOCAL session_replication_role = replica');
      await tx.query(
        `INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, data, feed_json)
         VALUES ($1, 1, 'contact.updated', 'contact', 'c-replica', $2, $3)`,
        [w.id, JSON.stringify({ id: 'c-replica', name: 'Bulk', notes: INTERNAL }), `{"notes":"${INTERNAL}"}`],
      );
    });
    // No documented event either (see above): read around the harness's check.
    const page = await fetch(`${feedServer().baseUrl}/v2/events?resource_id=c-replica`, {
      headers: { authorization: `Bearer ${w.key}` },
    });
    const text = await page.text();
    assert.equal(page.status, 200, text);
    assert.ok(!text.includes(INTERNAL), text);
    assert.ok(text.includes('"data":{"id":"c-replica","name":"Bulk"}'), text);
  });

  test("the text the feed's triggers write with an event is the one its data gives, for every type and change", async () => {
    const w = await fresh();
    await ownerCommands.seed(feedServer().owner, {
      workspaceId: w.id,
      amounts: { contacts: 4, appointments: 3, catalogItems: 3, conversations: 2, automations: 2 },
      internalMarker: INTERNAL,
    });
    const db = feedServer().db;
    await db.query(`UPDATE workspaces SET name = $2 WHERE id = $1`, [w.id, ODD]);
    for (const table of ['contacts', 'catalog_items', 'automations', 'pipeline_stages']) {
      await db.query(`UPDATE ${table} SET name = $2 || name WHERE workspace_id = $1`, [w.id, '"\\\u2028é ']);
    }
    await db.query(`UPDATE appointments SET status = 'cancelled' WHERE workspace_id = $1`, [w.id]);
    await db.query(`UPDATE messages SET text = $2 WHERE workspace_id = $1`, [w.id, ODD]);
    await db.query(`UPDATE conversations SET status = 'closed' WHERE workspace_id = $1`, [w.id]);
    // A message alone, then contacts with conversations: their conversations and messages go first.
    await db.query(`DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE workspace_id = $1 LIMIT 1)`, [
      w.id,
    ]);
    await db.query(
      `DELETE FROM contacts WHERE id IN (SELECT contact_id FROM conversations WHERE workspace_id = $1 LIMIT 2)`,
      [w.id],
    );
    await db.query(`DELETE FROM catalog_items WHERE workspace_id = $1`, [w.id]);
    await db.query(`DELETE FROM automations WHERE workspace_id = $1`, [w.id]);
    await db.query(`DELETE FROM appointments WHERE workspace_id = $1`, [w.id]);
    const { rows } = await db.query<{ type: string; same: boolean }>(
      `SELECT type, feed_json = event_feed_json(type, resource_type, resource_id, occurred_at, request_id,
                                                api_public_json(resource_type, data)) AS same
         FROM events WHERE workspace_id = $1`,
      [w.id],
    );
    const types = new Set(rows.map((r) => r.type));
    for (const type of RESOURCE_TYPES) {
      for (const change of type === 'workspace' ? ['created', 'updated'] : ['created', 'updated', 'deleted']) {
        if (type === 'pipeline_stage' && change === 'deleted') continue; // the stages are the contacts' statuses
        assert.ok(types.has(`${type}.${change}`), `${type}.${change} among ${[...types].join(', ')}`);
      }
    }
    assert.deepEqual(
      rows.filter((r) => !r.same),
      [],
    );
  });

  test('an erasure rewrites the text of every earlier event of the resource', async () => {
    const w = await fresh();
    const made = await feedServer().request('POST', '/v2/contacts', {
      key: w.key,
      idem: idem(),
      body: contactBody({ name: 'Erasable Person' }),
    });
    assert.equal(made.status, 201, made.text);
    const id = made.json.data.id as string;
    await feedServer().db.query(`UPDATE contacts SET external_id = 'erase-1' WHERE id = $1`, [id]);
    await feedServer().db.query('DELETE FROM contacts WHERE id = $1', [id]);
    const { rows } = await feedServer().db.query<{ feed_json: string }>(
      'SELECT feed_json FROM events WHERE workspace_id = $1 AND resource_id = $2',
      [w.id, id],
    );
    assert.equal(rows.length, 3);
    for (const r of rows) {
      assert.ok(!r.feed_json.includes('Erasable'), r.feed_json);
      assert.ok(r.feed_json.endsWith(`"data":{"id":"${id}","external_id":"erase-1"}}`), r.feed_json);
    }
  });
});
