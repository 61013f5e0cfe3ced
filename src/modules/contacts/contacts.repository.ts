// SQL for contacts. Every statement is scoped by workspace_id and names its columns.
import type { Queryable } from '../../infra/database.js';
import type { AnsweredWrite } from '../../infra/idempotency-store.js';
import { notFound } from '../../shared/errors.js';
import { equals, updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import type { BatchResult, ContactBatchItemT, ContactStatus, ContactT, ContactWrite } from './contacts.schemas.js';
import { DEFAULT_CONTACT_STATUS, WRITABLE_CONTACT_FIELDS } from './contacts.schemas.js';
import { Contact } from './contacts.schemas.js';

export const CONTACT_COLUMNS = `id, external_id, name, company_name, email, phone, whatsapp, origin, status,
  api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`;

/** The list and get of contacts, on the shared keyset builder. */
export const contactsSpec: ListSpec = {
  resource: 'contacts',
  table: 'contacts',
  columns: CONTACT_COLUMNS,
  publicFields: Object.keys(Contact.properties),
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('status')],
};

/**
 * The answer of a single write, by the database (an AnsweredWrite's `answer`): {"data": contact} in
 * the text GET writes for the contact (api_public_json, db/migrations/0012; test/contacts.test.ts
 * holds it to the route's schema serializer byte for byte), from the row the change returned.
 */
const answerOf = (status: string) =>
  `answer AS (SELECT ${status} AS status_code,
                     '{"data":' || api_public_json('contact', api_contact_json(contact)) || '}' AS body,
                     (contact).id AS resource_id
                FROM changed)`;

