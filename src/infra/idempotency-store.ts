// Idempotent writes (spec 4.1.4, 8). Claiming the key, doing the write and storing the response
// happen in one transaction, so a crash can never leave a key claimed without its write or a write
// without its key. A transaction-scoped advisory lock on (workspace, key) tells a duplicate that
// arrives while the first request is still running (409 idempotency_key_in_use) from one that
// arrives after it committed (replayed). Only successful writes are recorded: a request refused
// by validation, or one whose write fails, leaves the key free to be retried.
import { createHash } from 'node:crypto';
import { retryingConflicts, type Database, type Statement, type Transaction } from './database.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { ApiError } from '../shared/errors.js';

export interface WriteResult {
  statusCode: number;
  body: unknown;
  /**
   * The contacts an answer carries, when it carries several (a batch): deleting any of them erases
   * the stored answer (db/code/06_deletions.sql). An answer of one ({data: {id}}) is found by that id.
   */
  resourceIds?: readonly string[];
}

/**
 * A write of one resource, answered with it: {"data": the resource as its GET writes it}. `change`
 * runs the repository's statement through `statements`, sending every statement before its first
 * await, and answers the typed row (null when there was nothing to change: `otherwise` is thrown,
 * and nothing is recorded). The store sends them, the record of the answer and the COMMIT in one
 * round trip: nothing the service does lies between the change and the commit, which is the stretch
 * the write holds its workspace's sync clock (db/code/03_sync_clock.sql). The record's text is the
 * resource read back by its text representation, api_<resource>_text, generated from its schema
 * (infra/representation.ts) and held byte for byte to the route's serializer (test/write-answers.test.ts).
 */
export interface ResourceWrite<T> {
  change: (statements: Pick<Transaction, 'query' | 'queryAll'>) => Promise<T | null>;
  answer: {
    /** the resource type: api_<resource>_text(row) is its answer */
    resource: string;
    table: string;
    /** the column that finds the written row (unique within the workspace) and its value */
    by: 'id' | 'external_id';
    value: string;
    status: number;
    /** when the write may create the row: the id a created row was given, answered 201 (`status` otherwise) */
    createdId?: string;
  };
  otherwise: Error;
}

/**
 * A write of several resources whose answer the database writes: `statements` make the change, and
 * `answer` is a SELECT of one row, (response_body text, resource_ids uuid[]), read after them: the
 * answer's text as the route's serializer writes it, and the contacts it carries (WriteResult's
 * resourceIds). The store sends the statements, the record of that answer and the COMMIT in one
 * round trip, as for a ResourceWrite. The answer's own parameters are numbered from
 * ANSWER_FIRST_PARAM: the ones before are the record's.
 */
export interface ComposedWrite {
  statusCode: number;
  statements: readonly Statement[];
  answer: { select: string; params: readonly unknown[]; name: string };
}

/** The first parameter number a ComposedWrite's answer may use: $1 to $5 are the record's. */
export const ANSWER_FIRST_PARAM = 6;

/** What a route's write answers: the outcome itself, or how the database writes it. */
export type Write = WriteResult | ResourceWrite<unknown> | ComposedWrite;

export interface IdempotentOutcome extends WriteResult {
  replayed: boolean;
  /** the body as written to the client and the record (a replay: the recorded bytes) */
  payload?: string;
  /** the resource the answer carries ({data: {id}}), if one */
  resourceId: string | null;
}

/** Keeps a key's new record, over an expired one left for the key (which the claim does not see). */
const RECORD_CONFLICT = `ON CONFLICT (workspace_id, key) DO UPDATE
           SET request_sha256 = EXCLUDED.request_sha256, status_code = EXCLUDED.status_code,
               response_body = EXCLUDED.response_body, resource_id = EXCLUDED.resource_id,
               resource_ids = EXCLUDED.resource_ids, erased = false,
               created_at = now(), expires_at = EXCLUDED.expires_at`;

/** The body as the route answers it: its response serializer, for the status the write chose. */
export type Serialize = (statusCode: number, body: unknown) => string;

