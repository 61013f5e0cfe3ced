// What the workspace owner does with webhook endpoints (the owner CLI: `webhooks …`). The public API
// manages no endpoint, as it manages no key: an endpoint's URL and secret are the owner's.
import { randomBytes } from 'node:crypto';
import type { WebhookTargetPolicy } from '../../config.js';
import { retryingConflicts, type Database } from '../../infra/database.js';
import { isScope, SCOPES, type Scope } from '../../shared/scopes.js';
import { EventIdCodec } from '../events/event-ids.js';
import { eventsRepository } from '../events/events.repository.js';
import { RESOURCE_TYPES, RESOURCES, readableResourceTypes, type ResourceType } from '../resources.js';
import { OwnerError } from '../owner/owner-error.js';
import { workspacesRepository } from '../workspaces/workspaces.repository.js';
import { checkTargetUrl, sendOnce, TargetRefused, type AttemptOutcome } from './http-target.js';
import { newWebhookSecret, signatureHeader } from './signing.js';
import type { WebhookTestT } from './webhooks.openapi.js';
import { UUID_TEXT } from '../../shared/schemas.js';
import {
  webhooksRepository,
  type AttemptRow,
  type EndpointRow,
  type EndpointWithBacklog,
} from './webhooks.repository.js';

/** What sending needs of the configuration of the process that sends (the CLI or the server). */
export interface WebhookSendSettings {
  timeoutMs: number;
  targets: WebhookTargetPolicy;
}

export interface WebhookContext {
  db: Database;
  webhooks: WebhookSendSettings;
}

export interface CreatedEndpoint extends EndpointRow {
  /** the signing secret: shown once */
  secret: string;
}

export interface TestDelivery {
  endpoint_id: string;
  message_id: string;
  outcome: AttemptOutcome;
  status: number | null;
  duration_ms: number;
  error: string | null;
}

const EVENT_OPERATIONS = ['created', 'updated', 'deleted'] as const;

function requireUuid(id: string | undefined, what: string): string {
  if (!id || !UUID_TEXT.test(id)) throw new OwnerError(`${what} must be a UUID, got "${id ?? ''}".`);
  return id;
}

async function existing(ctx: WebhookContext, id: string | undefined): Promise<EndpointRow> {
  const endpoint = await webhooksRepository.find(ctx.db, requireUuid(id, 'webhook endpoint id'));
  if (!endpoint) throw new OwnerError(`No webhook endpoint ${id}.`);
  return endpoint;
}

function validScopes(given: readonly string[]): Scope[] {
  const scopes = [...new Set(given)];
  if (scopes.length === 0) throw new OwnerError(`At least one scope is required: ${SCOPES.join(', ')}.`);
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length) throw new OwnerError(`Unknown scope(s) ${unknown.join(', ')}; known: ${SCOPES.join(', ')}.`);
  return scopes as Scope[];
}

/** The event types asked for, each one the scopes may read; null (all) when none is given. */
function validEventTypes(given: readonly string[] | undefined, readable: readonly ResourceType[]): string[] | null {
  if (given === undefined || given.length === 0) return null;
  const types = [...new Set(given)].sort();
  for (const type of types) {
    const [resource, operation, ...rest] = type.split('.');
    const known =
      rest.length === 0 &&
      (RESOURCE_TYPES as readonly string[]).includes(resource ?? '') &&
      (EVENT_OPERATIONS as readonly string[]).includes(operation ?? '');
    if (!known) {
      throw new OwnerError(
        `Unknown event type "${type}": event types are <resource>.created|updated|deleted, with <resource> one of ${RESOURCE_TYPES.join(', ')}.`,
      );
    }
    if (!readable.includes(resource as ResourceType)) {
      throw new OwnerError(
        `The scopes do not read ${resource} events: "${type}" needs the scope ${RESOURCES[resource as ResourceType].readScope}.`,
      );
    }
  }
  return types;
}

