// The events feed as the API shows it: the event, the feed's query and its head. An event's data
// is the resource as its own GET returns it, or the resource's tombstone after a deletion.
import { Type, type TSchema } from 'typebox';
import { Cursor, DateTime, Limit, NullableString, StringEnum } from '../../shared/schemas.js';
import { RESOURCE_TYPES, RESOURCES, type ResourceType } from '../resources.js';
import { EVENT_ID_PATTERN } from './event-ids.js';

const RESOURCE_TYPE = `(${RESOURCE_TYPES.join('|')})`;
const RESOURCE_TYPE_LIST = `^${RESOURCE_TYPE}(,${RESOURCE_TYPE})*$`;
const EVENT_TYPE = `${RESOURCE_TYPE}\\.(created|updated|deleted)`;
const EVENT_TYPE_LIST = `^${EVENT_TYPE}(,${EVENT_TYPE})*$`;
// An event id, or an id of the earlier format evt_<n>_<n>: a workspace whose feed had events when
// db/migrations/0009 ran may have followers holding one (events.repository.ts, legacyPosition).
const POSITION = '^evt_([A-Za-z0-9_-]{22}|[0-9]{1,20}_[0-9]{1,20})$';

const eventId = Type.String({
  pattern: EVENT_ID_PATTERN,
  maxLength: 26,
  description:
    'Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.',
  examples: ['evt_q2Xc0Lw9RkT1mHb7YpZs4A'],
});
const requestId = NullableString(64, {
  description: 'X-Request-Id of the API request that caused the change; null for changes made in the product.',
});

/** One kind of event: its types, its resource type and its data, with the fields every event has. */
function eventOf(
  resourceType: ResourceType,
  kinds: readonly string[],
  data: TSchema,
  title: string,
  description: string,
) {
  return Type.Object(
    {
      id: eventId,
      type: StringEnum(
        kinds.map((kind) => `${resourceType}.${kind}`),
        { maxLength: 64 },
      ),
      resource_type: StringEnum([resourceType]),
      resource_id: Type.String({ maxLength: 128, description: 'Id of the resource the event is about.' }),
      occurred_at: DateTime,
      request_id: requestId,
      data,
    },
    { additionalProperties: false, title, description },
  );
}

/**
 * An event of the feed: one alternative per resource type and kind of change, told apart by
 * `type` (so generated client types narrow on it). A creation or update carries the resource as
 * GET returns it, or its tombstone once the resource was deleted (erasure rewrites the earlier
 * events); a deletion carries the tombstone. The properties are in the order the feed writes them.
 */
export const Event = Type.Union(
  RESOURCE_TYPES.flatMap((resourceType) => {
    const { item, name, tombstone } = RESOURCES[resourceType];
    const noun = resourceType.replace('_', ' ');
    if (tombstone === null) {
      return [
        eventOf(
          resourceType,
          ['created', 'updated'],
          item,
          `${name}Event`,
          `The ${noun} created or updated: data is the ${name} after the change.`,
        ),
      ];
    }
    return [
      eventOf(
        resourceType,
        ['created', 'updated'],
        Type.Union([item, tombstone.schema]),
        `${name}Event`,
        `A ${noun} created or updated: data is the ${name} after the change, or its ${tombstone.name} once the ${noun} was deleted.`,
      ),
      eventOf(
        resourceType,
        ['deleted'],
        tombstone.schema,
        `${name}DeletedEvent`,
        `A ${noun} deleted: data is its ${tombstone.name}.`,
      ),
    ];
  }),
  {
    title: 'Event',
    description:
      'A change: type is <resource_type>.created, .updated or .deleted. data is the resource after the change, exactly as GET returns it; for a deletion, and for every earlier event of a resource since deleted, its tombstone ({"id": ...}, and for a contact also its "external_id").',
  },
);

export const EventsQuery = Type.Object(
  {
    limit: Type.Optional(Limit),
    cursor: Type.Optional(Cursor),
    after: Type.Optional(
      Type.String({
        pattern: POSITION,
        maxLength: 45,
        description:
          'Id of the last event already processed, or the position from GET /v2/events/head: the feed continues right after it. 410 events_expired when retention has deleted events after it. An id of the earlier format evt_<n>_<n> is accepted in a workspace that issued it, and refused like any other id elsewhere.',
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
