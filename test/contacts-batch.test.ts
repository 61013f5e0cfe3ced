// POST /v2/contacts/batch/upsert: up to 100 upserts in one request, all or nothing, one event per
// created or changed contact in item order, and one contact per external id under concurrent
// batches. Through HTTP into the store of this run (embedded, or PostgreSQL with DATABASE_URL); the
// concurrent batches on PostgreSQL whatever the store of the run, where deadlocks can happen.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { deadlocksSoFar, idem, type TestServer, type TestWorkspace } from './harness.js';
import { describeOrSkip, findPostgres } from './servers.js';
import { usePostgresTestServer, useTestServer } from './test-server.js';

let w: TestWorkspace;
const server = useTestServer({
  setup: async () => {
    w = await server.workspace();
  },
});

const PATH = '/v2/contacts/batch/upsert';
/** Batches and the feed, through `server` for the workspace `ws()`. */
function requestsOn(server: TestServer, ws: () => TestWorkspace) {
  const batch = (items: unknown[], key = idem(), apiKey = ws().key) =>
    server.request('POST', PATH, { key: apiKey, idem: key, body: { items } });
  const partial = (items: unknown[], key = idem()) =>
    server.request('POST', PATH, { key: ws().key, idem: key, body: { mode: 'partial', items } });
  /** The feed's head now: events after it are the ones a step made. */
  const head = async (): Promise<string> =>
    (await server.request('GET', '/v2/events/head', { key: ws().key })).json.data.position as string;
  async function allEventsAfter(position: string): Promise<{ type: string; resource_id: string; data: any }[]> {
    const out: { type: string; resource_id: string; data: any }[] = [];
    let path = `/v2/events?after=${position}&limit=100`;
    for (;;) {
      const res = await server.request('GET', path, { key: ws().key });
      assert.equal(res.status, 200);
      out.push(...res.json.data);
      if (!res.json.page.has_more) return out;
      path = `/v2/events?cursor=${encodeURIComponent(res.json.page.next_cursor)}&limit=100`;
    }
  }
  return { batch, partial, head, allEventsAfter };
}
const { batch, partial, head } = requestsOn(server, () => w);
const ext = (prefix = 'b') => `${prefix}-${randomUUID().slice(0, 12)}`;

