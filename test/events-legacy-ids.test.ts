// Event ids of the format before encrypted positions (evt_<transaction id>_<sequence>, with the
// head position evt_<horizon - 1>_<max>) resume exactly where they stand in a workspace whose feed
// had events when db/migrations/0009 ran: it numbers those events in their old order and keeps the
// old positions beside the new ones. The test writes a feed on the schema of the release before that
// migration (its files as released, triggers and all: test/released-schema.ts), reads its ids the
// old way, runs the current migrate, and follows the feed from each of them; a workspace created
// after the migration refuses them like any id it did not issue.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createEmbeddedDatabase, createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { startTestServer, STORE, type TestServer } from './harness.js';
import { migrateReleased } from './released-schema.js';
import { newDatabase } from './servers.js';

let db: Database;
let dropDatabase: () => Promise<void> = async () => undefined;
let server: TestServer;
let workspaceId: string;
let key: string;
/** the feed as it was read before the migration, in its order */
let legacy: { id: string; type: string; resource_id: string }[];
let oldHead: string;
/** a second workspace whose feed retention had cut before the migration, at its second event */
let purgedWorkspace: { id: string; key: string; legacy: string[] };

const OLD_FEED = `SELECT 'evt_' || tx_id || '_' || seq AS id, type, resource_id FROM events
                   WHERE workspace_id = $1 ORDER BY tx_id, seq`;

before(async () => {
  if (STORE === 'postgres') {
    // A database of its own: the migration under test must run over the older schema.
    const own = await newDatabase(process.env.DATABASE_URL!, 'workspace_api_legacy_ids');
    dropDatabase = () => own.drop();
    db = createPostgresDatabase(own.url, 4);
  } else {
    db = await createEmbeddedDatabase(null);
  }
  await migrateReleased(db, { through: '0008_rate_limit_buckets.sql' });
  const owner = { db, defaultRateLimitPerMinute: 1_000_000 };
  workspaceId = (await ownerCommands.createWorkspace(owner, { name: 'legacy', timezone: 'UTC' })).id;
  const contacts: string[] = [];
  for (let i = 0; i < 4; i++) {
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO contacts (workspace_id, name, email) VALUES ($1, $2, $3) RETURNING id`,
      [workspaceId, `Legacy ${i}`, `legacy.${i}@example.com`],
    );
    contacts.push(rows[0]!.id);
  }
  await db.query(`UPDATE contacts SET status = 'lost' WHERE workspace_id = $1 AND id = $2`, [workspaceId, contacts[1]]);
  await db.query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [workspaceId, contacts[2]]);
  legacy = (await db.query<{ id: string; type: string; resource_id: string }>(OLD_FEED, [workspaceId])).rows;
  // The head as the earlier schema took it: below the oldest transaction still running anywhere in
  // the cluster (another test file's, say), so it is taken once those are done, as a reader would
  // have kept one taken after the changes above.
  for (let tries = 0; ; tries++) {
    const { rows } = await db.query<{ horizon: string; covered: boolean }>(
      `SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::numeric - 1)::text AS horizon,
              pg_snapshot_xmin(pg_current_snapshot()) > (SELECT max(tx_id) FROM events WHERE workspace_id = $1) AS covered`,
      [workspaceId],
    );
    if (rows[0]!.covered || tries === 600) {
      oldHead = `evt_${rows[0]!.horizon}_9223372036854775807`;
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  const purgedId = (await ownerCommands.createWorkspace(owner, { name: 'legacy purged', timezone: 'UTC' })).id;
  const purgedLegacy = (await db.query<{ id: string }>(OLD_FEED, [purgedId])).rows.map((r) => r.id);
  // What purgeOlderThan recorded on the schema before, for a purge up to the second event.
  const [tx, seq] = /^evt_(\d+)_(\d+)$/.exec(purgedLegacy[1]!)!.slice(1);
  await db.query('INSERT INTO events_purged (workspace_id, tx_id, seq) VALUES ($1, $2::xid8, $3)', [purgedId, tx, seq]);

  await migrate(db, GENERATED_DATABASE_CODE);
  server = await startTestServer({ db });
  purgedWorkspace = {
    id: purgedId,
    legacy: purgedLegacy,
    key: (
      await ownerCommands.createKey(server.owner, {
        workspaceId: purgedId,
        name: 'legacy follower',
        scopes: ['events:read', 'contacts:read'],
        rateLimitPerMinute: 1_000_000,
      })
    ).key,
  };
  key = (
    await ownerCommands.createKey(server.owner, {
      workspaceId,
      name: 'legacy follower',
      scopes: ['events:read', 'contacts:read', 'workspace:read'],
      rateLimitPerMinute: 1_000_000,
    })
  ).key;
});

after(async () => {
  await server?.close();
  await db?.close();
  await dropDatabase();
});

async function follow(after: string): Promise<{ id: string; type: string; resource_id: string }[]> {
  const r = await server.request('GET', `/v2/events?limit=100&after=${after}`, { key });
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

const shape = (events: { type: string; resource_id: string }[]) => events.map((e) => `${e.type} ${e.resource_id}`);

test('after= an old id continues right after that event, in the old order', async () => {
  assert.ok(legacy.length >= 16, `${legacy.length} events before the migration`);
  const migrated = await follow('evt_0_0');
  assert.deepEqual(shape(migrated), shape(legacy));
  for (const e of migrated) assert.match(e.id, /^evt_[A-Za-z0-9_-]{22}$/);
  for (let i = 0; i < legacy.length; i++) {
    assert.deepEqual(shape(await follow(legacy[i]!.id)), shape(legacy.slice(i + 1)), `after old id #${i}`);
  }
});

