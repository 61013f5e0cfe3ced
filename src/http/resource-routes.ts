// The two read operations every resource offers — a keyset-paginated list and a get by id. A
// resource module declares each with the operation's options (listOperation, getOperation) and a
// one-line handler (listPage, getOne). The handler is typed by the TypeBox provider from the
// schema the options carry: the query and path it reads are the ones that schema validated. A
// resource that offers exactly these two declares them in one call (readOnlyRoutes).
//
// Both answer through the operation's response schema, the one serializer of a resource's answers:
// a row read by the list's select list holds the item's properties, and the serializer writes the
// schema's properties and nothing else whatever a row holds.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type, type TObject, type TSchema } from 'typebox';
import { readsOf } from './consistency.js';
import { cursorFilters, findRow, listRows, positionIn, type ListSpec, type Position } from '../infra/keyset-list.js';
import type { RouteOptions, Services } from '../services.js';
import { notFound } from '../shared/errors.js';
import { paginate } from '../shared/pagination.js';
import { LIMIT_DEFAULT, NoQuery, Page, Single, Uuid } from '../shared/schemas.js';
import type { Scope } from '../shared/scopes.js';
import { principalOf } from './principal.js';
import { readResponses } from './responses.js';

interface Described {
  operationId: string;
  summary: string;
  description?: string;
  tags: readonly string[];
  scope: Scope;
  item: TSchema;
  spec: ListSpec;
}

const NoParams = Type.Object({}, { additionalProperties: false });

/** Options of a list operation: its scope, its OpenAPI entry, its query (and path) schema. */
export function listOperation<Q extends TObject, P extends TObject = typeof NoParams>(
  o: Described & { querystring: Q; params?: P },
) {
  const { sortColumn } = o.spec;
  return {
    config: { scope: o.scope },
    schema: {
      operationId: o.operationId,
      summary: o.summary,
      description:
        o.description ??
        `${o.summary}, ordered by (${sortColumn}, id) ascending. Page with page.next_cursor; for incremental sync pass the ${sortColumn} of the last item you stored as ${sortColumn.replace('_at', '')}_after.`,
      tags: [...o.tags],
      params: (o.params ?? NoParams) as P,
      querystring: o.querystring,
      response: readResponses({ 200: Page(o.item) }, { cursor: true, path: !!o.params, notFound: !!o.params }),
    },
  };
}

/** What every list query carries besides its filters. */
export type PageQuery = { limit?: number; cursor?: string } & Record<string, unknown>;

/** Answers one page of a list: the filters of `query`, plus equality conditions from the path (`fixed`). */
export async function listPage(
  services: Services,
  reply: FastifyReply,
  spec: ListSpec,
  workspaceId: string,
  query: PageQuery,
  fixed: Record<string, unknown> = {},
) {
  const { limit = LIMIT_DEFAULT, cursor, ...filters } = query;
  const db = await readsOf(reply.request, services.reads);
  const sortKey = (row: Record<string, string>): Position => [row[spec.sortColumn] ?? '', row.id ?? ''];
  const page = await paginate(
    services.cursors,
    { resource: spec.resource, workspaceId, ...cursorFilters(spec, filters, fixed) },
    { limit, cursor },
    (after: Position | null, take) =>
      listRows<Record<string, string>>(db, spec, workspaceId, filters, after, take, fixed),
    sortKey,
    (key) => positionIn(spec, key),
  );
  return reply.send(page);
}

/** Options of a get-by-id operation; `noun` ("catalog item") names the resource in its 404. */
export function getOperation(o: Described & { noun: string }) {
  const id = o.spec.idType === 'uuid' ? Uuid : Type.String({ minLength: 1, maxLength: 128 });
  return {
    config: { scope: o.scope },
    schema: {
      operationId: o.operationId,
      summary: o.summary,
      description: `The ${o.noun} with this id; 404 when the workspace of the key has none.`,
      tags: [...o.tags],
      params: Type.Object({ id }, { additionalProperties: false }),
      querystring: NoQuery,
      response: readResponses({ 200: Single(o.item) }, { path: true, notFound: true }),
    },
  };
}

/**
 * Answers the row with this id (or this value of `by`) in the workspace, as its list shows it; 404
 * naming the resource otherwise.
 */
export async function getOne(
  services: Services,
  reply: FastifyReply,
  spec: ListSpec,
  noun: string,
  workspaceId: string,
  id: string,
  by?: 'external_id',
) {
  const row = await findRow(await readsOf(reply.request, services.reads), spec, workspaceId, id, by);
  if (!row) throw notFound(noun);
  return reply.send({ data: row });
}

/** A resource read through a list at `path` and a get at `path`/:id, and nothing else. */
interface ReadOnlyResource<Q extends TObject> extends Omit<Described, 'operationId' | 'summary'> {
  path: string;
  /** The resource in words ("catalog item"): it names the operations and the 404. */
  noun: string;
  querystring: Q;
}

/**
 * The routes of a read-only resource: listX and getX, named from `noun` as every other
 * operation is ("catalog item": listCatalogItems "List catalog items", getCatalogItem "Get a
 * catalog item").
 */
export function readOnlyRoutes<Q extends TObject>(r: ReadOnlyResource<Q>): FastifyPluginAsyncTypebox<RouteOptions> {
  const { path, noun, querystring, description, ...described } = r;
  const pascal = (words: string) => words.replace(/(?:^| )(\w)/g, (_, c: string) => c.toUpperCase());
  const article = /^[aeiou]/.test(noun) ? 'an' : 'a';
  return async (app, { services }) => {
    app.get(
      path,
      listOperation({
        ...described,
        operationId: `list${pascal(noun)}s`,
        summary: `List ${noun}s`,
        description,
        querystring,
      }),
      // The query `querystring` validated; TypeScript cannot see that a generic Q holds limit and cursor.
      async (request, reply) =>
        listPage(services, reply, described.spec, principalOf(request).workspaceId, request.query as PageQuery),
    );
    app.get(
      `${path}/:id`,
      getOperation({ ...described, operationId: `get${pascal(noun)}`, summary: `Get ${article} ${noun}`, noun }),
      async (request, reply) =>
        getOne(services, reply, described.spec, noun, principalOf(request).workspaceId, request.params.id),
    );
  };
}
