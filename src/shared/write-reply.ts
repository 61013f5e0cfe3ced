// Sends the outcome of an idempotent write, marking replays as Stripe-compatible clients expect.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import type { IdempotentOutcome, WriteResult } from './idempotency.js';
import type { Queryable } from '../infra/database.js';

export async function idempotentWrite(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  write: (tx: Queryable, workspaceId: string) => Promise<WriteResult>,
): Promise<FastifyReply> {
  const principal = request.principal!;
  const outcome: IdempotentOutcome = await services.idempotency.execute(
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
  if (outcome.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(outcome.statusCode).send(outcome.body);
}