export interface IdempotentRequest {
  workspaceId: string;
  /** recorded with the events the write causes */
  requestId: string;
  key: string;
  method: string;
  /** the route pattern, e.g. /v1/contacts/:id, with its params: the same resource whatever the encoding */
  route: string;
  params: unknown;
  body: unknown;
}

export function requestFingerprint(r: Pick<IdempotentRequest, 'method' | 'route' | 'params' | 'body'>): Buffer {
  return createHash('sha256')
    .update(`${r.method}\n${r.route}\n${canonicalJson(r.params ?? {})}\n${canonicalJson(r.body ?? null)}`)
    .digest();
}

/** What idempotency_claim answers: whether this request holds the key, and the key's stored answer if any. */
interface Claim {
  locked: boolean;
  request_sha256: Uint8Array | null;
  status_code: number | null;
  response_body: string | null;
  erased: boolean | null;
}

export class IdempotencyStore {
  readonly #db: Database;
  readonly #ttlHours: number;

  constructor(db: Database, ttlHours: number) {
    this.#db = db;
    this.#ttlHours = ttlHours;
  }

  /**
   * Runs `write` once per key. The answer is serialized once, with `serialize`: the same text goes
   * into the record and to the client.
   */
  async execute(
    request: IdempotentRequest,
    write: (tx: Transaction) => Promise<Write>,
    serialize: Serialize,
  ): Promise<IdempotentOutcome> {
    const fingerprint = requestFingerprint(request);
    // A deadlock or serialization conflict rolled the attempt back whole: the request runs again.
    return retryingConflicts(() => this.#attempt(request, fingerprint, write, serialize));
  }

  async #attempt(
    request: IdempotentRequest,
    fingerprint: Buffer,
    write: (tx: Transaction) => Promise<Write>,
    serialize: Serialize,
  ): Promise<IdempotentOutcome> {
    // The claim is sent with the transaction's BEGIN, in one round trip (db/code/07_idempotency.sql): claim
    // the key without waiting, name the request for the events this write causes, and read the
    // key's stored answer, in a snapshot taken after the claim. Read even when the claim failed: a
    // key whose write has committed replays without waiting for (or being refused by) another
    // replay of it that holds the lock right now.
    const claimStatement = {
      sql: 'SELECT locked, request_sha256, status_code, response_body, erased FROM idempotency_claim($1, $2, $3)',
      params: [request.workspaceId, request.key, request.requestId],
      name: 'idem_claim',
    };
    return this.#db.transactionFrom<Claim, IdempotentOutcome>(claimStatement, async (tx, { rows: claim }) => {
      const { locked, ...previous } = claim[0]!;
      if (previous.request_sha256 !== null) {
        if (!Buffer.from(previous.request_sha256).equals(fingerprint)) throw new ApiError('idempotency_key_reused');
        // The contact it wrote was deleted since, and the stored answer with it (db/code/06_deletions.sql):
        // the request is not run again, and nothing of the contact is told.
        if (previous.erased) {
          throw new ApiError('resource_not_found', {
            message:
              'This request was already carried out, and a contact it wrote has since been deleted: its stored answer was erased with it.',
          });
        }
        // The stored bytes, as they were first answered: a replay says exactly what the write said,
        // whatever the response schema has become since.
        // A 204 (a deletion) stored no body.
        const body = previous.response_body === '' ? null : (JSON.parse(previous.response_body!) as unknown);
        return {
          statusCode: previous.status_code!,
          body,
          payload: previous.response_body!,
          resourceId: writtenResourceId(body),
          replayed: true,
        };
      }
      // Not committed yet and claimed by another request: that one is still running.
      if (!locked) throw new ApiError('idempotency_key_in_use', { retryAfter: 1 });

      const result = await write(tx);
      if ('change' in result) return this.#recordResource(tx, request, fingerprint, result);
      if ('answer' in result) return this.#recordComposed(tx, request, fingerprint, result);
      const payload = serialize(result.statusCode, result.body);
      // The answer is stored in the transaction's last round trip, with its COMMIT: a write holds
      // its workspace's sync clock from its change to its commit (db/code/03_sync_clock.sql), so every
      // round trip in between is time the workspace's other writers wait.
      await tx.commitWith({
        sql: `INSERT INTO idempotency_keys
           (workspace_id, key, request_sha256, status_code, response_body, resource_id, resource_ids, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $8, now() + $7::int * interval '1 hour')
         ${RECORD_CONFLICT}`,
        params: [
          request.workspaceId,
          request.key,
          fingerprint,
          result.statusCode,
          payload,
          writtenResourceId(result.body),
          this.#ttlHours,
          result.resourceIds ?? null,
        ],
        name: 'idem_store',
      });
      return {
        statusCode: result.statusCode,
        body: result.body,
        resourceId: writtenResourceId(result.body),
        replayed: false,
        payload,
      };
    });
  }

  /** Makes the change, records the written resource as the answer and commits, in one round trip. */
  async #recordResource(
    tx: Transaction,
    request: IdempotentRequest,
    fingerprint: Buffer,
    write: ResourceWrite<unknown>,
  ): Promise<IdempotentOutcome> {
    const { resource, table, by, value, status, createdId } = write.answer;
    if (!/^[a-z_]+$/.test(resource) || !/^[a-z_]+$/.test(table)) throw new Error(`not a resource: ${resource}`);
    const { work: written, last } = await tx.commitAfter<
      unknown,
      { status_code: number; response_body: string; resource_id: string }
    >(write.change, {
      sql: `INSERT INTO idempotency_keys
           (workspace_id, key, request_sha256, status_code, response_body, resource_id, expires_at)
         SELECT $1, $2, $3, CASE WHEN r.id = $7::uuid THEN 201 ELSE $4 END,
                '{"data":' || api_${resource}_text(r) || '}', r.id,
                now() + $5::int * interval '1 hour'
           FROM ${table} r WHERE r.workspace_id = $1 AND r.${by} = $6
         ${RECORD_CONFLICT}
         RETURNING status_code, response_body, resource_id`,
      params: [request.workspaceId, request.key, fingerprint, status, this.#ttlHours, value, createdId ?? null],
      name: `idem_record_${resource}_by_${by}`,
    });
    const answer = last.rows[0];
    if (written === null || !answer) throw write.otherwise;
    const body = answer.response_body;
    return {
      statusCode: answer.status_code,
      body: undefined,
      payload: body,
      resourceId: answer.resource_id,
      replayed: false,
    };
  }

  /** Makes the change, records the answer the database composes and commits, in one round trip. */
  async #recordComposed(
    tx: Transaction,
    request: IdempotentRequest,
    fingerprint: Buffer,
    write: ComposedWrite,
  ): Promise<IdempotentOutcome> {
    const { statusCode, statements, answer } = write;
    const { rows } = await tx.commitWith<{ response_body: string }>(
      {
        sql: `INSERT INTO idempotency_keys
           (workspace_id, key, request_sha256, status_code, response_body, resource_ids, expires_at)
         SELECT $1, $2, $3, $4, a.response_body, a.resource_ids, now() + $5::int * interval '1 hour'
           FROM (${answer.select}) a
         ${RECORD_CONFLICT}
         RETURNING response_body`,
        params: [request.workspaceId, request.key, fingerprint, statusCode, this.#ttlHours, ...answer.params],
        name: `idem_record_${answer.name}`,
      },
      statements,
    );
    return { statusCode, body: undefined, payload: rows[0]!.response_body, resourceId: null, replayed: false };
  }

  /** Deletes expired records in small batches; returns how many went. */
  async purgeExpired(batchSize = 1_000): Promise<number> {
    let total = 0;
    for (;;) {
      const { rowCount } = await this.#db.query(
        `DELETE FROM idempotency_keys WHERE (workspace_id, key) IN (
           SELECT workspace_id, key FROM idempotency_keys WHERE expires_at <= now() LIMIT $1)`,
        [batchSize],
      );
      total += rowCount;
      if (rowCount < batchSize) return total;
    }
  }
}

/** The id of the resource a write answered with ({data: {id}}), so its deletion can erase the answer. */
function writtenResourceId(body: unknown): string | null {
  const id = (body as { data?: { id?: unknown } } | null)?.data?.id;
  return typeof id === 'string' ? id : null;
}
