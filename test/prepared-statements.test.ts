// What a PostgreSQL connection keeps of the service's statements, whatever shapes its requests take.
// A prepared statement holds a cached plan in its backend for as long as the connection lives: a
// statement per set of properties of a contact write (127 per kind) or per count of an events
// filter (24 types) would let a caller grow every backend of the pool by tens of megabytes. Each
// shape below also answers what it should, so the statements that serve many shapes are checked
// for every one of them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { RESOURCE_TYPES, GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { DEFAULT_CONTACT_STATUS } from '../src/modules/contacts/contacts.schemas.js';
import { idem, openTestDatabase, type TestResponse, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

const WRITABLE = ['name', 'company_name', 'email', 'phone', 'whatsapp', 'origin', 'status'] as const;
type Field = (typeof WRITABLE)[number];

/** Values each write sets, unlike any value the contact held before it. */
const valuesOf = (n: number): Record<Field, string> => ({
  name: `Name ${n}`,
  company_name: `Company ${n}`,
  email: `person.${n}@example.com`,
  phone: `+55119${String(10_000_000 + n)}`,
  whatsapp: `+55218${String(10_000_000 + n)}`,
  origin: `origin-${n}`,
  status: n % 2 === 0 ? 'talking' : 'nurturing',
});

/** Every non-empty set of writable properties, each once. */
const SETS: Field[][] = Array.from({ length: 2 ** WRITABLE.length - 1 }, (_, i) =>
  WRITABLE.filter((_, bit) => ((i + 1) >> bit) & 1),
);

const pick = (fields: readonly Field[], values: Record<Field, string>) =>
  Object.fromEntries(fields.map((f) => [f, values[f]]));

const EVENT_TYPES = RESOURCE_TYPES.flatMap((r) => ['created', 'updated', 'deleted'].map((k) => `${r}.${k}`));

let db: Database;
let ws: TestWorkspace;
/** the weakest key that writes contacts */
let writer: string;
const server = useTestServer({
  // One connection (PGlite always has one): every statement the requests prepared is on it, where
  // pg_prepared_statements shows them.
  openDb: async () => {
    db = process.env.DATABASE_URL ? createPostgresDatabase(process.env.DATABASE_URL, 1) : await openTestDatabase();
    await migrate(db, GENERATED_DATABASE_CODE);
    return db;
  },
  setup: async () => {
    ws = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    writer = (await ws.newKey(['contacts:write'], { rateLimitPerMinute: 1_000_000 })).key;
  },
});

/** The names of the prepared statements on the connection that start with `prefix`. */
async function prepared(prefix: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    'SELECT name FROM pg_prepared_statements WHERE starts_with(name, $1) ORDER BY name',
    [prefix],
  );
  return rows.map((r) => r.name);
}

/** Checks that the answer holds `sent` and, for every property not sent, the value before. */
function assertWritten(
  answer: Record<string, unknown>,
  before: Record<string, unknown>,
  sent: Record<string, unknown>,
) {
  for (const field of WRITABLE) {
    const expected = field in sent ? sent[field] : before[field];
    assert.equal(answer[field], expected, `${field} after a write of ${Object.keys(sent).join(',')}`);
  }
}

