// Shared parts of the v2 resource tests (test/v2-*.test.ts): the seeded workspaces, the expected
// shapes and scopes of every list and get, and the helpers that walk and check pages.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Scope } from '../src/shared/scopes.js';
import { RESOURCE_TYPES, RESOURCES, type ResourceType } from '../src/modules/resources.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { eventPosition, sleep, type TestResponse, type TestServer, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

export const MS_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export { UNKNOWN_ID } from './harness.js';
export const TIMEZONE = 'America/Sao_Paulo';
export const ERROR_KEYS = ['code', 'details', 'message', 'request_id', 'type'];

/** Spec 3.1, in pipeline order. */
export const CONTACT_STATUSES = [
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

/**
 * The property set of every v2 resource, sorted, as its declaration (src/modules/resources.ts) has
 * it, and of an event (spec 2.8).
 */
export const KEYS: Record<ResourceType | 'event', readonly string[]> = {
  ...(Object.fromEntries(
    RESOURCE_TYPES.map((type) => [type, Object.keys(RESOURCES[type].item.properties).sort()]),
  ) as Record<ResourceType, string[]>),
  event: ['data', 'id', 'occurred_at', 'request_id', 'resource_id', 'resource_type', 'type'],
};
export type ResourceName = keyof typeof KEYS;

export let server: TestServer;
/** seeded with every resource; its main key holds every scope */
export let A: TestWorkspace;
/** another seeded workspace: its ids must be 404 for A */
export let B: TestWorkspace;
/** a contact of A with a conversation and messages, and one of B */
export let contactWithMessages: string;
export let contactOfB: string;

export interface ListDef {
  name: string;
  resource: ResourceName;
  path: () => string;
  /** the path as /v2/openapi.json names it */
  docPath: string;
  scope: Scope;
  order: 'updated_at' | 'created_at' | 'feed';
  since?: 'updated_after' | 'created_after';
}

export const LISTS: ListDef[] = [
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

export const GETS: { name: string; resource: ResourceName; path: string; docPath: string; scope: Scope }[] = [
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
export const V2_OPERATIONS: [string, string, string][] = [
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

/**
 * Beyond spec 4.3: the feed's current position, for the sync recipe (docs/sync.md), and for imports
 * and two-way sync the batch upsert of contacts and the lookup by external id
 * (docs/api-conventions.md#contacts).
 */
export const V2_ADDED_OPERATIONS: [string, string, string][] = [
  ['get', '/v2/events/head', 'getEventsHead'],
  ['post', '/v2/contacts/batch/upsert', 'batchUpsertContacts'],
  ['get', '/v2/contacts/external/{external_id}', 'getContactByExternalId'],
  ['delete', '/v2/contacts/{id}', 'deleteContact'],
  ['delete', '/v2/contacts/external/{external_id}', 'deleteContactByExternalId'],
  ['post', '/v2/contacts/batch/delete', 'batchDeleteContacts'],
];

/** Two seeded workspaces (A with distinct updated_at values on every sync list), before the file's tests. */
export function useV2Workspaces(): void {
  server = useTestServer({
    setup: async () => {
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
    },
  });
}

// ------------------------------------------------------------------------------------------ helpers

export function get(path: string, key = A.key): Promise<TestResponse> {
  return server.request('GET', path, { key });
}

export const withQuery = (path: string, query: string) => `${path}${path.includes('?') ? '&' : '?'}${query}`;
export const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
export const sorted = (keys: Iterable<string>) => [...keys].sort();

export function assertError(r: TestResponse, status: number, type: string, code: string, what = ''): void {
  assert.equal(r.status, status, `${what} ${r.text}`);
  assert.deepEqual(Object.keys(r.json), ['error'], what);
  for (const k of Object.keys(r.json.error)) assert.ok(ERROR_KEYS.includes(k), `${what}: error.${k}`);
  assert.equal(r.json.error.type, type, what);
  assert.equal(r.json.error.code, code, what);
  assert.equal(typeof r.json.error.message, 'string', what);
  assert.equal(r.json.error.request_id, r.headers.get('x-request-id'), what);
}

export function assertPage(json: any, limit: number, what: string): void {
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
export async function walk(path: string, limit: number, key = A.key): Promise<{ items: any[]; pages: number }> {
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
export const all = async (path: string, key = A.key) => (await walk(path, 100, key)).items;

export function assertItemShape(item: any, resource: ResourceName, what: string): void {
  assert.deepEqual(sorted(Object.keys(item)), [...KEYS[resource]], what);
  for (const k of ['created_at', 'updated_at', 'occurred_at'] as const) {
    if (k in item) assert.match(item[k], MS_DATE_TIME, `${what}.${k}`);
  }
}

/** Position of an event id of workspace A (the lists below are A's). */
export const positionInFeed = (id: string) => eventPosition(server, A.id, id);

export function assertAscending(items: any[], order: ListDef['order'], what: string): void {
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
export const msBefore = (t: string) => new Date(Date.parse(t) - 1).toISOString();
/** The same instant written with a -03:00 offset. */
export function withOffset(t: string): string {
  const local = new Date(Date.parse(t) - 3 * 3600_000).toISOString();
  return `${local.slice(0, 23)}-03:00`;
}
