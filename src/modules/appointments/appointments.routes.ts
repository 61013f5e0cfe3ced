// Appointment operations (spec 4.2): read-only; calendar writes are not offered.
import { readOnlyRoutes } from '../../http/resource-routes.js';
import { appointmentsSpec } from './appointments.repository.js';
import { Appointment, AppointmentListQuery } from './appointments.schemas.js';
import { RESOURCES } from '../resources.js';

export const appointmentsRoutes = readOnlyRoutes({
  path: '/appointments',
  noun: 'appointment',
  scope: RESOURCES.appointment.readScope,
  tags: ['Appointments'],
  description:
    'Appointments ordered by (updated_at, id) ascending. starts_after and starts_before bound starts_at inclusively and leave out appointments without a start.',
  item: Appointment,
  querystring: AppointmentListQuery,
  spec: appointmentsSpec,
});
