// The answer of a single contact write (POST, PATCH, PUT by external id) is the contact as the
// database's generated representation writes it, recorded for replays in the round trip that makes
// the change and commits (src/infra/idempotency-store.ts, ResourceWrite). Checked here through HTTP into the real store:
// every such answer, odd characters and nulls included, is byte for byte what the route's schema
// serializer writes for the same values, what a GET of the contact then writes, and what a replay
// of the request answers; a write that finds nothing to change records nothing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Contact, ContactBatchPartialResults, ContactBatchResults } from '../src/modules/contacts/contacts.schemas.js';
import { Single } from '../src/shared/schemas.js';
import { ODD, schemaText } from './schema-text.js';
import {
  contactBody,
  idem,
  type RequestOptions,
  type TestResponse,
  type TestWorkspace,
  UNKNOWN_ID,
} from './harness.js';
import { useTestServer } from './test-server.js';

let w: TestWorkspace;
const server = useTestServer({
  setup: async () => {
    w = await server.workspace({ rateLimitPerMinute: 100_000 });
  },
});

/** Sends the write, checks its answer's text, then replays it and checks the replay says the same. */
async function write(method: string, path: string, options: RequestOptions, status: number): Promise<TestResponse> {
  const key = idem();
  const r = await server.request(method, path, { key: w.key, idem: key, ...options });
  assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
  assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.equal(r.text, await schemaText(Single(Contact), r.text), `${method} ${path}: the schema's text`);
  const get = await server.request('GET', `/v2/contacts/${r.json.data.id}`, { key: w.key });
  assert.equal(r.text, get.text, `${method} ${path}: a GET's text`);
  const replay = await server.request(method, path, { key: w.key, idem: key, ...options });
  assert.equal(replay.status, status);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.equal(replay.text, r.text, `${method} ${path}: the replay's text`);
  assert.equal(replay.headers.get('location'), r.headers.get('location'));
  return r;
}

describe('answers of single contact writes, written by the database', () => {
  test('POST, PATCH and PUT answer the schema serializer’s text, odd characters and nulls included', async () => {
    for (const version of ['v1', 'v2']) {
      const created = await write(
        'POST',
        `/${version}/contacts`,
        { body: contactBody({ name: ODD, company_name: null, phone: null }) },
        201,
      );
      assert.equal(created.headers.get('location'), `/${version}/contacts/${created.json.data.id}`);
      assert.equal(created.json.data.name, ODD);
      assert.equal(created.json.data.company_name, null);

      const patched = await write(
        'PATCH',
        `/${version}/contacts/${created.json.data.id}`,
        { body: { company_name: `${ODD} Ltda`, whatsapp: null } },
        200,
      );
      assert.equal(patched.json.data.company_name, `${ODD} Ltda`);
      assert.equal(patched.headers.get('location'), null);

      const externalId = `crm/${version}/${ODD.slice(0, 5)}-${idem()}`;
      const path = `/${version}/contacts/external/${encodeURIComponent(externalId)}`;
      const upserted = await write('PUT', path, { body: { name: ODD } }, 201);
      assert.equal(upserted.json.data.external_id, externalId);
      assert.equal(upserted.headers.get('location'), `/${version}/contacts/${upserted.json.data.id}`);
      const updated = await write('PUT', path, { body: { origin: ODD } }, 200);
      assert.equal(updated.json.data.id, upserted.json.data.id);
      assert.equal(updated.json.data.origin, ODD);
      assert.equal(updated.headers.get('location'), null);
    }
  });

  test('a PATCH of a contact that does not exist is 404 and records nothing: its key is still free', async () => {
    const key = idem();
    const missing = await server.request('PATCH', `/v2/contacts/${UNKNOWN_ID}`, {
      key: w.key,
      idem: key,
      body: { name: 'Nobody' },
    });
    assert.equal(missing.status, 404, missing.text);
    assert.equal(missing.json.error.code, 'resource_not_found');
    const { rows } = await server.db.query('SELECT 1 FROM idempotency_keys WHERE workspace_id = $1 AND key = $2', [
      w.id,
      key,
    ]);
    assert.equal(rows.length, 0);
    // The same key on another request is not a reuse.
    const created = await server.request('POST', '/v2/contacts', { key: w.key, idem: key, body: contactBody() });
    assert.equal(created.status, 201, created.text);
  });

  test('the stored answer is the answer sent, with the contact it names', async () => {
    const key = idem();
    const created = await server.request('POST', '/v2/contacts', { key: w.key, idem: key, body: contactBody() });
    assert.equal(created.status, 201, created.text);
    const { rows } = await server.db.query<{ status_code: number; response_body: string; resource_id: string }>(
      'SELECT status_code, response_body, resource_id FROM idempotency_keys WHERE workspace_id = $1 AND key = $2',
      [w.id, key],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.status_code, 201);
    assert.equal(rows[0]!.response_body, created.text);
    assert.equal(rows[0]!.resource_id, created.json.data.id);
  });
});

describe('answers of batch upserts, written by the database', () => {
  test('a partial batch answers the schema serializer’s text: created, updated, unchanged and invalid entries, odd characters included', async () => {
    const stored = `odd-${idem()}`;
    const kept = `odd-${idem()}`;
    const setup = await server.request('POST', '/v2/contacts/batch/upsert', {
      key: w.key,
      idem: idem(),
      body: {
        items: [
          { external_id: stored, name: 'Before' },
          { external_id: kept, name: ODD, origin: null },
        ],
      },
    });
    assert.equal(setup.status, 200, setup.text);
    const key = idem();
    const body = {
      mode: 'partial',
      items: [
        // invalid: an external_id with odd characters; an unknown property named with them
        { external_id: `${ODD}`, name: 'x' },
        { external_id: `new-${idem()}`, name: ODD, company_name: null, email: 'Odd.Case@Example.com' },
        { external_id: stored, company_name: `${ODD} Ltda` },
        { external_id: kept, name: ODD },
        { external_id: `new-${idem()}`, [`${ODD}`]: 1 },
        { external_id: `new-${idem()}`, status: 'talking' },
      ],
    };
    const r = await server.request('POST', '/v2/contacts/batch/upsert', { key: w.key, idem: key, body });
    assert.equal(r.status, 207, r.text);
    assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(
      r.json.data.map((e: { result: string }) => e.result),
      ['invalid', 'created', 'updated', 'unchanged', 'invalid', 'created'],
    );
    assert.deepEqual(r.json.counts, { created: 2, updated: 1, unchanged: 1, invalid: 2 });
    assert.equal(r.text, await schemaText(ContactBatchPartialResults, r.text), 'the schema’s text');
    // Each contact as a GET writes it now.
    for (const entry of r.json.data.filter((e: { result: string }) => e.result !== 'invalid')) {
      const get = await server.request('GET', `/v2/contacts/${entry.contact.id}`, { key: w.key });
      assert.equal(JSON.stringify(entry.contact), JSON.stringify(get.json.data));
    }
    const replay = await server.request('POST', '/v2/contacts/batch/upsert', { key: w.key, idem: key, body });
    assert.equal(replay.status, 207);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.text, r.text, 'the replay’s text');

    const whole = await server.request('POST', '/v2/contacts/batch/upsert', {
      key: w.key,
      idem: idem(),
      body: {
        items: [
          { external_id: kept, name: `${ODD}!` },
          { external_id: `new-${idem()}`, origin: ODD },
        ],
      },
    });
    assert.equal(whole.status, 200, whole.text);
    assert.equal(whole.text, await schemaText(ContactBatchResults, whole.text), 'the schema’s text (200)');
  });
});
