// Webhook endpoints, their deliveries and the attempts log in SQL (db/migrations/0013). Secrets are
// read only by the statements that sign (the claim) or that hand a new one to the owner once.
//
// Statements that read or write webhook_deliveries are not prepared (no statement name): each run
// is planned with its values and the table's size at that moment. The queue can grow from a few
// rows to 100,000 within seconds, long before autovacuum analyzes it again, and a plan kept from
// when it was small (a sequential scan, or a scan of an endpoint's whole backlog) would read every
// row at each run (test/webhooks-claim.test.ts).
import type { Database, Queryable, Statement } from '../../infra/database.js';
import { instanceSetting } from '../../infra/instance-settings.js';
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
  /** failed attempts since its last 2xx (0: it answers) */
  failures_in_a_row: number;
  failing_since: string | null;
  /** while it is paused after failing (docs/webhooks.md, "When a receiver is down"): until when */
  paused_until: string | null;
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

/** A 2xx to record: the delivery (with its lease) and what the attempt gave. */
export interface Acknowledgement {
  delivery: ClaimedDelivery;
  status: number;
  durationMs: number;
  messageId: string;
  eventType: string | null;
}

/** Pending deliveries of an endpoint made due at once because it answered again after being down. */
export interface Recovered {
  endpoint_id: string;
  recovered: number;
}

const ENDPOINT_COLUMNS = `e.id, e.workspace_id, e.url, e.event_types AS events, e.scopes, e.status, e.status_reason,
  left(e.secret, 10) || '…' AS secret_hint, api_time(e.previous_secret_expires_at) AS previous_secret_expires_at,
  api_time(e.created_at) AS created_at, api_time(e.updated_at) AS updated_at`;

const LAST_SEQ = MAX_SEQ.toString();

/**
 * Pending deliveries of one endpoint the claim looks at, in due order: enough to fill the
 * endpoint's room (its slots, each with a run of deliveries) when some are held back behind an
 * earlier event of their resource, and a bound on the claim's work whatever the backlog.
 */
const SCAN_PER_ENDPOINT = 256;

/**
 * The due deliveries of one endpoint, in due order, at most `limit` (SQL expressions: the
 * endpoint's id; whether it is being probed, when its earliest pending delivery is due whatever
 * its time; the limit). Due: not acknowledged, its time has come, no lease holds it, and no earlier
 * event of its resource is pending for the endpoint, so one resource's events go in feed order
 * whichever slot or process sends them. One home for both statements that lease deliveries.
 *
 * Every statement that sets a due time keeps one order: within a resource, pending deliveries are
 * due in feed order (an event is enqueued no earlier than the pending ones of its resource, and a
 * delivery put off carries the later ones of its resource with it, `carryResourceAlong`). So the
 * earlier pending events of a candidate's resource come before it in the endpoint's due order, in
 * the same scan: the check needs no lookup per candidate, and the plan is one range scan of the
 * endpoint's index in due order that stops after `SCAN_PER_ENDPOINT` rows, whatever the statistics
 * (with `LEASE_PLAN_SETTINGS`).
 */
const dueOf = (endpoint: string, probing: string, limit: string) => `
             SELECT d.stamp, d.seq, d.next_attempt_at
               FROM (SELECT d.stamp, d.seq, d.next_attempt_at, d.leased_until,
                            row_number() OVER (PARTITION BY d.resource_type, d.resource_id
                                               ORDER BY d.next_attempt_at, d.stamp, d.seq) AS nth_of_resource
                       FROM (SELECT d.stamp, d.seq, d.next_attempt_at, d.resource_type, d.resource_id, d.leased_until
                               FROM webhook_deliveries d
                              WHERE d.endpoint_id = ${endpoint} AND d.acked_at IS NULL
                                AND (${probing} OR d.next_attempt_at <= now())
                              ORDER BY d.next_attempt_at, d.stamp, d.seq
                              LIMIT ${SCAN_PER_ENDPOINT}) d) d
              WHERE d.nth_of_resource = 1 AND (d.leased_until IS NULL OR d.leased_until <= now())
              ORDER BY d.next_attempt_at, d.stamp, d.seq
              LIMIT ${limit}`;

