// Authentication, rate limiting, load shedding (by workspace), the key's concurrent requests,
// workspace status and scope, in that order, before the body is read: a request that may not run
// costs no parsing and no database write. Every answer, refusals included, carries RateLimit-Limit/-Remaining/-Reset
// (spec 4.1.2, 8.1): the key's quota once the key is known, the client address's quota for
// requests without a valid key. An admitted request holds its place (in this process, and among
// the key's places across the deployment) until its work ends: its answer sent, or its client gone
// and its handler returned.
import fp from 'fastify-plugin';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onErrorAsyncHookHandler,
  preValidationAsyncHookHandler,
} from 'fastify';
import type { Authenticator } from '../modules/api-keys/authenticator.js';
import type { Metrics } from '../infra/metrics.js';
import { ApiError, insufficientScope, invalidApiKey } from '../shared/errors.js';
import type { RateLimitDecision, RateLimiter } from '../infra/rate-limiter.js';
import type { LoadShedder } from '../infra/load-shedder.js';
import { bodyBytes } from '../http/request-size.js';
import { answersOnly, hooksOf } from '../http/route-hooks.js';
import type { RequestAccounting } from '../http/request-accounting.js';
import './types.js';

interface GuardOptions {
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  metrics: Metrics;
  unauthenticatedLimitPerMinute: number;
  defaultConcurrentRequests: number;
  shedder: LoadShedder;
  /** told of each metered request's arrival and of its connection closing (request-accounting.ts) */
  accounting: Pick<RequestAccounting, 'arrived' | 'connectionClosed'>;
}

/**
 * How long a place among a key's concurrent requests counts after its process last wrote it. A
 * process writes the places it holds again every third of this (admission-store.ts), so a request
 * keeps its place however long it runs; the places of a process that died (SIGKILL, a forced exit)
 * come back within this long.
 */
const CONCURRENCY_LEASE_MS = 15_000;

/** A body counts as one request per this many bytes (started) against the rate limit. */
const BODY_BYTES_PER_REQUEST = 16 * 1024;

/**
 * How many requests this one counts as against its key's rate limit: one, or more for a large body
 * (one per 16 KiB started: announced, or as received when it announced no length) or a batch (one
 * per `itemsPerRequest` items), whichever is more; at most `quota`, the key's requests per minute.
 */
function requestCost(request: FastifyRequest, quota: number, route = request.routeOptions): number {
  const bytes = bodyBytes(request);
  // A body over the route's limit is refused (413) before it is read: it costs nothing to read.
  const byBytes = bytes > route.bodyLimit ? 1 : Math.ceil(bytes / BODY_BYTES_PER_REQUEST);
  const perItems = route.config.itemsPerRequest;
  const byItems = perItems ? Math.ceil(batchValues(request.body) / perItems) : 1;
  // Never more than the key's whole quota: a request that costs it all passes once the quota is
  // full again (its Retry-After holds), where a larger cost could never pass.
  return Math.min(quota, Math.max(1, byBytes, byItems));
}

/** How many values a batch body carries: the lengths of its arrays (items; ids and external_ids). */
function batchValues(body: unknown): number {
  if (body === null || typeof body !== 'object') return 0;
  let values = 0;
  for (const field of ['items', 'ids', 'external_ids'] as const) {
    const list = (body as Record<string, unknown>)[field];
    if (Array.isArray(list)) values += list.length;
  }
  return values;
}

/**
 * What an admitted request holds (its place among the key's requests in flight, its count in this
 * process) and when it gives it back: once its answer is done and its handler has returned. A
 * client that leaves early does not end the work its request started, so its place is kept until
 * the handler returns.
 */
class Admission {
  #closed = false;
  #handling = false;
  #held: (() => void)[] = [];

