// GET /v2/workspace: identity, status and time zone of the workspace the key belongs to.
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { notFound } from '../../shared/errors.js';
import { readResponses } from '../../shared/responses.js';
import { DateTime, NoQuery, Single, StringEnum, Uuid } from '../../shared/schemas.js';
import type { RouteOptions } from '../../services.js';

export const Workspace = Type.Object(
  {
    id: Uuid,
    name: Type.String({ maxLength: 200, examples: ['Clínica Vida'] }),
    status: StringEnum(['active', 'suspended']),
    timezone: Type.String({
      maxLength: 64,
      description: 'IANA time zone of the workspace.',
      examples: ['America/Sao_Paulo'],
    }),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false },
);
export type WorkspaceT = Static<typeof Workspace>;

export const workspaceRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  app.get(
    '/workspace',
    {
      config: { scope: 'workspace:read' },
      schema: {
        operationId: 'getWorkspace',
        summary: 'Get the workspace of this API key',
        description: 'Identity, status and time zone of the workspace the API key belongs to.',
        tags: ['Workspace'],
        querystring: NoQuery,
        response: readResponses({ 200: Single(Workspace) }),
      },
    },
    async (request) => {
      const { rows } = await services.db.query<WorkspaceT>(
        `SELECT id, name, status, timezone, api_time(created_at) AS created_at, api_time(updated_at) AS updated_at
           FROM workspaces WHERE id = $1`,
        [request.principal!.workspaceId],
        'workspace_find',
      );
      if (!rows[0]) throw notFound('workspace');
      return { data: rows[0] };
    },
  );
};
