// What a request's log line may say of it: the path, with every segment that is not a word of the
// service's routes or an id written as [redacted].
import type { FastifyBaseLogger, FastifyInstance, FastifyLogFn, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';
import { UUID_TEXT } from '../shared/schemas.js';

/**
 * Request log lines carry the path only, and of it only what the service itself wrote: the words of
 * its routes, and UUIDs (the ids it gives). Every other segment is the caller's and may be
 * anything: an upsert's external id (which may be an e-mail address, and may hold "/"), a
 * contact's e-mail or phone number sent where an id belongs, an API key, a typo. Those are written
 * as [redacted]. `routeWords` fills as the routes are declared (routeWordsOf).
 */
export function withSafeSerializers(
  logger: FastifyServerOptions['logger'],
  routeWords: ReadonlySet<string>,
): FastifyServerOptions['logger'] {
  if (!logger || typeof logger !== 'object') return logger;
  const req = (r: { method: string; url: string; ip?: string }) => ({
    method: r.method,
    path: loggedPath(r.url, routeWords),
    remoteAddress: r.ip,
  });
  const serializers = (logger as { serializers?: Record<string, unknown> }).serializers;
  return { ...logger, serializers: { ...serializers, req } };
}

/** Gathers into `words` the literal segments of every route declared on `app` from now on. */
export function routeWordsOf(app: FastifyInstance, words: Set<string>): void {
  app.addHook('onRoute', (route) => {
    for (const segment of route.url.split('/')) {
      if (segment !== '' && !segment.startsWith(':') && !segment.includes('*')) words.add(segment);
    }
  });
}

const REDACTED = '[redacted]';
// Everything after /contacts/external/ is the id (it may hold "/"); the router also takes repeated
// slashes.
const EXTERNAL_ID_TAIL = /(\/contacts\/+external\/).*$/s;

/**
 * The path as sent, without its query, when every segment is a route word or a UUID; otherwise the
 * path decoded (the way the router reads it: a route word may come percent-encoded, and so may a
 * "/" or an "@") with every other segment, and an external id whole, written as [redacted].
 */
function loggedPath(url: string, routeWords: ReadonlySet<string>): string {
  const query = url.indexOf('?');
  const raw = query === -1 ? url : url.slice(0, query);
  let decoded = raw;
  if (raw.includes('%')) {
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      // Not decodable: the router refuses it too; every segment that is not a word is redacted.
    }
  }
  if (EXTERNAL_ID_TAIL.test(decoded)) decoded = decoded.replace(EXTERNAL_ID_TAIL, `$1${REDACTED}`);
  const segments = decoded.split('/');
  let changed = decoded !== raw;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment === '' || segment === REDACTED || routeWords.has(segment) || UUID_TEXT.test(segment)) continue;
    segments[i] = REDACTED;
    changed = true;
  }
  return changed ? segments.join('/') : raw;
}

/** A logger that can tell whether it writes a level (pino's loggers can). */
interface LevelAware {
  isLevelEnabled(level: string): boolean;
}

/**
 * Each request's logger (Fastify's request.log), made as a child of the server's logger only when
 * the request first logs at a level that is written. Fastify otherwise makes a pino child for every
 * request, to carry its id; at `warn` most requests log nothing, and the child, made and then kept
 * for the request's life, was the largest piece of the service's cost per list request that the
 * bare route does not have.
 */
export const requestLoggers: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  typeof (logger as Partial<LevelAware>).isLevelEnabled === 'function'
    ? new RequestLogger(logger, bindings, options)
    : logger.child(bindings, options);

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

class RequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#made().level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#made().child(bindings, options);
  }

  fatal: FastifyLogFn = (...args: unknown[]) => this.#write('fatal', args);
  error: FastifyLogFn = (...args: unknown[]) => this.#write('error', args);
  warn: FastifyLogFn = (...args: unknown[]) => this.#write('warn', args);
  info: FastifyLogFn = (...args: unknown[]) => this.#write('info', args);
  debug: FastifyLogFn = (...args: unknown[]) => this.#write('debug', args);
  trace: FastifyLogFn = (...args: unknown[]) => this.#write('trace', args);
  silent: FastifyLogFn = () => undefined;

  #write(level: Level, args: unknown[]): void {
    const logger = this.#child ?? this.#parent;
    if (!(logger as unknown as LevelAware).isLevelEnabled(level)) return;
    const child = this.#made();
    Reflect.apply(child[level], child, args);
  }

  #made(): FastifyBaseLogger {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#options));
  }
}
