// Version 2 read resources (spec 4.3, 2.8, 5.5): the workspace, every list and get with their exact
// shapes, the shared page envelope and cursor, the sync filters, the scope of every route, v2
// contacts and appointments equal to v1, v2 contact writes under the v1 rules, and /v2/openapi.json.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { SCOPES, type Scope } from '../src/modules/api-keys/scopes.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import {
  contactBody,
  idem,
  eventPosition,
  sleep,
  startTestServer,
  type TestResponse,
  type TestServer,
  type TestWorkspace,
} from './harness.js';

const MS_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UNKNOWN_ID = '6f1c2a9e-0000-4000-8000-00000000abcd';
const TIMEZONE = 'America/Sao_Paulo';
const ERROR_KEYS = ['code', 'details', 'message', 'request_id', 'type'];

/** Spec 3.1, in pipeline order. */
const CONTACT_STATUSES = [
  'cold_list',
  'prospecting_started',
  'talking',
  'qualified_conversation',
  'nurturing',
  'scheduled',
  'meeting',
  'post_meeting',
  'customer_confirmed',
  'lost',
];

/** The property set of every v2 resource (the v2 route schemas; contact and appointment as spec 2.1, 2.4). */
const KEYS = {
  workspace: ['created_at', 'id', 'name', 'status', 'timezone', 'updated_at'],
  contact: [
    'company_name',
    'created_at',
    'email',
    'external_id',
    'id',
    'name',
    'origin',
    'phone',
    'status',
    'updated_at',
    'whatsapp',
  ],
  pipeline_stage: ['created_at', 'id', 'name', 'position', 'updated_at'],
  appointment: ['contact_id', 'created_at', 'ends_at', 'id', 'source', 'starts_at', 'status', 'timezone', 'updated_at'],
  catalog_item: [
    'active',
    'created_at',
    'currency',
    'description',
    'duration_minutes',
    'id',
    'kind',
    'name',
    'price_amount',
    'updated_at',
  ],
  conversation: ['channel', 'contact_id', 'created_at', 'id', 'last_message_at', 'status', 'updated_at'],
  message: ['contact_id', 'conversation_id', 'created_at', 'direction', 'id', 'kind', 'sent_at', 'text', 'updated_at'],
  automation: [
    'created_at',
    'failure_count',
    'id',
    'last_run_at',
    'name',
    'run_count',
    'status',
    'success_count',
    'trigger_kind',
    'updated_at',
  ],
  event: ['data', 'id', 'occurred_at', 'request_id', 'resource_id', 'resource_type', 'type'],
} as const;
type ResourceName = keyof typeof KEYS;

let server: TestServer;
/** seeded with every resource; its main key holds every scope */
let A: TestWorkspace;
/** another seeded workspace: its ids must be 404 for A */
let B: TestWorkspace;
/** a contact of A with a conversation and messages, and one of B */
let contactWithMessages: string;
let contactOfB: string;

interface ListDef {
  name: string;
  resource: ResourceName;
  path: () => string;
  /** the path as /v2/openapi.json names it */
  docPath: string;
  scope: Scope;
  order: 'updated_at' | 'created_at' | 'feed';
  since?: 'updated_after' | 'created_after';
}