const contactCount = async (): Promise<number> =>
  (await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1', [w.id]))
    .rows[0]!.n;

async function eventsAfter(position: string): Promise<{ type: string; resource_id: string; data: any }[]> {
  const res = await server.request('GET', `/v2/events?after=${position}&limit=100`, { key: w.key });
  assert.equal(res.status, 200);
  return res.json.data;
}

describe('batch upsert of contacts', () => {
  test('all created: 200, one result per item in order, one contact.created per item in item order', async () => {
    const start = await head();
    const items = Array.from({ length: 30 }, (_, i) => ({
      external_id: ext(),
      name: `Batch ${i}`,
      email: `batch${i}@example.com`,
    }));
    const res = await batch(items);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.data.length, items.length);
    res.json.data.forEach((r: any, i: number) => {
      assert.equal(r.result, 'created');
      assert.equal(r.contact.external_id, items[i]!.external_id);
      assert.equal(r.contact.name, items[i]!.name);
      assert.equal(r.contact.status, 'cold_list', 'a created contact without status starts as cold_list');
      assert.equal(r.contact.phone, null);
    });
    const events = await eventsAfter(start);
    assert.deepEqual(
      events.map((e) => [e.type, e.resource_id]),
      res.json.data.map((r: any) => ['contact.created', r.contact.id]),
    );
    // Each contact reads back as the batch answered it.
    for (const r of res.json.data.slice(0, 3)) {
      const got = await server.request('GET', `/v2/contacts/${r.contact.id}`, { key: w.key });
      assert.deepEqual(got.json.data, r.contact);
    }
  });

  test('the same items again: every result unchanged, no updated_at move, no event', async () => {
    const items = Array.from({ length: 5 }, (_, i) => ({ external_id: ext(), name: `Same ${i}`, origin: 'csv' }));
    const first = await batch(items);
    assert.equal(first.status, 200);
    const start = await head();
    const again = await batch(items);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), null, 'a new key: run again, not replayed');
    assert.deepEqual(
      again.json.data.map((r: any) => r.result),
      items.map(() => 'unchanged'),
    );
    assert.deepEqual(
      again.json.data.map((r: any) => r.contact),
      first.json.data.map((r: any) => r.contact),
    );
    assert.deepEqual(await eventsAfter(start), []);
  });

  test('mixed: created, updated and unchanged in one batch; events for the first two only, in item order', async () => {
    const [a, b, c] = [ext(), ext(), ext()];
    await batch([
      { external_id: a, name: 'A', status: 'talking' },
      { external_id: b, name: 'B', email: 'b@example.com' },
    ]);
    const start = await head();
    const res = await batch([
      { external_id: b, status: 'meeting' },
      { external_id: c, company_name: 'C Ltd', whatsapp: '+5511987654321' },
      { external_id: a, status: 'talking' },
    ]);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.json.data.map((r: any) => r.result),
      ['updated', 'created', 'unchanged'],
    );
    const [updated, created] = res.json.data as any[];
    assert.equal(updated.contact.status, 'meeting');
    assert.equal(updated.contact.email, 'b@example.com', 'a property not sent keeps its value');
    assert.equal(updated.contact.name, 'B');
    assert.equal(created.contact.name, null);
    const events = await eventsAfter(start);
    assert.deepEqual(
      events.map((e) => [e.type, e.resource_id]),
      [
        ['contact.updated', updated.contact.id],
        ['contact.created', created.contact.id],
      ],
    );
  });

  test('created and updated items interleaved: one event each, in item order', async () => {
    // Each run of created or updated items is a statement of its own, whose events are written at
    // its end: in one statement, the updates' events would come before the creations'.
    const stored = [ext(), ext(), ext()];
    await batch(stored.map((id) => ({ external_id: id, name: 'stored' })));
    const fresh = [ext(), ext(), ext()];
    const start = await head();
    const items = [
      { external_id: fresh[0]!, name: 'new 0' },
      { external_id: stored[0]!, name: 'changed 0' },
      { external_id: stored[1]!, name: 'changed 1' },
      { external_id: fresh[1]!, name: 'new 1' },
      { external_id: stored[2]!, name: 'stored' },
      { external_id: fresh[2]!, name: 'new 2' },
    ];
    const res = await batch(items);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.json.data.map((r: any) => r.result),
      ['created', 'updated', 'updated', 'created', 'unchanged', 'created'],
    );
    const events = await eventsAfter(start);
    assert.deepEqual(
      events.map((e) => [e.type, e.data.external_id, e.data.name]),
      [
        ['contact.created', fresh[0], 'new 0'],
        ['contact.updated', stored[0], 'changed 0'],
        ['contact.updated', stored[1], 'changed 1'],
        ['contact.created', fresh[1], 'new 1'],
        ['contact.created', fresh[2], 'new 2'],
      ],
    );
  });

  test('a null clears a property; the contact reads back cleared', async () => {
    const id = ext();
    await batch([{ external_id: id, name: 'N', email: 'n@example.com' }]);
    const res = await batch([{ external_id: id, email: null }]);
    assert.equal(res.json.data[0].result, 'updated');
    assert.equal(res.json.data[0].contact.email, null);
  });

  test('one invalid item refuses the whole batch: 422 listing each bad item by index, nothing written', async () => {
    const before = await contactCount();
    const start = await head();
    const res = await batch([
      { external_id: ext(), name: 'fine' },
      { external_id: ext(), email: 'not-an-email' },
      { external_id: ext(), name: 'fine too' },
      { name: 'no external id', email: 'no-id@example.com' },
      { external_id: 'bad id with spaces', phone: '12' },
      { external_id: ext() },
      { external_id: ext(), colour: 'red' },
    ]);
    assert.equal(res.status, 422, res.text);
    assert.equal(res.json.error.code, 'validation_failed');
    const items = res.json.error.details.items as { index: number; errors: { field: string; message: string }[] }[];
    assert.deepEqual(
      items.map((i) => i.index),
      [1, 3, 4, 5, 6],
    );
    const fields = Object.fromEntries(items.map((i) => [i.index, i.errors.map((e) => e.field).sort()]));
    assert.deepEqual(fields[1], ['email']);
    assert.deepEqual(fields[3], ['external_id']);
    assert.deepEqual(fields[4], ['external_id', 'phone']);
    assert.deepEqual(fields[6], ['colour']);
    assert.match(items.find((i) => i.index === 5)!.errors[0]!.message, /at least one property/);
    assert.equal(await contactCount(), before);
    assert.deepEqual(await eventsAfter(start), []);
  });

  test('external_ids repeated within the batch: 422 naming every item of each, nothing written', async () => {
    const before = await contactCount();
    const [dup, twice] = [ext(), ext()];
    const res = await batch([
      { external_id: dup, name: 'first' },
      { external_id: twice, name: 'other' },
      { external_id: dup, name: 'again' },
      { external_id: twice, name: 'other again' },
      { external_id: dup, name: 'third' },
    ]);
    assert.equal(res.status, 422, res.text);
    const thrice = '3 items send this external_id (items 0, 2 and 4); each may be sent once';
    const two = '2 items send this external_id (items 1 and 3); each may be sent once';
    assert.deepEqual(res.json.error.details.items, [
      { index: 0, errors: [{ field: 'external_id', message: thrice }] },
      { index: 1, errors: [{ field: 'external_id', message: two }] },
      { index: 2, errors: [{ field: 'external_id', message: thrice }] },
      { index: 3, errors: [{ field: 'external_id', message: two }] },
      { index: 4, errors: [{ field: 'external_id', message: thrice }] },
    ]);
    assert.equal(await contactCount(), before);
  });

  test('partial: the valid items are written in item order, each invalid one answered in its place (207)', async () => {
    const [updated, same] = [ext('upd'), ext('same')];
    const prepared = await batch([
      { external_id: updated, name: 'Before' },
      { external_id: same, name: 'Same', origin: 'crm' },
    ]);
    assert.equal(prepared.status, 200, prepared.text);
    const before = await contactCount();
    const start = await head();
    const [a, b, badEmail, dup, nul, internal] = [ext('a'), ext('b'), ext('mail'), ext('dup'), ext('nul'), ext('int')];
    const items = [
      { external_id: a, name: 'A' },
      { external_id: badEmail, email: 'not an e-mail' },
      { external_id: dup, name: 'first' },
      { external_id: b, name: 'B' },
      42,
      { external_id: dup, name: 'second' },
      { external_id: nul, name: 'a\u0000b' },
      { external_id: internal, name: 'I', notes: 'internal' },
      { external_id: updated, name: 'After' },
      { external_id: same, name: 'Same' },
    ];
    const key = idem();
    const res = await partial(items, key);
    assert.equal(res.status, 207, res.text);
    assert.deepEqual(res.json.counts, { created: 2, updated: 1, unchanged: 1, invalid: 6 });
    const data = res.json.data as any[];
    assert.deepEqual(
      data.map((r) => r.result),
      ['created', 'invalid', 'invalid', 'created', 'invalid', 'invalid', 'invalid', 'invalid', 'updated', 'unchanged'],
    );
    assert.deepEqual(
      [0, 3, 8, 9].map((i) => data[i].contact.external_id),
      [a, b, updated, same],
    );
    const invalid = Object.fromEntries(data.filter((r) => r.result === 'invalid').map((r) => [r.index, r]));
    assert.deepEqual(invalid[1], {
      result: 'invalid',
      index: 1,
      external_id: badEmail,
      errors: [{ field: 'email', message: 'must be a valid email' }],
    });
    const twice = '2 items send this external_id (items 2 and 5); each may be sent once';
    assert.deepEqual(invalid[2].errors, [{ field: 'external_id', message: twice }]);
    assert.deepEqual(invalid[5].errors, [{ field: 'external_id', message: twice }]);
    assert.equal(invalid[4].external_id, null);
    assert.equal(invalid[4].errors[0].field, null);
    assert.deepEqual(invalid[6].errors, [
      { field: 'name', message: 'holds a NUL character (U+0000), which cannot be stored' },
    ]);
    assert.deepEqual(invalid[7].errors, [{ field: 'notes', message: 'is not a property of this body' }]);
    // Written: the valid items only, their events in item order; nothing of the invalid ones.
    assert.equal(await contactCount(), before + 2);
    assert.deepEqual(
      (await eventsAfter(start)).map((e) => [e.type, e.data.external_id]),
      [
        ['contact.created', a],
        ['contact.created', b],
        ['contact.updated', updated],
      ],
    );
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND external_id = ANY($2::text[])',
      [w.id, [badEmail, dup, nul, internal]],
    );
    assert.equal(rows[0]!.n, 0);
    // The answer is the request's: its replay is the same bytes, status included.
    const replay = await partial(items, key);
    assert.equal(replay.status, 207);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.text, res.text);
  });

  test('partial with every item invalid: 422 as all or nothing, nothing written, the key stays free', async () => {
    const before = await contactCount();
    const key = idem();
    const res = await partial([{ external_id: ext(), email: 'nope' }, { name: 'no external id' }], key);
    assert.equal(res.status, 422, res.text);
    assert.deepEqual(
      res.json.error.details.items.map((i: any) => [i.index, i.errors.map((e: any) => e.field)]),
      [
        [0, ['email']],
        [1, [null, 'external_id']],
      ],
    );
    assert.equal(await contactCount(), before);
    const fixed = await partial([{ external_id: ext(), name: 'Fixed' }], key);
    assert.equal(fixed.status, 200, fixed.text);
    assert.deepEqual(fixed.json.counts, { created: 1, updated: 0, unchanged: 0, invalid: 0 });
  });

  test('partial with every item invalid answers the 422 of all or nothing, an item past five problems counted', async () => {
    // Six problems: five worded, one counted in more_errors. Then the same with a repeated
    // external_id, a rule the schema cannot say.
    const many = { email: 'x', phone: '1', whatsapp: '1', status: 'z', unknown_a: 1, unknown_b: 1 };
    const dup = ext('dup');
    for (const [items, unworded] of [
      [[{ external_id: ext(), ...many }], 1],
      [
        [
          { external_id: dup, ...many },
          { external_id: dup, email: 'y' },
        ],
        2,
      ],
    ] as const) {
      const all = await batch([...items]);
      const part = await partial([...items]);
      assert.equal(all.status, 422, all.text);
      assert.equal(part.status, 422, part.text);
      assert.deepEqual(part.json.error.details, all.json.error.details);
      assert.equal(part.json.error.message, all.json.error.message);
      const first = all.json.error.details.items[0];
      assert.equal(first.errors.length, 5, all.text);
      assert.equal(first.more_errors, unworded, all.text);
      // A repeated external_id is named whatever else is wrong with the item.
      if (items.length > 1) assert.match(first.errors[0].message, /^2 items send this external_id/, all.text);
    }
  });

  test('partial: a body that is no batch is refused whole (mode, items, bounds), nothing written', async () => {
    const before = await contactCount();
    const cases: [unknown, string][] = [
      [{ mode: 'sometimes', items: [{ external_id: ext(), name: 'x' }] }, 'mode'],
      [{ mode: 'partial', items: 'none' }, 'items'],
      [{ mode: 'partial', items: [] }, 'items'],
      [{ mode: 'partial', items: Array.from({ length: 101 }, () => ({ external_id: ext(), name: 'x' })) }, 'items'],
      [{ mode: 'partial', items: [{ external_id: ext(), name: 'x' }], extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await server.request('POST', PATH, { key: w.key, idem: idem(), body });
      assert.equal(res.status, 422, res.text);
      assert.equal(res.json.error.details.errors[0].field, field, res.text);
    }
    assert.equal(await contactCount(), before);
  });

  test('every bad item is named whatever the mode, schema problems, repeats and NULs together, in the same words', async () => {
    const dup = ext('dup');
    const items = [
      { external_id: dup, name: 'a' },
      { external_id: ext(), email: 'bad' },
      { external_id: dup, name: 'b' },
      { name: 'no external_id' },
      7,
      { external_id: ext(), name: 'nul \u0000' },
      { external_id: ext(), name: 'fine' },
    ];
    const all = await batch(items);
    const partialAnswer = await partial(items);
    assert.equal(all.status, 422, all.text);
    assert.equal(partialAnswer.status, 207, partialAnswer.text);
    const listed = all.json.error.details.items.map((i: any) => ({ index: i.index, errors: i.errors }));
    assert.deepEqual(
      listed.map((i: any) => i.index),
      [0, 1, 2, 3, 4, 5],
    );
    // The same problems, in the same words, as the partial answer gives each item in its place.
    const invalid = partialAnswer.json.data
      .filter((r: any) => r.result === 'invalid')
      .map((r: any) => ({ index: r.index, errors: r.errors }));
    assert.deepEqual(invalid, listed);
    assert.deepEqual(listed[3].errors.map((e: any) => e.message).sort(), [
      'is required',
      'must carry external_id and at least one property to write',
    ]);
    assert.deepEqual(listed[4].errors, [{ field: null, message: 'must be object' }]);
    assert.ok(all.json.error.details.errors.some((e: any) => e.field === 'items/4'));
  });

  test('an external_id repeated in many places: each item names the first 10 and counts the others', async () => {
    const dup = ext('many');
    const items = [
      { external_id: ext(), name: 'fine' },
      ...Array.from({ length: 30 }, () => ({ external_id: dup, name: 'x' })),
    ];
    const res = await partial(items);
    assert.equal(res.status, 207, res.text);
    const message =
      '30 items send this external_id (items 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 20 others); each may be sent once';
    for (const r of res.json.data.slice(1)) assert.deepEqual(r.errors, [{ field: 'external_id', message }]);
  });

  test('a NUL character in an item: 422 naming the item and property, nothing written', async () => {
    const before = await contactCount();
    const res = await batch([
      { external_id: ext(), name: 'fine' },
      { external_id: ext(), name: 'a\u0000b', origin: 'ok' },
    ]);
    assert.equal(res.status, 422, res.text);
    assert.deepEqual(res.json.error.details.items, [
      { index: 1, errors: [{ field: 'name', message: 'holds a NUL character (U+0000), which cannot be stored' }] },
    ]);
    assert.equal(await contactCount(), before);
  });

  test('0 items and 101 items: 422 stating the bounds; 100 items pass', async () => {
    const before = await contactCount();
    const none = await batch([]);
    assert.equal(none.status, 422);
    assert.equal(none.json.error.message, 'items: must hold 1 to 100 items (got 0)');
    const tooMany = await batch(Array.from({ length: 101 }, () => ({ external_id: ext(), name: 'x' })));
    assert.equal(tooMany.status, 422);
    assert.equal(tooMany.json.error.message, 'items: must hold 1 to 100 items (got 101)');
    assert.equal(await contactCount(), before);
    const hundred = await batch(Array.from({ length: 100 }, () => ({ external_id: ext(), name: 'x' })));
    assert.equal(hundred.status, 200);
    assert.equal(await contactCount(), before + 100);
  });

  test('Idempotency-Key: the same request replays the stored answer; another body under the key is 409', async () => {
    const key = idem();
    const items = [{ external_id: ext(), name: 'R' }];
    const first = await batch(items, key);
    const replay = await batch(items, key);
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.text, first.text);
    assert.equal(replay.json.data[0].result, 'created', 'the stored answer, not a second run');
    const other = await batch([{ external_id: ext(), name: 'R' }], key);
    assert.equal(other.status, 409);
    assert.equal(other.json.error.code, 'idempotency_key_reused');
    const missing = await server.request('POST', PATH, { key: w.key, body: { items } });
    assert.equal(missing.status, 400);
    assert.equal(missing.json.error.code, 'idempotency_key_missing');
  });

  test('deleting one contact of a batch erases the batch’s stored answer: its replay is 404', async () => {
    const key = idem();
    const items = [
      { external_id: ext(), name: 'Keep', email: 'keep@example.com' },
      { external_id: ext(), name: 'Gone', email: 'gone@example.com' },
    ];
    const first = await batch(items, key);
    await ownerCommands.deleteContact(server.owner, { contactId: first.json.data[1].contact.id });
    const replay = await batch(items, key);
    assert.equal(replay.status, 404);
    assert.equal(replay.json.error.code, 'resource_not_found');
    assert.doesNotMatch(replay.text, /gone@example\.com|Keep/);
    const stored = await server.db.query<{ body: string }>(
      'SELECT response_body AS body FROM idempotency_keys WHERE workspace_id = $1 AND key = $2',
      [w.id, key],
    );
    assert.equal(stored.rows[0]!.body, '', 'the stored answer itself is erased');
  });

  test('crossed by other writers on every attempt: 503 with Retry-After, nothing written, the key still free', async () => {
    // A trigger of this run's database stands for writers that cross the batch each time it runs:
    // every insert of this external id is rolled back as a serialization failure.
    const crossed = ext('crossed');
    const fresh = ext('fresh');
    await server.db.exec(`
      CREATE FUNCTION test_always_crossed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'crossed' USING ERRCODE = 'serialization_failure'; END $$;
      CREATE TRIGGER test_always_crossed BEFORE INSERT ON contacts FOR EACH ROW
        WHEN (NEW.external_id = '${crossed}') EXECUTE FUNCTION test_always_crossed();`);
    const key = idem();
    try {
      const r = await batch(
        [
          { external_id: fresh, name: 'Fresh' },
          { external_id: crossed, name: 'Crossed' },
        ],
        key,
      );
      assert.equal(r.status, 503, r.text);
      assert.equal(r.json.error.code, 'service_unavailable');
      assert.equal(r.headers.get('retry-after'), '1');
      assert.match(r.json.error.message, /nothing was written/);
    } finally {
      await server.db.exec('DROP TRIGGER test_always_crossed ON contacts; DROP FUNCTION test_always_crossed()');
    }
    const { rows } = await server.db.query(
      'SELECT 1 FROM contacts WHERE workspace_id = $1 AND external_id = ANY($2::text[])',
      [w.id, [fresh, crossed]],
    );
    assert.equal(rows.length, 0, 'nothing written');
    const again = await batch(
      [
        { external_id: fresh, name: 'Fresh' },
        { external_id: crossed, name: 'Crossed' },
      ],
      key,
    );
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json.counts, { created: 2, updated: 0, unchanged: 0, invalid: 0 });
  });

  test('the scope is contacts:write; the operation is v2 only; a batch counts one request per 10 items', async () => {
    const reader = await w.newKey(['contacts:read']);
    const refused = await batch([{ external_id: ext(), name: 'x' }], idem(), reader.key);
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error.code, 'insufficient_scope');
    const v1 = await server.request('POST', '/v1/contacts/batch/upsert', {
      key: w.key,
      idem: idem(),
      body: { items: [{ external_id: ext(), name: 'x' }] },
    });
    assert.equal(v1.status, 404);

    // A quota refills one request every 5 s: nothing refills during the test.
    const writer = await w.newKey(['contacts:write'], { rateLimitPerMinute: 12 });
    const items = Array.from({ length: 100 }, () => ({ external_id: ext(), name: 'counted' }));
    const res = await batch(items, idem(), writer.key);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ratelimit-limit'), '12');
    assert.equal(res.headers.get('ratelimit-remaining'), '2', '100 contacts, ten requests of the quota');
    const small = await batch([{ external_id: ext(), name: 'one' }], idem(), writer.key);
    assert.equal(small.status, 200);
    assert.equal(small.headers.get('ratelimit-remaining'), '1', '1 to 10 items: one request');
    const more = await batch(
      items.slice(0, 11).map((i) => ({ ...i, external_id: ext() })),
      idem(),
      writer.key,
    );
    assert.equal(more.status, 429, '11 items are two requests, and one is left');
    assert.equal(more.json.error.code, 'rate_limit_exceeded');
    assert.ok(Number(more.headers.get('retry-after')) >= 1);
  });
});

