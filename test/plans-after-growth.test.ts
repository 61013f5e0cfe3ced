// Plans made while the statistics do not describe a workspace: estimated at one row, it may have a
// contact found by reading the whole workspace through another index (src/infra/table-statistics.ts).
// Two cases, in order, on one new store (PostgreSQL: a database of its own, whose autovacuum is off
// on the CI machine):
// 1. A workspace that starts empty and grows, as a new deployment's first import does. PostgreSQL
//    keeps a prepared statement's plan per connection until the table's statistics change. Every
//    statement of the contacts' hot paths runs more than five times on the empty table (PostgreSQL's
//    point for keeping a generic plan), the workspace grows to 4,000 contacts, and the statistics
//    must be taken within 30 s.
// 2. Then a second workspace, which the statistics taken in case 1 do not know, grows to 1,600
//    contacts: too few to double the table, but its statements are planned for it (the embedded
//    store always plans with the values given). Its statistics must be taken within 30 s.
// In each case a round of gets, lookups, upserts and batches then reads fewer index entries and rows
// of contacts than one scan of the workspace.
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
/** Case 2's workspace: far from doubling the table, big enough that a scan of it shows. */
const NEW_WORKSPACE = 1_600;
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

/** Whether the statistics of contacts list the workspace among its most common values. */
async function knownToStatistics(workspaceId: string): Promise<boolean> {
  const { rows } = await server.db.query<{ known: boolean }>(
    `SELECT coalesce($1 = ANY(most_common_vals::text::uuid[]), false) AS known FROM pg_stats
      WHERE schemaname = current_schema() AND tablename = 'contacts' AND attname = 'workspace_id'`,
    [workspaceId],
  );
  return rows[0]?.known ?? false;
}

async function analyzedOnce(): Promise<boolean> {
  const { rows } = await server.db.query<{ analyzed: boolean }>(
    `SELECT (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL) AS analyzed
       FROM pg_stat_user_tables WHERE relname = 'contacts'`,
  );
  return rows[0]!.analyzed;
}

/** A contact of the growth batches: its external id, e-mail address and phone derive from `n`. */
const item = (n: number, round = 0) => ({
  external_id: `crm-${n}`,
  name: `Contact ${n} ${round}`,
  email: `contact.${n}@example.com`,
  phone: `+551199${String(n).padStart(7, '0')}`,
});

const batchOf = (key: string, items: object[]) =>
  server.request('POST', '/v2/contacts/batch/upsert', { key, idem: `growth-${randomUUID()}`, body: { items } });

/** Every statement of `round` below, eight times, none of them finding a contact of the growth. */
async function primeStatements(key: string) {
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
    assert.equal((await batchOf(key, [item(1_000_000 + i)])).status, 200);
  }
}

async function grow(key: string, contacts: number) {
  for (let first = 0; first < contacts; first += BATCH) {
    const answer = await batchOf(
      key,
      Array.from({ length: Math.min(BATCH, contacts - first) }, (_, k) => item(first + k)),
    );
    assert.equal(answer.status, 200, answer.text);
  }
}

/**
 * 5 gets by external id and 5 by id, 10 lookups, 5 upserts and 2 batches of 100 updates, among the
 * workspace's `contacts`; answers the index entries and rows of contacts they read, and how.
 */
async function readsOfRound(key: string, contacts: number): Promise<{ total: number; detail: string }> {
  const before = await contactsReads();
  const ids: string[] = [];
  const picked = Array.from({ length: 5 }, (_, n) => Math.floor((n * contacts) / 5) + 7);
  for (const n of picked) {
    const got = await server.request('GET', `/v2/contacts/external/crm-${n}`, { key });
    assert.equal(got.status, 200, got.text);
    ids.push(got.json.data.id);
  }
  for (const [i, id] of ids.entries()) {
    const n = picked[i]!;
    assert.equal((await server.request('GET', `/v1/contacts/${id}`, { key })).status, 200);
    const byEmail = await server.request('GET', `/v2/contacts?email=CONTACT.${n}%40example.com`, { key });
    assert.deepEqual(
      byEmail.json.data.map((c: { id: string }) => c.id),
      [id],
    );
    const byExternal = await server.request('GET', `/v2/contacts?external_id=crm-${n}`, { key });
    assert.deepEqual(
      byExternal.json.data.map((c: { id: string }) => c.id),
      [id],
    );
    const put = await server.request('PUT', `/v1/contacts/external/crm-${n}`, {
      key,
      idem: `growth-${randomUUID()}`,
      body: { name: `Renamed ${n}` },
    });
    assert.equal(put.status, 200, put.text);
  }
  for (const first of [Math.floor(contacts / 4), Math.floor((contacts * 3) / 4) - BATCH]) {
    const answer = await batchOf(
      key,
      Array.from({ length: BATCH }, (_, k) => item(first + k, 1)),
    );
    assert.equal(answer.status, 200, answer.text);
    assert.ok(answer.json.data.every((r: { result: string }) => r.result === 'updated'));
  }
  const after = await contactsReads();
  const read = [...after].map(([name, n]) => [name, n - (before.get(name) ?? 0)] as const).filter(([, n]) => n > 0);
  return {
    total: read.reduce((sum, [, n]) => sum + n, 0),
    detail: read.map(([name, n]) => `${name} ${n}`).join(', '),
  };
}

async function waitFor(what: string, done: () => Promise<boolean>) {
  const waitUntil = Date.now() + 30_000;
  while (!(await done())) {
    assert.ok(Date.now() < waitUntil, `${what} within 30 s`);
    await sleep(250);
  }
}

test('a workspace grown from empty: its gets, lookups, upserts and batches read their own contacts, not the workspace', async (t) => {
  const ws = await server.workspace({ scopes: ['contacts:read', 'contacts:write'] });
  await primeStatements(ws.key);
  await grow(ws.key, GROWTH);
  await waitFor('the statistics of contacts were taken', analyzedOnce);

  const { total, detail } = await readsOfRound(ws.key, GROWTH);
  t.diagnostic(`the round read ${total} entries of contacts: ${detail}`);
  // 20 reads of one contact each and 200 batch items: a few hundred entries. One read through the
  // wrong index is a scan of the workspace, 4,000 entries or more.
  assert.ok(
    total < GROWTH,
    `the round read ${total} entries of contacts (${detail}), more than a scan of the workspace`,
  );
});

test('a workspace the statistics do not know: its statements read their own contacts once it has grown', async (t) => {
  // Statistics of contacts that count every row there is now, all of them case 1's workspace: the
  // growth below does not double the table.
  await server.db.query('ANALYZE contacts');
  const ws = await server.workspace({ scopes: ['contacts:read', 'contacts:write'] });
  assert.equal(await knownToStatistics(ws.id), false);
  await primeStatements(ws.key);
  await grow(ws.key, NEW_WORKSPACE);
  await waitFor('the statistics of contacts counted the new workspace', () => knownToStatistics(ws.id));

  const { total, detail } = await readsOfRound(ws.key, NEW_WORKSPACE);
  t.diagnostic(`the round read ${total} entries of contacts: ${detail}`);
  assert.ok(
    total < NEW_WORKSPACE,
    `the round read ${total} entries of contacts (${detail}), more than a scan of the ${NEW_WORKSPACE}-contact workspace`,
  );
});
