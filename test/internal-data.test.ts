// What the product keeps internally never leaves (spec 1.5, 4.3.3, 6.1): the seed writes a unique
// marker into every internal column, and then every response of v1 and v2 — lists, gets, messages,
// the events feed, writes, replays, errors, HEAD, both OpenAPI documents — and every log line are
// scanned for it. Internal edits are invisible to sync (no updated_at move, no event), and events
// carry exactly the public representation.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, test } from 'node:test';
import { SCOPES } from '../src/shared/scopes.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, logLines, sleep, startTestServer, type RequestOptions } from './harness.js';
import {
  A,
  B,
  countWhere,
  crawlList,
  forbiddenKeys,
  GET_ROUTES,
  hit,
  INTERNAL_COLUMNS,
  marker,
  SEED_INTERNAL_TEXTS,
  seen,
  server,
  UNKNOWN_ID,
  useSeededWorkspaces,
  V1_LISTS,
  V2_LISTS,
} from './internal-data-support.js';

useSeededWorkspaces();

// ------------------------------------------------------------------------------------------ the marker is there

test('the marker is really in the database, in every internal column of both workspaces', async () => {
  for (const ws of [A, B]) {
    for (const [table, expression] of INTERNAL_COLUMNS) {
      const owner = table === 'workspaces' ? 'id' : 'workspace_id';
      const n = await countWhere(`${table} WHERE ${owner} = $1 AND strpos(${expression}, $2) > 0`, [ws.id, marker]);
      assert.ok(n > 0, `${table}.${expression} of ${ws.id} holds the marker`);
    }
  }
  // ...and every row of the seeded tables carries it where the seed fills the column.
  for (const [table, expression] of [
    ['contacts', 'notes'],
    ['conversations', 'provider_payload::text'],
    ['messages', 'provider_payload::text'],
    ['automations', 'rules::text'],
    ['catalog_items', 'private_notes'],
    ['appointments', 'internal_notes'],
  ]) {
    const missing = await countWhere(`${table} WHERE workspace_id = $1 AND strpos(${expression}, $2) = 0`, [
      A.id,
      marker,
    ]);
    assert.equal(missing, 0, `every ${table} row has the marker in ${expression}`);
  }
});

// ------------------------------------------------------------------------------------------ the crawl

