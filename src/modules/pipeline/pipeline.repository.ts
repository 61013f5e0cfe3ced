// SQL for the stages of the workspace's default pipeline.
import { updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import { PipelineStage } from './pipeline.schemas.js';

export const pipelineStagesSpec: ListSpec = {
  resource: 'pipeline_stages',
  table: 'pipeline_stages',
  item: PipelineStage,
  sortColumn: 'updated_at',
  idType: 'text',
  filters: [updatedAfter],
};
