// The events feed in SQL. An event stands at (stamp, seq): the stamp its transaction took from the
// workspace's sync clock, which it holds until commit, so every event a reader has not seen yet
// sorts after the ones it has (db/code/03_sync_clock.sql).
import type { Queryable } from '../../infra/database.js';
import { MAX_SEQ, type EventPosition } from './event-ids.js';
import type { ResourceType } from '../resources.js';

export interface EventRow {
  position: EventPosition;
  /**
   * The event as the feed lists it, less its id: a JSON object written by the store when the event
   * was (db/code/04_events_feed.sql), its data cut to the resource's public properties in GET's order.
   */
  json: string;
}

export interface EventFilters {
  /** only these event types (all of them within resourceTypes, when both are given) */
  types?: readonly string[] | undefined;
  /** only these resource types (undefined: all of them) */
  resourceTypes?: readonly ResourceType[] | undefined;
  resourceId?: string | undefined;
}

/**
 * Pages filtered by up to this many types (or resource types) run as prepared statements, one per
 * count; with more, the page is planned each time. Every count is a statement of its own, and a
 * connection that kept them all (up to 24 types, with and without after= and resource_id) would
 * hold about 20 MB of cached plans in its PostgreSQL backend (test/prepared-statements.test.ts).
 */
const PREPARED_BRANCHES = 3;

/** The last position of a stamp: (stamp, LAST_SEQ) is after every event of that stamp. */
const LAST_SEQ = MAX_SEQ.toString();

