// Pipeline operations (spec 4.3): the stages contacts move through, readable with contacts:read.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/principal.js';
import { listOperation, listPage } from '../../http/resource-routes.js';
import type { RouteOptions } from '../../services.js';
import { pipelineStagesSpec as spec } from './pipeline.repository.js';
import { PipelineStage, PipelineStageListQuery } from './pipeline.schemas.js';
import { RESOURCES } from '../resources.js';

export const pipelineRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  app.get(
    '/pipeline/stages',
    listOperation({
      scope: RESOURCES.pipeline_stage.readScope,
      operationId: 'listPipelineStages',
      summary: 'List pipeline stages',
      description: 'Ordered by (updated_at, id) like every list; sort by position to show them in pipeline order.',
      tags: ['Contacts'],
      querystring: PipelineStageListQuery,
      item: PipelineStage,
      spec,
    }),
    async (request, reply) => listPage(services, reply, spec, principalOf(request).workspaceId, request.query),
  );
};
