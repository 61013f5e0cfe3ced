// The events feed (GET /v2/events), what becomes an event: with which data, whoever the writer is
// (the API, the owner commands, plain SQL); what does not (no-op updates, replays, internal
// columns, rollbacks); the order inside a transaction and of a deletion; and no writer can bypass
// the feed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, type TestResponse } from './harness.js';
import {
  compareIds,
  createContact,
  eventCount,
  feed,
  feedServer,
  fresh,
  get,
  INTERNAL,
  mark,
  position,
  publicView,
  since,
  sqlContact,
  storedData,
  tagTransaction,
  useFeedServer,
} from './events-support.js';

useFeedServer();

// ------------------------------------------------------------------------------------------ API writes

describe('events of writes through the API', () => {
  test('POST, PATCH and PUT give contact.created / contact.updated with the response data and x-request-id', async () => {
    const w = await fresh();
    const start = await mark(w);
    const created = await createContact(w);
    assert.equal(created.status, 201);
    const patched = await feedServer().request('PATCH', `/v2/contacts/${created.json.data.id}`, {
      key: w.key,
      body: { status: 'qualified_conversation', name: 'Renamed' },
      idem: idem(),
    });
    assert.equal(patched.status, 200);
    const upserted = await feedServer().request('PUT', '/v2/contacts/external/crm-1', {
      key: w.key,
      body: contactBody({ name: 'By external id' }),
      idem: idem(),
    });
    assert.equal(upserted.status, 201);
    const reUpserted = await feedServer().request('PUT', '/v1/contacts/external/crm-1', {
      key: w.key,
      body: { status: 'lost' },
      idem: idem(),
    });
    assert.equal(reUpserted.status, 200);

    const events = await since(w, start);
    const expected: [string, TestResponse][] = [
      ['contact.created', created],
      ['contact.updated', patched],
      ['contact.created', upserted],
      ['contact.updated', reUpserted],
    ];
    assert.deepEqual(
      events.map((e) => e.type),
      expected.map(([t]) => t),
    );
    expected.forEach(([type, res], i) => {
      const e = events[i];
      const requestId = res.headers.get('x-request-id');
      assert.match(requestId ?? '', /^req_/);
      assert.equal(e.type, type);
      assert.equal(e.resource_type, 'contact');
      assert.equal(e.resource_id, res.json.data.id);
      assert.deepEqual(e.data, res.json.data, type);
      assert.equal(e.request_id, requestId, type);
    });
    // four writes, four transactions
    assert.equal(new Set(events.map((e) => position(e.id)[0])).size, 4);
  });

  test('a PATCH or PUT that changes nothing, and replayed idempotent requests, add no event', async () => {
    const w = await fresh();
    const postKey = idem();
    const body = contactBody({ name: 'Same' });
    const created = await feedServer().request('POST', '/v2/contacts', { key: w.key, body, idem: postKey });
    assert.equal(created.status, 201);
    const id = created.json.data.id;
    const patchKey = idem();
    const patched = await feedServer().request('PATCH', `/v2/contacts/${id}`, {
      key: w.key,
      body: { status: 'meeting' },
      idem: patchKey,
    });
    assert.equal(patched.status, 200);
    const upserted = await feedServer().request('PUT', '/v2/contacts/external/same-1', {
      key: w.key,
      body: { name: 'Ext', email: 'ext.same@example.com' },
      idem: idem(),
    });
    assert.equal(upserted.status, 201);
    const start = await mark(w);
    const stored = await eventCount(w);

    const noop = await feedServer().request('PATCH', `/v2/contacts/${id}`, {
      key: w.key,
      body: { name: 'Same', status: 'meeting' },
      idem: idem(),
    });
    assert.equal(noop.status, 200);
    assert.equal(noop.json.data.updated_at, patched.json.data.updated_at);
    const noopPut = await feedServer().request('PUT', '/v2/contacts/external/same-1', {
      key: w.key,
      body: { name: 'Ext' },
      idem: idem(),
    });
    assert.equal(noopPut.status, 200);
    assert.equal(noopPut.json.data.updated_at, upserted.json.data.updated_at);
    const replayPost = await feedServer().request('POST', '/v2/contacts', { key: w.key, body, idem: postKey });
    assert.equal(replayPost.status, 201);
    assert.equal(replayPost.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replayPost.json, created.json);
    const replayPatch = await feedServer().request('PATCH', `/v2/contacts/${id}`, {
      key: w.key,
      body: { status: 'meeting' },
      idem: patchKey,
    });
    assert.equal(replayPatch.status, 200);
    assert.equal(replayPatch.headers.get('idempotent-replayed'), 'true');

    assert.deepEqual(await since(w, start), []);
    assert.equal(await eventCount(w), stored);
  });
});

