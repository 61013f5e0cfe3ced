// SQL for contacts. Every statement is scoped by workspace_id and names its columns.
import type { Queryable, Statement, Transaction } from '../../infra/database.js';
import { ANSWER_FIRST_PARAM, type ComposedWrite } from '../../infra/idempotency-store.js';
import { equals, updatedAfter, type FilterSpec, type ListSpec } from '../../infra/keyset-list.js';
import { selectList } from '../../infra/representation.js';
import type { BatchResult, ContactBatchItemT, ContactStatus, ContactT, ContactWrite } from './contacts.schemas.js';
import { DEFAULT_CONTACT_STATUS, WRITABLE_CONTACT_FIELDS } from './contacts.schemas.js';
import { Contact } from './contacts.schemas.js';

/** A contact as the API writes it, from the table's row (or the row under the alias `row`). */
export const contactColumns = (row = 'contacts') => selectList(Contact, row);
export const CONTACT_COLUMNS = contactColumns();

/** The list and get of contacts, on the shared keyset builder. */
export const contactsSpec: ListSpec = {
  resource: 'contacts',
  table: 'contacts',
  item: Contact,
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('status')],
};

/**
 * A lookup filter of version 2: the contacts whose `column` is one of the comma-separated values,
 * found through the index on that column (contacts_by_email, contacts_by_phone, the unique
 * (workspace_id, external_id)), then ordered. Prepared like the other lists: the generic plan
 * PostgreSQL keeps reads that index too, for any number of values (test/pagination-plans.test.ts
 * checks the plan kept, not only the plan made for the values sent). One value, the lookup a sync
 * makes before creating a contact, is an equality of its own: PostgreSQL keeps its generic plan,
 * where a list of values is planned anew for every request (its plan for the values sent always
 * looks cheaper than the generic one), about 0.05 ms of the database's CPU per lookup.
 */
const oneOf = (
  param: string,
  column: string,
  normalize = (sql: string) => sql,
  spelling = (value: string) => value,
): FilterSpec => ({
  param,
  where: (p, value) =>
    isOneValue(value)
      ? `${normalize(column)} = ${normalize(p)}`
      : `${normalize(column)} = ANY(string_to_array(${normalize(p)}, ','))`,
  shapeOf: (value) => (isOneValue(value) ? '_one' : ''),
  // The rows a lookup selects depend on the set of its values, not on their order or repetition:
  // its cursor is bound to that set, sorted, each value in the spelling that selects the same rows.
  boundAs: (value) =>
    typeof value === 'string' ? [...new Set(value.split(',').map(spelling))].sort().join(',') : value,
});
/** A lookup's value names one value: no comma (no value of the lookups' patterns holds one). */
const isOneValue = (value: unknown) => typeof value === 'string' && !value.includes(',');

/** Version 2's contact list: version 1's filters and the lookups by e-mail (any case), phone and external id. */
export const contactsLookupSpec: ListSpec = {
  ...contactsSpec,
  filters: [
    ...contactsSpec.filters,
    // Found in any case: a cursor is bound to the addresses with A-Z lowered, where JavaScript and
    // PostgreSQL's lower() agree (another letter's case is bound as sent).
    oneOf(
      'email',
      'email',
      (sql) => `lower(${sql})`,
      (value) => value.replace(/[A-Z]+/g, (letters) => letters.toLowerCase()),
    ),
    oneOf('phone', 'phone'),
    oneOf('external_id', 'external_id'),
  ],
};

const WRITABLE_COLUMNS = WRITABLE_CONTACT_FIELDS.join(', ');
const STATUS_COLUMN = WRITABLE_CONTACT_FIELDS.indexOf('status');

/** $from, $from+1, ...: one placeholder per writable column. */
const placeholders = (from: number) => WRITABLE_CONTACT_FIELDS.map((_, i) => `$${i + from}`).join(', ');

/**
 * SET of every writable column, each to `value(column, i)` when the body carries it (its name is in
 * the text[] parameter $present) and to itself otherwise: one text for every set of properties.
 */
const setPresent = (present: number, value: (column: string, i: number) => string, table = '') =>
  WRITABLE_CONTACT_FIELDS.map(
    (c, i) => `${c} = CASE WHEN '${c}' = ANY($${present}::text[]) THEN ${value(c, i)} ELSE ${table}${c} END`,
  ).join(', ');

// The statements of single writes, written once: parameters $1 workspace, $2 id or external id (not
// for the insert), then every writable column in WRITABLE_CONTACT_FIELDS' order, then the names
// of the properties the body carries.
const AFTER_COLUMNS = 3 + WRITABLE_CONTACT_FIELDS.length;

