// The store's transactions, on the store this suite runs on: statements sent together
// (queryAll, a BEGIN with its first statement, a last statement with its COMMIT) keep what one
// at a time gives — the first failure is the error, and a failed transaction leaves nothing.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import {
  createEmbeddedDatabase,
  createPostgresDatabase,
  retryingConflicts,
  type Database,
  type Transaction,
} from '../src/infra/database.js';
import { STORE } from './harness.js';

const table = `tx_probe_${randomUUID().slice(0, 8)}`;
let db: Database;

before(async () => {
  // One connection: a transaction that ended badly would hand the next one a broken session.
  db = STORE === 'postgres' ? createPostgresDatabase(process.env.DATABASE_URL!, 1) : await createEmbeddedDatabase(null);
  await db.exec(`CREATE TABLE ${table} (id int PRIMARY KEY, note text NOT NULL)`);
});
after(async () => {
  await db.exec(`DROP TABLE IF EXISTS ${table}`);
  await db.close();
});

const stored = async () =>
  (await db.query<{ id: number }>(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r) => r.id);
const clear = () => db.exec(`DELETE FROM ${table}`);
const insert = (id: number, note: string | null = 'n') => ({
  sql: `INSERT INTO ${table} (id, note) VALUES ($1, $2) RETURNING id`,
  params: [id, note],
});

