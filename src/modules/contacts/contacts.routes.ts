// Contact operations (spec 4.2): thin handlers over the repository; scope, idempotency, validation
// and serialization are declared, not coded.
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { notFound, type ApiError } from '../../shared/errors.js';
import { principalOf } from '../../http/principal.js';
import { getOne, getOperation, listOperation, listPage } from '../../http/resource-routes.js';
import { readResponses, writeResponses } from '../../http/responses.js';
import { IdempotencyHeaders, NoQuery, Single } from '../../shared/schemas.js';
import { idempotentWrite } from '../../http/write-reply.js';
import type { WriteResult } from '../../infra/idempotency-store.js';
import type { RouteOptions } from '../../services.js';
import { contactsLookupSpec, contactsRepository, contactsSpec, type PlannedItem } from './contacts.repository.js';
import {
  BATCH_DELETE_MAX,
  BATCH_ITEMS_PER_REQUEST,
  BATCH_MAX_ITEMS,
  Contact,
  ContactBatchCounts,
  ContactBatchEnvelope,
  ContactBatchInvalid,
  ContactBatchItem,
  ContactBatchPartialResults,
  ContactBatchResults,
  ContactBatchUpsert,
  ContactBatchDelete,
  ContactBatchDeleteResults,
  type ContactDeleteResultT,
  type ContactBatchInvalidT,
  ContactCreate,
  ContactIdParams,
  ContactListQuery,
  ContactListQueryV2,
  LOOKUP_MAX_VALUES,
  ContactUpdate,
  DEFAULT_CONTACT_STATUS,
  ExternalIdParams,
  ItemProblem,
} from './contacts.schemas.js';
import { RESOURCES } from '../resources.js';
import { deletionTargets, sortBatch, type BatchChecks, type SortedBatch } from './contacts.batch.js';
import { compileBody } from '../../http/validators.js';

const tags = ['Contacts'];
/** A deletion's 204: no body. */
const DELETED = Type.Null({ description: 'Deleted: no body.' });
/** A single write answers the contact it wrote, as GET writes it (infra/idempotency-store.ts ResourceWrite). */
const CONTACT_ANSWER = { resource: 'contact', table: RESOURCES.contact.table } as const;
const described = { scope: RESOURCES.contact.readScope, tags, item: Contact, spec: contactsSpec } as const;

