// Typed client of the Workspace Public API.
//
// The request and response types come from the published interface descriptions
// (./generated/v1.ts and v2.ts, written by ../generate.ts with openapi-typescript); the calls go
// through openapi-fetch. On top of that, the helpers integrators otherwise write by hand:
//
//   - pages() / paginate(): every page, or every item, of a list, following page.next_cursor;
//   - feedHead(), eventPages() / readEvents(): the sync recipe of docs/sync.md — the feed's current
//     position, then the feed from an `after` position, ending with the last id; isEventsExpired()
//     tells the 410 that asks for a resynchronization;
//   - an Idempotency-Key on every write (POST, PUT, PATCH, DELETE) that does not carry one;
//   - retries of the same request, with the same Idempotency-Key, on 409 idempotency_key_in_use,
//     429, 503 and network errors, honouring Retry-After;
//   - read-your-writes on deployments with read replicas: the greatest Consistency-Position received
//     is sent on every later request (client.consistencyPosition);
//   - WorkspaceApiError, thrown by unwrap() and by the helpers, with the fields of the error body;
//   - verifyWebhook(): checks a webhook delivery's Standard Webhooks signature and returns its event;
//   - importContacts(), readContactsCsv(), problemsCsv() (./import.ts): an import in partial batches,
//     every problem named by the caller's row and CSV line.
import { createHmac, timingSafeEqual } from 'node:crypto';
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths as V1Paths } from './generated/v1.js';
import type { components as V2Components, paths as V2Paths } from './generated/v2.js';

export type { V1Paths, V2Paths };
export * from './import.js';

// ------------------------------------------------------------------------------------------- types

/**
 * The documents mark Idempotency-Key as a required header of every write, which is what the
 * server needs; this client sends one itself when the caller does not, so the typed calls make it
 * optional. Everything else is exactly the generated type.
 */
type OptionalIdempotencyKey<Operation> = Operation extends {
  parameters: { header: { 'Idempotency-Key': string } };
}
  ? Omit<Operation, 'parameters'> & {
      parameters: Omit<Operation['parameters'], 'header'> & { header?: { 'Idempotency-Key'?: string } };
    }
  : Operation;

export type ClientPaths<Paths> = {
  [Path in keyof Paths]: { [Method in keyof Paths[Path]]: OptionalIdempotencyKey<Paths[Path][Method]> };
};

export type V1Client = Client<ClientPaths<V1Paths>, 'application/json'>;
export type V2Client = Client<ClientPaths<V2Paths>, 'application/json'>;

/** The named schemas of the v2 document (a superset of v1's): one type per resource. */
type Schemas = V2Components['schemas'];

export type Contact = Schemas['Contact'];
export type ContactStatus = Schemas['ContactStatus'];
export type Appointment = Schemas['Appointment'];
export type AppointmentStatus = Schemas['AppointmentStatus'];
export type Workspace = Schemas['Workspace'];
export type PipelineStage = Schemas['PipelineStage'];
export type CatalogItem = Schemas['CatalogItem'];
export type Conversation = Schemas['Conversation'];
export type Message = Schemas['Message'];
export type Automation = Schemas['Automation'];
export type WorkspaceEvent = Schemas['Event'];
export type EventsHead = Schemas['EventsHead'];
export type EventsQuery = NonNullable<V2Paths['/v2/events']['get']['parameters']['query']>;
export type ContactCreate = Schemas['ContactCreate'];
export type ContactUpdate = Schemas['ContactUpdate'];
export type ContactBatchItem = Schemas['ContactBatchItem'];
export type ContactBatchResult = Schemas['ContactBatchResult'];
export type ContactDeleteResult = Schemas['ContactDeleteResult'];
/** The `error` object of every error response. */
export type ErrorBody = Schemas['Error']['error'];

/** The page envelope of every list. */
export interface Page<T> {
  data: T[];
  page: { limit: number; has_more: boolean; next_cursor: string | null };
}

/** What an openapi-fetch call resolves to, reduced to what the helpers need. */
export interface CallResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

// ------------------------------------------------------------------------------------------ errors

/** An error answer of the API (any non-2xx status), with the fields of its body. */
export class WorkspaceApiError extends Error {
  override readonly name = 'WorkspaceApiError';
  /** HTTP status */
  readonly status: number;
  /** error class: invalid_request, authentication_error, …, api_error */
  readonly type: ErrorBody['type'];
  /** stable machine-readable code, e.g. validation_failed, resource_not_found */
  readonly code: string;
  /** equals the X-Request-Id header: quote it when asking for support */
  readonly requestId: string | undefined;
  /** e.g. `errors: [{field, message}]` of a 422, `parameter` of a 400, `required_scope` of a 403 */
  readonly details: Record<string, unknown> | undefined;
  /** seconds from the Retry-After header (429, 503, 409 idempotency_key_in_use) */
  readonly retryAfter: number | undefined;

