// Contact operations through HTTP: shapes, bounds, cross-field rules, partial updates and upserts;
// concurrent upserts on PostgreSQL whatever the store of the run, where deadlocks can happen.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  contactBody,
  deadlocksSoFar,
  idem,
  propertyValue,
  sleep,
  TEXT_PROPERTIES,
  type TestWorkspace,
} from './harness.js';
import { describeOrSkip, findPostgres } from './servers.js';
import { usePostgresTestServer, useTestServer } from './test-server.js';
import { KEYS } from './v2-support.js';

const CONTACT_KEYS = KEYS.contact;
const MS_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let ws: TestWorkspace;
const server = useTestServer({
  setup: async () => {
    ws = await server.workspace();
  },
});

const create = async (body: unknown, key = ws.key) =>
  server.request('POST', '/v1/contacts', { key, body, idem: idem() });

function assertContact(c: any): void {
  assert.deepEqual(Object.keys(c).sort(), CONTACT_KEYS);
  assert.match(c.created_at, MS_DATE_TIME);
  assert.match(c.updated_at, MS_DATE_TIME);
}

describe('createContact', () => {
  test('201 with exactly the contact properties, readable afterwards', async () => {
    const body = contactBody();
    const r = await create(body);
    assert.equal(r.status, 201);
    assert.deepEqual(Object.keys(r.json), ['data']);
    assertContact(r.json.data);
    for (const [k, v] of Object.entries(body)) assert.equal(r.json.data[k], v, k);
    assert.equal(r.json.data.external_id, null);
    assert.equal(r.json.data.created_at, r.json.data.updated_at);
    const got = await server.request('GET', `/v1/contacts/${r.json.data.id}`, { key: ws.key });
    assert.equal(got.status, 200);
    assert.deepEqual(got.json.data, r.json.data);
  });

  test('status defaults to cold_list', async () => {
    const r = await create({ company_name: 'Only Co', phone: '+12025550123' });
    assert.equal(r.status, 201);
    assert.equal(r.json.data.status, 'cold_list');
    assert.equal(r.json.data.name, null);
  });

  test('cross-field rules: name or company_name, and one of email/phone/whatsapp (422 naming the rule)', async () => {
    const noName = await create({ email: 'x@example.com' });
    assert.equal(noName.status, 422);
    assert.equal(noName.json.error.type, 'validation_error');
    assert.equal(noName.json.error.code, 'validation_failed');
    assert.match(noName.json.error.message, /name or company_name/);
    const noChannel = await create({ name: 'No Channel' });
    assert.equal(noChannel.status, 422);
    assert.match(noChannel.json.error.message, /email, phone, whatsapp/);
  });

  test('every problem of a body is listed in details.errors', async () => {
    const r = await create({ name: 'x'.repeat(161), phone: '123', status: 'won', email: 'bad' });
    assert.equal(r.status, 422);
    const fields = r.json.error.details.errors.map((e: { field: string }) => e.field).sort();
    assert.deepEqual(fields, ['email', 'name', 'phone', 'status']);
  });

  test('unknown and read-only properties are refused and nothing is stored', async () => {
    const before = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
      [ws.id],
    );
    for (const extra of [
      { notes: 'x' },
      { id: '00000000-0000-4000-8000-000000000000' },
      { external_id: 'a' },
      { updated_at: '2020-01-01T00:00:00Z' },
    ]) {
      const r = await create({ ...contactBody(), ...extra });
      assert.equal(r.status, 422);
      assert.equal(r.json.error.details.errors[0].field, Object.keys(extra)[0]);
    }
    const afterCount = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
      [ws.id],
    );
    assert.equal(afterCount.rows[0]!.n, before.rows[0]!.n);
  });

  test('types are not coerced: a number is not a name', async () => {
    const r = await create({ name: 42, email: 'a@example.com' });
    assert.equal(r.status, 422);
  });

  test('bounds are inclusive at the edges', async () => {
    const r = await create({
      name: 'n'.repeat(160),
      company_name: 'c'.repeat(160),
      origin: 'o'.repeat(120),
      phone: '+123456789012345',
    });
    assert.equal(r.status, 201);
    assert.equal((await create({ name: 'short', phone: '+12345678' })).status, 201);
    assert.equal((await create({ name: 'long', phone: '+1234567890123456' })).status, 422);
  });

  test('415 for non-JSON bodies, 400 for malformed JSON, 413 for oversized bodies', async () => {
    const text = await server.request('POST', '/v1/contacts', {
      key: ws.key,
      raw: JSON.stringify(contactBody()),
      contentType: 'text/plain',
      idem: idem(),
    });
    assert.equal(text.status, 415);
    assert.equal(text.json.error.code, 'unsupported_media_type');
    const malformed = await server.request('POST', '/v1/contacts', { key: ws.key, raw: '{"name":', idem: idem() });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.json.error.code, 'invalid_json');
    const huge = await server.request('POST', '/v1/contacts', {
      key: ws.key,
      body: contactBody({ origin: 'x'.repeat(2_000_000) }),
      idem: idem(),
    });
    assert.equal(huge.status, 413);
    assert.equal(huge.json.error.code, 'payload_too_large');
    const noBody = await server.request('POST', '/v1/contacts', { key: ws.key, idem: idem() });
    assert.equal(noBody.status, 415);
  });

  test('a JSON body that is not an object is 422', async () => {
    for (const raw of ['[]', '"text"', '42', 'null']) {
      const r = await server.request('POST', '/v1/contacts', { key: ws.key, raw, idem: idem() });
      assert.equal(r.status, 422, raw);
    }
  });

  test('prototype pollution attempts are refused as a body with a property no body has (422), nothing stored', async () => {
    for (const raw of [
      '{"name":"p","email":"p@example.com","__proto__":{"status":"lost"}}',
      '{"name":"p","email":"p@example.com","constructor":{"prototype":{"status":"lost"}}}',
    ]) {
      const r = await server.request('POST', '/v1/contacts', { key: ws.key, raw, idem: idem() });
      assert.equal(r.status, 422, r.text);
      assert.equal(r.json.error.code, 'validation_failed');
      assert.match(r.json.error.message, /"__proto__" key, or a "constructor" key with "prototype"/);
    }
  });
});

