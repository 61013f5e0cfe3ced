// The HTTP server's own settings: how long it waits on a client, how much it reads, how a URL
// reaches a route, and how requests are logged. The refusals it makes before any route are in
// src/plugins/early-refusals.ts.
import type { Server } from 'node:http';
import { LogController, type FastifyHttpOptions, type FastifyServerOptions } from 'fastify';
import type { Config, TimeoutsConfig } from '../config.js';
import { encodeExternalIdSlashes } from './external-id-url.js';
import { requestLoggers, withSafeSerializers } from './request-log.js';

export function serverOptions(
  config: Config,
  logger: FastifyServerOptions['logger'],
  requestIds: () => string,
  routeWords: ReadonlySet<string>,
): FastifyHttpOptions<Server> {
  const timeouts = serverTimeouts(config.timeouts);
  return {
    logger: withSafeSerializers(logger, routeWords),
    // One line per request, written when it is answered (src/http/request-accounting.ts), instead of
    // Fastify's two: it carries what both did, and costs one serialization and one write.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestIds,
    childLoggerFactory: requestLoggers,
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    // Refusals during shutdown are ours (plugins/request-conventions), with the error object.
    return503OnClosing: false,
    ...timeouts.fastify,
    http: {
      // Node would answer a request without Host itself, with an empty body: the hook in
      // plugins/request-conventions refuses it instead, with the error object and every header.
      requireHostHeader: false,
      ...timeouts.node,
    },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 512 },
    // An external_id may contain "/" (spec 8): sent raw, it is one path parameter all the same.
    rewriteUrl: (req) => encodeExternalIdSlashes(req.url ?? '/'),
  };
}

/**
 * The timeouts as Fastify and Node's HTTP server take them. Node measures a request's deadline
 * (headers and body alike) from its first byte, but looks for requests past it only every
 * `connectionsCheckingInterval` (30 s unless told): checking every tenth of the deadline (at most
 * every second) cuts a client that sends too slowly off within a tenth of REQUEST_TIMEOUT_MS of it.
 */
export function serverTimeouts(t: TimeoutsConfig) {
  return {
    fastify: { requestTimeout: t.requestMs, connectionTimeout: t.connectionIdleMs, keepAliveTimeout: t.keepAliveMs },
    node: {
      // Headers have the whole request's time: a separate, longer deadline would never be reached.
      requestTimeout: t.requestMs,
      headersTimeout: t.requestMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.round(t.requestMs / 10))),
    },
  };
}
