// Version 2 (spec 4.3): every read resource of the workspace, per-group scopes and the events feed,
// described by /v2/openapi.json. Contacts and appointments are the v1 objects and operations.
import type { FastifyInstance } from 'fastify';
import { appointmentsRoutes } from '../modules/appointments/appointments.routes.js';
import { automationsRoutes } from '../modules/automations/automations.routes.js';
import { catalogRoutes } from '../modules/catalog/catalog.routes.js';
import { contactsRoutes, contactsV2Routes } from '../modules/contacts/contacts.routes.js';
import { conversationsRoutes } from '../modules/conversations/conversations.routes.js';
import { eventsRoutes } from '../modules/events/events.routes.js';
import { pipelineRoutes } from '../modules/pipeline/pipeline.routes.js';
import { webhooksSection } from '../modules/webhooks/webhooks.openapi.js';
import { workspaceRoutes } from '../modules/workspaces/workspaces.routes.js';
import { API_DESCRIPTION, SYNC_GUIDE, V2_DESCRIPTION } from './description.js';
import { registerOpenApi, type VersionOptions } from './openapi.js';

export async function v2(app: FastifyInstance, opts: VersionOptions): Promise<void> {
  await registerOpenApi(
    app,
    {
      title: 'Workspace Public API',
      version: '2.0.0',
      description: `${API_DESCRIPTION}\n\n${V2_DESCRIPTION}\n\n${SYNC_GUIDE}`,
    },
    { config: opts.services.config, inline: opts.inlineOpenApi, webhooks: webhooksSection() },
  );
  const { services } = opts;
  await app.register(workspaceRoutes, { services });
  await app.register(contactsRoutes, { services, lookups: true });
  await app.register(contactsV2Routes, { services });
  await app.register(pipelineRoutes, { services });
  await app.register(appointmentsRoutes, { services });
  await app.register(catalogRoutes, { services });
  await app.register(conversationsRoutes, { services });
  await app.register(automationsRoutes, { services });
  await app.register(eventsRoutes, { services });
}
