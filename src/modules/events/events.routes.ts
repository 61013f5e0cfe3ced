// GET /v2/events: the feed of changes of the workspace, in a stable order that never skips an
// event (db/migrations/0009). A reader pages with the cursor; one that reached the end resumes
// later with ?after=<id of the last event it saw>. A key sees the events of the resource types it
// may read on their own routes and nothing of the others: not their content, not their ids, not
// that they happened (its cursors and filters cannot reach them either).
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { ApiError, eventsExpired, insufficientScope } from '../../shared/errors.js';
import { paginate } from '../../shared/pagination.js';
import { feedResponses, readResponses } from '../../shared/responses.js';
import {
  Cursor,
  DateTime,
  Limit,
  LIMIT_DEFAULT,
  NoQuery,
  NullableString,
  Page,
  Single,
  StringEnum,
} from '../../shared/schemas.js';
import type { RouteOptions } from '../../services.js';
import type { Scope } from '../api-keys/scopes.js';
import { EVENT_ID_PATTERN, type EventIdCodec, type EventPosition } from './event-ids.js';
import {
  eventsRepository,
  READ_SCOPE,
  readableResourceTypes,
  RESOURCE_TYPES,
  type EventFilters,
  type EventRow,
  type ResourceType,
} from './events.repository.js';

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
  { additionalProperties: false },
);
export type EventT = Static<typeof Event>;

