// What a workspace owner can do, and only the owner: manage workspaces and API keys, and seed data.
// The public API never reaches this module. Each command is a plain function of the store and a
// JSON input, so the CLI can run it against the store directly or hand it to a running embedded
// server (owner-channel.ts), with the same result.
import { OwnerError } from './owner-error.js';
import { retryingConflicts, type Database, type Queryable } from '../../infra/database.js';
import { apiKeysRepository, type ApiKeyRow, type UsageRow } from '../api-keys/api-keys.repository.js';
import { AUTH_CHANGED_CHANNEL } from '../api-keys/authenticator.js';
import { issueKey } from '../api-keys/key-format.js';
import { isScope, SCOPES, type Scope } from '../../shared/scopes.js';
import { workspacesRepository, type WorkspaceRow } from '../workspaces/workspaces.repository.js';
import { loadConfig } from '../../config.js';
import { UUID_TEXT } from '../../shared/schemas.js';
import { webhookCommands, type WebhookContext, type WebhookSendSettings } from '../webhooks/webhooks.service.js';
import {
  DEFAULT_SEED,
  seedAppointments,
  seedAutomations,
  seedCatalogItems,
  seedContacts,
  seedConversations,
  seedMessages,
  finishConversations,
  seedWorkspaceInternals,
  type SeedAmounts,
} from './seed.js';

export { OwnerError };

export interface OwnerContext {
  db: Database;
  defaultRateLimitPerMinute: number;
  /** how `webhooks test` sends from this process; the configuration's defaults when absent */
  webhooks?: WebhookSendSettings;
}

const DEFAULT_WEBHOOK_SENDING: WebhookSendSettings = (() => {
  const { timeoutMs, targets } = loadConfig({}).webhooks;
  return { timeoutMs, targets };
})();

const webhookContext = (ctx: OwnerContext): WebhookContext => ({
  db: ctx.db,
  webhooks: ctx.webhooks ?? DEFAULT_WEBHOOK_SENDING,
});

type WebhookCommands = typeof webhookCommands;

/** The webhook commands (modules/webhooks/webhooks.service.ts) as owner commands: the same names and inputs. */
const ownerWebhookCommands = Object.fromEntries(
  Object.entries(webhookCommands).map(([name, command]) => [
    name,
    (ctx: OwnerContext, input: unknown) =>
      (command as (c: WebhookContext, i: unknown) => Promise<unknown>)(webhookContext(ctx), input),
  ]),
) as {
  [N in keyof WebhookCommands]: (
    ctx: OwnerContext,
    input: Parameters<WebhookCommands[N]>[1],
  ) => ReturnType<WebhookCommands[N]>;
};

export interface CreatedKey extends ApiKeyRow {
  /** The full API key: shown once, never stored. */
  key: string;
}

export interface KeyWithUsage extends ApiKeyRow {
  status: 'active' | 'expired' | 'revoked';
  requests_today: number;
  requests_last_7_days: number;
  /** share of the last 7 days' requests answered with an error (4xx, 5xx or 429), 0 to 1 */
  error_rate_last_7_days: number;
  usage_by_day: { day: string; requests: number }[];
}

/** Contacts deleted per transaction by deleteContacts: short enough not to hold a workspace's writers long. */
const DELETE_CHUNK = 500;

function requireUuid(id: string, what: string): string {
  if (!UUID_TEXT.test(id)) throw new OwnerError(`${what} must be a UUID, got "${id}".`);
  return id;
}

function requireTimezone(tz: string): string {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return tz;
  } catch {
    throw new OwnerError(`Unknown IANA time zone "${tz}".`);
  }
}

function keyStatus(k: ApiKeyRow): KeyWithUsage['status'] {
  if (k.revoked_at) return 'revoked';
  if (k.expires_at && Date.parse(k.expires_at) <= Date.now()) return 'expired';
  return 'active';
}

/** Transactions each seeded resource is written in (at most): its rows share a stamp per part. */
const SEED_PARTS = 5;

