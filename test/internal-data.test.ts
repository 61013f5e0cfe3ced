// What the product keeps internally never leaves (spec 1.5, 4.3.3, 6.1): the seed writes a unique
// marker into every internal column, and then every response of v1 and v2 — lists, gets, messages,
// the events feed, writes, replays, errors, HEAD, both OpenAPI documents — and every log line are
// scanned for it. Internal edits are invisible to sync (no updated_at move, no event), and events
// carry exactly the public representation.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { SCOPES } from '../src/modules/api-keys/scopes.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import {
  contactBody,
  idem,
  sleep,
  startTestServer,
  type RequestOptions,
  type TestResponse,
  type TestServer,
  type TestWorkspace,
  logLines,
} from './harness.js';

const UNKNOWN_ID = '6f1c2a9e-0000-4000-8000-00000000abcd';

// Words that name data spec 1.5 says never leaves the product; a property name is split into
// words on _, - and camelCase boundaries, as the conformance suite does.
const FORBIDDEN_WORDS = new Set([
  'note',
  'notes',
  'memory',
  'payload',
  'payloads',
  'provider',
  'token',
  'tokens',
  'secret',
  'secrets',
  'credential',
  'credentials',
  'password',
  'rule',
  'rules',
  'condition',
  'conditions',
  'action',
  'actions',
  'log',
  'logs',
  'billing',
  'private',
  'internal',
  'metadata',
]);
const isForbiddenKey = (k: string) => k.split(/_|-|(?=[A-Z])/).some((w) => FORBIDDEN_WORDS.has(w.toLowerCase()));

function forbiddenKeys(value: unknown, path = '$', found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v, i) => forbiddenKeys(v, `${path}[${i}]`, found));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (isForbiddenKey(k)) found.push(`${path}.${k}`);
      forbiddenKeys(v, `${path}.${k}`, found);
    }
  }
  return found;
}

/** Text the seed writes beside the marker into internal fields only (src/modules/owner/seed.ts). */
const SEED_INTERNAL_TEXTS = [
  'internal.example',
  'provider-ref',
  'Prefers calls after 5 pm',
  'Asked twice about installments',
  'Needs the ground-floor room',
  'Margin 38%',
  'Supplier renegotiation',
  'run finished',
];

/** Every internal column of the model (db/migrations/0002), as text. */
const INTERNAL_COLUMNS: [table: string, expression: string][] = [
  ['workspaces', 'billing_plan'],
  ['workspaces', 'billing_email'],
  ['workspaces', 'internal_notes'],
  ['workspace_credentials', 'secret'],
  ['contacts', 'notes'],
  ['contacts', 'ai_memory::text'],
  ['appointments', 'internal_notes'],
  ['pipeline_stages', 'internal_notes'],
  ['catalog_items', 'private_notes'],
  ['catalog_items', 'internal_metadata::text'],
  ['conversations', 'provider'],
  ['conversations', 'provider_conversation_id'],
  ['conversations', 'provider_payload::text'],
  ['conversations', 'private_url'],
  ['messages', 'provider_message_id'],
  ['messages', 'provider_payload::text'],
  ['messages', 'media_private_url'],
  ['automations', 'rules::text'],
  ['automations', 'conditions::text'],
  ['automations', 'actions::text'],
  ['automation_logs', 'message'],
  ['automation_logs', 'details::text'],
];

const V2_LISTS = [
  '/v2/contacts',
  '/v2/pipeline/stages',
  '/v2/appointments',
  '/v2/catalog/items',
  '/v2/conversations',
  '/v2/automations',
  '/v2/events',
];
const V1_LISTS = ['/v1/contacts', '/v1/appointments'];
const GET_ROUTES = [
  '/v1/contacts',
  '/v1/appointments',
  '/v2/contacts',
  '/v2/appointments',
  '/v2/catalog/items',
  '/v2/automations',
];

let server: TestServer;
let A: TestWorkspace;
let B: TestWorkspace;
const marker = `INTERNAL-${randomUUID()}`;

