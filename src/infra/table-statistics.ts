// Statistics of the service's tables, taken again when a table has grown.
//
// PostgreSQL keeps a prepared statement's plan per connection until the statistics of its tables
// change. A plan made while a table was empty cannot tell the indexes apart, as each is estimated
// to return at most one row: a get by id kept that way reads the whole workspace through
// contacts_by_phone, and a batch's lookup does so for each of its items, however large the table has
// grown since (test/plans-after-growth.test.ts: 20,000 to 400,000 index entries for a round that
// needs a few hundred). New statistics replace those plans. Autovacuum takes them, but only after a
// table's first minute, and the embedded store has no autovacuum at all, nor has a server run with
// it off. So every process of the service takes them itself when a table holds more than twice the
// rows its statistics say (and over 100): from empty to 10,000 rows, about eight analyses, and then
// one each time the table doubles. A table that only churns (counts, leases) is left alone, and
// where autovacuum runs it has analyzed a growing table long before it doubles.
import type { Queryable } from './database.js';

/** How often each process looks for tables to analyze: one small read of the statistics views. */
export const STATISTICS_CHECK_MS = 5_000;

/**
 * Analyzes the tables of the service's schema that hold more than twice the rows their statistics
 * say, and over 100, and answers their names. A table another session is analyzing (or altering)
 * is skipped: its statistics are on their way.
 */
export async function refreshTableStatistics(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string; statement: string }>(
    `SELECT s.relname AS name, format('ANALYZE (SKIP_LOCKED) %I.%I', s.schemaname, s.relname) AS statement
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.schemaname = current_schema()
        AND s.n_live_tup > 2 * greatest(c.reltuples, 50)
      ORDER BY s.relname`,
  );
  for (const { statement } of rows) await db.query(statement);
  return rows.map((r) => r.name);
}
