// TypeScript that clients generated from the published documents must accept, and what they must
// refuse (each marked @ts-expect-error, which is itself an error once the line compiles).
// test/openapi-types.test.ts compiles these against each generator's output through a module
// `./types` exporting the names imported here. Kept as text: they compile only next to generated
// types, which are not part of this repository. Whole resources are made from their schemas.
import { Appointment } from '../src/modules/appointments/appointments.schemas.js';
import { Contact } from '../src/modules/contacts/contacts.schemas.js';
import { sampleOf, SAMPLE_ID, SAMPLE_TIME } from './samples.js';

/** Contact write bodies, the same in v1 and v2. */
export const CONTACT_CASES = `
import type { ContactCreate, ContactUpdate } from './types';

// What the service takes. A key sent as null still counts as carried.
export const creates: ContactCreate[] = [
  { name: 'Ana Souza', email: 'ana@example.com' },
  { company_name: 'Acme', phone: '+5511912345678', status: 'talking' },
  { name: null, company_name: 'Acme', whatsapp: null, origin: 'import' },
];
export const updates: ContactUpdate[] = [{ status: 'lost' }, { email: null }, { origin: 'import', name: 'Ana' }];

// What it refuses.
// @ts-expect-error neither name nor company_name, and no email, phone or whatsapp
export const empty: ContactCreate = {};
// @ts-expect-error a name without email, phone or whatsapp
export const nameOnly: ContactCreate = { name: 'x' };
// @ts-expect-error an e-mail without name or company_name
export const emailOnly: ContactCreate = { email: 'x@example.com' };
// @ts-expect-error status is one of the ContactStatus values
export const badStatus: ContactCreate = { name: 'x', email: 'x@example.com', status: 'won' };
// @ts-expect-error a property the body does not take
export const unknownProperty: ContactCreate = { name: 'x', email: 'x@example.com', notes: 'x' };
// @ts-expect-error an update changes at least one property
export const emptyUpdate: ContactUpdate = {};
`;

/** The batch item, the events feed and the webhook bodies: v2 only. */
export const V2_CASES = `
import type { ContactBatchItem, Event, WebhookEventBody, WebhookTest } from './types';

export const items: ContactBatchItem[] = [
  { external_id: 'crm-1', name: 'Ana' },
  { external_id: 'crm-2', email: null },
];
// @ts-expect-error an item carries something to write besides its external_id
export const bare: ContactBatchItem = { external_id: 'crm-3' };
// @ts-expect-error an item names its contact by external_id
export const anonymous: ContactBatchItem = { name: 'Ana', email: 'ana@example.com' };

const id = '${SAMPLE_ID}';
const at = '${SAMPLE_TIME}';
const contact = ${JSON.stringify(sampleOf(Contact, { external_id: 'crm-1', status: 'talking' }))} as const;
const appointment = ${JSON.stringify(sampleOf(Appointment))} as const;
const common = { id: 'evt_q2Xc0Lw9RkT1mHb7YpZs4A', resource_id: id, occurred_at: at, request_id: null } as const;

export const events: Event[] = [
  { ...common, type: 'contact.created', resource_type: 'contact', data: contact },
  // An earlier event of a contact deleted since: its data became the tombstone.
  { ...common, type: 'contact.updated', resource_type: 'contact', data: { id, external_id: null } },
  { ...common, type: 'contact.deleted', resource_type: 'contact', data: { id, external_id: 'crm-1' } },
  { ...common, type: 'appointment.updated', resource_type: 'appointment', data: appointment },
  { ...common, type: 'appointment.deleted', resource_type: 'appointment', data: { id } },
];
// @ts-expect-error a contact event carries a contact, not an appointment
export const mismatched: Event = { ...common, type: 'contact.created', resource_type: 'contact', data: appointment };
// @ts-expect-error the type and the resource type agree
export const crossed: Event = { ...common, type: 'contact.created', resource_type: 'appointment', data: appointment };
// @ts-expect-error a deletion carries the tombstone, nothing of the resource
export const notErased: Event = { ...common, type: 'contact.deleted', resource_type: 'contact', data: { id, external_id: null, name: 'Ana' } };
// @ts-expect-error a workspace has no deletion event
export const workspaceDeleted: Event = { ...common, type: 'workspace.deleted', resource_type: 'workspace', data: { id } };

/** Narrowing on type gives the data's type. */
export function apply(event: Event): string | null {
  // @ts-expect-error before narrowing, data may be a resource without external_id
  void event.data.external_id;
  switch (event.type) {
    case 'contact.deleted': {
      const tombstone: { id: string; external_id: string | null } = event.data;
      return tombstone.external_id;
    }
    case 'contact.created':
    case 'contact.updated':
      return 'status' in event.data ? event.data.status : event.data.external_id;
    case 'workspace.updated':
      return event.data.timezone;
    case 'appointment.deleted':
      // @ts-expect-error a tombstone carries only the id
      return event.data.status;
    default:
      return null;
  }
}

/** A receiver tells a test message from an event by its type. */
export function receive(body: WebhookEventBody | WebhookTest): string {
  if (body.type === 'webhook.test') return body.data.endpoint_id;
  return body.resource_id;
}
// @ts-expect-error a test message is not an event of the feed
export const testAsEvent: WebhookEventBody = { id: 'test_x', type: 'webhook.test', occurred_at: at, data: { endpoint_id: id, message: 'hi' } };
`;

/** The names the cases import, as each generator's output spells them. */
export const ADAPTERS = {
  'openapi-typescript': (version: 'v1' | 'v2') =>
    version === 'v1'
      ? `import type { components } from './v1';
export type ContactCreate = components['schemas']['ContactCreate'];
export type ContactUpdate = components['schemas']['ContactUpdate'];
`
      : `import type { components, webhooks } from './v2';
export type ContactCreate = components['schemas']['ContactCreate'];
export type ContactUpdate = components['schemas']['ContactUpdate'];
export type ContactBatchItem = components['schemas']['ContactBatchItem'];
export type Event = components['schemas']['Event'];
export type WebhookTest = components['schemas']['WebhookTest'];
export type WebhookEventBody = webhooks['event']['post']['requestBody']['content']['application/json'];
`,
  '@hey-api/openapi-ts': (version: 'v1' | 'v2') =>
    version === 'v1'
      ? `export type { ContactCreate, ContactUpdate } from './v1/types.gen';
`
      : `export type { ContactBatchItem, ContactCreate, ContactUpdate, Event, WebhookTest } from './v2/types.gen';
export type { DeliverEventWebhookPayload as WebhookEventBody } from './v2/types.gen';
`,
} as const;
