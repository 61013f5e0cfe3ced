// SQL for contacts. Every statement is scoped by workspace_id and names its columns.
import type { Queryable } from '../../infra/database.js';
import { equals, updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import type { ContactStatus, ContactT, ContactWrite } from './contacts.schemas.js';
import { WRITABLE_CONTACT_FIELDS } from './contacts.schemas.js';

export const CONTACT_COLUMNS = `id, external_id, name, company_name, email, phone, whatsapp, origin, status,
  api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`;

/** The list and get of contacts, on the shared keyset builder. */
export const contactsSpec: ListSpec = {
  resource: 'contacts',
  table: 'contacts',
  columns: CONTACT_COLUMNS,
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('status')],
};

export const contactsRepository = {
  async insert(
    db: Queryable,
    workspaceId: string,
    fields: ContactWrite & { status: ContactStatus },
  ): Promise<ContactT> {
    const { columns, values } = writable(fields);
    const placeholders = values.map((_, i) => `$${i + 2}`);
    const { rows } = await db.query<ContactT>(
      `INSERT INTO contacts (workspace_id, ${columns.join(', ')}) VALUES ($1, ${placeholders.join(', ')})
       RETURNING ${CONTACT_COLUMNS}`,
      [workspaceId, ...values],
    );
    return rows[0]!;
  },

  /** Changes the given properties only; null when the contact does not exist in this workspace. */
  async update(db: Queryable, workspaceId: string, id: string, fields: ContactWrite): Promise<ContactT | null> {
    const { columns, values } = writable(fields);
    const set = columns.map((c, i) => `${c} = $${i + 3}`);
    const { rows } = await db.query<ContactT>(
      `UPDATE contacts SET ${set.join(', ')} WHERE workspace_id = $1 AND id = $2 RETURNING ${CONTACT_COLUMNS}`,
      [workspaceId, id, ...values],
    );
    return rows[0] ?? null;
  },

  /**
   * Creates the contact named by external_id, or changes the given properties of the existing one,
   * in one statement: concurrent upserts of one external_id meet on the unique index and end in a
   * single contact. `created` tells which of the two happened.
   */
  async upsertByExternalId(
    db: Queryable,
    workspaceId: string,
    externalId: string,
    fields: ContactWrite,
  ): Promise<{ contact: ContactT; created: boolean }> {
    // Lock the existing contact first, as an update does: a write locks its rows before its
    // trigger takes the workspace's sync clock, so two writers never wait on each other in
    // opposite orders (db/migrations/0005).
    await db.query(
      'SELECT 1 FROM contacts WHERE workspace_id = $1 AND external_id = $2 FOR UPDATE',
      [workspaceId, externalId],
      'contacts_lock_external',
    );
    const { columns, values } = writable(fields);
    const placeholders = values.map((_, i) => `$${i + 3}`);
    const set = columns.map((c) => `${c} = EXCLUDED.${c}`);
    const { rows } = await db.query<ContactT & { inserted: boolean }>(
      `INSERT INTO contacts AS c (workspace_id, external_id, ${columns.join(', ')})
       VALUES ($1, $2, ${placeholders.join(', ')})
       ON CONFLICT (workspace_id, external_id) DO UPDATE SET ${set.join(', ')}
       RETURNING ${CONTACT_COLUMNS}, (xmax = 0) AS inserted`,
      [workspaceId, externalId, ...values],
    );
    const { inserted, ...contact } = rows[0]!;
    return { contact, created: inserted };
  },
};

/** The properties present in a write body, in a fixed column order, from the whitelist only. */
function writable(fields: ContactWrite): { columns: string[]; values: unknown[] } {
  const columns: string[] = [];
  const values: unknown[] = [];
  for (const name of WRITABLE_CONTACT_FIELDS) {
    if (Object.prototype.hasOwnProperty.call(fields, name) && fields[name] !== undefined) {
      columns.push(name);
      values.push(fields[name]);
    }
  }
  return { columns, values };
}