const LISTS: ListDef[] = [
  {
    name: 'contacts',
    resource: 'contact',
    path: () => '/v2/contacts',
    docPath: '/v2/contacts',
    scope: 'contacts:read',
    order: 'updated_at',
    since: 'updated_after',
  },
  {
    name: 'pipeline stages',
    resource: 'pipeline_stage',
    path: () => '/v2/pipeline/stages',
    docPath: '/v2/pipeline/stages',
    scope: 'contacts:read',
    order: 'updated_at',
    since: 'updated_after',
  },
  {
    name: 'appointments',
    resource: 'appointment',
    path: () => '/v2/appointments',
    docPath: '/v2/appointments',
    scope: 'appointments:read',
    order: 'updated_at',
    since: 'updated_after',
  },
  {
    name: 'catalog items',
    resource: 'catalog_item',
    path: () => '/v2/catalog/items',
    docPath: '/v2/catalog/items',
    scope: 'catalog:read',
    order: 'updated_at',
    since: 'updated_after',
  },
  {
    name: 'conversations',
    resource: 'conversation',
    path: () => '/v2/conversations',
    docPath: '/v2/conversations',
    scope: 'conversations:read',
    order: 'updated_at',
    since: 'updated_after',
  },
  {
    name: 'automations',
    resource: 'automation',
    path: () => '/v2/automations',
    docPath: '/v2/automations',
    scope: 'automations:read',
    order: 'updated_at',
    since: 'updated_after',
  },
  {
    name: 'messages',
    resource: 'message',
    path: () => `/v2/conversations/${contactWithMessages}/messages`,
    docPath: '/v2/conversations/{contact_id}/messages',
    scope: 'messages:read',
    order: 'created_at',
    since: 'created_after',
  },
  {
    name: 'events',
    resource: 'event',
    path: () => '/v2/events',
    docPath: '/v2/events',
    scope: 'events:read',
    order: 'feed',
  },
];

const GETS: { name: string; resource: ResourceName; path: string; docPath: string; scope: Scope }[] = [
  { name: 'contact', resource: 'contact', path: '/v2/contacts', docPath: '/v2/contacts/{id}', scope: 'contacts:read' },
  {
    name: 'appointment',
    resource: 'appointment',
    path: '/v2/appointments',
    docPath: '/v2/appointments/{id}',
    scope: 'appointments:read',
  },
  {
    name: 'catalog item',
    resource: 'catalog_item',
    path: '/v2/catalog/items',
    docPath: '/v2/catalog/items/{id}',
    scope: 'catalog:read',
  },
  {
    name: 'automation',
    resource: 'automation',
    path: '/v2/automations',
    docPath: '/v2/automations/{id}',
    scope: 'automations:read',
  },
];

/** Spec 4.3: every operation of v2, with the operationId the service publishes for it. */
const V2_OPERATIONS: [string, string, string][] = [
  ['get', '/v2/workspace', 'getWorkspace'],
  ['get', '/v2/contacts', 'listContacts'],
  ['post', '/v2/contacts', 'createContact'],
  ['get', '/v2/contacts/{id}', 'getContact'],
  ['patch', '/v2/contacts/{id}', 'updateContact'],
  ['put', '/v2/contacts/external/{external_id}', 'upsertContactByExternalId'],
  ['get', '/v2/pipeline/stages', 'listPipelineStages'],
  ['get', '/v2/appointments', 'listAppointments'],
  ['get', '/v2/appointments/{id}', 'getAppointment'],
  ['get', '/v2/catalog/items', 'listCatalogItems'],
  ['get', '/v2/catalog/items/{id}', 'getCatalogItem'],
  ['get', '/v2/conversations', 'listConversations'],
  ['get', '/v2/conversations/{contact_id}/messages', 'listMessages'],
  ['get', '/v2/automations', 'listAutomations'],
  ['get', '/v2/automations/{id}', 'getAutomation'],
  ['get', '/v2/events', 'listEvents'],
];

/** Beyond spec 4.3: the feed's current position, for the sync recipe (docs/sync.md). */
const V2_ADDED_OPERATIONS: [string, string, string][] = [['get', '/v2/events/head', 'getEventsHead']];

