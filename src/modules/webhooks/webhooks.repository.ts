// Webhook endpoints, their deliveries and the attempts log in SQL (db/migrations/0013). Secrets are
// read only by the statements that sign (the claim) or that hand a new one to the owner once.
import type { Database, Queryable } from '../../infra/database.js';
import { MAX_SEQ, type EventPosition } from '../events/event-ids.js';
import type { AttemptOutcome } from './http-target.js';

export type EndpointStatus = 'active' | 'disabled' | 'failing';

/** An endpoint as the owner sees it: never its secret, at most a hint of it. */
export interface EndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  /** null: every type its scopes read */
  events: string[] | null;
  scopes: string[];
  status: EndpointStatus;
  status_reason: string | null;
  secret_hint: string;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface EndpointWithBacklog extends EndpointRow {
  pending: number;
  oldest_pending_at: string | null;
  last_attempt_at: string | null;
  last_outcome: string | null;
}

export interface AttemptRow {
  message_id: string;
  event_type: string | null;
  attempted_at: string;
  outcome: AttemptOutcome;
  status: number | null;
  duration_ms: number;
  error: string | null;
}

/** A delivery this process holds the lease of, with what it takes to send it. */
export interface ClaimedDelivery {
  endpoint_id: string;
  workspace_id: string;
  stamp: string;
  seq: string;
  attempts: number;
  lease_token: string;
  url: string;
  secret: string;
  /** the previous secret while its grace period lasts */
  previous_secret: string | null;
  /** the event as the feed writes it, less its id; null when retention deleted it meanwhile */
  feed_json: string | null;
  /** an attempt to learn whether a receiver that kept failing answers again (docs/webhooks.md) */
  probe: boolean;
}

const ENDPOINT_COLUMNS = `e.id, e.workspace_id, e.url, e.event_types AS events, e.scopes, e.status, e.status_reason,
  left(e.secret, 10) || '…' AS secret_hint, api_time(e.previous_secret_expires_at) AS previous_secret_expires_at,
  api_time(e.created_at) AS created_at, api_time(e.updated_at) AS updated_at`;

const LAST_SEQ = MAX_SEQ.toString();

/**
 * Pending deliveries of one endpoint the claim looks at, in due order: enough to fill the
 * endpoint's room many times over when some are held back behind an earlier event of their
 * resource, and a bound on the claim's work whatever the backlog.
 */
const SCAN_PER_ENDPOINT = 64;

/**
 * The statement of `webhooksRepository.claim` ($1 take, $2 lease ms, $3 per endpoint, $4 per
 * workspace, $5 the salt of this claim's order of turns, $6 failures before probing); exported
 * for the test that checks its plan.
 */