describe(`transactions on the ${STORE} store`, () => {
  test('transactionFrom gives the opening statement its result, inside the transaction; commitWith commits with the last', async () => {
    await clear();
    const answer = await db.transactionFrom<{ id: number }, number>(insert(1), async (tx, opened) => {
      assert.deepEqual(opened.rows, [{ id: 1 }]);
      assert.deepEqual((await tx.query(`SELECT id FROM ${table}`)).rows, [{ id: 1 }]);
      const [a, b] = await tx.queryAll([insert(2), insert(3)]);
      assert.deepEqual([a!.rows, b!.rows], [[{ id: 2 }], [{ id: 3 }]]);
      const last = await tx.commitWith<{ id: number }>(insert(4));
      return last.rows[0]!.id;
    });
    assert.equal(answer, 4);
    assert.deepEqual(await stored(), [1, 2, 3, 4]);
  });

  test('a last statement that fails in commitWith is the error, and nothing of the transaction stays', async () => {
    await clear();
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query(insert(1).sql, insert(1).params);
        await tx.commitWith(insert(1)); // the same id again: a unique violation
      }),
      (err: { code?: string }) => err.code === '23505',
    );
    assert.deepEqual(await stored(), []);
    // The session is clean: the next transaction commits.
    await db.transaction((tx) => tx.commitWith(insert(5)));
    assert.deepEqual(await stored(), [5]);
  });

  test('queryAll: the first failure is the error, not the aborted statements after it; nothing stays', async () => {
    await clear();
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.queryAll([insert(1), insert(2, null), insert(3)]);
      }),
      (err: { code?: string }) => err.code === '23502',
    );
    assert.deepEqual(await stored(), []);
  });

  test('an opening statement that fails is the error, and the transaction is rolled back', async () => {
    await clear();
    await db.query(insert(7).sql, insert(7).params);
    let ran = false;
    await assert.rejects(
      db.transactionFrom(insert(7), async () => {
        ran = true;
      }),
      (err: { code?: string }) => err.code === '23505',
    );
    assert.equal(ran, false);
    await db.transaction(async (tx) => void (await tx.query(insert(8).sql, insert(8).params)));
    assert.deepEqual(await stored(), [7, 8]);
  });

  // PostgreSQL's driver refuses some statements itself, without sending them; the COMMIT sent with
  // one must not commit the transaction without it. (The embedded store sends nothing ahead.)
  if (STORE === 'postgres') {
    test('a last statement the driver refuses to send commits nothing: a parameter it cannot encode, a name taken by another text', async () => {
      const unencodable = {
        toPostgres: () => {
          throw new Error('cannot encode this value');
        },
      };
      const refusals: [string, (tx: Transaction) => Promise<unknown>][] = [
        ['unencodable parameter', (tx) => tx.commitWith(insert(2, unencodable as unknown as string))],
        [
          'statement name taken',
          async (tx) => {
            await tx.query(`SELECT 1 AS one`, [], 'probe_name');
            await tx.commitWith({ ...insert(2), name: 'probe_name' });
          },
        ],
      ];
      for (const [what, last] of refusals) {
        await clear();
        await assert.rejects(
          db.transaction(async (tx) => {
            await tx.query(insert(1).sql, insert(1).params);
            await last(tx);
          }),
          (err: Error) => !('code' in err),
          what,
        );
        assert.deepEqual(await stored(), [], `${what}: nothing committed`);
      }
      await db.transaction((tx) => tx.commitWith(insert(9)));
      assert.deepEqual(await stored(), [9], 'the session is clean afterwards');
    });
  }

  // A parameter the driver cannot encode is refused as the statement is written, and the driver
  // still waits for the server's answer to what it wrote, then reports the statement again as a
  // success; for a named statement it also drops the server's copy while keeping it listed as
  // prepared on that connection.
  if (STORE === 'postgres') {
    test('a statement the driver refuses, alone or in a transaction, named or not: the error, and the connection serves the same statement next', async () => {
      const unencodable = {
        toPostgres: () => {
          throw new Error('cannot encode this value');
        },
      };
      const crashes: unknown[] = [];
      const onCrash = (err: unknown) => crashes.push(err);
      process.on('uncaughtException', onCrash);
      try {
        for (const name of [undefined, `probe_refused_${randomUUID().slice(0, 8)}`]) {
          const sql = `SELECT $1::text AS v`;
          const what = name ? 'named' : 'unnamed';
          // Prepared on the connection first, so that the driver lists it as such.
          assert.deepEqual((await db.query(sql, ['a'], name)).rows, [{ v: 'a' }]);
          await assert.rejects(db.query(sql, [unencodable], name), /cannot encode/, `${what}, alone`);
          await assert.rejects(
            db.transaction((tx) => tx.query(sql, [unencodable], name)),
            /cannot encode/,
            `${what}, in a transaction`,
          );
          await new Promise((resolve) => setTimeout(resolve, 50));
          assert.deepEqual((await db.query(sql, ['b'], name)).rows, [{ v: 'b' }], `${what}: served next`);
          assert.deepEqual(
            await db.transaction(async (tx) => (await tx.query(sql, ['c'], name)).rows),
            [{ v: 'c' }],
            `${what}: served next in a transaction`,
          );
        }
        assert.deepEqual(crashes, []);
      } finally {
        process.off('uncaughtException', onCrash);
      }
    });
  }

  // A COMMIT can fail before it runs: a cancel (pg_cancel_backend, a statement_timeout) that
  // reaches the session as its last statement ends is taken at the start of the COMMIT queued
  // behind it, and the transaction stays open, aborted. Given back like that, the connection would
  // refuse the next transaction's BEGIN (25P02). The driver is made to send a failing statement in
  // place of one COMMIT, which leaves the session in that very state.
  if (STORE === 'postgres') {
    test('a COMMIT that fails before it runs: the error is thrown, nothing stays, and the session is clean for the next transaction', async () => {
      const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
      const sendQuery = Object.getOwnPropertyDescriptor(proto, 'query')!;
      let failNextCommit = false;
      proto.query = function (this: pg.Client, ...args: unknown[]) {
        if (failNextCommit && args[0] === 'COMMIT') {
          failNextCommit = false;
          args[0] = 'SELECT 1/0';
        }
        return (sendQuery.value as (...a: unknown[]) => unknown).apply(this, args);
      };
      try {
        const commits: [string, (tx: Transaction) => Promise<unknown>][] = [
          ['with the last statement (commitWith)', (tx) => tx.commitWith(insert(2))],
          ['after the work', (tx) => tx.query(insert(2).sql, insert(2).params)],
        ];
        for (const [what, work] of commits) {
          await clear();
          failNextCommit = true;
          await assert.rejects(
            db.transaction(async (tx) => {
              await tx.query(insert(1).sql, insert(1).params);
              await work(tx);
            }),
            (err: { code?: string }) => err.code === '22012',
            what,
          );
          assert.equal(failNextCommit, false, `${what}: the COMMIT was sent`);
          assert.deepEqual(await stored(), [], `${what}: nothing committed`);
          await db.transaction((tx) => tx.commitWith(insert(9)));
          assert.deepEqual(await stored(), [9], `${what}: the next transaction commits on the same connection`);
        }
      } finally {
        Object.defineProperty(proto, 'query', sendQuery);
      }
    });
  }

  test('work that swallows a failure of its own statement is not told it committed: nothing stays', async () => {
    await clear();
    await db.query(insert(1).sql, insert(1).params);
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query(insert(2).sql, insert(2).params);
        await tx.query(insert(1).sql, insert(1).params).catch(() => null); // a unique violation, swallowed
      }),
    );
    assert.deepEqual(await stored(), [1]);
    await db.transaction((tx) => tx.commitWith(insert(3)));
    assert.deepEqual(await stored(), [1, 3], 'the session is clean afterwards');
  });

  test('work that throws after statements sent together rolls them all back', async () => {
    await clear();
    await assert.rejects(
      db.transactionFrom(insert(1), async (tx) => {
        await tx.queryAll([insert(2), insert(3)]);
        throw new Error('the work failed');
      }),
      /the work failed/,
    );
    assert.deepEqual(await stored(), []);
  });
});