before(async () => {
  server = await startTestServer();
  A = await server.workspace({ timezone: TIMEZONE, rateLimitPerMinute: 100_000 });
  B = await server.workspace({ rateLimitPerMinute: 100_000 });
  await ownerCommands.seed(server.owner, { workspaceId: A.id, internalMarker: `INTERNAL-${randomUUID()}` });
  await ownerCommands.seed(server.owner, { workspaceId: B.id, internalMarker: `INTERNAL-${randomUUID()}` });
  // The seed writes many rows in one statement (one updated_at for all of them); a few public
  // edits, a few milliseconds apart, give every sync list several distinct updated_at values.
  for (const [table, column] of [
    ['catalog_items', 'name'],
    ['automations', 'name'],
    ['pipeline_stages', 'name'],
    ['conversations', 'status'],
  ] as const) {
    for (let i = 0; i < 3; i++) {
      // A status is toggled twice: updated_at moves, the status is as seeded.
      for (let times = 0; times < (column === 'status' ? 2 : 1); times++) {
        await sleep(3);
        await server.db.query(
          `UPDATE ${table} SET ${column} = ${column === 'status' ? "CASE status WHEN 'open' THEN 'closed' ELSE 'open' END" : `${column} || ' *'`}
          WHERE workspace_id = $1 AND id = (SELECT id FROM ${table} WHERE workspace_id = $1 ORDER BY id OFFSET $2 LIMIT 1)`,
          [A.id, i * 2],
        );
      }
    }
  }
  const conversations = await get('/v2/conversations?limit=100');
  assert.equal(conversations.status, 200);
  contactWithMessages = conversations.json.data[0].contact_id;
  const ofB = await get('/v2/conversations?limit=1', B.key);
  contactOfB = ofB.json.data[0].contact_id;
});
after(() => server.close());

// ------------------------------------------------------------------------------------------ helpers

function get(path: string, key = A.key): Promise<TestResponse> {
  return server.request('GET', path, { key });
}

const withQuery = (path: string, query: string) => `${path}${path.includes('?') ? '&' : '?'}${query}`;
const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
const sorted = (keys: Iterable<string>) => [...keys].sort();

function assertError(r: TestResponse, status: number, type: string, code: string, what = ''): void {
  assert.equal(r.status, status, `${what} ${r.text}`);
  assert.deepEqual(Object.keys(r.json), ['error'], what);
  for (const k of Object.keys(r.json.error)) assert.ok(ERROR_KEYS.includes(k), `${what}: error.${k}`);
  assert.equal(r.json.error.type, type, what);
  assert.equal(r.json.error.code, code, what);
  assert.equal(typeof r.json.error.message, 'string', what);
  assert.equal(r.json.error.request_id, r.headers.get('x-request-id'), what);
}

function assertPage(json: any, limit: number, what: string): void {
  assert.deepEqual(sorted(Object.keys(json)), ['data', 'page'], what);
  assert.ok(Array.isArray(json.data), what);
  assert.deepEqual(sorted(Object.keys(json.page)), ['has_more', 'limit', 'next_cursor'], what);
  assert.equal(json.page.limit, limit, what);
  assert.equal(typeof json.page.has_more, 'boolean', what);
  assert.ok(json.data.length <= limit, what);
  if (json.page.has_more) {
    assert.equal(typeof json.page.next_cursor, 'string', what);
    assert.equal(json.data.length, limit, `${what}: a page with more after it is full`);
  } else {
    assert.equal(json.page.next_cursor, null, what);
  }
}