/**
 * The pending deliveries of the resource of each row of `moved` (a CTE of deliveries just given a
 * later due time: endpoint_id, resource_type, resource_id, stamp, seq, next_attempt_at) that come
 * after it in the feed are moved to its time when due earlier, so a resource's deliveries stay due
 * in feed order (`dueOf`).
 */
const carryResourceAlong = (moved: string) => `
         UPDATE webhook_deliveries l SET next_attempt_at = ${moved}.next_attempt_at
           FROM ${moved}
          WHERE l.endpoint_id = ${moved}.endpoint_id AND l.resource_type = ${moved}.resource_type
            AND l.resource_id = ${moved}.resource_id AND l.acked_at IS NULL
            AND (l.stamp, l.seq) > (${moved}.stamp, ${moved}.seq) AND l.next_attempt_at < ${moved}.next_attempt_at`;

/** What a leased delivery is sent with (the final statement of both lease statements). */
const LEASED_COLUMNS = `t.endpoint_id, picked.workspace_id, t.stamp::text AS stamp, t.seq::text AS seq, t.attempts,
                 t.lease_token, e.url, e.secret,
                 CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END AS previous_secret,
                 ev.feed_json`;

/**
 * The statement of `webhooksRepository.claim` ($1 slots to fill, $2 lease ms, $3 slots per
 * endpoint, $4 slots per workspace, $5 the salt of this claim's order of turns, $6 failures before
 * probing, $7 deliveries per slot of an endpoint that answers); exported for the test that checks
 * its plan.
 *
 * A slot is one attempt in flight at a time: its deliveries share one lease token and are sent
 * one after another, so the attempts in flight of an endpoint or a workspace are the distinct
 * tokens of its leased deliveries.
 */
export const CLAIM_SQL = `WITH in_flight AS (
         SELECT endpoint_id, count(DISTINCT lease_token)::int AS n FROM webhook_deliveries
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
                -- runs only for an endpoint whose last attempt answered 2xx
                CASE WHEN h.endpoint_id IS NULL THEN $7::int ELSE 1 END AS run,
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
                -- dealt out to the endpoint's free slots in turn, so a few due deliveries go out side by side
                (row_number() OVER (PARTITION BY ep.id ORDER BY c.next_attempt_at, c.stamp, c.seq) - 1) % ep.room + 1
                  AS slot_of_endpoint
           FROM endpoints ep
           CROSS JOIN LATERAL (${dueOf('ep.id', 'ep.probing', 'greatest(ep.room, 0) * ep.run')}) c
          WHERE ep.room > 0 AND ep.workspace_room > 0
       ),
       in_turn AS (
         SELECT endpoint_id, workspace_id, workspace_room, probing, stamp, seq, slot_of_endpoint,
                dense_rank() OVER (PARTITION BY workspace_id
                                   ORDER BY slot_of_endpoint, hashtext(endpoint_id::text || $5)) AS slot_of_workspace
           FROM due
       ),
       turns AS (
         SELECT *, dense_rank() OVER (ORDER BY slot_of_workspace, hashtext(workspace_id::text || $5),
                                               hashtext(endpoint_id::text || $5), slot_of_endpoint) AS turn
           FROM in_turn
          WHERE slot_of_workspace <= workspace_room
       ),
       -- one lease token per slot (a volatile function: the CTE is computed once)
       slots AS (
         SELECT endpoint_id, slot_of_endpoint, gen_random_uuid() AS token
           FROM (SELECT DISTINCT endpoint_id, slot_of_endpoint FROM turns WHERE turn <= $1) s
       ),
       -- a row another statement holds (a replay, an endpoint being deleted) is left for a later
       -- claim rather than waited for while every process's claims wait behind this one
       picked AS (
         SELECT t.endpoint_id, t.workspace_id, t.probing, t.stamp, t.seq, s.token, l.ctid AS row_id FROM turns t
           JOIN slots s USING (endpoint_id, slot_of_endpoint)
           JOIN webhook_deliveries l ON l.endpoint_id = t.endpoint_id AND l.stamp = t.stamp AND l.seq = t.seq
            FOR UPDATE OF l SKIP LOCKED
       )
       UPDATE webhook_deliveries t
          SET leased_until = now() + $2::int * interval '1 millisecond', lease_token = picked.token
         FROM picked
         JOIN webhook_endpoints e ON e.id = picked.endpoint_id
         LEFT JOIN events ev ON ev.workspace_id = picked.workspace_id AND ev.stamp = picked.stamp AND ev.seq = picked.seq
        -- the row locked above, found by its place whatever the statistics say of the indexes
        WHERE t.ctid = picked.row_id AND t.acked_at IS NULL
       RETURNING ${LEASED_COLUMNS}, picked.probing AS probe`;

