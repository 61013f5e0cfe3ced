// Read-your-writes on a deployment with read replicas (infra/read-replicas.ts): the
// Consistency-Token header. A write's answer carries one, the primary's WAL position after the write
// committed; a request that sends one back has its reads served by a replica that has applied that
// write, or by the primary. Without replicas no answer carries a token, and a token sent is checked
// and has nothing to wait for.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Queryable } from '../infra/database.js';
import { positionOfToken, tokenOf, type ReadReplicas } from '../infra/read-replicas.js';
import { ApiError } from '../shared/errors.js';

export const CONSISTENCY_TOKEN_HEADER = 'consistency-token';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Each request's reads, chosen at its first read: every read of one request runs on one server. */
const chosen = new WeakMap<FastifyRequest, Queryable | Promise<Queryable>>();

/** Where this request's reads run: the primary, or a replica that has applied its token's write. */
export function readsOf(request: FastifyRequest, reads: ReadReplicas): Queryable | Promise<Queryable> {
  if (!reads.enabled) return checkedReads(request, reads);
  let target = chosen.get(request);
  if (!target) {
    target = checkedReads(request, reads);
    chosen.set(request, target);
  }
  return target;
}

function checkedReads(request: FastifyRequest, reads: ReadReplicas): Queryable | Promise<Queryable> {
  const sent = request.headers[CONSISTENCY_TOKEN_HEADER];
  if (sent === undefined) return reads.route(null);
  const position = typeof sent === 'string' ? positionOfToken(sent) : null;
  if (position === null) {
    throw new ApiError('invalid_header', {
      message: 'The Consistency-Token header must be a token from the Consistency-Token header of an earlier answer.',
      details: { header: 'Consistency-Token' },
    });
  }
  return reads.route(position);
}

/**
 * Gives every successful write's answer its token, where replicas serve reads. A write whose
 * position cannot be read (the primary lost right after its commit) is answered without one: its
 * client's next read then goes by the replicas' bounded lag alone.
 */
export function issueConsistencyTokens(app: FastifyInstance, reads: ReadReplicas): void {
  if (!reads.enabled) return;
  app.addHook('onSend', async (request, reply, payload) => {
    if (READ_METHODS.has(request.method) || !request.principal) return payload;
    if (reply.statusCode < 200 || reply.statusCode >= 300) return payload;
    try {
      reply.header('Consistency-Token', tokenOf(await reads.positionNow()));
    } catch (err) {
      request.log.warn(
        { err: { name: (err as Error).name, code: (err as { code?: unknown }).code } },
        'no consistency token',
      );
    }
    return payload;
  });
}
