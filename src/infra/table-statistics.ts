// Statistics of the service's tables, taken as they grow.
//
// PostgreSQL keeps a prepared statement's plan per connection until the statistics of its tables
// change. A plan made while a table was empty cannot tell the indexes apart, as each is estimated
// to return at most one row: a get by id kept that way reads the whole workspace through
// contacts_by_phone, and a batch's lookup does so for each of its items, however large the table has
// grown since (test/plans-after-growth.test.ts: 20,000 to 400,000 index entries for a round that
// needs a few hundred). New statistics replace those plans. Autovacuum takes them, but only after a
// table's first minute, and the embedded store has no autovacuum at all, nor has a server run with
// it off. So every process of the service takes them itself, by autovacuum's own rule: a table
// whose rows changed by 50 plus 10% of its size since it was last analyzed. Where autovacuum runs,
// it then finds the table analyzed already; neither takes them twice.

import type { Queryable } from './database.js';

/** How often each process looks for tables to analyze: one small read of the statistics views. */
export const STATISTICS_CHECK_MS = 5_000;

/**
 * Analyzes the tables of the service's schema whose statistics autovacuum's default rule calls
 * stale, and answers their names. A table another session is analyzing (or altering) is skipped:
 * its statistics are on their way.
 */
export async function refreshTableStatistics(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string; statement: string }>(
    `SELECT s.relname AS name, format('ANALYZE (SKIP_LOCKED) %I.%I', s.schemaname, s.relname) AS statement
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.schemaname = current_schema()
        AND s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
      ORDER BY s.relname`,
  );
  for (const { statement } of rows) await db.query(statement);
  return rows.map((r) => r.name);
}
