// Conversation operations (spec 4.3). Messages are sensitive and need their own scope.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { readsOf } from '../../http/consistency.js';
import { principalOf } from '../../http/principal.js';
import { listOperation, listPage } from '../../http/resource-routes.js';
import type { RouteOptions } from '../../services.js';
import { notFound } from '../../shared/errors.js';
import { contactExists, conversationsSpec, messagesSpec } from './conversations.repository.js';
import {
  Conversation,
  ConversationListQuery,
  Message,
  MessageListQuery,
  MessagesParams,
} from './conversations.schemas.js';
import { RESOURCES } from '../resources.js';

const tags = ['Conversations'];

export const conversationsRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { services }) => {
  app.get(
    '/conversations',
    listOperation({
      scope: RESOURCES.conversation.readScope,
      operationId: 'listConversations',
      summary: 'List conversations',
      tags,
      querystring: ConversationListQuery,
      item: Conversation,
      spec: conversationsSpec,
    }),
    async (request, reply) =>
      listPage(services, reply, conversationsSpec, principalOf(request).workspaceId, request.query),
  );

  app.get(
    '/conversations/:contact_id/messages',
    listOperation({
      scope: RESOURCES.message.readScope,
      operationId: 'listMessages',
      summary: "List a contact's messages",
      description:
        'Messages of every conversation of the contact, ordered by (created_at, id). For incremental sync pass the created_at of the last message you stored as created_after.',
      tags,
      params: MessagesParams,
      querystring: MessageListQuery,
      item: Message,
      spec: messagesSpec,
    }),
    async (request, reply) => {
      const { workspaceId } = principalOf(request);
      const { contact_id } = request.params;
      if (!(await contactExists(await readsOf(request, services.reads), workspaceId, contact_id)))
        throw notFound('contact');
      return listPage(services, reply, messagesSpec, workspaceId, request.query, { contact_id });
    },
  );
};
