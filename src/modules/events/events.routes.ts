// GET /v2/events: the feed of changes of the workspace, in a stable order that never skips an
// event (see db/migrations/0002). A reader pages with the cursor; one that reached the end resumes
// later with ?after=<id of the last event it saw>.
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { ApiError } from '../../shared/errors.js';
import { paginate } from '../../shared/pagination.js';
import { readResponses } from '../../shared/responses.js';
import { Cursor, DateTime, Limit, LIMIT_DEFAULT, NullableString, Page, StringEnum } from '../../shared/schemas.js';
import type { RouteOptions } from '../../services.js';
import { eventsRepository, parseEventId, RESOURCE_TYPES, type EventPosition } from './events.repository.js';

const EVENT_TYPE_LIST = '^[a-z_]+\\.(created|updated|deleted)(,[a-z_]+\\.(created|updated|deleted))*$';

export const Event = Type.Object(
  {
    id: Type.String({
      pattern: '^evt_[0-9]{1,20}_[0-9]{1,20}$',
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
          'The resource after the change, exactly as GET returns it (Contact, Appointment, PipelineStage, CatalogItem, Conversation, Message, Automation, Workspace). For a deletion: {"id": ...} only.',
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
        pattern: '^evt_[0-9]{1,20}_[0-9]{1,20}$',
        maxLength: 45,
        description: 'Id of the last event already processed: the feed continues right after it.',
      }),
    ),
    type: Type.Optional(
      Type.String({
        pattern: EVENT_TYPE_LIST,
        maxLength: 1000,
        description: 'Only these event types, comma-separated, e.g. contact.created,contact.deleted.',
      }),
    ),
    resource_type: Type.Optional(StringEnum(RESOURCE_TYPES)),
    resource_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'Only events about this resource.' }),
    ),
  },
  { additionalProperties: false },
);

export const eventsRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  app.get(
    '/events',
    {
      config: { scope: 'events:read' },
      schema: {
        operationId: 'listEvents',
        summary: 'List changes (events feed)',
        description:
          'Every change to a contact, appointment, pipeline stage, catalog item, conversation, message, automation or the workspace, whoever made it, in a stable order. An event becomes visible once every transaction that started before it has ended, so a reader that follows the cursor (or resumes with after=) never misses one. Events are kept for 30 days.',
        tags: ['Events'],
        querystring: EventsQuery,
        response: readResponses({ 200: Page(Event) }),
      },
    },
    async (request) => {
      const { workspaceId } = request.principal!;
      const { limit = LIMIT_DEFAULT, cursor, after, ...filters } = request.query as Static<typeof EventsQuery>;
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
        (position: EventPosition | null, take) =>
          eventsRepository.list(services.db, workspaceId, filters, position ?? start, take),
        (e) => parseEventId(e.id)!,
      );
    },
  );
};
