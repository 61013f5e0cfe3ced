// What every request leaves behind, refused or served: its log line, its metrics and the key's
// usage trail.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';

/**
 * At debug and below, a line as each request arrives (registered before every other hook, so every
 * request has one, refused or not): what is in flight when a process stops or hangs.
 */
export function logEachArrival(app: FastifyInstance): void {
  if (!['debug', 'trace'].includes(app.log.level)) return;
  app.addHook('onRequest', (request, _reply, done) => {
    request.log.debug({ req: request }, 'incoming request');
    done();
  });
}

/** One hook at the end of every answer: metrics, the key's usage trail and the log line. */
export function accountEveryAnswer(app: FastifyInstance, services: Pick<Services, 'metrics' | 'usage'>): void {
  // A client that leaves before its answer still gets its one line.
  app.addHook('onRequestAbort', (request, done) => {
    request.log.info({ req: request }, 'request aborted');
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const elapsedMs = reply.elapsedTime;
    // Read once: Fastify builds routeOptions anew on every read.
    const route = request.routeOptions;
    services.metrics.observeRequest(request.method, route.url, reply.statusCode, elapsedMs / 1000);
    if (request.principal) {
      const schema: { operationId?: string } | undefined = route.schema;
      services.usage.record(request.principal.keyId, schema?.operationId ?? 'unmatched', reply.statusCode);
    }
    request.log.info(
      { req: request, res: { statusCode: reply.statusCode }, responseTime: elapsedMs },
      'request completed',
    );
    done();
  });
}
