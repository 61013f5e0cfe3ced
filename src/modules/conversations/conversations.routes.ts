// Conversations (one per contact and channel) and their messages. Messages are sensitive and need
// their own scope; provider payloads, provider identifiers and private media URLs never leave.
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { notFound } from '../../shared/errors.js';
import { equals, updatedAfter, type ListSpec } from '../../shared/keyset-list.js';
import { listRoute } from '../../shared/resource-routes.js';
import {
  Cursor,
  DateTime,
  Limit,
  NullableDateTime,
  NullableString,
  StringEnum,
  SyncListQuery,
  Uuid,
} from '../../shared/schemas.js';
import type { RouteOptions } from '../../services.js';

const CHANNELS = ['whatsapp', 'email', 'instagram', 'sms', 'webchat'] as const;
const STATUSES = ['open', 'closed'] as const;

export const Conversation = Type.Object(
  {
    id: Uuid,
    contact_id: { ...Uuid, description: 'The contact; list the messages at /v2/conversations/{contact_id}/messages.' },
    channel: StringEnum(CHANNELS),
    status: StringEnum(STATUSES),
    last_message_at: NullableDateTime(),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false },
);

export const Message = Type.Object(
  {
    id: Uuid,
    conversation_id: Uuid,
    contact_id: Uuid,
    direction: StringEnum(['inbound', 'outbound'], { description: 'inbound: from the contact.' }),
    kind: StringEnum(['text', 'image', 'audio', 'video', 'document', 'template']),
    text: NullableString(4096, { description: 'Text of the message, or the caption of a media message.' }),
    sent_at: NullableDateTime(),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false },
);

export const conversationsSpec: ListSpec = {
  resource: 'conversations',
  table: 'conversations',
  columns: `id, contact_id, channel, status, api_time(last_message_at) AS last_message_at,
    api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`,
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('contact_id'), equals('channel'), equals('status')],
};

export const messagesSpec: ListSpec = {
  resource: 'messages',
  table: 'messages',
  columns: `id, conversation_id, contact_id, direction, kind, text, api_time(sent_at) AS sent_at,
    api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`,
  sortColumn: 'created_at',
  idType: 'uuid',
  filters: [{ param: 'created_after', where: (p) => `created_at > ${p}::timestamptz` }, equals('conversation_id')],
};

export const conversationsRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  listRoute(app, services, {
    path: '/conversations',
    scope: 'conversations:read',
    operationId: 'listConversations',
    summary: 'List conversations',
    tags: ['Conversations'],
    querystring: Type.Object(
      {
        ...SyncListQuery,
        contact_id: Type.Optional(Uuid),
        channel: Type.Optional(StringEnum(CHANNELS)),
        status: Type.Optional(StringEnum(STATUSES)),
      },
      { additionalProperties: false },
    ),
    item: Conversation,
    spec: conversationsSpec,
  });

  listRoute(app, services, {
    path: '/conversations/:contact_id/messages',
    scope: 'messages:read',
    operationId: 'listMessages',
    summary: "List a contact's messages",
    description:
      'Messages of every conversation of the contact, ordered by (created_at, id). For incremental sync pass the created_at of the last message you stored as created_after.',
    tags: ['Conversations'],
    params: Type.Object({ contact_id: Uuid }, { additionalProperties: false }),
    querystring: Type.Object(
      {
        limit: Type.Optional(Limit),
        cursor: Type.Optional(Cursor),
        created_after: Type.Optional({
          ...DateTime,
          description: 'Only messages created strictly after this instant.',
        }),
        conversation_id: Type.Optional(Uuid),
      },
      { additionalProperties: false },
    ),
    item: Message,
    spec: messagesSpec,
    fixed: (params) => ({ contact_id: params.contact_id }),
    precondition: async (workspaceId, params) => {
      const { rows } = await services.db.query(
        'SELECT 1 FROM contacts WHERE workspace_id = $1 AND id = $2',
        [workspaceId, params.contact_id],
        'contacts_exists',
      );
      if (rows.length === 0) throw notFound('contact');
    },
  });
};
