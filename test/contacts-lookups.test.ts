// The lookups of GET /v2/contacts: email= (any case, exact), phone= and external_id=, each with up
// to 100 comma-separated values, read with the weakest key that lists contacts (contacts:read),
// never reaching another workspace, combined with the other filters and with pagination. Through
// HTTP into the store of this run.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { idem, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

let w: TestWorkspace;
let other: TestWorkspace;
/** contacts:read alone: the weakest key that lists contacts. */
let reader: string;
const run = randomUUID().slice(0, 8);
const server = useTestServer({
  setup: async () => {
    w = await server.workspace();
    other = await server.workspace();
    reader = (await w.newKey(['contacts:read'])).key;
  },
});

const list = (query: string, key = reader) => server.request('GET', `/v2/contacts?${query}`, { key });
const ids = (r: { json: { data: { id: string }[] } }) => r.json.data.map((c) => c.id).sort();

async function upsert(ws: TestWorkspace, externalId: string, body: Record<string, unknown>): Promise<string> {
  const r = await server.request('PUT', `/v2/contacts/external/${encodeURIComponent(externalId)}`, {
    key: ws.key,
    idem: idem(),
    body: { name: `Lookup ${externalId}`, ...body },
  });
  assert.ok(r.status === 201 || r.status === 200, r.text);
  return r.json.data.id as string;
}