  /** `onClose`: told as the request's connection closes, answered or not. */
  constructor(
    request: FastifyRequest,
    reply: FastifyReply,
    onClose: (request: FastifyRequest, reply: FastifyReply) => void,
  ) {
    // Read now: once its client has gone, the socket no longer knows the address (Node keeps what
    // was read), and the request's log line names it.
    void request.socket.remoteAddress;
    reply.raw.once('close', () => {
      this.#closed = true;
      if (!this.#handling) this.#giveBack();
      onClose(request, reply);
    });
  }

  /** Holds `giveBack` until the request is over (at once, if it already is). */
  hold(giveBack: () => void): void {
    this.#held.push(giveBack);
    if (this.#closed && !this.#handling) this.#giveBack();
  }

  handlerStarted(): void {
    this.#handling = true;
  }

  handlerEnded(): void {
    this.#handling = false;
    if (this.#closed) this.#giveBack();
  }

  #giveBack(): void {
    const held = this.#held;
    this.#held = [];
    for (const giveBack of held) giveBack();
  }
}

/** Methods whose requests carry no body to count. */
const BODILESS = new Set(['GET', 'HEAD']);

declare module 'fastify' {
  interface FastifyRequest {
    /** What the request holds while it runs (null: unmetered, or refused before its admission). */
    admission: Admission | null;
    /** Requests it has been counted as so far against its key's quota (0: not counted yet). */
    charged: number;
  }
}

function applyRateLimitHeaders(reply: FastifyReply, d: RateLimitDecision): void {
  reply.header('ratelimit-limit', d.limit);
  reply.header('ratelimit-remaining', d.remaining);
  reply.header('ratelimit-reset', new Date(d.resetAtMs).toISOString());
}

function rateLimited(d: RateLimitDecision, code: 'rate_limit_exceeded' | 'address_rate_limit_exceeded'): ApiError {
  // The next request passes once Retry-After seconds have gone by (rounded up, never 0).
  const retryAfter = Math.max(1, Math.ceil(d.retryAfterMs / 1000));
  return new ApiError(code, {
    retryAfter,
    details: {
      limit: d.limit,
      retry_at: new Date(Date.now() + retryAfter * 1000).toISOString(),
      reset_at: new Date(d.resetAtMs).toISOString(),
    },
  });
}

/** Counts the request against its client address unless its RateLimit headers are already set. */
export function addressRateLimitHeaders(rateLimiter: RateLimiter, limitPerMinute: number) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (reply.hasHeader('ratelimit-limit')) return;
    applyRateLimitHeaders(reply, await rateLimiter.consume(`ip:${request.ip}`, limitPerMinute));
  };
}

