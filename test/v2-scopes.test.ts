// Version 2 scopes (spec 4.3, 5.5): the scope of every route, messages behind messages:read, and
// the filters and rules of messages, pipeline stages, catalog items and conversations.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, test } from 'node:test';
import { SCOPES, type Scope } from '../src/shared/scopes.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, sleep } from './harness.js';
import {
  A,
  B,
  CONTACT_STATUSES,
  UNKNOWN_ID,
  V2_ADDED_OPERATIONS,
  V2_OPERATIONS,
  all,
  assertAscending,
  assertError,
  assertItemShape,
  contactOfB,
  contactWithMessages,
  get,
  ids,
  server,
  sorted,
  useV2Workspaces,
  walk,
} from './v2-support.js';

useV2Workspaces();

// ------------------------------------------------------------------------------------------ scopes

describe('scopes of every v2 route', () => {
  interface Route {
    method: string;
    /** the path as spec 4.3 writes it */
    doc: string;
    /** a deletion's path names a contact made for each call */
    path: () => string | Promise<string>;
    scope: Scope;
    body?: () => unknown;
    ok: number;
  }
  let patchTarget: string;
  let externalTarget: string;
  let appointmentId: string;
  let catalogId: string;
  let automationId: string;
  const ROUTES: Route[] = [
    { method: 'GET', doc: '/v2/workspace', path: () => '/v2/workspace', scope: 'workspace:read', ok: 200 },
    { method: 'GET', doc: '/v2/contacts', path: () => '/v2/contacts', scope: 'contacts:read', ok: 200 },
    {
      method: 'GET',
      doc: '/v2/contacts/{id}',
      path: () => `/v2/contacts/${patchTarget}`,
      scope: 'contacts:read',
      ok: 200,
    },
    {
      method: 'GET',
      doc: '/v2/contacts/external/{external_id}',
      path: () => `/v2/contacts/external/${externalTarget}`,
      scope: 'contacts:read',
      ok: 200,
    },
    {
      method: 'POST',
      doc: '/v2/contacts',
      path: () => '/v2/contacts',
      scope: 'contacts:write',
      body: () => contactBody(),
      ok: 201,
    },
    {
      method: 'PATCH',
      doc: '/v2/contacts/{id}',
      path: () => `/v2/contacts/${patchTarget}`,
      scope: 'contacts:write',
      body: () => ({ origin: `scope-${randomUUID()}` }),
      ok: 200,
    },
    {
      method: 'PUT',
      doc: '/v2/contacts/external/{external_id}',
      path: () => `/v2/contacts/external/scope-${randomUUID()}`,
      scope: 'contacts:write',
      body: () => ({ name: 'Scoped', email: 'scoped@example.com' }),
      ok: 201,
    },
    {
      method: 'POST',
      doc: '/v2/contacts/batch/upsert',
      path: () => '/v2/contacts/batch/upsert',
      scope: 'contacts:write',
      body: () => ({ items: [{ external_id: `scope-${randomUUID()}`, name: 'Scoped batch' }] }),
      ok: 200,
    },
    {
      method: 'DELETE',
      doc: '/v2/contacts/{id}',
      path: async () => `/v2/contacts/${(await newContact()).id}`,
      scope: 'contacts:write',
      ok: 204,
    },
    {
      method: 'DELETE',
      doc: '/v2/contacts/external/{external_id}',
      path: async () => `/v2/contacts/external/${(await newContact()).external_id}`,
      scope: 'contacts:write',
      ok: 204,
    },
    {
      method: 'POST',
      doc: '/v2/contacts/batch/delete',
      path: () => '/v2/contacts/batch/delete',
      scope: 'contacts:write',
      body: () => ({ ids: [randomUUID()] }),
      ok: 200,
    },
    { method: 'GET', doc: '/v2/pipeline/stages', path: () => '/v2/pipeline/stages', scope: 'contacts:read', ok: 200 },
    { method: 'GET', doc: '/v2/appointments', path: () => '/v2/appointments', scope: 'appointments:read', ok: 200 },
    {
      method: 'GET',
      doc: '/v2/appointments/{id}',
      path: () => `/v2/appointments/${appointmentId}`,
      scope: 'appointments:read',
      ok: 200,
    },
    { method: 'GET', doc: '/v2/catalog/items', path: () => '/v2/catalog/items', scope: 'catalog:read', ok: 200 },
    {
      method: 'GET',
      doc: '/v2/catalog/items/{id}',
      path: () => `/v2/catalog/items/${catalogId}`,
      scope: 'catalog:read',
      ok: 200,
    },
    { method: 'GET', doc: '/v2/conversations', path: () => '/v2/conversations', scope: 'conversations:read', ok: 200 },
    {
      method: 'GET',
      doc: '/v2/conversations/{contact_id}/messages',
      path: () => `/v2/conversations/${contactWithMessages}/messages`,
      scope: 'messages:read',
      ok: 200,
    },
    { method: 'GET', doc: '/v2/automations', path: () => '/v2/automations', scope: 'automations:read', ok: 200 },
    {
      method: 'GET',
      doc: '/v2/automations/{id}',
      path: () => `/v2/automations/${automationId}`,
      scope: 'automations:read',
      ok: 200,
    },
    { method: 'GET', doc: '/v2/events', path: () => '/v2/events', scope: 'events:read', ok: 200 },
    { method: 'GET', doc: '/v2/events/head', path: () => '/v2/events/head', scope: 'events:read', ok: 200 },
  ];
  const only = new Map<Scope, string>();
  const allBut = new Map<Scope, string>();

  before(async () => {
    for (const s of SCOPES) {
      only.set(s, (await A.newKey([s])).key);
      allBut.set(s, (await A.newKey(SCOPES.filter((x) => x !== s))).key);
    }
    patchTarget = (await server.request('POST', '/v2/contacts', { key: A.key, body: contactBody(), idem: idem() })).json
      .data.id;
    externalTarget = `scope/${randomUUID()}`;
    const upserted = await server.request('PUT', `/v2/contacts/external/${encodeURIComponent(externalTarget)}`, {
      key: A.key,
      body: { name: 'Found by external id' },
      idem: idem(),
    });
    assert.equal(upserted.status, 201, upserted.text);
    appointmentId = (await get('/v2/appointments?limit=1')).json.data[0].id;
    catalogId = (await get('/v2/catalog/items?limit=1')).json.data[0].id;
    automationId = (await get('/v2/automations?limit=1')).json.data[0].id;
  });

  /** A contact of A with an external id, to be deleted. */
  const newContact = async (): Promise<{ id: string; external_id: string }> =>
    (
      await server.request('PUT', `/v2/contacts/external/doomed-${randomUUID()}`, {
        key: A.key,
        body: { name: 'Doomed' },
        idem: idem(),
      })
    ).json.data;
  const call = async (r: Route, key: string) =>
    server.request(
      r.method,
      await r.path(),
      r.body ? { key, body: r.body(), idem: idem() } : r.method === 'GET' ? { key } : { key, idem: idem() },
    );

  test('the matrix covers every operation of spec 4.3 and the documented additions', () => {
    assert.deepEqual(
      sorted(ROUTES.map((r) => `${r.method.toLowerCase()} ${r.doc}`)),
      sorted([...V2_OPERATIONS, ...V2_ADDED_OPERATIONS].map(([method, path]) => `${method} ${path}`)),
    );
  });

  for (const r of ROUTES) {
    test(`${r.method} ${r.doc}: only ${r.scope} passes; every other scope is 403`, async () => {
      const ok = await call(r, only.get(r.scope)!);
      assert.equal(ok.status, r.ok, `${r.method} ${r.doc} with only ${r.scope}: ${ok.text}`);
      const denied = await call(r, allBut.get(r.scope)!);
      assertError(denied, 403, 'permission_error', 'insufficient_scope', `${r.method} ${r.doc} without ${r.scope}`);
      assert.equal(denied.json.error.details?.required_scope, r.scope);
      for (const h of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
        assert.ok(denied.headers.get(h), h);
      }
    });
  }

  test('messages need messages:read: conversations:read alone is 403 on messages, and the reverse', async () => {
    const messages = `/v2/conversations/${contactWithMessages}/messages`;
    const onlyConversations = only.get('conversations:read')!;
    assertError(await get(messages, onlyConversations), 403, 'permission_error', 'insufficient_scope');
    assert.equal((await get('/v2/conversations', onlyConversations)).status, 200);
    const onlyMessages = only.get('messages:read')!;
    assert.equal((await get(messages, onlyMessages)).status, 200);
    assertError(await get('/v2/conversations', onlyMessages), 403, 'permission_error', 'insufficient_scope');
    const both = (await A.newKey(['conversations:read', 'messages:read'])).key;
    assert.equal((await get(messages, both)).status, 200);
    assert.equal((await get('/v2/conversations', both)).status, 200);
  });

  test('a suspended workspace is 403 workspace_suspended, a revoked key 401, on v2 as on v1', async () => {
    const w = await server.workspace();
    const revoked = await w.newKey([...SCOPES]);
    await ownerCommands.revokeKey(server.owner, { keyId: revoked.id });
    await ownerCommands.setWorkspaceStatus(server.owner, { workspaceId: w.id, status: 'suspended' });
    const paths = ['/v2/workspace', '/v2/events', '/v2/pipeline/stages', '/v2/catalog/items', '/v1/contacts'];
    for (const path of paths) {
      let r = await get(path, w.key);
      for (let i = 0; i < 20 && r.status === 200; i++) {
        await sleep(100);
        r = await get(path, w.key);
      }
      assertError(r, 403, 'permission_error', 'workspace_suspended', path);
      assertError(await get(path, revoked.key), 401, 'authentication_error', 'invalid_api_key', path);
    }
  });

  test('no scope implies another: contacts:write does not read, contacts:read does not write', async () => {
    const write = only.get('contacts:write')!;
    for (const path of ['/v2/contacts', '/v2/pipeline/stages', `/v2/contacts/${patchTarget}`]) {
      assertError(await get(path, write), 403, 'permission_error', 'insufficient_scope', path);
    }
    const read = only.get('contacts:read')!;
    const post = await server.request('POST', '/v2/contacts', { key: read, body: contactBody(), idem: idem() });
    assertError(post, 403, 'permission_error', 'insufficient_scope');
    const onlyEvents = only.get('events:read')!;
    for (const path of ['/v2/workspace', '/v2/contacts', '/v2/automations', '/v2/catalog/items']) {
      assertError(await get(path, onlyEvents), 403, 'permission_error', 'insufficient_scope', path);
    }
  });
});

