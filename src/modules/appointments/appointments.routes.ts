// Appointment operations (spec 4.2): read-only; calendar writes are not offered.
import type { FastifyPluginAsync } from 'fastify';
import { getRoute, listRoute } from '../../shared/resource-routes.js';
import type { RouteOptions } from '../../services.js';
import { appointmentsSpec } from './appointments.repository.js';
import { Appointment, AppointmentListQuery } from './appointments.schemas.js';

const tags = ['Appointments'];

export const appointmentsRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  listRoute(app, services, {
    path: '/appointments',
    scope: 'appointments:read',
    operationId: 'listAppointments',
    summary: 'List appointments',
    description:
      'Appointments ordered by (updated_at, id) ascending. starts_after and starts_before bound starts_at inclusively and leave out appointments without a start.',
    tags,
    querystring: AppointmentListQuery,
    item: Appointment,
    spec: appointmentsSpec,
  });

  getRoute(app, services, {
    path: '/appointments/:id',
    scope: 'appointments:read',
    operationId: 'getAppointment',
    summary: 'Get an appointment',
    tags,
    item: Appointment,
    spec: appointmentsSpec,
    noun: 'appointment',
  });
};