export const webhookCommands = {
  async createWebhook(
    ctx: WebhookContext,
    input: { workspaceId: string; url: string; scopes: string[]; events?: string[] },
  ): Promise<CreatedEndpoint> {
    const workspaceId = requireUuid(input.workspaceId, 'workspace id');
    if (!(await workspacesRepository.find(ctx.db, workspaceId))) throw new OwnerError(`No workspace ${workspaceId}.`);
    let url: URL;
    try {
      url = checkTargetUrl(input.url ?? '', ctx.webhooks.targets);
    } catch (err) {
      if (err instanceof TargetRefused) throw new OwnerError(err.message);
      throw err;
    }
    const scopes = validScopes(input.scopes ?? []);
    const readable = readableResourceTypes(new Set(scopes));
    if (readable.length === 0) {
      throw new OwnerError(
        `These scopes read no events; give at least one read scope (${[...new Set(RESOURCE_TYPES.map((t) => RESOURCES[t].readScope))].join(', ')}).`,
      );
    }
    const eventTypes = validEventTypes(input.events, readable);
    const secret = newWebhookSecret();
    const row = await webhooksRepository.insert(ctx.db, {
      workspaceId,
      url: url.href,
      eventTypes,
      scopes,
      secret,
    });
    return { ...row, secret };
  },

  async listWebhooks(ctx: WebhookContext, input: { workspaceId?: string }): Promise<EndpointWithBacklog[]> {
    const ws = input?.workspaceId ? requireUuid(input.workspaceId, 'workspace id') : null;
    return webhooksRepository.list(ctx.db, ws);
  },

  /** disable: deliveries pause (and are kept); enable: they resume at once, each with a fresh schedule. */
  async setWebhookStatus(
    ctx: WebhookContext,
    input: { id: string; status: 'active' | 'disabled' },
  ): Promise<EndpointRow> {
    await existing(ctx, input.id);
    if (input.status !== 'active' && input.status !== 'disabled')
      throw new OwnerError('The status is active or disabled.');
    const row = await ctx.db.transaction(async (tx) => {
      const updated = await webhooksRepository.setStatus(
        tx,
        input.id,
        input.status,
        input.status === 'disabled' ? 'disabled by the owner' : null,
      );
      if (input.status === 'active') await webhooksRepository.rescheduleAllPending(tx, input.id);
      return updated;
    });
    if (!row) throw new OwnerError(`No webhook endpoint ${input.id}.`);
    return row;
  },

  async deleteWebhook(ctx: WebhookContext, input: { id: string }): Promise<EndpointRow> {
    const id = requireUuid(input.id, 'webhook endpoint id');
    // The deletion locks the endpoint, then its deliveries (ON DELETE CASCADE); an attempt being
    // settled holds its delivery and then needs the endpoint (its history row's foreign key). When
    // the two cross, PostgreSQL aborts one: the deletion runs again.
    const row = await retryingConflicts(() => webhooksRepository.remove(ctx.db, id));
    if (!row) throw new OwnerError(`No webhook endpoint ${input.id}.`);
    return row;
  },

  /** A new secret signs from now on; the current one keeps signing too until the grace period ends. */
  async rotateWebhookSecret(ctx: WebhookContext, input: { id: string; graceMs: number }): Promise<CreatedEndpoint> {
    if (!(input.graceMs >= 0)) throw new OwnerError('The grace period must be zero or more.');
    await existing(ctx, input.id);
    const secret = newWebhookSecret();
    const row = await webhooksRepository.rotateSecret(ctx.db, input.id, secret, input.graceMs);
    if (!row) throw new OwnerError(`No webhook endpoint ${input.id}.`);
    return { ...row, secret };
  },

  /**
   * Sends a test message now, from the process that runs the command, signed like any delivery; it
   * goes outside the queue and changes no delivery and no status. Its id is "test_…" (never an
   * event id) and its body says it is a test.
   */
  async testWebhook(ctx: WebhookContext, input: { id: string }): Promise<TestDelivery> {
    const endpoint = await existing(ctx, input.id);
    const messageId = `test_${randomBytes(16).toString('base64url')}`;
    const message: WebhookTestT = {
      id: messageId,
      type: 'webhook.test',
      occurred_at: new Date().toISOString(),
      data: { endpoint_id: endpoint.id, message: 'A test delivery sent by the workspace owner (webhooks test).' },
    };
    const body = JSON.stringify(message);
    const timestamp = Math.floor(Date.now() / 1000);
    const secrets = await webhooksRepository.signingSecrets(ctx.db, endpoint.id);
    const result = await sendOnce({
      url: endpoint.url,
      body,
      headers: {
        'webhook-id': messageId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(messageId, timestamp, body, secrets),
      },
      timeoutMs: ctx.webhooks.timeoutMs,
      targets: ctx.webhooks.targets,
    });
    await webhooksRepository.recordAttempt(ctx.db, {
      endpointId: endpoint.id,
      messageId,
      eventType: 'webhook.test',
      outcome: result.outcome,
      status: result.status,
      durationMs: result.durationMs,
      error: result.error,
    });
    return {
      endpoint_id: endpoint.id,
      message_id: messageId,
      outcome: result.outcome,
      status: result.status,
      duration_ms: result.durationMs,
      error: result.error,
    };
  },

  async webhookDeliveries(
    ctx: WebhookContext,
    input: { id: string; limit?: number },
  ): Promise<{ endpoint: EndpointRow; attempts: AttemptRow[] }> {
    const endpoint = await existing(ctx, input.id);
    const limit = input.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new OwnerError('The limit is 1 to 1000.');
    return { endpoint, attempts: await webhooksRepository.recentAttempts(ctx.db, endpoint.id, limit) };
  },

  /**
   * Delivers again every event after `after` (an event id of the endpoint's workspace, as the feed
   * and the deliveries carry it), acknowledged ones included, and resumes the endpoint.
   */
  async replayWebhook(
    ctx: WebhookContext,
    input: { id: string; after: string },
  ): Promise<{ endpoint: EndpointRow; replayed_after: string; redelivering: number }> {
    const endpoint = await existing(ctx, input.id);
    const secret = await webhooksRepository.eventIdSecret(ctx.db);
    const parsed = secret ? new EventIdCodec(secret).decode(endpoint.workspace_id, input.after ?? '') : null;
    if (parsed?.kind !== 'position') {
      throw new OwnerError(
        `"${input.after ?? ''}" is not an event id of workspace ${endpoint.workspace_id} (as webhook-id or GET /v2/events gives it).`,
      );
    }
    const readable = readableResourceTypes(new Set(endpoint.scopes as Scope[]));
    const problem = await eventsRepository.positionProblem(ctx.db, endpoint.workspace_id, parsed.position, readable);
    if (problem === 'expired') {
      throw new OwnerError('Events after that one were deleted by retention: replay from a later event.');
    }
    if (problem === 'ahead') throw new OwnerError('That position is ahead of the feed of this workspace.');
    const redelivering = await ctx.db.transaction(async (tx) => {
      await webhooksRepository.lock(tx, endpoint.id);
      return webhooksRepository.replay(tx, endpoint.id, parsed.position);
    });
    return {
      endpoint: (await webhooksRepository.find(ctx.db, endpoint.id)) ?? endpoint,
      replayed_after: input.after,
      redelivering,
    };
  },
};