before(async () => {
  server = await startTestServer();
  A = await server.workspace({ timezone: 'America/Sao_Paulo', rateLimitPerMinute: 100_000 });
  B = await server.workspace({ rateLimitPerMinute: 100_000 });
  await ownerCommands.seed(server.owner, { workspaceId: A.id, internalMarker: marker });
  await ownerCommands.seed(server.owner, { workspaceId: B.id, internalMarker: marker });
});
after(() => server.close());

interface Seen {
  label: string;
  status: number;
  headers: string;
  text: string;
  json: unknown;
}
const seen: Seen[] = [];

async function hit(method: string, path: string, options: RequestOptions = { key: A.key }): Promise<TestResponse> {
  const r = await server.request(method, path, options);
  seen.push({
    label: `${method} ${path}`,
    status: r.status,
    headers: [...r.headers].map(([k, v]) => `${k}: ${v}`).join('\n'),
    text: r.text,
    json: r.json,
  });
  return r;
}

/** Every item of a list, pages of `limit`, every page recorded. */
async function crawlList(path: string, key = A.key, limit = 100): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const url: string = `${path}${sep}limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const r = await hit('GET', url, { key });
    assert.equal(r.status, 200, `${url}: ${r.text}`);
    items.push(...r.json.data);
    cursor = r.json.page.next_cursor;
    assert.ok(++pages <= 1000);
  } while (cursor !== null);
  return items;
}

const countWhere = async (sql: string, params: unknown[]) =>
  (await server.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0]!.n;

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

// ------------------------------------------------------------------------------------------ internal edits

/** Waits until the feed of `ws` shows an event matching `match` (the feed trails running transactions). */
async function waitForEvent(query: string, match: (e: any) => boolean, key = A.key): Promise<any[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const events = await crawlList(`/v2/events${query}`, key);
    if (events.some(match)) return events;
    assert.ok(Date.now() < deadline, `an event matching ${match.toString()} shows in /v2/events${query}`);
    await sleep(100);
  }
}

describe('internal edits are not changes', () => {
  interface Case {
    resourceType: string;
    table: string;
    /** SET clause; $3 is the new internal text */
    set: string;
    /** the API representation of row `id` (its text) */
    read: (id: string) => Promise<string>;
  }
  const findIn = async (path: string, id: string) => {
    const items = await crawlList(path);
    const item = items.find((i) => i.id === id);
    assert.ok(item, `${id} in ${path}`);
    return JSON.stringify(item);
  };
  const readGet = (base: string) => async (id: string) => {
    const r = await hit('GET', `${base}/${id}`);
    assert.equal(r.status, 200);
    return r.text;
  };
  const CASES: Case[] = [
    {
      resourceType: 'contact',
      table: 'contacts',
      set: `notes = 'edited ' || $3, ai_memory = jsonb_build_object('summary', $3::text)`,
      read: readGet('/v2/contacts'),
    },
    {
      resourceType: 'appointment',
      table: 'appointments',
      set: `internal_notes = 'edited ' || $3`,
      read: readGet('/v2/appointments'),
    },
    {
      resourceType: 'catalog_item',
      table: 'catalog_items',
      set: `private_notes = 'edited ' || $3, internal_metadata = jsonb_build_object('x', $3::text)`,
      read: readGet('/v2/catalog/items'),
    },
    {
      resourceType: 'conversation',
      table: 'conversations',
      set: `provider_payload = jsonb_build_object('edited', $3::text), provider = 'p ' || $3,
            provider_conversation_id = 'c ' || $3, private_url = 'https://x.example/' || $3`,
      read: (id) => findIn('/v2/conversations', id),
    },
    {
      resourceType: 'message',
      table: 'messages',
      set: `provider_payload = jsonb_build_object('edited', $3::text), provider_message_id = 'm ' || $3,
            media_private_url = 'https://x.example/' || $3`,
      read: async (id) => {
        const { rows } = await server.db.query<{ contact_id: string }>(
          'SELECT contact_id FROM messages WHERE workspace_id = $1 AND id = $2',
          [A.id, id],
        );
        return findIn(`/v2/conversations/${rows[0]!.contact_id}/messages`, id);
      },
    },
    {
      resourceType: 'automation',
      table: 'automations',
      set: `rules = jsonb_build_object('r', $3::text), conditions = jsonb_build_array($3::text),
            actions = jsonb_build_array($3::text)`,
      read: readGet('/v2/automations'),
    },
    {
      resourceType: 'pipeline_stage',
      table: 'pipeline_stages',
      set: `internal_notes = 'edited ' || $3`,
      read: (id) => findIn('/v2/pipeline/stages', id),
    },
    {
      resourceType: 'workspace',
      table: 'workspaces',
      set: `billing_plan = 'edited ' || $3, billing_email = 'b@' || $3, internal_notes = 'edited ' || $3`,
      read: async () => (await hit('GET', '/v2/workspace')).text,
    },
  ];

  for (const c of CASES) {
    test(`${c.resourceType}: an SQL edit of internal columns only moves no updated_at, adds no event, changes no byte`, async () => {
      const owner = c.table === 'workspaces' ? 'id' : 'workspace_id';
      const { rows } = await server.db.query<{ id: string; updated_at: string }>(
        `SELECT id::text AS id, updated_at::text AS updated_at FROM ${c.table} WHERE ${owner} = $1 ORDER BY id LIMIT 1`,
        [A.id],
      );
      const { id, updated_at } = rows[0]!;
      const events = () =>
        countWhere('events WHERE workspace_id = $1 AND resource_type = $2 AND resource_id = $3', [
          A.id,
          c.resourceType,
          id,
        ]);
      const eventsBefore = await events();
      const textBefore = await c.read(id);
      await sleep(5);
      const edited = await server.db.query(`UPDATE ${c.table} SET ${c.set} WHERE ${owner} = $1 AND id::text = $2`, [
        A.id,
        id,
        marker,
      ]);
      assert.equal(edited.rowCount, 1);
      const after = await server.db.query<{ updated_at: string }>(
        `SELECT updated_at::text AS updated_at FROM ${c.table} WHERE ${owner} = $1 AND id::text = $2`,
        [A.id, id],
      );
      assert.equal(after.rows[0]!.updated_at, updated_at, 'updated_at did not move');
      assert.equal(await events(), eventsBefore, 'no event');
      const textAfter = await c.read(id);
      assert.equal(textAfter, textBefore);
      assert.ok(!textAfter.includes(marker));
    });
  }

  test('control: an SQL edit of a public column does move updated_at and add an event', async () => {
    const { rows } = await server.db.query<{ id: string; updated_at: string }>(
      `SELECT id::text AS id, updated_at::text AS updated_at FROM contacts WHERE workspace_id = $1 ORDER BY id LIMIT 1`,
      [A.id],
    );
    const { id, updated_at } = rows[0]!;
    const events = () =>
      countWhere(`events WHERE workspace_id = $1 AND resource_type = 'contact' AND resource_id = $2`, [A.id, id]);
    const before = await events();
    await sleep(5);
    await server.db.query(
      `UPDATE contacts SET origin = 'control-edit', notes = notes || '.' WHERE workspace_id = $1 AND id = $2`,
      [A.id, id],
    );
    const after = await server.db.query<{ updated_at: string }>(
      `SELECT updated_at::text AS updated_at FROM contacts WHERE workspace_id = $1 AND id = $2`,
      [A.id, id],
    );
    assert.notEqual(after.rows[0]!.updated_at, updated_at);
    assert.equal(await events(), before + 1);
    const event = (
      await waitForEvent(`?resource_type=contact&resource_id=${id}`, (e) => e.data.origin === 'control-edit')
    ).at(-1);
    const current = await hit('GET', `/v2/contacts/${id}`);
    assert.deepEqual(event.data, current.json.data);
    assert.ok(!JSON.stringify(event).includes(marker));
  });
});

// ------------------------------------------------------------------------------------------ events

describe('events carry the public representation only', () => {
  test('after a v2 PATCH, the contact.updated event data equals GET /v2/contacts/{id} data, property for property', async () => {
    const contact = (await crawlList('/v2/contacts'))[4];
    const patch = await hit('PATCH', `/v2/contacts/${contact.id}`, {
      key: A.key,
      body: { origin: `events-${randomUUID().slice(0, 8)}`, status: 'meeting' },
      idem: idem(),
    });
    assert.equal(patch.status, 200, patch.text);
    const requestId = patch.headers.get('x-request-id');
    const events = await waitForEvent(
      `?resource_type=contact&resource_id=${contact.id}`,
      (e) => e.request_id === requestId,
    );
    const event = events.find((e) => e.request_id === requestId);
    assert.equal(event.type, 'contact.updated');
    assert.equal(event.resource_id, contact.id);
    assert.equal(events.at(-1), event, 'it is the latest event of the contact');
    const got = await hit('GET', `/v2/contacts/${contact.id}`);
    assert.deepEqual(Object.keys(event.data).sort(), Object.keys(got.json.data).sort());
    assert.deepEqual(event.data, got.json.data);
    assert.deepEqual(event.data, patch.json.data);
  });

  test('the latest event of every resource equals what the API answers for it now', async () => {
    // The crawl changed a few contacts last; wait for the feed to show the newest change.
    const last = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE workspace_id = $1', [
      A.id,
    ]);
    const feed = await (async () => {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const f = await crawlList('/v2/events');
        if (f.length >= last.rows[0]!.n) return f;
        assert.ok(Date.now() < deadline, 'the feed catches up');
        await sleep(100);
      }
    })();
    const latest = new Map<string, any>();
    for (const e of feed) latest.set(`${e.resource_type}/${e.resource_id}`, e);
    const current = new Map<string, unknown>();
    const put = (type: string, items: any[]) => items.forEach((i) => current.set(`${type}/${i.id}`, i));
    put('contact', await crawlList('/v2/contacts'));
    put('appointment', await crawlList('/v2/appointments'));
    put('pipeline_stage', await crawlList('/v2/pipeline/stages'));
    put('catalog_item', await crawlList('/v2/catalog/items'));
    put('automation', await crawlList('/v2/automations'));
    const conversations = await crawlList('/v2/conversations');
    put('conversation', conversations);
    for (const contactId of new Set(conversations.map((c) => c.contact_id as string))) {
      put('message', await crawlList(`/v2/conversations/${contactId}/messages`));
    }
    put('workspace', [(await hit('GET', '/v2/workspace')).json.data]);
    let compared = 0;
    for (const [k, item] of current) {
      const event = latest.get(k);
      assert.ok(event, `an event for ${k}`);
      assert.deepEqual(event.data, item, k);
      compared++;
    }
    assert.ok(compared > 150);
    for (const e of feed) assert.ok(!JSON.stringify(e).includes(marker));
  });

  test('a deleted contact: contact.deleted (and its conversations and messages) with data {id} only (a contact: also external_id)', async () => {
    const conversation = (await crawlList('/v2/conversations'))[0];
    const contactId: string = conversation.contact_id;
    await ownerCommands.deleteContact(server.owner, { contactId });
    const events = await waitForEvent(
      `?type=contact.deleted,conversation.deleted,message.deleted`,
      (e) => e.type === 'contact.deleted' && e.resource_id === contactId,
    );
    const deleted = events.filter((e) => e.resource_id === contactId || e.resource_id === conversation.id);
    assert.ok(deleted.some((e) => e.type === 'conversation.deleted'));
    for (const e of events) {
      // Only the id, and for the contact its external_id (public, for mirrors keyed by it).
      const tombstone = e.type === 'contact.deleted' ? { id: e.resource_id, external_id: null } : { id: e.resource_id };
      assert.deepEqual(e.data, tombstone, e.type);
      assert.ok(!JSON.stringify(e).includes(marker));
    }
    assert.equal((await hit('GET', `/v2/contacts/${contactId}`)).status, 404);
    assert.equal((await hit('GET', `/v2/conversations/${contactId}/messages`)).status, 404);
    for (const s of seen.slice(-5)) assert.ok(!s.text.includes(marker));
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
