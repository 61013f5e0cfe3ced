// GET /v2/workspace: identity, status and time zone of the workspace the key belongs to.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { readsOf } from '../../http/consistency.js';
import { principalOf } from '../../http/principal.js';
import { readResponses } from '../../http/responses.js';
import type { RouteOptions } from '../../services.js';
import { notFound } from '../../shared/errors.js';
import { NoQuery, Single } from '../../shared/schemas.js';
import { workspacesRepository } from './workspaces.repository.js';
import { Workspace } from './workspaces.schemas.js';
import { RESOURCES } from '../resources.js';

export const workspaceRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  app.get(
    '/workspace',
    {
      config: { scope: RESOURCES.workspace.readScope },
      schema: {
        operationId: 'getWorkspace',
        summary: 'Get the workspace of this API key',
        description: 'Identity, status and time zone of the workspace the API key belongs to.',
        tags: ['Workspace'],
        querystring: NoQuery,
        // 404 only if the workspace is deleted between authentication and this read.
        response: readResponses({ 200: Single(Workspace) }, { notFound: true }),
      },
    },
    async (request) => {
      const workspace = await workspacesRepository.find(
        await readsOf(request, services.reads),
        principalOf(request).workspaceId,
      );
      if (!workspace) throw notFound('workspace');
      return { data: workspace };
    },
  );
};
