// Opens the configured store for one process: PostgreSQL when DATABASE_URL is set, otherwise the
// embedded PGlite database under DATA_DIR. The embedded data directory is locked for the life of
// the process, because two PGlite instances on one directory would corrupt it.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import type { Config } from '../config.js';
import { createEmbeddedDatabase, createPostgresDatabase, type Database } from './database.js';
import { migrate, type CodeUnit } from './migrate.js';

export interface OpenStore {
  db: Database;
  close(): Promise<void>;
}

export class StoreBusy extends Error {}

/**
 * `code`: the database code the service generates from its declarations, applied with db/code
 * (the composition passes GENERATED_DATABASE_CODE of src/modules/resources.ts).
 */
export async function openStore(
  config: Config,
  opts: { code: readonly CodeUnit[]; poolSize?: number },
): Promise<OpenStore> {
  if (config.databaseUrl) {
    const db = createPostgresDatabase(config.databaseUrl, opts.poolSize ?? config.dbPoolSize, {
      listenUrl: config.databaseListenUrl ?? undefined,
      transactionPooler: config.databaseTransactionPooler,
    });
    try {
      await migrate(db, opts.code);
    } catch (err) {
      await db.close();
      throw err;
    }
    return { db, close: () => db.close() };
  }

  mkdirSync(config.dataDir, { recursive: true });
  let unlock: () => Promise<void>;
  try {
    unlock = await lockfile.lock(config.dataDir, { stale: 15_000, update: 5_000, realpath: true });
  } catch (err) {
    if ((err as { code?: string }).code === 'ELOCKED')
      throw new StoreBusy(`${config.dataDir} is in use by another process`);
    throw err;
  }
  try {
    const db = await createEmbeddedDatabase(join(config.dataDir, 'pgdata'));
    await migrate(db, opts.code);
    return {
      db,
      async close() {
        await db.close();
        await unlock();
      },
    };
  } catch (err) {
    await unlock();
    throw err;
  }
}

export async function embeddedStoreInUse(config: Config): Promise<boolean> {
  if (config.databaseUrl) return false;
  mkdirSync(config.dataDir, { recursive: true });
  return lockfile.check(config.dataDir, { stale: 15_000, realpath: true });
}