/** The contact operations of both versions; `lookups`: the list also takes version 2's lookup filters. */
export const contactsRoutes: FastifyPluginAsyncTypebox<RouteOptions & { lookups?: boolean }> = async (
  app,
  { services, lookups = false },
) => {
  // Location of a created contact, under the version it was created through (/v1 or /v2).
  const locationOf = (id: string) => `${app.prefix}/contacts/${id}`;

  const list = {
    ...described,
    operationId: 'listContacts',
    summary: 'List contacts',
    description:
      'Contacts ordered by (updated_at, id) ascending. Page with page.next_cursor; for incremental sync pass the updated_at of the last contact you stored as updated_after.',
  };
  if (lookups) {
    app.get(
      '/contacts',
      listOperation({
        ...list,
        description: `${list.description} email, phone and external_id find the contacts with one of the values given (up to ${LOOKUP_MAX_VALUES} each, comma-separated; several filters: all must hold), e.g. before creating one, or the contacts of a chunk of a sync in one call.`,
        querystring: ContactListQueryV2,
      }),
      async (request, reply) =>
        listPage(services, reply, contactsLookupSpec, principalOf(request).workspaceId, request.query),
    );
  } else {
    app.get('/contacts', listOperation({ ...list, querystring: ContactListQuery }), async (request, reply) =>
      listPage(services, reply, contactsSpec, principalOf(request).workspaceId, request.query),
    );
  }

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

/** The checks of a batch body that broke its schema, run item by item (contacts.batch.ts). */
const BATCH_CHECKS: BatchChecks = {
  envelope: compileBody(ContactBatchEnvelope),
  item: compileBody(Type.Object({ items: Type.Array(ContactBatchItem) }, { additionalProperties: false })),
};

/**
 * The contact operations version 2 adds. GET /v2/contacts/external/{external_id}: a contact found
 * by the caller's own identifier, the first lookup of a sync. POST /v2/contacts/batch/upsert: up to
 * 100 upserts by external id in one request and one transaction; all or nothing, or in partial mode
 * the valid items (contacts.batch.ts). It counts as one request per 10 items against the key's rate
 * limit. DELETE /v2/contacts/{id}, DELETE /v2/contacts/external/{external_id} and POST
 * /v2/contacts/batch/delete: the deletions a two-way sync pushes, the same as the product's own
 * (contactsRepository.delete).
 */
export const contactsV2Routes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  app.get(
    '/contacts/external/:external_id',
    {
      config: { scope: RESOURCES.contact.readScope },
      schema: {
        operationId: 'getContactByExternalId',
        summary: 'Get a contact by external identifier',
        description:
          'The contact of this workspace with this external_id (set through the upsert); 404 when there is none. An external_id containing "/" may be sent raw or percent-encoded (%2F).',
        tags,
        params: ExternalIdParams,
        querystring: NoQuery,
        response: readResponses({ 200: Single(Contact) }, { path: true, notFound: true }),
      },
    },
    async (request, reply) =>
      getOne(
        services,
        reply,
        contactsSpec,
        'contact',
        principalOf(request).workspaceId,
        request.params.external_id,
        'external_id',
      ),
  );

  app.post(
    '/contacts/batch/upsert',
    {
      config: { scope: 'contacts:write', idempotentWrite: true, itemsPerRequest: BATCH_ITEMS_PER_REQUEST },
      // The body's check against its schema is handed to the handler: a partial batch keeps an
      // item's problems with the item instead of refusing the request.
      attachValidation: true,
      schema: {
        operationId: 'batchUpsertContacts',
        summary: 'Create or update up to 100 contacts by external identifier',
        description: `Each item is what PUT /v2/contacts/external/{external_id} takes, with its external_id: it creates the contact (with the properties sent; status ${DEFAULT_CONTACT_STATUS} when none is sent) or changes only the properties sent. 1 to ${BATCH_MAX_ITEMS} items; an external_id sent by several items makes every one of them invalid, and its problem names them all. mode all_or_nothing (the default): when any item is invalid the answer is 422 with details.items (each bad item's index and its problems) and nothing is written. mode partial: the valid items are written, and each invalid one is answered in its place with result invalid, its index, the external_id it sent and its problems (207 when there is at least one; 422 as above when no item is valid). The items written go in one transaction, and the answer lists, in item order, what happened to each (created, updated, unchanged, invalid) with the contact, and counts says how many had each result. An unchanged contact is not written (no updated_at move, no event); the others produce one event each, in item order. Counts as one request per ${BATCH_ITEMS_PER_REQUEST} items (started) against the rate limit: a batch of ${BATCH_MAX_ITEMS} counts as ${BATCH_MAX_ITEMS / BATCH_ITEMS_PER_REQUEST}.`,
        tags,
        headers: IdempotencyHeaders,
        body: ContactBatchUpsert,
        response: writeResponses({ 200: ContactBatchResults, 207: ContactBatchPartialResults }),
      },
    },
    async (request, reply) => {
      const declared = (request.validationError as ApiError | undefined) ?? null;
      const { valid, invalid } = sortBatch(request.body, declared, BATCH_CHECKS);
      return idempotentWrite(services, request, reply, async (tx, workspaceId) => {
        const planned = await contactsRepository.planBatch(
          tx,
          workspaceId,
          valid.map((v) => v.item),
        );
        const counts = { created: 0, updated: 0, unchanged: 0, invalid: invalid.length };
        for (const { result } of planned) counts[result] += 1;
        return {
          statusCode: invalid.length > 0 ? 207 : 200,
          statements: contactsRepository.batchWrites(workspaceId, planned),
          answer: contactsRepository.batchAnswer(
            workspaceId,
            inItemOrder(valid, planned, invalid),
            JSON.stringify(counts, COUNTS_IN_ORDER),
          ),
        };
      });
    },
  );

  const deletes = {
    config: { scope: 'contacts:write', idempotentWrite: true },
    description: (by: string) =>
      `Deletes the contact ${by} as the product deletes one: its conversations and their messages are deleted first, its appointments stay without it, the feed shows each of these and then contact.deleted, and the contact's earlier events and the stored answers of writes that carried it are erased. 204 when this request deleted it; 404 when the workspace has no such contact (never had it, or it is deleted already: a sync may count that as done). A retry with the same Idempotency-Key answers 204 again, replayed.`,
  } as const;

  app.delete(
    '/contacts/:id',
    {
      config: deletes.config,
      schema: {
        operationId: 'deleteContact',
        summary: 'Delete a contact',
        description: deletes.description('with this id'),
        tags,
        params: ContactIdParams,
        headers: IdempotencyHeaders,
        response: writeResponses({ 204: DELETED }, { path: true, bodiless: true }),
      },
    },
    async (request, reply) =>
      idempotentWrite(services, request, reply, async (tx, workspaceId) =>
        deletedOne(await contactsRepository.delete(tx, workspaceId, [request.params.id], [])),
      ),
  );

  app.delete(
    '/contacts/external/:external_id',
    {
      config: deletes.config,
      schema: {
        operationId: 'deleteContactByExternalId',
        summary: 'Delete a contact by external identifier',
        description: `${deletes.description('with this external_id')} An external_id containing "/" may be sent raw or percent-encoded (%2F).`,
        tags,
        params: ExternalIdParams,
        headers: IdempotencyHeaders,
        response: writeResponses({ 204: DELETED }, { path: true, bodiless: true }),
      },
    },
    async (request, reply) =>
      idempotentWrite(services, request, reply, async (tx, workspaceId) =>
        deletedOne(await contactsRepository.delete(tx, workspaceId, [], [request.params.external_id])),
      ),
  );

  app.post(
    '/contacts/batch/delete',
    {
      config: { ...deletes.config, itemsPerRequest: BATCH_ITEMS_PER_REQUEST },
      schema: {
        operationId: 'batchDeleteContacts',
        summary: `Delete up to ${BATCH_DELETE_MAX} contacts`,
        description: `Deletes the contacts named by ids and by external_ids (${BATCH_DELETE_MAX} values at most in all), in one transaction, each as DELETE /v2/contacts/{id} does. A value that names no contact of the workspace is not an error: its entry says not_found, so a sync can resend a batch whose contacts are partly gone. The answer has one entry per value sent, the ids first then the external_ids, each in the order sent; a contact named by both its id and its external_id is deleted once and both entries say deleted. Counts as one request per ${BATCH_ITEMS_PER_REQUEST} values (started) against the rate limit.`,
        tags,
        headers: IdempotencyHeaders,
        body: ContactBatchDelete,
        response: writeResponses({ 200: ContactBatchDeleteResults }),
      },
    },
    async (request, reply) => {
      const { ids, externalIds } = deletionTargets(request.body);
      return idempotentWrite(services, request, reply, async (tx, workspaceId) => {
        const deleted = await contactsRepository.delete(tx, workspaceId, ids, externalIds);
        const byId = new Map(deleted.map((c) => [c.id, c]));
        const byExternalId = new Map(deleted.filter((c) => c.external_id !== null).map((c) => [c.external_id!, c]));
        const data: ContactDeleteResultT[] = [
          ...ids.map((id) => {
            const contact = byId.get(id);
            return contact
              ? { result: 'deleted' as const, ...contact }
              : { result: 'not_found' as const, id, external_id: null };
          }),
          ...externalIds.map((externalId) => {
            const contact = byExternalId.get(externalId);
            return contact
              ? { result: 'deleted' as const, ...contact }
              : { result: 'not_found' as const, id: null, external_id: externalId };
          }),
        ];
        const found = data.filter((d) => d.result === 'deleted').length;
        return { statusCode: 200, body: { data, counts: { deleted: found, not_found: data.length - found } } };
      });
    },
  );
};

