// Version 2 contacts and appointments equal the v1 objects, and v2 contact writes keep the v1
// rules (Idempotency-Key, media type, upsert statuses, body rules).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, test } from 'node:test';
import { contactBody, idem } from './harness.js';
import { A, B, all, assertError, assertItemShape, get, server, useV2Workspaces } from './v2-support.js';

useV2Workspaces();

// ------------------------------------------------------------------------------------------ v1 equality

describe('v2 contacts and appointments are the v1 objects', () => {
  for (const [name, path] of [
    ['contacts', 'contacts'],
    ['appointments', 'appointments'],
  ] as const) {
    test(`${name}: GET /v1 and /v2 of every id answer the same bytes; the lists hold the same items`, async () => {
      const v2 = await all(`/v2/${path}`);
      const v1 = await all(`/v1/${path}`);
      assert.deepEqual(v2, v1);
      assert.ok(v2.length > 0);
      for (const { id } of v2) {
        const a = await get(`/v1/${path}/${id}`);
        const b = await get(`/v2/${path}/${id}`);
        assert.equal(a.status, 200);
        assert.equal(b.status, 200);
        assert.equal(b.text, a.text, `${path}/${id}`);
        assert.equal(b.headers.get('content-type'), a.headers.get('content-type'));
      }
      const p1 = await get(`/v1/${path}?limit=100`);
      const p2 = await get(`/v2/${path}?limit=100`);
      assert.deepEqual(p2.json.data, p1.json.data);
    });
  }
});

// ------------------------------------------------------------------------------------------ writes

