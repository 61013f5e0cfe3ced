// Catalog operations (spec 4.3): read-only lists and gets of the public products and services.
import { readOnlyRoutes } from '../../http/resource-routes.js';
import { catalogItemsSpec } from './catalog.repository.js';
import { CatalogItem, CatalogListQuery } from './catalog.schemas.js';
import { RESOURCES } from '../resources.js';

export const catalogRoutes = readOnlyRoutes({
  path: '/catalog/items',
  noun: 'catalog item',
  scope: RESOURCES.catalog_item.readScope,
  tags: ['Catalog'],
  item: CatalogItem,
  querystring: CatalogListQuery,
  spec: catalogItemsSpec,
});