/**
 * The statement of `webhooksRepository.refill` ($1 endpoint, $2 the slot's lease token, $3
 * deliveries to add, $4 lease ms): the slot's next run, leased under its own token, so the
 * endpoint's attempts in flight stay as many as they were. Only while the endpoint and its
 * workspace are active, its last attempt answered 2xx (no record of failures), and the slot still
 * holds a delivery it has not acknowledged: a slot whose deliveries were all recorded no longer
 * counts against the caps, and another claim may have taken its place.
 */
export const REFILL_SQL = `WITH ep AS (
         SELECT e.id, e.workspace_id FROM webhook_endpoints e
           JOIN workspaces w ON w.id = e.workspace_id AND w.status = 'active'
          WHERE e.id = $1::uuid AND e.status = 'active'
            AND NOT EXISTS (SELECT 1 FROM webhook_endpoint_health h WHERE h.endpoint_id = e.id)
            AND EXISTS (SELECT 1 FROM webhook_deliveries k
                         WHERE k.endpoint_id = e.id AND k.lease_token = $2::uuid AND k.acked_at IS NULL
                           AND k.leased_until > now())
       ),
       picked AS (
         SELECT ep.workspace_id, c.stamp, c.seq, l.ctid AS row_id FROM ep
          CROSS JOIN LATERAL (${dueOf('ep.id', 'false', '$3::int')}) c
           JOIN webhook_deliveries l ON l.endpoint_id = ep.id AND l.stamp = c.stamp AND l.seq = c.seq
            FOR UPDATE OF l SKIP LOCKED
       )
       UPDATE webhook_deliveries t
          SET leased_until = now() + $4::int * interval '1 millisecond', lease_token = $2::uuid
         FROM picked
         JOIN webhook_endpoints e ON e.id = $1::uuid
         LEFT JOIN events ev ON ev.workspace_id = picked.workspace_id AND ev.stamp = picked.stamp AND ev.seq = picked.seq
        WHERE t.ctid = picked.row_id AND t.acked_at IS NULL
       RETURNING ${LEASED_COLUMNS}, false AS probe`;

export interface ClaimPolicy {
  /** attempts in flight (slots) per endpoint, across every process */
  endpoint: number;
  /** attempts in flight (slots) per workspace, across every process */
  workspace: number;
  /** failed attempts in a row after which an endpoint is tried with one attempt at a time */
  probeAfterFailures: number;
  /** deliveries a slot of an endpoint that answers takes, sent one after another */
  run: number;
}

export const claimParams = (slots: number, leaseMs: number, policy: ClaimPolicy) => [
  slots,
  leaseMs,
  policy.endpoint,
  policy.workspace,
  String(Math.random()),
  policy.probeAfterFailures,
  policy.run,
];

/**
 * Plan settings for the transaction of a statement that leases (a select list item). No bitmap
 * scans: when PostgreSQL expects a handful of pending deliveries per endpoint (a table never
 * analyzed, or analyzed while few were pending), a bitmap scan of the endpoint's index and a sort
 * look as cheap as `dueOf`'s scan in due order, and read the endpoint's whole backlog. Without
 * them, the scan in due order, which needs no sort, is the cheapest plan whatever the estimate.
 */
export const LEASE_PLAN_SETTINGS = "set_config('enable_bitmapscan', 'off', true) AS plan_settings";

/**
 * Runs `statement`, one that leases deliveries, in its turn among every such statement of every
 * process (a transaction-scoped advisory lock), so its snapshot, taken after the turn began, counts
 * the leases of all before it. The turn is not waited for (a waiting statement would hold a pool
 * connection the API needs): null when another holds it, and the caller tries again a moment
 * later. Two round trips: the turn with the BEGIN, the statement with the COMMIT.
 */
