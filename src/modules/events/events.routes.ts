// GET /v2/events: the feed of changes of the workspace, in a stable order that never skips an
// event (see db/migrations/0002). A reader pages with the cursor; one that reached the end resumes
// later with ?after=<id of the last event it saw>.
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { ApiError, eventsExpired } from '../../shared/errors.js';
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
import { eventId, eventsRepository, parseEventId, RESOURCE_TYPES, type EventPosition } from './events.repository.js';

const RESOURCE_TYPE = `(${RESOURCE_TYPES.join('|')})`;
const RESOURCE_TYPE_LIST = `^${RESOURCE_TYPE}(,${RESOURCE_TYPE})*$`;
const EVENT_TYPE = `${RESOURCE_TYPE}\\.(created|updated|deleted)`;
const EVENT_TYPE_LIST = `^${EVENT_TYPE}(,${EVENT_TYPE})*$`;
const POSITION = '^evt_[0-9]{1,20}_[0-9]{1,20}$';

export const Event = Type.Object(
  {
    id: Type.String({
      pattern: POSITION,
      maxLength: 45,
      description: 'Identifier and position of the event in the feed.',
      examples: ['evt_9412_1873'],
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
          'Id of the last event already processed, or the position from GET /v2/events/head: the feed continues right after it. 410 events_expired when retention has deleted events after it.',
      }),
    ),
    type: Type.Optional(
      Type.String({
        pattern: EVENT_TYPE_LIST,
        maxLength: 1000,
        description: 'Only these event types, comma-separated, e.g. contact.created,contact.deleted.',
      }),
    ),
    resource_type: Type.Optional(
      Type.String({
        pattern: RESOURCE_TYPE_LIST,
        maxLength: 200,
        description: `Only events about these resource types, comma-separated, e.g. contact,appointment. One of: ${RESOURCE_TYPES.join(', ')}.`,
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
      pattern: POSITION,
      maxLength: 45,
      description:
        'The current end of the feed: pass it as after= to receive every change made from now on, and nothing before.',
      examples: ['evt_9412_9223372036854775807'],
    }),
    taken_at: { ...DateTime, description: 'When the position was taken.' },
  },
  { additionalProperties: false },
);

/** A comma-separated filter as a sorted list without repeats; undefined stays undefined. */
const valueSet = (list: string | undefined): string | undefined =>
  list === undefined ? undefined : [...new Set(list.split(','))].sort().join(',');

export const eventsRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
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
    async () => ({
      data: { position: eventId(await eventsRepository.head(services.db)), taken_at: new Date().toISOString() },
    }),
  );

  app.get(
    '/events',
    {
      config: { scope: 'events:read' },
      schema: {
        operationId: 'listEvents',
        summary: 'List changes (events feed)',
        description:
          'Every change to a contact, appointment, pipeline stage, catalog item, conversation, message, automation or the workspace, whoever made it, in a stable order. An event becomes visible once every transaction that started before it has ended, so a reader that follows the cursor (or resumes with after=) never misses one. Events are kept for 30 days (EVENTS_RETENTION_DAYS); a position from before what retention kept answers 410 events_expired, never a silent gap.',
        tags: ['Events'],
        querystring: EventsQuery,
        response: feedResponses({ 200: Page(Event) }),
      },
    },
    async (request) => {
      const { workspaceId } = request.principal!;
      const { limit = LIMIT_DEFAULT, cursor, after, ...query } = request.query as Static<typeof EventsQuery>;
      // One spelling per set of values: a cursor is bound to the filters, not to their order.
      const filters = { ...query, type: valueSet(query.type), resource_type: valueSet(query.resource_type) };
      if (cursor !== undefined && after !== undefined) {
        throw new ApiError('invalid_query_parameter', {
          message: 'Send cursor or after, not both.',
          details: { parameter: 'after' },
        });
      }
      const start = after === undefined ? null : parseEventId(after);
      if (after !== undefined && !start) {
        throw new ApiError('invalid_query_parameter', {
          message: 'after must be the id of an event of this feed.',
          details: { parameter: 'after' },
        });
      }
      return paginate(
        services.cursors,
        { resource: 'events', workspaceId, filters },
        { limit, cursor },
        async (position: EventPosition | null, take) => {
          const from = position ?? start;
          const events = await eventsRepository.list(services.db, workspaceId, filters, from, take);
          // Checked after reading, in a later snapshot: a purge that removed events before the
          // read is seen here; one after it removed nothing the read returned.
          const problem = from ? await eventsRepository.positionProblem(services.db, workspaceId, from) : null;
          if (problem) {
            throw eventsExpired(services.config.eventsRetentionDays, position ? 'cursor' : 'after', problem);
          }
          return events;
        },
        (e) => parseEventId(e.id)!,
      );
    },
  );
};
