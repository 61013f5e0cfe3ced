// Catalog operations (spec 4.3): read-only lists and gets of the public products and services.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { getOne, getOperation, listOperation, listPage } from '../../http/resource-routes.js';
import { principalOf } from '../../http/principal.js';
import type { RouteOptions } from '../../services.js';
import { catalogItemsSpec as spec } from './catalog.repository.js';
import { CatalogItem, CatalogListQuery } from './catalog.schemas.js';
import { RESOURCES } from '../resources.js';

const described = { scope: RESOURCES.catalog_item.readScope, tags: ['Catalog'], item: CatalogItem, spec } as const;

export const catalogRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  app.get(
    '/catalog/items',
    listOperation({
      ...described,
      operationId: 'listCatalogItems',
      summary: 'List catalog items',
      querystring: CatalogListQuery,
    }),
    async (request, reply) => listPage(services, reply, spec, principalOf(request).workspaceId, request.query),
  );
  app.get(
    '/catalog/items/:id',
    getOperation({ ...described, operationId: 'getCatalogItem', summary: 'Get a catalog item', noun: 'catalog item' }),
    async (request, reply) =>
      getOne(services, reply, spec, 'catalog item', principalOf(request).workspaceId, request.params.id),
  );
};