async function inLeaseTurn(db: Database, statement: Statement): Promise<ClaimedDelivery[] | null> {
  return db.transactionFrom<{ mine: boolean }, ClaimedDelivery[] | null>(
    {
      sql: `SELECT pg_try_advisory_xact_lock(hashtextextended('webhook_claim', 0)) AS mine, ${LEASE_PLAN_SETTINGS}`,
      name: 'webhook_claim_turn',
    },
    async (tx, { rows: turn }) => {
      if (!turn[0]!.mine) return null;
      return (await tx.commitWith<ClaimedDelivery>(statement)).rows;
    },
  );
}

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
              a.attempted_at AS last_attempt_at, a.outcome AS last_outcome,
              coalesce(h.failures_in_a_row, 0) AS failures_in_a_row, api_time(h.failing_since) AS failing_since,
              CASE WHEN h.paused_until > now() THEN api_time(h.paused_until) END AS paused_until
         FROM webhook_endpoints e
         LEFT JOIN webhook_endpoint_health h ON h.endpoint_id = e.id
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

  /**
   * Every pending delivery due now with a fresh schedule (the endpoint was resumed). Those already
   * due and never tried (a backlog gathered while it was disabled) are left as they are: enabling
   * an endpoint costs what it changes, not the size of its backlog.
   */
  async rescheduleAllPending(db: Queryable, id: string): Promise<void> {
    await db.query(
      `UPDATE webhook_deliveries SET attempts = 0, next_attempt_at = least(next_attempt_at, now())
        WHERE endpoint_id = $1 AND acked_at IS NULL AND (attempts > 0 OR next_attempt_at > now())`,
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

  /** An attempt into the history of its endpoint, unless the endpoint was deleted meanwhile. */
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
       SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1)`,
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
   * Waits for and holds, until the transaction ends, the lock `lockForEnqueue` takes: a delivery
   * put off (`reschedule`, `releaseAfterProbe`) carries the later pending events of its resource
   * along, and an event enqueued meanwhile, from a snapshot that still showed the earlier due time,
   * would be left due before it. Enqueuing skips the endpoint while it is held.
   */
  async holdAgainstEnqueue(db: Queryable, id: string): Promise<void> {
    await db.query(
      'SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE',
      [id],
      'webhook_hold_against_enqueue',
    );
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
                -- not before an earlier event of its resource that waits for a retry. Only those
                -- due later than now are read: whichever index the planner takes (by resource, or by
                -- due time from now on), it reads a few entries, never the endpoint's backlog
                greatest(now(), (SELECT max(w.next_attempt_at) FROM webhook_deliveries w
                                  WHERE w.endpoint_id = $1 AND w.resource_type = p.resource_type
                                    AND w.resource_id = p.resource_id AND w.acked_at IS NULL
                                    AND w.next_attempt_at > now()))
           FROM picked p
         ON CONFLICT (endpoint_id, stamp, seq) DO NOTHING
       ), last AS (
         SELECT stamp, seq FROM picked ORDER BY stamp DESC, seq DESC LIMIT 1
       )
       SELECT (SELECT count(*)::int FROM picked) AS found,
              (SELECT stamp::text FROM last) AS stamp, (SELECT seq::text FROM last) AS seq,
              coalesce((SELECT stamp_position(last_stamp) FROM workspace_clocks WHERE workspace_id = $2), 0)::text AS clock`,
      [endpointId, workspaceId, after[0], after[1], resourceTypes, eventTypes, take],
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
   * Fills up to `slots` slots with due deliveries (`dueOf`) leased for `leaseMs`, serving endpoints
   * and workspaces in turn (docs/webhooks.md, "Fair delivery"), of active endpoints and workspaces.
   *
   * A slot holds one delivery, or a run of up to `policy.run` when the endpoint's last attempt
   * answered 2xx: its deliveries are sent one after another, so a slot is one attempt in flight.
   * Each endpoint has at most `policy.endpoint` slots and each workspace at most
   * `policy.workspace`, counted across every process: every statement that leases takes its turn
   * (`inLeaseTurn`; null when another holds it), so each one counts the leases of the others.
   * Among the due deliveries, every workspace gets its first slot before any gets its second, and
   * so on; ties go in an order drawn anew at each claim.
   *
   * An endpoint whose last `policy.probeAfterFailures` attempts or more failed is not tried while
   * it is paused, then with one attempt at a time, a probe: its earliest pending delivery, due or
   * not (the endpoint backs off as a whole, not event by event).
   */
  async claim(db: Database, slots: number, leaseMs: number, policy: ClaimPolicy): Promise<ClaimedDelivery[] | null> {
    return inLeaseTurn(db, { sql: CLAIM_SQL, params: claimParams(slots, leaseMs, policy) });
  },

  /**
   * More deliveries for a slot that is sending a run (`REFILL_SQL`), so a backlog goes out without
   * waiting for the slot to end and a claim to fill it again. Takes its turn with the claims (the
   * same advisory lock, not waited for): null when another process or slot holds it.
   */
  async refill(
    db: Database,
    endpointId: string,
    leaseToken: string,
    take: number,
    leaseMs: number,
  ): Promise<ClaimedDelivery[] | null> {
    return inLeaseTurn(db, {
      sql: REFILL_SQL,
      params: [endpointId, leaseToken, take, leaseMs],
    });
  },

  /**
   * 2xx answers, in one statement (one round trip, atomic without a transaction): each delivery
   * whose lease is still held is acknowledged for good (only `replay` sends it again). The record
   * of failures of each of their endpoints is dropped; an endpoint that had failed `recoverAfter`
   * times in a row or more (it was down) has every pending delivery waiting for a retry due now,
   * with a fresh schedule (`recovered`), so a receiver back from downtime gets its backlog at once
   * rather than at each event's next retry. Fewer failures between 2xx answers are events the
   * receiver refuses, which keep their schedules. Every attempt goes into the history of its endpoint
   * (unless the endpoint was deleted meanwhile). Answers how
   * many were acknowledged (the others' leases were lost).
   */
  async acknowledge(
    db: Queryable,
    acks: readonly Acknowledgement[],
    recoverAfter: number,
  ): Promise<{ acked: number; recovered: Recovered[] }> {
    const { rows } = await db.query<{ acked: number; recovered: Recovered[] }>(
      `WITH input AS (
         SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::uuid[], $5::int[], $6::int[], $7::text[], $8::text[])
                    WITH ORDINALITY AS i(endpoint_id, stamp, seq, lease_token, status, duration_ms, message_id, event_type, nth)
       ),
       acked AS (
         UPDATE webhook_deliveries d
            SET acked_at = now(), leased_until = NULL, lease_token = NULL, attempts = d.attempts + 1,
                last_status = i.status, last_error = NULL, last_duration_ms = i.duration_ms
           FROM input i
          WHERE d.endpoint_id = i.endpoint_id AND d.stamp = i.stamp AND d.seq = i.seq AND d.lease_token = i.lease_token
         RETURNING d.endpoint_id, d.stamp, d.seq
       ),
       healed AS (
         DELETE FROM webhook_endpoint_health h USING (SELECT DISTINCT endpoint_id FROM acked) a
          WHERE h.endpoint_id = a.endpoint_id
         RETURNING h.endpoint_id, h.failures_in_a_row
       ),
       recovered AS (
         UPDATE webhook_deliveries r SET next_attempt_at = now(), attempts = 0
           FROM healed
          WHERE healed.failures_in_a_row >= $9::int
            AND r.endpoint_id = healed.endpoint_id AND r.acked_at IS NULL AND r.next_attempt_at > now()
            AND NOT EXISTS (SELECT 1 FROM acked a WHERE a.endpoint_id = r.endpoint_id AND a.stamp = r.stamp AND a.seq = r.seq)
         RETURNING r.endpoint_id
       ),
       -- not for an endpoint deleted meanwhile: its history went with it, and a row for it would
       -- fail the whole statement, the answers of every other endpoint with it
       logged AS (
         INSERT INTO webhook_attempts (endpoint_id, message_id, event_type, outcome, status, duration_ms)
         SELECT i.endpoint_id, i.message_id, i.event_type, 'acked', i.status, i.duration_ms FROM input i
          WHERE EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = i.endpoint_id)
          ORDER BY i.nth
       )
       SELECT (SELECT count(*) FROM acked)::int AS acked,
              coalesce((SELECT json_agg(r) FROM (SELECT endpoint_id, count(*)::int AS recovered FROM recovered
                                                  GROUP BY endpoint_id) r), '[]') AS recovered`,
      [
        acks.map((a) => a.delivery.endpoint_id),
        acks.map((a) => a.delivery.stamp),
        acks.map((a) => a.delivery.seq),
        acks.map((a) => a.delivery.lease_token),
        acks.map((a) => a.status),
        acks.map((a) => a.durationMs),
        acks.map((a) => a.messageId),
        acks.map((a) => a.eventType),
        recoverAfter,
      ],
    );
    return rows[0]!;
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
   * goes behind the endpoint's other pending deliveries (the later events of its resource with it),
   * so the next probe tries another one: an event the receiver refuses for its content does not
   * stand for the whole endpoint.
   */
  async releaseAfterProbe(
    db: Queryable,
    d: ClaimedDelivery,
    r: { status: number | null; error: string | null; durationMs: number },
  ): Promise<boolean> {
    const { rows } = await db.query<{ held: number }>(
      `WITH probed AS (
         UPDATE webhook_deliveries
            SET leased_until = NULL, lease_token = NULL,
                next_attempt_at = greatest(now(), (SELECT max(o.next_attempt_at) FROM webhook_deliveries o
                                                    WHERE o.endpoint_id = $1 AND o.acked_at IS NULL)) + interval '1 millisecond',
                last_status = $5, last_error = $6, last_duration_ms = $7
          WHERE endpoint_id = $1 AND stamp = $2 AND seq = $3 AND lease_token = $4
         RETURNING endpoint_id, resource_type, resource_id, stamp, seq, next_attempt_at
       ),
       behind AS (${carryResourceAlong('probed')})
       SELECT count(*)::int AS held FROM probed`,
      [d.endpoint_id, d.stamp, d.seq, d.lease_token, r.status, r.error, r.durationMs],
    );
    return rows[0]!.held > 0;
  },

  /**
   * A failed attempt: the next one at `retryInMs` (null: none is scheduled; due as soon as the
   * endpoint resumes). The later pending events of the same resource cannot go before it: they are
   * moved to its time (`carryResourceAlong`), so they never fill the claim's view of the endpoint
   * while they wait.
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
       behind AS (${carryResourceAlong('head')})
       SELECT count(*)::int AS held FROM head`,
      [d.endpoint_id, d.stamp, d.seq, d.lease_token, r.retryInMs, r.status, r.error, r.durationMs],
    );
    return rows[0]!.held > 0;
  },

  /** Lets another process (or this one) take deliveries of one slot at once: ones it will not send. */
  async releaseUnsent(db: Queryable, slot: readonly ClaimedDelivery[]): Promise<void> {
    if (slot.length === 0) return;
    await db.query(
      `UPDATE webhook_deliveries d SET leased_until = NULL, lease_token = NULL
         FROM unnest($3::bigint[], $4::bigint[]) AS u(stamp, seq)
        WHERE d.endpoint_id = $1 AND d.lease_token = $2 AND d.stamp = u.stamp AND d.seq = u.seq`,
      [slot[0]!.endpoint_id, slot[0]!.lease_token, slot.map((d) => d.stamp), slot.map((d) => d.seq)],
    );
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
    );
    return rows;
  },

  /** Acknowledged deliveries and attempts older than `days`: history, not state. */
  async purgeOlderThan(db: Queryable, days: number): Promise<void> {
    await db.query(`DELETE FROM webhook_deliveries WHERE acked_at < now() - $1::int * interval '1 day'`, [days]);
    await db.query(`DELETE FROM webhook_attempts WHERE attempted_at < now() - $1::int * interval '1 day'`, [days]);
  },

  /** The event id secret of the installation, or null when no event id was ever issued. */
  eventIdSecret(db: Queryable): Promise<string | null> {
    return instanceSetting(db, 'event_id_secret');
  },
};
