// A transaction's last statement sent with its COMMIT (Database.transaction, commitWith), on the
// store of this run: what it commits, what a failure of it leaves, and the literals it is written
// with on PostgreSQL (sqlCall).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { sqlCall, type Database } from '../src/infra/database.js';
import { openTestDatabase } from './harness.js';

let db: Database;
before(async () => {
  db = await openTestDatabase();
  await db.exec(`CREATE TABLE IF NOT EXISTS test_commit_with (id text PRIMARY KEY, note text)`);
});
after(() => db.close());

const rowsWithId = async (id: string) =>
  (await db.query<{ note: string }>('SELECT note FROM test_commit_with WHERE id = $1', [id])).rows;

test('the last statement runs, after the work, and both commit together', async () => {
  const id = randomUUID();
  const key = `commit-with-${id}`;
  const result = await db.transaction(async (tx) => {
    await tx.query('INSERT INTO test_commit_with (id, note) VALUES ($1, $2)', [id, 'the work']);
    tx.commitWith('set_config', ['app.commit_with_test', key, true]);
    return 'done';
  });
  assert.equal(result, 'done');
  assert.deepEqual(await rowsWithId(id), [{ note: 'the work' }]);
});

test('a failing last statement commits nothing of the work, and its error rejects the transaction', async () => {
  const id = randomUUID();
  await assert.rejects(
    db.transaction(async (tx) => {
      await tx.query('INSERT INTO test_commit_with (id, note) VALUES ($1, $2)', [id, 'must not stay']);
      // 'not-a-uuid' cannot be a uuid: the call fails as it starts
      tx.commitWith('idempotency_record', ['not-a-uuid', 'k', Buffer.alloc(32), 201, '{}', null, null, 48]);
    }),
    (err: { code?: string }) => err.code === '22P02',
  );
  assert.deepEqual(await rowsWithId(id), []);
  // the connection went back to the pool usable: a next transaction commits
  await db.transaction(async (tx) => {
    await tx.query('INSERT INTO test_commit_with (id, note) VALUES ($1, $2)', [id, 'next']);
  });
  assert.deepEqual(await rowsWithId(id), [{ note: 'next' }]);
});

test('sqlCall writes strings, bytes, numbers, booleans, nulls and text arrays as literals that read back as themselves', async () => {
  const strings = [
    `plain`,
    `it's`,
    `''`,
    `back\\slash`,
    `\\x41\\'`,
    `$$ dollar $$`,
    `'); DROP TABLE test_commit_with; --`,
    `E'\\'' ; COMMIT ;`,
    `ünïcødé 😀`,
    ``,
    `line\nbreak\ttab`,
  ];
  for (const s of strings) {
    const { rows } = await db.query<{ concat: string }>(sqlCall('concat', [s]));
    assert.equal(rows[0]!.concat, s);
    // quoted exactly as pg's own escapeLiteral quotes
    assert.equal(sqlCall('concat', [s]), `SELECT concat(${pg.escapeLiteral(s)})`);
  }
  const bytes = Buffer.from([0, 1, 39, 92, 255, 36, 36]);
  const { rows: hex } = await db.query<{ encode: string }>(sqlCall('encode', [bytes, 'hex']));
  assert.equal(hex[0]!.encode, bytes.toString('hex'));
  const { rows: num } = await db.query<{ int4larger: number }>(sqlCall('int4larger', [201, -5]));
  assert.equal(num[0]!.int4larger, 201);
  const { rows: bool } = await db.query<{ booleq: boolean }>(sqlCall('booleq', [true, false]));
  assert.equal(bool[0]!.booleq, false);
  const { rows: nul } = await db.query<{ coalesce: string }>(sqlCall('coalesce', [null, 'fallback']));
  assert.equal(nul[0]!.coalesce, 'fallback');
  // json_object(text[]) takes an array of keys and values: the literal must read back element for element
  const pairs = ['a', 'with "quotes"', 'back\\slash', "it's", '{braces,commas}', '', 'NULL', 'null?'];
  const { rows: arr } = await db.query<{ json_object: Record<string, string> }>(sqlCall('json_object', [pairs]));
  assert.deepEqual(arr[0]!.json_object, {
    a: 'with "quotes"',
    'back\\slash': "it's",
    '{braces,commas}': '',
    NULL: 'null?',
  });
  assert.throws(() => sqlCall('drop table x', []), /not a function name/);
  assert.throws(() => sqlCall('concat', [{}]), /no SQL literal/);
  assert.throws(() => sqlCall('concat', [Number.NaN]), /not a finite number/);
});