// ------------------------------------------------------------------------------------------ other writers

describe('events of writes made outside the API', () => {
  test('ownerCommands.deleteContact: contact.deleted {id, external_id}, its conversations and messages deleted, its appointments updated', async () => {
    const w = await fresh();
    const contact = (await createContact(w)).json.data;
    const other = (await createContact(w)).json.data;
    const conversations = (
      await feedServer().db.query<{ id: string }>(
        `INSERT INTO conversations (workspace_id, contact_id, channel, provider_payload)
         VALUES ($1, $2, 'whatsapp', '{"raw": 1}'), ($1, $2, 'email', NULL), ($1, $3, 'sms', NULL) RETURNING id`,
        [w.id, contact.id, other.id],
      )
    ).rows.map((r) => r.id);
    const inserted = (
      await feedServer().db.query<{ id: string; conversation_id: string }>(
        `INSERT INTO messages (workspace_id, conversation_id, contact_id, direction, text)
         SELECT $1, c, $2, 'inbound', 'hello ' || g FROM unnest($3::uuid[]) AS c, generate_series(1, 2) AS g
         RETURNING id, conversation_id`,
        [w.id, contact.id, conversations.slice(0, 2)],
      )
    ).rows;
    const messages = inserted.map((r) => r.id);
    const messagesOf = new Map(inserted.map((r) => [r.id, r.conversation_id]));
    const otherMessage = (
      await feedServer().db.query<{ id: string }>(
        `INSERT INTO messages (workspace_id, conversation_id, contact_id, direction, text)
         VALUES ($1, $2, $3, 'outbound', 'kept') RETURNING id`,
        [w.id, conversations[2], other.id],
      )
    ).rows[0]!.id;
    const appointments = (
      await feedServer().db.query<{ id: string }>(
        `INSERT INTO appointments (workspace_id, contact_id, starts_at, timezone)
         VALUES ($1, $2, now() + interval '1 day', 'UTC'), ($1, $2, NULL, 'UTC'), ($1, $3, NULL, 'UTC')
         RETURNING id`,
        [w.id, contact.id, other.id],
      )
    ).rows.map((r) => r.id);
    const start = await mark(w);

    await ownerCommands.deleteContact(feedServer().owner, { contactId: contact.id });

    const events = await since(w, start);
    const byType = (type: string) => events.filter((e) => e.type === type);
    assert.deepEqual(
      byType('contact.deleted').map((e) => [e.resource_id, e.data]),
      [[contact.id, { id: contact.id, external_id: null }]],
    );
    assert.deepEqual(
      byType('conversation.deleted')
        .map((e) => e.resource_id)
        .sort(),
      conversations.slice(0, 2).sort(),
    );
    assert.deepEqual(
      byType('message.deleted')
        .map((e) => e.resource_id)
        .sort(),
      [...messages].sort(),
    );
    for (const e of [...byType('conversation.deleted'), ...byType('message.deleted')])
      assert.deepEqual(e.data, { id: e.resource_id });
    const apptEvents = byType('appointment.updated');
    assert.deepEqual(apptEvents.map((e) => e.resource_id).sort(), appointments.slice(0, 2).sort());
    for (const e of apptEvents) {
      assert.equal(e.data.contact_id, null);
      assert.deepEqual(e.data, await publicView(w, 'appointment', e.resource_id));
    }
    assert.equal(events.length, 1 + 2 + 4 + 2, events.map((e) => e.type).join());
    // Children first, as a mirror with the same foreign keys must apply them: each conversation's
    // messages before it, the conversations and the detached appointments before the contact.
    assert.equal(events.at(-1).type, 'contact.deleted');
    for (const conversation of conversations.slice(0, 2)) {
      const index = events.findIndex((e) => e.type === 'conversation.deleted' && e.resource_id === conversation);
      assert.ok(index > 0);
      const messageIndexes = events
        .map((e, i) => (e.type === 'message.deleted' && messagesOf.get(e.resource_id) === conversation ? i : -1))
        .filter((i) => i >= 0);
      assert.equal(messageIndexes.length, 2);
      for (const i of messageIndexes) assert.ok(i < index, `a message of ${conversation} after it`);
    }
    for (const e of byType('appointment.updated')) assert.ok(events.indexOf(e) < events.length - 1);
    for (const e of events) assert.equal(e.request_id, null, e.type);
    // one statement, one transaction
    assert.equal(new Set(events.map((e) => position(e.id)[0])).size, 1);
    // the other contact's things are untouched
    const touched = new Set(events.map((e) => e.resource_id));
    for (const id of [other.id, conversations[2]!, otherMessage, appointments[2]!]) assert.ok(!touched.has(id), id);

    // and the appointment command: appointment.deleted {id}
    const beforeDelete = await mark(w);
    await ownerCommands.deleteAppointment(feedServer().owner, { appointmentId: appointments[0]! });
    const deleted = await since(w, beforeDelete);
    assert.deepEqual(
      deleted.map((e) => [e.type, e.resource_id, e.data, e.request_id]),
      [['appointment.deleted', appointments[0], { id: appointments[0] }, null]],
    );
  });

  test('workspace creation: workspace.created, then its pipeline stages, in one transaction', async () => {
    const w = await fresh();
    const events = await feed(w);
    assert.equal(events[0].type, 'workspace.created');
    assert.equal(events[0].resource_id, w.id);
    assert.equal(events[0].request_id, null);
    const ws = await publicView(w, 'workspace', w.id);
    assert.deepEqual(Object.keys(events[0].data).sort(), Object.keys(ws).sort());
    const stages = events.slice(1);
    assert.equal(stages.length, 10);
    const listed = await get(w, '/v2/pipeline/stages?limit=100');
    for (const e of stages) {
      assert.equal(e.type, 'pipeline_stage.created');
      const stage = listed.json.data.find((s: { id: string }) => s.id === e.resource_id);
      assert.deepEqual(e.data, stage);
    }
    assert.equal(new Set(events.map((e) => position(e.id)[0])).size, 1);
  });

  test('SQL INSERT / UPDATE / DELETE on every resource give <resource>.<created|updated|deleted> with the public data only', async () => {
    const w = await fresh();
    const owner = await sqlContact(w, 'Owner of threads');
    let last = await mark(w);

    /** Runs one SQL change and checks it gave exactly one event, equal to what GET answers now. */
    const expectOne = async (
      sql: string,
      params: unknown[],
      type: string,
      lookup: { id?: string; contactId?: string } = {},
    ): Promise<string> => {
      const { rows } = await feedServer().db.query<{ id: string }>(sql, params);
      const id = lookup.id ?? rows[0]!.id;
      const events = await since(w, last);
      assert.equal(events.length, 1, `${type}: ${events.map((e) => e.type).join()}`);
      const e = events[0];
      last = e.id;
      assert.equal(e.type, type);
      const resourceType = type.split('.')[0]!;
      assert.equal(e.resource_type, resourceType);
      assert.equal(e.resource_id, id);
      assert.equal(e.request_id, null);
      const raw = await storedData(w, e.id);
      assert.ok(!JSON.stringify(raw).includes(INTERNAL), `${type} stored internal data: ${JSON.stringify(raw)}`);
      if (type.endsWith('.deleted')) {
        // A contact's tombstone also names its external_id, for mirrors keyed by it.
        const tombstone = type === 'contact.deleted' ? { id, external_id: null } : { id };
        assert.deepEqual(e.data, tombstone);
        assert.deepEqual(raw, tombstone);
      } else {
        const view = await publicView(w, resourceType, id, lookup.contactId);
        // The same properties in the same order as GET writes them (clients that hash or diff the
        // text see no difference).
        assert.deepEqual(Object.keys(e.data), Object.keys(view), type);
        assert.deepEqual(Object.keys(raw).sort(), Object.keys(view).sort(), `${type} (as stored)`);
        assert.deepEqual(e.data, view, type);
      }
      return id;
    };

    // contacts
    const contact = await expectOne(
      `INSERT INTO contacts (workspace_id, name, email, status, notes, ai_memory)
       VALUES ($1, 'Via SQL', 'via.sql@example.com', 'talking', $2, jsonb_build_object('m', $2::text)) RETURNING id`,
      [w.id, INTERNAL],
      'contact.created',
    );
    await expectOne(
      `UPDATE contacts SET status = 'lost', notes = $3 WHERE workspace_id = $1 AND id = $2 RETURNING id`,
      [w.id, contact, `${INTERNAL} again`],
      'contact.updated',
    );
    await expectOne(
      'DELETE FROM contacts WHERE workspace_id = $1 AND id = $2 RETURNING id',
      [w.id, contact],
      'contact.deleted',
    );

    // appointments
    const appt = await expectOne(
      `INSERT INTO appointments (workspace_id, contact_id, starts_at, ends_at, timezone, status, source, internal_notes)
       VALUES ($1, $2, now() + interval '2 days', now() + interval '2 days 30 minutes', 'America/Sao_Paulo',
               'confirmed', 'phone', $3) RETURNING id`,
      [w.id, owner, INTERNAL],
      'appointment.created',
    );
    await expectOne(
      `UPDATE appointments SET status = 'cancelled' WHERE workspace_id = $1 AND id = $2 RETURNING id`,
      [w.id, appt],
      'appointment.updated',
    );
    await expectOne(
      'DELETE FROM appointments WHERE workspace_id = $1 AND id = $2 RETURNING id',
      [w.id, appt],
      'appointment.deleted',
    );

    // catalog items
    const item = await expectOne(
      `INSERT INTO catalog_items (workspace_id, kind, name, description, price_amount, currency, duration_minutes,
                                  private_notes, internal_metadata)
       VALUES ($1, 'service', 'Consultation', 'First visit', 15000, 'BRL', 45, $2, jsonb_build_object('x', $2::text))
       RETURNING id`,
      [w.id, INTERNAL],
      'catalog_item.created',
    );
    await expectOne(
      `UPDATE catalog_items SET price_amount = 17500, active = false WHERE workspace_id = $1 AND id = $2 RETURNING id`,
      [w.id, item],
      'catalog_item.updated',
    );
    await expectOne(
      'DELETE FROM catalog_items WHERE workspace_id = $1 AND id = $2 RETURNING id',
      [w.id, item],
      'catalog_item.deleted',
    );

    // conversations
    const conversation = await expectOne(
      `INSERT INTO conversations (workspace_id, contact_id, channel, provider, provider_conversation_id,
                                  provider_payload, private_url)
       VALUES ($1, $2, 'whatsapp', $3, $3, jsonb_build_object('raw', $3::text), 'https://x.internal/' || $3)
       RETURNING id`,
      [w.id, owner, INTERNAL],
      'conversation.created',
      { contactId: owner },
    );
    await expectOne(
      `UPDATE conversations SET status = 'closed', last_message_at = now() WHERE workspace_id = $1 AND id = $2
       RETURNING id`,
      [w.id, conversation],
      'conversation.updated',
      { contactId: owner },
    );

    // messages
    const message = await expectOne(
      `INSERT INTO messages (workspace_id, conversation_id, contact_id, direction, kind, text, sent_at,
                             provider_message_id, provider_payload, media_private_url)
       VALUES ($1, $2, $3, 'inbound', 'image', 'caption', now(), $4, jsonb_build_object('raw', $4::text),
               'https://media.internal/' || $4) RETURNING id`,
      [w.id, conversation, owner, INTERNAL],
      'message.created',
      { contactId: owner },
    );
    await expectOne(
      `UPDATE messages SET text = 'edited caption' WHERE workspace_id = $1 AND id = $2 RETURNING id`,
      [w.id, message],
      'message.updated',
      { contactId: owner },
    );
    await expectOne(
      'DELETE FROM messages WHERE workspace_id = $1 AND id = $2 RETURNING id',
      [w.id, message],
      'message.deleted',
    );
    await expectOne(
      'DELETE FROM conversations WHERE workspace_id = $1 AND id = $2 RETURNING id',
      [w.id, conversation],
      'conversation.deleted',
    );

    // automations
    const automation = await expectOne(
      `INSERT INTO automations (workspace_id, name, status, trigger_kind, rules, conditions, actions)
       VALUES ($1, 'Remind', 'active', 'schedule', jsonb_build_object('r', $2::text),
               jsonb_build_array($2::text), jsonb_build_array($2::text)) RETURNING id`,
      [w.id, INTERNAL],
      'automation.created',
    );
    await expectOne(
      `UPDATE automations SET run_count = run_count + 1, success_count = success_count + 1, last_run_at = now()
        WHERE workspace_id = $1 AND id = $2 RETURNING id`,
      [w.id, automation],
      'automation.updated',
    );
    await expectOne(
      'DELETE FROM automations WHERE workspace_id = $1 AND id = $2 RETURNING id',
      [w.id, automation],
      'automation.deleted',
    );

    // pipeline stages
    await expectOne(
      `UPDATE pipeline_stages SET name = 'Gone for good' WHERE workspace_id = $1 AND id = 'lost' RETURNING id`,
      [w.id],
      'pipeline_stage.updated',
    );
    await expectOne(
      `DELETE FROM pipeline_stages WHERE workspace_id = $1 AND id = 'lost' RETURNING id`,
      [w.id],
      'pipeline_stage.deleted',
    );
    await expectOne(
      `INSERT INTO pipeline_stages (workspace_id, id, name, position, internal_notes)
       VALUES ($1, 'lost', 'Lost again', 10, $2) RETURNING id`,
      [w.id, INTERNAL],
      'pipeline_stage.created',
    );

    // the workspace itself
    await expectOne(
      `UPDATE workspaces SET name = 'Renamed by SQL' WHERE id = $1 RETURNING id`,
      [w.id],
      'workspace.updated',
    );
    await expectOne(
      `UPDATE workspaces SET timezone = 'America/Sao_Paulo', internal_notes = $2 WHERE id = $1 RETURNING id`,
      [w.id, INTERNAL],
      'workspace.updated',
    );
  });

  test('an UPDATE of internal columns only adds no event', async () => {
    const w = await fresh();
    const contact = await sqlContact(w);
    await ownerCommands.seed(feedServer().owner, {
      workspaceId: w.id,
      amounts: { contacts: 3, appointments: 2, catalogItems: 2, conversations: 2, automations: 2 },
    });
    const start = await mark(w);
    const stored = await eventCount(w);
    const updates = [
      `UPDATE contacts SET notes = 'n ' || $2 WHERE workspace_id = $1 AND id = '${contact}'`,
      `UPDATE contacts SET ai_memory = jsonb_build_object('m', $2::text) WHERE workspace_id = $1`,
      `UPDATE catalog_items SET private_notes = $2, internal_metadata = '{}' WHERE workspace_id = $1`,
      `UPDATE automations SET rules = jsonb_build_object('r', $2::text), conditions = '[]', actions = '[]'
        WHERE workspace_id = $1`,
      `UPDATE conversations SET provider_payload = jsonb_build_object('p', $2::text), private_url = $2
        WHERE workspace_id = $1`,
      `UPDATE messages SET provider_payload = jsonb_build_object('p', $2::text) WHERE workspace_id = $1`,
      `UPDATE appointments SET internal_notes = $2 WHERE workspace_id = $1`,
      `UPDATE pipeline_stages SET internal_notes = $2 WHERE workspace_id = $1`,
      `UPDATE workspaces SET billing_plan = 'enterprise ' || $2, billing_email = 'b@example.com' WHERE id = $1`,
    ];
    for (const sql of updates) {
      const { rowCount } = await feedServer().db.query(sql, [w.id, INTERNAL]);
      assert.ok(rowCount > 0, sql);
    }
    assert.deepEqual(await since(w, start), []);
    assert.equal(await eventCount(w), stored);
  });

  test('a rolled-back transaction adds no event', async () => {
    const w = await fresh();
    const existing = await sqlContact(w);
    const start = await mark(w);
    const stored = await eventCount(w);
    await assert.rejects(
      feedServer().db.transaction(async (tx) => {
        const tag = await tagTransaction((q, p) => tx.query(q, p));
        await tx.query(`INSERT INTO contacts (workspace_id, name, email) VALUES ($1, 'Doomed', 'doomed@example.com')`, [
          w.id,
        ]);
        await tx.query(`UPDATE contacts SET status = 'lost' WHERE workspace_id = $1 AND id = $2`, [w.id, existing]);
        await tx.query(`UPDATE workspaces SET name = 'doomed' WHERE id = $1`, [w.id]);
        const { rows } = await tx.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM events WHERE workspace_id = $1 AND request_id = $2',
          [w.id, tag],
        );
        assert.equal(rows[0]!.n, 3, 'the events are written inside the transaction');
        throw new Error('roll back');
      }),
      /roll back/,
    );
    // an API write that fails inside its transaction (a PATCH of an unknown contact) rolls back too
    const missing = await feedServer().request('PATCH', '/v2/contacts/6f1c2a9e-0000-4000-8000-000000000001', {
      key: w.key,
      body: { name: 'x' },
      idem: idem(),
    });
    assert.equal(missing.status, 404);
    assert.deepEqual(await since(w, start), []);
    assert.equal(await eventCount(w), stored);
  });

  test('deleting a workspace straight in the database works, and its events go with it', async () => {
    const w = await fresh();
    const contact = await sqlContact(w);
    await feedServer().db.query(
      `INSERT INTO appointments (workspace_id, contact_id, timezone) VALUES ($1, $2, 'UTC')`,
      [w.id, contact],
    );
    assert.ok((await eventCount(w)) > 11);
    // the migration says "events of a deleted workspace go with it": the cascade removes the
    // workspace's rows, and the triggers of those rows must not write events for a workspace
    // that no longer exists
    await assert.doesNotReject(feedServer().db.query('DELETE FROM workspaces WHERE id = $1', [w.id]));
    assert.equal(await eventCount(w), 0);
    const { rows } = await feedServer().db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
      [w.id],
    );
    assert.equal(rows[0]!.n, 0);
  });

  test("one statement over many rows: an event per changed row, in the statement's order; none for internal changes; each workspace its own", async () => {
    const [w, v] = [await fresh(), await fresh()];
    const [startW, startV] = [await mark(w), await mark(v)];
    const inserted = await feedServer().db.query<{ id: string; name: string }>(
      `INSERT INTO contacts (workspace_id, name, notes)
       SELECT $1, 'multi ' || g, $2 FROM generate_series(1, 6) g ORDER BY g DESC RETURNING id, name`,
      [w.id, INTERNAL],
    );
    const ids = new Map(inserted.rows.map((r) => [r.name, r.id]));
    // One UPDATE: two rows change a public property, two their notes only, two nothing.
    const updated = await feedServer().db.query(
      `UPDATE contacts SET notes = 'renoted ' || name,
              status = CASE WHEN name IN ('multi 1', 'multi 3') THEN 'lost' ELSE status END
        WHERE workspace_id = $1 AND name IN ('multi 1', 'multi 2', 'multi 3', 'multi 4')`,
      [w.id],
    );
    assert.equal(updated.rowCount, 4);
    // One DELETE spanning two workspaces.
    const other = await sqlContact(v, 'other workspace');
    const deleted = await feedServer().db.query('DELETE FROM contacts WHERE id = ANY($1::uuid[])', [
      [ids.get('multi 1'), ids.get('multi 5'), other],
    ]);
    assert.equal(deleted.rowCount, 3);

    const events = await since(w, startW);
    assert.deepEqual(
      events.slice(0, 6).map((e) => [e.type, e.data.name]),
      [6, 5, 4, 3, 2, 1].map((n) => ['contact.created', [1, 5].includes(n) ? undefined : `multi ${n}`]),
      'created in the order the statement inserted them; multi 1 and 5 erased since',
    );
    assert.deepEqual(
      events.slice(0, 6).map((e) => e.resource_id),
      [6, 5, 4, 3, 2, 1].map((n) => ids.get(`multi ${n}`)),
    );
    const rest = events.slice(6).map((e) => [e.type, e.resource_id]);
    assert.equal(rest.length, 4, JSON.stringify(rest));
    assert.deepEqual(
      rest.slice(0, 2).sort(),
      [
        ['contact.updated', ids.get('multi 1')],
        ['contact.updated', ids.get('multi 3')],
      ].sort(),
      'only the rows whose public properties changed',
    );
    assert.deepEqual(
      rest.slice(2).sort(),
      [
        ['contact.deleted', ids.get('multi 1')],
        ['contact.deleted', ids.get('multi 5')],
      ].sort(),
    );
    assert.equal(
      events.find((e) => e.resource_id === ids.get('multi 3') && e.type === 'contact.updated').data.status,
      'lost',
    );
    assert.deepEqual(
      (await since(v, startV)).map((e) => [e.type, e.resource_id, e.data]),
      [
        ['contact.created', other, { id: other, external_id: null }],
        ['contact.deleted', other, { id: other, external_id: null }],
      ],
    );
  });

  test('the events of one transaction keep their order', async () => {
    const w = await fresh();
    const start = await mark(w);
    const made = await feedServer().db.transaction(async (tx) => {
      const a = (
        await tx.query<{ id: string }>(
          `INSERT INTO contacts (workspace_id, name, email) VALUES ($1, 'A', 'a.order@example.com') RETURNING id`,
          [w.id],
        )
      ).rows[0]!.id;
      await tx.query(`UPDATE contacts SET status = 'talking' WHERE workspace_id = $1 AND id = $2`, [w.id, a]);
      const b = (
        await tx.query<{ id: string }>(
          `INSERT INTO contacts (workspace_id, name, email) VALUES ($1, 'B', 'b.order@example.com') RETURNING id`,
          [w.id],
        )
      ).rows[0]!.id;
      const item = (
        await tx.query<{ id: string }>(
          `INSERT INTO catalog_items (workspace_id, kind, name) VALUES ($1, 'product', 'Box') RETURNING id`,
          [w.id],
        )
      ).rows[0]!.id;
      await tx.query(`UPDATE contacts SET status = 'lost' WHERE workspace_id = $1 AND id = $2`, [w.id, a]);
      await tx.query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [w.id, a]);
      await tx.query(`UPDATE workspaces SET name = 'Ordered' WHERE id = $1`, [w.id]);
      return { a, b, item };
    });
    const events = await since(w, start);
    assert.deepEqual(
      events.map((e) => [e.type, e.resource_id]),
      [
        ['contact.created', made.a],
        ['contact.updated', made.a],
        ['contact.created', made.b],
        ['catalog_item.created', made.item],
        ['contact.updated', made.a],
        ['contact.deleted', made.a],
        ['workspace.updated', w.id],
      ],
    );
    // erased by the deletion: A's earlier events now carry its tombstone only
    for (const e of events.filter((e) => e.resource_id === made.a)) {
      assert.deepEqual(e.data, { id: made.a, external_id: null }, e.type);
    }
    // one transaction: positions increase (walk checks it) and stand after everything before it
    assert.ok(compareIds(start, events[0].id) < 0);
  });
});

describe('no writer can bypass the feed', () => {
  test('TRUNCATE, which fires no row triggers, is refused on every table the feed covers', async () => {
    const tables = [
      'workspaces',
      'contacts',
      'appointments',
      'pipeline_stages',
      'catalog_items',
      'conversations',
      'messages',
      'automations',
    ];
    for (const table of tables) {
      // Inside a transaction that is rolled back in any case: were TRUNCATE allowed, nothing is lost.
      await assert.rejects(
        feedServer().db.transaction(async (tx) => {
          await tx.query(`TRUNCATE ${table} CASCADE`);
          throw new Error(`TRUNCATE ${table} was allowed`);
        }),
        /would bypass the events feed/,
        table,
      );
    }
  });
});
