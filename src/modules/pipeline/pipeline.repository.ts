// SQL for the stages of the workspace's default pipeline.
import { updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import { PipelineStage } from './pipeline.schemas.js';

export const pipelineStagesSpec: ListSpec = {
  resource: 'pipeline_stages',
  table: 'pipeline_stages',
  columns: 'id, name, position, api_time(created_at) AS created_at, api_time(updated_at) AS updated_at',
  publicFields: Object.keys(PipelineStage.properties),
  sortColumn: 'updated_at',
  idType: 'text',
  filters: [updatedAfter],
};
