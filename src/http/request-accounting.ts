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
    /** Set once the request has its one account (metrics, usage trail, log line). */
    answerAccounted: boolean;
    /** Set while a metered request awaits its account: shutdown waits for it. */
    accountAwaited: boolean;
    /** Set once the request's answer is ready to be written (its onSend hooks run). */
    answerReady: boolean;
  }
}

/** Methods whose requests Fastify never reads a body of. */
const BODILESS = new Set(['GET', 'HEAD', 'TRACE']);

/**
 * Whether Fastify has yet to read this request's body before its handler can run (its rule:
 * a body is read when the method may carry one and a content type or a non-empty body is
 * announced). A client that leaves before then stops the request: the body is gone with it.
 */
function bodyStillToRead(request: FastifyRequest): boolean {
  if (request.raw.readableEnded || BODILESS.has(request.method)) return false;
  const h = request.headers;
  return (
    h['content-type'] !== undefined ||
    h['transfer-encoding'] !== undefined ||
    (h['content-length'] !== undefined && h['content-length'] !== '0')
  );
}

/**
 * One account of every request, as its work ends: metrics, the key's usage trail and one log line.
 * A client that leaves once its request has been read does not stop the work it started (a write
 * is applied, its answer kept for a retry with the same Idempotency-Key); Fastify runs no
 * onResponse hook for an answer that cannot be sent, so such a request is accounted as its work
 * ends, with `delivered: false` on its "request completed" line. A client that leaves before its
 * body has been read stops its request: its one line is "request aborted", and nothing else is
 * counted. Shutdown waits for the account of every metered request that arrived (`settled`), so
 * that the work of clients that left is in the usage trail it writes last.
 */
export class RequestAccounting {
  readonly #services: Pick<Services, 'metrics' | 'usage'>;
  /** metered requests that arrived and have no account yet */
  #awaited = 0;
  #onSettled: (() => void)[] = [];

  constructor(services: Pick<Services, 'metrics' | 'usage'>) {
    this.#services = services;
  }

  register(app: FastifyInstance): void {
    app.decorateRequest('answerAccounted', false);
    app.decorateRequest('accountAwaited', false);
    app.decorateRequest('answerReady', false);
    app.addHook('onSend', (request, reply, payload, done) => {
      if (reply.raw.destroyed) this.#clientLeft(request, reply, true);
      else request.answerReady = true;
      done(null, payload);
    });
    app.addHook('onResponse', (request, reply, done) => {
      this.#account(request, reply, true);
      done();
    });
  }

  /** Told by the guard of each metered request as it takes it in. */
  arrived(request: FastifyRequest): void {
    request.accountAwaited = true;
    this.#awaited += 1;
  }

  /**
   * Told of each metered request's connection closing (guard.ts listens for it from the request's
   * arrival on): a close before the answer was written in full is a client that left.
   */
  connectionClosed(request: FastifyRequest, reply: FastifyReply): void {
    if (!reply.raw.writableFinished) this.#clientLeft(request, reply, request.answerReady);
  }

  /** Resolves once every metered request that arrived has its account. */
  settled(): Promise<void> {
    if (this.#awaited === 0) return Promise.resolve();
    return new Promise((resolve) => this.#onSettled.push(resolve));
  }

  /** A client left: its request stops if its body is still to read, else its work goes on to its account. */
  #clientLeft(request: FastifyRequest, reply: FastifyReply, answerReady: boolean): void {
    if (request.answerAccounted) return;
    if (bodyStillToRead(request)) {
      this.#accounted(request);
      request.log.info({ req: request }, 'request aborted');
    } else if (answerReady) this.#account(request, reply, false);
  }

  #account(request: FastifyRequest, reply: FastifyReply, delivered: boolean): void {
    if (request.answerAccounted) return;
    this.#accounted(request);
    const elapsedMs = reply.elapsedTime;
    // Read once: Fastify builds routeOptions anew on every read.
    const route = request.routeOptions;
    const { metrics, usage } = this.#services;
    metrics.observeRequest(request.method, route.url, reply.statusCode, elapsedMs / 1000);
    if (!delivered) metrics.answerUndelivered();
    if (request.principal) {
      const schema: { operationId?: string } | undefined = route.schema;
      usage.record(request.principal.keyId, schema?.operationId ?? 'unmatched', reply.statusCode);
    }
    request.log.info(
      delivered
        ? { req: request, res: { statusCode: reply.statusCode }, responseTime: elapsedMs }
        : { req: request, res: { statusCode: reply.statusCode }, responseTime: elapsedMs, delivered: false },
      'request completed',
    );
  }

  #accounted(request: FastifyRequest): void {
    request.answerAccounted = true;
    if (!request.accountAwaited) return;
    request.accountAwaited = false;
    this.#awaited -= 1;
    if (this.#awaited > 0) return;
    const waiting = this.#onSettled;
    this.#onSettled = [];
    for (const resolve of waiting) resolve();
  }
}
