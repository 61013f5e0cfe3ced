// Statistics of the service's tables, taken again when they no longer describe the data.
//
// PostgreSQL keeps a prepared statement's plan per connection until the statistics of its tables
// change, and plans with the values it is given whenever it judges that cheaper (the embedded
// store always, as its driver names no statement). Either way a plan is only as good as what the
// statistics say about `workspace_id`. Two cases make them say a workspace holds at most one row,
// and then every index that starts with `workspace_id` looks as cheap as the one that fits: a get
// by id reads the whole workspace through contacts_by_phone, a lookup by e-mail through
// contacts_sync, a batch's lock does so for each of its items.
//
// - A table that has grown since it was analyzed (a plan made while it was empty). Autovacuum
//   analyzes a table only after its first minute, and the embedded store has no autovacuum at all,
//   nor has a server run with it off. So a table is analyzed once it holds more than twice the rows
//   its statistics say (and over 100): from empty to 10,000 rows, about eight analyses at most, and
//   then one each time the table doubles. A table that only churns (counts, leases) is left alone.
// - A workspace the last analysis did not see (created or grown since), in a table whose statistics
//   list every workspace they saw as a most common value: those values add up to the whole table,
//   so PostgreSQL estimates any other workspace at one row. This is the case of a deployment of a
//   few workspaces, however large its tables; autovacuum analyzes again only after 10% of the table
//   has changed. So a table is analyzed once a workspace that has written since its last analysis
//   and is not among its most common values holds enough rows to be seen by the next one.
//
// test/plans-after-growth.test.ts counts the index entries a round of gets, lookups, upserts and
// batches reads in both cases, on both stores.
import type { Queryable } from './database.js';

/** How often each process looks for tables to analyze: small reads of the statistics views. */
export const STATISTICS_CHECK_MS = 5_000;

/**
 * A workspace the statistics do not know is worth an analysis once it holds this many rows: a few
 * batches, far more than the one row it is estimated at.
 */
export const UNKNOWN_WORKSPACE_ROWS = 100;

/**
 * An analysis taken for an unknown workspace is not repeated for the same table within this time,
 * should the analysis still not list it (its sample missed it): at most one such analysis per
 * table per interval, however many workspaces write.
 */
const UNKNOWN_WORKSPACE_REPEAT = '10 seconds';

/**
 * Analyzes the tables of the service's schema whose statistics no longer describe them (above) and
 * answers their names. A table another session is analyzing (or altering) is skipped: its
 * statistics are on their way.
 */
export async function refreshTableStatistics(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string; relation: string; grown: boolean; analyzed_at: string | null }>(
    CHANGED_TABLES,
    [UNKNOWN_WORKSPACE_ROWS],
  );
  const stale: string[] = [];
  const unsure = rows.filter((t) => !t.grown);
  const known =
    unsure.length > 0
      ? await knownWorkspaces(
          db,
          unsure.map((t) => t.name),
        )
      : new Map<string, string>();
  for (const table of rows) {
    const workspaces = known.get(table.name);
    if (table.grown || (workspaces !== undefined && (await hasUnknownWorkspace(db, table, workspaces)))) {
      await db.query(`ANALYZE (SKIP_LOCKED) ${table.relation}`);
      stale.push(table.name);
    }
  }
  return stale;
}

/**
 * The tables of the schema that have grown (`grown`), and those that may have a workspace their
 * statistics do not know: at least $1 rows written since their last analysis, itself over
 * UNKNOWN_WORKSPACE_REPEAT ago. A read of pg_stat_user_tables alone, every few seconds.
 */
const CHANGED_TABLES = `
  SELECT s.relname AS name, format('%I.%I', s.schemaname, s.relname) AS relation,
         s.n_live_tup > 2 * greatest(c.reltuples, 50) AS grown,
         greatest(s.last_analyze, s.last_autoanalyze)::text AS analyzed_at
    FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
   WHERE s.schemaname = current_schema()
     AND (s.n_live_tup > 2 * greatest(c.reltuples, 50)
          OR (s.n_mod_since_analyze >= $1
              AND greatest(s.last_analyze, s.last_autoanalyze) < now() - interval '${UNKNOWN_WORKSPACE_REPEAT}'))
   ORDER BY s.relname`;

/**
 * The most common workspaces of each named table whose `workspace_id` statistics estimate any other
 * workspace at under two rows (its most common values add up to nearly the whole table, as when
 * they list every workspace the analysis saw), by table name, as a uuid[] literal. Where they leave
 * workspaces out (a table larger than a sample, with many of them), the others are estimated from
 * those left out, not at one row, and an analysis would not list a new one either. pg_stats costs
 * milliseconds on the embedded store: read only after rows were written.
 */
async function knownWorkspaces(db: Queryable, tables: string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ name: string; known: string }>(
    `SELECT s.tablename AS name, coalesce(s.most_common_vals::text, '{}') AS known
       FROM pg_stats s JOIN pg_class c ON c.oid = format('%I.%I', s.schemaname, s.tablename)::regclass
      WHERE s.schemaname = current_schema() AND s.tablename = ANY($1::text[]) AND s.attname = 'workspace_id'
        AND s.n_distinct <> -1
        AND (1 - s.null_frac - coalesce((SELECT sum(f) FROM unnest(s.most_common_freqs) f), 0))
            / greatest(CASE WHEN s.n_distinct < 0 THEN -s.n_distinct * c.reltuples ELSE s.n_distinct END
                       - coalesce(cardinality(s.most_common_freqs), 0), 1)
            * c.reltuples < 2`,
    [tables],
  );
  return new Map(rows.map((r) => [r.name, r.known]));
}

/**
 * Whether a workspace absent from `known` has written since the table's last analysis (its sync
 * clock moved) and holds enough rows to be seen by the next one: UNKNOWN_WORKSPACE_ROWS, or five
 * rows per sample of the table (an analysis samples 300 rows per unit of the statistics target).
 * Only the workspaces written since are counted, each count stopping there.
 */
async function hasUnknownWorkspace(
  db: Queryable,
  table: { relation: string; analyzed_at: string | null },
  known: string,
): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM workspace_clocks w,
            LATERAL (SELECT greatest($3, ceil(5 * reltuples / (300 * current_setting('default_statistics_target')::int)))::int
                       AS enough FROM pg_class WHERE oid = $4::regclass) e
      WHERE w.last_stamp > $1::timestamptz AND NOT (w.workspace_id = ANY($2::uuid[]))
        AND (SELECT count(*) FROM (SELECT FROM ${table.relation} t WHERE t.workspace_id = w.workspace_id LIMIT e.enough) n)
            >= e.enough
      LIMIT 1`,
    [table.analyzed_at, known, UNKNOWN_WORKSPACE_ROWS, table.relation],
  );
  return rows.length > 0;
}
