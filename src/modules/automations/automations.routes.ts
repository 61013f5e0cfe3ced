// Automations as operational summaries: what exists, whether it runs, what starts it and how its
// runs went. Rules, conditions, actions and logs are the product's own and never leave.
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { equals, updatedAfter, type ListSpec } from '../../shared/keyset-list.js';
import { getRoute, listRoute } from '../../shared/resource-routes.js';
import { DateTime, Int64, NullableDateTime, StringEnum, SyncListQuery, Uuid } from '../../shared/schemas.js';
import type { RouteOptions } from '../../services.js';

const STATUSES = ['active', 'paused', 'draft'] as const;
const TRIGGER_KINDS = [
  'contact_created',
  'contact_status_changed',
  'appointment_scheduled',
  'appointment_status_changed',
  'message_received',
  'schedule',
] as const;

export const Automation = Type.Object(
  {
    id: Uuid,
    name: Type.String({ maxLength: 200, examples: ['Confirm appointments the day before'] }),
    status: StringEnum(STATUSES),
    trigger_kind: StringEnum(TRIGGER_KINDS, { description: 'What starts a run.' }),
    last_run_at: NullableDateTime(),
    run_count: Int64(0),
    success_count: Int64(0),
    failure_count: Int64(0),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false },
);

export const automationsSpec: ListSpec = {
  resource: 'automations',
  table: 'automations',
  columns: `id, name, status, trigger_kind, api_time(last_run_at) AS last_run_at, run_count::float8 AS run_count,
    success_count::float8 AS success_count, failure_count::float8 AS failure_count,
    api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`,
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('status')],
};

const tags = ['Automations'];

export const automationsRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  listRoute(app, services, {
    path: '/automations',
    scope: 'automations:read',
    operationId: 'listAutomations',
    summary: 'List automations',
    tags,
    querystring: Type.Object(
      { ...SyncListQuery, status: Type.Optional(StringEnum(STATUSES)) },
      { additionalProperties: false },
    ),
    item: Automation,
    spec: automationsSpec,
  });
  getRoute(app, services, {
    path: '/automations/:id',
    scope: 'automations:read',
    operationId: 'getAutomation',
    summary: 'Get an automation',
    tags,
    item: Automation,
    spec: automationsSpec,
    noun: 'automation',
  });
};
