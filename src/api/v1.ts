// Version 1 (spec 4.2): contacts and appointments, described by /v1/openapi.json (version 1.0.0).
import type { FastifyInstance } from 'fastify';
import { appointmentsRoutes } from '../modules/appointments/appointments.routes.js';
import { contactsRoutes } from '../modules/contacts/contacts.routes.js';
import { registerOpenApi, type VersionOptions } from './openapi.js';
import { API_DESCRIPTION } from './description.js';

export async function v1(app: FastifyInstance, opts: VersionOptions): Promise<void> {
  await registerOpenApi(
    app,
    {
      title: 'Workspace Public API',
      version: '1.0.0',
      description: API_DESCRIPTION,
    },
    { config: opts.services.config, inline: opts.inlineOpenApi },
  );
  const { services } = opts;
  await app.register(contactsRoutes, { services });
  await app.register(appointmentsRoutes, { services });
}
