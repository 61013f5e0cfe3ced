// SQL for appointments: the public columns and filters, on the shared keyset builder.
import { equals, instantFilter, updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import { Appointment } from './appointments.schemas.js';

export const appointmentsSpec: ListSpec = {
  resource: 'appointments',
  table: 'appointments',
  item: Appointment,
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [
    updatedAfter,
    equals('status'),
    instantFilter('starts_after', 'starts_at', '>=', { planEachTime: true }),
    instantFilter('starts_before', 'starts_at', '<=', { planEachTime: true }),
  ],
};