const INSERT = `INSERT INTO contacts (workspace_id, id, ${WRITABLE_COLUMNS}) VALUES ($1, $2, ${placeholders(3)})
  RETURNING id`;

const UPDATE = `UPDATE contacts SET ${setPresent(AFTER_COLUMNS, (_c, i) => `$${i + 3}`)}
  WHERE workspace_id = $1 AND id = $2 RETURNING id`;

// $1 workspace, $2 external id, the writable columns, the names present, last the new contact's id.
const UPSERT = `INSERT INTO contacts AS c (workspace_id, external_id, ${WRITABLE_COLUMNS}, id)
  VALUES ($1, $2, ${placeholders(3)}, $${AFTER_COLUMNS + 1})
  ON CONFLICT (workspace_id, external_id) DO UPDATE SET ${setPresent(AFTER_COLUMNS, (c) => `EXCLUDED.${c}`, 'c.')}
  RETURNING c.id`;

type Statements = Pick<Transaction, 'query' | 'queryAll'>;

/**
 * The stored contacts of a batch's external ids ($2), locked: one lookup of the unique
 * (workspace_id, external_id) index per external id, in external_id order, locking as it goes. As
 * a filter (external_id = ANY($2)) or a join, a kept generic plan may read every contact of the
 * workspace instead (measured on a young table, bench/results/2026-11-28-batch-events.md).
 * test/pagination-plans.test.ts checks the plan, generic included, on an analyzed table.
 */
export const BATCH_LOCK = `SELECT c.* FROM (SELECT DISTINCT unnest($2::text[]) AS external_id ORDER BY 1) wanted,
  LATERAL (SELECT ${CONTACT_COLUMNS} FROM contacts
            WHERE workspace_id = $1 AND external_id = wanted.external_id FOR UPDATE) c`;

// The rows of a run of a batch upsert's items, in item order: $2 their external ids, then one
// array per writable column.
const BATCH_ROWS = `INSERT INTO contacts AS c (workspace_id, external_id, ${WRITABLE_COLUMNS})
    SELECT $1, i.external_id, ${WRITABLE_CONTACT_FIELDS.map((f) => `i.${f}`).join(', ')}
      FROM unnest($2::text[], ${WRITABLE_CONTACT_FIELDS.map((_, n) => `$${n + 3}::text[]`).join(', ')})
           WITH ORDINALITY AS i(external_id, ${WRITABLE_COLUMNS}, ord)
     ORDER BY i.ord`;

// A run of created items. The batch took each id's lock and found no contact for it; a writer that
// creates contacts without those locks (plain SQL) may have created one since: it is skipped here,
// and contacts_batch_created (db/code/08_contacts_external_id.sql) fails the transaction with a
// serialization failure, which the service retries whole; the retry finds the contact.
const BATCH_CREATE = `WITH created AS (${BATCH_ROWS}
    ON CONFLICT (workspace_id, external_id) DO NOTHING
    RETURNING 1)
  SELECT contacts_batch_created((SELECT count(*) FROM created), cardinality($2::text[]))`;

// A run of updated items: each contact, locked by the batch, gets every writable value.
const BATCH_UPDATE = `${BATCH_ROWS}
  ON CONFLICT (workspace_id, external_id) DO UPDATE
    SET ${WRITABLE_CONTACT_FIELDS.map((f) => `${f} = EXCLUDED.${f}`).join(', ')}`;

// A batch's answer, as ContactBatchResults (or ContactBatchPartialResults) serializes it, read after
// its writes: one entry per item, in item order, each either a valid item's result with its contact
// as stored now (found by its external id: one lookup of the unique index each, as in BATCH_LOCK;
// the LIMIT keeps the lookup a subquery of its own, run per entry, which a plan kept from a young
// table cannot turn into a scan of the workspace joined to the entries),
// or an invalid item's entry, written by the service. Parameters from ANSWER_FIRST_PARAM: the
// workspace, the results, the external ids, the invalid entries, the counts.
const answerParam = (n: number) => `$${ANSWER_FIRST_PARAM + n}`;
const BATCH_ANSWER = `SELECT '{"data":[' || string_agg(coalesce(e.invalid, '{"result":"' || e.result || '","contact":' || c.text || '}'), ','
                                    ORDER BY e.place)
         || '],"counts":' || ${answerParam(4)}::text || '}' AS response_body,
       array_agg(c.id ORDER BY e.place) FILTER (WHERE c.id IS NOT NULL) AS resource_ids
  FROM unnest(${answerParam(1)}::text[], ${answerParam(2)}::text[], ${answerParam(3)}::text[])
         WITH ORDINALITY AS e(result, external_id, invalid, place)
  LEFT JOIN LATERAL (SELECT r.id, api_contact_text(r) AS text FROM contacts r
                      WHERE r.workspace_id = ${answerParam(0)} AND r.external_id = e.external_id LIMIT 1) c ON true`;

