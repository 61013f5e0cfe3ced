// The events feed as the API shows it: the event, the feed's query and its head. An event's data
// is the resource as its own GET returns it, or the resource's tombstone after a deletion.
import { Type, type Static } from 'typebox';
import { Cursor, DateTime, Limit, NullableString, StringEnum } from '../../shared/schemas.js';
import { EVENT_ID_PATTERN } from './event-ids.js';

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

const RESOURCE_TYPE = `(${RESOURCE_TYPES.join('|')})`;
const RESOURCE_TYPE_LIST = `^${RESOURCE_TYPE}(,${RESOURCE_TYPE})*$`;
const EVENT_TYPE = `${RESOURCE_TYPE}\\.(created|updated|deleted)`;
const EVENT_TYPE_LIST = `^${EVENT_TYPE}(,${EVENT_TYPE})*$`;
// An event id, or an id of the earlier format evt_<n>_<n> kept by a follower from before.
const POSITION = '^evt_([A-Za-z0-9_-]{22}|[0-9]{1,20}_[0-9]{1,20})$';

export const Event = Type.Object(
  {
    id: Type.String({
      pattern: EVENT_ID_PATTERN,
      maxLength: 26,
      description:
        'Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.',
      examples: ['evt_q2Xc0Lw9RkT1mHb7YpZs4A'],
    }),
    type: Type.String({
      pattern: '^[a-z_]+\\.(created|updated|deleted)$',
      maxLength: 64,
      description: '<resource_type>.created, .updated or .deleted.',
      examples: ['contact.updated'],
    }),
    resource_type: StringEnum(RESOURCE_TYPES),
    resource_id: Type.String({ maxLength: 128, description: 'Id of the resource the event is about.' }),
    occurred_at: DateTime,
    request_id: NullableString(64, {
      description: 'X-Request-Id of the API request that caused the change; null for changes made in the product.',
    }),
    data: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'The resource after the change, exactly as GET returns it (Contact, Appointment, PipelineStage, CatalogItem, Conversation, Message, Automation, Workspace). For a deletion, a tombstone: {"id": ...}, and for a contact also its "external_id" (null when it had none), so a mirror keyed by external id can apply it.',
      },
    ),
  },
  { additionalProperties: false, title: 'Event' },
);
export type EventT = Static<typeof Event>;

export const EventsQuery = Type.Object(
  {
    limit: Type.Optional(Limit),
    cursor: Type.Optional(Cursor),
    after: Type.Optional(
      Type.String({
        pattern: POSITION,
        maxLength: 45,
        description:
          'Id of the last event already processed, or the position from GET /v2/events/head: the feed continues right after it. 410 events_expired when retention has deleted events after it. Ids of the earlier format evt_<n>_<n> are still accepted.',
      }),
    ),
    type: Type.Optional(
      Type.String({
        pattern: EVENT_TYPE_LIST,
        maxLength: 1000,
        description:
          'Only these event types, comma-separated, e.g. contact.created,contact.deleted. 403 insufficient_scope for a type the key may not read.',
      }),
    ),
    resource_type: Type.Optional(
      Type.String({
        pattern: RESOURCE_TYPE_LIST,
        maxLength: 200,
        description: `Only events about these resource types, comma-separated, e.g. contact,appointment. One of: ${RESOURCE_TYPES.join(', ')}. 403 insufficient_scope for a type the key may not read.`,
      }),
    ),
    resource_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'Only events about this resource.' }),
    ),
  },
  { additionalProperties: false },
);

export const FeedHead = Type.Object(
  {
    position: Type.String({
      pattern: EVENT_ID_PATTERN,
      maxLength: 26,
      description:
        'The current end of the feed: pass it as after= to receive every change made from now on, and nothing before.',
      examples: ['evt_Vh3kq8XwP0aZr5Ld2NcT7g'],
    }),
    taken_at: { ...DateTime, description: 'When the position was taken.' },
  },
  { additionalProperties: false, title: 'EventsHead' },
);
