// Appointment operations (spec 4.2): read-only; calendar writes are not offered.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { notFound } from '../../shared/errors.js';
import { paginate } from '../../shared/pagination.js';
import { readResponses } from '../../shared/responses.js';
import { LIMIT_DEFAULT, Page, Single } from '../../shared/schemas.js';
import type { RouteOptions } from '../../services.js';
import { appointmentsRepository } from './appointments.repository.js';
import { Appointment, AppointmentIdParams, AppointmentListQuery } from './appointments.schemas.js';

const tags = ['Appointments'];

export const appointmentsRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  const { db, cursors } = services;

  app.get(
    '/appointments',
    {
      config: { scope: 'appointments:read' },
      schema: {
        operationId: 'listAppointments',
        summary: 'List appointments',
        description:
          'Appointments ordered by (updated_at, id) ascending. starts_after and starts_before bound starts_at inclusively and leave out appointments without a start.',
        tags,
        querystring: AppointmentListQuery,
        response: readResponses({ 200: Page(Appointment) }),
      },
    },
    async (request) => {
      const { workspaceId } = request.principal!;
      const { limit = LIMIT_DEFAULT, cursor, status, updated_after, starts_after, starts_before } = request.query;
      const filters = { status, updated_after, starts_after, starts_before };
      return paginate(
        cursors,
        { resource: 'appointments', workspaceId, filters },
        { limit, cursor },
        (after: readonly [string, string] | null, take) =>
          appointmentsRepository.list(db, workspaceId, {
            status,
            updatedAfter: updated_after,
            startsAfter: starts_after,
            startsBefore: starts_before,
            after,
            limit: take,
          }),
        (a) => [a.updated_at, a.id] as const,
      );
    },
  );

  app.get(
    '/appointments/:id',
    {
      config: { scope: 'appointments:read' },
      schema: {
        operationId: 'getAppointment',
        summary: 'Get an appointment',
        tags,
        params: AppointmentIdParams,
        response: readResponses({ 200: Single(Appointment) }),
      },
    },
    async (request) => {
      const appointment = await appointmentsRepository.find(db, request.principal!.workspaceId, request.params.id);
      if (!appointment) throw notFound('appointment');
      return { data: appointment };
    },
  );
};