/** What an item of a batch upsert does: its result, and every writable value the contact gets. */
export interface PlannedItem {
  external_id: string;
  result: BatchResult;
  values: Record<(typeof WRITABLE_CONTACT_FIELDS)[number], string | null>;
}

/** The contact a single write wrote: its answer is read back with the record (ResourceWrite). */
type Written = Pick<ContactT, 'id'>;

/**
 * The single writes send their statements without waiting (the caller sends them with the
 * transaction's last round trip) and answer the contact written. A new contact's id is chosen
 * by the caller, so the write's answer can be found by it in the same round trip.
 */
export const contactsRepository = {
  /**
   * Deletes the workspace's contacts named by id or by external_id, as every deletion does
   * (db/code/06_deletions.sql: each contact's conversations and messages first, its appointments
   * detached, its earlier events and stored answers erased, a contact.deleted tombstone), and
   * answers those it deleted. The contacts are locked first, in id order, so two deletions (or a
   * deletion and a batch) sharing contacts take them in one order.
   */
  async delete(
    db: Queryable,
    workspaceId: string,
    ids: readonly string[],
    externalIds: readonly string[],
  ): Promise<{ id: string; external_id: string | null }[]> {
    const { rows } = await db.query<{ id: string; external_id: string | null }>(
      `WITH doomed AS (
         SELECT id FROM contacts
          WHERE workspace_id = $1 AND (id = ANY($2::uuid[]) OR external_id = ANY($3::text[]))
          ORDER BY id FOR UPDATE)
       DELETE FROM contacts c USING doomed WHERE c.workspace_id = $1 AND c.id = doomed.id
       RETURNING c.id, c.external_id`,
      [workspaceId, ids, externalIds],
      'contacts_delete',
    );
    return rows;
  },

  /** Creates a contact with this id. A property the body leaves out is null (its column's default). */
  async insert(
    db: Statements,
    workspaceId: string,
    id: string,
    fields: ContactWrite & { status: ContactStatus },
  ): Promise<Written> {
    const { values } = writable(fields);
    const { rows } = await db.query<Written>(INSERT, [workspaceId, id, ...values], 'contacts_insert');
    return rows[0]!;
  },

  /** Changes the given properties only; null when the workspace has no contact with this id. */
  async update(db: Statements, workspaceId: string, id: string, fields: ContactWrite): Promise<Written | null> {
    const { values, present } = writable(fields);
    const { rows } = await db.query<Written>(UPDATE, [workspaceId, id, ...values, present], 'contacts_update');
    return rows[0] ?? null;
  },

  /**
   * Creates the contact named by external_id with the id `newId` (the body's properties, the
   * others null, the status the default one unless given), or changes the given properties of the
   * existing one: concurrent upserts of one external_id take it one after the other (its advisory
   * lock), and the unique index stands behind that. The contact has `newId` exactly when it was
   * created.
   */
  async upsertByExternalId(
    db: Statements,
    workspaceId: string,
    externalId: string,
    newId: string,
    fields: ContactWrite,
  ): Promise<Written> {
    const { values, present } = writable(fields);
    values[STATUS_COLUMN] ??= DEFAULT_CONTACT_STATUS;
    // Take the external id first (the advisory lock a batch takes for each of its ids), then lock
    // the existing contact, as an update does: a write locks its rows before its trigger takes the
    // workspace's sync clock, so two writers never wait on each other in opposite orders, and
    // upserts of one id run one after the other (db/code/03_sync_clock.sql,
    // 08_contacts_external_id.sql). The upsert runs once the lock is granted, and fails with it.
    const [, upserted] = await db.queryAll([
      {
        sql: 'SELECT contacts_lock_external($1, $2)',
        params: [workspaceId, externalId],
        name: 'contacts_lock_external',
      },
      { sql: UPSERT, params: [workspaceId, externalId, ...values, present, newId], name: 'contacts_upsert' },
    ]);
    return upserted!.rows[0] as Written;
  },

  /**
   * The first step of a batch upsert, in the caller's transaction: takes the items' external ids
   * and locks their stored contacts, and says what each item will do, as PUT
   * /contacts/external/{external_id} would: create the contact, update it, or leave it unchanged
   * (every value it sends is stored already: no updated_at move, no event).
   *
   * Batches sharing external ids take them one after the other, in one order: each id's
   * transaction-scoped advisory lock, in external_id order, before any row lock (the lock a single
   * upsert takes for its id, contacts_lock_external, db/code/08_contacts_external_id.sql). Without
   * it, a batch holding a row another batch created meanwhile could wait for the workspace's sync
   * clock while the other, holding the clock, waits for that row. The sync clock is not taken here
   * but by the writes (batchWrites), which go with the commit: the batch holds it for one round trip.
   * Seed 1 keeps these keys apart from the Idempotency-Key locks (seed 0). Both statements go in one
   * round trip; PostgreSQL runs the second once the first has returned, i.e. with its locks granted.
   */
  async planBatch(db: Statements, workspaceId: string, items: readonly ContactBatchItemT[]): Promise<PlannedItem[]> {
    const externalIds = items.map((i) => i.external_id);
    const [, locked] = await db.queryAll([
      {
        sql: `SELECT count(pg_advisory_xact_lock(hashtextextended($1::uuid::text || ':' || id, 1)))
                FROM (SELECT DISTINCT unnest($2::text[]) AS id ORDER BY 1) ids`,
        params: [workspaceId, externalIds],
        name: 'contacts_batch_ids',
      },
      { sql: BATCH_LOCK, params: [workspaceId, externalIds], name: 'contacts_batch_lock' },
    ]);
    const stored = new Map<string, ContactT>();
    for (const row of locked!.rows as ContactT[]) stored.set(row.external_id!, row);
    return items.map((item) => {
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
      ) as PlannedItem['values'];
      const result: BatchResult = !current
        ? 'created'
        : WRITABLE_CONTACT_FIELDS.every((field) => values[field] === current[field])
          ? 'unchanged'
          : 'updated';
      return { external_id: item.external_id, result, values };
    });
  },

  /**
   * The statements that write a planned batch: one per run of consecutive items with the same
   * result (unchanged items are not written). A statement's events are written at its end
   * (db/code/04_events_feed.sql), and one statement that both updated and created contacts would
   * have its updates' events written before its creations' (PostgreSQL fires the update's statement
   * triggers first): run by run, the events follow the items' order.
   */
  batchWrites(workspaceId: string, planned: readonly PlannedItem[]): Statement[] {
    const runs: PlannedItem[][] = [];
    for (const p of planned) {
      if (p.result === 'unchanged') continue;
      const last = runs.at(-1);
      if (last && last.at(-1)!.result === p.result) last.push(p);
      else runs.push([p]);
    }
    return runs.map((run) => {
      const creates = run[0]!.result === 'created';
      return {
        sql: creates ? BATCH_CREATE : BATCH_UPDATE,
        params: [
          workspaceId,
          run.map((p) => p.external_id),
          ...WRITABLE_CONTACT_FIELDS.map((field) => run.map((p) => p.values[field])),
        ],
        name: creates ? 'contacts_batch_create' : 'contacts_batch_update',
      };
    });
  },

  /**
   * The answer of a batch, read by the database after its writes (ComposedWrite): `entries` in
   * item order, each a valid item's result and external id, or an invalid item's entry as its
   * text; `counts` as its text.
   */
  batchAnswer(
    workspaceId: string,
    entries: readonly ({ result: BatchResult; external_id: string } | { text: string })[],
    counts: string,
  ): ComposedWrite['answer'] {
    return {
      select: BATCH_ANSWER,
      params: [
        workspaceId,
        entries.map((e) => ('text' in e ? null : e.result)),
        entries.map((e) => ('text' in e ? null : e.external_id)),
        entries.map((e) => ('text' in e ? e.text : null)),
        counts,
      ],
      name: 'contacts_batch',
    };
  },
};

/**
 * A write body as parameters of its statement: `values` holds every writable column, in a fixed
 * order, null where the body leaves the property out, and `present` names the properties the body
 * carries (from the whitelist only). One statement per kind of write serves every set of
 * properties: it is prepared once per connection, where a statement per set would keep up to 127
 * cached plans per kind in every PostgreSQL backend (test/prepared-statements.test.ts).
 */
function writable(fields: ContactWrite): { values: unknown[]; present: string[] } {
  const present: string[] = [];
  const values = WRITABLE_CONTACT_FIELDS.map((name) => {
    if (!Object.prototype.hasOwnProperty.call(fields, name) || fields[name] === undefined) return null;
    present.push(name);
    return fields[name];
  });
  return { values, present };
}
