// SQL for automations: the summary columns only; rules and logs never leave the table.
import { equals, updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import { Automation } from './automations.schemas.js';

export const automationsSpec: ListSpec = {
  resource: 'automations',
  table: 'automations',
  columns: `id, name, status, trigger_kind, api_time(last_run_at) AS last_run_at, run_count::float8 AS run_count,
    success_count::float8 AS success_count, failure_count::float8 AS failure_count,
    api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`,
  publicFields: Object.keys(Automation.properties),
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('status')],
};
