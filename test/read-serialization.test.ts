// Lists and gets are written by their route's schema serializer, from rows read by a select list
// derived from the item schema (src/infra/representation.ts). Checked here through HTTP into the
// real store: every list and get of both versions, odd characters and nulls included, is the
// schema's text for its values; a list reads the item's properties only, and a row holding more
// is still answered as the item.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TSchema } from 'typebox';
import { listRows } from '../src/infra/keyset-list.js';
import { Appointment } from '../src/modules/appointments/appointments.schemas.js';
import { Automation } from '../src/modules/automations/automations.schemas.js';
import { catalogItemsSpec } from '../src/modules/catalog/catalog.repository.js';
import { CatalogItem } from '../src/modules/catalog/catalog.schemas.js';
import { Contact } from '../src/modules/contacts/contacts.schemas.js';
import { Conversation, Message } from '../src/modules/conversations/conversations.schemas.js';
import { PipelineStage } from '../src/modules/pipeline/pipeline.schemas.js';
import { Page, Single } from '../src/shared/schemas.js';
import { ODD, schemaText } from './schema-text.js';
import { contactBody, idem } from './harness.js';
import { A, contactWithMessages, get, server, useV2Workspaces } from './v2-support.js';

useV2Workspaces();

/** Each list and get; `odd`: a free-text property of one of its items holds ODD. */
const READS: { list: string; get?: string; item: TSchema; odd: boolean }[] = [
  { list: '/v1/contacts', get: '/v1/contacts', item: Contact, odd: true },
  { list: '/v2/contacts', get: '/v2/contacts', item: Contact, odd: true },
  { list: '/v1/appointments', get: '/v1/appointments', item: Appointment, odd: false },
  { list: '/v2/appointments', get: '/v2/appointments', item: Appointment, odd: false },
  { list: '/v2/pipeline/stages', item: PipelineStage, odd: true },
  { list: '/v2/catalog/items', get: '/v2/catalog/items', item: CatalogItem, odd: true },
  { list: '/v2/conversations', item: Conversation, odd: false },
  { list: 'messages', item: Message, odd: true },
  { list: '/v2/automations', get: '/v2/automations', item: Automation, odd: true },
];

describe('lists and gets written by their schema', () => {
  test('every list and get is byte for byte what its schema serializer writes, odd characters and nulls included', async () => {
    // Text with every kind of escape in each resource's free-text properties; the seed leaves
    // optional properties null here and there.
    const made = await server.request('POST', '/v2/contacts', {
      key: A.key,
      idem: idem(),
      body: contactBody({ name: ODD, company_name: `${ODD} Ltda`, phone: null }),
    });
    assert.equal(made.status, 201, made.text);
    for (const [table, column] of [
      ['catalog_items', 'name'],
      ['catalog_items', 'description'],
      ['automations', 'name'],
      ['pipeline_stages', 'name'],
    ] as const) {
      await server.db.query(
        `UPDATE ${table} SET ${column} = $2 WHERE workspace_id = $1 AND id = (SELECT id FROM ${table} WHERE workspace_id = $1 ORDER BY id LIMIT 1)`,
        [A.id, ODD],
      );
    }
    await server.db.query(
      `UPDATE messages SET text = $3 WHERE workspace_id = $1 AND id = (SELECT id FROM messages WHERE workspace_id = $1 AND contact_id = $2 ORDER BY id LIMIT 1)`,
      [A.id, contactWithMessages, ODD],
    );

    let nulls = 0;
    for (const read of READS) {
      const path = read.list === 'messages' ? `/v2/conversations/${contactWithMessages}/messages` : read.list;
      const pages = [await get(`${path}?limit=100`), await get(`${path}?limit=2`)];
      const next = pages[1]!.json.page?.next_cursor as string | null;
      if (next) pages.push(await get(`${path}?limit=2&cursor=${encodeURIComponent(next)}`));
      for (const page of pages) {
        assert.equal(page.status, 200, `${path}: ${page.text}`);
        assert.equal(page.headers.get('content-type'), 'application/json; charset=utf-8', path);
        assert.equal(page.text, await schemaText(Page(read.item), page.text), path);
      }
      const items = pages[0]!.json.data as Record<string, unknown>[];
      assert.ok(items.length > 0, `${path} has items`);
      if (read.odd)
        assert.ok(
          items.some((i) => Object.values(i).includes(ODD)),
          `${path} holds the odd text`,
        );
      nulls += items.filter((i) => Object.values(i).includes(null)).length;
      if (read.get) {
        for (const item of items.slice(0, 3)) {
          const one = await get(`${read.get}/${String(item.id)}`);
          assert.equal(one.status, 200, one.text);
          assert.equal(one.headers.get('content-type'), 'application/json; charset=utf-8', read.get);
          assert.equal(one.text, await schemaText(Single(read.item), one.text), read.get);
          assert.deepEqual(one.json.data, item, read.get);
        }
      }
    }
    assert.ok(nulls > 0, 'some items have null properties');
  });

  test("a list reads the item's properties and nothing else, and answers nothing else when a row holds more", async () => {
    await server.db.query(
      `UPDATE catalog_items SET private_notes = 'NOTE-MARKER', internal_metadata = '{"m": 1}' WHERE workspace_id = $1`,
      [A.id],
    );
    const rows = await listRows<Record<string, unknown>>(server.db, catalogItemsSpec, A.id, {}, null, 100);
    assert.ok(rows.length > 0);
    for (const row of rows) assert.deepEqual(Object.keys(row), Object.keys(CatalogItem.properties));
    // A row that holds more than the item (a select list widened by mistake) is written as the item.
    const text = await schemaText(
      Page(CatalogItem),
      JSON.stringify({
        data: rows.map((row) => ({ private_notes: 'NOTE-MARKER', ...row, internal_metadata: { m: 1 } })),
        page: { limit: 100, has_more: false, next_cursor: null },
      }),
    );
    assert.ok(!text.includes('NOTE-MARKER') && !text.includes('internal_metadata'), text);
    const page = await get('/v2/catalog/items?limit=100');
    assert.equal(page.status, 200, page.text);
    assert.ok(!page.text.includes('NOTE-MARKER'), page.text);
  });
});
