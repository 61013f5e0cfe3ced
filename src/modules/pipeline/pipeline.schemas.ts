// Pipeline stages as the API shows them. A stage's id is the contact status it stands for, so
// contact.status names its stage.
import { Type } from 'typebox';
import { DateTime, Int32, SyncListQuery } from '../../shared/schemas.js';
import { ContactStatusSchema } from '../contacts/contacts.schemas.js';

export const PipelineStage = Type.Object(
  {
    id: { ...ContactStatusSchema, description: 'The contact status this stage stands for.' },
    name: Type.String({ maxLength: 100, examples: ['Qualified conversation'] }),
    position: Int32(1, 1000, { description: 'Order of the stage in the pipeline, from 1.' }),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false, title: 'PipelineStage' },
);

export const PipelineStageListQuery = Type.Object(SyncListQuery, { additionalProperties: false });