/** Every item of a list, following page.next_cursor; checks the envelope of every page. */
async function walk(path: string, limit: number, key = A.key): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const url = withQuery(path, `limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    const r = await get(url, key);
    assert.equal(r.status, 200, `${url}: ${r.text}`);
    assertPage(r.json, limit, url);
    items.push(...r.json.data);
    cursor = r.json.page.next_cursor;
    pages++;
    assert.ok(pages <= 1000, 'the walk ends');
  } while (cursor !== null);
  return { items, pages };
}

/** Everything a list holds, from pages of 100. */
const all = async (path: string, key = A.key) => (await walk(path, 100, key)).items;

function assertItemShape(item: any, resource: ResourceName, what: string): void {
  assert.deepEqual(sorted(Object.keys(item)), [...KEYS[resource]], what);
  for (const k of ['created_at', 'updated_at', 'occurred_at'] as const) {
    if (k in item) assert.match(item[k], MS_DATE_TIME, `${what}.${k}`);
  }
}

/** Position of an event id of workspace A (the lists below are A's). */
const positionInFeed = (id: string) => eventPosition(server, A.id, id);

function assertAscending(items: any[], order: ListDef['order'], what: string): void {
  for (let i = 1; i < items.length; i++) {
    const prev = items[i - 1];
    const cur = items[i];
    if (order === 'feed') {
      const [pt, ps] = positionInFeed(prev.id);
      const [ct, cs] = positionInFeed(cur.id);
      assert.ok(ct > pt || (ct === pt && cs > ps), `${what}: ${prev.id} before ${cur.id}`);
    } else {
      const a = prev[order] as string;
      const b = cur[order] as string;
      assert.ok(a < b || (a === b && prev.id < cur.id), `${what}: (${order}, id) ascending at ${i}`);
    }
  }
}

/** The same instant one millisecond earlier, in the same millisecond format. */
const msBefore = (t: string) => new Date(Date.parse(t) - 1).toISOString();
/** The same instant written with a -03:00 offset. */
function withOffset(t: string): string {
  const local = new Date(Date.parse(t) - 3 * 3600_000).toISOString();
  return `${local.slice(0, 23)}-03:00`;
}

// ------------------------------------------------------------------------------------------ workspace

describe('GET /v2/workspace', () => {
  test('exactly id, name, status, timezone, created_at, updated_at of the key’s workspace, time zone as created', async () => {
    const r = await get('/v2/workspace');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json), ['data']);
    const w = r.json.data;
    assertItemShape(w, 'workspace', 'workspace');
    assert.equal(w.id, A.id);
    assert.equal(w.timezone, TIMEZONE);
    assert.equal(w.status, 'active');
    const { rows } = await server.db.query<{ name: string }>('SELECT name FROM workspaces WHERE id = $1', [A.id]);
    assert.equal(w.name, rows[0]!.name);

    const other = await get('/v2/workspace', B.key);
    assert.equal(other.json.data.id, B.id);
    assert.equal(other.json.data.timezone, 'UTC');

    const kolkata = await server.workspace({ timezone: 'Asia/Kolkata' });
    const k = await get('/v2/workspace', kolkata.key);
    assert.equal(k.status, 200);
    assert.equal(k.json.data.id, kolkata.id);
    assert.equal(k.json.data.timezone, 'Asia/Kolkata');
  });
});

// ------------------------------------------------------------------------------------------ lists

describe('v2 lists: shape, envelope, cursor walk, order, bounds', () => {
  for (const def of LISTS) {
    test(`${def.name}: exact item properties, every page enveloped, a walk of small pages equals big pages`, async () => {
      const path = def.path();
      const big = await all(path);
      const small = await walk(path, big.length < 20 ? 2 : 7);
      assert.ok(big.length >= 6, `${def.name}: the seed filled the list (${big.length})`);
      assert.ok(small.pages >= 3, `${def.name}: several small pages`);
      assert.deepEqual(small.items, big);
      assert.equal(new Set(ids(big)).size, big.length, 'no duplicates');
      for (const item of big) assertItemShape(item, def.resource, def.name);
      assertAscending(big, def.order, def.name);
      const first = await get(path);
      assert.equal(first.status, 200);
      assertPage(first.json, 50, `${def.name} default limit`);
    });

    test(`${def.name}: limit 1..100, anything else 400 invalid_query_parameter stating the range`, async () => {
      const path = def.path();
      for (const limit of [1, 100]) {
        const r = await get(withQuery(path, `limit=${limit}`));
        assert.equal(r.status, 200, r.text);
        assertPage(r.json, limit, `limit=${limit}`);
      }
      for (const bad of ['0', '101', '-1', 'abc', '1.5', '1e1', '']) {
        const r = await get(withQuery(path, `limit=${bad}`));
        assertError(r, 400, 'invalid_request', 'invalid_query_parameter', `${def.name} limit=${bad}`);
        assert.match(r.json.error.message, /1 to 100/);
      }
    });

    test(`${def.name}: forged, foreign and garbage cursors are 400; unknown query parameters are 400`, async () => {
      const path = def.path();
      const page = await get(withQuery(path, 'limit=2'));
      const cursor: string = page.json.page.next_cursor;
      assert.equal(typeof cursor, 'string');
      const [body, mac] = cursor.split('.') as [string, string];
      const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      payload.k = Array.isArray(payload.k) ? payload.k.map((v: unknown) => (typeof v === 'string' ? `0${v}` : v)) : [];
      const forged = `${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${mac}`;
      const otherList = (await get(def.name === 'contacts' ? '/v2/automations?limit=1' : '/v2/contacts?limit=1')).json
        .page.next_cursor;
      const pathOfB = def.name === 'messages' ? `/v2/conversations/${contactOfB}/messages` : path;
      const otherWorkspace = (await get(withQuery(pathOfB, 'limit=1'), B.key)).json.page.next_cursor;
      for (const [label, bad] of [
        ['forged position', forged],
        ['bad signature', `${body}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`],
        ['garbage', 'not-a-cursor'],
        ['other list', otherList],
        ['other workspace', otherWorkspace],
      ] as const) {
        const r = await get(withQuery(path, `limit=2&cursor=${encodeURIComponent(bad)}`));
        assertError(r, 400, 'invalid_request', 'invalid_cursor', `${def.name} ${label}`);
      }
      const unknown = await get(withQuery(path, 'foo=1'));
      assertError(unknown, 400, 'invalid_request', 'invalid_query_parameter', `${def.name} foo=1`);
      assert.equal(unknown.json.error.details?.parameter, 'foo');
      if (def.since) {
        const r = await get(withQuery(path, `${def.since}=yesterday`));
        assertError(r, 400, 'invalid_request', 'invalid_query_parameter', `${def.name} ${def.since}=yesterday`);
      }
    });
  }

  test('events: ?after=<id> continues the feed right after that event', async () => {
    const feed = await all('/v2/events');
    const pivot = feed[Math.floor(feed.length / 2)];
    const rest = await all(`/v2/events?after=${pivot.id}`);
    assert.deepEqual(ids(rest), ids(feed.slice(feed.indexOf(pivot) + 1)).slice(0, rest.length));
    assert.ok(rest.length >= feed.length - feed.indexOf(pivot) - 1);
  });
});

describe('v2 lists: updated_after / created_after', () => {
  for (const def of LISTS.filter((d) => d.since)) {
    test(`${def.name}: ${def.since} keeps exactly the items strictly after the instant, at millisecond precision`, async () => {
      const since = def.since!;
      const key = def.order as 'updated_at' | 'created_at';
      const path = def.path();
      const full = await all(path);
      const instants = [...new Set(full.map((i) => i[key] as string))].sort();
      assert.ok(instants.length >= 3, `${def.name}: several distinct ${key} values`);
      const pivots = [instants[0]!, instants[Math.floor(instants.length / 2)]!, instants.at(-1)!];
      for (const pivot of pivots) {
        for (const t of [pivot, msBefore(pivot)]) {
          const expected = full.filter((i) => i[key] > t);
          const got = await all(withQuery(path, `${since}=${encodeURIComponent(t)}`));
          assert.deepEqual(ids(got), ids(expected), `${def.name} ${since}=${t}`);
        }
        const offset = await all(withQuery(path, `${since}=${encodeURIComponent(withOffset(pivot))}`));
        assert.deepEqual(ids(offset), ids(full.filter((i) => i[key] > pivot)), `${def.name} ${since} with an offset`);
      }
      // The item on the pivot is excluded, the one a millisecond later is not.
      const last = full.at(-1)!;
      assert.deepEqual(await all(withQuery(path, `${since}=${encodeURIComponent(last[key])}`)), []);
      const justBefore = await all(withQuery(path, `${since}=${encodeURIComponent(msBefore(last[key]))}`));
      assert.ok(ids(justBefore).includes(last.id));
      // A filtered walk in small pages equals the filtered big page, and the cursor is bound to the filter.
      const mid = instants[Math.floor(instants.length / 3)]!;
      const filtered = `${since}=${encodeURIComponent(mid)}`;
      const walked = await walk(withQuery(path, filtered), 2);
      assert.deepEqual(walked.items, await all(withQuery(path, filtered)));
      const firstPage = await get(withQuery(path, `limit=1&${filtered}`));
      if (firstPage.json.page.next_cursor) {
        const mixed = await get(
          withQuery(path, `limit=1&cursor=${encodeURIComponent(firstPage.json.page.next_cursor)}`),
        );
        assertError(mixed, 400, 'invalid_request', 'invalid_cursor', `${def.name}: cursor without its filter`);
      }
    });
  }
});

// ------------------------------------------------------------------------------------------ gets

describe('v2 gets', () => {
  test('a get takes no query parameters: one is 400 invalid_query_parameter, as on the lists', async () => {
    const first = (await all(GETS[0]!.path))[0]!;
    for (const path of [`${GETS[0]!.path}/${first.id}?foo=1`, '/v2/workspace?fields=name']) {
      assertError(await get(path), 400, 'invalid_request', 'invalid_query_parameter', path);
    }
  });

  for (const g of GETS) {
    test(`${g.name}: every listed item equals its GET; unknown and foreign ids 404; malformed 400`, async () => {
      const items = await all(g.path);
      assert.ok(items.length > 0);
      for (const item of items) {
        const r = await get(`${g.path}/${item.id}`);
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(Object.keys(r.json), ['data']);
        assertItemShape(r.json.data, g.resource, g.name);
        assert.deepEqual(r.json.data, item);
      }
      assertError(await get(`${g.path}/${UNKNOWN_ID}`), 404, 'not_found', 'resource_not_found', `${g.name} unknown`);
      const foreign = await all(g.path, B.key);
      assert.ok(foreign.length > 0);
      for (const item of foreign.slice(0, 3)) {
        assertError(await get(`${g.path}/${item.id}`), 404, 'not_found', 'resource_not_found', `${g.name} of B`);
      }
      for (const bad of ['not-a-uuid', '12345', `${UNKNOWN_ID}0`]) {
        const r = await get(`${g.path}/${bad}`);
        assertError(r, 400, 'invalid_request', 'invalid_path_parameter', `${g.name} ${bad}`);
      }
    });
  }
});

// ------------------------------------------------------------------------------------------ scopes

describe('scopes of every v2 route', () => {
  interface Route {
    method: string;
    /** the path as spec 4.3 writes it */
    doc: string;
    path: () => string;
    scope: Scope;
    body?: () => unknown;
    ok: number;
  }
  let patchTarget: string;
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
    appointmentId = (await get('/v2/appointments?limit=1')).json.data[0].id;
    catalogId = (await get('/v2/catalog/items?limit=1')).json.data[0].id;
    automationId = (await get('/v2/automations?limit=1')).json.data[0].id;
  });

  const call = (r: Route, key: string) =>
    server.request(r.method, r.path(), r.body ? { key, body: r.body(), idem: idem() } : { key });

  test('the matrix covers every operation of spec 4.3 and the documented additions', () => {
    assert.deepEqual(
      sorted(ROUTES.map((r) => `${r.method.toLowerCase()} ${r.doc}`)),
      sorted([...V2_OPERATIONS, ...V2_ADDED_OPERATIONS].map(([method, path]) => `${method} ${path}`)),
    );
  });

  for (const r of ROUTES) {
    test(`${r.method} ${r.doc}: only ${r.scope} passes; every other scope is 403`, async () => {
      const ok = await call(r, only.get(r.scope)!);
      assert.equal(ok.status, r.ok, `${r.method} ${r.path()} with only ${r.scope}: ${ok.text}`);
      const denied = await call(r, allBut.get(r.scope)!);
      assertError(denied, 403, 'permission_error', 'insufficient_scope', `${r.method} ${r.path()} without ${r.scope}`);
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

// ------------------------------------------------------------------------------------------ openapi

describe('/v2/openapi.json', () => {
  let doc: any;
  let v1doc: any;
  before(async () => {
    const r = await server.request('GET', '/v2/openapi.json');
    assert.equal(r.status, 200, r.text);
    doc = r.json;
    v1doc = (await server.request('GET', '/v1/openapi.json')).json;
  });

  test('public, OpenAPI 3.1.x, info.version 2.0.0', async () => {
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(doc.info.version, '2.0.0');
    const withBadKey = await server.request('GET', '/v2/openapi.json', { key: 'wsk_nope.nope' });
    assert.equal(withBadKey.status, 200);
    assert.equal(v1doc.info.version, '1.0.0');
  });

  test('documents every operation of spec 4.3 with its operationId, and nothing else but the documented additions', () => {
    const documented: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) documented.push(`${method} ${path} ${op.operationId}`);
    }
    assert.deepEqual(sorted(documented), sorted([...V2_OPERATIONS, ...V2_ADDED_OPERATIONS].map((o) => o.join(' '))));
  });

  test('every response of every operation has an example in application/json', () => {
    let n = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        assert.ok(Object.keys(op.responses).length > 0);
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const content = response.content?.['application/json'];
          assert.ok(content, `${method} ${path} ${status}: application/json content`);
          assert.notEqual(content.example, undefined, `${method} ${path} ${status}: example`);
          n++;
        }
      }
    }
    assert.ok(n >= V2_OPERATIONS.length * 2);
  });

  test('every example is valid against the schema it illustrates', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const invalid: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const content = response.content['application/json'];
          if (!ajv.validate(content.schema, content.example)) {
            const problems = (ajv.errors ?? []).map((e) => `${e.instancePath} ${e.message}`).join('; ');
            invalid.push(`${method} ${path} ${status}: ${problems}`);
          }
        }
      }
    }
    assert.deepEqual(invalid, []);
  });

  test('the documented item schemas have exactly the properties the service answers with', () => {
    const schemaOf = (path: string, status = '200') =>
      doc.paths[path].get.responses[status].content['application/json'].schema;
    assert.deepEqual(sorted(Object.keys(schemaOf('/v2/workspace').properties.data.properties)), KEYS.workspace);
    for (const def of LISTS) {
      const items = schemaOf(def.docPath).properties.data.items;
      assert.deepEqual(sorted(Object.keys(items.properties)), [...KEYS[def.resource]], def.name);
      assert.equal(items.additionalProperties, false, def.name);
    }
    for (const g of GETS) {
      assert.deepEqual(sorted(Object.keys(schemaOf(g.docPath).properties.data.properties)), [...KEYS[g.resource]]);
    }
    // v2 contact and appointment schemas are the v1 ones.
    for (const path of ['/contacts', '/contacts/{id}', '/appointments', '/appointments/{id}']) {
      assert.deepEqual(
        doc.paths[`/v2${path}`].get.responses['200'],
        v1doc.paths[`/v1${path}`].get.responses['200'],
        path,
      );
    }
  });

  test('lists document limit 1-100, cursor, and updated_after or (messages) created_after', () => {
    for (const def of LISTS) {
      const params: any[] = doc.paths[def.docPath].get.parameters;
      const byName = new Map(params.filter((p) => p.in === 'query').map((p) => [p.name, p]));
      assert.equal(byName.get('limit')?.schema.minimum, 1, def.name);
      assert.equal(byName.get('limit')?.schema.maximum, 100, def.name);
      assert.ok(byName.has('cursor'), def.name);
      if (def.since) assert.ok(byName.has(def.since), `${def.name}: ${def.since}`);
      if (def.name === 'messages') assert.ok(!byName.has('updated_after'));
    }
  });

  test('/v1/openapi.json has no /v2 path and /v2/openapi.json no /v1 path', () => {
    const v1paths = Object.keys(v1doc.paths);
    const v2paths = Object.keys(doc.paths);
    assert.ok(v1paths.length > 0 && v2paths.length > 0);
    assert.deepEqual(
      v1paths.filter((p) => !p.startsWith('/v1/')),
      [],
    );
    assert.deepEqual(
      v2paths.filter((p) => !p.startsWith('/v2/')),
      [],
    );
    for (const id of ['getWorkspace', 'listEvents', 'listMessages']) {
      assert.ok(!JSON.stringify(v1doc.paths).includes(`"${id}"`), `${id} is not in v1`);
    }
  });
});

// Ids in responses are UUIDs wherever the resource has one (stages are named by their status).
test('ids: UUIDs for every resource but pipeline stages and events', async () => {
  for (const def of LISTS.filter((d) => !['pipeline_stage', 'event'].includes(d.resource))) {
    for (const item of await all(def.path())) assert.match(item.id, UUID, def.name);
  }
});