  constructor(response: Response, body: unknown) {
    const error = errorBodyOf(body);
    super(error?.message ?? `HTTP ${response.status} without an error body`);
    this.status = response.status;
    this.type = error?.type ?? 'api_error';
    this.code = error?.code ?? 'unexpected_response';
    this.requestId = error?.request_id ?? response.headers.get('x-request-id') ?? undefined;
    this.details = error?.details;
    this.retryAfter = retryAfterSeconds(response);
  }

  /** `WorkspaceApiError: 404 resource_not_found: No such contact. (request req_…)`: what a log line needs. */
  override toString(): string {
    const request = this.requestId ? ` (request ${this.requestId})` : '';
    return `${this.name}: ${this.status} ${this.code}: ${this.message}${request}`;
  }
}

function errorBodyOf(body: unknown): ErrorBody | undefined {
  if (typeof body !== 'object' || body === null || !('error' in body)) return undefined;
  const error = body.error;
  if (typeof error !== 'object' || error === null || !('code' in error) || !('message' in error)) return undefined;
  return error as ErrorBody;
}

/**
 * The data of a call, or a WorkspaceApiError for an error answer.
 *
 *   const { data: contact } = await unwrap(api.v2.GET('/v2/contacts/{id}', { params: { path: { id } } }));
 */
export async function unwrap<T>(call: Promise<CallResult<T>> | CallResult<T>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok || error !== undefined) throw new WorkspaceApiError(response, error);
  return data as T;
}

/** What an answer says besides its body. */
export interface ResponseMeta {
  /** HTTP status: 200 or 201 tells an upsert that updated from one that created */
  status: number;
  /** X-Request-Id: quote it when asking for support */
  requestId: string | undefined;
  /** true when a write's Idempotency-Key had already been used with this request: the stored answer */
  replayed: boolean;
  /** the Idempotency-Key the write was sent with (the client makes one when the call has none) */
  idempotencyKey: string | undefined;
  /** Location of a created contact */
  location: string | undefined;
  /** the key's quota as this answer counted it */
  rateLimit: { limit: number | undefined; remaining: number | undefined; reset: string | undefined };
}

export interface ApiResult<T> extends ResponseMeta {
  data: T;
}

/**
 * Like unwrap(), with what the headers say beside the body: status, Idempotent-Replayed, the
 * request id and the rate limit.
 *
 *   const { data, status, replayed, requestId } = await withMeta(api.v2.PUT('/v2/contacts/external/{external_id}', …));
 */
export async function withMeta<T>(call: Promise<CallResult<T>> | CallResult<T>): Promise<ApiResult<T>> {
  const result = await call;
  const body = await unwrap(result);
  return { ...metaOf(result.response), data: body };
}

function metaOf(response: Response): ResponseMeta {
  const h = response.headers;
  const int = (name: string) => {
    const value = h.get(name);
    return value !== null && /^\d+$/.test(value) ? Number(value) : undefined;
  };
  return {
    status: response.status,
    requestId: h.get('x-request-id') ?? undefined,
    replayed: h.get('idempotent-replayed') === 'true',
    idempotencyKey: sentIdempotencyKeys.get(response) ?? undefined,
    location: h.get('location') ?? undefined,
    rateLimit: {
      limit: int('ratelimit-limit'),
      remaining: int('ratelimit-remaining'),
      reset: h.get('ratelimit-reset') ?? undefined,
    },
  };
}

/** The Idempotency-Key each write's answer was obtained with (answers carry no such header). */
const sentIdempotencyKeys = new WeakMap<Response, string>();

// ----------------------------------------------------------------------------------------- client

export interface WorkspaceApiClientOptions {
  /** origin of the service, e.g. https://api.example.com (the paths carry /v1 and /v2) */
  baseUrl: string;
  /** a workspace API key, `wsk_…` */
  apiKey: string;
  /** fetch to use (default: the global fetch); it receives one Request per attempt */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * retries after the first attempt for 503, 409 idempotency_key_in_use and network errors
   * (default 3; 0 turns them off). 429 is retried until `retryDeadline` instead.
   */
  maxRetries?: number;
  /** first backoff in ms when the answer has no Retry-After (network errors); doubled each time (default 500) */
  retryDelay?: number;
  /**
   * ms a call may spend from its start waiting and retrying (default 120 000): a retry that could
   * not be sent before it is not made, and the last answer (or network error) is returned instead
   */
  retryDeadline?: number;
  /** a random 0 to `retryJitter` ms added to every wait before a retry or after a hold (default 500) */
  retryJitter?: number;
  /**
   * read-your-writes on deployments with read replicas (default true): the client keeps the
   * greatest Consistency-Position of its answers and sends it on every later request, so a read
   * reflects the client's own writes. false: it neither keeps nor sends one.
   */
  readYourWrites?: boolean;
}