// A transaction PostgreSQL aborted to break a deadlock runs again, but not at once: the one it
// crossed must first take the locks the aborted one held (test/webhooks.test.ts crosses two for real).
describe(`rows of the ${STORE} store`, () => {
  test('a named statement answers plain objects of its columns, whatever their names, "__proto__" too', async () => {
    for (let run = 0; run < 2; run++) {
      const { rows } = await db.query<Record<string, unknown>>(
        `SELECT 1 AS a, 'x' AS "__proto__", 2 AS "constructor", NULL AS "toString", 3 AS "a b"`,
        [],
        'row_names_probe',
      );
      assert.equal(rows.length, 1);
      const row = rows[0]!;
      assert.equal(Object.getPrototypeOf(row), Object.prototype, `run ${run}: the prototype untouched`);
      assert.deepEqual(Object.keys(row), ['a', '__proto__', 'constructor', 'toString', 'a b']);
      assert.deepEqual(Object.entries(row), [
        ['a', 1],
        ['__proto__', 'x'],
        ['constructor', 2],
        ['toString', null],
        ['a b', 3],
      ]);
    }
  });
});

describe('retryingConflicts', () => {
  const conflict = (code: string) => Object.assign(new Error('conflict'), { code });

  test('a conflict that lasts 100 ms is outlasted: the attempts are spread out, not run back to back', async () => {
    const started = Date.now();
    const at: number[] = [];
    const answer = await retryingConflicts(async () => {
      at.push(Date.now() - started);
      if (Date.now() - started < 100) throw conflict('40P01');
      return 'done';
    });
    assert.equal(answer, 'done');
    assert.ok(at.length >= 2 && at.length <= 5, `attempts at ${at.join(', ')} ms`);
    for (let n = 1; n < at.length; n++) {
      // The shortest wait is 10 ms; timers may fire a millisecond or two early by the clock read here.
      assert.ok(at[n]! - at[n - 1]! >= 5, `attempt ${n + 1} waited: ${at.join(', ')} ms`);
    }
  });

  test('five attempts at most, then the conflict is the error; any other error at once', async () => {
    for (const code of ['40P01', '40001']) {
      let attempts = 0;
      await assert.rejects(
        retryingConflicts(() => {
          attempts++;
          throw conflict(code);
        }),
        { code },
      );
      assert.equal(attempts, 5, code);
    }
    let attempts = 0;
    await assert.rejects(
      retryingConflicts(() => {
        attempts++;
        throw conflict('23505');
      }),
      { code: '23505' },
    );
    assert.equal(attempts, 1);
  });
});
