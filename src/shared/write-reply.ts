// Sends the outcome of an idempotent write, marking replays as Stripe-compatible clients expect.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import type { IdempotentOutcome, WriteResult } from './idempotency.js';
import type { Queryable } from '../infra/database.js';
import { ApiError } from './errors.js';

export async function idempotentWrite(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  write: (tx: Queryable, workspaceId: string) => Promise<WriteResult>,
  /** the path of the resource a 201 created, from its body: sent as Location (replays too) */
  locationOf?: (body: unknown) => string | undefined,
): Promise<FastifyReply> {
  const principal = request.principal!;
  let outcome: IdempotentOutcome;
  try {
    outcome = await services.idempotency.execute(
      {
        workspaceId: principal.workspaceId,
        requestId: request.id,
        key: request.headers['idempotency-key'] as string,
        method: request.method,
        route: request.routeOptions.url ?? request.url,
        params: request.params,
        body: request.body,
      },
      (tx) => write(tx, principal.workspaceId),
    );
  } catch (err) {
    if (err instanceof ApiError && err.code === 'idempotency_key_reused') services.metrics.idempotency('reused');
    if (err instanceof ApiError && err.code === 'idempotency_key_in_use') services.metrics.idempotency('in_use');
    throw err;
  }
  services.metrics.idempotency(outcome.replayed ? 'replayed' : 'executed');
  if (outcome.replayed) reply.header('idempotent-replayed', 'true');
  const location = outcome.statusCode === 201 ? locationOf?.(outcome.body) : undefined;
  if (location) reply.header('location', location);
  return reply.code(outcome.statusCode).send(outcome.body);
}
