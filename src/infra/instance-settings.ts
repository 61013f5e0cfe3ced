// Settings of the installation, kept in the store and shared by every process: the one reader and
// writer of instance_settings.
import { randomBytes } from 'node:crypto';
import type { Queryable } from './database.js';

/** The setting of that name, or null when none was ever stored. */
export async function instanceSetting(db: Queryable, name: string): Promise<string | null> {
  const { rows } = await db.query<{ value: string }>('SELECT value FROM instance_settings WHERE name = $1', [name]);
  return rows[0]?.value ?? null;
}

/** Stores a setting of a name not yet taken (storing one twice fails on the primary key). */
export async function recordInstanceSetting(db: Queryable, name: string, value: string): Promise<void> {
  await db.query('INSERT INTO instance_settings (name, value) VALUES ($1, $2)', [name, value]);
}

/** A random secret made once per installation and shared by every process through the store. */
export async function instanceSecret(db: Queryable, name: string): Promise<string> {
  await db.query('INSERT INTO instance_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    randomBytes(32).toString('base64url'),
  ]);
  return (await instanceSetting(db, name))!;
}