describe('updateContact', () => {
  test('changes only the given properties and moves updated_at', async () => {
    const c = (await create(contactBody())).json.data;
    await sleep(5);
    const r = await server.request('PATCH', `/v1/contacts/${c.id}`, {
      key: ws.key,
      body: { name: 'Renamed', origin: null },
      idem: idem(),
    });
    assert.equal(r.status, 200);
    assert.equal(r.json.data.name, 'Renamed');
    assert.equal(r.json.data.origin, null);
    for (const k of ['email', 'phone', 'whatsapp', 'company_name', 'status', 'created_at', 'id'])
      assert.equal(r.json.data[k], c[k], k);
    assert.ok(r.json.data.updated_at > c.updated_at);
  });

  test('an update that changes nothing leaves updated_at where it was', async () => {
    const c = (await create(contactBody())).json.data;
    await sleep(5);
    const r = await server.request('PATCH', `/v1/contacts/${c.id}`, {
      key: ws.key,
      body: { name: c.name },
      idem: idem(),
    });
    assert.equal(r.status, 200);
    assert.equal(r.json.data.updated_at, c.updated_at);
  });

  test('empty body, unknown property, status null: 422; unknown id: 404; malformed id: 400', async () => {
    const c = (await create(contactBody())).json.data;
    for (const body of [{}, { notes: 'x' }, { status: null }]) {
      const r = await server.request('PATCH', `/v1/contacts/${c.id}`, { key: ws.key, body, idem: idem() });
      assert.equal(r.status, 422, JSON.stringify(body));
    }
    const missing = await server.request('PATCH', '/v1/contacts/6f1c2a9e-0000-4000-8000-000000000001', {
      key: ws.key,
      body: { name: 'x' },
      idem: idem(),
    });
    assert.equal(missing.status, 404);
    const malformed = await server.request('PATCH', '/v1/contacts/not-a-uuid', {
      key: ws.key,
      body: { name: 'x' },
      idem: idem(),
    });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.json.error.code, 'invalid_path_parameter');
  });

  test('parallel PATCHes and PUTs of different properties of one contact keep every change', async () => {
    const externalId = `parallel-${idem()}`;
    const c = (
      await server.request('PUT', `/v1/contacts/external/${externalId}`, {
        key: ws.key,
        body: contactBody(),
        idem: idem(),
      })
    ).json.data;
    const fields = TEXT_PROPERTIES;
    for (let round = 0; round < 5; round++) {
      const value = (field: (typeof fields)[number]) => propertyValue(field, round);
      // Each property written by its own request, all at once: half by id, half by external id.
      const answers = await Promise.all(
        fields.map((field, i) =>
          server.request(
            i % 2 === 0 ? 'PATCH' : 'PUT',
            i % 2 === 0 ? `/v1/contacts/${c.id}` : `/v1/contacts/external/${externalId}`,
            {
              key: ws.key,
              body: { [field]: value(field) },
              idem: idem(),
            },
          ),
        ),
      );
      assert.deepEqual(
        answers.map((a) => a.status),
        fields.map(() => 200),
      );
      const stored = (await server.request('GET', `/v1/contacts/${c.id}`, { key: ws.key })).json.data;
      for (const field of fields) assert.equal(stored[field], value(field), `${field}, round ${round}`);
    }
  });
});

