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
  type?: string | undefined;
  resource_type?: ResourceType | undefined;
  resource_id?: string | undefined;
}

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
      where.push(`resource_type = $${params.push(f.resource_type)}`);
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

  /** Deletes events older than the retention period, in batches; returns how many went. */
  async purgeOlderThan(db: Queryable, days: number, batchSize = 5_000): Promise<number> {
    let total = 0;
    for (;;) {
      const { rowCount } = await db.query(
        `DELETE FROM events WHERE (workspace_id, tx_id, seq) IN (
           SELECT workspace_id, tx_id, seq FROM events
            WHERE occurred_at < now() - $1::int * interval '1 day' LIMIT $2)`,
        [days, batchSize],
      );
      total += rowCount;
      if (rowCount < batchSize) return total;
    }
  },
};

function pick(data: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (k in data) out[k] = data[k];
  return out;
}
