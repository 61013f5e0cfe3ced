// Contact operations (spec 4.2): thin handlers over the repository; scope, idempotency, validation
// and serialization are declared, not coded.
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { notFound, nulCharacterProblems, validationFailed, type BodyProblem } from '../../shared/errors.js';
import { principalOf } from '../../http/principal.js';
import { getOne, getOperation, listOperation, listPage } from '../../http/resource-routes.js';
import { writeResponses } from '../../http/responses.js';
import { IdempotencyHeaders, Single } from '../../shared/schemas.js';
import { idempotentWrite } from '../../http/write-reply.js';
import type { RouteOptions } from '../../services.js';
import { contactsRepository, contactsSpec } from './contacts.repository.js';
import {
  BATCH_ITEMS_PER_REQUEST,
  BATCH_MAX_ITEMS,
  Contact,
  ContactBatchResults,
  ContactBatchUpsert,
  type ContactBatchItemT,
  ContactCreate,
  ContactIdParams,
  ContactListQuery,
  ContactUpdate,
  DEFAULT_CONTACT_STATUS,
  ExternalIdParams,
} from './contacts.schemas.js';
import { RESOURCES } from '../resources.js';

const tags = ['Contacts'];
/** A single write answers the contact it wrote, as GET writes it (infra/idempotency-store.ts ResourceWrite). */
const CONTACT_ANSWER = { resource: 'contact', table: RESOURCES.contact.table } as const;
const described = { scope: RESOURCES.contact.readScope, tags, item: Contact, spec: contactsSpec } as const;

export const contactsRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  // Location of a created contact, under the version it was created through (/v1 or /v2).
  const locationOf = (id: string) => `${app.prefix}/contacts/${id}`;

  app.get(
    '/contacts',
    listOperation({
      ...described,
      operationId: 'listContacts',
      summary: 'List contacts',
      description:
        'Contacts ordered by (updated_at, id) ascending. Page with page.next_cursor; for incremental sync pass the updated_at of the last contact you stored as updated_after.',
      querystring: ContactListQuery,
    }),
    async (request, reply) => listPage(services, reply, contactsSpec, principalOf(request).workspaceId, request.query),
  );

  app.post(
    '/contacts',
    {
      config: { scope: 'contacts:write', idempotentWrite: true },
      schema: {
        operationId: 'createContact',
        summary: 'Create a contact',
        description: `Without status, the contact starts as ${DEFAULT_CONTACT_STATUS}. The 201 carries Location: the path of the new contact.`,
        tags,
        headers: IdempotencyHeaders,
        body: ContactCreate,
        response: writeResponses({ 201: Single(Contact) }),
      },
    },
    async (request, reply) =>
      idempotentWrite(
        services,
        request,
        reply,
        async (_tx, workspaceId) => {
          const id = randomUUID();
          return {
            change: (statements) =>
              contactsRepository.insert(statements, workspaceId, id, {
                ...request.body,
                status: request.body.status ?? DEFAULT_CONTACT_STATUS,
              }),
            answer: { ...CONTACT_ANSWER, by: 'id', value: id, status: 201 },
            otherwise: new Error('the insert wrote no contact'),
          };
        },
        locationOf,
      ),
  );

  app.get(
    '/contacts/:id',
    getOperation({ ...described, operationId: 'getContact', summary: 'Get a contact', noun: 'contact' }),
    async (request, reply) =>
      getOne(services, reply, contactsSpec, 'contact', principalOf(request).workspaceId, request.params.id),
  );

  app.patch(
    '/contacts/:id',
    {
      config: { scope: 'contacts:write', idempotentWrite: true },
      schema: {
        operationId: 'updateContact',
        summary: 'Update a contact',
        description: 'Changes only the properties sent; updated_at moves only when a value changes.',
        tags,
        params: ContactIdParams,
        headers: IdempotencyHeaders,
        body: ContactUpdate,
        response: writeResponses({ 200: Single(Contact) }, { path: true }),
      },
    },
    async (request, reply) =>
      idempotentWrite(services, request, reply, async (_tx, workspaceId) => ({
        change: (statements) => contactsRepository.update(statements, workspaceId, request.params.id, request.body),
        answer: { ...CONTACT_ANSWER, by: 'id', value: request.params.id, status: 200 },
        otherwise: notFound('contact'),
      })),
  );

  app.put(
    '/contacts/external/:external_id',
    {
      config: { scope: 'contacts:write', idempotentWrite: true },
      schema: {
        operationId: 'upsertContactByExternalId',
        summary: 'Create or update a contact by external identifier',
        description:
          '201 (with Location) when no contact of this workspace had the external_id and one was created; 200 when the existing contact was updated. Concurrent upserts of one external_id end in one contact. An external_id containing "/" may be sent raw or percent-encoded (%2F): both address the same contact.',
        tags,
        params: ExternalIdParams,
        headers: IdempotencyHeaders,
        body: ContactUpdate,
        response: writeResponses({ 200: Single(Contact), 201: Single(Contact) }, { path: true }),
      },
    },
    async (request, reply) =>
      idempotentWrite(
        services,
        request,
        reply,
        async (_tx, workspaceId) => {
          const { external_id: externalId } = request.params;
          const newId = randomUUID();
          return {
            change: (statements) =>
              contactsRepository.upsertByExternalId(statements, workspaceId, externalId, newId, request.body),
            answer: { ...CONTACT_ANSWER, by: 'external_id', value: externalId, status: 200, createdId: newId },
            otherwise: new Error('the upsert wrote no contact'),
          };
        },
        locationOf,
      ),
  );
};

