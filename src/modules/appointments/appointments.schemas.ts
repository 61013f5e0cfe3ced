// Appointment resource (spec 2.4, 3.2). Read-only through the interface.
import { Type } from 'typebox';
import { Cursor, DateTime, Limit, NullableDateTime, NullableString, Uuid } from '../../shared/schemas.js';

export const APPOINTMENT_STATUSES = [
  'scheduled',
  'confirmed',
  'cancelled',
  'rescheduled',
  'completed',
  'no_show',
] as const;
export type AppointmentStatus = (typeof APPOINTMENT_STATUSES)[number];

const AppointmentStatusSchema = Type.Unsafe<AppointmentStatus>({
  type: 'string',
  enum: [...APPOINTMENT_STATUSES],
  title: 'AppointmentStatus',
});

export const Appointment = Type.Object(
  {
    id: Uuid,
    contact_id: NullableString(36, { format: 'uuid' }),
    starts_at: NullableDateTime(),
    ends_at: NullableDateTime(),
    timezone: Type.String({
      maxLength: 64,
      description: 'IANA time zone the appointment was booked in.',
      examples: ['America/Sao_Paulo'],
    }),
    status: AppointmentStatusSchema,
    source: NullableString(120, { description: 'Where the appointment was booked.', examples: ['website'] }),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false, title: 'Appointment' },
);

export const AppointmentListQuery = Type.Object(
  {
    limit: Type.Optional(Limit),
    cursor: Type.Optional(Cursor),
    updated_after: Type.Optional({
      ...DateTime,
      description: 'Only appointments updated strictly after this instant.',
    }),
    status: Type.Optional(AppointmentStatusSchema),
    starts_after: Type.Optional({ ...DateTime, description: 'Only appointments starting at or after this instant.' }),
    starts_before: Type.Optional({ ...DateTime, description: 'Only appointments starting at or before this instant.' }),
  },
  { additionalProperties: false },
);
