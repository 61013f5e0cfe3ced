// Shared parts of the internal-data tests (test/internal-data.test.ts, test/internal-edits.test.ts):
// two workspaces seeded with a unique marker in every internal column, the routes to crawl, and a
// recorder of every answer.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { sleep, type RequestOptions, type TestResponse, type TestServer, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

export { UNKNOWN_ID } from './harness.js';

// Words that name data spec 1.5 says never leaves the product; a property name is split into
// words on _, - and camelCase boundaries, as the conformance suite does.
export const FORBIDDEN_WORDS = new Set([
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
export const isForbiddenKey = (k: string) => k.split(/_|-|(?=[A-Z])/).some((w) => FORBIDDEN_WORDS.has(w.toLowerCase()));

export function forbiddenKeys(value: unknown, path = '$', found: string[] = []): string[] {
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
export const SEED_INTERNAL_TEXTS = [
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
export const INTERNAL_COLUMNS: [table: string, expression: string][] = [
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

export const V2_LISTS = [
  '/v2/contacts',
  '/v2/pipeline/stages',
  '/v2/appointments',
  '/v2/catalog/items',
  '/v2/conversations',
  '/v2/automations',
  '/v2/events',
];
export const V1_LISTS = ['/v1/contacts', '/v1/appointments'];
export const GET_ROUTES = [
  '/v1/contacts',
  '/v1/appointments',
  '/v2/contacts',
  '/v2/appointments',
  '/v2/catalog/items',
  '/v2/automations',
];

export let server: TestServer;
export let A: TestWorkspace;
export let B: TestWorkspace;
export const marker = `INTERNAL-${randomUUID()}`;

/** Two workspaces seeded with the marker in every internal column, before the file's tests. */
export function useSeededWorkspaces(): void {
  server = useTestServer({
    setup: async () => {
      A = await server.workspace({ timezone: 'America/Sao_Paulo', rateLimitPerMinute: 100_000 });
      B = await server.workspace({ rateLimitPerMinute: 100_000 });
      await ownerCommands.seed(server.owner, { workspaceId: A.id, internalMarker: marker });
      await ownerCommands.seed(server.owner, { workspaceId: B.id, internalMarker: marker });
    },
  });
}

export interface Seen {
  label: string;
  status: number;
  headers: string;
  text: string;
  json: unknown;
}
export const seen: Seen[] = [];

export async function hit(
  method: string,
  path: string,
  options: RequestOptions = { key: A.key },
): Promise<TestResponse> {
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
export async function crawlList(path: string, key = A.key, limit = 100): Promise<any[]> {
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

export const countWhere = async (sql: string, params: unknown[]) =>
  (await server.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0]!.n;

/** Waits until the feed of `ws` shows an event matching `match` (the feed trails running transactions). */
export async function waitForEvent(query: string, match: (e: any) => boolean, key = A.key): Promise<any[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const events = await crawlList(`/v2/events${query}`, key);
    if (events.some(match)) return events;
    assert.ok(Date.now() < deadline, `an event matching ${match.toString()} shows in /v2/events${query}`);
    await sleep(100);
  }
}