describe('GET /v2/contacts lookups', () => {
  test('email: exact, whatever the case of either side; several at once; never another workspace', async () => {
    const ana = await upsert(w, `ana-${run}`, { email: `Ana.Souza.${run}@Example.com` });
    const bruno = await upsert(w, `bruno-${run}`, { email: `bruno.${run}@example.com` });
    await upsert(w, `near-${run}`, { email: `xana.souza.${run}@example.com` });
    await upsert(other, `ana-${run}`, { email: `ana.souza.${run}@example.com` });

    const one = await list(`email=${encodeURIComponent(`ANA.SOUZA.${run}@EXAMPLE.COM`)}`);
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(ids(one), [ana]);
    assert.equal(one.json.data[0].email, `Ana.Souza.${run}@Example.com`, 'stored as written');
    const both = await list(`email=${encodeURIComponent(`ana.souza.${run}@example.com,bruno.${run}@example.com`)}`);
    assert.deepEqual(ids(both), [ana, bruno].sort());
    assert.deepEqual(
      ids(await list(`email=${encodeURIComponent(`souza.${run}@example.com`)}`)),
      [],
      'no partial match',
    );
    // The other workspace's contact with the same e-mail is never found, with its own key either.
    const theirs = await list(`email=${encodeURIComponent(`ana.souza.${run}@example.com`)}`, other.key);
    assert.equal(theirs.json.data.length, 1);
    assert.notEqual(theirs.json.data[0].id, ana);
  });

  test('phone: exact E.164, + sent as %2B; combined with status (all filters must hold)', async () => {
    const phone = `+55119${String(Date.now()).slice(-8)}`;
    const talking = await upsert(w, `phone-a-${run}`, { phone, status: 'talking' });
    const lost = await upsert(w, `phone-b-${run}`, { phone, status: 'lost' });
    await upsert(w, `phone-c-${run}`, { whatsapp: phone });
    const r = await list(`phone=${encodeURIComponent(phone)}`);
    assert.deepEqual(ids(r), [talking, lost].sort(), 'the phone column only, not whatsapp');
    assert.deepEqual(ids(await list(`phone=${encodeURIComponent(phone)}&status=lost`)), [lost]);
    // A + left raw in a query string means a space: the value is not a phone number.
    const raw = await list(`phone=${phone}`);
    assert.equal(raw.status, 400);
    assert.equal(raw.json.error.code, 'invalid_query_parameter');
    assert.equal(raw.json.error.details.parameter, 'phone');
  });

  test('external_id: 100 values in one call, paged with a cursor bound to them; 101 are refused', async () => {
    const items = Array.from({ length: 120 }, (_, i) => ({ external_id: `crm/${run}/${i}`, name: `Chunk ${i}` }));
    const made: { contact: { id: string } }[] = [];
    for (const chunk of [items.slice(0, 100), items.slice(100)]) {
      const r = await server.request('POST', '/v2/contacts/batch/upsert', {
        key: w.key,
        idem: idem(),
        body: { items: chunk },
      });
      assert.equal(r.status, 200, r.text);
      made.push(...r.json.data);
    }
    const wanted = items.slice(10, 110).map((i) => i.external_id);
    const expected = made
      .slice(10, 110)
      .map((r) => r.contact.id)
      .sort();

    const all = await list(`external_id=${wanted.join(',')}&limit=100`);
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(ids(all), expected);
    assert.equal(all.json.page.has_more, false);

    const seen: string[] = [];
    let path = `external_id=${encodeURIComponent(wanted.join(','))}&limit=30`;
    for (;;) {
      const page = await list(path);
      assert.equal(page.status, 200, page.text);
      seen.push(...ids(page));
      if (!page.json.page.has_more) break;
      path = `external_id=${encodeURIComponent(wanted.join(','))}&limit=30&cursor=${encodeURIComponent(page.json.page.next_cursor)}`;
      // The cursor belongs to these values: with others it is refused.
      const elsewhere = await list(`external_id=${wanted[0]}&cursor=${encodeURIComponent(page.json.page.next_cursor)}`);
      assert.equal(elsewhere.json.error?.code, 'invalid_cursor');
    }
    assert.deepEqual(seen.sort(), expected);

    const tooMany = await list(
      `external_id=${items
        .slice(0, 101)
        .map((i) => i.external_id)
        .join(',')}`,
    );
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.json.error.code, 'invalid_query_parameter');
    assert.equal(tooMany.json.error.details.parameter, 'external_id');
    assert.ok(tooMany.text.length < 2_000, `the error does not echo the values: ${tooMany.text.length} bytes`);
    assert.match(tooMany.json.error.message, /^external_id must be 1 to 100 comma-separated values, each matching \^/);
    for (const bad of ['', ',', 'a,,b', 'a,', '-a']) {
      const r = await list(`external_id=${encodeURIComponent(bad)}`);
      assert.equal(r.status, 400, `external_id=${bad}: ${r.text}`);
      assert.match(r.json.error.message, /^external_id must be 1 to 100 comma-separated values/);
    }
    // Given twice: one parameter takes the list.
    const twice = await list('external_id=a1&external_id=a2');
    assert.equal(twice.status, 400, twice.text);
    assert.match(
      twice.json.error.message,
      /^external_id is given 2 times; give it once \(external_id must be 1 to 100 comma-separated values/,
    );
    assert.equal(twice.json.error.details.parameter, 'external_id');
  });

  test('updated_after with a lookup: only the changes of those contacts after the instant', async () => {
    const first = await upsert(w, `since-a-${run}`, { email: `since.a.${run}@example.com` });
    const second = await upsert(w, `since-b-${run}`, { email: `since.b.${run}@example.com` });
    const both = `external_id=since-a-${run},since-b-${run}`;
    const before = await list(both);
    const mark = before.json.data.find((c: { id: string }) => c.id === second).updated_at as string;
    const markFirst = before.json.data.find((c: { id: string }) => c.id === first).updated_at as string;
    assert.ok(markFirst < mark);
    assert.deepEqual(ids(await list(`${both}&updated_after=${encodeURIComponent(markFirst)}`)), [second]);
  });

  test('version 1 has no lookups; a key without contacts:read is refused', async () => {
    const v1 = await server.request('GET', '/v1/contacts?email=a%40example.com', { key: w.key });
    assert.equal(v1.status, 400);
    assert.equal(v1.json.error.code, 'invalid_query_parameter');
    const writer = (await w.newKey(['contacts:write'])).key;
    const refused = await list('email=a%40example.com', writer);
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error.details.required_scope, 'contacts:read');
  });
});
