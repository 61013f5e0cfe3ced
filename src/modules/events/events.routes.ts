// GET /v2/events: the feed of changes of the workspace, in a stable order that never skips an
// event (db/code/03_sync_clock.sql). A reader pages with the cursor; one that reached the end resumes
// later with ?after=<id of the last event it saw>. A key sees the events of the resource types it
// may read on their own routes and nothing of the others: not their content, not their ids, not
// that they happened (its cursors and filters cannot reach them either).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError, eventsExpired, insufficientScope } from '../../shared/errors.js';
import { paginate, type PageOf } from '../../shared/pagination.js';
import { readResponses } from '../../http/responses.js';
import { LIMIT_DEFAULT, NoQuery, Page, Single } from '../../shared/schemas.js';
import { readsOf } from '../../http/consistency.js';
import { principalOf } from '../../http/principal.js';
import type { Queryable } from '../../infra/database.js';
import { EVENTS_RETENTION } from '../../shared/documented-durations.js';
import type { RouteOptions } from '../../services.js';
import type { Scope } from '../../shared/scopes.js';
import type { EventIdCodec, EventPosition } from './event-ids.js';
import { eventsRepository, type EventFilters, type EventRow } from './events.repository.js';
import { Event, EventsQuery, FeedHead } from './events.schemas.js';
import { RESOURCE_TYPES, RESOURCES, readableResourceTypes, type ResourceType } from '../resources.js';

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
  const scope: Scope = RESOURCES[hidden].readScope;
  throw insufficientScope(scope, `Events about ${hidden} need the scope ${scope} besides events:read.`, { parameter });
}

const resourceTypeOf = (eventType: string) => eventType.split('.')[0] as ResourceType;

/** The resource types a read with these filters can return (undefined: all). */
const typesRead = (f: EventFilters): readonly ResourceType[] | undefined =>
  f.types === undefined ? f.resourceTypes : [...new Set(f.types.map(resourceTypeOf))];

/** An event as the page lists it: its id, and the rest of it as the JSON the store wrote. */
interface FeedEvent {
  id: string;
  /** the event less its id, a JSON object (EventRow.json) */
  json: string;
}

/** The events as the page lists them, their ids encrypted together (one cipher call a page). */
function toEvents(codec: EventIdCodec, workspaceId: string, rows: readonly EventRow[]): FeedEvent[] {
  const ids = codec.encodeAll(
    workspaceId,
    rows.map((row) => row.position),
  );
  return rows.map((row, i) => ({ id: ids[i]!, json: row.json }));
}

/**
 * A page of the feed as JSON, written as the route's schema (Page of Event) writes it — the same
 * properties in the same order — with each event spliced in as the text the store keeps for it
 * (db/code/04_events_feed.sql), its id put first: a read builds no event's JSON, which would be the largest
 * cost of a page. test/events-feed-json.test.ts holds pages to the schema's serializer byte for byte.
 */
function feedPageJson(page: PageOf<FeedEvent>): string {
  let events = '';
  for (const e of page.data) {
    // An id is "evt_" and base64url: nothing in it needs escaping. The stored text starts with "{".
    events += `${events === '' ? '' : ','}{"id":"${e.id}",${e.json.slice(1)}`;
  }
  const { limit, has_more, next_cursor } = page.page;
  return `{"data":[${events}],"page":{"limit":${limit},"has_more":${has_more},"next_cursor":${JSON.stringify(next_cursor)}}}`;
}

export const eventsRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  /** The position `after` names in this workspace's feed; 400 when none, 410 when expired. */
  const startOf = async (
    db: Queryable,
    ids: EventIdCodec,
    workspaceId: string,
    after: string,
  ): Promise<EventPosition> => {
    const parsed = ids.decode(workspaceId, after);
    const position =
      parsed?.kind === 'legacy'
        ? await eventsRepository.legacyPosition(db, workspaceId, parsed.txId, parsed.seq)
        : (parsed?.position ?? null);
    if (position === null) {
      throw new ApiError('invalid_query_parameter', {
        message: 'after must be the id of an event of this feed, or a position from GET /v2/events/head.',
        details: { parameter: 'after' },
      });
    }
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
        response: readResponses({ 200: Single(FeedHead) }, {}),
      },
    },
    async (request) => {
      const { workspaceId, scopes } = principalOf(request);
      const ids = await services.eventIds();
      const readable = readableResourceTypes(scopes);
      const position = await eventsRepository.head(
        await readsOf(request, services.reads),
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
        description: `Every change to a contact, appointment, pipeline stage, catalog item, conversation, message, automation or the workspace, whoever made it, in a stable order: an event is visible once its change is committed, and a reader that follows the cursor (or resumes with after=) never misses one. A key sees the events of the resource types its scopes read on their own routes (messages need messages:read) and nothing of the others. When a resource is deleted, its earlier events keep their place but their data becomes its tombstone. Events are kept for ${EVENTS_RETENTION} (EVENTS_RETENTION_DAYS); a position from before what retention kept answers 410 events_expired, never a silent gap.`,
        tags: ['Events'],
        querystring: EventsQuery,
        response: readResponses({ 200: Page(Event) }, { cursor: true, expires: true }),
      },
    },
    async (request, reply) => {
      const { workspaceId, scopes } = principalOf(request);
      const { limit = LIMIT_DEFAULT, cursor, after, ...query } = request.query;
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
      const db = await readsOf(request, services.reads);
      const start = after === undefined ? null : await startOf(db, ids, workspaceId, after);
      const page = await paginate(
        services.cursors,
        // One spelling per set of values, and the key's readable types: a cursor is bound to what
        // it may show, not to the order of the filters.
        { resource: 'events', workspaceId, filters: { ...filters, readable } },
        { limit, cursor },
        async (cursorKey: readonly [string] | null, take) => {
          const from = cursorKey ? positionInCursor(ids, workspaceId, cursorKey[0]) : start;
          const events = await eventsRepository.list(db, workspaceId, filters, from, take);
          // Checked after reading, in a later snapshot: a purge that removed events before the
          // read is seen here; one after it removed nothing the read returned.
          const problem = from
            ? await eventsRepository.positionProblem(db, workspaceId, from, typesRead(filters))
            : null;
          if (problem) {
            throw eventsExpired(services.config.eventsRetentionDays, cursorKey ? 'cursor' : 'after', problem);
          }
          return toEvents(ids, workspaceId, events);
        },
        // The cursor holds the last event's id: as opaque as the id itself.
        (e) => [e.id] as const,
        (key) => (key.length === 1 ? ([key[0]!] as const) : null),
      );
      // As bytes: Fastify would measure a string's length in a pass of its own before writing it.
      return reply.type('application/json; charset=utf-8').send(Buffer.from(feedPageJson(page)));
    },
  );
};

/** The position of the event id a cursor holds: an id of this workspace's feed, as `after=` takes it. */
function positionInCursor(ids: EventIdCodec, workspaceId: string, id: string): EventPosition {
  const parsed = ids.decode(workspaceId, id);
  if (parsed?.kind !== 'position') throw new ApiError('invalid_cursor', { details: { parameter: 'cursor' } });
  return parsed.position;
}
