// SQL for conversations and messages: the public columns and filters.
import type { Queryable } from '../../infra/database.js';
import { equals, instantFilter, updatedAfter, type ListSpec } from '../../infra/keyset-list.js';
import { Conversation, Message } from './conversations.schemas.js';

export const conversationsSpec: ListSpec = {
  resource: 'conversations',
  table: 'conversations',
  item: Conversation,
  sortColumn: 'updated_at',
  idType: 'uuid',
  filters: [updatedAfter, equals('contact_id'), equals('channel'), equals('status')],
};

export const messagesSpec: ListSpec = {
  resource: 'messages',
  table: 'messages',
  item: Message,
  sortColumn: 'created_at',
  idType: 'uuid',
  filters: [instantFilter('created_after', 'created_at', '>'), equals('conversation_id')],
};

/** Whether the workspace has this contact: a message list of an unknown contact is 404, not empty. */
export async function contactExists(db: Queryable, workspaceId: string, contactId: string): Promise<boolean> {
  const { rows } = await db.query(
    'SELECT 1 FROM contacts WHERE workspace_id = $1 AND id = $2',
    [workspaceId, contactId],
    'contacts_exists',
  );
  return rows.length > 0;
}
