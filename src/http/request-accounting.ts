// What every request leaves behind, refused or served: its log line, its metrics and the key's
// usage trail.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the request's answer has been accounted (metrics, usage trail, log line). */
    answerAccounted: boolean;
    /** Set once the accounting watches the answer's connection for a client that leaves. */
    answerWatched: boolean;
  }
}

/**
 * Once per request whose work ended, delivered or not: metrics, the key's usage trail and the log
 * line. A client that leaves once its request has been read does not stop the work it started (a
 * write is applied, and its answer kept for a retry with the same Idempotency-Key); Fastify runs
 * no onResponse hook for an answer that cannot be sent, so such an answer is accounted as its work
 * ends, with `delivered: false` on its line.
 */
export function accountEveryAnswer(app: FastifyInstance, services: Pick<Services, 'metrics' | 'usage'>): void {
  const account = (request: FastifyRequest, reply: FastifyReply, delivered: boolean): void => {
    if (request.answerAccounted) return;
    request.answerAccounted = true;
    const elapsedMs = reply.elapsedTime;
    // Read once: Fastify builds routeOptions anew on every read.
    const route = request.routeOptions;
    services.metrics.observeRequest(request.method, route.url, reply.statusCode, elapsedMs / 1000);
    if (!delivered) services.metrics.answerUndelivered();
    if (request.principal) {
      const schema: { operationId?: string } | undefined = route.schema;
      services.usage.record(request.principal.keyId, schema?.operationId ?? 'unmatched', reply.statusCode);
    }
    request.log.info(
      delivered
        ? { req: request, res: { statusCode: reply.statusCode }, responseTime: elapsedMs }
        : { req: request, res: { statusCode: reply.statusCode }, responseTime: elapsedMs, delivered: false },
      'request completed',
    );
  };
  app.decorateRequest('answerAccounted', false);
  app.decorateRequest('answerWatched', false);
  // A client that leaves before its request has been read in full: no work was started.
  app.addHook('onRequestAbort', (request, done) => {
    request.log.info({ req: request }, 'request aborted');
    done();
  });
  // The answer is ready: if its connection is gone already, or goes before the answer is written,
  // no onResponse will come.
  app.addHook('onSend', (request, reply, payload, done) => {
    const res = reply.raw;
    // A body cut short is answered with an error nobody reads; its "request aborted" line is its account.
    if (!request.raw.complete) return done(null, payload);
    if (res.destroyed) account(request, reply, false);
    else if (!request.answerWatched) {
      request.answerWatched = true;
      res.once('close', () => {
        if (!res.writableFinished) account(request, reply, false);
      });
    }
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    account(request, reply, true);
    done();
  });
}