describe('prepared statements on a connection', () => {
  test('the writable columns have no default but the status: a write sends null for what its body leaves out', async () => {
    // One statement serves every set of properties by sending every column; a default added to a
    // column would be overwritten by that null, so adding one must change the statements too.
    const { rows } = await db.query<{ column_name: string; column_default: string | null }>(
      `SELECT column_name, column_default FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'contacts' AND column_name = ANY($1::text[])
        ORDER BY column_name`,
      [[...WRITABLE]],
    );
    assert.equal(rows.length, WRITABLE.length);
    for (const row of rows) {
      if (row.column_name === 'status') assert.equal(row.column_default, `'${DEFAULT_CONTACT_STATUS}'::text`);
      else assert.equal(row.column_default, null, row.column_name);
    }
  });

  test('contact writes of every set of properties: each writes what its body carries, one statement a kind', async () => {
    const created = await server.request('POST', '/v1/contacts', { key: writer, body: valuesOf(0), idem: idem() });
    assert.equal(created.status, 201);
    let current: Record<string, unknown> = created.json.data;
    const empty = { ...Object.fromEntries(WRITABLE.map((f) => [f, null])), status: 'cold_list' };

    /** A write with the weakest key that may make it, and a fresh Idempotency-Key. */
    const write = (method: string, path: string, body: Record<string, unknown>) =>
      server.request(method, path, { key: writer, body, idem: idem() });

    let n = 1;
    for (const fields of SETS) {
      // PATCH: the properties it carries change, the others stay.
      const patch = pick(fields, valuesOf(n++));
      const patched = await write('PATCH', `/v1/contacts/${created.json.data.id}`, patch);
      assert.equal(patched.status, 200);
      assertWritten(patched.json.data, current, patch);
      current = patched.json.data;

      // PUT of a new external id creates from what it carries (cold_list when it carries no status);
      // PUT again changes what it carries and keeps the rest.
      const path = `/v1/contacts/external/set-${fields.join('-')}`;
      const put = pick(fields, valuesOf(n++));
      const createdByPut = await write('PUT', path, put);
      assert.equal(createdByPut.status, 201);
      assertWritten(createdByPut.json.data, empty, put);
      const again = pick(fields, valuesOf(n++));
      const updatedByPut = await write('PUT', path, again);
      assert.equal(updatedByPut.status, 200);
      assert.equal(updatedByPut.json.data.id, createdByPut.json.data.id);
      assertWritten(updatedByPut.json.data, createdByPut.json.data, again);

      // POST: every set the cross-field rules let through.
      const named = fields.includes('name') || fields.includes('company_name');
      const reachable = fields.includes('email') || fields.includes('phone') || fields.includes('whatsapp');
      if (named && reachable) {
        const post = pick(fields, valuesOf(n++));
        const posted = await write('POST', '/v1/contacts', post);
        assert.equal(posted.status, 201);
        assertWritten(posted.json.data, empty, post);
      }
    }

    const names = await prepared('contacts_');
    // Insert, update and upsert (each with the answer's record), and the external id's lock.
    assert.ok(names.length <= 4, `prepared statements of contact writes on one connection: ${names.join(', ')}`);
    if (db.kind === 'postgres') assert.ok(names.length > 0, 'the writes run as prepared statements');
  });

  test('events filtered by every count of types and resource types: the right page, a few statements', async () => {
    await ownerCommands.seed(server.owner, { workspaceId: ws.id, amounts: { contacts: 3, appointments: 3 } });
    const feed: { id: string; type: string; resource_type: string; resource_id: string }[] = [];
    for (let cursor: string | null = null; ;) {
      const page: TestResponse = await server.request(
        'GET',
        `/v2/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
        {
          key: ws.key,
        },
      );
      assert.equal(page.status, 200);
      feed.push(...page.json.data);
      if (!page.json.page.has_more) break;
      cursor = page.json.page.next_cursor;
    }
    assert.ok(new Set(feed.map((e) => e.resource_type)).size >= 3, 'events of several resource types');
    const middle = feed[Math.floor(feed.length / 3)]!;
    const contactId = feed.find((e) => e.resource_type === 'contact')!.resource_id;

    const filters = [
      ...EVENT_TYPES.map((_, i) => ['type', EVENT_TYPES.slice(0, i + 1)] as const),
      ...RESOURCE_TYPES.map((_, i) => ['resource_type', RESOURCE_TYPES.slice(0, i + 1)] as const),
    ];
    for (const [parameter, values] of filters) {
      for (const afterId of [undefined, middle.id]) {
        for (const resourceId of [undefined, contactId]) {
          const query = new URLSearchParams({ limit: '20', [parameter]: values.join(',') });
          if (afterId) query.set('after', afterId);
          if (resourceId) query.set('resource_id', resourceId);
          const page = await server.request('GET', `/v2/events?${query.toString()}`, { key: ws.key });
          assert.equal(page.status, 200, query.toString());
          const from = afterId ? feed.findIndex((e) => e.id === afterId) + 1 : 0;
          const expected = feed
            .slice(from)
            .filter((e) => (values as readonly string[]).includes(parameter === 'type' ? e.type : e.resource_type))
            .filter((e) => resourceId === undefined || e.resource_id === resourceId)
            .slice(0, 20)
            .map((e) => e.id);
          assert.deepEqual(
            page.json.data.map((e: { id: string }) => e.id),
            expected,
            query.toString(),
          );
        }
      }
    }

    // A page of more than three types, planned each time, read with the weakest key that may read
    // it: its scopes still decide, and a type outside them is refused, not left out.
    const weakest = await ws.newKey(['events:read', 'contacts:read', 'appointments:read'], {
      rateLimitPerMinute: 1_000_000,
    });
    const wide = [
      'contact.created',
      'contact.updated',
      'contact.deleted',
      'appointment.created',
      'appointment.updated',
    ];
    const read: { id: string; type: string }[] = [];
    for (let cursor: string | null = null; ;) {
      const page: TestResponse = await server.request(
        'GET',
        `/v2/events?limit=100&type=${wide.join(',')}${cursor ? `&cursor=${cursor}` : ''}`,
        { key: weakest.key },
      );
      assert.equal(page.status, 200);
      read.push(...page.json.data);
      if (!page.json.page.has_more) break;
      cursor = page.json.page.next_cursor;
    }
    assert.deepEqual(
      read.map((e) => e.id),
      feed.filter((e) => wide.includes(e.type)).map((e) => e.id),
    );
    assert.ok(read.some((e) => e.type.startsWith('appointment.')));
    const refused = await server.request('GET', `/v2/events?type=${[...wide, 'message.created'].join(',')}`, {
      key: weakest.key,
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error.code, 'insufficient_scope');

    const names = await prepared('events_list');
    // Unfiltered, and 1 to 3 types or resource types; each with and without after= and resource_id.
    assert.ok(names.length <= 4 * 7, `prepared statements of the feed on one connection: ${names.join(', ')}`);
    if (db.kind === 'postgres') assert.ok(names.length > 4, 'filtered pages run as prepared statements');
  });
});
