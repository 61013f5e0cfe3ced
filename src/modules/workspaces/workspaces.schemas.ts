// The workspace as the API shows it: identity, status and time zone.
import { Type } from 'typebox';
import { DateTime, StringEnum, Uuid } from '../../shared/schemas.js';

export const Workspace = Type.Object(
  {
    id: Uuid,
    name: Type.String({ maxLength: 200, examples: ['Clínica Vida'] }),
    status: StringEnum(['active', 'suspended']),
    timezone: Type.String({
      maxLength: 64,
      description: 'IANA time zone of the workspace.',
      examples: ['America/Sao_Paulo'],
    }),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false, title: 'Workspace' },
);