describe('v2 contact writes keep the v1 rules', () => {
  const writes = () => [
    { method: 'POST', path: '/v2/contacts', body: contactBody(), ok: 201 },
    { method: 'PATCH', path: `/v2/contacts/${patchId}`, body: { origin: `o-${randomUUID().slice(0, 8)}` }, ok: 200 },
    {
      method: 'PUT',
      path: `/v2/contacts/external/ext-${randomUUID()}`,
      body: { name: 'Ext', phone: '+5511900000000' },
      ok: 201,
    },
  ];
  let patchId: string;
  before(async () => {
    patchId = (await server.request('POST', '/v2/contacts', { key: A.key, body: contactBody(), idem: idem() })).json
      .data.id;
  });

  const count = async () =>
    (await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1', [A.id]))
      .rows[0]!.n;

  test('missing Idempotency-Key: 400; bad key: 400; text/plain: 415; nothing is written', async () => {
    const before = await count();
    for (const w of writes()) {
      const missing = await server.request(w.method, w.path, { key: A.key, body: w.body });
      assertError(missing, 400, 'invalid_request', 'idempotency_key_missing', `${w.method} missing key`);
      const short = await server.request(w.method, w.path, { key: A.key, body: w.body, idem: 'short' });
      assertError(short, 400, 'invalid_request', 'idempotency_key_invalid', `${w.method} short key`);
      const text = await server.request(w.method, w.path, {
        key: A.key,
        raw: JSON.stringify(w.body),
        contentType: 'text/plain',
        idem: idem(),
      });
      assertError(text, 415, 'invalid_request', 'unsupported_media_type', `${w.method} text/plain`);
      const malformed = await server.request(w.method, w.path, { key: A.key, raw: '{"name":', idem: idem() });
      assertError(malformed, 400, 'invalid_request', 'invalid_json', `${w.method} malformed JSON`);
      const huge = await server.request(w.method, w.path, {
        key: A.key,
        body: { ...w.body, origin: 'x'.repeat(2_000_000) },
        idem: idem(),
      });
      assertError(huge, 413, 'invalid_request', 'payload_too_large', `${w.method} 2 MB`);
    }
    for (const bad of ['-starts-with-dash', 'x'.repeat(129), 'sp%20ace']) {
      const r = await server.request('PUT', `/v2/contacts/external/${bad}`, {
        key: A.key,
        body: { name: 'Bad' },
        idem: idem(),
      });
      assertError(r, 400, 'invalid_request', 'invalid_path_parameter', bad);
    }
    assert.equal(await count(), before);
  });

  test('replay with the same key and body: same status and bytes, Idempotent-Replayed: true; another body: 409', async () => {
    for (const w of writes()) {
      const key = idem();
      const first = await server.request(w.method, w.path, { key: A.key, body: w.body, idem: key });
      assert.equal(first.status, w.ok, `${w.method}: ${first.text}`);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      assertItemShape(first.json.data, 'contact', w.method);
      const before = await count();
      const replay = await server.request(w.method, w.path, { key: A.key, body: w.body, idem: key });
      assert.equal(replay.status, w.ok);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.text, first.text);
      const other = await server.request(w.method, w.path, {
        key: A.key,
        body: { ...w.body, origin: 'a different body' },
        idem: key,
      });
      assertError(other, 409, 'idempotency_error', 'idempotency_key_reused', `${w.method} reuse`);
      assert.equal(await count(), before, 'neither the replay nor the conflict wrote');
      // What v2 wrote, v1 reads identically.
      const v1 = await get(`/v1/contacts/${first.json.data.id}`);
      const v2 = await get(`/v2/contacts/${first.json.data.id}`);
      assert.equal(v2.text, v1.text);
    }
  });

  test('the upsert answers 201 when it creates and 200 when it updates, like v1', async () => {
    const path = `/v2/contacts/external/crm-${randomUUID()}`;
    const created = await server.request('PUT', path, {
      key: A.key,
      body: { name: 'Up', email: 'up@example.com' },
      idem: idem(),
    });
    assert.equal(created.status, 201);
    const updated = await server.request('PUT', path, { key: A.key, body: { status: 'lost' }, idem: idem() });
    assert.equal(updated.status, 200);
    assert.equal(updated.json.data.id, created.json.data.id);
    assert.equal(updated.json.data.status, 'lost');
  });

  test('an external_id used in another workspace is another contact: the upsert creates its own', async () => {
    const external = `shared-${randomUUID()}`;
    const inB = await server.request('PUT', `/v2/contacts/external/${external}`, {
      key: B.key,
      body: { name: 'In B', email: 'b@example.com' },
      idem: idem(),
    });
    assert.equal(inB.status, 201);
    const inA = await server.request('PUT', `/v2/contacts/external/${external}`, {
      key: A.key,
      body: { name: 'In A', email: 'a@example.com' },
      idem: idem(),
    });
    assert.equal(inA.status, 201);
    assert.notEqual(inA.json.data.id, inB.json.data.id);
    assert.deepEqual((await get(`/v2/contacts/${inB.json.data.id}`, B.key)).json.data, inB.json.data);
    assertError(await get(`/v2/contacts/${inB.json.data.id}`), 404, 'not_found', 'resource_not_found');
  });

  test('body rules: 422 for the cross-field rules and for internal fields such as notes; 404 for another workspace’s id', async () => {
    const noName = await server.request('POST', '/v2/contacts', {
      key: A.key,
      body: { email: 'x@example.com' },
      idem: idem(),
    });
    assertError(noName, 422, 'validation_error', 'validation_failed');
    for (const extra of [{ notes: 'x' }, { ai_memory: {} }]) {
      const r = await server.request('POST', '/v2/contacts', { key: A.key, body: contactBody(extra), idem: idem() });
      assertError(r, 422, 'validation_error', 'validation_failed', Object.keys(extra)[0]);
      const p = await server.request('PATCH', `/v2/contacts/${patchId}`, { key: A.key, body: extra, idem: idem() });
      assertError(p, 422, 'validation_error', 'validation_failed', Object.keys(extra)[0]);
    }
    const empty = await server.request('PATCH', `/v2/contacts/${patchId}`, { key: A.key, body: {}, idem: idem() });
    assertError(empty, 422, 'validation_error', 'validation_failed');
    const foreign = (await get('/v2/contacts?limit=1', B.key)).json.data[0];
    const r = await server.request('PATCH', `/v2/contacts/${foreign.id}`, {
      key: A.key,
      body: { origin: 'x' },
      idem: idem(),
    });
    assertError(r, 404, 'not_found', 'resource_not_found');
    assert.deepEqual((await get(`/v2/contacts/${foreign.id}`, B.key)).json.data, foreign, 'B’s contact is untouched');
  });

  test('a key is kept 48 hours: replayed at 47 h, free again after 48 h', async () => {
    const key = idem();
    const body = contactBody();
    const first = await server.request('POST', '/v2/contacts', { key: A.key, body, idem: key });
    assert.equal(first.status, 201);
    const { rows } = await server.db.query<{ hours: number }>(
      `SELECT (extract(epoch FROM expires_at - created_at) / 3600)::float8 AS hours
         FROM idempotency_keys WHERE workspace_id = $1 AND key = $2`,
      [A.id, key],
    );
    assert.equal(rows[0]!.hours, 48);
    const age = (hours: number) =>
      server.db.query(
        `UPDATE idempotency_keys SET created_at = created_at - $3::int * interval '1 hour',
                expires_at = expires_at - $3::int * interval '1 hour' WHERE workspace_id = $1 AND key = $2`,
        [A.id, key, hours],
      );
    await age(47);
    const replay = await server.request('POST', '/v2/contacts', { key: A.key, body, idem: key });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.text, first.text);
    await age(2);
    const again = await server.request('POST', '/v2/contacts', { key: A.key, body, idem: key });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), null);
    assert.notEqual(again.json.data.id, first.json.data.id);
  });

  test('a key used on /v1/contacts is 409 on /v2/contacts with the same body: the path is part of the request', async () => {
    // Idempotency keys are per workspace; the stored request is method + route + params + body,
    // and /v1/contacts and /v2/contacts are different routes, so the second call is "the same key
    // with a different request" (spec 8) rather than a replay, and nothing is written twice.
    const key = idem();
    const body = contactBody();
    const v1 = await server.request('POST', '/v1/contacts', { key: A.key, body, idem: key });
    assert.equal(v1.status, 201);
    const before = await count();
    const v2 = await server.request('POST', '/v2/contacts', { key: A.key, body, idem: key });
    assertError(v2, 409, 'idempotency_error', 'idempotency_key_reused');
    assert.equal(await count(), before);
    const back = await server.request('POST', '/v1/contacts', { key: A.key, body, idem: key });
    assert.equal(back.status, 201);
    assert.equal(back.headers.get('idempotent-replayed'), 'true');
  });
});
