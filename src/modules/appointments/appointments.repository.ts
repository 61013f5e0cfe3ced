// SQL for appointments: the public columns and filters, on the shared keyset builder.
import { equals, updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import { Appointment } from './appointments.schemas.js';

const APPOINTMENT_COLUMNS = `id, contact_id, api_time(starts_at) AS starts_at, api_time(ends_at) AS ends_at,
  timezone, status, source, api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`;

export const appointmentsSpec: ListSpec = {
  resource: 'appointments',
  table: 'appointments',
  columns: APPOINTMENT_COLUMNS,
  publicFields: Object.keys(Appointment.properties),
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [
    updatedAfter,
    equals('status'),
    { param: 'starts_after', where: (p) => `starts_at >= ${p}::timestamptz`, planEachTime: true },
    { param: 'starts_before', where: (p) => `starts_at <= ${p}::timestamptz`, planEachTime: true },
  ],
};