export const eventsRepository = {
  async list(
    db: Queryable,
    workspaceId: string,
    f: EventFilters,
    after: EventPosition | null,
    take: number,
  ): Promise<EventRow[]> {
    const params: unknown[] = [workspaceId];
    const common = ['workspace_id = $1'];
    let shape = 'events_list';
    if (f.resourceId !== undefined) {
      common.push(`resource_id = $${params.push(f.resourceId)}`);
      shape += '_i';
    }
    if (after) {
      common.push(`(stamp, seq) > ($${params.push(after[0])}::bigint, $${params.push(after[1])}::bigint)`);
      shape += '_a';
    }
    // Filtered by type or resource type, the page is the merge of one index range per value
    // (events_by_type, events_by_resource_type, events_by_resource): it reads no event of another
    // type, so its cost says nothing about how many there are.
    const branches =
      f.types !== undefined
        ? f.types.map((t) => `type = $${params.push(t)}`)
        : f.resourceTypes?.map((t) => `resource_type = $${params.push(t)}`);
    if (branches?.length === 0) return [];
    const limit = `$${params.push(take)}`;
    const columns = 'stamp, seq, feed_json';
    const source = branches
      ? branches
          .map(
            (b) =>
              `(SELECT ${columns} FROM events WHERE ${[...common, b].join(' AND ')} ORDER BY stamp, seq LIMIT ${limit})`,
          )
          .join(' UNION ALL ')
      : `(SELECT ${columns} FROM events WHERE ${common.join(' AND ')} ORDER BY stamp, seq LIMIT ${limit})`;
    shape += branches ? `_${f.types !== undefined ? 't' : 'r'}${branches.length}` : '';
    const { rows } = await db.query<{ stamp: string; seq: string; feed_json: string }>(
      `SELECT e.stamp::text AS stamp, e.seq::text AS seq, e.feed_json
         FROM (${source}) e
        ORDER BY e.stamp, e.seq LIMIT ${limit}`,
      params,
      branches === undefined || branches.length <= PREPARED_BRANCHES ? shape : undefined,
    );
    return rows.map((row) => ({ position: [row.stamp, row.seq] as const, json: row.feed_json }));
  },

  /**
   * The position an id of the earlier format (evt_<transaction id>_<sequence>) stands for in a
   * workspace whose feed had events when db/migrations/0009 ran (its map, events_legacy_positions,
   * or what retention had deleted by then, events_purged.legacy_*), or 'expired' when retention had
   * deleted events after it. Null in every other workspace: it never issued such an id, so the id
   * names nothing in its feed.
   */
  async legacyPosition(
    db: Queryable,
    workspaceId: string,
    txId: string,
    seq: string,
  ): Promise<EventPosition | 'expired' | null> {
    const { rows } = await db.query<{ issued: boolean; expired: boolean; stamp: string | null }>(
      `SELECT EXISTS (SELECT 1 FROM events_legacy_positions WHERE workspace_id = $1)
              OR EXISTS (SELECT 1 FROM events_purged WHERE workspace_id = $1 AND legacy_tx_id IS NOT NULL) AS issued,
              EXISTS (SELECT 1 FROM events_purged
                       WHERE workspace_id = $1 AND (legacy_tx_id, legacy_seq) > ($2::xid8, $3::bigint)) AS expired,
              (SELECT stamp::text FROM events_legacy_positions
                WHERE workspace_id = $1 AND (tx_id, seq) <= ($2::xid8, $3::bigint)
                ORDER BY tx_id DESC, seq DESC LIMIT 1) AS stamp`,
      [workspaceId, txId, seq],
      'events_legacy_position',
    );
    const row = rows[0]!;
    if (!row.issued) return null;
    return row.expired ? 'expired' : [row.stamp ?? '0', '0'];
  },

  /**
   * Whether the feed of `resourceTypes` (undefined: all) can be followed after `position`:
   * 'expired' when retention has deleted an event of those types after it (a reader resuming there
   * would silently miss it); 'ahead' when it lies beyond the workspace's clock (a position from
   * another store, e.g. kept across a restore), which would otherwise wait silently for the feed
   * to catch up. Purges of other types do not count: a key is not told about events it could not
   * read.
   */
  async positionProblem(
    db: Queryable,
    workspaceId: string,
    position: EventPosition,
    resourceTypes: readonly ResourceType[] | undefined,
  ): Promise<'expired' | 'ahead' | null> {
    const { rows } = await db.query<{ expired: boolean; ahead: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM events_purged
                       WHERE workspace_id = $1 AND (stamp, seq) > ($2::bigint, $3::bigint)
                         AND ($4::text[] IS NULL OR resource_type = ANY($4::text[]))) AS expired,
              $2::bigint > coalesce((SELECT stamp_position(last_stamp) FROM workspace_clocks
                                      WHERE workspace_id = $1), 0) AS ahead`,
      [workspaceId, position[0], position[1], resourceTypes ?? null],
      'events_position_problem',
    );
    const row = rows[0]!;
    return row.expired ? 'expired' : row.ahead ? 'ahead' : null;
  },

  /**
   * The feed's current end for a reader of `resourceTypes` (undefined: all): every event of those
   * types visible now is at or before it, every later one after it.
   *
   * For all types it is the workspace's clock: a transaction that has not committed yet holds the
   * clock with a stamp above the committed one read here, and one that takes it later gets a later
   * stamp still. For some types only it is the last event of those types (or the last one
   * retention deleted): every later event of theirs has a later stamp too, and the position moves
   * only when such an event happens — the clock moves with every change of any type, and would
   * tell the key when and how often things happen that it may not read.
   */
  async head(db: Queryable, workspaceId: string, resourceTypes?: readonly ResourceType[]): Promise<EventPosition> {
    if (resourceTypes === undefined) {
      const { rows } = await db.query<{ stamp: string | null }>(
        'SELECT stamp_position(last_stamp)::text AS stamp FROM workspace_clocks WHERE workspace_id = $1',
        [workspaceId],
        'events_head',
      );
      return [rows[0]?.stamp ?? '0', LAST_SEQ];
    }
    if (resourceTypes.length === 0) return ['0', '0'];
    const params: unknown[] = [workspaceId];
    const lasts = resourceTypes.map(
      (t) =>
        `(SELECT stamp, seq FROM events WHERE workspace_id = $1 AND resource_type = $${params.push(t)}
           ORDER BY stamp DESC, seq DESC LIMIT 1)`,
    );
    const { rows } = await db.query<{ stamp: string; seq: string }>(
      `SELECT h.stamp::text AS stamp, h.seq::text AS seq FROM (
         ${lasts.join(' UNION ALL ')}
         UNION ALL (SELECT stamp, seq FROM events_purged
                     WHERE workspace_id = $1 AND resource_type = ANY($${params.push(resourceTypes)}::text[]))
       ) h ORDER BY h.stamp DESC, h.seq DESC LIMIT 1`,
      params,
      `events_head_of_${resourceTypes.length}`,
    );
    return rows[0] ? [rows[0].stamp, rows[0].seq] : ['0', '0'];
  },

  /**
   * Deletes events older than the retention period, in batches, and records per workspace and
   * resource type the latest position deleted (so resuming before it answers 410); returns how many went.
   */
  async purgeOlderThan(db: Queryable, days: number, batchSize = 5_000): Promise<number> {
    let total = 0;
    for (;;) {
      const { rows } = await db.query<{ deleted: string }>(
        `WITH gone AS (
           DELETE FROM events WHERE (workspace_id, stamp, seq) IN (
             SELECT workspace_id, stamp, seq FROM events
              WHERE occurred_at < now() - $1::int * interval '1 day' LIMIT $2)
           RETURNING workspace_id, resource_type, stamp, seq
         ), latest AS (
           SELECT DISTINCT ON (workspace_id, resource_type) workspace_id, resource_type, stamp, seq FROM gone
            ORDER BY workspace_id, resource_type, stamp DESC, seq DESC
         ), recorded AS (
           INSERT INTO events_purged AS p (workspace_id, resource_type, stamp, seq)
           SELECT workspace_id, resource_type, stamp, seq FROM latest
           -- a workspace deleted meanwhile has no feed left to protect
            WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = latest.workspace_id)
           ON CONFLICT (workspace_id, resource_type) DO UPDATE
             SET stamp = EXCLUDED.stamp, seq = EXCLUDED.seq, purged_at = now()
            WHERE (p.stamp, p.seq) < (EXCLUDED.stamp, EXCLUDED.seq)
         )
         SELECT count(*)::text AS deleted FROM gone`,
        [days, batchSize],
      );
      const deleted = Number(rows[0]?.deleted ?? 0);
      total += deleted;
      if (deleted < batchSize) return total;
    }
  },
};
