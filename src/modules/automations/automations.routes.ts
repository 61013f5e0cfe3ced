// Automation operations (spec 4.3): what exists, whether it runs, what starts it and how its runs
// went.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/principal.js';
import { getOne, getOperation, listOperation, listPage } from '../../http/resource-routes.js';
import type { RouteOptions } from '../../services.js';
import { automationsSpec as spec } from './automations.repository.js';
import { Automation, AutomationListQuery } from './automations.schemas.js';
import { RESOURCES } from '../resources.js';

const described = { scope: RESOURCES.automation.readScope, tags: ['Automations'], item: Automation, spec } as const;

export const automationsRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  app.get(
    '/automations',
    listOperation({
      ...described,
      operationId: 'listAutomations',
      summary: 'List automations',
      querystring: AutomationListQuery,
    }),
    async (request, reply) => listPage(services, reply, spec, principalOf(request).workspaceId, request.query),
  );
  app.get(
    '/automations/:id',
    getOperation({ ...described, operationId: 'getAutomation', summary: 'Get an automation', noun: 'automation' }),
    async (request, reply) =>
      getOne(services, reply, spec, 'automation', principalOf(request).workspaceId, request.params.id),
  );
};