export default fp<GuardOptions>(
  async function guard(app: FastifyInstance, opts: GuardOptions) {
    app.decorateRequest('principal', null);
    app.decorateRequest('admission', null);
    app.decorateRequest('charged', 0);
    const connectionClosed = (request: FastifyRequest, reply: FastifyReply) =>
      opts.accounting.connectionClosed(request, reply);

    const limitByAddress = async (ip: string, reply: FastifyReply) => {
      const d = await opts.rateLimiter.consume(`ip:${ip}`, opts.unauthenticatedLimitPerMinute);
      applyRateLimitHeaders(reply, d);
      if (!d.allowed) {
        opts.metrics.rateLimited('address');
        throw rateLimited(d, 'address_rate_limit_exceeded');
      }
    };

    /** Refused (503) while this process is saturated and `subject` holds the most of it. */
    const shedIfHeaviest = (subject: string) => {
      const why = opts.shedder.sheds(subject);
      if (!why) return;
      opts.metrics.shed(why);
      throw new ApiError('server_overloaded', { retryAfter: 1, details: { reason: why } });
    };

    // Every handler reports when its work ends, so that a request's places are held until then.
    app.addHook('onRoute', (route) => {
      const handler = route.handler;
      route.handler = async function (this: FastifyInstance, request, reply) {
        const admission = request.admission;
        admission?.handlerStarted();
        try {
          return await handler.call(this, request, reply);
        } finally {
          admission?.handlerEnded();
        }
      };
    });

    app.addHook('onRequest', async (request, reply) => {
      // Read once: Fastify builds routeOptions anew on every read.
      const route = request.routeOptions;
      const config = route.config;
      if (config.unmetered) return;
      // Listening before anything is awaited: a client may leave at any point.
      opts.accounting.arrived(request);
      const admission = new Admission(request, reply, connectionClosed);
      request.admission = admission;
      if (config.public) {
        await limitByAddress(request.ip, reply);
        const subject = `ip:${request.ip}`;
        shedIfHeaviest(subject);
        admission.hold(opts.shedder.enter(subject));
        return;
      }

      const outcome = await opts.authenticator.authenticate(request.headers.authorization);
      if (!outcome.ok) {
        await limitByAddress(request.ip, reply);
        // RFC 6750, 3.1: the error code only when a bearer token was actually presented.
        throw invalidApiKey(/^bearer\s/i.test(request.headers.authorization ?? ''));
      }
      const principal = outcome.principal;
      request.principal = principal;

      // Counted per key lineage: a rotated key and its successor share one quota. A body that
      // announces its length is counted by it now, before it is read. The key's place among its
      // requests in flight is taken in the same step, when the quota allows the request.
      const cost = requestCost(request, principal.rateLimitPerMinute, route);
      const subject = `key:${principal.quotaId}`;
      const limit = principal.concurrencyLimit ?? opts.defaultConcurrentRequests;
      const { decision: d, placed } = await opts.rateLimiter.admit(subject, principal.rateLimitPerMinute, cost, {
        bucket: subject,
        holder: request.id,
        limit,
        leaseMs: CONCURRENCY_LEASE_MS,
      });
      applyRateLimitHeaders(reply, d);
      if (!d.allowed) {
        opts.metrics.rateLimited('key');
        throw rateLimited(d, 'rate_limit_exceeded');
      }
      if (placed) admission.hold(() => void opts.rateLimiter.release(subject, request.id));
      // Shed by workspace, the tenant: a workspace that spreads its requests over many keys is one
      // heavy tenant, not many light ones.
      const tenant = `ws:${principal.workspaceId}`;
      shedIfHeaviest(tenant);
      // Refused for want of a place, the request was not counted (its RateLimit headers say so).
      if (!placed) {
        opts.metrics.rateLimited('concurrency');
        throw new ApiError('concurrency_limit_exceeded', {
          retryAfter: 1,
          message: `This API key already has ${limit} requests in progress; retry after one of them is answered.`,
          details: { limit },
        });
      }
      admission.hold(opts.shedder.enter(tenant));
      request.charged = cost;

      if (principal.workspaceSuspended) throw new ApiError('workspace_suspended');
      // Unknown paths have no scope: they fall through to the 404 handler.
      if (config.scope && !principal.scopes.has(config.scope)) {
        throw insufficientScope(config.scope, `This operation requires the scope ${config.scope}.`);
      }
    });

    // The rest of a request's cost once its body is read: a batch's items, or a body that
    // announced no length. A body that could not be parsed still counts as read (onError), though
    // its refusal is already decided.
    const chargeTheRest = async (request: FastifyRequest, reply: FastifyReply): Promise<RateLimitDecision | null> => {
      const principal = request.principal;
      const already = request.charged;
      if (!principal || already === 0) return null;
      const extra = requestCost(request, principal.rateLimitPerMinute) - already;
      if (extra <= 0) return null;
      request.charged = already + extra;
      const d = await opts.rateLimiter.consumeRest(
        `key:${principal.quotaId}`,
        principal.rateLimitPerMinute,
        extra,
        already,
      );
      applyRateLimitHeaders(reply, d);
      return d;
    };
    const chargeBeforeValidation: preValidationAsyncHookHandler = async (request, reply) => {
      const d = await chargeTheRest(request, reply);
      if (d && !d.allowed) {
        opts.metrics.rateLimited('key');
        throw rateLimited(d, 'rate_limit_exceeded');
      }
    };
    const chargeOnError: onErrorAsyncHookHandler = async (request, reply) => {
      await chargeTheRest(request, reply).catch(() => null);
    };
    // Only a request that can carry a body costs more once it is read: GET and HEAD are not given
    // the hooks, so they pay nothing for them.
    app.addHook('onRoute', (route) => {
      if (answersOnly(route, BODILESS)) return;
      route.preValidation = [chargeBeforeValidation, ...hooksOf(route.preValidation)];
      route.onError = [chargeOnError, ...hooksOf(route.onError)];
    });
  },
  { name: 'guard', dependencies: ['request-conventions'] },
);
