// Builds the service. Reading this file top to bottom tells the whole composition: the shared parts,
// then the cross-cutting plugins in the order a request meets them, then the versions.
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Config } from './config.js';
import type { Database } from './infra/database.js';
import requestConventions from './plugins/request-conventions.js';
import guard, { addressRateLimitHeaders } from './plugins/guard.js';
import errors, { renderError, routeNotFound } from './plugins/errors.js';
import { ApiError } from './shared/errors.js';
import { encodeExternalIdSlashes } from './http/external-id-url.js';
import { withSafeSerializers } from './http/request-log.js';
import { requestIds } from './http/request-ids.js';
import { answerUnparsableRequest } from './http/unparsable-request.js';
import { useStrictValidators } from './http/validators.js';
import { healthRoutes } from './api/health.js';
import { v1 } from './api/v1.js';
import { v2 } from './api/v2.js';
import { docsRoutes } from './api/docs.js';
import { eventsRepository } from './modules/events/events.repository.js';
import { WebhookDelivery } from './modules/webhooks/delivery.js';
import { WebhookMetrics } from './modules/webhooks/webhook-metrics.js';
import { webhooksRepository } from './modules/webhooks/webhooks.repository.js';
import { createServices, type Services } from './services.js';

export interface BuiltApp {
  app: FastifyInstance;
  services: Services;
  /** Stops accepting requests, lets in-flight ones finish, then releases everything. */
  close(): Promise<void>;
}

export async function buildApp(
  config: Config,
  db: Database,
  options: { logger?: FastifyServerOptions['logger'] } = {},
): Promise<BuiltApp> {
  const services = await createServices(config, db);
  const ensureRateLimitHeaders = addressRateLimitHeaders(
    services.rateLimiter,
    config.unauthenticatedRateLimitPerMinute,
  );
  const ensureSocketRateLimit = (address: string) =>
    services.rateLimiter.consume(`ip:${address}`, config.unauthenticatedRateLimitPerMinute);
  const nextRequestId = requestIds();
  // Set while closing: answers then ask keep-alive clients to close, so shutdown does not wait on
  // connections that would otherwise stay open after their last request.
  let closing = false;

  const app = Fastify({
    logger: withSafeSerializers(options.logger ?? { level: config.logLevel }),
    // Requests Node's HTTP parser refuses never reach a route; they still get the error object.
    clientErrorHandler: (err, socket) =>
      answerUnparsableRequest(err, socket, nextRequestId(), ensureSocketRateLimit, (line) =>
        app.log.info(line, 'request refused'),
      ),
    // Node would answer a request without Host itself, with an empty body: the hook in
    // plugins/request-conventions refuses it instead, with the error object and every header.
    http: { requireHostHeader: false },
    genReqId: nextRequestId,
    bodyLimit: config.bodyLimitBytes,
    // One line per request, written when it is answered (the onResponse hook below), instead of
    // Fastify's two: it carries what both did, and costs one serialization and one write.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: config.trustProxy,
    // Refusals during shutdown are ours (the onRequest hook below), with the error object.
    return503OnClosing: false,
    connectionTimeout: 60_000,
    requestTimeout: 30_000,
    keepAliveTimeout: 72_000,
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 512 },
    // An external_id may contain "/" (spec 8): sent raw, it is one path parameter all the same.
    rewriteUrl: (req) => encodeExternalIdSlashes(req.url ?? '/'),
    // URLs the router refuses before any hook runs (undecodable, a parameter over 512 characters)
    // still get the error object and every common header.
    frameworkErrors: (error, request, reply) => {
      void (async () => {
        await ensureRateLimitHeaders(request, reply);
        const message =
          error.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? 'A path parameter is longer than 512 characters.'
            : 'The URL path is not valid (check its percent-encoding).';
        // Under /docs there are only pages: a path that cannot even be decoded names none.
        const refusal = request.url.startsWith('/docs/')
          ? routeNotFound(request)
          : new ApiError('invalid_path_parameter', { message });
        renderError(request, reply, refusal);
      })();
    },
  });
  useStrictValidators(app);

  // At debug and below, a line as each request arrives as well (the first hook, so every request
  // has one, refused or not): what is in flight when a process stops or hangs.
  if (['debug', 'trace'].includes(app.log.level)) {
    app.addHook('onRequest', (request, _reply, done) => {
      request.log.debug({ req: request }, 'incoming request');
      done();
    });
  }
  // Connections reading the rest of a refused body: cut at shutdown rather than waited for.
  const lingering = new Set<Socket>();
  await app.register(errors, { ensureRateLimitHeaders, lingering });
  await app.register(requestConventions, { closing: () => closing });
  await app.register(guard, {
    authenticator: services.authenticator,
    rateLimiter: services.rateLimiter,
    metrics: services.metrics,
    unauthenticatedLimitPerMinute: config.unauthenticatedRateLimitPerMinute,
    concurrency: services.concurrency,
    defaultConcurrentRequests: config.defaultConcurrentRequests,
    shedder: services.shedder,
  });

  app.addHook('onListen', async () => services.shedder.watchEventLoop());

  // A client that leaves before its answer still gets its one line.
  app.addHook('onRequestAbort', (request, done) => {
    request.log.info({ req: request }, 'request aborted');
    done();
  });
  // Outbound webhooks: every process that delivers runs the loop; the store shares the work out
  // (modules/webhooks/delivery.ts). Its series are on /metrics whether this process delivers or not.
  const webhookMetrics = new WebhookMetrics(services.metrics.registry, db);
  const delivery = config.webhooks.delivery
    ? new WebhookDelivery({
        db,
        config: config.webhooks,
        eventIds: services.eventIds,
        metrics: webhookMetrics,
        log: app.log.child({ component: 'webhooks' }),
      })
    : null;

  // One hook at the end of every answer: metrics, the key's usage trail and the log line.
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

  await app.register(healthRoutes, { services });
  await app.register(v1, { prefix: '/v1', services });
  await app.register(v2, { prefix: '/v2', services });
  await app.register(docsRoutes);

  delivery?.start();

  // Housekeeping: expired idempotency records, events past their retention, webhook history.
  const housekeeping = async () => {
    await services.idempotency.purgeExpired();
    await services.rateLimiter.purge();
    await services.concurrency.purge?.();
    await eventsRepository.purgeOlderThan(db, config.eventsRetentionDays);
    await webhooksRepository.purgeOlderThan(db, config.eventsRetentionDays);
  };
  void housekeeping().catch(() => undefined);
  const purge = setInterval(() => void housekeeping().catch(() => undefined), 10 * 60_000);
  purge.unref();

  await app.ready();
  return {
    app,
    services,
    async close() {
      clearInterval(purge);
      closing = true;
      for (const socket of lingering) socket.destroy();
      // Attempts in flight may finish (their answers are recorded) while requests drain; one that
      // outlasts the shutdown grace keeps its lease, which expires, and another process sends it.
      await Promise.all([
        delivery?.stop(Math.min(config.webhooks.timeoutMs, Math.max(0, config.shutdownGraceMs - 1_000))),
        app.close(),
      ]);
      await services.usage.close();
      await services.authenticator.close();
      await services.rateLimiter.close();
      await services.concurrency.close();
      services.redis?.close();
      services.shedder.close();
    },
  };
}
