// Idempotent writes (spec 4.1.4, 8). Claiming the key, doing the write and storing the response
// happen in one transaction, so a crash can never leave a key claimed without its write or a write
// without its key. A transaction-scoped advisory lock on (workspace, key) tells a duplicate that
// arrives while the first request is still running (409 idempotency_key_in_use) from one that
// arrives after it committed (replayed). Only successful writes are recorded: a request refused
// by validation, or one whose write fails, leaves the key free to be retried.
import { createHash } from 'node:crypto';
import { retryingConflicts, type Database, type Queryable } from './database.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { ApiError } from '../shared/errors.js';

export interface WriteResult {
  statusCode: number;
  body: unknown;
}

export interface IdempotentOutcome extends WriteResult {
  replayed: boolean;
}

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

export class IdempotencyStore {
  readonly #db: Database;
  readonly #ttlHours: number;

  constructor(db: Database, ttlHours: number) {
    this.#db = db;
    this.#ttlHours = ttlHours;
  }

  async execute(
    request: IdempotentRequest,
    write: (tx: Queryable) => Promise<WriteResult>,
  ): Promise<IdempotentOutcome> {
    const fingerprint = requestFingerprint(request);
    // A deadlock or serialization conflict rolled the attempt back whole: the request runs again.
    return retryingConflicts(() => this.#attempt(request, fingerprint, write));
  }

  async #attempt(
    request: IdempotentRequest,
    fingerprint: Buffer,
    write: (tx: Queryable) => Promise<WriteResult>,
  ): Promise<IdempotentOutcome> {
    return this.#db.transaction(async (tx) => {
      // One round trip: claim the key, and name the request for the events this write causes.
      const { rows: lock } = await tx.query<{ locked: boolean }>(
        `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked,
                set_config('app.request_id', $2, true) AS request_id`,
        [`${request.workspaceId}:${request.key}`, request.requestId],
        'idem_lock',
      );
      const locked = lock[0]?.locked === true;

      // Read even when the lock is taken: a key whose write has committed replays without
      // waiting for (or being refused by) another replay of it that holds the lock right now.
      const { rows: stored } = await tx.query<{
        request_sha256: Uint8Array;
        status_code: number;
        response_body: string;
        erased: boolean;
      }>(
        `SELECT request_sha256, status_code, response_body, erased FROM idempotency_keys
          WHERE workspace_id = $1 AND key = $2 AND expires_at > now()`,
        [request.workspaceId, request.key],
        'idem_find',
      );
      const previous = stored[0];
      if (previous) {
        if (!Buffer.from(previous.request_sha256).equals(fingerprint)) throw new ApiError('idempotency_key_reused');
        // The contact it wrote was deleted since, and the stored answer with it (db/migrations/0010):
        // the request is not run again, and nothing of the contact is told.
        if (previous.erased) {
          throw new ApiError('resource_not_found', {
            message:
              'This request was already carried out, and the contact it wrote has since been deleted: its stored answer was erased with it.',
          });
        }
        return {
          statusCode: previous.status_code,
          body: JSON.parse(previous.response_body) as unknown,
          replayed: true,
        };
      }
      // Not committed yet and claimed by another request: that one is still running.
      if (!locked) throw new ApiError('idempotency_key_in_use', { retryAfter: 1 });

      const result = await write(tx);
      await tx.query(
        `INSERT INTO idempotency_keys
           (workspace_id, key, request_sha256, status_code, response_body, resource_id, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, now() + $7::int * interval '1 hour')
         ON CONFLICT (workspace_id, key) DO UPDATE
           SET request_sha256 = EXCLUDED.request_sha256, status_code = EXCLUDED.status_code,
               response_body = EXCLUDED.response_body, resource_id = EXCLUDED.resource_id, erased = false,
               created_at = now(), expires_at = EXCLUDED.expires_at`,
        [
          request.workspaceId,
          request.key,
          fingerprint,
          result.statusCode,
          JSON.stringify(result.body),
          writtenResourceId(result.body),
          this.#ttlHours,
        ],
        'idem_store',
      );
      return { ...result, replayed: false };
    });
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
