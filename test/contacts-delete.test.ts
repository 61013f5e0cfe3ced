// Deleting contacts through the API: DELETE /v2/contacts/{id}, DELETE /v2/contacts/external/{external_id}
// and POST /v2/contacts/batch/delete. Each deletes as the product's own deletion does (children
// first, tombstones, erasure of earlier events and stored answers), replays with its
// Idempotency-Key, and needs no more than contacts:write. Through HTTP into the store of this run;
// the overlapping deletions on PostgreSQL whatever the store of the run.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { contactBody, deadlocksSoFar, idem, type TestServer, type TestWorkspace } from './harness.js';
import { describeOrSkip, findPostgres } from './servers.js';
import { usePostgresTestServer, useTestServer } from './test-server.js';

let w: TestWorkspace;
/** A key of w holding contacts:write alone: the weakest key that deletes. */
let writer: string;
const server = useTestServer({
  setup: async () => {
    w = await server.workspace();
    writer = (await w.newKey(['contacts:write'])).key;
  },
});

type FeedEvent = { id: string; type: string; resource_id: string; data: any; request_id: string | null };

/** Reads and writes of `server` for the workspace `ws()`. */
function on(server: TestServer, ws: () => TestWorkspace) {
  const head = async (): Promise<string> =>
    (await server.request('GET', '/v2/events/head', { key: ws().key })).json.data.position as string;
  async function eventsAfter(position: string): Promise<FeedEvent[]> {
    const out: FeedEvent[] = [];
    let path = `/v2/events?after=${position}&limit=100`;
    for (;;) {
      const res = await server.request('GET', path, { key: ws().key });
      assert.equal(res.status, 200, res.text);
      out.push(...res.json.data);
      if (!res.json.page.has_more) return out;
      path = `/v2/events?cursor=${encodeURIComponent(res.json.page.next_cursor)}&limit=100`;
    }
  }
  const upsert = async (externalId: string, body: Record<string, unknown> = { name: `Upserted ${externalId}` }) => {
    const r = await server.request('PUT', `/v2/contacts/external/${encodeURIComponent(externalId)}`, {
      key: ws().key,
      idem: idem(),
      body,
    });
    assert.ok(r.status === 201 || r.status === 200, r.text);
    return r.json.data as { id: string; external_id: string };
  };
  return { head, eventsAfter, upsert };
}
const { head, eventsAfter, upsert } = on(server, () => w);
const ext = (prefix = 'del') => `${prefix}-${randomUUID().slice(0, 12)}`;

const create = async () => {
  const r = await server.request('POST', '/v2/contacts', { key: w.key, idem: idem(), body: contactBody() });
  assert.equal(r.status, 201, r.text);
  return r.json.data as { id: string };
};
const del = (path: string, key = writer, k = idem()) => server.request('DELETE', path, { key, idem: k });
const batchDelete = (body: unknown, key = writer, k = idem()) =>
  server.request('POST', '/v2/contacts/batch/delete', { key, idem: k, body });
const getContact = (id: string) => server.request('GET', `/v2/contacts/${id}`, { key: w.key });

/** A contact with two conversations (two messages each) and two appointments, written as the product does. */
async function contactWithChildren(): Promise<{
  id: string;
  externalId: string;
  conversations: string[];
  messages: string[];
  appointments: string[];
}> {
  const { id, external_id: externalId } = await upsert(ext('family'));
  const conversations = (
    await server.db.query<{ id: string }>(
      `INSERT INTO conversations (workspace_id, contact_id, channel) VALUES ($1, $2, 'whatsapp'), ($1, $2, 'email')
       RETURNING id`,
      [w.id, id],
    )
  ).rows.map((r) => r.id);
  const messages = (
    await server.db.query<{ id: string }>(
      `INSERT INTO messages (workspace_id, conversation_id, contact_id, direction, text)
       SELECT $1, c, $2, 'inbound', 'hello ' || g FROM unnest($3::uuid[]) AS c, generate_series(1, 2) AS g
       RETURNING id`,
      [w.id, id, conversations],
    )
  ).rows.map((r) => r.id);
  const appointments = (
    await server.db.query<{ id: string }>(
      `INSERT INTO appointments (workspace_id, contact_id, starts_at, timezone)
       VALUES ($1, $2, now() + interval '1 day', 'UTC'), ($1, $2, NULL, 'UTC') RETURNING id`,
      [w.id, id],
    )
  ).rows.map((r) => r.id);
  return { id, externalId, conversations, messages, appointments };
}

