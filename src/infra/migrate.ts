// The schema in two kinds of files (db/README.md):
//   * db/migrations: numbered plain SQL files that change tables, indexes, sequences and data,
//     forward-only, each applied once, in order (recorded in schema_migrations);
//   * db/code: the database's code (functions, triggers, views) as it is now, each object in one
//     file, the files applied in name order after the migrations.
// The code is replaced whole, and only when something changed: a pending migration, or files whose
// checksum differs from the one recorded in schema_code. Then every trigger and view is dropped,
// the pending migrations run (on tables without triggers: a data statement writes what it says and
// fires nothing), every function is dropped, and the files create all of them anew. What a file no
// longer defines is gone, whatever its signature was. Dropping a trigger locks its table against
// reads and writes until the transaction commits, so a start with nothing to change takes none.
// Everything runs in one transaction behind an advisory lock: several processes starting at the
// same time cannot apply a file twice, and a failing file leaves the schema as it was.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database, Transaction } from './database.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../db/migrations/', import.meta.url));
const CODE_DIR = fileURLToPath(new URL('../../db/code/', import.meta.url));
const LOCK_ID = 7_301_004_211; // arbitrary constant shared by every process of this service

export interface MigrationReport {
  /** numbered files applied now */
  applied: string[];
  alreadyApplied: number;
  /**
   * db/code: created anew now; already what the files say; or left as it is because the database
   * has migrations this release does not know (a newer release's code is in place).
   */
  code: 'applied' | 'unchanged' | 'newer';
}

export function migrationFiles(): string[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort();
}

export function codeFiles(): string[] {
  return readdirSync(CODE_DIR)
    .filter((f) => /^\d{2}_[a-z0-9_]+\.sql$/.test(f))
    .sort();
}

/**
 * A unit of the database's code: a file of db/code, or code the service generates from its own
 * declarations (the resources' representation functions, made from their schemas), which takes its
 * place among the files by its name.
 */
export interface CodeUnit {
  name: string;
  sql: string;
}

/** The database's code, in the order it is applied: the files of db/code and the generated units, by name. */
export function databaseCode(generated: readonly CodeUnit[]): CodeUnit[] {
  const files = codeFiles().map((name) => ({ name, sql: readFileSync(CODE_DIR + name, 'utf8') }));
  return [...files, ...generated].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** What schema_code records of the code: a digest of its units' names and texts, in order. */
export function codeChecksum(code: readonly CodeUnit[]): string {
  const hash = createHash('sha256');
  for (const unit of code) hash.update(`${unit.name}\n${unit.sql}\n`);
  return hash.digest('hex');
}

/** Applies the pending migrations and, when it changed, the database's code: db/code with `generated`. */
export async function migrate(db: Database, generated: readonly CodeUnit[]): Promise<MigrationReport> {
  const code = databaseCode(generated);
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
    await tx.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version text PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    // The checksums of the code applied, in order: the last is the code in place.
    await tx.query(
      `CREATE TABLE IF NOT EXISTS schema_code (
         checksum text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    await tx.query('ALTER TABLE schema_code ADD COLUMN IF NOT EXISTS position bigint GENERATED ALWAYS AS IDENTITY');
    const done = new Set(
      (await tx.query<{ version: string }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    const files = migrationFiles();
    const known = new Set(files);
    // A process of an older release (during a rolling deploy, or restarted after a newer one
    // migrated) must not put its code back over the newer tables.
    if ([...done].some((version) => !known.has(version))) {
      return { applied: [], alreadyApplied: done.size, code: 'newer' };
    }
    const pending = files.filter((file) => !done.has(file));
    const checksum = codeChecksum(code);
    const history = (
      await tx.query<{ checksum: string }>('SELECT checksum FROM schema_code ORDER BY position')
    ).rows.map((r) => r.checksum);
    if (pending.length === 0 && history.at(-1) === checksum) {
      return { applied: [], alreadyApplied: done.size, code: 'unchanged' };
    }
    // This release's code was in place and another's replaced it since, with the same migrations: a
    // later release that changed only code. Its code stays (going back is deliberate: db/README.md).
    if (pending.length === 0 && history.includes(checksum)) {
      return { applied: [], alreadyApplied: done.size, code: 'newer' };
    }

    await dropTriggersAndViews(tx);
    for (const file of pending) {
      await tx.exec(readFileSync(MIGRATIONS_DIR + file, 'utf8'));
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [file]);
    }
    await dropFunctions(tx);
    for (const unit of code) await tx.exec(unit.sql);
    await tx.query('INSERT INTO schema_code (checksum) VALUES ($1)', [checksum]);
    return { applied: pending, alreadyApplied: done.size, code: 'applied' };
  });
}

/** Objects of an extension are the extension's, not ours. */
const NOT_OF_AN_EXTENSION = (catalog: string, oid: string) =>
  `NOT EXISTS (SELECT 1 FROM pg_depend d
                WHERE d.classid = '${catalog}'::regclass AND d.objid = ${oid} AND d.deptype = 'e')`;

async function dropTriggersAndViews(tx: Transaction): Promise<void> {
  const triggers = await tx.query<{ sql: string }>(
    `SELECT format('DROP TRIGGER %I ON %I.%I', t.tgname, n.nspname, c.relname) AS sql
       FROM pg_trigger t
       JOIN pg_class c ON c.oid = t.tgrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND NOT t.tgisinternal`,
  );
  for (const { sql } of triggers.rows) await tx.query(sql);
  // One statement for all: a view another one reads goes with it.
  const views = await tx.query<{ name: string }>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS name
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind = 'v' AND ${NOT_OF_AN_EXTENSION('pg_class', 'c.oid')}`,
  );
  if (views.rows.length > 0) await tx.query(`DROP VIEW ${views.rows.map((r) => r.name).join(', ')}`);
}

/**
 * Without CASCADE: a table that still depends on one of them (a generated column, a default or a
 * check calling it) makes migrate fail here, naming both, rather than lose the column.
 */
async function dropFunctions(tx: Transaction): Promise<void> {
  const routines = await tx.query<{ name: string }>(
    `SELECT format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)) AS name
       FROM pg_proc p
       JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = current_schema() AND ${NOT_OF_AN_EXTENSION('pg_proc', 'p.oid')}`,
  );
  if (routines.rows.length > 0) await tx.query(`DROP ROUTINE ${routines.rows.map((r) => r.name).join(', ')}`);
}
