// Builds the service. Reading this file top to bottom tells the whole composition: the shared parts,
// then the cross-cutting plugins in the order a request meets them, then the versions.
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Config } from './config.js';
import type { Database } from './infra/database.js';
import { startHousekeeping } from './infra/housekeeping.js';
import { STATISTICS_CHECK_MS, refreshTableStatistics } from './infra/table-statistics.js';
import requestConventions from './plugins/request-conventions.js';
import guard, { addressRateLimitHeaders } from './plugins/guard.js';
import errors from './plugins/errors.js';
import { earlyRefusals } from './plugins/early-refusals.js';
import { logEachArrival, RequestAccounting } from './http/request-accounting.js';
import { requestIds } from './http/request-ids.js';
import { consistencyPositions } from './http/consistency.js';
import { serverOptions } from './http/server-options.js';
import { routeWordsOf } from './http/request-log.js';
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
  const limitPerMinute = config.unauthenticatedRateLimitPerMinute;
  const ensureRateLimitHeaders = addressRateLimitHeaders(services.rateLimiter, limitPerMinute);
  const nextRequestId = requestIds();
  // Set while closing: answers then ask keep-alive clients to close, so shutdown does not wait on
  // connections that would otherwise stay open after their last request.
  let closing = false;

  // The words of the routes: what a log line may show of a path (http/request-log.ts).
  const routeWords = new Set<string>();
  const app = Fastify({
    ...serverOptions(config, options.logger ?? { level: config.logLevel }, nextRequestId, routeWords),
    ...earlyRefusals({
      requestIds: nextRequestId,
      rateLimitOf: (address) => services.rateLimiter.consume(`ip:${address}`, limitPerMinute),
      ensureRateLimitHeaders,
      log: (line) => app.log.info(line, 'request refused'),
    }),
  });
  useStrictValidators(app);
  routeWordsOf(app, routeWords);

  logEachArrival(app);
  // Connections reading the rest of a refused body: cut at shutdown rather than waited for.
  const lingering = new Set<Socket>();
  await app.register(errors, { ensureRateLimitHeaders, lingering });
  await app.register(requestConventions, { closing: () => closing });
  const accounting = new RequestAccounting(services);
  await app.register(guard, {
    authenticator: services.authenticator,
    rateLimiter: services.rateLimiter,
    metrics: services.metrics,
    unauthenticatedLimitPerMinute: limitPerMinute,
    defaultConcurrentRequests: config.defaultConcurrentRequests,
    shedder: services.shedder,
    accounting,
  });
  app.addHook('onListen', async () => services.shedder.watchEventLoop());
  accounting.register(app);
  consistencyPositions(app, services.reads);
  // An outage of the database, its start and its end, each one line per process (each 503 it
  // causes is a line of its own too): at warn, the level a production deployment logs at.
  const databaseLog = app.log.child({ component: 'database' });
  db.onReachabilityChange?.((reachable) =>
    reachable
      ? databaseLog.warn({ reachable }, 'the database answers again')
      : databaseLog.error({ reachable }, 'the database is not answering: requests are answered 503 until it does'),
  );
  // The rate-limit counts going to each process's memory while their shared store (Redis, or
  // PostgreSQL without it) fails, and back: a key's limit then holds per process, not across them.
  const countsLog = app.log.child({ component: 'rate limits' });
  services.rateLimiter.onStoreFallback(({ inMemory, store, failure }) => {
    services.metrics.countsInMemory(inMemory);
    if (inMemory) {
      countsLog.error(
        // The failure's code (ECONNREFUSED, ETIMEDOUT…), not its message, which may name hosts.
        { store, failure: (failure as { code?: unknown } | null)?.code ?? failure?.name },
        'the rate-limit store is not answering: limits are counted per process until it does',
      );
    } else countsLog.warn({ store }, 'the rate-limit store answers again: limits are counted across processes');
  });
  const replicasLog = app.log.child({ component: 'read replicas' });
  services.reads.logTo((change) =>
    change.state === 'ok'
      ? replicasLog.info(change, 'replica serves reads')
      : replicasLog.warn(change, 'replica skipped'),
  );

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

  await app.register(healthRoutes, { services });
  await app.register(v1, { prefix: '/v1', services });
  await app.register(v2, { prefix: '/v2', services });
  await app.register(docsRoutes);

  delivery?.start();
  // Expired idempotency records and counts, events past their retention, webhook history.
  const stopHousekeeping = startHousekeeping([
    () => services.idempotency.purgeExpired(),
    () => services.rateLimiter.purge(),
    () => eventsRepository.purgeOlderThan(db, config.eventsRetentionDays),
    () => webhooksRepository.purgeOlderThan(db, config.eventsRetentionDays),
  ]);
  // Statistics of tables that grew, so that no connection keeps a plan made while they were small.
  const stopStatistics = startHousekeeping([() => refreshTableStatistics(db)], STATISTICS_CHECK_MS);

  await app.ready();
  return {
    app,
    services,
    async close() {
      stopHousekeeping();
      stopStatistics();
      closing = true;
      for (const socket of lingering) socket.destroy();
      // Attempts in flight may finish (their answers are recorded) while requests drain; one that
      // outlasts the shutdown grace keeps its lease, which expires, and another process sends it.
      await Promise.all([
        delivery?.stop(Math.min(config.webhooks.timeoutMs, Math.max(0, config.shutdownGraceMs - 1_000))),
        app.close(),
      ]);
      // The work of requests whose clients left goes on past their connections: their accounts
      // belong in the usage trail written next.
      await accounting.settled();
      await services.usage.close();
      await services.authenticator.close();
      await services.rateLimiter.close();
      services.redis?.close();
      services.shedder.close();
      await services.reads.close();
    },
  };
}