/** The events one deletion of `family` made, checked against the product's order: children first. */
function assertChildrenFirst(events: FeedEvent[], family: Awaited<ReturnType<typeof contactWithChildren>>): void {
  const of = (type: string) =>
    events
      .filter((e) => e.type === type)
      .map((e) => e.resource_id)
      .sort();
  assert.deepEqual(of('message.deleted'), [...family.messages].sort());
  assert.deepEqual(of('conversation.deleted'), [...family.conversations].sort());
  assert.deepEqual(of('appointment.updated'), [...family.appointments].sort());
  for (const e of events.filter((e) => e.type === 'appointment.updated')) assert.equal(e.data.contact_id, null);
  const deletion = events.findIndex((e) => e.type === 'contact.deleted' && e.resource_id === family.id);
  assert.ok(deletion >= 0, 'contact.deleted');
  for (const [i, e] of events.entries()) {
    if (family.messages.includes(e.resource_id) || family.conversations.includes(e.resource_id))
      assert.ok(i < deletion, `${e.type} after contact.deleted`);
  }
}

describe('DELETE /v2/contacts/{id}', () => {
  test('204 without a body for a contacts:write key; the product deletion: children first, tombstone, the request named', async () => {
    const family = await contactWithChildren();
    const start = await head();
    const r = await del(`/v2/contacts/${family.id}`);
    assert.equal(r.status, 204);
    assert.equal(r.text, '');
    assert.equal(r.headers.get('idempotent-replayed'), null);
    assert.equal((await getContact(family.id)).status, 404);
    const events = await eventsAfter(start);
    assertChildrenFirst(events, family);
    const tombstone = events.find((e) => e.type === 'contact.deleted')!;
    assert.equal(tombstone.data.id, family.id);
    assert.equal(tombstone.data.external_id, family.externalId);
    assert.equal(tombstone.request_id, r.headers.get('x-request-id'), 'the deleting request is named');
    assert.equal(events.length, 4 + 2 + 2 + 1, events.map((e) => e.type).join());
    // Gone from the database, its children with it; its appointments stay.
    const left = await server.db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM conversations WHERE contact_id = $1)
            + (SELECT count(*) FROM messages WHERE contact_id = $1)
            + (SELECT count(*) FROM contacts WHERE id = $1) AS n`,
      [family.id],
    );
    assert.equal(Number(left.rows[0]!.n), 0);
    const kept = await server.db.query('SELECT 1 FROM appointments WHERE id = ANY($1::uuid[])', [family.appointments]);
    assert.equal(kept.rows.length, 2);
  });

  test("erases the contact's earlier events and the stored answers of the writes that carried it", async () => {
    const createKey = idem();
    const body = contactBody();
    const created = await server.request('POST', '/v2/contacts', { key: w.key, idem: createKey, body });
    const id = created.json.data.id as string;
    const patched = await server.request('PATCH', `/v2/contacts/${id}`, {
      key: w.key,
      idem: idem(),
      body: { origin: 'before deletion' },
    });
    assert.equal(patched.status, 200);
    assert.equal((await del(`/v2/contacts/${id}`)).status, 204);
    const history = await server.request('GET', `/v2/events?resource_id=${id}`, { key: w.key });
    assert.deepEqual(
      history.json.data.map((e: FeedEvent) => [e.type, Object.keys(e.data).sort()]),
      [
        ['contact.created', ['external_id', 'id']],
        ['contact.updated', ['external_id', 'id']],
        ['contact.deleted', ['external_id', 'id']],
      ],
    );
    const replay = await server.request('POST', '/v2/contacts', { key: w.key, idem: createKey, body });
    assert.equal(replay.status, 404);
    assert.equal(replay.json.error.code, 'resource_not_found');
    assert.ok(!replay.text.includes(body.email), 'nothing of the contact in the replay');
  });

  test('the same key replays 204; a new key answers 404; the key with another contact is 409; nothing is deleted twice', async () => {
    const { id } = await create();
    const other = await create();
    const k = idem();
    const start = await head();
    assert.equal((await del(`/v2/contacts/${id}`, writer, k)).status, 204);
    const replay = await del(`/v2/contacts/${id}`, writer, k);
    assert.equal(replay.status, 204);
    assert.equal(replay.text, '');
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    const again = await del(`/v2/contacts/${id}`);
    assert.equal(again.status, 404);
    assert.equal(again.json.error.code, 'resource_not_found');
    const reused = await del(`/v2/contacts/${other.id}`, writer, k);
    assert.equal(reused.status, 409);
    assert.equal(reused.json.error.code, 'idempotency_key_reused');
    assert.equal((await getContact(other.id)).status, 200);
    const events = await eventsAfter(start);
    assert.deepEqual(
      events.map((e) => [e.type, e.resource_id]),
      [['contact.deleted', id]],
    );
  });

  test('an id in capitals is the same contact and the same request; Content-Type: application/json without a body is fine', async () => {
    const { id } = await create();
    const k = idem();
    const upper = await server.request('DELETE', `/v2/contacts/${id.toUpperCase()}`, {
      key: writer,
      idem: k,
      contentType: 'application/json',
    });
    assert.equal(upper.status, 204, upper.text);
    const lower = await del(`/v2/contacts/${id}`, writer, k);
    assert.equal(lower.status, 204, lower.text);
    assert.equal(lower.headers.get('idempotent-replayed'), 'true');
  });

  test('a body sent with a deletion is ignored, and is not part of the request for idempotency', async () => {
    const { id } = await create();
    const k = idem();
    const withBody = await server.request('DELETE', `/v2/contacts/${id}`, { key: writer, idem: k, body: { x: 1 } });
    assert.equal(withBody.status, 204, withBody.text);
    const without = await del(`/v2/contacts/${id}`, writer, k);
    assert.equal(without.status, 204);
    assert.equal(without.headers.get('idempotent-replayed'), 'true');
  });

  test('parallel identical deletions with one key: one deletion, one event; the others replay it or are told it is in use', async () => {
    const { id } = await create();
    const k = idem();
    const start = await head();
    const answers = await Promise.all(Array.from({ length: 8 }, () => del(`/v2/contacts/${id}`, writer, k)));
    for (const a of answers) {
      if (a.status !== 204) assert.equal(a.json.error.code, 'idempotency_key_in_use', a.text);
    }
    assert.ok(answers.some((a) => a.status === 204));
    assert.equal((await del(`/v2/contacts/${id}`, writer, k)).status, 204);
    assert.equal((await eventsAfter(start)).filter((e) => e.type === 'contact.deleted').length, 1);
  });

  test('parallel deletions of one contact with different keys: one 204, the others 404', async () => {
    const { id } = await create();
    const answers = await Promise.all(Array.from({ length: 6 }, () => del(`/v2/contacts/${id}`)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [204, 404, 404, 404, 404, 404]);
  });

  test("another workspace's contact is 404 and stays; a read-only key is 403; no key is 401; a bad id is 400", async () => {
    const theirs = await server.workspace();
    const r = await server.request('POST', '/v2/contacts', { key: theirs.key, idem: idem(), body: contactBody() });
    const foreign = r.json.data.id as string;
    const refused = await del(`/v2/contacts/${foreign}`);
    assert.equal(refused.status, 404);
    assert.equal(refused.json.error.code, 'resource_not_found');
    assert.equal((await server.request('GET', `/v2/contacts/${foreign}`, { key: theirs.key })).status, 200);

    const { id } = await create();
    const reader = await w.newKey(['contacts:read']);
    const forbidden = await del(`/v2/contacts/${id}`, reader.key);
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.json.error.details.required_scope, 'contacts:write');
    assert.equal((await server.request('DELETE', `/v2/contacts/${id}`, { idem: idem() })).status, 401);
    assert.equal(
      (await server.request('DELETE', `/v2/contacts/${id}`, { key: writer })).json.error.code,
      'idempotency_key_missing',
    );
    const bad = await del('/v2/contacts/not-a-uuid');
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, 'invalid_path_parameter');
    assert.equal((await getContact(id)).status, 200, 'nothing refused deleted anything');
  });

  test('version 1 has no deletion', async () => {
    const { id } = await create();
    const r = await del(`/v1/contacts/${id}`);
    assert.equal(r.status, 404);
    assert.equal(r.json.error.code, 'route_not_found');
    assert.equal((await getContact(id)).status, 200);
  });
});

describe('DELETE /v2/contacts/external/{external_id}', () => {
  test('deletes the contact of the external id, raw or percent-encoded "/"; then 404', async () => {
    for (const encode of [(s: string) => s, encodeURIComponent]) {
      const externalId = `crm/${ext()}`;
      const family = await contactWithChildren();
      await server.db.query('UPDATE contacts SET external_id = $2 WHERE id = $1', [family.id, externalId]);
      const start = await head();
      const r = await del(`/v2/contacts/external/${encode(externalId)}`);
      assert.equal(r.status, 204, r.text);
      const events = await eventsAfter(start);
      assertChildrenFirst(events, family);
      assert.deepEqual(events.find((e) => e.type === 'contact.deleted')!.data, {
        id: family.id,
        external_id: externalId,
      });
      const lookup = await server.request('GET', `/v2/contacts/external/${encode(externalId)}`, { key: w.key });
      assert.equal(lookup.status, 404);
      assert.equal((await del(`/v2/contacts/external/${encode(externalId)}`)).status, 404);
    }
  });

  test('an upsert after the deletion creates a new contact', async () => {
    const externalId = ext();
    const first = await upsert(externalId);
    assert.equal((await del(`/v2/contacts/external/${externalId}`)).status, 204);
    const second = await upsert(externalId);
    assert.notEqual(second.id, first.id);
  });
});

describe('POST /v2/contacts/batch/delete', () => {
  test('ids and external_ids: one entry per value, in order; not found is an entry, not an error; one transaction', async () => {
    const byId = [await create(), await create()];
    const keyed = [await upsert(ext()), await upsert(ext())];
    const both = await upsert(ext());
    const family = await contactWithChildren();
    const missingId = randomUUID();
    const missingExternal = ext('missing');
    const start = await head();
    const r = await batchDelete({
      ids: [byId[0]!.id, missingId, both.id, byId[1]!.id, family.id],
      external_ids: [keyed[0]!.external_id, both.external_id, missingExternal, keyed[1]!.external_id],
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data, [
      { result: 'deleted', id: byId[0]!.id, external_id: null },
      { result: 'not_found', id: missingId, external_id: null },
      { result: 'deleted', id: both.id, external_id: both.external_id },
      { result: 'deleted', id: byId[1]!.id, external_id: null },
      { result: 'deleted', id: family.id, external_id: family.externalId },
      { result: 'deleted', id: keyed[0]!.id, external_id: keyed[0]!.external_id },
      { result: 'deleted', id: both.id, external_id: both.external_id },
      { result: 'not_found', id: null, external_id: missingExternal },
      { result: 'deleted', id: keyed[1]!.id, external_id: keyed[1]!.external_id },
    ]);
    assert.deepEqual(r.json.counts, { deleted: 7, not_found: 2 });
    const events = await eventsAfter(start);
    const deletedIds = [byId[0]!.id, byId[1]!.id, both.id, keyed[0]!.id, keyed[1]!.id, family.id];
    assert.deepEqual(
      events
        .filter((e) => e.type === 'contact.deleted')
        .map((e) => e.resource_id)
        .sort(),
      [...deletedIds].sort(),
      'one tombstone per contact, the one named twice included',
    );
    assertChildrenFirst(events, family);
    for (const e of events) assert.equal(e.request_id, r.headers.get('x-request-id'));
    const { rows } = await server.db.query('SELECT 1 FROM contacts WHERE id = ANY($1::uuid[])', [deletedIds]);
    assert.equal(rows.length, 0);

    // Sent again with a new key: every value not found, nothing more happens.
    const again = await batchDelete({ ids: [byId[0]!.id], external_ids: [keyed[0]!.external_id] });
    assert.deepEqual(again.json.counts, { deleted: 0, not_found: 2 });
  });

  test('its replay is the first answer, byte for byte; erasing nothing it names since', async () => {
    const a = await upsert(ext());
    const k = idem();
    const body = { external_ids: [a.external_id] };
    const first = await batchDelete(body, writer, k);
    assert.equal(first.status, 200);
    const replay = await batchDelete(body, writer, k);
    assert.equal(replay.status, 200);
    assert.equal(replay.text, first.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  });

  test('a refused body deletes nothing: over 100 values in all, a repeated value, neither list, an unknown property, a bad id', async () => {
    const keep = await upsert(ext());
    const many = Array.from({ length: 60 }, () => ext('none'));
    const cases: [unknown, RegExp][] = [
      [
        { ids: [keep.id], external_ids: [...many, ...many.map((e) => `${e}x`)].slice(0, 100) },
        /101 contacts.*at most 100/,
      ],
      [
        { external_ids: [keep.external_id, keep.external_id] },
        /is sent 2 times \(external_ids 0, 1\); each value may be sent once/,
      ],
      [{ ids: [keep.id, keep.id.toUpperCase()] }, /is sent 2 times \(ids 0, 1\)/],
      [{ ids: [], external_ids: [] }, /names no contact/],
      [{}, /ids or external_ids/],
      [{ ids: [keep.id], mode: 'partial' }, /mode/],
      [{ ids: ['not-a-uuid', keep.id] }, /uuid/],
      [{ ids: [] }, /names no contact/],
      [{ external_ids: Array.from({ length: 101 }, () => ext()) }, /0 to 100 items \(got 101\)/],
    ];
    for (const [body, message] of cases) {
      const r = await batchDelete(body);
      assert.equal(r.status, 422, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
      assert.equal(r.json.error.code, 'validation_failed');
      assert.match(JSON.stringify(r.json.error.details), message, r.text);
    }
    assert.equal((await getContact(keep.id)).status, 200);
  });

  test('a batch costing more than the whole quota counts as the whole quota: it passes when the quota is full', async () => {
    const tiny = await w.newKey(['contacts:write'], { rateLimitPerMinute: 5 });
    const values = Array.from({ length: 100 }, () => randomUUID());
    const first = await batchDelete({ ids: values }, tiny.key);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers.get('ratelimit-remaining'), '0', '10 requests of cost, counted as the 5 of the quota');
    const next = await batchDelete({ ids: values.slice(0, 1) }, tiny.key);
    assert.equal(next.status, 429);
    assert.ok(Number(next.headers.get('retry-after')) <= 12, next.headers.get('retry-after') ?? '');
  });

  test('a read-only key is 403; a batch of 100 values counts as 10 requests of the quota', async () => {
    const reader = await w.newKey(['contacts:read']);
    const forbidden = await batchDelete({ ids: [randomUUID()] }, reader.key);
    assert.equal(forbidden.status, 403);
    const limited = await w.newKey(['contacts:write'], { rateLimitPerMinute: 15 });
    const values = Array.from({ length: 100 }, () => randomUUID());
    assert.equal((await batchDelete({ ids: values }, limited.key)).status, 200);
    const next = await batchDelete({ ids: values.slice(0, 60) }, limited.key);
    assert.equal(next.status, 429, 'the quota left (5) is less than 60 values (6 requests)');
    assert.equal(next.json.error.code, 'rate_limit_exceeded');
  });
});

// Deadlocks happen only between PostgreSQL connections: the race runs on a PostgreSQL database of
// its own, in both passes of the suite.
const postgres = await findPostgres();
describeOrSkip(postgres.skip, 'overlapping deletions and upserts on PostgreSQL, whatever the store of the run', () => {
  let w: TestWorkspace;
  const server = usePostgresTestServer(postgres.url!, 'wsapi_delete_race', {
    setup: async () => {
      w = await server.workspace();
    },
  });
  const { head, eventsAfter, upsert } = on(server, () => w);

  test('8 overlapping batch deletes, single deletes and batch upserts at once: each contact deleted once, no deadlock', async () => {
    const pool: { id: string; external_id: string }[] = [];
    for (let i = 0; i < 60; i++) pool.push(await upsert(`race-${i}-${randomUUID().slice(0, 6)}`));
    const start = await head();
    const deadlocksBefore = await deadlocksSoFar(server.db);
    const shuffled = () => [...pool].sort(() => Math.random() - 0.5);
    const deletes = Array.from({ length: 8 }, (_, n) => {
      const chosen = shuffled().slice(0, 25);
      const body = n % 2 === 0 ? { external_ids: chosen.map((c) => c.external_id) } : { ids: chosen.map((c) => c.id) };
      return server.request('POST', '/v2/contacts/batch/delete', { key: w.key, idem: idem(), body });
    });
    const singles = shuffled()
      .slice(0, 8)
      .map((c) => server.request('DELETE', `/v2/contacts/${c.id}`, { key: w.key, idem: idem() }));
    // Upserts of other contacts of the workspace meanwhile: they take the same sync clock.
    const upserts = Array.from({ length: 4 }, (_, n) =>
      server.request('POST', '/v2/contacts/batch/upsert', {
        key: w.key,
        idem: idem(),
        body: { items: Array.from({ length: 30 }, (_, i) => ({ external_id: `other-${n}-${i}`, name: `Other ${n}` })) },
      }),
    );
    const [deleted, single, upserted] = await Promise.all([
      Promise.all(deletes),
      Promise.all(singles),
      Promise.all(upserts),
    ]);
    for (const r of deleted) assert.equal(r.status, 200, r.text);
    for (const r of upserted) assert.equal(r.status, 200, r.text);
    for (const r of single) assert.ok(r.status === 204 || r.status === 404, r.text);
    // Each contact deleted by exactly one of the requests that named it.
    const deletions = new Map<string, number>();
    for (const r of deleted)
      for (const entry of r.json.data)
        if (entry.result === 'deleted') deletions.set(entry.id, (deletions.get(entry.id) ?? 0) + 1);
    const events = await eventsAfter(start);
    const tombstones = events.filter((e) => e.type === 'contact.deleted').map((e) => e.resource_id);
    assert.equal(new Set(tombstones).size, tombstones.length, 'one tombstone per contact');
    const { rows } = await server.db.query<{ id: string }>(
      'SELECT id FROM contacts WHERE workspace_id = $1 AND id = ANY($2::uuid[])',
      [w.id, pool.map((c) => c.id)],
    );
    const left = new Set(rows.map((r) => r.id));
    assert.deepEqual(
      pool
        .filter((c) => !left.has(c.id))
        .map((c) => c.id)
        .sort(),
      [...tombstones].sort(),
      'the contacts gone are the ones with a tombstone',
    );
    const batchDeleted = [...deletions.values()];
    assert.ok(
      batchDeleted.every((n) => n === 1),
      'no contact deleted by two batches',
    );
    const singleDeleted = single.filter((r) => r.status === 204).length;
    assert.equal(deletions.size + singleDeleted, tombstones.length, 'every deletion answered is one tombstone');
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(await deadlocksSoFar(server.db), deadlocksBefore, 'deadlocks detected by PostgreSQL');
  });
});
