// Automation operations (spec 4.3): what exists, whether it runs, what starts it and how its runs
// went.
import { readOnlyRoutes } from '../../http/resource-routes.js';
import { automationsSpec } from './automations.repository.js';
import { Automation, AutomationListQuery } from './automations.schemas.js';
import { RESOURCES } from '../resources.js';

export const automationsRoutes = readOnlyRoutes({
  path: '/automations',
  noun: 'automation',
  scope: RESOURCES.automation.readScope,
  tags: ['Automations'],
  item: Automation,
  querystring: AutomationListQuery,
  spec: automationsSpec,
});
