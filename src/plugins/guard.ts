// Authentication, rate limiting, workspace status and scope, in that order, before the body is
// read: a request that may not run costs no parsing and no database write. Every answer, refusals
// included, carries RateLimit-Limit/-Remaining/-Reset (spec 4.1.2, 8.1): the key's quota once the
// key is known, the client address's quota for requests without a valid key.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../modules/api-keys/authenticator.js';
import type { Metrics } from '../infra/metrics.js';
import { ApiError, insufficientScope, invalidApiKey } from '../shared/errors.js';
import type { RateLimitDecision, RateLimiter } from '../infra/rate-limiter.js';
import './types.js';

export interface GuardOptions {
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  metrics: Metrics;
  unauthenticatedLimitPerMinute: number;
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

    const limitByAddress = async (ip: string, reply: FastifyReply) => {
      const d = await opts.rateLimiter.consume(`ip:${ip}`, opts.unauthenticatedLimitPerMinute);
      applyRateLimitHeaders(reply, d);
      if (!d.allowed) {
        opts.metrics.rateLimited('address');
        throw rateLimited(d, 'address_rate_limit_exceeded');
      }
    };

    app.addHook('onRequest', async (request, reply) => {
      const config = request.routeOptions.config;
      if (config.unmetered) return;
      if (config.public) return limitByAddress(request.ip, reply);

      const outcome = await opts.authenticator.authenticate(request.headers.authorization);
      if (!outcome.ok) {
        await limitByAddress(request.ip, reply);
        // RFC 6750, 3.1: the error code only when a bearer token was actually presented.
        throw invalidApiKey(/^bearer\s/i.test(request.headers.authorization ?? ''));
      }
      const principal = outcome.principal;
      request.principal = principal;

      // Counted per key lineage: a rotated key and its successor share one quota.
      const d = await opts.rateLimiter.consume(`key:${principal.quotaId}`, principal.rateLimitPerMinute);
      applyRateLimitHeaders(reply, d);
      if (!d.allowed) {
        opts.metrics.rateLimited('key');
        throw rateLimited(d, 'rate_limit_exceeded');
      }

      if (principal.workspaceSuspended) throw new ApiError('workspace_suspended');
      // Unknown paths have no scope: they fall through to the 404 handler.
      if (config.scope && !principal.scopes.has(config.scope)) {
        throw insufficientScope(config.scope, `This operation requires the scope ${config.scope}.`);
      }
    });
  },
  { name: 'guard', dependencies: ['request-conventions'] },
);