test('an old head position, then changes made after the migration: exactly those', async () => {
  assert.deepEqual(await follow(oldHead), []);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO contacts (workspace_id, name, email) VALUES ($1, 'New', 'new@example.com') RETURNING id`,
    [workspaceId],
  );
  assert.deepEqual(shape(await follow(oldHead)), [`contact.created ${rows[0]!.id}`]);
  assert.deepEqual(shape(await follow(legacy.at(-1)!.id)), [`contact.created ${rows[0]!.id}`]);
});

test('an old position before what retention had deleted before the migration is 410, for every kind of reader', async () => {
  const { key, legacy: ids } = purgedWorkspace;
  assert.ok(ids.length >= 4);
  for (const expired of ['evt_0_0', ids[0]!]) {
    for (const query of ['', '&resource_type=contact', '&type=pipeline_stage.created']) {
      const r = await server.request('GET', `/v2/events?after=${expired}${query}`, { key });
      assert.equal(r.status, 410, `${expired}${query}: ${r.text}`);
      assert.equal(r.json.error.code, 'events_expired');
    }
  }
  const r = await server.request('GET', `/v2/events?limit=100&after=${ids[1]}`, { key });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.length, ids.length - 2);
});

test('a workspace created after the migration never issued an old id: one is refused as a malformed after=', async () => {
  const fresh = (await ownerCommands.createWorkspace(server.owner, { name: 'after the migration', timezone: 'UTC' }))
    .id;
  const { key: freshKey } = await ownerCommands.createKey(server.owner, {
    workspaceId: fresh,
    name: 'new follower',
    scopes: ['events:read', 'contacts:read'],
    rateLimitPerMinute: 1_000_000,
  });
  const all = await server.request('GET', '/v2/events?limit=100', { key: freshKey });
  assert.equal(all.status, 200, all.text);
  assert.ok(all.json.data.length > 0);
  for (const after of ['evt_0_0', legacy[0]!.id, oldHead]) {
    const r = await server.request('GET', `/v2/events?after=${after}`, { key: freshKey });
    assert.equal(r.status, 400, `${after}: ${r.text}`);
    assert.equal(r.json.error.code, 'invalid_query_parameter', after);
    assert.equal(r.json.error.details.parameter, 'after', after);
  }
});