export interface WorkspaceApiClient {
  v1: V1Client;
  v2: V2Client;
  /**
   * The greatest Consistency-Position this client has received (undefined when none), sent as the
   * Consistency-Position header of every request it makes. Hand it to another client or process
   * (`other.consistencyPosition = api.consistencyPosition`) so that its reads see this client's writes.
   * Setting it replaces the value (undefined clears it); a value that is not a token
   * (`1.` and 16 lowercase hex digits) throws a TypeError. Always undefined, and setting it has no
   * effect, when the client was built with `readYourWrites: false`.
   */
  consistencyPosition: string | undefined;
}

/** The form of a Consistency-Position; anything else an answer carries is ignored. */
const CONSISTENCY_POSITION = /^1\.[0-9a-f]{16}$/;

export const isConsistencyPosition = (value: unknown): value is string =>
  typeof value === 'string' && CONSISTENCY_POSITION.test(value);

/**
 * The greatest Consistency-Position a client has seen. Tokens of one deployment have a fixed width,
 * so the later write's token is the greater string. Several calls may be in flight: each answer
 * can only raise it.
 */
class ConsistencyPositions {
  value: string | undefined;

  /** What an answer (of any status) says: a greater valid token replaces the one kept. */
  observe(response: Response): void {
    const token = response.headers.get('consistency-position');
    if (isConsistencyPosition(token) && (this.value === undefined || token > this.value)) this.value = token;
  }

