// The two read operations every resource offers — a keyset-paginated list and a get by id —
// declared from a ListSpec, so each resource module only says what is particular to it.
import type { FastifyInstance } from 'fastify';
import { Type, type TObject, type TSchema } from 'typebox';
import type { Scope } from '../modules/api-keys/scopes.js';
import type { Services } from '../services.js';
import { notFound } from './errors.js';
import { findRow, listRows, type ListSpec, type Position } from './keyset-list.js';
import { paginate } from './pagination.js';
import { readResponses } from './responses.js';
import { LIMIT_DEFAULT, NoQuery, Page, Single, Uuid } from './schemas.js';

interface Described {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  scope: Scope;
}

export interface ListRouteOptions extends Described {
  path: string;
  querystring: TObject;
  item: TSchema;
  spec: ListSpec;
  /** equality conditions from the path, e.g. { contact_id: params.contact_id } */
  fixed?: (params: Record<string, string>) => Record<string, unknown>;
  params?: TObject;
  /** runs before listing, e.g. to answer 404 for a parent that does not exist */
  precondition?: (workspaceId: string, params: Record<string, string>) => Promise<void>;
}

export function listRoute(app: FastifyInstance, services: Services, o: ListRouteOptions): void {
  const sortKey = (row: Record<string, string>): Position => [row[o.spec.sortColumn]!, row.id!];
  app.get(
    o.path,
    {
      config: { scope: o.scope },
      schema: {
        operationId: o.operationId,
        summary: o.summary,
        description:
          o.description ??
          `${o.summary}, ordered by (${o.spec.sortColumn}, id) ascending. Page with page.next_cursor; for incremental sync pass the ${o.spec.sortColumn} of the last item you stored as ${o.spec.sortColumn.replace('_at', '')}_after.`,
        tags: o.tags,
        ...(o.params ? { params: o.params } : {}),
        querystring: o.querystring,
        response: readResponses({ 200: Page(o.item) }),
      },
    },
    async (request) => {
      const { workspaceId } = request.principal!;
      const params = (request.params ?? {}) as Record<string, string>;
      const {
        limit = LIMIT_DEFAULT,
        cursor,
        ...filters
      } = request.query as Record<string, unknown> & {
        limit?: number;
        cursor?: string;
      };
      await o.precondition?.(workspaceId, params);
      const fixed = o.fixed?.(params) ?? {};
      return paginate(
        services.cursors,
        { resource: o.spec.resource, workspaceId, filters: { ...filters, ...fixed } },
        { limit, cursor },
        (after: Position | null, take) =>
          listRows<Record<string, string>>(services.db, o.spec, workspaceId, filters, after, take, fixed),
        sortKey,
      );
    },
  );
}

export interface GetRouteOptions extends Described {
  path: string;
  item: TSchema;
  spec: ListSpec;
  /** "catalog item": the 404 message names it */
  noun: string;
}

export function getRoute(app: FastifyInstance, services: Services, o: GetRouteOptions): void {
  const id = o.spec.idType === 'uuid' ? Uuid : Type.String({ minLength: 1, maxLength: 128 });
  app.get(
    o.path,
    {
      config: { scope: o.scope },
      schema: {
        operationId: o.operationId,
        summary: o.summary,
        description: `The ${o.noun} with this id; 404 when the workspace of the key has none.`,
        tags: o.tags,
        params: Type.Object({ id }, { additionalProperties: false }),
        querystring: NoQuery,
        response: readResponses({ 200: Single(o.item) }),
      },
    },
    async (request) => {
      const { id: wanted } = request.params as { id: string };
      const row = await findRow(services.db, o.spec, request.principal!.workspaceId, wanted);
      if (!row) throw notFound(o.noun);
      return { data: row };
    },
  );
}
