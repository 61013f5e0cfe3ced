// API keys and their usage trail. The secret itself is never stored: only its SHA-256 digest.
import type { Queryable } from '../../infra/database.js';
import type { Scope } from '../../shared/scopes.js';

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  name: string;
  scopes: Scope[];
  rate_limit_per_minute: number;
  /** requests in flight at once; null: the deployment's DEFAULT_CONCURRENT_REQUESTS */
  concurrency_limit: number | null;
  expires_at: string | null;
  revoked_at: string | null;
  rotated_to: string | null;
  created_at: string;
  last_used_at: string | null;
}

/** What authentication needs about a key, read in one indexed lookup. */
export interface KeyCredentialRow {
  id: string;
  workspace_id: string;
  secret_sha256: Uint8Array;
  scopes: Scope[];
  rate_limit_per_minute: number;
  concurrency_limit: number | null;
  /** the first key of its chain of rotations: the rate-limit count is shared along it */
  lineage_id: string;
  expires_at_ms: number | null;
  revoked: boolean;
  workspace_status: string;
}

export interface UsageRow {
  day: string;
  operation: string;
  requests: number;
  client_errors: number;
  server_errors: number;
  rate_limited: number;
}

/** Requests of one key on one UTC day for one operation, as counted in memory before a flush. */
export interface UsageCount {
  keyId: string;
  day: string;
  operation: string;
  requests: number;
  clientErrors: number;
  serverErrors: number;
  rateLimited: number;
  lastUsedMs: number;
}

const COLUMNS = `id, workspace_id, name, scopes, rate_limit_per_minute, concurrency_limit, api_time(expires_at) AS expires_at,
  api_time(revoked_at) AS revoked_at, rotated_to, api_time(created_at) AS created_at,
  api_time(last_used_at) AS last_used_at`;

export const apiKeysRepository = {
  async insert(
    db: Queryable,
    key: {
      id: string;
      workspaceId: string;
      name: string;
      secretSha256: Buffer;
      scopes: readonly Scope[];
      rateLimitPerMinute: number;
      concurrencyLimit: number | null;
      expiresInMs: number | null;
      /** the key this one succeeds (a rotation): they share one rate-limit count */
      predecessorId?: string;
    },
  ): Promise<ApiKeyRow> {
    const { rows } = await db.query<ApiKeyRow>(
      `INSERT INTO api_keys (id, workspace_id, name, secret_sha256, scopes, rate_limit_per_minute, expires_at,
                             lineage_id, concurrency_limit)
       VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7::bigint IS NULL THEN NULL
                                            ELSE clock_timestamp() + $7::bigint * interval '1 millisecond' END,
               coalesce((SELECT lineage_id FROM api_keys WHERE id = $8), $1), $9)
       RETURNING ${COLUMNS}`,
      [
        key.id,
        key.workspaceId,
        key.name,
        key.secretSha256,
        key.scopes,
        key.rateLimitPerMinute,
        key.expiresInMs,
        key.predecessorId ?? null,
        key.concurrencyLimit,
      ],
    );
    return rows[0]!;
  },

  async find(db: Queryable, id: string): Promise<ApiKeyRow | null> {
    const { rows } = await db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, [id]);
    return rows[0] ?? null;
  },

  async listByWorkspace(db: Queryable, workspaceId: string | null): Promise<ApiKeyRow[]> {
    const { rows } = await db.query<ApiKeyRow>(
      `SELECT ${COLUMNS} FROM api_keys WHERE ($1::uuid IS NULL OR workspace_id = $1) ORDER BY api_keys.created_at, api_keys.id`,
      [workspaceId],
    );
    return rows;
  },

  async credential(db: Queryable, id: string): Promise<KeyCredentialRow | null> {
    // One row whether the key exists or not (its columns null when it does not): an unknown id
    // costs the same round trip and the same row as a known one (docs/security.md, key timing).
    const { rows } = await db.query<KeyCredentialRow | Record<keyof KeyCredentialRow, null>>(
      `SELECT k.id, k.workspace_id, k.secret_sha256, k.scopes, k.rate_limit_per_minute, k.concurrency_limit, k.lineage_id,
              (extract(epoch FROM k.expires_at) * 1000)::float8 AS expires_at_ms,
              (k.revoked_at IS NOT NULL) AS revoked, w.status AS workspace_status
         FROM (SELECT $1::text AS id) presented
         LEFT JOIN api_keys k ON k.id = presented.id
         LEFT JOIN workspaces w ON w.id = k.workspace_id`,
      [id],
      'auth_credential',
    );
    const row = rows[0];
    return row?.id ? row : null;
  },

  async revoke(db: Queryable, id: string): Promise<ApiKeyRow | null> {
    const { rows } = await db.query<ApiKeyRow>(
      `UPDATE api_keys SET revoked_at = coalesce(revoked_at, clock_timestamp()) WHERE id = $1 RETURNING ${COLUMNS}`,
      [id],
    );
    return rows[0] ?? null;
  },

  /** Shortens the life of a rotated key to the grace period (never lengthens it) and links its successor. */
  async retire(db: Queryable, id: string, successorId: string, graceMs: number): Promise<ApiKeyRow | null> {
    const { rows } = await db.query<ApiKeyRow>(
      `UPDATE api_keys
          SET rotated_to = $2,
              expires_at = least(coalesce(expires_at, 'infinity'), clock_timestamp() + $3::bigint * interval '1 millisecond')
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, successorId, graceMs],
    );
    return rows[0] ?? null;
  },

  async usage(db: Queryable, keyId: string, days: number): Promise<UsageRow[]> {
    const { rows } = await db.query<UsageRow>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, operation, requests::int AS requests,
              client_errors::int AS client_errors, server_errors::int AS server_errors, rate_limited::int AS rate_limited
         FROM api_key_usage
        WHERE key_id = $1 AND day > (now() AT TIME ZONE 'UTC')::date - $2::int
        ORDER BY day DESC, operation`,
      [keyId, days],
    );
    return rows;
  },

  async addUsage(db: Queryable, rows: UsageCount[]): Promise<void> {
    if (rows.length === 0) return;
    await db.query(
      `INSERT INTO api_key_usage AS u (key_id, day, operation, requests, client_errors, server_errors, rate_limited)
       SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
           AS t(key_id, day, operation, requests, client_errors, server_errors, rate_limited)
        WHERE EXISTS (SELECT 1 FROM api_keys k WHERE k.id = t.key_id)
       ON CONFLICT (key_id, day, operation) DO UPDATE
         SET requests = u.requests + EXCLUDED.requests,
             client_errors = u.client_errors + EXCLUDED.client_errors,
             server_errors = u.server_errors + EXCLUDED.server_errors,
             rate_limited = u.rate_limited + EXCLUDED.rate_limited`,
      [
        rows.map((r) => r.keyId),
        rows.map((r) => r.day),
        rows.map((r) => r.operation),
        rows.map((r) => r.requests),
        rows.map((r) => r.clientErrors),
        rows.map((r) => r.serverErrors),
        rows.map((r) => r.rateLimited),
      ],
    );
    const lastUsed = new Map<string, number>();
    for (const r of rows) lastUsed.set(r.keyId, Math.max(lastUsed.get(r.keyId) ?? 0, r.lastUsedMs));
    await db.query(
      `UPDATE api_keys k SET last_used_at = greatest(k.last_used_at, to_timestamp(t.ms / 1000.0))
         FROM unnest($1::text[], $2::float8[]) AS t(id, ms) WHERE k.id = t.id`,
      [[...lastUsed.keys()], [...lastUsed.values()]],
    );
  },
};
