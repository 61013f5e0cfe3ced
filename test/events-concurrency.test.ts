// The events feed stays gap-free while many transactions commit (and roll back) concurrently:
// a reader following the cursor, then after=, sees every committed event once, in order.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, test } from 'node:test';
import pg from 'pg';
import { eventIdAt, idem, sleep, STORE } from './harness.js';
import {
  assertStrictlyIncreasing,
  compareIds,
  createContact,
  eventCount,
  eventsPath,
  feedServer,
  fresh,
  get,
  ids,
  learn,
  mark,
  positions,
  since,
  tagTransaction,
  useFeedServer,
  type Run,
} from './events-support.js';

useFeedServer();

// ------------------------------------------------------------------------------------------ concurrency

interface CommittedTx {
  ids: string[];
  /** when COMMIT was sent, and when it returned (performance.now()) */
  commitSent: number;
  commitDone: number;
}

describe('concurrent writers', () => {
  test('a reader following the cursor, then after=, sees every committed event once, in order, none of the rolled back', async (t) => {
    const w = await fresh();
    const readerLimit = 5;
    let writersDone = false;
    let readerError: unknown;

    // The reader: pages with the cursor while has_more, then polls with after=<last id seen>.
    const seen: string[] = [];
    let pages = 0;
    let resumes = 0;
    let fruitfulResumes = 0;
    let restarts = 0;
    const readerStopped = (async () => {
      let cursor: string | undefined;
      let drainDeadline = Infinity;
      for (;;) {
        const last = seen.at(-1);
        const r = await get(
          w,
          eventsPath({
            limit: String(readerLimit),
            ...(cursor ? { cursor } : last ? { after: last } : {}),
          }),
        );
        assert.equal(r.status, 200, r.text);
        pages++;
        learn(w, r.json.data);
        for (const e of r.json.data) seen.push(e.id);
        if (r.json.page.has_more) {
          // now and then the reader starts over from the last event it processed (as after a
          // restart) instead of following the cursor
          if (pages % 5 === 0) {
            cursor = undefined;
            restarts++;
          } else cursor = r.json.page.next_cursor;
          continue;
        }
        cursor = undefined;
        if (last !== undefined) resumes++;
        if (last !== undefined && r.json.data.length > 0) fruitfulResumes++;
        if (writersDone) {
          if (drainDeadline === Infinity) drainDeadline = Date.now() + 25_000;
          const inTable = await eventCount(w);
          if (seen.length >= inTable || Date.now() > drainDeadline) return;
        }
        await sleep(5);
      }
    })().catch((err: unknown) => {
      readerError = err;
    });

    const committed: CommittedTx[] = [];
    const rolledBack: string[] = [];
    let apiWrites = 0;

    /** API writers: POST new contacts, PATCH their own ones (some PATCHes change nothing). */
    const apiWriter = async (n: number, count: number | null, stopAt: number) => {
      const mine: string[] = [];
      for (let i = 0; count === null ? Date.now() < stopAt : i < count; i++) {
        if (mine.length === 0 || i % 3 === 0) {
          const r = await createContact(w, { name: `api ${n}.${i}` });
          assert.equal(r.status, 201, r.text);
          mine.push(r.json.data.id);
        } else {
          const r = await feedServer().request('PATCH', `/v2/contacts/${mine[i % mine.length]}`, {
            key: w.key,
            body: { name: i % 4 === 0 ? `api ${n}.0` : `api ${n}.${i}` },
            idem: idem(),
          });
          assert.equal(r.status, 200, r.text);
        }
        apiWrites++;
        await sleep(Math.random() * (count === null ? 15 : 40));
      }
    };

    /** Ids of the events the transaction tagged `tag` wrote for the workspace so far, in order. */
    const txEvents = async (run: Run, tag: string): Promise<string[]> => {
      const { rows } = (await run(
        `SELECT stamp::text, seq::text FROM events WHERE workspace_id = $1 AND request_id = $2 ORDER BY events.stamp, events.seq`,
        [w.id, tag],
      )) as { rows: { stamp: string; seq: string }[] };
      return rows.map((r) => {
        const id = eventIdAt(feedServer(), w.id, BigInt(r.stamp), BigInt(r.seq));
        positions.set(id, [BigInt(r.stamp), BigInt(r.seq)]);
        return id;
      });
    };
    const record = (txIds: string[], commitSent: number, commitDone: number) => {
      committed.push({ ids: txIds, commitSent, commitDone });
    };

    if (STORE === 'postgres') {
      const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 12 });
      pool.on('error', () => undefined);
      try {
        // A deterministic instance first: T1 deletes a contact and stays open; T2 deletes another.
        // T1 holds the workspace's clock (db/code/03_sync_clock.sql), so T2 cannot even write its event
        // until T1 has committed: the feed can never show T2's event with T1's still to come.
        const doomed: string[] = [];
        for (const name of ['T1', 'T2']) {
          const { rows } = await pool.query<{ id: string }>(
            `INSERT INTO contacts (workspace_id, name, email) VALUES ($1, $2, $3) RETURNING id`,
            [w.id, name, `${name.toLowerCase()}@example.com`],
          );
          doomed.push(rows[0]!.id);
        }
        const start = await mark(w);
        const c1 = await pool.connect();
        const c2 = await pool.connect();
        try {
          await c1.query('BEGIN');
          const tag1 = await tagTransaction((q, p) => c1.query(q, p));
          await c1.query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [w.id, doomed[0]]);
          const t1 = await txEvents((q, p) => c1.query(q, p), tag1);
          await c2.query('BEGIN');
          const tag2 = await tagTransaction((q, p) => c2.query(q, p));
          let t2Deleted = false;
          const t2Delete = c2
            .query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [w.id, doomed[1]])
            .then(() => (t2Deleted = true));
          for (let i = 0; i < 5; i++) {
            await sleep(40);
            const r = await get(w, eventsPath({ after: start, limit: '100' }));
            assert.equal(r.status, 200);
            assert.deepEqual(r.json.data, [], 'an event is shown before its transaction committed');
          }
          assert.equal(t2Deleted, false, "T2 wrote its event while T1 held the workspace's clock");
          const t1Sent = performance.now();
          await c1.query('COMMIT');
          record(t1, t1Sent, performance.now());
          await t2Delete;
          const t2 = await txEvents((q, p) => c2.query(q, p), tag2);
          assert.ok(compareIds(t1[0]!, t2[0]!) < 0);
          // T1 committed: its event is shown at once, with T2 still open
          assert.deepEqual(ids(await since(w, start)), t1);
          const t2Sent = performance.now();
          await c2.query('COMMIT');
          record(t2, t2Sent, performance.now());
          assert.deepEqual(ids(await since(w, start)), [...t1, ...t2]);
        } finally {
          await c1.query('ROLLBACK').catch(() => undefined);
          await c2.query('ROLLBACK').catch(() => undefined);
          c1.release();
          c2.release();
        }

        // A transaction of another workspace left open does not hold this feed back: a feed that
        // waited for the oldest transaction running anywhere would be a channel between tenants.
        const other = await fresh();
        const c3 = await pool.connect();
        try {
          await c3.query('BEGIN');
          await c3.query(`INSERT INTO contacts (workspace_id, name, email) VALUES ($1, 'Open', 'open@example.com')`, [
            other.id,
          ]);
          const from = await mark(w);
          const made = await createContact(w, { name: 'while another tenant writes' });
          assert.equal(made.status, 201);
          assert.deepEqual(
            (await since(w, from)).map((e) => e.resource_id),
            [made.json.data.id],
          );
        } finally {
          await c3.query('ROLLBACK').catch(() => undefined);
          c3.release();
        }

        // Then the storm: WRITERS connections looping over short transactions that sleep inside
        // after their writes, so they wait on each other's clock; some roll back, some delete. Two
        // API writers run alongside.
        const WRITERS = 9;
        const stopAt = Date.now() + 5_000;
        const sqlWriter = async (n: number) => {
          const client = await pool.connect();
          const mine: string[] = [];
          try {
            for (let i = 0; Date.now() < stopAt; i++) {
              await client.query('BEGIN');
              try {
                const tag = await tagTransaction((q, p) => client.query(q, p));
                const made: string[] = [];
                // Some transactions only delete (erasing the contact's earlier events).
                let gone: string | undefined;
                if (mine.length > 2 && i % 4 === 1) {
                  gone = mine[Math.floor(Math.random() * mine.length)]!;
                  await client.query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [w.id, gone]);
                }
                const inserts = gone ? 0 : mine.length === 0 || Math.random() < 0.5 ? 1 + (i % 2) : 0;
                for (let k = 0; k < inserts; k++) {
                  const { rows } = await client.query<{ id: string }>(
                    `INSERT INTO contacts (workspace_id, name, email, notes)
                     VALUES ($1, $2, $3, 'internal') RETURNING id`,
                    [w.id, `w${n} ${i}.${k}`, `w${n}.${i}.${k}@example.com`],
                  );
                  made.push(rows[0]!.id);
                }
                if (!gone && (inserts === 0 || i % 3 === 0)) {
                  const target = mine[Math.floor(Math.random() * mine.length)] ?? made[0]!;
                  await client.query('UPDATE contacts SET name = $3 WHERE workspace_id = $1 AND id = $2', [
                    w.id,
                    target,
                    `w${n} ${i} upd`,
                  ]);
                }
                await client.query('SELECT pg_sleep(random() * 0.05)');
                const rows = await txEvents((q, p) => client.query(q, p), tag);
                assert.ok(rows.length > 0);
                if (i % 6 === 5) {
                  await client.query('ROLLBACK');
                  rolledBack.push(...rows);
                  continue;
                }
                const sent = performance.now();
                await client.query('COMMIT');
                record(rows, sent, performance.now());
                mine.push(...made);
                if (gone) mine.splice(mine.indexOf(gone), 1);
              } catch (err) {
                await client.query('ROLLBACK').catch(() => undefined);
                throw err;
              }
            }
          } finally {
            client.release();
          }
        };
        try {
          await Promise.all([
            ...Array.from({ length: WRITERS }, (_, n) => sqlWriter(n)),
            apiWriter(100, null, stopAt),
            apiWriter(101, null, stopAt),
          ]);
        } finally {
          writersDone = true;
        }
      } finally {
        writersDone = true;
        await readerStopped;
        await pool.end();
      }
    } else {
      // Embedded: PGlite runs one transaction at a time, so concurrency is many API writers and
      // owner/SQL transactions in flight together (some rolling back) while the reader follows.
      const sqlTransactions = async (n: number) => {
        for (let i = 0; i < 12; i++) {
          const work = feedServer().db.transaction(async (tx) => {
            const tag = await tagTransaction((q, p) => tx.query(q, p));
            await tx.query(`INSERT INTO contacts (workspace_id, name, email) VALUES ($1, $2, $3)`, [
              w.id,
              `tx ${n}.${i}`,
              `tx.${n}.${i}@example.com`,
            ]);
            await tx.query(`UPDATE workspaces SET name = $2 WHERE id = $1`, [w.id, `ws ${n}.${i}`]);
            const rows = await txEvents((q, p) => tx.query(q, p), tag);
            assert.equal(rows.length, 2);
            if (i % 4 === 3) {
              rolledBack.push(...rows);
              throw new Error('roll back');
            }
            return rows;
          });
          if (i % 4 === 3) await assert.rejects(work, /roll back/);
          else {
            const sent = performance.now();
            record(await work, sent, performance.now());
          }
          await sleep(Math.random() * 3);
        }
      };
      try {
        await Promise.all([
          ...Array.from({ length: 8 }, (_, n) => apiWriter(n, 25, 0)),
          sqlTransactions(1),
          sqlTransactions(2),
        ]);
      } finally {
        writersDone = true;
        await readerStopped;
      }
    }

    assert.equal(readerError, undefined, String(readerError));
    const { rows } = await feedServer().db.query<{ stamp: string; seq: string }>(
      'SELECT stamp::text, seq::text FROM events WHERE workspace_id = $1 ORDER BY events.stamp, events.seq',
      [w.id],
    );
    const table = rows.map((r) => eventIdAt(feedServer(), w.id, BigInt(r.stamp), BigInt(r.seq)));
    t.diagnostic(
      `${STORE}: ${table.length} events (${committed.length} recorded SQL transactions, ${apiWrites} API writes, ` +
        `${rolledBack.length} rolled-back events), read in ${pages} pages; ${resumes} after= polls, ` +
        `${fruitfulResumes} of which found new events, ${restarts} restarts with after= mid-walk`,
    );
    assert.ok(table.length > (STORE === 'postgres' ? 100 : 50), `${table.length} events`);
    // exactly the table, no duplicates, strictly increasing (stamp, seq)
    assert.equal(new Set(seen).size, seen.length, 'the reader saw an event twice');
    assertStrictlyIncreasing(seen, 'reader order');
    const seenSet = new Set(seen);
    const missing = table.filter((id) => !seenSet.has(id));
    assert.deepEqual(missing, [], `the reader skipped ${missing.length} events`);
    assert.deepEqual(seen, table);
    // every committed transaction is in, every rolled-back one is out
    const tableSet = new Set(table);
    for (const tx of committed) for (const id of tx.ids) assert.ok(tableSet.has(id), id);
    assert.ok(rolledBack.length > 0, 'some transactions rolled back');
    for (const id of rolledBack) assert.ok(!tableSet.has(id), `rolled back ${id} is in the table`);

    if (STORE === 'postgres') {
      assert.ok(committed.length >= 50, `${committed.length} committed SQL transactions`);
    }
  });
});
