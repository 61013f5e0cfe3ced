// SQL for catalog items: the public columns and filters. Private commercial notes and internal
// metadata stay in the table and out of every answer.
import { equals, updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import { CatalogItem } from './catalog.schemas.js';

export const catalogItemsSpec: ListSpec = {
  resource: 'catalog_items',
  table: 'catalog_items',
  item: CatalogItem,
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('kind'), equals('active')],
};