/**
 * POST /v2/contacts/batch/upsert: up to 100 upserts by external id in one request and one
 * transaction, all or nothing. It counts as one request per 10 items against the key's rate limit.
 */
export const contactsBatchRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  app.post(
    '/contacts/batch/upsert',
    {
      config: { scope: 'contacts:write', idempotentWrite: true, itemsPerRequest: BATCH_ITEMS_PER_REQUEST },
      schema: {
        operationId: 'batchUpsertContacts',
        summary: 'Create or update up to 100 contacts by external identifier',
        description: `Each item is what PUT /v2/contacts/external/{external_id} takes, with its external_id: it creates the contact (with the properties sent; status ${DEFAULT_CONTACT_STATUS} when none is sent) or changes only the properties sent. 1 to ${BATCH_MAX_ITEMS} items, each external_id at most once. All or nothing: when any item is invalid the answer is 422 with details.items (each bad item's index and its problems) and nothing is written. Otherwise one transaction writes them all and the answer lists, in item order, what happened to each (created, updated, unchanged) and the contact. An unchanged contact is not written (no updated_at move, no event); the others produce one event each, in item order. Counts as one request per ${BATCH_ITEMS_PER_REQUEST} items (started) against the rate limit: a batch of ${BATCH_MAX_ITEMS} counts as ${BATCH_MAX_ITEMS / BATCH_ITEMS_PER_REQUEST}.`,
        tags,
        headers: IdempotencyHeaders,
        body: ContactBatchUpsert,
        response: writeResponses({ 200: ContactBatchResults }),
      },
    },
    async (request, reply) => {
      refuseUnwritableItems(request.body.items);
      return idempotentWrite(services, request, reply, async (tx, workspaceId) => {
        const results = await contactsRepository.batchUpsert(tx, workspaceId, request.body.items);
        return {
          statusCode: 200,
          body: { data: results },
          resourceIds: results.map((r) => r.contact.id),
        };
      });
    },
  );
};

/**
 * 422 naming every item the schema let through that still cannot be written: an external_id an
 * earlier item of the batch already has, or a NUL character.
 */
function refuseUnwritableItems(items: readonly ContactBatchItemT[]): void {
  const firstIndex = new Map<string, number>();
  const problems: BodyProblem[] = [];
  items.forEach((item, index) => {
    const first = firstIndex.get(item.external_id);
    if (first === undefined) firstIndex.set(item.external_id, index);
    else problems.push({ field: `items/${index}/external_id`, message: `repeats the external_id of item ${first}` });
    problems.push(...nulCharacterProblems(item, `items/${index}/`));
  });
  if (problems.length > 0) throw validationFailed(problems);
}