describe('every response of v1 and v2', () => {
  const lists = new Map<string, any[]>();
  let conversations: any[] = [];

  before(async () => {
    // Every list, fully paginated, and their filtered variants.
    for (const path of [...V2_LISTS, ...V1_LISTS]) lists.set(path, await crawlList(path));
    for (const path of [
      '/v2/catalog/items?kind=product',
      '/v2/catalog/items?active=false',
      '/v2/conversations?status=closed',
      '/v2/contacts?status=talking',
      '/v1/appointments?status=scheduled',
      '/v2/automations?status=active',
      ...['contact', 'appointment', 'pipeline_stage', 'catalog_item', 'conversation', 'message', 'automation'].map(
        (t) => `/v2/events?resource_type=${t}`,
      ),
    ]) {
      await crawlList(path);
    }
    await crawlList('/v2/contacts', A.key, 7);
    await crawlList('/v2/events', A.key, 33);

    // Every get of every listed id, in both versions where both exist.
    for (const path of GET_ROUTES) {
      const base = path.replace(/^\/v1/, '/v2');
      const items = lists.get(path.startsWith('/v1') ? path : base) ?? lists.get(base)!;
      for (const item of items) {
        const r = await hit('GET', `${path}/${item.id}`);
        assert.equal(r.status, 200, `${path}/${item.id}`);
      }
    }

    // Messages of every conversation's contact, fully, and once in small pages.
    conversations = lists.get('/v2/conversations')!;
    for (const contactId of new Set(conversations.map((c) => c.contact_id as string))) {
      const messages = await crawlList(`/v2/conversations/${contactId}/messages`);
      assert.ok(messages.length > 0);
    }
    await crawlList(`/v2/conversations/${conversations[0].contact_id}/messages`, A.key, 2);

    await hit('GET', '/v2/workspace');

    // Writes, on seeded contacts whose notes and AI memory hold the marker, and their replays.
    const seeded = lists.get('/v2/contacts')!;
    for (const [method, path, body, status] of [
      ['POST', '/v1/contacts', contactBody(), 201],
      ['POST', '/v2/contacts', contactBody(), 201],
      ['PATCH', `/v1/contacts/${seeded[0].id}`, { origin: 'crawl-v1' }, 200],
      ['PATCH', `/v2/contacts/${seeded[1].id}`, { origin: 'crawl-v2' }, 200],
      ['PUT', `/v1/contacts/external/crawl-${randomUUID()}`, { name: 'Crawl', email: 'crawl@example.com' }, 201],
      ['PUT', `/v2/contacts/external/crawl-${randomUUID()}`, { name: 'Crawl', email: 'crawl@example.com' }, 201],
    ] as const) {
      const key = idem();
      const first = await hit(method, path, { key: A.key, body, idem: key });
      assert.equal(first.status, status, `${method} ${path}: ${first.text}`);
      const replay = await hit(method, path, { key: A.key, body, idem: key });
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      // 409: the same key with another body.
      const conflict = await hit(method, path, { key: A.key, body: { ...body, origin: 'other' }, idem: key });
      assert.equal(conflict.status, 409);
    }
    // An upsert that updates a contact holding internal data.
    const external = `crawl-upd-${randomUUID()}`;
    await server.db.query(`UPDATE contacts SET external_id = $3 WHERE workspace_id = $1 AND id = $2`, [
      A.id,
      seeded[2].id,
      external,
    ]);
    for (const version of ['v1', 'v2']) {
      const r = await hit('PUT', `/${version}/contacts/external/${external}`, {
        key: A.key,
        body: { origin: `upsert-${version}` },
        idem: idem(),
      });
      assert.equal(r.status, 200, r.text);
    }

    // 404s: unknown ids, ids of the other workspace, unknown contacts' messages, unknown routes.
    const listsOfB = new Map<string, any[]>();
    for (const path of [
      '/v2/contacts',
      '/v2/appointments',
      '/v2/catalog/items',
      '/v2/automations',
      '/v2/conversations',
    ]) {
      listsOfB.set(path, (await server.request('GET', `${path}?limit=5`, { key: B.key })).json.data);
    }
    for (const path of GET_ROUTES) {
      assert.equal((await hit('GET', `${path}/${UNKNOWN_ID}`)).status, 404);
      for (const item of listsOfB.get(path.replace(/^\/v1/, '/v2'))!) {
        assert.equal((await hit('GET', `${path}/${item.id}`)).status, 404, `${path} of B`);
      }
    }
    const contactOfB = listsOfB.get('/v2/conversations')![0].contact_id;
    assert.equal((await hit('GET', `/v2/conversations/${contactOfB}/messages`)).status, 404);
    assert.equal((await hit('GET', `/v2/conversations/${UNKNOWN_ID}/messages`)).status, 404);
    for (const version of ['v1', 'v2']) {
      assert.equal((await hit('GET', `/${version}/nope`)).status, 404);
      assert.equal((await hit('GET', `/${version}/contacts/${UNKNOWN_ID}/notes`)).status, 404);
      const patchB = await hit('PATCH', `/${version}/contacts/${listsOfB.get('/v2/contacts')![0].id}`, {
        key: A.key,
        body: { origin: 'x' },
        idem: idem(),
      });
      assert.equal(patchB.status, 404);
      // 422: broken bodies, among them attempts to write internal fields.
      for (const body of [
        { email: 'no-name@example.com' },
        contactBody({ notes: 'hello' }),
        contactBody({ ai_memory: { a: 1 } }),
        { name: 1 },
      ]) {
        assert.equal((await hit('POST', `/${version}/contacts`, { key: A.key, body, idem: idem() })).status, 422);
      }
      const seededId = seeded[3].id;
      assert.equal(
        (await hit('PATCH', `/${version}/contacts/${seededId}`, { key: A.key, body: { notes: null }, idem: idem() }))
          .status,
        422,
      );
      // 400s and 415.
      for (const path of [
        `/${version}/contacts?limit=0`,
        `/${version}/contacts?limit=101`,
        `/${version}/contacts?cursor=forged.cursor`,
        `/${version}/contacts?notes=1`,
        `/${version}/contacts/not-a-uuid`,
        `/${version}/appointments?updated_after=soon`,
      ]) {
        assert.equal((await hit('GET', path)).status, 400, path);
      }
      assert.equal((await hit('POST', `/${version}/contacts`, { key: A.key, body: contactBody() })).status, 400);
      assert.equal(
        (await hit('POST', `/${version}/contacts`, { key: A.key, raw: '{"name":', idem: idem() })).status,
        400,
      );
      assert.equal(
        (
          await hit('PATCH', `/${version}/contacts/${seededId}`, {
            key: A.key,
            raw: '{"origin":"x"}',
            contentType: 'text/plain',
            idem: idem(),
          })
        ).status,
        415,
      );
      // 401 and 403.
      assert.equal((await hit('GET', `/${version}/contacts`, { key: 'wsk_nope.nope' })).status, 401);
    }
    for (const path of ['/v2/events', '/v2/conversations', '/v2/catalog/items', '/v2/automations', '/v2/workspace']) {
      assert.equal((await hit('GET', path, { key: B.key.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')) })).status, 401);
    }
    const workspaceOnly = (await A.newKey(['workspace:read'])).key;
    for (const path of [...V2_LISTS, ...V1_LISTS, `/v2/conversations/${conversations[0].contact_id}/messages`]) {
      assert.equal((await hit('GET', path, { key: workspaceOnly })).status, 403, path);
    }
    const allButMessages = (await A.newKey(SCOPES.filter((s) => s !== 'messages:read'))).key;
    assert.equal(
      (await hit('GET', `/v2/conversations/${conversations[0].contact_id}/messages`, { key: allButMessages })).status,
      403,
    );

    // HEAD of every GET operation.
    const firstIds = new Map(GET_ROUTES.map((p) => [p, lists.get(p.replace(/^\/v1/, '/v2'))![0].id as string]));
    for (const path of [
      ...V2_LISTS,
      ...V1_LISTS,
      '/v2/workspace',
      `/v2/conversations/${conversations[0].contact_id}/messages`,
      ...GET_ROUTES.map((p) => `${p}/${firstIds.get(p)}`),
    ]) {
      const r = await hit('HEAD', path);
      assert.equal(r.status, 200, `HEAD ${path}`);
    }

    // Both interface descriptions.
    for (const version of ['v1', 'v2']) {
      assert.equal((await hit('GET', `/${version}/openapi.json`, {})).status, 200);
    }

    // The feed once more, now with the events of the writes above.
    await crawlList('/v2/events');
  });

  test('the crawl reached every operation, success and error statuses, HEAD and both documents', () => {
    const statuses = new Set(seen.map((s) => s.status));
    for (const s of [200, 201, 400, 401, 403, 404, 409, 415, 422]) assert.ok(statuses.has(s), `status ${s}`);
    assert.ok(seen.filter((s) => s.label.startsWith('HEAD ')).length >= 15);
    for (const prefix of [
      'GET /v2/workspace',
      'GET /v2/contacts/',
      'GET /v2/pipeline/stages',
      'GET /v2/appointments/',
      'GET /v2/catalog/items/',
      'GET /v2/conversations?',
      'GET /v2/automations/',
      'GET /v2/events',
      'GET /v1/contacts/',
      'GET /v1/appointments/',
      'POST /v2/contacts',
      'PATCH /v2/contacts/',
      'PUT /v2/contacts/external/',
      'GET /v1/openapi.json',
      'GET /v2/openapi.json',
    ]) {
      assert.ok(
        seen.some((s) => s.label.startsWith(prefix) && s.status < 300),
        `a successful ${prefix}`,
      );
    }
    const messageLists = seen.filter((s) => /^GET \/v2\/conversations\/[^/]+\/messages/.test(s.label));
    assert.ok(messageLists.filter((s) => s.status === 200).length >= conversations.length);
    // Every listed id was fetched by itself.
    for (const path of GET_ROUTES) {
      const items = lists.get(path.replace(/^\/v1/, '/v2'))!;
      for (const item of items) assert.ok(seen.some((s) => s.label === `GET ${path}/${item.id}` && s.status === 200));
    }
    assert.ok(seen.length > 250, `${seen.length} responses`);
  });

  test('no response body or header carries the marker or any other internal text of the seed', () => {
    assert.ok(seen.length > 0);
    const leaks: string[] = [];
    for (const s of seen) {
      for (const needle of [marker, ...SEED_INTERNAL_TEXTS]) {
        if (s.text.includes(needle)) leaks.push(`${s.label} (${s.status}) body contains ${needle}`);
        if (s.headers.includes(needle)) leaks.push(`${s.label} (${s.status}) headers contain ${needle}`);
      }
    }
    assert.deepEqual(leaks, []);
  });

  test('no JSON property name anywhere names internal data', () => {
    const found: string[] = [];
    let parsed = 0;
    for (const s of seen) {
      if (s.json === undefined) continue;
      parsed++;
      for (const k of forbiddenKeys(s.json)) found.push(`${s.label}: ${k}`);
    }
    assert.ok(parsed > 200);
    assert.deepEqual(found, []);
    // The check itself sees such names.
    assert.deepEqual(forbiddenKeys({ a: [{ aiMemory: 1, provider_payload: 2, 'x-internal': 3, name: 4 }] }), [
      '$.a[0].aiMemory',
      '$.a[0].provider_payload',
      '$.a[0].x-internal',
    ]);
  });
});

// ------------------------------------------------------------------------------------------ logs

test('no log line, at trace level, carries the marker', async () => {
  const { lines, stream } = logLines();
  const logged = await startTestServer({ logger: { logger: { level: 'trace', stream } } });
  const logMarker = `INTERNAL-${randomUUID()}`;
  try {
    const w = await logged.workspace();
    await ownerCommands.seed(logged.owner, { workspaceId: w.id, internalMarker: logMarker });
    const req = (method: string, path: string, o: RequestOptions = {}) =>
      logged.request(method, path, { key: w.key, ...o });
    const bodies: string[] = [];
    const firsts = new Map<string, string>();
    for (const path of [...V2_LISTS, ...V1_LISTS]) {
      const r = await req('GET', `${path}?limit=100`);
      assert.equal(r.status, 200);
      bodies.push(r.text);
      if (r.json.data[0]) firsts.set(path, r.json.data[0].id);
    }
    for (const path of GET_ROUTES) {
      const r = await req('GET', `${path}/${firsts.get(path.replace(/^\/v1/, '/v2'))}`);
      assert.equal(r.status, 200);
      bodies.push(r.text);
    }
    const conversations = (await req('GET', '/v2/conversations?limit=100')).json.data;
    for (const c of conversations.slice(0, 5)) {
      bodies.push((await req('GET', `/v2/conversations/${c.contact_id}/messages`)).text);
    }
    bodies.push((await req('GET', '/v2/workspace')).text);
    const contactId = firsts.get('/v2/contacts')!;
    const key = idem();
    bodies.push((await req('PATCH', `/v2/contacts/${contactId}`, { body: { origin: 'logged' }, idem: key })).text);
    bodies.push((await req('PATCH', `/v2/contacts/${contactId}`, { body: { origin: 'logged' }, idem: key })).text);
    bodies.push((await req('PATCH', `/v2/contacts/${contactId}`, { body: { origin: 'other' }, idem: key })).text);
    bodies.push((await req('POST', '/v1/contacts', { body: contactBody({ notes: 'x' }), idem: idem() })).text);
    bodies.push((await req('GET', `/v2/contacts/${UNKNOWN_ID}`)).text);
    bodies.push((await req('GET', '/v2/contacts?limit=0')).text);
    bodies.push((await req('HEAD', '/v2/conversations')).text);
    bodies.push((await req('GET', '/v2/events?limit=100', { key: 'wsk_nope.nope' })).text);
    await sleep(50);
    assert.ok(lines.length >= 30, `${lines.length} log lines`);
    assert.deepEqual(
      lines.filter((l) => l.includes(logMarker)),
      [],
    );
    for (const body of bodies) assert.ok(!body.includes(logMarker));
    const { rows } = await logged.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND strpos(notes, $2) > 0',
      [w.id, logMarker],
    );
    assert.ok(rows[0]!.n > 0, 'the logged server’s data holds the marker');
  } finally {
    await logged.close();
  }
});
