// Automations as the API shows them: operational summaries. Rules, conditions, actions and logs
// are the product's own and have no schema here.
import { Type } from 'typebox';
import { DateTime, Int64, NullableDateTime, StringEnum, SyncListQuery, Uuid } from '../../shared/schemas.js';

const STATUSES = ['active', 'paused', 'draft'] as const;
const TRIGGER_KINDS = [
  'contact_created',
  'contact_status_changed',
  'appointment_scheduled',
  'appointment_status_changed',
  'message_received',
  'schedule',
] as const;

export const Automation = Type.Object(
  {
    id: Uuid,
    name: Type.String({ maxLength: 200, examples: ['Confirm appointments the day before'] }),
    status: StringEnum(STATUSES),
    trigger_kind: StringEnum(TRIGGER_KINDS, { description: 'What starts a run.' }),
    last_run_at: NullableDateTime(),
    run_count: Int64(0),
    success_count: Int64(0),
    failure_count: Int64(0),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false, title: 'Automation' },
);

export const AutomationListQuery = Type.Object(
  { ...SyncListQuery, status: Type.Optional(StringEnum(STATUSES)) },
  { additionalProperties: false },
);