const EventsQuery = Type.Object(
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

const FeedHead = Type.Object(
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
  { additionalProperties: false },
);

/** A comma-separated filter as a sorted list without repeats; undefined stays undefined. */
const valueSet = (list: string | undefined): string[] | undefined =>
  list === undefined ? undefined : [...new Set(list.split(','))].sort();

/** 403 for a filter that names a resource type the key may not read: it asks for what it may not see. */
function refuseUnreadable(
  parameter: 'type' | 'resource_type',
  resourceTypes: readonly string[] | undefined,
  readable: readonly ResourceType[],
): void {
  const hidden = resourceTypes?.find((t) => !(readable as readonly string[]).includes(t)) as ResourceType | undefined;
  if (hidden === undefined) return;
  const scope: Scope = READ_SCOPE[hidden];
  throw insufficientScope(scope, `Events about ${hidden} need the scope ${scope} besides events:read.`, { parameter });
}

const resourceTypeOf = (eventType: string) => eventType.split('.')[0] as ResourceType;

/** The resource types a read with these filters can return (undefined: all). */
const typesRead = (f: EventFilters): readonly ResourceType[] | undefined =>
  f.types === undefined ? f.resourceTypes : [...new Set(f.types.map(resourceTypeOf))];

const toEvent = (codec: EventIdCodec, workspaceId: string, { position, ...row }: EventRow): EventT => ({
  id: codec.encode(workspaceId, position),
  ...row,
});

export const eventsRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  /** The position `after` names in this workspace's feed; 400 when none, 410 when expired. */
  const startOf = async (ids: EventIdCodec, workspaceId: string, after: string): Promise<EventPosition> => {
    const parsed = ids.decode(workspaceId, after);
    if (!parsed) {
      throw new ApiError('invalid_query_parameter', {
        message: 'after must be the id of an event of this feed, or a position from GET /v2/events/head.',
        details: { parameter: 'after' },
      });
    }
    if (parsed.kind === 'position') return parsed.position;
    const position = await eventsRepository.legacyPosition(services.db, workspaceId, parsed.txId, parsed.seq);
    if (position === 'expired') throw eventsExpired(services.config.eventsRetentionDays, 'after', 'expired');
    return position;
  };

  app.get(
    '/events/head',
    {
      config: { scope: 'events:read' },
      schema: {
        operationId: 'getEventsHead',
        summary: 'Current end of the events feed',
        description:
          'The position after which every future change appears, without reading the feed. To start a sync: take this position, export the lists, then read the feed with after=<position> (docs/sync.md).',
        tags: ['Events'],
        querystring: NoQuery,
        response: readResponses({ 200: Single(FeedHead) }),
      },
    },
    async (request) => {
      const { workspaceId, scopes } = request.principal!;
      const ids = await services.eventIds();
      const readable = readableResourceTypes(scopes);
      const position = await eventsRepository.head(
        services.db,
        workspaceId,
        readable.length === RESOURCE_TYPES.length ? undefined : readable,
      );
      return { data: { position: ids.encode(workspaceId, position), taken_at: new Date().toISOString() } };
    },
  );

  app.get(
    '/events',
    {
      config: { scope: 'events:read' },
      schema: {
        operationId: 'listEvents',
        summary: 'List changes (events feed)',
        description:
          'Every change to a contact, appointment, pipeline stage, catalog item, conversation, message, automation or the workspace, whoever made it, in a stable order: an event is visible once its change is committed, and a reader that follows the cursor (or resumes with after=) never misses one. A key sees the events of the resource types its scopes read on their own routes (messages need messages:read) and nothing of the others. When a resource is deleted, its earlier events keep their place but their data becomes its tombstone. Events are kept for 30 days (EVENTS_RETENTION_DAYS); a position from before what retention kept answers 410 events_expired, never a silent gap.',
        tags: ['Events'],
        querystring: EventsQuery,
        response: feedResponses({ 200: Page(Event) }),
      },
    },
    async (request) => {
      const { workspaceId, scopes } = request.principal!;
      const { limit = LIMIT_DEFAULT, cursor, after, ...query } = request.query as Static<typeof EventsQuery>;
      if (cursor !== undefined && after !== undefined) {
        throw new ApiError('invalid_query_parameter', {
          message: 'Send cursor or after, not both.',
          details: { parameter: 'after' },
        });
      }
      const readable = readableResourceTypes(scopes);
      const types = valueSet(query.type);
      const resourceTypes = valueSet(query.resource_type);
      refuseUnreadable('type', types?.map(resourceTypeOf), readable);
      refuseUnreadable('resource_type', resourceTypes, readable);
      // Always within what the key may read; no condition at all when that is everything.
      const within = (resourceTypes ?? (readable.length === RESOURCE_TYPES.length ? undefined : readable)) as
        ResourceType[] | undefined;
      const filters = {
        // Event types outside the resource types read select nothing: the read needs one list.
        types: types?.filter((t) => within === undefined || within.includes(resourceTypeOf(t))),
        resourceTypes: within,
        resourceId: query.resource_id,
      };
      const ids = await services.eventIds();
      const start = after === undefined ? null : await startOf(ids, workspaceId, after);
      return paginate(
        services.cursors,
        // One spelling per set of values, and the key's readable types: a cursor is bound to what
        // it may show, not to the order of the filters.
        { resource: 'events', workspaceId, filters: { ...filters, readable } },
        { limit, cursor },
        async (cursorKey: readonly [string] | null, take) => {
          const from = cursorKey ? positionInCursor(ids, workspaceId, cursorKey[0]) : start;
          const events = await eventsRepository.list(services.db, workspaceId, filters, from, take);
          // Checked after reading, in a later snapshot: a purge that removed events before the
          // read is seen here; one after it removed nothing the read returned.
          const problem = from
            ? await eventsRepository.positionProblem(services.db, workspaceId, from, typesRead(filters))
            : null;
          if (problem) {
            throw eventsExpired(services.config.eventsRetentionDays, cursorKey ? 'cursor' : 'after', problem);
          }
          return events.map((e) => toEvent(ids, workspaceId, e));
        },
        // The cursor holds the last event's id: as opaque as the id itself.
        (e) => [e.id] as const,
      );
    },
  );
};

/** The position of the event id a cursor holds (the cursor's signature already vouched for it). */
function positionInCursor(ids: EventIdCodec, workspaceId: string, id: string): EventPosition {
  const parsed = ids.decode(workspaceId, id);
  if (parsed?.kind !== 'position') throw new ApiError('invalid_cursor', { details: { parameter: 'cursor' } });
  return parsed.position;
}