// Deadlocks happen only between PostgreSQL connections (the embedded store runs one statement at a
// time): the race runs on a PostgreSQL database of its own with a pool of connections, in both
// passes of the suite, so that the deadlocks counted there are its own.
const postgres = await findPostgres();
describeOrSkip(postgres.skip, 'concurrent batch upserts on PostgreSQL, whatever the store of the run', () => {
  let w: TestWorkspace;
  const server = usePostgresTestServer(postgres.url!, 'wsapi_batch_race', {
    setup: async () => {
      w = await server.workspace();
    },
  });
  const { batch, head, allEventsAfter } = requestsOn(server, () => w);

  test('a contact created by plain SQL while a batch waits to write it: the batch is retried and answers updated', async () => {
    // Plain SQL takes no external id lock: the batch finds no contact, then waits for the sync
    // clock the SQL transaction holds; once that commits, the batch's insert finds the contact.
    const externalId = ext('sql');
    const start = await head();
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    const sql = server.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO contacts (workspace_id, external_id, name, company_name) VALUES ($1, $2, 'By SQL', 'SQL Co')`,
        [w.id, externalId],
      );
      await committed;
    });
    const answer = batch([{ external_id: externalId, name: 'By API' }]);
    // The batch is waiting for a lock (the clock) before the SQL transaction commits.
    for (let waited = 0; ; waited += 20) {
      const { rows } = await server.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%contacts_batch_created%'`,
      );
      if (rows[0]!.n > 0) break;
      assert.ok(waited < 5_000, 'the batch never waited for the clock');
      await new Promise((r) => setTimeout(r, 20));
    }
    commit();
    await sql;
    const r = await answer;
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data[0].result, 'updated');
    assert.deepEqual(r.json.counts, { created: 0, updated: 1, unchanged: 0, invalid: 0 });
    assert.equal(r.json.data[0].contact.name, 'By API');
    assert.equal(r.json.data[0].contact.company_name, 'SQL Co', 'what the batch did not send is kept');
    const events = (await allEventsAfter(start)).filter((e) => e.resource_id === r.json.data[0].contact.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['contact.created', 'contact.updated'],
    );
  });

  test('8 overlapping batches at once: all 200, one contact per external id, one created event per id', async () => {
    const pool = Array.from({ length: 60 }, () => ext('race'));
    const start = await head();
    const batches = Array.from({ length: 8 }, (_, n) => {
      // Each batch takes 40 of the 60 ids, in its own order.
      const ids = [...pool].sort(() => Math.random() - 0.5).slice(0, 40);
      return ids.map((external_id) => ({ external_id, origin: `batch-${n}`, name: `N ${n}` }));
    });
    const deadlocks = () => deadlocksSoFar(server.db);
    const deadlocksBefore = await deadlocks();
    const answers = await Promise.all(batches.map((items) => batch(items)));
    for (const a of answers) assert.equal(a.status, 200, a.text);
    // Not one deadlock broken by PostgreSQL (and retried unseen): the batches took their ids in one
    // order. The statistics reach pg_stat_database within a second.
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(await deadlocks(), deadlocksBefore, 'deadlocks detected by PostgreSQL');
    const { rows } = await server.db.query<{ external_id: string; n: number }>(
      `SELECT external_id, count(*)::int AS n FROM contacts
        WHERE workspace_id = $1 AND external_id = ANY($2::text[]) GROUP BY external_id`,
      [w.id, pool],
    );
    const touched = new Set(batches.flat().map((i) => i.external_id));
    assert.equal(rows.length, touched.size);
    assert.ok(rows.every((r) => r.n === 1));
    // Every id was created exactly once, by exactly one batch.
    const created = answers.flatMap((a) => a.json.data.filter((r: any) => r.result === 'created'));
    assert.equal(created.length, touched.size);
    const events = await allEventsAfter(start);
    const createdEvents = events.filter((e) => e.type === 'contact.created');
    assert.equal(createdEvents.length, touched.size);
    // The stored contact is the last batch's values for it, as the feed's last event says.
    const last = new Map<string, any>();
    for (const e of events) last.set(e.resource_id, e.data);
    for (const a of answers)
      for (const r of a.json.data) {
        const stored = await server.request('GET', `/v2/contacts/${r.contact.id}`, { key: w.key });
        assert.deepEqual(stored.json.data, last.get(r.contact.id));
      }
  });
});
