// Read-your-writes on a deployment with read replicas (infra/read-replicas.ts): the
// Consistency-Position header. A write's answer carries one, the primary's WAL position after the write
// committed; a request that sends one back has its reads served by a replica that has applied that
// write, or by the primary. Without replicas no answer carries a token, and a token sent is checked
// and has nothing to wait for.
import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from 'fastify';
import type { Queryable } from '../infra/database.js';
import { positionOfToken, tokenOf, type ReadReplicas } from '../infra/read-replicas.js';
import { ApiError } from '../shared/errors.js';
import { answersOnly, hooksOf } from './route-hooks.js';

export const CONSISTENCY_POSITION_HEADER = 'consistency-position';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Each request's reads, chosen at its first read: every read of one request runs on one server. */
const chosen = new WeakMap<FastifyRequest, Queryable | Promise<Queryable>>();

/** Where this request's reads run: the primary, or a replica that has applied what it must see. */
export function readsOf(request: FastifyRequest, reads: ReadReplicas): Queryable | Promise<Queryable> {
  if (!reads.enabled) {
    positionSent(request);
    return reads.route(null);
  }
  let target = chosen.get(request);
  if (!target) {
    target = reads.route(positionSent(request));
    chosen.set(request, target);
  }
  return target;
}

/** The position the request's Consistency-Position names; null without one; 400 when it is not a token. */
function positionSent(request: FastifyRequest): bigint | null {
  const sent = request.headers[CONSISTENCY_POSITION_HEADER];
  if (sent === undefined) return null;
  const position = typeof sent === 'string' ? positionOfToken(sent) : null;
  if (position === null) {
    throw new ApiError('invalid_header', {
      message:
        'The Consistency-Position header must be a token from the Consistency-Position header of an earlier answer.',
      details: { header: 'Consistency-Position' },
    });
  }
  return position;
}

/**
 * The header on every operation: a write refuses a malformed token as a read does (it has nothing
 * to wait for); and, where replicas serve reads, every successful write's answer gets its token. A
 * write whose position cannot be read (the primary lost right after its commit) is answered without
 * one: its client's next read then goes by what the deployment's consistency gives any read.
 */
export function consistencyPositions(app: FastifyInstance, reads: ReadReplicas): void {
  const checkPosition: preHandlerHookHandler = (request, _reply, done) => {
    try {
      if (request.principal) positionSent(request);
    } catch (err) {
      return done(err as Error);
    }
    done();
  };
  // Attached to the writes only: a read checks the header where it reads (readsOf).
  app.addHook('onRoute', (route) => {
    if (answersOnly(route, READ_METHODS)) return;
    route.preHandler = [checkPosition, ...hooksOf(route.preHandler)];
  });
  if (!reads.enabled) return;
  app.addHook('onSend', async (request, reply, payload) => {
    if (READ_METHODS.has(request.method) || !request.principal) return payload;
    if (reply.statusCode < 200 || reply.statusCode >= 300) return payload;
    try {
      reply.header('Consistency-Position', tokenOf(await reads.positionNow()));
    } catch (err) {
      request.log.warn(
        { err: { name: (err as Error).name, code: (err as { code?: unknown }).code } },
        'no consistency position',
      );
    }
    return payload;
  });
}
