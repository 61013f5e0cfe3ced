// Settings of the installation, kept in the store and shared by every process (instance_settings).
import { randomBytes } from 'node:crypto';
import type { Database } from './database.js';

/** A random secret made once per installation and shared by every process through the store. */
export async function instanceSecret(db: Database, name: string): Promise<string> {
  await db.query('INSERT INTO instance_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    randomBytes(32).toString('base64url'),
  ]);
  const { rows } = await db.query<{ value: string }>('SELECT value FROM instance_settings WHERE name = $1', [name]);
  return rows[0]!.value;
}
