// The settings for a pooler in transaction mode (docs/scaling.md, "PgBouncer in transaction mode"):
// behind one, a statement prepared on one server connection is missing on the next, startup options
// are refused, and notifications never arrive. With DATABASE_TRANSACTION_POOLER the service names no
// statement and sends no startup option, and its LISTEN connections go to DATABASE_LISTEN_URL. CI
// also runs the conformance suite and test/sync-under-load.test.ts through a real PgBouncer (.ci/run);
// this file checks the settings on PostgreSQL itself, which any machine with one can run.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { processDatabase } from './servers.js';

let database: { url: string; drop(): Promise<void> } | undefined;
let skip: string | undefined;

before(async () => {
  const found = await processDatabase('wsapi_pooler');
  if (found.skip !== undefined) skip = found.skip;
  else database = found;
});
after(async () => database?.drop());

/** The statements prepared on the connection that runs this one: what the pool left on it. */
const preparedHere = async (db: Database) =>
  (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements')).rows[0]!.n;

describe('behind a transaction pooler', () => {
  test('no statement is named and no startup option is sent; without the setting both are', async (t) => {
    if (skip) return t.skip(skip);
    for (const transactionPooler of [true, false]) {
      // One connection: every statement runs on it, and it shows what the earlier ones left.
      const db = createPostgresDatabase(database!.url, 1, { transactionPooler });
      try {
        for (let i = 0; i < 3; i++) await db.query('SELECT $1::int AS n', [i], 'pooler_check');
        await db.transaction(async (tx) => {
          await tx.commitWith({ sql: 'SELECT 1', name: 'pooler_check_last' }, [
            { sql: 'SELECT 2', name: 'pooler_check_ahead' },
          ]);
        });
        // 'client': set by the connection's startup options.
        const jit = (await db.query<{ source: string }>("SELECT source FROM pg_settings WHERE name = 'jit'")).rows[0]!
          .source;
        if (transactionPooler) {
          assert.equal(await preparedHere(db), 0, 'no prepared statement behind a transaction pooler');
          assert.notEqual(jit, 'client', 'no startup option');
        } else {
          assert.equal(await preparedHere(db), 3, 'the named statements are prepared otherwise');
          assert.equal(jit, 'client', 'the startup option turns jit off otherwise');
        }
      } finally {
        await db.close();
      }
    }
  });

  test('LISTEN goes to DATABASE_LISTEN_URL, statements to DATABASE_URL', async (t) => {
    if (skip) return t.skip(skip);
    // A listen URL where nothing listens: the statements still run, the subscription fails.
    const nowhere = new URL(database!.url);
    nowhere.port = '9';
    const db = createPostgresDatabase(database!.url, 2, { transactionPooler: true, listenUrl: nowhere.href });
    try {
      assert.equal((await db.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n, 1);
      await assert.rejects(
        db.listen('pooler_check', () => undefined),
        /ECONNREFUSED/,
      );
    } finally {
      await db.close();
    }
    const direct = createPostgresDatabase(database!.url, 2, { transactionPooler: true, listenUrl: database!.url });
    try {
      const heard: string[] = [];
      const stop = await direct.listen('pooler_check', (payload) => heard.push(payload));
      await direct.query("SELECT pg_notify('pooler_check', 'hello')");
      for (let i = 0; i < 50 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      await stop();
      assert.deepEqual(heard, ['hello']);
    } finally {
      await direct.close();
    }
  });
});

test('DATABASE_TRANSACTION_POOLER without DATABASE_LISTEN_URL (or DATABASE_URL) stops the service at start', () => {
  const pooler = 'postgres://app@pooler.internal:6432/app';
  assert.throws(
    () => loadConfig({ DATABASE_URL: pooler, DATABASE_TRANSACTION_POOLER: 'true' }),
    (err: unknown) => err instanceof ConfigError && /DATABASE_LISTEN_URL/.test(err.message),
  );
  assert.throws(
    () => loadConfig({ DATABASE_TRANSACTION_POOLER: 'true', DATABASE_LISTEN_URL: pooler }),
    (err: unknown) => err instanceof ConfigError && /DATABASE_URL/.test(err.message),
  );
  const config = loadConfig({
    DATABASE_URL: pooler,
    DATABASE_LISTEN_URL: 'postgres://app@db.internal:5432/app',
    DATABASE_TRANSACTION_POOLER: 'true',
  });
  assert.equal(config.databaseTransactionPooler, true);
  assert.equal(config.databaseListenUrl, 'postgres://app@db.internal:5432/app');
  assert.equal(loadConfig({}).databaseTransactionPooler, false);
});