export const CLAIM_SQL = `WITH in_flight AS (
         SELECT endpoint_id, count(*)::int AS n FROM webhook_deliveries
          WHERE acked_at IS NULL AND leased_until IS NOT NULL AND leased_until > now()
          GROUP BY endpoint_id
       ),
       -- every endpoint of the workspace counts, whatever its status (a paused one's attempts still run)
       workspace_in_flight AS (
         SELECT e.workspace_id, sum(f.n)::int AS n FROM in_flight f JOIN webhook_endpoints e ON e.id = f.endpoint_id
          GROUP BY e.workspace_id
       ),
       endpoints AS (
         SELECT e.id, e.workspace_id, coalesce(h.failures_in_a_row >= $6::int, false) AS probing,
                CASE WHEN h.failures_in_a_row >= $6::int THEN 1 ELSE $3::int END - coalesce(f.n, 0) AS room,
                $4::int - coalesce(wf.n, 0) AS workspace_room
           FROM webhook_endpoints e
           JOIN workspaces w ON w.id = e.workspace_id AND w.status = 'active'
           LEFT JOIN in_flight f ON f.endpoint_id = e.id
           LEFT JOIN workspace_in_flight wf ON wf.workspace_id = e.workspace_id
           LEFT JOIN webhook_endpoint_health h ON h.endpoint_id = e.id
          WHERE e.status = 'active' AND (h.paused_until IS NULL OR h.paused_until <= now())
       ),
       due AS (
         SELECT ep.id AS endpoint_id, ep.workspace_id, ep.workspace_room, ep.probing, c.stamp, c.seq,
                row_number() OVER (PARTITION BY ep.id ORDER BY c.next_attempt_at, c.stamp, c.seq) AS nth_of_endpoint
           FROM endpoints ep
           CROSS JOIN LATERAL (
             SELECT d.stamp, d.seq, d.next_attempt_at
               FROM (SELECT d.stamp, d.seq, d.next_attempt_at, d.resource_type, d.resource_id, d.leased_until
                       FROM webhook_deliveries d
                      WHERE d.endpoint_id = ep.id AND d.acked_at IS NULL AND (ep.probing OR d.next_attempt_at <= now())
                      ORDER BY d.next_attempt_at, d.stamp, d.seq
                      LIMIT ${SCAN_PER_ENDPOINT}) d
              WHERE (d.leased_until IS NULL OR d.leased_until <= now())
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                                 WHERE p.endpoint_id = ep.id AND p.resource_type = d.resource_type
                                   AND p.resource_id = d.resource_id AND p.acked_at IS NULL
                                   AND (p.stamp, p.seq) < (d.stamp, d.seq)
                                OFFSET 0)
              ORDER BY d.next_attempt_at, d.stamp, d.seq
              LIMIT greatest(ep.room, 0)
           ) c
          WHERE ep.room > 0 AND ep.workspace_room > 0
       ),
       in_turn AS (
         SELECT endpoint_id, workspace_id, workspace_room, probing, stamp, seq,
                row_number() OVER (PARTITION BY workspace_id
                                   ORDER BY nth_of_endpoint, hashtext(endpoint_id::text || $5)) AS nth_of_workspace
           FROM due
       ),
       chosen AS (
         SELECT endpoint_id, workspace_id, probing, stamp, seq FROM in_turn
          WHERE nth_of_workspace <= workspace_room
          ORDER BY nth_of_workspace, hashtext(workspace_id::text || $5)
          LIMIT $1
       ),
       -- a row another statement holds (a replay, an endpoint being deleted) is left for a later
       -- claim rather than waited for while every process's claims wait behind this one
       picked AS (
         SELECT chosen.* FROM chosen
           JOIN webhook_deliveries l ON l.endpoint_id = chosen.endpoint_id AND l.stamp = chosen.stamp AND l.seq = chosen.seq
            FOR UPDATE OF l SKIP LOCKED
       )
       UPDATE webhook_deliveries t
          SET leased_until = now() + $2::int * interval '1 millisecond', lease_token = gen_random_uuid()
         FROM picked
         JOIN webhook_endpoints e ON e.id = picked.endpoint_id
         LEFT JOIN events ev ON ev.workspace_id = picked.workspace_id AND ev.stamp = picked.stamp AND ev.seq = picked.seq
        WHERE t.endpoint_id = picked.endpoint_id AND t.stamp = picked.stamp AND t.seq = picked.seq
          AND t.acked_at IS NULL
       RETURNING t.endpoint_id, picked.workspace_id, t.stamp::text AS stamp, t.seq::text AS seq, t.attempts,
                 t.lease_token, e.url, e.secret,
                 CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END AS previous_secret,
                 ev.feed_json, picked.probing AS probe`;

export interface ClaimPolicy {
  /** attempts in flight per endpoint, across every process */
  endpoint: number;
  /** attempts in flight per workspace, across every process */
  workspace: number;
  /** failed attempts in a row after which an endpoint is tried with one attempt at a time */
  probeAfterFailures: number;
}

export const claimParams = (take: number, leaseMs: number, policy: ClaimPolicy) => [
  take,
  leaseMs,
  policy.endpoint,
  policy.workspace,
  String(Math.random()),
  policy.probeAfterFailures,
];

