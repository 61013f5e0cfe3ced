// Where a written contact lives: every 201 names it in Location (v1 and v2, create and
// upsert-create, replays included), and an external_id containing "/" addresses the same contact
// whether the slash is sent raw or percent-encoded.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { contactBody, idem, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

let w: TestWorkspace;
const server = useTestServer({
  setup: async () => {
    w = await server.workspace({ rateLimitPerMinute: 1_000_000 });
  },
});

const write = (method: string, path: string, body: unknown, key = idem()) =>
  server.request(method, path, { key: w.key, body, idem: key });

describe('Location on every 201', () => {
  for (const v of ['v1', 'v2']) {
    test(`${v}: POST and upsert-create answer Location of the new contact, which GET finds; 200 has none`, async () => {
      const key = idem();
      const createBody = contactBody();
      const created = await write('POST', `/${v}/contacts`, createBody, key);
      assert.equal(created.status, 201, created.text);
      assert.equal(created.headers.get('location'), `/${v}/contacts/${created.json.data.id}`);
      const found = await server.request('GET', created.headers.get('location')!, { key: w.key });
      assert.equal(found.status, 200);
      assert.deepEqual(found.json.data, created.json.data);

      // A replay of the 201 names the same contact.
      const replay = await write('POST', `/${v}/contacts`, createBody, key);
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.headers.get('location'), created.headers.get('location'));

      const externalId = `loc-${v}-${Date.now()}`;
      const body = { name: 'Upserted', email: `${externalId}@example.com` };
      const upsertKey = idem();
      const first = await write('PUT', `/${v}/contacts/external/${externalId}`, body, upsertKey);
      assert.equal(first.status, 201, first.text);
      assert.equal(first.headers.get('location'), `/${v}/contacts/${first.json.data.id}`);
      const again = await write('PUT', `/${v}/contacts/external/${externalId}`, body, upsertKey);
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.headers.get('location'), first.headers.get('location'));
      const updated = await write('PUT', `/${v}/contacts/external/${externalId}`, { origin: 'crm' });
      assert.equal(updated.status, 200);
      assert.equal(updated.headers.get('location'), null);
    });
  }
});

describe('an external_id with "/" sent raw or encoded', () => {
  for (const v of ['v1', 'v2']) {
    test(`${v}: PUT …/external/hub/123 and …/external/hub%2F123 are the same contact`, async () => {
      const externalId = `hub/${v}/${Date.now()}`;
      const raw = await write('PUT', `/${v}/contacts/external/${externalId}`, contactBody());
      assert.equal(raw.status, 201, raw.text);
      assert.equal(raw.json.data.external_id, externalId);
      const encoded = await write('PUT', `/${v}/contacts/external/${encodeURIComponent(externalId)}`, {
        origin: 'encoded',
      });
      assert.equal(encoded.status, 200, encoded.text);
      assert.equal(encoded.json.data.id, raw.json.data.id);
      const rawAgain = await write('PUT', `/${v}/contacts/external/${externalId}?`, { origin: 'raw again' });
      assert.equal(rawAgain.status, 200, rawAgain.text);
      assert.equal(rawAgain.json.data.id, raw.json.data.id);
      assert.equal(rawAgain.json.data.origin, 'raw again');
    });
  }

  test('the same Idempotency-Key replays across the two spellings (they are one request)', async () => {
    const externalId = `crm/${Date.now()}`;
    const key = idem();
    const body = contactBody();
    const first = await write('PUT', `/v2/contacts/external/${externalId}`, body, key);
    assert.equal(first.status, 201, first.text);
    const replay = await write('PUT', `/v2/contacts/external/${encodeURIComponent(externalId)}`, body, key);
    assert.equal(replay.status, 201, replay.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.json, first.json);
  });

  test('a raw path that breaks the external_id pattern is 400, and other paths are not rewritten', async () => {
    const dot = await write('PUT', '/v1/contacts/external/.hidden/x', { origin: 'x' });
    assert.equal(dot.status, 400, dot.text);
    assert.equal(dot.json.error.code, 'invalid_path_parameter');
    const other = await server.request('GET', '/v1/contacts/a/b', { key: w.key });
    assert.equal(other.status, 404);
    assert.equal(other.json.error.code, 'route_not_found');
  });
});

describe('GET /v2/contacts/external/{external_id}', () => {
  test('finds the contact by the caller’s id, raw or encoded, as GET by id answers it; with a contacts:read key', async () => {
    const externalId = `crm/lookup/${Date.now()}`;
    const upserted = await write('PUT', `/v2/contacts/external/${encodeURIComponent(externalId)}`, {
      name: 'Looked "up" \u2028 🐙',
    });
    assert.equal(upserted.status, 201, upserted.text);
    const reader = (await w.newKey(['contacts:read'])).key;
    const byId = await server.request('GET', `/v2/contacts/${upserted.json.data.id}`, { key: reader });
    for (const path of [
      `/v2/contacts/external/${externalId}`,
      `/v2/contacts/external/${encodeURIComponent(externalId)}`,
    ]) {
      const found = await server.request('GET', path, { key: reader });
      assert.equal(found.status, 200, `${path}: ${found.text}`);
      assert.equal(found.text, byId.text, path);
    }
  });

  test('404 for an external_id no contact of the workspace has (another workspace’s included); 400 for one the pattern refuses', async () => {
    const other = await server.workspace();
    const theirs = `theirs-${Date.now()}`;
    const made = await server.request('PUT', `/v2/contacts/external/${theirs}`, {
      key: other.key,
      body: { name: 'Not yours' },
      idem: idem(),
    });
    assert.equal(made.status, 201, made.text);
    for (const externalId of [theirs, `nobody-${Date.now()}`]) {
      const r = await server.request('GET', `/v2/contacts/external/${externalId}`, { key: w.key });
      assert.equal(r.status, 404, r.text);
      assert.equal(r.json.error.code, 'resource_not_found');
      assert.ok(!r.text.includes('Not yours'));
    }
    const bad = await server.request('GET', `/v2/contacts/external/-starts-with-a-dash`, { key: w.key });
    assert.equal(bad.status, 400, bad.text);
    const long = await server.request('GET', `/v2/contacts/external/${'x'.repeat(129)}`, { key: w.key });
    assert.equal(long.status, 400, long.text);
  });

  test('is a v2 operation: /v1 has no such route', async () => {
    const r = await server.request('GET', `/v1/contacts/external/anything`, { key: w.key });
    assert.equal(r.status, 404, r.text);
  });
});
