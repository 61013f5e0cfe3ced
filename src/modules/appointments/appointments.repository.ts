// SQL for appointments: the public columns and filters, on the shared keyset builder.
import { equals, instantBinding, updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
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
    {
      param: 'starts_after',
      where: (p) => `starts_at >= ${p}::timestamptz`,
      planEachTime: true,
      boundAs: instantBinding,
    },
    {
      param: 'starts_before',
      where: (p) => `starts_at <= ${p}::timestamptz`,
      planEachTime: true,
      boundAs: instantBinding,
    },
  ],
};