// ------------------------------------------------------------------------------------------ messages

describe('messages', () => {
  test('of another workspace’s contact, or of an unknown contact: 404; malformed contact id: 400', async () => {
    assertError(
      await get(`/v2/conversations/${contactOfB}/messages`),
      404,
      'not_found',
      'resource_not_found',
      'B’s contact',
    );
    assert.equal((await get(`/v2/conversations/${contactOfB}/messages`, B.key)).status, 200);
    assertError(await get(`/v2/conversations/${UNKNOWN_ID}/messages`), 404, 'not_found', 'resource_not_found');
    assertError(await get('/v2/conversations/not-a-uuid/messages'), 400, 'invalid_request', 'invalid_path_parameter');
  });

  test('a cursor of one contact’s messages is refused on another contact’s messages', async () => {
    const conversations = await all('/v2/conversations');
    const [x, y] = [...new Set(conversations.map((c) => c.contact_id as string))];
    const page = await get(`/v2/conversations/${x}/messages?limit=2`);
    assert.equal(typeof page.json.page.next_cursor, 'string');
    const r = await get(
      `/v2/conversations/${y}/messages?limit=2&cursor=${encodeURIComponent(page.json.page.next_cursor)}`,
    );
    assertError(r, 400, 'invalid_request', 'invalid_cursor');
  });

  test('created_after combines with conversation_id and with the cursor', async () => {
    const messages = await all(`/v2/conversations/${contactWithMessages}/messages`);
    const pivot = messages[1].created_at as string;
    const conversation = messages[0].conversation_id as string;
    const query = `created_after=${encodeURIComponent(pivot)}&conversation_id=${conversation}`;
    const expected = messages.filter((m) => m.created_at > pivot && m.conversation_id === conversation);
    assert.ok(expected.length >= 2);
    assert.deepEqual((await walk(`/v2/conversations/${contactWithMessages}/messages?${query}`, 1)).items, expected);
    // Messages sync by created_after, not updated_after.
    const wrong = await get(
      `/v2/conversations/${contactWithMessages}/messages?updated_after=${encodeURIComponent(pivot)}`,
    );
    assertError(wrong, 400, 'invalid_request', 'invalid_query_parameter');
    assert.equal(wrong.json.error.details?.parameter, 'updated_after');
  });

  test('a contact without conversations has an empty message list', async () => {
    const created = await server.request('POST', '/v2/contacts', { key: A.key, body: contactBody(), idem: idem() });
    const r = await get(`/v2/conversations/${created.json.data.id}/messages`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { data: [], page: { limit: 50, has_more: false, next_cursor: null } });
  });
});

