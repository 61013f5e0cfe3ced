// The events feed (GET /v2/events): what becomes an event and with which data, whoever the writer
// is (the API, the owner commands, plain SQL); what does not (no-op updates, replays, internal
// columns, rollbacks); the order inside a transaction; filters, cursors and `after=`; workspace
// isolation; retention; and the feed staying gap-free while many transactions commit out of order.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { eventsRepository } from '../src/modules/events/events.repository.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import {
  contactBody,
  eventIdAt,
  eventPosition,
  idem,
  sleep,
  startTestServer,
  STORE,
  type TestResponse,
  type TestServer,
  type TestWorkspace,
} from './harness.js';

const EVENT_KEYS = ['data', 'id', 'occurred_at', 'request_id', 'resource_id', 'resource_type', 'type'];
const EVENT_ID = /^evt_[A-Za-z0-9_-]{22}$/;
const MS_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const INTERNAL = 'INTERNAL-MARKER-7f3a';

let server: TestServer;

before(async () => {
  server = await startTestServer();
});
after(() => server.close());

/** A fresh workspace whose key is not slowed down by the rate limit (the walks below are chatty). */
const fresh = () => server.workspace({ rateLimitPerMinute: 1_000_000 });

// ------------------------------------------------------------------------------------------ helpers

/** The decrypted (stamp, seq) of an event id of the workspace whose feed the test reads. */
const positions = new Map<string, [bigint, bigint]>();
function position(id: string): [bigint, bigint] {
  const known = positions.get(id);
  assert.ok(known, `not an event id seen by this file: ${id}`);
  return known;
}
/** Remembers the position of every event id the feed answered, so ids can be compared. */
function learn(w: TestWorkspace, events: { id: string }[]): void {
  for (const e of events) positions.set(e.id, eventPosition(server, w.id, e.id));
}

function compareIds(a: string, b: string): number {
  const [ta, sa] = position(a);
  const [tb, sb] = position(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

function assertStrictlyIncreasing(ids: string[], what: string): void {
  for (let i = 1; i < ids.length; i++) {
    assert.ok(
      compareIds(ids[i - 1]!, ids[i]!) < 0,
      `${what}: ${ids[i - 1]} ${position(ids[i - 1]!).join()} then ${ids[i]} ${position(ids[i]!).join()} (index ${i})`,
    );
  }
}

const ids = (events: { id: string }[]) => events.map((e) => e.id);

const get = (w: TestWorkspace, path: string) => server.request('GET', path, { key: w.key });

function eventsPath(query: Record<string, string | undefined>): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, v);
  const s = qs.toString();
  return s ? `/v2/events?${s}` : '/v2/events';
}

function assertEvent(e: any): void {
  assert.deepEqual(Object.keys(e).sort(), EVENT_KEYS);
  assert.match(e.id, EVENT_ID);
  assert.match(e.occurred_at, MS_DATE_TIME);
  assert.equal(e.type, `${e.resource_type}.${e.type.split('.')[1]}`);
  assert.match(e.type, /^[a-z_]+\.(created|updated|deleted)$/);
  assert.equal(typeof e.resource_id, 'string');
  assert.ok(e.request_id === null || typeof e.request_id === 'string');
  assert.equal(typeof e.data, 'object');
  assert.equal(e.data.id, e.resource_id);
}

type Run = (sql: string, params: unknown[]) => Promise<{ rows: unknown[] }>;
let txTags = 0;

/**
 * Tags the calling transaction: its events carry the tag as request_id (as an API request's carry
 * its X-Request-Id), so the test can list the events it wrote without relying on internals.
 */
async function tagTransaction(run: Run): Promise<string> {
  const tag = `tx-${++txTags}`;
  await run("SELECT set_config('app.request_id', $1, true)", [tag]);
  return tag;
}

