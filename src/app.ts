// Builds the service. Reading this file top to bottom tells the whole composition: the shared parts,
// then the cross-cutting plugins in the order a request meets them, then the versions.
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { Config } from './config.js';
import type { Database } from './infra/database.js';
import { Metrics } from './infra/metrics.js';
import {
  MemoryRateLimitStore,
  PostgresRateLimitStore,
  RedisRateLimitStore,
  type RateLimitStore,
} from './infra/rate-limit-store.js';
import { Authenticator } from './modules/api-keys/authenticator.js';
import { UsageRecorder } from './modules/api-keys/usage-recorder.js';
import { EventIdCodec } from './modules/events/event-ids.js';
import { CursorCodec } from './shared/cursor.js';
import { IdempotencyStore } from './infra/idempotency-store.js';
import { RateLimiter, type RateLimitDecision } from './infra/rate-limiter.js';
import {
  MemoryConcurrencyStore,
  PostgresConcurrencyStore,
  RedisConcurrencyStore,
  type ConcurrencyStore,
} from './infra/concurrency-store.js';
import { LoadShedder } from './infra/load-shedder.js';
import { RedisConnection } from './infra/redis.js';
import requestConventions from './plugins/request-conventions.js';
import guard, { addressRateLimitHeaders } from './plugins/guard.js';
import errors, { renderError, routeNotFound } from './plugins/errors.js';
import { ApiError } from './shared/errors.js';
import { compileBodyValidator } from './http/body-validator.js';
import { healthRoutes } from './api/health.js';
import { v1 } from './api/v1.js';
import { v2 } from './api/v2.js';
import { docsRoutes } from './api/docs.js';
import { eventsRepository } from './modules/events/events.repository.js';
import { WebhookDelivery } from './modules/webhooks/delivery.js';
import { WebhookMetrics } from './modules/webhooks/webhook-metrics.js';
import { webhooksRepository } from './modules/webhooks/webhooks.repository.js';
import type { Services } from './services.js';

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

async function createServices(config: Config, db: Database): Promise<Services> {
  let store: RateLimitStore;
  let concurrency: ConcurrencyStore;
  let redis: RedisConnection | null = null;
  if (config.redisUrl) {
    redis = new RedisConnection(config.redisUrl);
    await redis.connected();
    store = new RedisRateLimitStore(redis);
    concurrency = new RedisConcurrencyStore(redis);
  } else if (db.kind === 'postgres') {
    // Several processes (serve --workers, several machines) share one count without Redis.
    store = new PostgresRateLimitStore(db);
    concurrency = new PostgresConcurrencyStore(db);
  } else {
    store = new MemoryRateLimitStore();
    concurrency = new MemoryConcurrencyStore();
  }
  const authenticator = new Authenticator(db, config.authCacheTtlMs);
  await authenticator.start();
  return {
    config,
    db,
    authenticator,
    rateLimiter: new RateLimiter(store),
    concurrency,
    shedder: new LoadShedder(config.loadShedding, db.kind === 'postgres' ? () => db.poolStats().waiting : null),
    usage: new UsageRecorder(db),
    idempotency: new IdempotencyStore(db, config.idempotencyTtlHours),
    cursors: new CursorCodec(config.cursorSecret ?? (await instanceSecret(db, 'cursor_secret'))),
    // Not configurable, unlike the cursor secret: followers keep event ids for as long as they
    // follow, so this secret must live as long as the store does. Read at first use, so the
    // service starts (and answers 503) while the store is down.
    eventIds: once(async () => new EventIdCodec(await instanceSecret(db, 'event_id_secret'))),
    metrics: new Metrics(db),
    redis,
  };
}

/**
 * Request log lines carry the path only, with anything shaped like an API key blotted out, and the
 * external id of an upsert too: the caller chooses it, and it may be an e-mail address.
 */
function withSafeSerializers(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger || typeof logger !== 'object') return logger;
  const req = (r: { method: string; url: string; ip?: string }) => ({
    method: r.method,
    path: loggedPath(r.url),
    remoteAddress: r.ip,
  });
  const serializers = (logger as { serializers?: Record<string, unknown> }).serializers;
  return { ...logger, serializers: { ...serializers, req } };
}

const API_KEY_SHAPE = /wsk_[0-9A-Za-z]+(?:\.|%2e)[0-9A-Za-z]+/gi;
// Everything after /contacts/external/ is the id (it may hold "/"); the router also takes
// percent-encoded letters and repeated slashes, so the path is matched decoded.
const EXTERNAL_ID_TAIL = /(\/contacts\/+external\/).*$/is;

/**
 * The path as sent, without its query; when it names an external id (decoded, the way the router
 * reads it), the path decoded with the id written as [redacted]. The dot of a key may come
 * percent-encoded (%2E).
 */
function loggedPath(url: string): string {
  const raw = url.split('?')[0]!;
  let decoded = raw;
  if (raw.includes('%')) {
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      // Not decodable: the router refuses it too; matched as sent.
    }
  }
  const path = EXTERNAL_ID_TAIL.test(decoded) ? decoded.replace(EXTERNAL_ID_TAIL, '$1[redacted]') : raw;
  return path.replace(API_KEY_SHAPE, 'wsk_[redacted]');
}

/**
 * A request Node's HTTP parser could not read never reaches a route; it still gets the error
 * object and the contract's headers (spec 4.1.2), RateLimit-* counted against its address.
 */
