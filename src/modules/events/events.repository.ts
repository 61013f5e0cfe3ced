// The events feed in SQL. Visibility stops at the oldest transaction still running, so every event
// a reader has not seen yet sorts after the ones it has (db/migrations/0002).
import type { Queryable } from '../../infra/database.js';
import { Appointment } from '../appointments/appointments.schemas.js';
import { Automation } from '../automations/automations.routes.js';
import { CatalogItem } from '../catalog/catalog.routes.js';
import { Contact } from '../contacts/contacts.schemas.js';
import { Conversation, Message } from '../conversations/conversations.routes.js';
import { PipelineStage } from '../pipeline/pipeline.routes.js';
import { Workspace } from '../workspaces/workspace.routes.js';

export const RESOURCE_TYPES = [
  'workspace',
  'contact',
  'pipeline_stage',
  'appointment',
  'catalog_item',
  'conversation',
  'message',
  'automation',
] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** (transaction id, sequence): the position of an event in the feed; both are decimal strings. */
export type EventPosition = readonly [string, string];

const MAX_TX_ID = 2n ** 64n - 1n; // xid8
const MAX_SEQ = 2n ** 63n - 1n; // bigint

/** The feed position an event id names, or null when it names none (bad shape or out of range). */
export function parseEventId(id: string): EventPosition | null {
  const m = /^evt_([0-9]{1,20})_([0-9]{1,20})$/.exec(id);
  if (!m || BigInt(m[1]!) > MAX_TX_ID || BigInt(m[2]!) > MAX_SEQ) return null;
  return [m[1]!, m[2]!];
}

// Second line of defence behind the SQL functions that build event data: whatever they return,
// only the properties of the resource's public schema are sent.
const PUBLIC_PROPERTIES: Record<ResourceType, readonly string[]> = {
  workspace: Object.keys(Workspace.properties),
  contact: Object.keys(Contact.properties),
  pipeline_stage: Object.keys(PipelineStage.properties),
  appointment: Object.keys(Appointment.properties),
  catalog_item: Object.keys(CatalogItem.properties),
  conversation: Object.keys(Conversation.properties),
  message: Object.keys(Message.properties),
  automation: Object.keys(Automation.properties),
};

export interface EventRow {
  id: string;
  type: string;
  resource_type: ResourceType;
  resource_id: string;
  occurred_at: string;
  request_id: string | null;
  data: Record<string, unknown>;
}

export interface EventFilters {
  /** comma-separated event types */
  type?: string | undefined;
  /** comma-separated resource types */
  resource_type?: string | undefined;
  resource_id?: string | undefined;
}

/** Largest sequence number: (tx, MAX_SEQ) is the last position of transaction tx. */
const LAST_SEQ = MAX_SEQ.toString();

export const eventId = (position: EventPosition): string => `evt_${position[0]}_${position[1]}`;

export const eventsRepository = {
  async list(
    db: Queryable,
    workspaceId: string,
    f: EventFilters,
    after: EventPosition | null,
    take: number,
  ): Promise<EventRow[]> {
    const params: unknown[] = [workspaceId];
    const where = ['workspace_id = $1', 'tx_id < pg_snapshot_xmin(pg_current_snapshot())'];
    let shape = 'events_list';
    if (f.type !== undefined) {
      where.push(`type = ANY($${params.push(f.type.split(','))}::text[])`);
      shape += '_t';
    }
    if (f.resource_type !== undefined) {
      where.push(`resource_type = ANY($${params.push(f.resource_type.split(','))}::text[])`);
      shape += '_r';
    }
    if (f.resource_id !== undefined) {
      where.push(`resource_id = $${params.push(f.resource_id)}`);
      shape += '_i';
    }
    if (after) {
      where.push(`(tx_id, seq) > ($${params.push(after[0])}::xid8, $${params.push(after[1])}::bigint)`);
      shape += '_a';
    }
    const { rows } = await db.query<EventRow>(
      `SELECT 'evt_' || tx_id || '_' || seq AS id, type, resource_type, resource_id,
              api_time(occurred_at) AS occurred_at, request_id, data
         FROM events WHERE ${where.join(' AND ')}
        ORDER BY events.tx_id, events.seq LIMIT $${params.push(take)}`,
      params,
      shape,
    );
    for (const row of rows) row.data = pick(row.data, PUBLIC_PROPERTIES[row.resource_type] ?? ['id']);
    return rows;
  },

  /**
   * Whether the feed can be followed after `position`: 'expired' when retention has deleted an
   * event of this workspace after it (a reader resuming there would silently miss it); 'ahead'
   * when it names a transaction that has not even started (a position from another store, e.g.
   * kept across a restore), which would otherwise wait silently for the feed to catch up.
   */
  async positionProblem(
    db: Queryable,
    workspaceId: string,
    position: EventPosition,
  ): Promise<'expired' | 'ahead' | null> {
    const { rows } = await db.query<{ expired: boolean; ahead: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM events_purged
                       WHERE workspace_id = $1 AND (tx_id, seq) > ($2::xid8, $3::bigint)) AS expired,
              $2::xid8 >= pg_snapshot_xmax(pg_current_snapshot()) AS ahead`,
      [workspaceId, position[0], position[1]],
      'events_position_problem',
    );
    const row = rows[0]!;
    return row.expired ? 'expired' : row.ahead ? 'ahead' : null;
  },

  /**
   * The feed's current end: every event visible now is at or before it, every later one after it.
   * Everything not visible yet belongs to a transaction at or above the horizon (see list), so the
   * last position below the horizon is that end, whether or not an event stands there.
   */
  async head(db: Queryable): Promise<EventPosition> {
    const { rows } = await db.query<{ horizon: string }>(
      'SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon',
      [],
      'events_head',
    );
    return [(BigInt(rows[0]!.horizon) - 1n).toString(), LAST_SEQ];
  },

  /**
   * Deletes events older than the retention period, in batches, and records per workspace the
   * latest position deleted (so resuming before it answers 410); returns how many went.
   */
  async purgeOlderThan(db: Queryable, days: number, batchSize = 5_000): Promise<number> {
    let total = 0;
    for (;;) {
      const { rows } = await db.query<{ deleted: string }>(
        `WITH gone AS (
           DELETE FROM events WHERE (workspace_id, tx_id, seq) IN (
             SELECT workspace_id, tx_id, seq FROM events
              WHERE occurred_at < now() - $1::int * interval '1 day' LIMIT $2)
           RETURNING workspace_id, tx_id, seq
         ), latest AS (
           SELECT DISTINCT ON (workspace_id) workspace_id, tx_id, seq FROM gone
            ORDER BY workspace_id, tx_id DESC, seq DESC
         ), recorded AS (
           INSERT INTO events_purged AS p (workspace_id, tx_id, seq)
           SELECT workspace_id, tx_id, seq FROM latest
           -- a workspace deleted meanwhile has no feed left to protect
            WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = latest.workspace_id)
           ON CONFLICT (workspace_id) DO UPDATE SET tx_id = EXCLUDED.tx_id, seq = EXCLUDED.seq, purged_at = now()
            WHERE (p.tx_id, p.seq) < (EXCLUDED.tx_id, EXCLUDED.seq)
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

function pick(data: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (k in data) out[k] = data[k];
  return out;
}