/** Follows the cursor from the first page to the last one, checking every page envelope. */
async function walk(w: TestWorkspace, query: Record<string, string | undefined> = {}, limit = 4): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 10_000; pages++) {
    // the first page may start after= an event; the cursor then carries the position on its own
    const r = await get(
      w,
      eventsPath({ ...query, limit: String(limit), ...(cursor ? { cursor, after: undefined } : {}) }),
    );
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json).sort(), ['data', 'page']);
    assert.equal(r.json.page.limit, limit);
    assert.ok(r.json.data.length <= limit);
    for (const e of r.json.data) assertEvent(e);
    learn(w, r.json.data);
    out.push(...r.json.data);
    if (!r.json.page.has_more) {
      assert.equal(r.json.page.next_cursor, null);
      assertStrictlyIncreasing(ids(out), 'walk');
      return out;
    }
    assert.equal(r.json.data.length, limit);
    assert.equal(typeof r.json.page.next_cursor, 'string');
    cursor = r.json.page.next_cursor;
  }
  throw new Error('the walk did not end');
}

/** Everything the feed shows for `w`: a change is visible as soon as it is committed. */
async function feed(w: TestWorkspace, query: Record<string, string | undefined> = {}, limit = 100): Promise<any[]> {
  return walk(w, query, limit);
}

/** Id of the last event of the feed: the point to resume from. */
async function mark(w: TestWorkspace): Promise<string> {
  const all = await feed(w);
  assert.ok(all.length > 0, 'a workspace always has its workspace.created event');
  return all.at(-1).id;
}

/** Events after `from`. */
async function since(w: TestWorkspace, from: string, query: Record<string, string | undefined> = {}): Promise<any[]> {
  return feed(w, { ...query, after: from });
}

