// SQL for automations: the summary columns only; rules and logs never leave the table.
import { equals, updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import { Automation } from './automations.schemas.js';

export const automationsSpec: ListSpec = {
  resource: 'automations',
  table: 'automations',
  item: Automation,
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('status')],
};
