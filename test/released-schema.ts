// Databases as released versions of the service left them, and their schema as text.
//
// test/fixtures/released-schema holds the migration files exactly as release c6ef773 shipped them
// (`git show c6ef773:db/migrations/<file>`), functions and triggers included: what every deployed
// database ran. A test loads them as that release's runner did (each file once, recorded in
// schema_migrations, in one transaction), puts rows in, then runs the current migrate over them.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database } from '../src/infra/database.js';

const RELEASED_DIR = fileURLToPath(new URL('./fixtures/released-schema/', import.meta.url));

export function releasedMigrationFiles(): string[] {
  return readdirSync(RELEASED_DIR)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort();
}

/** The schema of the release, or of its files up to `through` (an older release's). */
export async function migrateReleased(db: Database, options: { through?: string } = {}): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version text PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    for (const file of releasedMigrationFiles()) {
      if (options.through !== undefined && file > options.through) break;
      await tx.exec(readFileSync(RELEASED_DIR + file, 'utf8'));
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [file]);
    }
  });
}

/**
 * The schema of the database's current schema as text, one object a line, in a stable order:
 * tables and their columns (type, nullability, default or generation expression, identity),
 * constraints, indexes, sequences, functions, triggers and views. Two databases built in different
 * ways have the same schema when their texts are equal.
 */
export async function schemaText(db: Database): Promise<string> {
  const sections = [
    `SELECT format('table %s persistence=%s options=%s', c.relname, c.relpersistence, c.reloptions) AS line
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
      ORDER BY c.relname`,
    `SELECT format('column %s.%s %s%s%s%s%s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
                   CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
                   CASE WHEN a.attgenerated <> '' THEN ' generated(' || a.attgenerated::text || ') as ' || pg_get_expr(d.adbin, d.adrelid)
                        WHEN d.adbin IS NOT NULL THEN ' default ' || pg_get_expr(d.adbin, d.adrelid) ELSE '' END,
                   CASE WHEN a.attidentity <> '' THEN ' identity(' || a.attidentity::text || ')' ELSE '' END,
                   CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
                        THEN ' collate ' || a.attcollation::regcollation::text ELSE '' END) AS line
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v') AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname, a.attnum`,
    `SELECT format('constraint %s.%s %s', c.relname, k.conname, pg_get_constraintdef(k.oid)) AS line
       FROM pg_constraint k
       JOIN pg_class c ON c.oid = k.conrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema()
      ORDER BY c.relname, k.conname`,
    `SELECT 'index ' || pg_get_indexdef(i.indexrelid) AS line
       FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema()
      ORDER BY c.relname`,
    `SELECT format('sequence %s %s start %s increment %s min %s max %s cache %s cycle %s', c.relname,
                   format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache,
                   s.seqcycle) AS line
       FROM pg_sequence s
       JOIN pg_class c ON c.oid = s.seqrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema()
      ORDER BY c.relname`,
    `SELECT CASE WHEN p.prokind = 'a' THEN 'aggregate ' || p.oid::regprocedure::text
                 ELSE 'function ' || pg_get_functiondef(p.oid) END AS line
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = current_schema()
      ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`,
    `SELECT format('trigger %s enabled=%s', pg_get_triggerdef(t.oid), t.tgenabled) AS line
       FROM pg_trigger t
       JOIN pg_class c ON c.oid = t.tgrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND NOT t.tgisinternal
      ORDER BY c.relname, t.tgname`,
    `SELECT format('view %s %s', c.relname, pg_get_viewdef(c.oid)) AS line
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('v', 'm')
      ORDER BY c.relname`,
  ];
  const lines: string[] = [];
  for (const sql of sections) lines.push(...(await db.query<{ line: string }>(sql)).rows.map((r) => r.line));
  return lines.join('\n');
}
