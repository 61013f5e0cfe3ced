// Conversations (one per contact and channel) and their messages as the API shows them. Provider
// payloads, provider identifiers and private media URLs have no place here.
import { Type } from 'typebox';
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
  { additionalProperties: false, title: 'Conversation' },
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
  { additionalProperties: false, title: 'Message' },
);

export const ConversationListQuery = Type.Object(
  {
    ...SyncListQuery,
    contact_id: Type.Optional(Uuid),
    channel: Type.Optional(StringEnum(CHANNELS)),
    status: Type.Optional(StringEnum(STATUSES)),
  },
  { additionalProperties: false },
);

export const MessagesParams = Type.Object({ contact_id: Uuid }, { additionalProperties: false });

export const MessageListQuery = Type.Object(
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
);