  /** Sets the header on one attempt, unless the caller gave the call one of its own. */
  stamp(request: Request, attempt: Request): void {
    if (this.value !== undefined && !request.headers.has('consistency-position')) {
      attempt.headers.set('Consistency-Position', this.value);
    }
  }
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Twice the longest Retry-After the service sends (60 s, a key of one request per minute). */
export const DEFAULT_RETRY_DEADLINE_MS = 120_000;

/**
 * A client of one service with one key. Its calls share one limiter (see Limiter): when one of
 * them is told to wait, they all wait, and are then released at the key's rate.
 *
 * The options are checked here, so a missing baseUrl or a negative delay is a TypeError or
 * RangeError at construction rather than a failure of the first call.
 */
export function createWorkspaceApiClient(options: WorkspaceApiClientOptions): WorkspaceApiClient {
  checkOptions(options);
  const policy: RetryPolicy = {
    maxRetries: options.maxRetries ?? 3,
    retryDelay: options.retryDelay ?? 500,
    retryDeadline: options.retryDeadline ?? DEFAULT_RETRY_DEADLINE_MS,
    retryJitter: options.retryJitter ?? 500,
  };
  const tokens = options.readYourWrites === false ? undefined : new ConsistencyPositions();
  const fetch = retrying(
    options.fetch ?? ((request: Request) => globalThis.fetch(request)),
    policy,
    new Limiter(policy.retryJitter),
    tokens,
  );
  const headers: Middleware = {
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${options.apiKey}`);
      // One key per call: every retry of this request (below) sends the same one.
      if (WRITE_METHODS.has(request.method) && !request.headers.has('Idempotency-Key')) {
        request.headers.set('Idempotency-Key', crypto.randomUUID());
      }
      return request;
    },
  };
  const v1 = createClient<ClientPaths<V1Paths>, 'application/json'>({ baseUrl: options.baseUrl, fetch });
  const v2 = createClient<ClientPaths<V2Paths>, 'application/json'>({ baseUrl: options.baseUrl, fetch });
  v1.use(headers);
  v2.use(headers);
  return {
    v1,
    v2,
    get consistencyPosition(): string | undefined {
      return tokens?.value;
    },
    set consistencyPosition(value: string | undefined) {
      if (value !== undefined && !isConsistencyPosition(value)) {
        throw new TypeError(
          `consistencyPosition must be a Consistency-Position ("1." and 16 lowercase hex digits) or undefined, not ${shown(value)}`,
        );
      }
      if (tokens) tokens.value = value;
    },
  };
}

/** Options come from configuration files and environment variables: their types are checked too. */
function checkOptions(options: WorkspaceApiClientOptions): void {
  const fail = (message: string, Kind: typeof TypeError = TypeError): never => {
    throw new Kind(`createWorkspaceApiClient: ${message}`);
  };
  if (typeof options !== 'object' || (options as unknown) === null) fail('options must be an object');
  const given = options as unknown as Record<string, unknown>;
  const { baseUrl, apiKey, fetch } = given;
  const url = typeof baseUrl === 'string' && URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  if (url?.username || url?.password) {
    // Not shown: the URL carries a secret. fetch refuses such URLs at every call.
    fail('baseUrl must not carry credentials (user:password@): the API key is the only credential');
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    fail(`baseUrl must be an absolute http(s) URL such as https://api.example.com, not ${shown(baseUrl)}`);
  }
  // Paths are appended to it: a query or a fragment would swallow every one of them.
  if (url && (url.search || url.hash)) fail(`baseUrl must have no query or fragment, not ${shown(baseUrl)}`);
  if (typeof apiKey !== 'string') fail(`apiKey must be a string (a workspace API key, wsk_…), not ${typeof apiKey}`);
  // The key travels in a header: only visible ASCII can (the key itself is never shown).
  if (!/^[\x21-\x7e]+$/.test(apiKey as string)) fail('apiKey must be a non-empty string of visible ASCII characters');
  if (fetch !== undefined && typeof fetch !== 'function') fail(`fetch must be a function, not ${typeof fetch}`);
  const { readYourWrites } = given;
  if (readYourWrites !== undefined && typeof readYourWrites !== 'boolean') {
    fail(`readYourWrites must be a boolean, not ${shown(readYourWrites)}`);
  }
  for (const name of ['maxRetries', 'retryDelay', 'retryDeadline', 'retryJitter'] as const) {
    const value = given[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      fail(`${name} must be a finite number of 0 or more, not ${shown(value)}`, RangeError);
    }
    if (name === 'maxRetries' && !Number.isInteger(value)) {
      fail(`maxRetries must be a whole number, not ${shown(value)}`, RangeError);
    }
  }
}

/** A value as an error message shows it: strings quoted (and cut), objects by their type. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 100));
  if (typeof value === 'object' && value !== null) return typeof value;
  return String(value);
}

// ---------------------------------------------------------------------------------------- retries

interface RetryPolicy {
  maxRetries: number;
  retryDelay: number;
  retryDeadline: number;
  retryJitter: number;
}

/** Longest backoff between attempts after a network error (the base doubles up to it). */
const MAX_BACKOFF_MS = 8_000;

/**
 * Wraps fetch so that a request is sent again — the same method, URL, headers (Idempotency-Key
 * included) and body — when retrying cannot do harm (only its Consistency-Position may be a later
 * one, when an answer to another call raised it meanwhile):
 *
 * - 429 and 503: the request did nothing;
 * - 409 idempotency_key_in_use: the same request is still running; once it ends, the retry gets
 *   its stored response (a retry is a replay, never a second write);
 * - a network error (no response): the request may or may not have run; a GET is safe to repeat,
 *   and a write carries its Idempotency-Key, so a repeat of one that did run is answered with the
 *   stored response.
 *
 * Every attempt first passes the client's limiter. A 429 rate_limit_exceeded or a 503 holds the
 * whole client for its Retry-After (every call waits, not only the one refused); after a 429 the
 * limiter releases the calls one per 60/N s, N being the key's RateLimit-Limit. 429 is retried
 * until the call's deadline; the other cases at most maxRetries times. A wait that would end
 * after the deadline is not begun: the answer is returned (unwrap() throws it, with retryAfter) or
 * the network error rethrown. Other statuses, 4xx in particular, are returned at once.
 */
function retrying(
  fetch: (request: Request) => Promise<Response>,
  policy: RetryPolicy,
  limiter: Limiter,
  tokens: ConsistencyPositions | undefined,
): (request: Request) => Promise<Response> {
  return async (request) => {
    const deadline = performance.now() + policy.retryDeadline;
    let response: Response | undefined;
    let failure: unknown;
    let retries = 0;
    for (let attempt = 0; ; attempt++) {
      // The first attempt is sent even when the limiter holds it past the deadline: every call
      // gets one answer of its own.
      if (!(await limiter.acquire(request.signal, deadline)) && attempt > 0) {
        if (response) return response;
        throw failure;
      }
      await response?.body?.cancel();
      response = undefined;
      const sentAt = performance.now();
      try {
        // A clone per attempt: a Request body can be read once. Each attempt carries the
        // greatest Consistency-Position known when it is sent (other calls may have raised it).
        const sent = request.clone();
        tokens?.stamp(request, sent);
        response = await fetch(sent);
      } catch (error) {
        if (request.signal.aborted) throw error;
        failure = error;
      }
      if (response) limiter.observe(response, sentAt);
      if (response) tokens?.observe(response);
      const key = request.headers.get('idempotency-key');
      if (response && key !== null) sentIdempotencyKeys.set(response, key);
      const kind = response ? await retryKind(response) : 'network';
      if (kind === undefined) return response!;

      const seconds = response ? retryAfterSeconds(response) : undefined;
      const wait = seconds === undefined ? backoff(retries, policy) : seconds * 1000;
      // 429 is retried until the deadline; the rest at most maxRetries times.
      const counted = response?.status !== 429;
      if ((counted && retries >= policy.maxRetries) || performance.now() + wait > deadline) {
        if (response) return response;
        throw failure;
      }
      if (counted) retries++;
      if (kind === 'rate_limit' || kind === 'unavailable') {
        // The whole client waits; the next acquire() releases this call in its turn.
        const limit = kind === 'rate_limit' ? headerInt(response!, 'ratelimit-limit') : undefined;
        limiter.hold(wait, limit);
      } else {
        await sleep(wait + Math.random() * policy.retryJitter, request.signal);
      }
    }
  };
}

type RetryKind = 'rate_limit' | 'unavailable' | 'own_wait' | 'network';

/**
 * How an answer is retried, or undefined when it is final. A 429 concurrency_limit_exceeded is
 * about requests in flight, not the rate: only the call refused waits.
 */
async function retryKind(response: Response): Promise<RetryKind | undefined> {
  if (response.status === 503) return 'unavailable';
  if (response.status !== 429 && response.status !== 409) return undefined;
  const body: unknown = await response
    .clone()
    .json()
    .catch(() => undefined);
  const code = errorBodyOf(body)?.code;
  if (response.status === 409) return code === 'idempotency_key_in_use' ? 'own_wait' : undefined;
  return code === 'concurrency_limit_exceeded' ? 'own_wait' : 'rate_limit';
}

function backoff(retry: number, policy: RetryPolicy): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, policy.retryDelay * 2 ** retry);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