export const ownerCommands = {
  async createWorkspace(ctx: OwnerContext, input: { name: string; timezone?: string }): Promise<WorkspaceRow> {
    const name = input.name?.trim();
    if (!name || name.length > 200) throw new OwnerError('A workspace name of 1 to 200 characters is required.');
    return workspacesRepository.create(ctx.db, { name, timezone: requireTimezone(input.timezone ?? 'UTC') });
  },

  async listWorkspaces(ctx: OwnerContext): Promise<WorkspaceRow[]> {
    return workspacesRepository.list(ctx.db);
  },

  async setWorkspaceStatus(
    ctx: OwnerContext,
    input: { workspaceId: string; status: 'active' | 'suspended' },
  ): Promise<WorkspaceRow> {
    const ws = await ctx.db.transaction(async (tx) => {
      const row = await workspacesRepository.setStatus(
        tx,
        requireUuid(input.workspaceId, 'workspace id'),
        input.status,
      );
      await tx.query('SELECT pg_notify($1, $2)', [AUTH_CHANGED_CHANNEL, 'workspace']);
      return row;
    });
    if (!ws) throw new OwnerError(`No workspace ${input.workspaceId}.`);
    return ws;
  },

  async createKey(
    ctx: OwnerContext,
    input: {
      workspaceId: string;
      name: string;
      scopes: string[];
      rateLimitPerMinute?: number;
      concurrencyLimit?: number;
      expiresInMs?: number;
    },
  ): Promise<CreatedKey> {
    const workspaceId = requireUuid(input.workspaceId, 'workspace id');
    if (!(await workspacesRepository.find(ctx.db, workspaceId))) throw new OwnerError(`No workspace ${workspaceId}.`);
    const scopes = [...new Set(input.scopes)];
    if (scopes.length === 0) throw new OwnerError(`At least one scope is required: ${SCOPES.join(', ')}.`);
    const unknown = scopes.filter((s) => !isScope(s));
    if (unknown.length) throw new OwnerError(`Unknown scope(s) ${unknown.join(', ')}; known: ${SCOPES.join(', ')}.`);
    const name = input.name?.trim();
    if (!name || name.length > 200) throw new OwnerError('A key name of 1 to 200 characters is required.');
    const rate = input.rateLimitPerMinute ?? ctx.defaultRateLimitPerMinute;
    if (!Number.isInteger(rate) || rate < 1)
      throw new OwnerError('The rate limit must be a positive whole number per minute.');
    const concurrency = input.concurrencyLimit ?? null;
    if (concurrency !== null && !(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 10_000))
      throw new OwnerError('The concurrency limit must be a whole number of requests from 1 to 10000.');
    if (input.expiresInMs !== undefined && !(input.expiresInMs > 0))
      throw new OwnerError('The expiry must be in the future.');
    const issued = issueKey();
    const row = await apiKeysRepository.insert(ctx.db, {
      id: issued.id,
      workspaceId,
      name,
      secretSha256: issued.secretSha256,
      scopes: scopes as Scope[],
      rateLimitPerMinute: rate,
      concurrencyLimit: concurrency,
      expiresInMs: input.expiresInMs ?? null,
    });
    return { ...row, key: issued.key };
  },

  async listKeys(ctx: OwnerContext, input: { workspaceId?: string }): Promise<KeyWithUsage[]> {
    const ws = input.workspaceId ? requireUuid(input.workspaceId, 'workspace id') : null;
    const keys = await apiKeysRepository.listByWorkspace(ctx.db, ws);
    const today = new Date().toISOString().slice(0, 10);
    return Promise.all(
      keys.map(async (k) => {
        const usage = await apiKeysRepository.usage(ctx.db, k.id, 7);
        const byDay = new Map<string, number>();
        for (const u of usage) byDay.set(u.day, (byDay.get(u.day) ?? 0) + u.requests);
        const total = usage.reduce((n, u) => n + u.requests, 0);
        const errors = usage.reduce((n, u) => n + u.client_errors + u.server_errors + u.rate_limited, 0);
        return {
          ...k,
          status: keyStatus(k),
          requests_today: byDay.get(today) ?? 0,
          requests_last_7_days: total,
          error_rate_last_7_days: total === 0 ? 0 : Math.round((errors / total) * 10_000) / 10_000,
          usage_by_day: [...byDay].map(([day, requests]) => ({ day, requests })),
        };
      }),
    );
  },

  async keyUsage(
    ctx: OwnerContext,
    input: { keyId: string; days?: number },
  ): Promise<{ key: ApiKeyRow; usage: UsageRow[] }> {
    const key = await apiKeysRepository.find(ctx.db, input.keyId);
    if (!key) throw new OwnerError(`No API key ${input.keyId}.`);
    return { key, usage: await apiKeysRepository.usage(ctx.db, input.keyId, input.days ?? 30) };
  },

  async revokeKey(ctx: OwnerContext, input: { keyId: string }): Promise<ApiKeyRow> {
    const row = await ctx.db.transaction(async (tx) => {
      const revoked = await apiKeysRepository.revoke(tx, input.keyId);
      await tx.query('SELECT pg_notify($1, $2)', [AUTH_CHANGED_CHANNEL, 'key']);
      return revoked;
    });
    if (!row) throw new OwnerError(`No API key ${input.keyId}.`);
    return row;
  },

  /** Issues a successor with the same workspace, name, scopes and rate limit; the old key lives on for `graceMs`. */
  async rotateKey(
    ctx: OwnerContext,
    input: { keyId: string; graceMs: number },
  ): Promise<{ new_key: CreatedKey; old_key: ApiKeyRow }> {
    if (!(input.graceMs >= 0)) throw new OwnerError('The grace period must be zero or more.');
    return ctx.db.transaction(async (tx) => {
      const old = await apiKeysRepository.find(tx, input.keyId);
      if (!old) throw new OwnerError(`No API key ${input.keyId}.`);
      if (keyStatus(old) !== 'active')
        throw new OwnerError(`API key ${input.keyId} is ${keyStatus(old)}; only an active key can be rotated.`);
      const issued = issueKey();
      const successor = await apiKeysRepository.insert(tx, {
        id: issued.id,
        workspaceId: old.workspace_id,
        name: old.name,
        secretSha256: issued.secretSha256,
        scopes: old.scopes,
        rateLimitPerMinute: old.rate_limit_per_minute,
        concurrencyLimit: old.concurrency_limit,
        expiresInMs: null,
        predecessorId: old.id,
      });
      const retired = await apiKeysRepository.retire(tx, old.id, successor.id, input.graceMs);
      await tx.query('SELECT pg_notify($1, $2)', [AUTH_CHANGED_CHANNEL, 'key']);
      return { new_key: { ...successor, key: issued.key }, old_key: retired! };
    });
  },

  /**
   * Fills a workspace with synthetic data. Without amounts, every resource gets the defaults
   * (conversations with messages included); with some amounts, only those resources are made.
   * `internalMarker` is written into every internal field that is filled.
   */
  async seed(
    ctx: OwnerContext,
    input: { workspaceId: string; amounts?: Partial<SeedAmounts>; internalMarker?: string },
  ): Promise<{ workspace_id: string } & Record<string, number | string>> {
    const workspaceId = requireUuid(input.workspaceId, 'workspace id');
    if (!(await workspacesRepository.find(ctx.db, workspaceId))) throw new OwnerError(`No workspace ${workspaceId}.`);
    const given = input.amounts ?? {};
    const amounts: SeedAmounts =
      Object.keys(given).length === 0
        ? DEFAULT_SEED
        : {
            ...DEFAULT_SEED,
            contacts: 0,
            appointments: 0,
            catalogItems: 0,
            conversations: 0,
            automations: 0,
            ...given,
          };
    for (const [name, n] of Object.entries(amounts)) {
      if (!Number.isInteger(n) || n < 0 || n > 10_000_000)
        throw new OwnerError(`${name} must be a whole number from 0.`);
    }
    const marker = input.internalMarker ?? null;
    // Each part in a few transactions of its own: every transaction takes one stamp of the
    // workspace's sync clock (db/code/03_sync_clock.sql), so seeded rows come out with several distinct
    // updated_at values (ties within each part), as data written over time does.
    const inParts = async (
      count: number,
      write: (tx: Queryable, n: number, first: number) => Promise<number>,
    ): Promise<number> => {
      let written = 0;
      const size = Math.max(1, Math.ceil(count / SEED_PARTS));
      for (let done = 0; done < count; done += size) {
        written += await ctx.db.transaction((tx) => write(tx, Math.min(size, count - done), done + 1));
      }
      return written;
    };
    await ctx.db.transaction((tx) => seedWorkspaceInternals(tx, workspaceId, marker));
    const contacts = await inParts(amounts.contacts, (tx, n, first) => seedContacts(tx, workspaceId, n, marker, first));
    const appointments = await inParts(amounts.appointments, (tx, n, first) =>
      seedAppointments(tx, workspaceId, n, marker, first),
    );
    const catalogItems = await inParts(amounts.catalogItems, (tx, n, first) =>
      seedCatalogItems(tx, workspaceId, n, marker, first),
    );
    const conversations = await ctx.db.transaction((tx) =>
      seedConversations(tx, workspaceId, amounts.conversations, marker),
    );
    let messages = 0;
    for (let m = 1; m <= amounts.messagesPerConversation; m++) {
      messages += await ctx.db.transaction((tx) => seedMessages(tx, workspaceId, conversations, m, marker));
    }
    await ctx.db.transaction((tx) => finishConversations(tx, workspaceId, conversations));
    const automations = await inParts(amounts.automations, (tx, n, first) =>
      seedAutomations(tx, workspaceId, n, marker, first),
    );
    return {
      workspace_id: workspaceId,
      contacts,
      appointments,
      catalog_items: catalogItems,
      conversations: conversations.length,
      messages,
      automations,
    };
  },

  /** Deletes a contact as the product does: its conversations and messages go with it, its appointments stay without it. */
  async deleteContact(ctx: OwnerContext, input: { contactId: string }): Promise<{ id: string; workspace_id: string }> {
    const id = requireUuid(input.contactId, 'contact id');
    return deleteResource(ctx, 'contacts', id, `No contact ${id}.`);
  },

  /**
   * Deletes many contacts in one run, each as deleteContact does, in transactions of
   * DELETE_CHUNK contacts: an id given twice is deleted once, and the ids no contact has come
   * back as not_found (nothing is refused for them). Each chunk locks its contacts in id order
   * before deleting any, as every deletion does (contactsRepository.delete).
   */
  async deleteContacts(
    ctx: OwnerContext,
    input: { contactIds: string[] },
  ): Promise<{ deleted: { id: string; workspace_id: string }[]; not_found: string[] }> {
    const ids = [...new Set(input.contactIds.map((id) => requireUuid(id, 'contact id').toLowerCase()))];
    const deleted: { id: string; workspace_id: string }[] = [];
    for (let at = 0; at < ids.length; at += DELETE_CHUNK) {
      const chunk = ids.slice(at, at + DELETE_CHUNK);
      const { rows } = await retryingConflicts(() =>
        ctx.db.query<{ id: string; workspace_id: string }>(
          `WITH doomed AS (SELECT id FROM contacts WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE)
           DELETE FROM contacts c USING doomed WHERE c.id = doomed.id RETURNING c.id, c.workspace_id`,
          [chunk],
        ),
      );
      deleted.push(...rows);
    }
    const gone = new Set(deleted.map((d) => d.id));
    return { deleted, not_found: ids.filter((id) => !gone.has(id)) };
  },

  async deleteAppointment(
    ctx: OwnerContext,
    input: { appointmentId: string },
  ): Promise<{ id: string; workspace_id: string }> {
    const id = requireUuid(input.appointmentId, 'appointment id');
    return deleteResource(ctx, 'appointments', id, `No appointment ${id}.`);
  },

  // Webhook endpoints, by name through the same channel.
  ...ownerWebhookCommands,
};

