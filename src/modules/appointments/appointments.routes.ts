// Appointment operations (spec 4.2): read-only; calendar writes are not offered.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/principal.js';
import { getOne, getOperation, listOperation, listPage } from '../../http/resource-routes.js';
import type { RouteOptions } from '../../services.js';
import { appointmentsSpec as spec } from './appointments.repository.js';
import { Appointment, AppointmentListQuery } from './appointments.schemas.js';
import { RESOURCES } from '../resources.js';

const described = { scope: RESOURCES.appointment.readScope, tags: ['Appointments'], item: Appointment, spec } as const;

export const appointmentsRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  app.get(
    '/appointments',
    listOperation({
      ...described,
      operationId: 'listAppointments',
      summary: 'List appointments',
      description:
        'Appointments ordered by (updated_at, id) ascending. starts_after and starts_before bound starts_at inclusively and leave out appointments without a start.',
      querystring: AppointmentListQuery,
    }),
    async (request, reply) => listPage(services, reply, spec, principalOf(request).workspaceId, request.query),
  );

  app.get(
    '/appointments/:id',
    getOperation({ ...described, operationId: 'getAppointment', summary: 'Get an appointment', noun: 'appointment' }),
    async (request, reply) =>
      getOne(services, reply, spec, 'appointment', principalOf(request).workspaceId, request.params.id),
  );
};
