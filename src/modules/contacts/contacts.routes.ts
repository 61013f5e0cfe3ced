// Contact operations (spec 4.2): thin handlers over the repository; scope, idempotency, validation
// and serialization are declared, not coded.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { notFound } from '../../shared/errors.js';
import { paginate } from '../../shared/pagination.js';
import { readResponses, writeResponses } from '../../shared/responses.js';
import { IdempotencyHeaders, LIMIT_DEFAULT, Page, Single } from '../../shared/schemas.js';
import { idempotentWrite } from '../../shared/write-reply.js';
import type { RouteOptions } from '../../services.js';
import { contactsRepository } from './contacts.repository.js';
import {
  Contact,
  ContactCreate,
  ContactIdParams,
  ContactListQuery,
  ContactUpdate,
  DEFAULT_CONTACT_STATUS,
  ExternalIdParams,
} from './contacts.schemas.js';

const tags = ['Contacts'];

export const contactsRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  const { db, cursors } = services;

  app.get(
    '/contacts',
    {
      config: { scope: 'contacts:read' },
      schema: {
        operationId: 'listContacts',
        summary: 'List contacts',
        description:
          'Contacts ordered by (updated_at, id) ascending. Page with page.next_cursor; for incremental sync pass the updated_at of the last contact you stored as updated_after.',
        tags,
        querystring: ContactListQuery,
        response: readResponses({ 200: Page(Contact) }),
      },
    },
    async (request) => {
      const { workspaceId } = request.principal!;
      const { limit = LIMIT_DEFAULT, cursor, status, updated_after } = request.query;
      const scope = { resource: 'contacts', workspaceId, filters: { status, updated_after } };
      return paginate(
        cursors,
        scope,
        { limit, cursor },
        (after: readonly [string, string] | null, take) =>
          contactsRepository.list(db, workspaceId, { status, updatedAfter: updated_after, after, limit: take }),
        (c) => [c.updated_at, c.id] as const,
      );
    },
  );

  app.post(
    '/contacts',
    {
      config: { scope: 'contacts:write', idempotentWrite: true },
      schema: {
        operationId: 'createContact',
        summary: 'Create a contact',
        description: `Without status, the contact starts as ${DEFAULT_CONTACT_STATUS}.`,
        tags,
        headers: IdempotencyHeaders,
        body: ContactCreate,
        response: writeResponses({ 201: Single(Contact) }),
      },
    },
    async (request, reply) =>
      idempotentWrite(services, request, reply, async (tx, workspaceId) => ({
        statusCode: 201,
        body: {
          data: await contactsRepository.insert(tx, workspaceId, {
            ...request.body,
            status: request.body.status ?? DEFAULT_CONTACT_STATUS,
          }),
        },
      })),
  );

  app.get(
    '/contacts/:id',
    {
      config: { scope: 'contacts:read' },
      schema: {
        operationId: 'getContact',
        summary: 'Get a contact',
        tags,
        params: ContactIdParams,
        response: readResponses({ 200: Single(Contact) }),
      },
    },
    async (request) => {
      const contact = await contactsRepository.find(db, request.principal!.workspaceId, request.params.id);
      if (!contact) throw notFound('contact');
      return { data: contact };
    },
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
        response: writeResponses({ 200: Single(Contact) }),
      },
    },
    async (request, reply) =>
      idempotentWrite(services, request, reply, async (tx, workspaceId) => {
        const contact = await contactsRepository.update(tx, workspaceId, request.params.id, request.body);
        if (!contact) throw notFound('contact');
        return { statusCode: 200, body: { data: contact } };
      }),
  );

  app.put(
    '/contacts/external/:external_id',
    {
      config: { scope: 'contacts:write', idempotentWrite: true },
      schema: {
        operationId: 'upsertContactByExternalId',
        summary: 'Create or update a contact by external identifier',
        description:
          '201 when no contact of this workspace had the external_id and one was created; 200 when the existing contact was updated. Concurrent upserts of one external_id end in one contact.',
        tags,
        params: ExternalIdParams,
        headers: IdempotencyHeaders,
        body: ContactUpdate,
        response: writeResponses({ 200: Single(Contact), 201: Single(Contact) }),
      },
    },
    async (request, reply) =>
      idempotentWrite(services, request, reply, async (tx, workspaceId) => {
        const { contact, created } = await contactsRepository.upsertByExternalId(
          tx,
          workspaceId,
          request.params.external_id,
          request.body,
        );
        return { statusCode: created ? 201 : 200, body: { data: contact } };
      }),
  );
};