describe('upsertContactByExternalId', () => {
  test('201 when it creates, 200 when it updates the same contact', async () => {
    const ext = `crm-${Date.now()}`;
    const first = await server.request('PUT', `/v1/contacts/external/${ext}`, {
      key: ws.key,
      body: { name: 'Ext' },
      idem: idem(),
    });
    assert.equal(first.status, 201);
    assert.equal(first.json.data.external_id, ext);
    assert.equal(first.json.data.status, 'cold_list');
    const second = await server.request('PUT', `/v1/contacts/external/${ext}`, {
      key: ws.key,
      body: { status: 'meeting' },
      idem: idem(),
    });
    assert.equal(second.status, 200);
    assert.equal(second.json.data.id, first.json.data.id);
    assert.equal(second.json.data.name, 'Ext');
    assert.equal(second.json.data.status, 'meeting');
  });

  test('an encoded slash is part of the identifier', async () => {
    const ext = `hubspot/${Date.now()}`;
    const r = await server.request('PUT', `/v1/contacts/external/${encodeURIComponent(ext)}`, {
      key: ws.key,
      body: { name: 'S' },
      idem: idem(),
    });
    assert.equal(r.status, 201);
    assert.equal(r.json.data.external_id, ext);
  });

  test('identifiers outside the pattern or 128 characters are 400', async () => {
    for (const bad of ['-x', '.x', 'a b', 'x'.repeat(129), 'é']) {
      const r = await server.request('PUT', `/v1/contacts/external/${encodeURIComponent(bad)}`, {
        key: ws.key,
        body: { name: 'x' },
        idem: idem(),
      });
      assert.equal(r.status, 400, bad);
      assert.equal(r.json.error.code, 'invalid_path_parameter');
    }
  });
});