const eventCount = async (w: TestWorkspace): Promise<number> =>
  (await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE workspace_id = $1', [w.id]))
    .rows[0]!.n;

/** The raw `data` stored for one event, before the repository's own filtering. */
async function storedData(w: TestWorkspace, eventId: string): Promise<Record<string, unknown>> {
  const [stamp, seq] = position(eventId);
  const { rows } = await server.db.query<{ data: Record<string, unknown> }>(
    'SELECT data FROM events WHERE workspace_id = $1 AND stamp = $2 AND seq = $3',
    [w.id, stamp.toString(), seq.toString()],
  );
  assert.equal(rows.length, 1, eventId);
  return rows[0]!.data;
}

function assertError(r: TestResponse, status: number, type: string, what: string): void {
  assert.equal(r.status, status, `${what}: ${r.text}`);
  assert.equal(r.json?.error?.type, type, what);
}

/** What GET of the v2 API answers for one resource now. */
async function publicView(w: TestWorkspace, resourceType: string, id: string, contactId?: string): Promise<any> {
  const find = async (path: string) => {
    const r = await get(w, path);
    assert.equal(r.status, 200, r.text);
    const found = r.json.data.find((x: { id: string }) => x.id === id);
    assert.ok(found, `${resourceType} ${id} in ${path}`);
    return found;
  };
  const single = async (path: string) => {
    const r = await get(w, path);
    assert.equal(r.status, 200, r.text);
    return r.json.data;
  };
  switch (resourceType) {
    case 'contact':
      return single(`/v2/contacts/${id}`);
    case 'appointment':
      return single(`/v2/appointments/${id}`);
    case 'catalog_item':
      return single(`/v2/catalog/items/${id}`);
    case 'automation':
      return single(`/v2/automations/${id}`);
    case 'workspace':
      return single('/v2/workspace');
    case 'pipeline_stage':
      return find('/v2/pipeline/stages?limit=100');
    case 'conversation':
      return find(`/v2/conversations?contact_id=${contactId}&limit=100`);
    case 'message':
      return find(`/v2/conversations/${contactId}/messages?limit=100`);
    default:
      throw new Error(`unknown resource type ${resourceType}`);
  }
}

const createContact = (w: TestWorkspace, overrides: Record<string, unknown> = {}) =>
  server.request('POST', '/v2/contacts', { key: w.key, body: contactBody(overrides), idem: idem() });

async function sqlContact(w: TestWorkspace, name = 'SQL Contact'): Promise<string> {
  const { rows } = await server.db.query<{ id: string }>(
    `INSERT INTO contacts (workspace_id, name, email, status, notes)
     VALUES ($1, $2, 'sql.' || gen_random_uuid() || '@example.com', 'talking', $3) RETURNING id`,
    [w.id, name, INTERNAL],
  );
  return rows[0]!.id;
}

// ------------------------------------------------------------------------------------------ API writes

describe('events of writes through the API', () => {
  test('POST, PATCH and PUT give contact.created / contact.updated with the response data and x-request-id', async () => {
    const w = await fresh();
    const start = await mark(w);
    const created = await createContact(w);
    assert.equal(created.status, 201);
    const patched = await server.request('PATCH', `/v2/contacts/${created.json.data.id}`, {
      key: w.key,
      body: { status: 'qualified_conversation', name: 'Renamed' },
      idem: idem(),
    });
    assert.equal(patched.status, 200);
    const upserted = await server.request('PUT', '/v2/contacts/external/crm-1', {
      key: w.key,
      body: contactBody({ name: 'By external id' }),
      idem: idem(),
    });
    assert.equal(upserted.status, 201);
    const reUpserted = await server.request('PUT', '/v1/contacts/external/crm-1', {
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
    const created = await server.request('POST', '/v2/contacts', { key: w.key, body, idem: postKey });
    assert.equal(created.status, 201);
    const id = created.json.data.id;
    const patchKey = idem();
    const patched = await server.request('PATCH', `/v2/contacts/${id}`, {
      key: w.key,
      body: { status: 'meeting' },
      idem: patchKey,
    });
    assert.equal(patched.status, 200);
    const upserted = await server.request('PUT', '/v2/contacts/external/same-1', {
      key: w.key,
      body: { name: 'Ext', email: 'ext.same@example.com' },
      idem: idem(),
    });
    assert.equal(upserted.status, 201);
    const start = await mark(w);
    const stored = await eventCount(w);

    const noop = await server.request('PATCH', `/v2/contacts/${id}`, {
      key: w.key,
      body: { name: 'Same', status: 'meeting' },
      idem: idem(),
    });
    assert.equal(noop.status, 200);
    assert.equal(noop.json.data.updated_at, patched.json.data.updated_at);
    const noopPut = await server.request('PUT', '/v2/contacts/external/same-1', {
      key: w.key,
      body: { name: 'Ext' },
      idem: idem(),
    });
    assert.equal(noopPut.status, 200);
    assert.equal(noopPut.json.data.updated_at, upserted.json.data.updated_at);
    const replayPost = await server.request('POST', '/v2/contacts', { key: w.key, body, idem: postKey });
    assert.equal(replayPost.status, 201);
    assert.equal(replayPost.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replayPost.json, created.json);
    const replayPatch = await server.request('PATCH', `/v2/contacts/${id}`, {
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
      await server.db.query<{ id: string }>(
        `INSERT INTO conversations (workspace_id, contact_id, channel, provider_payload)
         VALUES ($1, $2, 'whatsapp', '{"raw": 1}'), ($1, $2, 'email', NULL), ($1, $3, 'sms', NULL) RETURNING id`,
        [w.id, contact.id, other.id],
      )
    ).rows.map((r) => r.id);
    const inserted = (
      await server.db.query<{ id: string; conversation_id: string }>(
        `INSERT INTO messages (workspace_id, conversation_id, contact_id, direction, text)
         SELECT $1, c, $2, 'inbound', 'hello ' || g FROM unnest($3::uuid[]) AS c, generate_series(1, 2) AS g
         RETURNING id, conversation_id`,
        [w.id, contact.id, conversations.slice(0, 2)],
      )
    ).rows;
    const messages = inserted.map((r) => r.id);
    const messagesOf = new Map(inserted.map((r) => [r.id, r.conversation_id]));
    const otherMessage = (
      await server.db.query<{ id: string }>(
        `INSERT INTO messages (workspace_id, conversation_id, contact_id, direction, text)
         VALUES ($1, $2, $3, 'outbound', 'kept') RETURNING id`,
        [w.id, conversations[2], other.id],
      )
    ).rows[0]!.id;
    const appointments = (
      await server.db.query<{ id: string }>(
        `INSERT INTO appointments (workspace_id, contact_id, starts_at, timezone)
         VALUES ($1, $2, now() + interval '1 day', 'UTC'), ($1, $2, NULL, 'UTC'), ($1, $3, NULL, 'UTC')
         RETURNING id`,
        [w.id, contact.id, other.id],
      )
    ).rows.map((r) => r.id);
    const start = await mark(w);

    await ownerCommands.deleteContact(server.owner, { contactId: contact.id });

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
    await ownerCommands.deleteAppointment(server.owner, { appointmentId: appointments[0]! });
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
      const { rows } = await server.db.query<{ id: string }>(sql, params);
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
        assert.deepEqual(Object.keys(e.data).sort(), Object.keys(view).sort(), type);
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
    await ownerCommands.seed(server.owner, {
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
      const { rowCount } = await server.db.query(sql, [w.id, INTERNAL]);
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
      server.db.transaction(async (tx) => {
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
    const missing = await server.request('PATCH', '/v2/contacts/6f1c2a9e-0000-4000-8000-000000000001', {
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
    await server.db.query(`INSERT INTO appointments (workspace_id, contact_id, timezone) VALUES ($1, $2, 'UTC')`, [
      w.id,
      contact,
    ]);
    assert.ok((await eventCount(w)) > 11);
    // the migration says "events of a deleted workspace go with it": the cascade removes the
    // workspace's rows, and the triggers of those rows must not write events for a workspace
    // that no longer exists
    await assert.doesNotReject(server.db.query('DELETE FROM workspaces WHERE id = $1', [w.id]));
    assert.equal(await eventCount(w), 0);
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
      [w.id],
    );
    assert.equal(rows[0]!.n, 0);
  });

  test('the events of one transaction keep their order', async () => {
    const w = await fresh();
    const start = await mark(w);
    const made = await server.db.transaction(async (tx) => {
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
      const r = await server.request('PATCH', `/v2/contacts/${contacts[i % 2]}`, {
        key: w.key,
        body: { status },
        idem: idem(),
      });
      assert.equal(r.status, 200);
    }
    appointment = (
      await server.db.query<{ id: string }>(
        `INSERT INTO appointments (workspace_id, contact_id, timezone) VALUES ($1, $2, 'UTC') RETURNING id`,
        [w.id, contacts[3]],
      )
    ).rows[0]!.id;
    await server.db.query(`UPDATE appointments SET status = 'confirmed' WHERE workspace_id = $1 AND id = $2`, [
      w.id,
      appointment,
    ]);
    await server.db.query(`INSERT INTO catalog_items (workspace_id, kind, name) VALUES ($1, 'product', 'Thing')`, [
      w.id,
    ]);
    await ownerCommands.deleteContact(server.owner, { contactId: contacts[3]! });
    await ownerCommands.deleteContact(server.owner, { contactId: contacts[2]! });
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
    const between = await walk(w, { after: eventIdAt(server, w.id, stamp, 2n ** 48n - 1n) }, 5);
    assert.deepEqual(ids(between), ids(all.slice(firstTx)));
    // an id of the earlier format before every event of this workspace: the whole feed
    const fromZero = await walk(w, { after: 'evt_0_0' }, 50);
    assert.deepEqual(ids(fromZero), ids(all));
  });

  test('after= the very last event: an empty page, has_more false, next_cursor null; later changes follow', async () => {
    const lastId = all.at(-1).id;
    const r = await get(w, eventsPath({ after: lastId, limit: '5' }));
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { data: [], page: { limit: 5, has_more: false, next_cursor: null } });
    // the reader resumes later with the same after= and gets exactly the new events
    const made = await createContact(w);
    const patched = await server.request('PATCH', `/v2/contacts/${made.json.data.id}`, {
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

  test('after= with numbers past the range of a transaction id or a sequence is refused, not a 500', async () => {
    // all of them match the documented pattern ^evt_[0-9]{1,20}_[0-9]{1,20}$; an xid8 ends at
    // 18446744073709551615 and a bigint at 9223372036854775807
    const wrong: string[] = [];
    for (const after of [
      'evt_99999999999999999999_1',
      'evt_18446744073709551616_0',
      'evt_1_99999999999999999999',
      'evt_1_9223372036854775808',
    ]) {
      const r = await get(w, eventsPath({ after }));
      const fine =
        (r.status === 400 && r.json?.error?.type === 'invalid_request') ||
        (r.status === 200 && r.json.data.length === 0);
      if (!fine) wrong.push(`${after}: ${r.status} ${r.json?.error?.code}`);
    }
    assert.deepEqual(wrong, []);
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
    const r = await server.request('GET', '/v2/events', { key: without.key });
    assertError(r, 403, 'permission_error', 'no events:read');
    const onlyEvents = await w.newKey(['events:read']);
    assert.equal((await server.request('GET', '/v2/events', { key: onlyEvents.key })).status, 200);
  });
});

// ------------------------------------------------------------------------------------------ retention

describe('retention', () => {
  test('30 days by default, documented, and purgeOlderThan removes older events while newer ones stay', async () => {
    assert.equal(loadConfig({}).eventsRetentionDays, 30);
    const doc = await server.request('GET', '/v2/openapi.json');
    assert.equal(doc.status, 200);
    assert.match(doc.json.paths['/v2/events'].get.description, /30 days/);

    const w = await fresh();
    const old: string[] = [];
    for (let i = 0; i < 3; i++) old.push(await sqlContact(w, `Old ${i}`));
    const borderline = await sqlContact(w, 'Borderline');
    const recent: string[] = [];
    for (let i = 0; i < 2; i++) recent.push((await createContact(w)).json.data.id);
    const initial = await feed(w);
    await server.db.query(
      `UPDATE events SET occurred_at = now() - interval '31 days'
        WHERE workspace_id = $1 AND (resource_id = ANY($2) OR resource_type IN ('workspace', 'pipeline_stage'))`,
      [w.id, old],
    );
    await server.db.query(
      `UPDATE events SET occurred_at = now() - interval '29 days' WHERE workspace_id = $1 AND resource_id = $2`,
      [w.id, borderline],
    );
    const gone = new Set(
      ids(
        initial.filter((e) => old.includes(e.resource_id) || ['workspace', 'pipeline_stage'].includes(e.resource_type)),
      ),
    );
    assert.equal(gone.size, 3 + 1 + 10);

    const purged = await eventsRepository.purgeOlderThan(server.db, 30);
    assert.ok(purged >= gone.size, `purged ${purged}`);
    const afterPurge = await feed(w);
    assert.deepEqual(ids(afterPurge), ids(initial.filter((e) => !gone.has(e.id))));
    assert.deepEqual(
      afterPurge.map((e) => e.resource_id),
      [borderline, ...recent],
    );
    const { rows } = await server.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM events WHERE workspace_id = $1 AND occurred_at < now() - interval '30 days'`,
      [w.id],
    );
    assert.equal(rows[0]!.n, 0);
    // a reader whose last event was purged still resumes right after it
    const lastPurged = initial.filter((e) => gone.has(e.id)).at(-1);
    assert.deepEqual(ids(await walk(w, { after: lastPurged.id }, 2)), ids(afterPurge));
  });
});

// ------------------------------------------------------------------------------------------ concurrency

interface CommittedTx {
  ids: string[];
  /** when COMMIT was sent, and when it returned (performance.now()) */
  commitSent: number;
  commitDone: number;
}

describe('concurrent writers', () => {
  test('a reader following the cursor, then after=, sees every committed event once, in order, none of the rolled back', async (t) => {
    const w = await fresh();
    const readerLimit = 5;
    let writersDone = false;
    let readerError: unknown;

    // The reader: pages with the cursor while has_more, then polls with after=<last id seen>.
    const seen: string[] = [];
    let pages = 0;
    let resumes = 0;
    let fruitfulResumes = 0;
    let restarts = 0;
    const readerStopped = (async () => {
      let cursor: string | undefined;
      let drainDeadline = Infinity;
      for (;;) {
        const last = seen.at(-1);
        const r = await get(
          w,
          eventsPath({
            limit: String(readerLimit),
            ...(cursor ? { cursor } : last ? { after: last } : {}),
          }),
        );
        assert.equal(r.status, 200, r.text);
        pages++;
        learn(w, r.json.data);
        for (const e of r.json.data) seen.push(e.id);
        if (r.json.page.has_more) {
          // now and then the reader starts over from the last event it processed (as after a
          // restart) instead of following the cursor
          if (pages % 5 === 0) {
            cursor = undefined;
            restarts++;
          } else cursor = r.json.page.next_cursor;
          continue;
        }
        cursor = undefined;
        if (last !== undefined) resumes++;
        if (last !== undefined && r.json.data.length > 0) fruitfulResumes++;
        if (writersDone) {
          if (drainDeadline === Infinity) drainDeadline = Date.now() + 25_000;
          const inTable = await eventCount(w);
          if (seen.length >= inTable || Date.now() > drainDeadline) return;
        }
        await sleep(5);
      }
    })().catch((err: unknown) => {
      readerError = err;
    });

    const committed: CommittedTx[] = [];
    const rolledBack: string[] = [];
    let apiWrites = 0;

    /** API writers: POST new contacts, PATCH their own ones (some PATCHes change nothing). */
    const apiWriter = async (n: number, count: number | null, stopAt: number) => {
      const mine: string[] = [];
      for (let i = 0; count === null ? Date.now() < stopAt : i < count; i++) {
        if (mine.length === 0 || i % 3 === 0) {
          const r = await createContact(w, { name: `api ${n}.${i}` });
          assert.equal(r.status, 201, r.text);
          mine.push(r.json.data.id);
        } else {
          const r = await server.request('PATCH', `/v2/contacts/${mine[i % mine.length]}`, {
            key: w.key,
            body: { name: i % 4 === 0 ? `api ${n}.0` : `api ${n}.${i}` },
            idem: idem(),
          });
          assert.equal(r.status, 200, r.text);
        }
        apiWrites++;
        await sleep(Math.random() * (count === null ? 15 : 40));
      }
    };

    /** Ids of the events the transaction tagged `tag` wrote for the workspace so far, in order. */
    const txEvents = async (run: Run, tag: string): Promise<string[]> => {
      const { rows } = (await run(
        `SELECT stamp::text, seq::text FROM events WHERE workspace_id = $1 AND request_id = $2 ORDER BY events.stamp, events.seq`,
        [w.id, tag],
      )) as { rows: { stamp: string; seq: string }[] };
      return rows.map((r) => {
        const id = eventIdAt(server, w.id, BigInt(r.stamp), BigInt(r.seq));
        positions.set(id, [BigInt(r.stamp), BigInt(r.seq)]);
        return id;
      });
    };
    const record = (txIds: string[], commitSent: number, commitDone: number) => {
      committed.push({ ids: txIds, commitSent, commitDone });
    };

    if (STORE === 'postgres') {
      const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 12 });
      pool.on('error', () => undefined);
      try {
        // A deterministic instance first: T1 deletes a contact and stays open; T2 deletes another.
        // T1 holds the workspace's clock (db/migrations/0009), so T2 cannot even write its event
        // until T1 has committed: the feed can never show T2's event with T1's still to come.
        const doomed: string[] = [];
        for (const name of ['T1', 'T2']) {
          const { rows } = await pool.query<{ id: string }>(
            `INSERT INTO contacts (workspace_id, name, email) VALUES ($1, $2, $3) RETURNING id`,
            [w.id, name, `${name.toLowerCase()}@example.com`],
          );
          doomed.push(rows[0]!.id);
        }
        const start = await mark(w);
        const c1 = await pool.connect();
        const c2 = await pool.connect();
        try {
          await c1.query('BEGIN');
          const tag1 = await tagTransaction((q, p) => c1.query(q, p));
          await c1.query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [w.id, doomed[0]]);
          const t1 = await txEvents((q, p) => c1.query(q, p), tag1);
          await c2.query('BEGIN');
          const tag2 = await tagTransaction((q, p) => c2.query(q, p));
          let t2Deleted = false;
          const t2Delete = c2
            .query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [w.id, doomed[1]])
            .then(() => (t2Deleted = true));
          for (let i = 0; i < 5; i++) {
            await sleep(40);
            const r = await get(w, eventsPath({ after: start, limit: '100' }));
            assert.equal(r.status, 200);
            assert.deepEqual(r.json.data, [], 'an event is shown before its transaction committed');
          }
          assert.equal(t2Deleted, false, "T2 wrote its event while T1 held the workspace's clock");
          const t1Sent = performance.now();
          await c1.query('COMMIT');
          record(t1, t1Sent, performance.now());
          await t2Delete;
          const t2 = await txEvents((q, p) => c2.query(q, p), tag2);
          assert.ok(compareIds(t1[0]!, t2[0]!) < 0);
          // T1 committed: its event is shown at once, with T2 still open
          assert.deepEqual(ids(await since(w, start)), t1);
          const t2Sent = performance.now();
          await c2.query('COMMIT');
          record(t2, t2Sent, performance.now());
          assert.deepEqual(ids(await since(w, start)), [...t1, ...t2]);
        } finally {
          await c1.query('ROLLBACK').catch(() => undefined);
          await c2.query('ROLLBACK').catch(() => undefined);
          c1.release();
          c2.release();
        }

        // A transaction of another workspace left open does not hold this feed back (it used to:
        // the feed waited for the oldest transaction running anywhere, a channel between tenants).
        const other = await fresh();
        const c3 = await pool.connect();
        try {
          await c3.query('BEGIN');
          await c3.query(`INSERT INTO contacts (workspace_id, name, email) VALUES ($1, 'Open', 'open@example.com')`, [
            other.id,
          ]);
          const from = await mark(w);
          const made = await createContact(w, { name: 'while another tenant writes' });
          assert.equal(made.status, 201);
          assert.deepEqual(
            (await since(w, from)).map((e) => e.resource_id),
            [made.json.data.id],
          );
        } finally {
          await c3.query('ROLLBACK').catch(() => undefined);
          c3.release();
        }

        // Then the storm: WRITERS connections looping over short transactions that sleep inside
        // after their writes, so they wait on each other's clock; some roll back, some delete. Two
        // API writers run alongside.
        const WRITERS = 9;
        const stopAt = Date.now() + 5_000;
        const sqlWriter = async (n: number) => {
          const client = await pool.connect();
          const mine: string[] = [];
          try {
            for (let i = 0; Date.now() < stopAt; i++) {
              await client.query('BEGIN');
              try {
                const tag = await tagTransaction((q, p) => client.query(q, p));
                const made: string[] = [];
                // Some transactions only delete (erasing the contact's earlier events).
                let gone: string | undefined;
                if (mine.length > 2 && i % 4 === 1) {
                  gone = mine[Math.floor(Math.random() * mine.length)]!;
                  await client.query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [w.id, gone]);
                }
                const inserts = gone ? 0 : mine.length === 0 || Math.random() < 0.5 ? 1 + (i % 2) : 0;
                for (let k = 0; k < inserts; k++) {
                  const { rows } = await client.query<{ id: string }>(
                    `INSERT INTO contacts (workspace_id, name, email, notes)
                     VALUES ($1, $2, $3, 'internal') RETURNING id`,
                    [w.id, `w${n} ${i}.${k}`, `w${n}.${i}.${k}@example.com`],
                  );
                  made.push(rows[0]!.id);
                }
                if (!gone && (inserts === 0 || i % 3 === 0)) {
                  const target = mine[Math.floor(Math.random() * mine.length)] ?? made[0]!;
                  await client.query('UPDATE contacts SET name = $3 WHERE workspace_id = $1 AND id = $2', [
                    w.id,
                    target,
                    `w${n} ${i} upd`,
                  ]);
                }
                await client.query('SELECT pg_sleep(random() * 0.05)');
                const rows = await txEvents((q, p) => client.query(q, p), tag);
                assert.ok(rows.length > 0);
                if (i % 6 === 5) {
                  await client.query('ROLLBACK');
                  rolledBack.push(...rows);
                  continue;
                }
                const sent = performance.now();
                await client.query('COMMIT');
                record(rows, sent, performance.now());
                mine.push(...made);
                if (gone) mine.splice(mine.indexOf(gone), 1);
              } catch (err) {
                await client.query('ROLLBACK').catch(() => undefined);
                throw err;
              }
            }
          } finally {
            client.release();
          }
        };
        try {
          await Promise.all([
            ...Array.from({ length: WRITERS }, (_, n) => sqlWriter(n)),
            apiWriter(100, null, stopAt),
            apiWriter(101, null, stopAt),
          ]);
        } finally {
          writersDone = true;
        }
      } finally {
        writersDone = true;
        await readerStopped;
        await pool.end();
      }
    } else {
      // Embedded: PGlite runs one transaction at a time, so concurrency is many API writers and
      // owner/SQL transactions in flight together (some rolling back) while the reader follows.
      const sqlTransactions = async (n: number) => {
        for (let i = 0; i < 12; i++) {
          const work = server.db.transaction(async (tx) => {
            const tag = await tagTransaction((q, p) => tx.query(q, p));
            await tx.query(`INSERT INTO contacts (workspace_id, name, email) VALUES ($1, $2, $3)`, [
              w.id,
              `tx ${n}.${i}`,
              `tx.${n}.${i}@example.com`,
            ]);
            await tx.query(`UPDATE workspaces SET name = $2 WHERE id = $1`, [w.id, `ws ${n}.${i}`]);
            const rows = await txEvents((q, p) => tx.query(q, p), tag);
            assert.equal(rows.length, 2);
            if (i % 4 === 3) {
              rolledBack.push(...rows);
              throw new Error('roll back');
            }
            return rows;
          });
          if (i % 4 === 3) await assert.rejects(work, /roll back/);
          else {
            const sent = performance.now();
            record(await work, sent, performance.now());
          }
          await sleep(Math.random() * 3);
        }
      };
      try {
        await Promise.all([
          ...Array.from({ length: 8 }, (_, n) => apiWriter(n, 25, 0)),
          sqlTransactions(1),
          sqlTransactions(2),
        ]);
      } finally {
        writersDone = true;
        await readerStopped;
      }
    }

    assert.equal(readerError, undefined, String(readerError));
    const { rows } = await server.db.query<{ stamp: string; seq: string }>(
      'SELECT stamp::text, seq::text FROM events WHERE workspace_id = $1 ORDER BY events.stamp, events.seq',
      [w.id],
    );
    const table = rows.map((r) => eventIdAt(server, w.id, BigInt(r.stamp), BigInt(r.seq)));
    t.diagnostic(
      `${STORE}: ${table.length} events (${committed.length} recorded SQL transactions, ${apiWrites} API writes, ` +
        `${rolledBack.length} rolled-back events), read in ${pages} pages; ${resumes} after= polls, ` +
        `${fruitfulResumes} of which found new events, ${restarts} restarts with after= mid-walk`,
    );
    assert.ok(table.length > (STORE === 'postgres' ? 100 : 50), `${table.length} events`);
    // exactly the table, no duplicates, strictly increasing (stamp, seq)
    assert.equal(new Set(seen).size, seen.length, 'the reader saw an event twice');
    assertStrictlyIncreasing(seen, 'reader order');
    const seenSet = new Set(seen);
    const missing = table.filter((id) => !seenSet.has(id));
    assert.deepEqual(missing, [], `the reader skipped ${missing.length} events`);
    assert.deepEqual(seen, table);
    // every committed transaction is in, every rolled-back one is out
    const tableSet = new Set(table);
    for (const tx of committed) for (const id of tx.ids) assert.ok(tableSet.has(id), id);
    assert.ok(rolledBack.length > 0, 'some transactions rolled back');
    for (const id of rolledBack) assert.ok(!tableSet.has(id), `rolled back ${id} is in the table`);

    if (STORE === 'postgres') {
      assert.ok(committed.length >= 50, `${committed.length} committed SQL transactions`);
    }
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
        server.db.transaction(async (tx) => {
          await tx.query(`TRUNCATE ${table} CASCADE`);
          throw new Error(`TRUNCATE ${table} was allowed`);
        }),
        /would bypass the events feed/,
        table,
      );
    }
  });
});