export const webhooksRepository = {
  /** A new endpoint, positioned at the feed's current end: it receives the changes made after it. */
  async insert(
    db: Queryable,
    e: { workspaceId: string; url: string; eventTypes: string[] | null; scopes: string[]; secret: string },
  ): Promise<EndpointRow> {
    const { rows } = await db.query<EndpointRow>(
      `WITH e AS (
         INSERT INTO webhook_endpoints (workspace_id, url, event_types, scopes, secret, position_stamp, position_seq)
         SELECT $1, $2, $3, $4, $5,
                coalesce((SELECT stamp_position(last_stamp) FROM workspace_clocks WHERE workspace_id = $1), 0), $6
         RETURNING *
       ) SELECT ${ENDPOINT_COLUMNS} FROM e`,
      [e.workspaceId, e.url, e.eventTypes, e.scopes, e.secret, LAST_SEQ],
    );
    return rows[0]!;
  },

  async find(db: Queryable, id: string): Promise<EndpointRow | null> {
    const { rows } = await db.query<EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints e WHERE e.id = $1`,
      [id],
    );
    return rows[0] ?? null;
  },

  async list(db: Queryable, workspaceId: string | null): Promise<EndpointWithBacklog[]> {
    const { rows } = await db.query<EndpointWithBacklog>(
      `SELECT ${ENDPOINT_COLUMNS},
              (SELECT count(*)::int FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.acked_at IS NULL) AS pending,
              (SELECT api_time(min(d.created_at)) FROM webhook_deliveries d
                WHERE d.endpoint_id = e.id AND d.acked_at IS NULL) AS oldest_pending_at,
              a.attempted_at AS last_attempt_at, a.outcome AS last_outcome
         FROM webhook_endpoints e
         LEFT JOIN LATERAL (SELECT api_time(attempted_at) AS attempted_at, outcome FROM webhook_attempts
                             WHERE endpoint_id = e.id ORDER BY id DESC LIMIT 1) a ON true
        WHERE $1::uuid IS NULL OR e.workspace_id = $1
        ORDER BY e.workspace_id, e.created_at, e.id`,
      [workspaceId],
    );
    return rows;
  },

  /** The owner's pause; or delivery's verdict (failing, disabled on 410) on an endpoint still active. */
  async setStatus(
    db: Queryable,
    id: string,
    status: EndpointStatus,
    reason: string | null,
    onlyIfActive = false,
  ): Promise<EndpointRow | null> {
    const { rows } = await db.query<EndpointRow>(
      `UPDATE webhook_endpoints e SET status = $2, status_reason = $3
        WHERE e.id = $1 AND (NOT $4 OR e.status = 'active')
        RETURNING ${ENDPOINT_COLUMNS}`,
      [id, status, reason, onlyIfActive],
    );
    return rows[0] ?? null;
  },

  /** Every pending delivery due now with a fresh schedule (the endpoint was resumed). */
  async rescheduleAllPending(db: Queryable, id: string): Promise<void> {
    await db.query(
      `UPDATE webhook_deliveries SET attempts = 0, next_attempt_at = now()
        WHERE endpoint_id = $1 AND acked_at IS NULL`,
      [id],
    );
  },

  async remove(db: Queryable, id: string): Promise<EndpointRow | null> {
    const { rows } = await db.query<EndpointRow>(
      `DELETE FROM webhook_endpoints e WHERE e.id = $1 RETURNING ${ENDPOINT_COLUMNS}`,
      [id],
    );
    return rows[0] ?? null;
  },

  /** The new secret signs from now on; the current one too, until the grace period ends. */
  async rotateSecret(db: Queryable, id: string, secret: string, graceMs: number): Promise<EndpointRow | null> {
    const { rows } = await db.query<EndpointRow>(
      `UPDATE webhook_endpoints e
          SET previous_secret = CASE WHEN $3::bigint > 0 THEN e.secret END,
              previous_secret_expires_at = CASE WHEN $3::bigint > 0 THEN now() + $3::bigint * interval '1 millisecond' END,
              secret = $2
        WHERE e.id = $1
        RETURNING ${ENDPOINT_COLUMNS}`,
      [id, secret, graceMs],
    );
    return rows[0] ?? null;
  },

  /** The secrets that sign a test delivery now: the current one, and the previous during its grace. */
  async signingSecrets(db: Queryable, id: string): Promise<string[]> {
    const { rows } = await db.query<{ secret: string; previous_secret: string | null }>(
      `SELECT secret, CASE WHEN previous_secret_expires_at > now() THEN previous_secret END AS previous_secret
         FROM webhook_endpoints WHERE id = $1`,
      [id],
    );
    const row = rows[0];
    return row ? [row.secret, ...(row.previous_secret ? [row.previous_secret] : [])] : [];
  },

  async recentAttempts(db: Queryable, id: string, limit: number): Promise<AttemptRow[]> {
    const { rows } = await db.query<AttemptRow>(
      `SELECT message_id, event_type, api_time(attempted_at) AS attempted_at, outcome, status, duration_ms, error
         FROM webhook_attempts WHERE endpoint_id = $1 ORDER BY id DESC LIMIT $2`,
      [id, limit],
    );
    return rows;
  },

  async recordAttempt(
    db: Queryable,
    a: {
      endpointId: string;
      messageId: string;
      eventType: string | null;
      outcome: AttemptOutcome;
      status: number | null;
      durationMs: number;
      error: string | null;
    },
  ): Promise<void> {
    await db.query(
      `INSERT INTO webhook_attempts (endpoint_id, message_id, event_type, outcome, status, duration_ms, error)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [a.endpointId, a.messageId, a.eventType, a.outcome, a.status, a.durationMs, a.error],
      'webhook_attempt_record',
    );
  },

  /**
   * Every endpoint, whatever its status: the feed is turned into deliveries for a disabled or
   * failing endpoint too (only the claim waits for it to be active), so its backlog shows in
   * `webhooks list` and in the oldest-pending metric. The loop does nothing else while there is none.
   * With `workspaceIds`, only theirs.
   */
  async endpointIds(db: Queryable, workspaceIds?: string[]): Promise<string[]> {
    const { rows } = workspaceIds
      ? await db.query<{ id: string }>(
          'SELECT id FROM webhook_endpoints WHERE workspace_id = ANY($1::uuid[])',
          [workspaceIds],
          'webhook_endpoint_ids_of',
        )
      : await db.query<{ id: string }>('SELECT id FROM webhook_endpoints', [], 'webhook_endpoint_ids');
    return rows.map((r) => r.id);
  },

  /**
   * The endpoint to enqueue for, locked for this transaction; null when another process is
   * enqueuing for it. NO KEY UPDATE: the lock that rows referring to the endpoint take (a delivery
   * or an attempt being recorded, KEY SHARE) does not conflict with it, so recording an attempt
   * never makes a turn skip the endpoint.
   */
  async lockForEnqueue(
    db: Queryable,
    id: string,
  ): Promise<{ workspace_id: string; scopes: string[]; event_types: string[] | null; position: EventPosition } | null> {
    const { rows } = await db.query<{
      workspace_id: string;
      scopes: string[];
      event_types: string[] | null;
      stamp: string;
      seq: string;
    }>(
      `SELECT workspace_id, scopes, event_types, position_stamp::text AS stamp, position_seq::text AS seq
         FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE SKIP LOCKED`,
      [id],
      'webhook_lock_for_enqueue',
    );
    const row = rows[0];
    return row ? { ...row, position: [row.stamp, row.seq] } : null;
  },

  /**
   * Turns up to `take` events after `after` (of these resource types, and event types when given)
   * into deliveries, in one statement: one snapshot for the events and the workspace's clock.
   * Returns how many were found, the last one's position, and the clock: when fewer than `take`
   * were found, every event of the feed not yet visible will be placed after the clock (a writer
   * holds the clock until it commits), so the position may move up to it.
   */
  async enqueue(
    db: Queryable,
    endpointId: string,
    workspaceId: string,
    after: EventPosition,
    resourceTypes: readonly string[],
    eventTypes: readonly string[] | null,
    take: number,
  ): Promise<{ found: number; last: EventPosition | null; clock: string }> {
    const { rows } = await db.query<{ found: number; stamp: string | null; seq: string | null; clock: string }>(
      `WITH picked AS (
         SELECT stamp, seq, resource_type, resource_id FROM events
          WHERE workspace_id = $2 AND (stamp, seq) > ($3::bigint, $4::bigint)
            AND resource_type = ANY($5::text[]) AND ($6::text[] IS NULL OR type = ANY($6::text[]))
          ORDER BY stamp, seq LIMIT $7
       ), inserted AS (
         INSERT INTO webhook_deliveries (endpoint_id, stamp, seq, resource_type, resource_id, next_attempt_at)
         SELECT $1, p.stamp, p.seq, p.resource_type, p.resource_id,
                -- not before an earlier event of its resource that waits for a retry
                greatest(now(), (SELECT max(w.next_attempt_at) FROM webhook_deliveries w
                                  WHERE w.endpoint_id = $1 AND w.resource_type = p.resource_type
                                    AND w.resource_id = p.resource_id AND w.acked_at IS NULL))
           FROM picked p
         ON CONFLICT (endpoint_id, stamp, seq) DO NOTHING
       ), last AS (
         SELECT stamp, seq FROM picked ORDER BY stamp DESC, seq DESC LIMIT 1
       )
       SELECT (SELECT count(*)::int FROM picked) AS found,
              (SELECT stamp::text FROM last) AS stamp, (SELECT seq::text FROM last) AS seq,
              coalesce((SELECT stamp_position(last_stamp) FROM workspace_clocks WHERE workspace_id = $2), 0)::text AS clock`,
      [endpointId, workspaceId, after[0], after[1], resourceTypes, eventTypes, take],
      'webhook_enqueue',
    );
    const row = rows[0]!;
    return {
      found: row.found,
      last: row.stamp !== null && row.seq !== null ? [row.stamp, row.seq] : null,
      clock: row.clock,
    };
  },

  async movePosition(db: Queryable, id: string, position: EventPosition): Promise<void> {
    await db.query(
      'UPDATE webhook_endpoints SET position_stamp = $2, position_seq = $3 WHERE id = $1',
      [id, position[0], position[1]],
      'webhook_move_position',
    );
  },

  /**
   * Leases up to `take` due deliveries for `leaseMs`, serving endpoints and workspaces in turn
   * (docs/webhooks.md, "Fair delivery"). A delivery is due when it is not acknowledged, its time
   * has come, no other attempt holds it, its endpoint and workspace are active, and no earlier
   * event of the same resource is still pending for the endpoint: so one resource's events are
   * delivered in feed order whichever process holds them, while other resources go on.
   *
   * Each endpoint has at most `policy.endpoint` attempts in flight and each workspace at most
   * `policy.workspace`, counted across every process: the claims of all processes take turns (a
   * transaction-scoped advisory lock, not waited for: null when another claim holds it), so each
   * one counts the leases of the others. Among the
   * due deliveries, every workspace gets its first before any gets its second, and so on; ties go
   * in an order drawn anew at each claim.
   *
   * An endpoint whose last `policy.probeAfterFailures` attempts or more failed is not tried while
   * it is paused, then with one attempt at a time, a probe: its earliest pending delivery, due or
   * not (the endpoint backs off as a whole, not event by event).
   *
   * The shape fixes the plan whatever the statistics say: per active endpoint, a scan of its
   * index of pending deliveries in due order that stops after `SCAN_PER_ENDPOINT` rows (due ones
   * held back by an earlier event of their resource included), and the ordering check as a
   * subquery run per candidate (OFFSET 0 keeps it from becoming a join over the whole backlog).
   */
  async claim(db: Database, take: number, leaseMs: number, policy: ClaimPolicy): Promise<ClaimedDelivery[] | null> {
    return db.transaction(async (tx) => {
      // Not waited for: a process whose claim finds another's under way claims again a moment later.
      const { rows: turn } = await tx.query<{ mine: boolean }>(
        "SELECT pg_try_advisory_xact_lock(hashtextextended('webhook_claim', 0)) AS mine",
        [],
        'webhook_claim_turn',
      );
      if (!turn[0]!.mine) return null;
      const { rows } = await tx.query<ClaimedDelivery>(CLAIM_SQL, claimParams(take, leaseMs, policy), 'webhook_claim');
      return rows;
    });
  },

  /**
   * A 2xx: acknowledged for good (only `replay` sends it again); `acked` is false when the lease
   * was lost. The endpoint's record of failures is dropped; if it had failed `recoverAfter` times
   * in a row or more (it was down), every pending delivery waiting for a retry is due now, with a
   * fresh schedule (`recovered`), so a receiver back from downtime gets its backlog at once rather than at each
   * event's next retry. Fewer failures between 2xx answers are events the receiver refuses, which
   * keep their schedules. The attempt goes into the history in the same statement: one round
   * trip, atomic without a transaction.
   */
  async acknowledge(
    db: Queryable,
    d: ClaimedDelivery,
    a: { status: number; durationMs: number; messageId: string; eventType: string | null },
    recoverAfter: number,
  ): Promise<{ acked: boolean; recovered: number }> {
    const { rows } = await db.query<{ acked: number; recovered: number }>(
      `WITH acked AS (
         UPDATE webhook_deliveries
            SET acked_at = now(), leased_until = NULL, lease_token = NULL, attempts = attempts + 1,
                last_status = $5, last_error = NULL, last_duration_ms = $6
          WHERE endpoint_id = $1 AND stamp = $2 AND seq = $3 AND lease_token = $4
         RETURNING endpoint_id
       ),
       healed AS (
         DELETE FROM webhook_endpoint_health h USING acked WHERE h.endpoint_id = acked.endpoint_id
         RETURNING h.endpoint_id, h.failures_in_a_row
       ),
       recovered AS (
         UPDATE webhook_deliveries r SET next_attempt_at = now(), attempts = 0
           FROM healed
          WHERE healed.failures_in_a_row >= $7::int
            AND r.endpoint_id = healed.endpoint_id AND r.acked_at IS NULL AND r.next_attempt_at > now()
            AND (r.stamp, r.seq) <> ($2::bigint, $3::bigint)
         RETURNING 1
       ),
       logged AS (
         INSERT INTO webhook_attempts (endpoint_id, message_id, event_type, outcome, status, duration_ms)
         VALUES ($1, $8, $9, 'acked', $5, $6)
       )
       SELECT (SELECT count(*) FROM acked)::int AS acked, (SELECT count(*) FROM recovered)::int AS recovered`,
      [d.endpoint_id, d.stamp, d.seq, d.lease_token, a.status, a.durationMs, recoverAfter, a.messageId, a.eventType],
      'webhook_acknowledge',
    );
    return { acked: rows[0]!.acked > 0, recovered: rows[0]!.recovered };
  },

  /**
   * A failed attempt counted against its endpoint. At the `pause.after`-th failure in a row the
   * endpoint is paused for `pause.firstMs`; each failed probe after that doubles the pause, up to
   * `pause.maxMs` (failures of attempts that were in flight together count once for the pause).
   * Answers the failures in a row and since when.
   */
  async recordFailure(
    db: Queryable,
    endpointId: string,
    probe: boolean,
    pause: { after: number; firstMs: number; maxMs: number },
  ): Promise<{ failures: number; since: string }> {
    // The endpoint's pause after this failure (null: not paused), for both columns of one SET.
    const pauseMs = `CASE WHEN $2::boolean THEN least(coalesce(h.pause_ms, $4::int) * 2, $5::int)
                          WHEN h.failures_in_a_row + 1 >= $3::int THEN coalesce(h.pause_ms, $4::int) END`;
    const { rows } = await db.query<{ failures: number; since: string }>(
      `INSERT INTO webhook_endpoint_health AS h (endpoint_id, failures_in_a_row, failing_since, pause_ms, paused_until)
       SELECT $1, 1, now(), p.ms, now() + p.ms * interval '1 millisecond'
         FROM (SELECT CASE WHEN $3::int <= 1 THEN $4::int END AS ms) p
       ON CONFLICT (endpoint_id) DO UPDATE
          SET failures_in_a_row = h.failures_in_a_row + 1,
              pause_ms = ${pauseMs},
              paused_until = now() + (${pauseMs}) * interval '1 millisecond'
       RETURNING failures_in_a_row AS failures, api_time(failing_since) AS since`,
      [endpointId, probe, pause.after, pause.firstMs, pause.maxMs],
      'webhook_record_failure',
    );
    return rows[0]!;
  },

  /**
   * A failed probe: the delivery keeps its attempts (the endpoint's pause governs meanwhile) and
   * goes behind the endpoint's other pending deliveries, so the next probe tries another one: an
   * event the receiver refuses for its content does not stand for the whole endpoint.
   */
  async releaseAfterProbe(
    db: Queryable,
    d: ClaimedDelivery,
    r: { status: number | null; error: string | null; durationMs: number },
  ): Promise<boolean> {
    const { rowCount } = await db.query(
      `UPDATE webhook_deliveries
          SET leased_until = NULL, lease_token = NULL,
              next_attempt_at = greatest(now(), (SELECT max(o.next_attempt_at) FROM webhook_deliveries o
                                                  WHERE o.endpoint_id = $1 AND o.acked_at IS NULL)) + interval '1 millisecond',
              last_status = $5, last_error = $6, last_duration_ms = $7
        WHERE endpoint_id = $1 AND stamp = $2 AND seq = $3 AND lease_token = $4`,
      [d.endpoint_id, d.stamp, d.seq, d.lease_token, r.status, r.error, r.durationMs],
      'webhook_release_after_probe',
    );
    return rowCount > 0;
  },

  /**
   * A failed attempt: the next one at `retryInMs` (null: none is scheduled; due as soon as the
   * endpoint resumes). The later pending events of the same resource cannot go before it: they are
   * moved to its time, so they never fill the claim's view of the endpoint while they wait.
   */
  async reschedule(
    db: Queryable,
    d: ClaimedDelivery,
    r: { status: number | null; error: string | null; durationMs: number; retryInMs: number | null },
  ): Promise<boolean> {
    const { rows } = await db.query<{ held: number }>(
      `WITH head AS (
         UPDATE webhook_deliveries
            SET attempts = attempts + 1, leased_until = NULL, lease_token = NULL,
                next_attempt_at = now() + coalesce($5::int, 0) * interval '1 millisecond',
                last_status = $6, last_error = $7, last_duration_ms = $8
          WHERE endpoint_id = $1 AND stamp = $2 AND seq = $3 AND lease_token = $4
         RETURNING endpoint_id, resource_type, resource_id, stamp, seq, next_attempt_at
       ),
       behind AS (
         UPDATE webhook_deliveries l SET next_attempt_at = head.next_attempt_at
           FROM head
          WHERE l.endpoint_id = head.endpoint_id AND l.resource_type = head.resource_type
            AND l.resource_id = head.resource_id AND l.acked_at IS NULL
            AND (l.stamp, l.seq) > (head.stamp, head.seq) AND l.next_attempt_at < head.next_attempt_at
       )
       SELECT count(*)::int AS held FROM head`,
      [d.endpoint_id, d.stamp, d.seq, d.lease_token, r.retryInMs, r.status, r.error, r.durationMs],
      'webhook_reschedule',
    );
    return rows[0]!.held > 0;
  },

  /** Lets another process (or this one) take a delivery at once: an attempt this process gave up before sending. */
  async release(db: Queryable, d: ClaimedDelivery): Promise<void> {
    await db.query(
      `UPDATE webhook_deliveries SET leased_until = NULL, lease_token = NULL
        WHERE endpoint_id = $1 AND stamp = $2 AND seq = $3 AND lease_token = $4`,
      [d.endpoint_id, d.stamp, d.seq, d.lease_token],
    );
  },

  /**
   * Replay: the endpoint's position goes back to `after`, every delivery after it is pending again
   * (due now, a fresh schedule), and pending ones at or before it are dropped — the owner asked to
   * start after it. Events after it that have no delivery row any more are enqueued again by the
   * loop from the new position. Returns how many deliveries were made pending again.
   */
  async replay(db: Queryable, id: string, after: EventPosition): Promise<number> {
    await db.query(
      `UPDATE webhook_endpoints SET position_stamp = $2, position_seq = $3, status = 'active', status_reason = NULL
        WHERE id = $1`,
      [id, after[0], after[1]],
    );
    await db.query(
      `DELETE FROM webhook_deliveries WHERE endpoint_id = $1 AND acked_at IS NULL AND (stamp, seq) <= ($2::bigint, $3::bigint)`,
      [id, after[0], after[1]],
    );
    const { rowCount } = await db.query(
      `UPDATE webhook_deliveries
          SET acked_at = NULL, attempts = 0, next_attempt_at = now(), leased_until = NULL, lease_token = NULL,
              created_at = now()
        WHERE endpoint_id = $1 AND (stamp, seq) > ($2::bigint, $3::bigint)`,
      [id, after[0], after[1]],
    );
    return rowCount;
  },

  /** Locks the endpoint row (replay, against a concurrent enqueue). */
  async lock(db: Queryable, id: string): Promise<{ workspace_id: string; scopes: string[] } | null> {
    const { rows } = await db.query<{ workspace_id: string; scopes: string[] }>(
      'SELECT workspace_id, scopes FROM webhook_endpoints WHERE id = $1 FOR UPDATE',
      [id],
    );
    return rows[0] ?? null;
  },

  /** Age in seconds of each active endpoint's oldest pending delivery (0 when none), for /metrics. */
  async oldestPending(db: Queryable): Promise<{ endpoint_id: string; seconds: number }[]> {
    const { rows } = await db.query<{ endpoint_id: string; seconds: number }>(
      `SELECT e.id AS endpoint_id,
              coalesce(extract(epoch FROM now() - (SELECT min(d.created_at) FROM webhook_deliveries d
                                                    WHERE d.endpoint_id = e.id AND d.acked_at IS NULL)), 0)::float8 AS seconds
         FROM webhook_endpoints e`,
      [],
      'webhook_oldest_pending',
    );
    return rows;
  },

  /** Acknowledged deliveries and attempts older than `days`: history, not state. */
  async purgeOlderThan(db: Queryable, days: number): Promise<void> {
    await db.query(`DELETE FROM webhook_deliveries WHERE acked_at < now() - $1::int * interval '1 day'`, [days]);
    await db.query(`DELETE FROM webhook_attempts WHERE attempted_at < now() - $1::int * interval '1 day'`, [days]);
  },

  /** The event id secret of the installation, or null when no event id was ever issued. */
  async eventIdSecret(db: Queryable): Promise<string | null> {
    const { rows } = await db.query<{ value: string }>(
      "SELECT value FROM instance_settings WHERE name = 'event_id_secret'",
    );
    return rows[0]?.value ?? null;
  },
};