// Deadlocks happen only between PostgreSQL connections (the embedded store runs one statement at a
// time): the race runs on a PostgreSQL database of its own with a pool of connections, in both
// passes of the suite, so that the deadlocks counted there are its own.
const postgres = await findPostgres();
describeOrSkip(postgres.skip, 'upsertContactByExternalId racing on PostgreSQL, whatever the store of the run', () => {
  let ws: TestWorkspace;
  const server = usePostgresTestServer(postgres.url!, 'wsapi_upsert_race', {
    setup: async () => {
      ws = await server.workspace();
    },
  });

  test('concurrent upserts of one new external_id end in one contact, without a deadlock', async () => {
    // 30 at once, in rounds: the first creates the contact while others are still starting, so
    // some find it committed and lock it while others are already inserting. PostgreSQL must not
    // have had to break a deadlock between them (each would be retried unseen, up to three times,
    // and then answered 500).
    const deadlocks = () => deadlocksSoFar(server.db);
    const before = await deadlocks();
    for (let round = 0; round < 3; round++) {
      const ext = `race-${round}-${Date.now()}`;
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          server.request('PUT', `/v1/contacts/external/${ext}`, {
            key: ws.key,
            body: { name: `Racer ${i}` },
            idem: idem(),
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status).filter((s) => s !== 200 && s !== 201),
        [],
      );
      assert.equal(results.filter((r) => r.status === 201).length, 1);
      assert.equal(new Set(results.map((r) => r.json.data.id)).size, 1);
      const { rows } = await server.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND external_id = $2',
        [ws.id, ext],
      );
      assert.equal(rows[0]!.n, 1);
    }
    // The statistics reach pg_stat_database within a second.
    await sleep(1_500);
    assert.equal(await deadlocks(), before, 'deadlocks PostgreSQL detected');
  });
});

describe('a NUL character, which PostgreSQL cannot store in text', () => {
  test('POST, PATCH and PUT, v1 and v2: 422 naming each property that holds one, nothing written, the key left for the fixed body; a write-only key', async () => {
    const existing = (await create(contactBody())).json.data;
    const writer = (await ws.newKey(['contacts:write'])).key;
    const countAll = async () =>
      (
        await server.db.query<{ n: number; last: string }>(
          'SELECT count(*)::int AS n, max(updated_at)::text AS last FROM contacts WHERE workspace_id = $1',
          [ws.id],
        )
      ).rows[0]!;
    for (const v of ['v1', 'v2']) {
      const writes: [string, string, Record<string, unknown>][] = [
        ['POST', `/${v}/contacts`, contactBody({ name: 'a\u0000b', origin: '\u0000' })],
        ['PATCH', `/${v}/contacts/${existing.id}`, { name: 'a\u0000b', origin: '\u0000' }],
        ['PUT', `/${v}/contacts/external/nul-${v}-${Date.now()}`, { name: 'a\u0000b', origin: '\u0000' }],
      ];
      for (const [method, path, body] of writes) {
        const before = await countAll();
        const key = idem();
        const r = await server.request(method, path, { key: writer, body, idem: key });
        assert.equal(r.status, 422, `${method} ${path}`);
        assert.equal(r.json.error.code, 'validation_failed');
        assert.deepEqual(
          r.json.error.details.errors,
          [
            { field: 'name', message: 'holds a NUL character (U+0000), which cannot be stored' },
            { field: 'origin', message: 'holds a NUL character (U+0000), which cannot be stored' },
          ],
          `${method} ${path}`,
        );
        assert.deepEqual(await countAll(), before, `${method} ${path}: nothing written`);
        const fixed = { ...body, name: 'a b', origin: 'fixed' };
        const again = await server.request(method, path, { key: writer, body: fixed, idem: key });
        assert.ok([200, 201].includes(again.status), `${method} ${path} fixed: ${again.status}`);
      }
    }
  });
});

describe('isolation', () => {
  test('another workspace sees 404 for the contact and never lists it', async () => {
    const other = await server.workspace();
    const c = (await create(contactBody())).json.data;
    const get = await server.request('GET', `/v1/contacts/${c.id}`, { key: other.key });
    const random = await server.request('GET', '/v1/contacts/0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41', { key: other.key });
    assert.equal(get.status, 404);
    assert.equal(get.json.error.message, random.json.error.message);
    const patch = await server.request('PATCH', `/v1/contacts/${c.id}`, {
      key: other.key,
      body: { name: 'steal' },
      idem: idem(),
    });
    assert.equal(patch.status, 404);
    const list = await server.request('GET', '/v1/contacts?limit=100', { key: other.key });
    assert.ok(!list.json.data.some((x: { id: string }) => x.id === c.id));
    const unchanged = await server.request('GET', `/v1/contacts/${c.id}`, { key: ws.key });
    assert.equal(unchanged.json.data.name, c.name);
  });
});
