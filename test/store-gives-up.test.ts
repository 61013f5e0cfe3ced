// When PostgreSQL gives up on a statement (lock_timeout here; statement_timeout and cancels in
// test/faults/database-outage.test.ts) the transaction is rolled back: the answer is a 503 with
// Retry-After, and the write sent again with its Idempotency-Key takes effect once. The embedded
// store runs one statement at a time and has no lock to wait for, so these tests run on a
// PostgreSQL database of their own whatever store the suite runs on (servers.ts, findPostgres).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { contactBody, idem } from './harness.js';
import { describeOrSkip, findPostgres, newDatabase } from './servers.js';
import { useTestServer } from './test-server.js';

const postgres = await findPostgres();

describeOrSkip(
  postgres.skip,
  'the database gives up on a statement (PostgreSQL, whatever the store of the run)',
  () => {
    let database: { url: string; drop(): Promise<void> } | undefined;
    let holder: Database;
    const server = useTestServer({
      openDb: async () => {
        database = await newDatabase(postgres.url!, 'wsapi_gives_up');
        // The service's sessions wait at most 200 ms for a lock.
        const url = new URL(database.url);
        url.searchParams.set('options', '-c lock_timeout=200');
        const db = createPostgresDatabase(url.toString(), 4);
        await migrate(db, GENERATED_DATABASE_CODE);
        return db;
      },
    });
    before(() => {
      holder = createPostgresDatabase(database!.url, 1);
    });
    after(async () => {
      await holder?.close();
      await database?.drop();
    });

    test('a write that waits past lock_timeout is a 503 with Retry-After; sent again with its key, it takes effect once', async () => {
      const ws = await server.workspace();
      const contact = (await server.request('POST', '/v1/contacts', { key: ws.key, body: contactBody(), idem: idem() }))
        .json.data;
      const key = idem();
      const patch = () =>
        server.request('PATCH', `/v1/contacts/${contact.id}`, { key: ws.key, body: { origin: 'after' }, idem: key });
      // Another session holds the contact's row while the PATCH runs.
      const refused = await holder.transaction(async (tx) => {
        await tx.query('SELECT 1 FROM contacts WHERE id = $1 FOR UPDATE', [contact.id]);
        return patch();
      });
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.json.error.code, 'service_unavailable');
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      const stored = await server.db.query<{ origin: string | null }>('SELECT origin FROM contacts WHERE id = $1', [
        contact.id,
      ]);
      assert.equal(stored.rows[0]!.origin, contact.origin, 'nothing written');

      const again = await patch();
      assert.equal(again.status, 200);
      assert.equal(again.json.data.origin, 'after');
      const replay = await patch();
      assert.equal(replay.status, 200);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.text, again.text);
    });
  },
);