/** The answer of a deletion of one contact: 204, or 404 when there was no such contact. */
function deletedOne(deleted: readonly unknown[]): WriteResult {
  if (deleted.length === 0) throw notFound('contact');
  return { statusCode: 204, body: null };
}

/** The answer's entries, one per item in item order: the written items' results and the invalid ones. */
/**
 * The entries of a batch's answer in item order: each valid item's plan (its result and external
 * id: the database adds the contact), each invalid one's entry as the route's serializer writes it.
 */
function inItemOrder(
  valid: SortedBatch['valid'],
  planned: readonly PlannedItem[],
  invalid: readonly ContactBatchInvalidT[],
): (PlannedItem | { text: string })[] {
  const entries = new Array<PlannedItem | { text: string }>(valid.length + invalid.length);
  valid.forEach(({ index }, i) => (entries[index] = planned[i]!));
  for (const entry of invalid) entries[entry.index] = { text: JSON.stringify(entry, INVALID_IN_ORDER) };
  return entries;
}

// JSON.stringify with a list of property names writes an object's properties in the list's order:
// the schema's, as the route's serializer does (test/write-answers.test.ts holds the two equal).
const INVALID_IN_ORDER = [
  ...new Set([...Object.keys(ContactBatchInvalid.properties), ...Object.keys(ItemProblem.properties)]),
];
const COUNTS_IN_ORDER = Object.keys(ContactBatchCounts.properties);