// ------------------------------------------------------------------------------------------ resources

describe('pipeline stages', () => {
  test('10 stages whose ids are the 10 contact statuses, positions 1..10, in a brand-new workspace too', async () => {
    const fresh = await server.workspace({ scopes: ['contacts:read'] });
    for (const key of [fresh.key, A.key]) {
      const stages = await all('/v2/pipeline/stages', key);
      assert.equal(stages.length, 10);
      assert.deepEqual(sorted(ids(stages)), sorted(CONTACT_STATUSES));
      const byPosition = [...stages].sort((a, b) => a.position - b.position);
      assert.deepEqual(
        byPosition.map((s) => s.position),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      );
      assert.deepEqual(ids(byPosition), CONTACT_STATUSES);
      for (const s of stages) {
        assertItemShape(s, 'pipeline_stage', 'stage');
        assert.equal(typeof s.name, 'string');
        assert.ok(s.name.length > 0);
      }
    }
  });
});

describe('catalog items', () => {
  test('kind and active filter exactly; the cursor is bound to them; bad values are 400', async () => {
    const full = await all('/v2/catalog/items');
    assert.ok(full.some((i) => i.kind === 'product') && full.some((i) => i.kind === 'service'));
    assert.ok(full.some((i) => i.active === true) && full.some((i) => i.active === false));
    const cases: [string, (i: any) => boolean][] = [
      ['kind=product', (i) => i.kind === 'product'],
      ['kind=service', (i) => i.kind === 'service'],
      ['active=true', (i) => i.active === true],
      ['active=false', (i) => i.active === false],
      ['kind=service&active=true', (i) => i.kind === 'service' && i.active === true],
      ['kind=product&active=false', (i) => i.kind === 'product' && i.active === false],
    ];
    for (const [query, keep] of cases) {
      const expected = full.filter(keep);
      assert.deepEqual(await all(`/v2/catalog/items?${query}`), expected, query);
      assert.deepEqual((await walk(`/v2/catalog/items?${query}`, 1)).items, expected, `${query} walked`);
    }
    const first = await get('/v2/catalog/items?kind=product&limit=1');
    const cursor = encodeURIComponent(first.json.page.next_cursor);
    assertError(
      await get(`/v2/catalog/items?kind=service&limit=1&cursor=${cursor}`),
      400,
      'invalid_request',
      'invalid_cursor',
    );
    for (const bad of ['kind=bundle', 'active=maybe']) {
      assertError(await get(`/v2/catalog/items?${bad}`), 400, 'invalid_request', 'invalid_query_parameter', bad);
    }
    // A client that prints a boolean its own way (Python's True) learns which two words are taken.
    assert.equal((await get('/v2/catalog/items?active=True')).json.error.message, 'active must be true or false.');
    for (const i of full) {
      assert.ok(['product', 'service'].includes(i.kind));
      assert.equal(typeof i.active, 'boolean');
      assert.equal(i.price_amount === null, i.currency === null);
    }
  });
});

