// Sends the outcome of an idempotent write, marking replays as Stripe-compatible clients expect.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import type { IdempotentOutcome, Write } from '../infra/idempotency-store.js';
import type { Transaction } from '../infra/database.js';
import { ApiError, nulCharacterProblems, validationFailed } from '../shared/errors.js';
import { principalOf } from './principal.js';

export async function idempotentWrite(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  write: (tx: Transaction, workspaceId: string) => Promise<Write>,
  /** the path of the resource a 201 created, from its id: sent as Location (replays too) */
  locationOf?: (id: string) => string,
): Promise<FastifyReply> {
  const principal = principalOf(request);
  // Checked already by the preValidation hook of request-conventions; read again with its type.
  const key = request.headers['idempotency-key'];
  if (typeof key !== 'string')
    throw new ApiError('idempotency_key_missing', { details: { header: 'Idempotency-Key' } });
  // Before the key is claimed: a body the store cannot hold leaves the key free for the fixed one.
  const unstorable = request.body && typeof request.body === 'object' ? nulCharacterProblems(request.body) : [];
  if (unstorable.length > 0) throw validationFailed(unstorable);
  let outcome: IdempotentOutcome;
  try {
    outcome = await services.idempotency.execute(
      {
        workspaceId: principal.workspaceId,
        requestId: request.id,
        key,
        method: request.method,
        route: request.routeOptions.url ?? request.url,
        params: sameIdsInAnyCase(request),
        // A write without a body (a deletion) ignores a stray one, and so does its fingerprint.
        body: request.routeOptions.schema?.body === undefined ? null : request.body,
      },
      (tx) => write(tx, principal.workspaceId),
      // The route's response serializer, once: its text is both the answer and the record.
      (statusCode, body) => {
        if (statusCode === 204) return '';
        const text = reply.code(statusCode).serialize(body);
        if (typeof text !== 'string') throw new Error('a JSON response serializer returned bytes');
        return text;
      },
    );
  } catch (err) {
    if (err instanceof ApiError && err.code === 'idempotency_key_reused') services.metrics.idempotency('reused');
    if (err instanceof ApiError && err.code === 'idempotency_key_in_use') services.metrics.idempotency('in_use');
    throw err;
  }
  services.metrics.idempotency(outcome.replayed ? 'replayed' : 'executed');
  if (outcome.replayed) reply.header('idempotent-replayed', 'true');
  if (outcome.statusCode === 201 && locationOf && outcome.resourceId) {
    reply.header('location', locationOf(outcome.resourceId));
  }
  reply.code(outcome.statusCode);
  if (outcome.statusCode === 204) return reply.send();
  if (outcome.payload === undefined) return reply.send(outcome.body);
  // As bytes: Fastify would measure a string's length in a pass of its own before writing it.
  return reply.type('application/json; charset=utf-8').send(Buffer.from(outcome.payload));
}

/**
 * The path's parameters with every UUID (a parameter the route declares with format uuid) in lower
 * case: /contacts/{ID} and /contacts/{id} are one request. Other values, an external_id among them,
 * keep their case: they are case-sensitive.
 */
function sameIdsInAnyCase(request: FastifyRequest): unknown {
  const { params } = request;
  const declared = (request.routeOptions.schema?.params as { properties?: Record<string, { format?: string }> })
    ?.properties;
  if (params === null || typeof params !== 'object' || !declared) return params;
  return Object.fromEntries(
    Object.entries(params).map(([name, value]) => [
      name,
      declared[name]?.format === 'uuid' && typeof value === 'string' ? value.toLowerCase() : value,
    ]),
  );
}
