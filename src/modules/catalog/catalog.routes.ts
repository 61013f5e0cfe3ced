// Catalog items: the workspace's public products and services. Private commercial notes and
// internal metadata stay in the table and out of every answer.
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { equals, updatedAfter, type ListSpec } from '../../shared/keyset-list.js';
import { getRoute, listRoute } from '../../shared/resource-routes.js';
import { DateTime, NullableInteger, NullableString, StringEnum, SyncListQuery, Uuid } from '../../shared/schemas.js';
import type { RouteOptions } from '../../services.js';

const KINDS = ['product', 'service'] as const;

export const CatalogItem = Type.Object(
  {
    id: Uuid,
    kind: StringEnum(KINDS),
    name: Type.String({ maxLength: 200, examples: ['Initial consultation'] }),
    description: NullableString(2000),
    price_amount: NullableInteger('int64', 0, Number.MAX_SAFE_INTEGER, {
      description: 'Price in the minor unit of the currency (cents); null when the item has no list price.',
      examples: [15000],
    }),
    currency: NullableString(3, { pattern: '^[A-Z]{3}$', description: 'ISO 4217 code.', examples: ['BRL'] }),
    duration_minutes: NullableInteger('int32', 1, 100_000, { description: 'Length of a service, when it has one.' }),
    active: Type.Boolean({ description: 'Whether the item is currently offered.' }),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false },
);

export const catalogItemsSpec: ListSpec = {
  resource: 'catalog_items',
  table: 'catalog_items',
  columns: `id, kind, name, description, price_amount::float8 AS price_amount, currency, duration_minutes, active,
    api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`,
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('kind'), equals('active')],
};

const tags = ['Catalog'];

export const catalogRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  listRoute(app, services, {
    path: '/catalog/items',
    scope: 'catalog:read',
    operationId: 'listCatalogItems',
    summary: 'List catalog items',
    tags,
    querystring: Type.Object(
      {
        ...SyncListQuery,
        kind: Type.Optional(StringEnum(KINDS)),
        active: Type.Optional(Type.Boolean({ description: 'true: only items on offer; false: only retired ones.' })),
      },
      { additionalProperties: false },
    ),
    item: CatalogItem,
    spec: catalogItemsSpec,
  });
  getRoute(app, services, {
    path: '/catalog/items/:id',
    scope: 'catalog:read',
    operationId: 'getCatalogItem',
    summary: 'Get a catalog item',
    tags,
    item: CatalogItem,
    spec: catalogItemsSpec,
    noun: 'catalog item',
  });
};
