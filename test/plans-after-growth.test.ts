// A workspace that starts empty and grows, as a new deployment's first import does. PostgreSQL keeps
// a prepared statement's plan per connection until the table's statistics change; a plan made while
// the table was empty cannot tell the indexes apart (each is estimated to return at most one row)
// and may find a contact by reading the whole workspace through another index, long after it has
// grown. The service takes the statistics of a table that has grown (src/infra/table-statistics.ts):
// this test runs every statement of the contacts' hot paths more than five times on an empty table
// (PostgreSQL's point for keeping a generic plan), grows the workspace to 4,000 contacts, waits for
// the statistics, and counts the index entries and rows a round of gets, lookups, upserts and
// batches then reads. Runs on the store of this run, a new one (PostgreSQL: a database of its own,
// whose autovacuum is off on the CI machine).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { createPostgresDatabase } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { STORE, openTestDatabase, sleep } from './harness.js';
import { newDatabase } from './servers.js';
import { useTestServer } from './test-server.js';

const GROWTH = 4_000;
const BATCH = 100;

let dropDatabase: (() => Promise<void>) | undefined;
const server = useTestServer({
  openDb: async () => {
    if (STORE === 'embedded') return openTestDatabase();
    const database = await newDatabase(process.env.DATABASE_URL!, 'wsapi_growth');
    dropDatabase = () => database.drop();
    const db = createPostgresDatabase(database.url, 10);
    await migrate(db, GENERATED_DATABASE_CODE);
    return db;
  },
});
test.after(async () => dropDatabase?.());

/** Index entries and heap rows of `contacts` read so far, by index (and `seq` for sequential scans). */
async function contactsReads(): Promise<Map<string, number>> {
  // Counters reach the views when each connection flushes them: an idle PostgreSQL connection does
  // within 10 s of its last statement (measured: 2.5 s missed four of five gets). The embedded
  // store's one connection is told to flush at once.
  if (STORE === 'embedded') await server.db.query('SELECT pg_stat_force_next_flush()');
  else await sleep(11_000);
  await server.db.query('SELECT 1');
  const { rows } = await server.db.query<{ name: string; n: string }>(
    `SELECT indexrelname AS name, idx_tup_read::text AS n FROM pg_stat_user_indexes WHERE relname = 'contacts'
     UNION ALL SELECT 'seq', seq_tup_read::text FROM pg_stat_user_tables WHERE relname = 'contacts'`,
  );
  return new Map(rows.map((r) => [r.name, Number(r.n)]));
}

async function analyzedOnce(): Promise<boolean> {
  const { rows } = await server.db.query<{ analyzed: boolean }>(
    `SELECT (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL) AS analyzed
       FROM pg_stat_user_tables WHERE relname = 'contacts'`,
  );
  return rows[0]!.analyzed;
}

test('a workspace grown from empty: its gets, lookups, upserts and batches read their own contacts, not the workspace', async () => {
  const ws = await server.workspace({ scopes: ['contacts:read', 'contacts:write'] });
  const key = ws.key;
  const batch = (items: object[]) =>
    server.request('POST', '/v2/contacts/batch/upsert', { key, idem: `growth-${randomUUID()}`, body: { items } });
  const item = (n: number, round = 0) => ({
    external_id: `crm-${n}`,
    name: `Contact ${n} ${round}`,
    email: `contact.${n}@example.com`,
    phone: `+551199${String(n).padStart(7, '0')}`,
  });

  // Every statement of the round below, eight times on an empty table.
  for (let i = 0; i < 8; i++) {
    assert.equal((await server.request('GET', `/v1/contacts/${randomUUID()}`, { key })).status, 404);
    assert.equal((await server.request('GET', `/v2/contacts?email=nobody.${i}%40example.com`, { key })).status, 200);
    assert.equal((await server.request('GET', `/v2/contacts?external_id=nobody-${i}`, { key })).status, 200);
    assert.equal((await server.request('GET', `/v2/contacts/external/nobody-${i}`, { key })).status, 404);
    const put = await server.request('PUT', `/v1/contacts/external/early-${i}`, {
      key,
      idem: `growth-${randomUUID()}`,
      body: { name: `Early ${i}` },
    });
    assert.equal(put.status, 201, put.text);
    assert.equal((await batch([item(GROWTH + i)])).status, 200);
  }

  for (let first = 0; first < GROWTH; first += BATCH) {
    const answer = await batch(Array.from({ length: BATCH }, (_, k) => item(first + k)));
    assert.equal(answer.status, 200, answer.text);
  }
  const waitUntil = Date.now() + 30_000;
  while (!(await analyzedOnce())) {
    assert.ok(Date.now() < waitUntil, 'the statistics of contacts were not taken within 30 s of its growth');
    await sleep(250);
  }

  const before = await contactsReads();
  const ids: string[] = [];
  for (let n = 0; n < 5; n++) {
    const got = await server.request('GET', `/v2/contacts/external/crm-${n * 7}`, { key });
    assert.equal(got.status, 200, got.text);
    ids.push(got.json.data.id);
  }
  for (const [n, id] of ids.entries()) {
    assert.equal((await server.request('GET', `/v1/contacts/${id}`, { key })).status, 200);
    const byEmail = await server.request('GET', `/v2/contacts?email=CONTACT.${n * 7}%40example.com`, { key });
    assert.deepEqual(
      byEmail.json.data.map((c: { id: string }) => c.id),
      [id],
    );
    const byExternal = await server.request('GET', `/v2/contacts?external_id=crm-${n * 7}`, { key });
    assert.deepEqual(
      byExternal.json.data.map((c: { id: string }) => c.id),
      [id],
    );
    const put = await server.request('PUT', `/v1/contacts/external/crm-${n * 7}`, {
      key,
      idem: `growth-${randomUUID()}`,
      body: { name: `Renamed ${n}` },
    });
    assert.equal(put.status, 200, put.text);
  }
  for (const first of [1_000, 3_000]) {
    const answer = await batch(Array.from({ length: BATCH }, (_, k) => item(first + k, 1)));
    assert.equal(answer.status, 200, answer.text);
    assert.ok(answer.json.data.every((r: { result: string }) => r.result === 'updated'));
  }
  const after = await contactsReads();

  const read = [...after].map(([name, n]) => [name, n - (before.get(name) ?? 0)] as const).filter(([, n]) => n > 0);
  const total = read.reduce((sum, [, n]) => sum + n, 0);
  // 20 reads of one contact each and 200 batch items: a few hundred entries. One read through the
  // wrong index is a scan of the workspace, 4,000 entries or more.
  assert.ok(
    total < GROWTH,
    `the round read ${total} entries of contacts (${read.map(([name, n]) => `${name} ${n}`).join(', ')}), ` +
      `more than a scan of the ${GROWTH}-contact workspace`,
  );
});
