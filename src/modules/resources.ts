// The resources of the API, one entry each: the schema of its public representation, the table it
// is read from, the scope that reads it, and what its events carry once it is deleted. Routes take
// their read scope from here, the events feed and webhooks decide which events a key may see from
// here, and the database's representation functions are generated from here (src/infra/
// representation.ts): one home for "which scope reads which resource" and for each resource's shape.
import { Type, type TObject } from 'typebox';
import { NullableString, Uuid } from '../shared/schemas.js';
import type { Scope } from '../shared/scopes.js';
import type { CodeUnit } from '../infra/migrate.js';
import { representationFunctions } from '../infra/representation.js';
import { Appointment } from './appointments/appointments.schemas.js';
import { Automation } from './automations/automations.schemas.js';
import { CatalogItem } from './catalog/catalog.schemas.js';
import { Contact } from './contacts/contacts.schemas.js';
import { Conversation, Message } from './conversations/conversations.schemas.js';
import { PipelineStage } from './pipeline/pipeline.schemas.js';
import { Workspace } from './workspaces/workspaces.schemas.js';

/** What a deleted resource's events carry as data: its id. */
export const Tombstone = Type.Object(
  { id: Type.String({ maxLength: 128, description: 'Id of the deleted resource.' }) },
  { additionalProperties: false, title: 'Tombstone' },
);

/** A deleted contact's tombstone keeps its external_id, so a mirror keyed by external id can apply it. */
export const ContactTombstone = Type.Object(
  {
    id: { ...Uuid, description: 'Id of the deleted contact.' },
    external_id: NullableString(128, { description: 'The external_id the contact had; null when it had none.' }),
  },
  { additionalProperties: false, title: 'ContactTombstone' },
);

const tombstone = { schema: Tombstone, name: 'Tombstone' };

export interface Resource {
  /** the resource's public representation, as its GET answers it */
  item: TObject;
  /** the schema's title, naming it in the OpenAPI documents */
  name: string;
  table: string;
  /** the scope that reads it on its own routes, and its events in the feed and through webhooks (spec 4.3) */
  readScope: Scope;
  /** what its events carry after its deletion; null: it has no deletion event (a workspace's feed goes with it) */
  tombstone: { schema: TObject; name: string } | null;
}

export const RESOURCE_TYPES = [
  'workspace',
  'contact',
  'pipeline_stage',
  'appointment',
  'catalog_item',
  'conversation',
  'message',
  'automation',
] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export const RESOURCES: Readonly<Record<ResourceType, Resource>> = {
  workspace: { item: Workspace, name: 'Workspace', table: 'workspaces', readScope: 'workspace:read', tombstone: null },
  contact: {
    item: Contact,
    name: 'Contact',
    table: 'contacts',
    readScope: 'contacts:read',
    tombstone: { schema: ContactTombstone, name: 'ContactTombstone' },
  },
  pipeline_stage: {
    item: PipelineStage,
    name: 'PipelineStage',
    table: 'pipeline_stages',
    readScope: 'contacts:read',
    tombstone,
  },
  appointment: {
    item: Appointment,
    name: 'Appointment',
    table: 'appointments',
    readScope: 'appointments:read',
    tombstone,
  },
  catalog_item: {
    item: CatalogItem,
    name: 'CatalogItem',
    table: 'catalog_items',
    readScope: 'catalog:read',
    tombstone,
  },
  conversation: {
    item: Conversation,
    name: 'Conversation',
    table: 'conversations',
    readScope: 'conversations:read',
    tombstone,
  },
  message: { item: Message, name: 'Message', table: 'messages', readScope: 'messages:read', tombstone },
  automation: {
    item: Automation,
    name: 'Automation',
    table: 'automations',
    readScope: 'automations:read',
    tombstone,
  },
};

/** The resource types whose events a key with `scopes` may see, in RESOURCE_TYPES order. */
export const readableResourceTypes = (scopes: ReadonlySet<Scope>): ResourceType[] =>
  RESOURCE_TYPES.filter((t) => scopes.has(RESOURCES[t].readScope));

/**
 * The database code made from these declarations, applied by every migrate with the files of
 * db/code: the resources' representation functions (what an event records of a changed row, and
 * which properties the feed writes), before 03_public_json.sql and the triggers that call them.
 */
export const GENERATED_DATABASE_CODE: readonly CodeUnit[] = [
  {
    name: '02_representations',
    sql: representationFunctions(
      RESOURCE_TYPES.map((kind) => ({ kind, table: RESOURCES[kind].table, item: RESOURCES[kind].item })),
    ),
  },
];