function answerUnparsableRequest(
  err: Error & { code?: string },
  socket: Socket,
  requestId: string,
  rateLimitOf: (address: string) => Promise<RateLimitDecision>,
  log: (line: Record<string, unknown>) => void,
): void {
  // Bytes that arrive after this side has ended the connection (a refused body's lingering close,
  // src/http/lingering-close.ts) can no longer be answered: the connection is cut.
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const header = err.code === 'HPE_HEADER_OVERFLOW' ? null : unreadableHeader(err);
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError('headers_too_large')
      : header
        ? new ApiError('invalid_header', {
            message:
              `The value of the ${header} header is not one line of visible characters (a line break or ` +
              `control character was found in it; a value read from a file often ends in one).`,
            details: { header },
          })
        : new ApiError('malformed_request');
  // Its one log line, like every request's: nothing of what it sent, which could not be parsed.
  log({ reqId: requestId, remoteAddress: socket.remoteAddress, res: { statusCode: error.status }, code: error.code });
  const body = JSON.stringify({
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      ...(header ? { details: { header } } : {}),
      request_id: requestId,
    },
  });
  void rateLimitOf(socket.remoteAddress ?? 'unknown')
    .catch(() => null)
    .then((d) => {
      if (!socket.writable) return;
      const limits = d
        ? [
            `RateLimit-Limit: ${d.limit}`,
            `RateLimit-Remaining: ${d.remaining}`,
            `RateLimit-Reset: ${new Date(d.resetAtMs).toISOString()}`,
          ]
        : [];
      socket.end(
        [
          `HTTP/1.1 ${error.status} ${error.status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}`,
          'Content-Type: application/json; charset=utf-8',
          `Content-Length: ${Buffer.byteLength(body)}`,
          `X-Request-Id: ${requestId}`,
          'Cache-Control: no-store',
          'X-Content-Type-Options: nosniff',
          ...limits,
          'Connection: close',
          '',
          body,
        ].join('\r\n'),
      );
    });
}

/**
 * The name of the header whose line Node's parser stopped in, when it stopped in a header line
 * (a value with a line break or a control character: a key read from a file with its newline);
 * null when it stopped in the request line or the name is not a header name. Only the name is
 * taken from what was sent, never the value, and only when it is a short token.
 */
function unreadableHeader(err: Error & { bytesParsed?: number; rawPacket?: unknown }): string | null {
  if (!Buffer.isBuffer(err.rawPacket) || typeof err.bytesParsed !== 'number') return null;
  const sent = err.rawPacket.subarray(0, Math.min(err.bytesParsed, err.rawPacket.length));
  const requestLineEnd = sent.indexOf('\n');
  const lineStart = sent.lastIndexOf('\n', sent.length - 1) + 1;
  if (requestLineEnd < 0 || lineStart <= requestLineEnd) return null;
  const name = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}):/.exec(sent.subarray(lineStart).toString('latin1'));
  return name ? name[1]! : null;
}

/**
 * /v1/contacts/external/hub/123 as /v1/contacts/external/hub%2F123: the contract's external_id
 * pattern allows "/", and a client that sends it raw means the same contact as one that encodes it.
 */
export function encodeExternalIdSlashes(url: string): string {
  const match = /^(\/v[12]\/contacts\/external\/)([^?]*)(\?.*)?$/.exec(url);
  if (!match || !match[2]!.includes('/')) return url;
  return `${match[1]}${match[2]!.replaceAll('/', '%2F')}${match[3] ?? ''}`;
}

/**
 * Request ids: "req_" and 12 random bytes in base64url, cut from a pool of random bytes refilled
 * 4 KiB at a time (one call to the system's random source per 341 ids rather than one per id).
 */
function requestIds(): () => string {
  const ID_BYTES = 12;
  let pool = Buffer.alloc(0);
  let at = 0;
  return () => {
    if (at + ID_BYTES > pool.length) {
      pool = randomBytes(ID_BYTES * 341);
      at = 0;
    }
    at += ID_BYTES;
    return `req_${pool.toString('base64url', at - ID_BYTES, at)}`;
  };
}

/** `load` run once; run again on the next call if it failed. */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | null = null;
  return () => {
    pending ??= load().catch((err: unknown) => {
      pending = null;
      throw err;
    });
    return pending;
  };
}

/** A random secret made once per installation and shared by every process through the store. */
export async function instanceSecret(db: Database, name: string): Promise<string> {
  await db.query('INSERT INTO instance_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    randomBytes(32).toString('base64url'),
  ]);
  const { rows } = await db.query<{ value: string }>('SELECT value FROM instance_settings WHERE name = $1', [name]);
  return rows[0]!.value;
}

/**
 * Query strings, path parameters and headers arrive as text and are coerced to their declared
 * types; bodies are JSON and are never coerced (a number is not a name), and are checked at a
 * bounded cost (src/http/body-validator.ts). None has unknown properties removed: a schema that
 * forbids them rejects them.
 */
function useStrictValidators(app: FastifyInstance): void {
  const common = { useDefaults: true, removeAdditional: false, strict: false, verbose: true } as const;
  const bodyFirstError = new Ajv({ ...common, coerceTypes: false, allErrors: false });
  const bodyEveryError = new Ajv({ ...common, coerceTypes: false, allErrors: true });
  const textAjv = new Ajv({ ...common, coerceTypes: true, allErrors: false });
  for (const ajv of [bodyFirstError, bodyEveryError, textAjv]) addFormats.default(ajv);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body'
      ? compileBodyValidator(schema as object, bodyFirstError, bodyEveryError)
      : textAjv.compile(schema),
  );
}
