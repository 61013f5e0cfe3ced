// Forward-only migrations: numbered plain SQL files in db/migrations, applied in order, each once.
// All pending files run in one transaction behind an advisory lock, so several processes starting
// at the same time cannot apply a file twice, and a failing file leaves the schema as it was.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database } from './database.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../db/migrations/', import.meta.url));
const LOCK_ID = 7_301_004_211; // arbitrary constant shared by every process of this service

export interface MigrationReport {
  applied: string[];
  alreadyApplied: number;
}

export function migrationFiles(): string[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort();
}

/** `through`: apply the files up to this one only (tests of a migration over data of the schema before it). */
export async function migrate(db: Database, options: { through?: string } = {}): Promise<MigrationReport> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
    await tx.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version text PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const done = new Set(
      (await tx.query<{ version: string }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    const applied: string[] = [];
    for (const file of migrationFiles()) {
      if (options.through !== undefined && file > options.through) break;
      if (done.has(file)) continue;
      await tx.exec(readFileSync(MIGRATIONS_DIR + file, 'utf8'));
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [file]);
      applied.push(file);
    }
    return { applied, alreadyApplied: done.size };
  });
}