describe('conversations', () => {
  test('contact_id, channel and status filter exactly', async () => {
    const full = await all('/v2/conversations');
    assert.ok(full.length >= 10);
    const channels = [...new Set(full.map((c) => c.channel))];
    const statuses = [...new Set(full.map((c) => c.status))];
    assert.ok(channels.length >= 2 && statuses.length === 2, 'the seed spreads channels and statuses');
    const cases: [string, (c: any) => boolean][] = [
      [`contact_id=${full[0].contact_id}`, (c) => c.contact_id === full[0].contact_id],
      [`contact_id=${UNKNOWN_ID}`, () => false],
      ...channels.map((ch): [string, (c: any) => boolean] => [`channel=${ch}`, (c) => c.channel === ch]),
      ...statuses.map((st): [string, (c: any) => boolean] => [`status=${st}`, (c) => c.status === st]),
      [`channel=${channels[0]}&status=open`, (c) => c.channel === channels[0] && c.status === 'open'],
    ];
    for (const [query, keep] of cases) {
      const expected = full.filter(keep);
      assert.deepEqual(await all(`/v2/conversations?${query}`), expected, query);
      assert.deepEqual((await walk(`/v2/conversations?${query}`, 2)).items, expected, `${query} walked`);
    }
    for (const bad of ['channel=fax', 'status=archived', 'contact_id=nope']) {
      assertError(await get(`/v2/conversations?${bad}`), 400, 'invalid_request', 'invalid_query_parameter', bad);
    }
  });

  test('each conversation’s contact_id lists its messages', async () => {
    const conversations = await all('/v2/conversations');
    const contacts = new Set(ids(await all('/v2/contacts')));
    for (const c of conversations) {
      assert.ok(contacts.has(c.contact_id), 'the contact is a contact of the workspace');
      const messages = await all(`/v2/conversations/${c.contact_id}/messages`);
      const mine = messages.filter((m) => m.conversation_id === c.id);
      assert.ok(mine.length > 0, `conversation ${c.id} has its messages under its contact`);
      for (const m of messages) {
        assertItemShape(m, 'message', 'message');
        assert.equal(m.contact_id, c.contact_id);
      }
      assertAscending(messages, 'created_at', 'messages');
      assert.equal(
        c.last_message_at,
        mine
          .map((m) => m.created_at as string)
          .sort()
          .at(-1),
      );
      const filtered = await all(`/v2/conversations/${c.contact_id}/messages?conversation_id=${c.id}`);
      assert.deepEqual(filtered, mine);
    }
  });
});