/** Deletes one row as the product does, in one statement (rows first, then the sync clock). */
async function deleteResource(
  ctx: OwnerContext,
  table: 'contacts' | 'appointments',
  id: string,
  missing: string,
): Promise<{ id: string; workspace_id: string }> {
  // A contact's deletion also stamps its appointments: it can meet another writer of the
  // workspace in a deadlock, and then simply runs again.
  const { rows } = await retryingConflicts(() =>
    ctx.db.query<{ id: string; workspace_id: string }>(
      `DELETE FROM ${table} WHERE id = $1 RETURNING id, workspace_id`,
      [id],
    ),
  );
  if (!rows[0]) throw new OwnerError(missing);
  return rows[0];
}

type OwnerCommands = typeof ownerCommands;
export type OwnerCommandName = keyof OwnerCommands;
export type OwnerInput<N extends OwnerCommandName> = Parameters<OwnerCommands[N]>[1];
export type OwnerOutput<N extends OwnerCommandName> = Awaited<ReturnType<OwnerCommands[N]>>;

export const isOwnerCommand = (name: string): name is OwnerCommandName => Object.hasOwn(ownerCommands, name);

/** Runs a command by name with an input that arrived as JSON (the owner channel). */
export function runOwnerCommand(ctx: OwnerContext, name: OwnerCommandName, input: unknown): Promise<unknown> {
  return (ownerCommands[name] as (this: void, c: OwnerContext, i: unknown) => Promise<unknown>).call(
    undefined,
    ctx,
    input,
  );
}
