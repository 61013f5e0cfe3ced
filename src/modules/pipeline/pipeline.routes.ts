// Pipeline stages: the stages of the workspace's default pipeline, in order. A stage's id is the
// contact status it stands for, so contact.status names its stage.
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { updatedAfter, type ListSpec } from '../../shared/keyset-list.js';
import { listRoute } from '../../shared/resource-routes.js';
import { DateTime, Int32, SyncListQuery } from '../../shared/schemas.js';
import type { RouteOptions } from '../../services.js';
import { ContactStatusSchema } from '../contacts/contacts.schemas.js';

export const PipelineStage = Type.Object(
  {
    id: { ...ContactStatusSchema, description: 'The contact status this stage stands for.' },
    name: Type.String({ maxLength: 100, examples: ['Qualified conversation'] }),
    position: Int32(1, 1000, { description: 'Order of the stage in the pipeline, from 1.' }),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false },
);

export const pipelineStagesSpec: ListSpec = {
  resource: 'pipeline_stages',
  table: 'pipeline_stages',
  columns: 'id, name, position, api_time(created_at) AS created_at, api_time(updated_at) AS updated_at',
  sortColumn: 'updated_at',
  idType: 'text',
  filters: [updatedAfter],
};

export const pipelineRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  listRoute(app, services, {
    path: '/pipeline/stages',
    scope: 'contacts:read',
    operationId: 'listPipelineStages',
    summary: 'List pipeline stages',
    description: 'Ordered by (updated_at, id) like every list; sort by position to show them in pipeline order.',
    tags: ['Contacts'],
    querystring: Type.Object(SyncListQuery, { additionalProperties: false }),
    item: PipelineStage,
    spec: pipelineStagesSpec,
  });
};