export const contactsRepository = {
  /** Creates a contact; the answer is 201 with it. */
  insert(workspaceId: string, fields: ContactWrite & { status: ContactStatus }): AnsweredWrite {
    const { columns, values, shape } = writable(fields);
    const placeholders = values.map((_, i) => `$${i + 2}`);
    return {
      with: `changed AS (
         INSERT INTO contacts (workspace_id, ${columns.join(', ')}) VALUES ($1, ${placeholders.join(', ')})
         RETURNING contacts AS contact),
       ${answerOf('201')}`,
      params: [workspaceId, ...values],
      name: `contacts_insert_${shape}`,
      otherwise: new Error('the insert returned no contact'),
    };
  },

  /** Changes the given properties only; the answer is 200 with the contact, or 404 when it does not exist. */
  update(workspaceId: string, id: string, fields: ContactWrite): AnsweredWrite {
    const { columns, values, shape } = writable(fields);
    const set = columns.map((c, i) => `${c} = $${i + 3}`);
    return {
      with: `changed AS (
         UPDATE contacts SET ${set.join(', ')} WHERE workspace_id = $1 AND id = $2 RETURNING contacts AS contact),
       ${answerOf('200')}`,
      params: [workspaceId, id, ...values],
      name: `contacts_update_${shape}`,
      otherwise: notFound('contact'),
    };
  },

  /**
   * Creates the contact named by external_id (answer 201), or changes the given properties of the
   * existing one (200): concurrent upserts of one external_id take it one after the other (its
   * advisory lock), and the unique index stands behind that.
   */
  upsertByExternalId(workspaceId: string, externalId: string, fields: ContactWrite): AnsweredWrite {
    const { columns, values, shape } = writable(fields);
    const placeholders = values.map((_, i) => `$${i + 3}`);
    const set = columns.map((c) => `${c} = EXCLUDED.${c}`);
    // Take the external id first (the advisory lock a batch takes for each of its ids), then lock
    // the existing contact, as an update does: a write locks its rows before its trigger takes the
    // workspace's sync clock, so two writers never wait on each other in opposite orders, and
    // upserts of one id run one after the other (db/migrations/0005, 0016). The lock goes ahead of
    // the upsert in the same round trip; the upsert runs once the lock is granted, and fails with
    // it if it fails.
    return {
      ahead: [
        {
          sql: 'SELECT contacts_lock_external($1, $2)',
          params: [workspaceId, externalId],
          name: 'contacts_lock_external',
        },
      ],
      with: `changed AS (
         INSERT INTO contacts AS c (workspace_id, external_id, ${columns.join(', ')})
         VALUES ($1, $2, ${placeholders.join(', ')})
         ON CONFLICT (workspace_id, external_id) DO UPDATE SET ${set.join(', ')}
         RETURNING c AS contact, (xmax = 0) AS inserted),
       ${answerOf('CASE WHEN inserted THEN 201 ELSE 200 END')}`,
      params: [workspaceId, externalId, ...values],
      name: `contacts_upsert_${shape}`,
      otherwise: new Error('the upsert returned no contact'),
    };
  },

  /**
   * Creates or changes the contact of each item's external_id, in one transaction (the caller's),
   * each item as PUT /contacts/external/{external_id} would, and says which of the three happened.
   * Items whose values are all stored already are not written: no updated_at move, no event. The
   * others go in one statement, in item order, so their events follow the items' order.
   *
   * Concurrent batches sharing external ids: each batch takes its ids (advisory locks, in
   * external_id order) before locking any contact, so two batches never wait on each other in
   * opposite orders; and before creating any, the batch takes its workspace's sync clock, which
   * every writer of the workspace needs to commit a change (db/migrations/0005): a contact another
   * writer created meanwhile has committed by then, and is read, locked and updated instead of
   * created twice.
   */
  async batchUpsert(
    db: Queryable,
    workspaceId: string,
    items: readonly ContactBatchItemT[],
  ): Promise<{ result: BatchResult; contact: ContactT }[]> {
    const stored = new Map<string, ContactT>();
    const lockStored = async (externalIds: string[]) => {
      const { rows } = await db.query<ContactT>(
        `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE workspace_id = $1 AND external_id = ANY($2::text[])
          ORDER BY external_id FOR UPDATE`,
        [workspaceId, externalIds],
        'contacts_batch_lock',
      );
      for (const row of rows) stored.set(row.external_id!, row);
    };
    // Batches that share external ids take them one after the other, in one order: each id's
    // transaction-scoped advisory lock, in external_id order, before any row lock. Without it, a
    // batch holding a row another batch created meanwhile can wait for the sync clock while the
    // other, holding the clock, waits for that row (a deadlock PostgreSQL breaks by aborting one).
    // Seed 1 keeps these keys apart from the Idempotency-Key locks (seed 0); a single upsert takes
    // the same lock for its id (contacts_lock_external, db/migrations/0016).
    await db.query(
      `SELECT count(pg_advisory_xact_lock(hashtextextended($1::uuid::text || ':' || id, 1)))
         FROM (SELECT DISTINCT unnest($2::text[]) AS id ORDER BY 1) ids`,
      [workspaceId, items.map((i) => i.external_id)],
      'contacts_batch_ids',
    );
    await lockStored(items.map((i) => i.external_id));
    const missing = items.map((i) => i.external_id).filter((id) => !stored.has(id));
    if (missing.length > 0) {
      await db.query('SELECT sync_stamp($1)', [workspaceId], 'contacts_batch_clock');
      await lockStored(missing);
    }

    const planned = items.map((item) => {
      const current = stored.get(item.external_id);
      const values = Object.fromEntries(
        WRITABLE_CONTACT_FIELDS.map((field) => [
          field,
          Object.prototype.hasOwnProperty.call(item, field) && item[field] !== undefined
            ? item[field]
            : current
              ? current[field]
              : field === 'status'
                ? DEFAULT_CONTACT_STATUS
                : null,
        ]),
      ) as Record<(typeof WRITABLE_CONTACT_FIELDS)[number], string | null>;
      const result: BatchResult = !current
        ? 'created'
        : WRITABLE_CONTACT_FIELDS.every((field) => values[field] === current[field])
          ? 'unchanged'
          : 'updated';
      return { item, current, values, result };
    });

    const writes = planned.filter((p) => p.result !== 'unchanged');
    const written = new Map<string, ContactT>();
    if (writes.length > 0) {
      const column = (field: (typeof WRITABLE_CONTACT_FIELDS)[number]) => writes.map((w) => w.values[field]);
      const { rows } = await db.query<ContactT>(
        `INSERT INTO contacts AS c (workspace_id, external_id, ${WRITABLE_CONTACT_FIELDS.join(', ')})
         SELECT $1, i.external_id, ${WRITABLE_CONTACT_FIELDS.map((f) => `i.${f}`).join(', ')}
           FROM unnest($2::text[], ${WRITABLE_CONTACT_FIELDS.map((_, n) => `$${n + 3}::text[]`).join(', ')})
                WITH ORDINALITY AS i(external_id, ${WRITABLE_CONTACT_FIELDS.join(', ')}, ord)
          ORDER BY i.ord
         ON CONFLICT (workspace_id, external_id) DO UPDATE
           SET ${WRITABLE_CONTACT_FIELDS.map((f) => `${f} = EXCLUDED.${f}`).join(', ')}
         RETURNING ${CONTACT_COLUMNS}`,
        [workspaceId, writes.map((w) => w.item.external_id), ...WRITABLE_CONTACT_FIELDS.map(column)],
        'contacts_batch_write',
      );
      for (const row of rows) written.set(row.external_id!, row);
    }
    return planned.map((p) => ({
      result: p.result,
      contact: p.result === 'unchanged' ? p.current! : written.get(p.item.external_id)!,
    }));
  },
};

/**
 * The properties present in a write body, in a fixed column order, from the whitelist only; and
 * `shape`, which names the set (a bit per writable field, in base 36). A write's statement is
 * prepared under its shape's name: PostgreSQL parses and plans each shape once per connection, not
 * once per write, and the names stay short (identifiers are cut at 63 bytes) and few (one per
 * subset of the writable fields).
 */
function writable(fields: ContactWrite): { columns: string[]; values: unknown[]; shape: string } {
  const columns: string[] = [];
  const values: unknown[] = [];
  let bits = 0;
  WRITABLE_CONTACT_FIELDS.forEach((name, i) => {
    if (Object.prototype.hasOwnProperty.call(fields, name) && fields[name] !== undefined) {
      columns.push(name);
      values.push(fields[name]);
      bits |= 1 << i;
    }
  });
  return { columns, values, shape: bits.toString(36) };
}