function headerInt(response: Response, name: string): number | undefined {
  const value = response.headers.get(name);
  return value !== null && /^\d+$/.test(value) ? Number(value) : undefined;
}

/** Retry-After as seconds: delta-seconds, or an HTTP date. */
function retryAfterSeconds(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

interface Waiter {
  release: (released: boolean) => void;
}

/**
 * The queue every attempt of one client passes, so that parallel calls do not stampede.
 *
 * - A hold (hold()): after a 429 or 503, no attempt is sent before its Retry-After has passed.
 * - Pacing: once the key's quota is spent (a 429, or an answer with RateLimit-Remaining: 0), the
 *   attempts are released one per 60/N s, N being the RateLimit-Limit: the key's quota refills one
 *   request per 60/N s (GCRA, docs/api-conventions.md), so each of them passes. Pacing ends once
 *   an answer to a request sent after the last hold reports RateLimit-Remaining above 0 while
 *   no one waits.
 * - Waiters are released in arrival order, each after a random 0 to `jitter` ms, so that clients
 *   of other processes on the same key do not all send at the same instant. Delaying a paced
 *   request never costs it its turn: the quota counts from the slot, not from the send.
 */
class Limiter {
  private resumeAt = 0;
  /** ms between releases while pacing; 0 when not pacing */
  private interval = 0;
  private lastRelease = -Infinity;
  private heldAt = -Infinity;
  private readonly queue: Waiter[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly jitter: number) {}

  /**
   * Resolves true when the caller may send, or false when the deadline came first (or its turn
   * would come after it); rejects when the signal aborts.
   */
  async acquire(signal: AbortSignal, deadline: number): Promise<boolean> {
    signal.throwIfAborted();
    const now = performance.now();
    if (this.queue.length === 0 && this.readyAt() <= now) {
      this.lastRelease = now;
      return true;
    }
    // The turn this caller would get, were nothing to change: past the deadline, it gives up now.
    if (this.readyAt() + this.queue.length * this.interval > deadline) return false;
    const released = await new Promise<boolean>((resolve, reject) => {
      const waiter: Waiter = {
        release: (value) => {
          clearTimeout(expiry);
          signal.removeEventListener('abort', onAbort);
          resolve(value);
        },
      };
      const leave = () => {
        const index = this.queue.indexOf(waiter);
        if (index >= 0) this.queue.splice(index, 1);
        this.pump();
      };
      const onAbort = () => {
        clearTimeout(expiry);
        leave();
        reject(signal.reason as Error);
      };
      const expiry = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        leave();
        resolve(false);
      }, deadline - now);
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      this.pump();
    });
    if (released && this.jitter > 0) await sleep(Math.random() * this.jitter, signal);
    return released;
  }

  /** Holds every caller for `ms`; with the key's limit per minute, paces them after it. */
  hold(ms: number, limitPerMinute: number | undefined): void {
    const now = performance.now();
    this.heldAt = now;
    this.resumeAt = Math.max(this.resumeAt, now + ms);
    if (limitPerMinute !== undefined && limitPerMinute > 0) this.interval = 60_000 / limitPerMinute;
    this.pump();
  }

  /** What an answer says of the key's quota: starts pacing when it is spent, ends it when it refilled. */
  observe(response: Response, sentAt: number): void {
    const limit = headerInt(response, 'ratelimit-limit');
    const remaining = headerInt(response, 'ratelimit-remaining');
    if (limit === undefined || limit === 0 || remaining === undefined || response.status === 429) return;
    if (remaining === 0) {
      if (this.interval === 0) this.lastRelease = Math.max(this.lastRelease, performance.now());
      this.interval = 60_000 / limit;
    } else if (this.interval > 0) {
      if (sentAt > this.heldAt && this.queue.length === 0) this.interval = 0;
      else this.interval = 60_000 / limit;
    }
  }

  private readyAt(): number {
    return Math.max(this.resumeAt, this.interval > 0 ? this.lastRelease + this.interval : 0);
  }

  private pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0) {
      const now = performance.now();
      const at = this.readyAt();
      if (at > now) {
        this.timer = setTimeout(() => this.pump(), at - now);
        return;
      }
      this.lastRelease = now;
      this.queue.shift()!.release(true);
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

// ------------------------------------------------------------------------------------- pagination

/**
 * Every page of a list, in order, following page.next_cursor until the last page.
 * `call(cursor)` makes one request; the first call gets `undefined`.
 *
 *   for await (const page of pages((cursor) =>
 *     api.v2.GET('/v2/contacts', { params: { query: { limit: 100, cursor, updated_after } } }))) { … }
 */
export async function* pages<T>(
  call: (cursor: string | undefined) => Promise<CallResult<Page<T>>>,
  /** a stored page.next_cursor: resume a walk there instead of starting it */
  from?: string,
): AsyncGenerator<Page<T>, void, undefined> {
  let cursor: string | undefined = from;
  do {
    const page = await unwrap(call(cursor));
    yield page;
    cursor = page.page.next_cursor ?? undefined;
  } while (cursor !== undefined);
}

/** Every item of a list, across its pages (see pages()); `from` resumes at a stored next_cursor. */
export async function* paginate<T>(
  call: (cursor: string | undefined) => Promise<CallResult<Page<T>>>,
  from?: string,
): AsyncGenerator<T, void, undefined> {
  for await (const page of pages(call, from)) yield* page.data;
}

// ----------------------------------------------------------------------------------- batch upsert

/** Contacts per POST /v2/contacts/batch/upsert: the service's bound. */
export const BATCH_MAX_ITEMS = 100;

/**
 * A batch upsert that stopped at one of its requests. Each request is all or nothing, the calls
 * are not: the contacts of the requests before it are written (`written`, in input order).
 */
export class BatchUpsertError extends Error {
  override readonly name = 'BatchUpsertError';
  /** index in the caller's array of the first item of the request that failed */
  readonly offset: number;
  /** the results of the requests that succeeded, in input order (items 0 to offset − 1) */
  readonly written: ContactBatchResult[];
  /** the error of the failed request (its details.items indexes are within that request) */
  override readonly cause: WorkspaceApiError;
  /** the bad items of a 422, as indexes in the caller's array */
  readonly badItems: number[];

  constructor(cause: WorkspaceApiError, offset: number, count: number, written: ContactBatchResult[]) {
    super(`items ${offset} to ${offset + count - 1}: ${cause.toString()}`);
    this.cause = cause;
    this.offset = offset;
    this.written = written;
    const items = (cause.details?.items ?? []) as { index: number }[];
    this.badItems = items.map((i) => offset + i.index);
  }
}

/** An external_id sent by several items, and the places of every one of them in the caller's array. */
export interface RepeatedExternalId {
  externalId: string;
  indexes: number[];
}

/**
 * Items that send one external_id more than once, found before anything is sent: every such
 * external_id, each with all its places (the service refuses them too, naming the same items).
 */
export class RepeatedExternalIdsError extends RangeError {
  readonly repeated: RepeatedExternalId[];

  constructor(repeated: RepeatedExternalId[]) {
    const listed = repeated.map((r) => `${JSON.stringify(r.externalId)} at items ${r.indexes.join(', ')}`).join('; ');
    super(`each external_id may be sent once: ${listed}`);
    this.name = 'RepeatedExternalIdsError';
    this.repeated = repeated;
  }
}

/** Every external_id of `items` sent more than once, in order of first appearance. */
export function repeatedExternalIds(items: readonly { external_id: string }[]): RepeatedExternalId[] {
  const places = new Map<string, number[]>();
  items.forEach((item, index) => {
    const at = places.get(item.external_id);
    if (at) at.push(index);
    else places.set(item.external_id, [index]);
  });
  return [...places]
    .filter(([, indexes]) => indexes.length > 1)
    .map(([externalId, indexes]) => ({ externalId, indexes }));
}

/**
 * Creates or updates any number of contacts by external id, 100 per request, in input order, and
 * returns what happened to each (created, updated, unchanged) with the contact, in input order.
 *
 * An external_id given more than once is refused before anything is sent, with every such
 * external_id and all its places (RepeatedExternalIdsError): within one request the service refuses
 * it too; across requests the later item would silently win. Each request carries its own
 * Idempotency-Key: `${idempotencyKey}:${n}` for the n-th request when one is given (so a rerun of
 * the same import with the same key replays what was written and continues), otherwise a new one.
 * A request of 100 items counts as ten requests against the key's rate limit (one per 10 items
 * started); 429s are waited out by the client's retries.
 */
export async function batchUpsertContacts(
  v2: V2Client,
  items: readonly ContactBatchItem[],
  options: { idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<ContactBatchResult[]> {
  const repeated = repeatedExternalIds(items);
  if (repeated.length > 0) throw new RepeatedExternalIdsError(repeated);
  const results: ContactBatchResult[] = [];
  for (let offset = 0; offset < items.length; offset += BATCH_MAX_ITEMS) {
    const key =
      options.idempotencyKey === undefined ? undefined : `${options.idempotencyKey}:${offset / BATCH_MAX_ITEMS}`;
    try {
      const data = await unwrap(
        v2.POST('/v2/contacts/batch/upsert', {
          body: { items: items.slice(offset, offset + BATCH_MAX_ITEMS) },
          ...(key === undefined ? {} : { params: { header: { 'Idempotency-Key': key } } }),
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      );
      // All or nothing: every entry of a 200 is a written (or unchanged) item.
      for (const entry of data.data) {
        if (entry.result === 'invalid') throw new Error(`item ${offset + entry.index} came back invalid in a 200`);
        results.push(entry);
      }
    } catch (error) {
      if (error instanceof WorkspaceApiError) {
        throw new BatchUpsertError(error, offset, Math.min(BATCH_MAX_ITEMS, items.length - offset), results);
      }
      throw error;
    }
  }
  return results;
}

/**
 * A deletion of many contacts that stopped at one of its requests: the requests before it are done
 * (`done`: their results, for the values before `offset`).
 */
export class BatchDeleteError extends Error {
  override readonly name = 'BatchDeleteError';
  /** index, among the values (ids first, then external ids), of the first value of the failed request */
  readonly offset: number;
  readonly done: ContactDeleteResult[];
  override readonly cause: WorkspaceApiError;

  constructor(cause: WorkspaceApiError, offset: number, done: ContactDeleteResult[]) {
    super(`values from ${offset}: ${cause.toString()} (the ${offset} before are done)`);
    this.cause = cause;
    this.offset = offset;
    this.done = done;
  }
}

/** Every value of `values` given more than once, with its places. */
function repeatedValues(values: readonly string[]): string[] {
  const places = new Map<string, number[]>();
  values.forEach((v, i) => places.set(v, [...(places.get(v) ?? []), i]));
  return [...places].filter(([, at]) => at.length > 1).map(([v, at]) => `${JSON.stringify(v)} at ${at.join(', ')}`);
}

/**
 * Deletes any number of contacts by id and by external id, 100 values per request (the ids first,
 * then the external ids, in order), and returns one result per value in that order: deleted, or
 * not_found when the workspace had no such contact (never had it, or it is gone already — a sync
 * pushing its deletions may count both as done). Each request carries its own Idempotency-Key:
 * `${idempotencyKey}:${n}` for the n-th request when one is given, so a rerun replays the requests
 * already made. A value given twice is refused before anything is sent (RangeError). A request
 * failing stops the call with a BatchDeleteError: the requests before it stay done.
 */
export async function deleteContacts(
  v2: V2Client,
  targets: { ids?: readonly string[]; externalIds?: readonly string[] },
  options: { idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<ContactDeleteResult[]> {
  const values = [
    ...(targets.ids ?? []).map((id) => ({ id: id.toLowerCase() })),
    ...(targets.externalIds ?? []).map((externalId) => ({ externalId })),
  ];
  const repeated = [
    ...repeatedValues((targets.ids ?? []).map((id) => id.toLowerCase())).map((r) => `id ${r}`),
    ...repeatedValues(targets.externalIds ?? []).map((r) => `external_id ${r}`),
  ];
  if (repeated.length > 0) throw new RangeError(`each value may be sent once: ${repeated.join('; ')}`);
  const results: ContactDeleteResult[] = [];
  for (let offset = 0; offset < values.length; offset += BATCH_MAX_ITEMS) {
    const chunk = values.slice(offset, offset + BATCH_MAX_ITEMS);
    const ids = chunk.flatMap((v) => ('id' in v ? [v.id] : []));
    const externalIds = chunk.flatMap((v) => ('externalId' in v ? [v.externalId] : []));
    const key =
      options.idempotencyKey === undefined ? undefined : `${options.idempotencyKey}:${offset / BATCH_MAX_ITEMS}`;
    let data;
    try {
      data = await unwrap(
        v2.POST('/v2/contacts/batch/delete', {
          body: {
            ...(ids.length > 0 ? { ids } : {}),
            ...(externalIds.length > 0 ? { external_ids: externalIds } : {}),
          } as Schemas['ContactBatchDelete'],
          ...(key === undefined ? {} : { params: { header: { 'Idempotency-Key': key } } }),
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      );
    } catch (error) {
      if (error instanceof WorkspaceApiError) throw new BatchDeleteError(error, offset, results);
      throw error;
    }
    results.push(...data.data);
  }
  return results;
}

// ------------------------------------------------------------------------------------ events feed

export interface EventPage {
  events: WorkspaceEvent[];
  /** id of the last event up to this page: the `after` to resume from once this page is processed */
  lastEventId: string | undefined;
}

/**
 * The feed's current end (GET /v2/events/head): every change made from now on comes after it.
 * Step one of a synchronization: take this position, export the lists, then read the feed with
 * `after` = this position.
 */
export async function feedHead(v2: V2Client, init: { signal?: AbortSignal } = {}): Promise<string> {
  const { data } = await unwrap(v2.GET('/v2/events/head', init));
  return data.position;
}

/**
 * True for the 410 events_expired of a feed position older than what retention kept: the copy
 * may have missed changes (deletions among them) and must be resynchronized.
 */
export const isEventsExpired = (error: unknown): boolean =>
  error instanceof WorkspaceApiError && error.status === 410 && error.code === 'events_expired';

/**
 * The events feed after `query.after` (from its start without it) up to its current end, one
 * page at a time; the generator's return value is the id of the last event (or `after` when there
 * was none). Filters (type, resource_type, resource_id) apply to every page. Store
 * `page.lastEventId` once a page is processed, and come back later with it as `after`.
 */
export async function* eventPages(
  v2: V2Client,
  query: Omit<EventsQuery, 'cursor'> = {},
  init: { signal?: AbortSignal } = {},
): AsyncGenerator<EventPage, string | undefined, undefined> {
  const { after, ...filters } = query;
  let lastEventId = after;
  // `after` opens the walk; the pages that follow are reached by cursor (never both at once).
  const all = pages((cursor) =>
    v2.GET('/v2/events', {
      params: { query: cursor === undefined ? { ...filters, after } : { ...filters, cursor } },
      ...init,
    }),
  );
  for await (const page of all) {
    lastEventId = page.data.at(-1)?.id ?? lastEventId;
    yield { events: page.data, lastEventId };
  }
  return lastEventId;
}

/** Calls `onEvent` for every event after `query.after`, in order; resolves to the last id. */
export async function readEvents(
  v2: V2Client,
  query: Omit<EventsQuery, 'cursor'>,
  onEvent: (event: WorkspaceEvent) => void | Promise<void>,
): Promise<string | undefined> {
  let lastEventId = query.after;
  for await (const page of eventPages(v2, query)) {
    for (const event of page.events) await onEvent(event);
    lastEventId = page.lastEventId;
  }
  return lastEventId;
}

// ---------------------------------------------------------------------------------------- webhooks

/** The body of `webhooks test`: not an event of the feed (its id starts with test_). */
export type WebhookTestMessage = Schemas['WebhookTest'];

/** A delivery that does not carry a valid signature (or is too old or too new to be trusted). */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function headerOf(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Verifies a webhook delivery as Standard Webhooks specifies it, and returns its body parsed: an
 * event exactly as GET /v2/events lists it (or the test message of `webhooks test`).
 *
 * `body` must be the raw bytes received, not JSON re-serialized. `secret` is what `webhooks create`
 * (or `rotate-secret`) printed, `whsec_…`; several may be given while a receiver moves from one to
 * the next. The signature must be by one of them, and `webhook-timestamp` within `toleranceSeconds`
 * (default 300) of now, so a captured delivery cannot be replayed later. `webhook-id` is the event
 * id: keep the ids processed and skip one seen again (a delivery can arrive twice).
 *
 *   const event = verifyWebhook(process.env.WEBHOOK_SECRET!, rawBody, request.headers);
 */
export function verifyWebhook(
  secret: string | readonly string[],
  body: string | Uint8Array,
  headers: HeaderSource,
  options: { toleranceSeconds?: number; now?: Date } = {},
): WorkspaceEvent | WebhookTestMessage {
  const id = headerOf(headers, 'webhook-id');
  const timestamp = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature.');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds.');
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError('webhook-timestamp is too far from now.');
  }
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  const content = `${id}.${timestamp}.${text}`;
  const secrets: readonly string[] = typeof secret === 'string' ? [secret] : secret;
  const expected = secrets.map((s) =>
    createHmac('sha256', Buffer.from(s.startsWith('whsec_') ? s.slice(6) : s, 'base64'))
      .update(content)
      .digest(),
  );
  const matches = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return expected.some((e) => e.length === given.length && timingSafeEqual(e, given));
  });
  if (!matches) throw new WebhookVerificationError('No signature matches the secret.');
  return JSON.parse(text) as WorkspaceEvent | WebhookTestMessage;
}
