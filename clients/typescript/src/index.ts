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
//   - an Idempotency-Key on every write (POST, PUT, PATCH) that does not carry one;
//   - retries of the same request, with the same Idempotency-Key, on 409 idempotency_key_in_use,
//     429, 503 and network errors, honouring Retry-After;
//   - WorkspaceApiError, thrown by unwrap() and by the helpers, with the fields of the error body;
//   - verifyWebhook(): checks a webhook delivery's Standard Webhooks signature and returns its event.
import { createHmac, timingSafeEqual } from 'node:crypto';
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths as V1Paths } from './generated/v1.js';
import type { components as V2Components, paths as V2Paths } from './generated/v2.js';

export type { V1Paths, V2Paths };

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
  /** retries after the first attempt (default 3); 0 turns retrying off */
  maxRetries?: number;
  /** first backoff in ms when the answer has no Retry-After (network errors); doubled each time (default 500) */
  retryDelay?: number;
  /**
   * longest wait in ms before a retry (default 120 000): any Retry-After the service sends is
   * waited out by default (a key's 429 asks for 60 s at most); one beyond it is returned instead
   */
  maxRetryDelay?: number;
}

export interface WorkspaceApiClient {
  v1: V1Client;
  v2: V2Client;
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Well above the longest Retry-After the service sends (60 s, a key of one request per minute). */
export const DEFAULT_MAX_RETRY_DELAY_MS = 120_000;

export function createWorkspaceApiClient(options: WorkspaceApiClientOptions): WorkspaceApiClient {
  const policy: RetryPolicy = {
    maxRetries: options.maxRetries ?? 3,
    retryDelay: options.retryDelay ?? 500,
    maxRetryDelay: options.maxRetryDelay ?? DEFAULT_MAX_RETRY_DELAY_MS,
  };
  const fetch = retrying(options.fetch ?? ((request: Request) => globalThis.fetch(request)), policy);
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
  return { v1, v2 };
}

// ---------------------------------------------------------------------------------------- retries

interface RetryPolicy {
  maxRetries: number;
  retryDelay: number;
  maxRetryDelay: number;
}

/**
 * Wraps fetch so that a request is sent again — the same method, URL, headers (Idempotency-Key
 * included) and body — when retrying cannot do harm:
 *
 * - 429 rate_limit_exceeded and 503 service_unavailable: the request did nothing;
 * - 409 idempotency_key_in_use: the same request is still running; once it ends, the retry gets
 *   its stored response (a retry is a replay, never a second write);
 * - a network error (no response): the request may or may not have run; a GET is safe to repeat,
 *   and a write carries its Idempotency-Key, so a repeat of one that did run is answered with the
 *   stored response.
 *
 * The wait is Retry-After when the answer has one, else an exponential backoff with jitter. A
 * Retry-After longer than maxRetryDelay is not waited for: the answer is returned (and unwrap()
 * throws it, with retryAfter) — the caller decides whether to come back that much later. Other
 * statuses, 4xx in particular, are returned at once.
 */
function retrying(
  fetch: (request: Request) => Promise<Response>,
  policy: RetryPolicy,
): (request: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      try {
        // A clone per attempt: a Request body can be read once.
        response = await fetch(request.clone());
      } catch (error) {
        if (request.signal.aborted) throw error;
        failure = error;
      }
      const key = request.headers.get('idempotency-key');
      if (response && key !== null) sentIdempotencyKeys.set(response, key);
      if (response && !(await isRetryable(response))) return response;
      const wait = response ? waitFor(response, attempt, policy) : backoff(attempt, policy);
      if (attempt >= policy.maxRetries || wait === undefined) {
        if (response) return response;
        throw failure;
      }
      await response?.body?.cancel();
      await sleep(wait, request.signal);
    }
  };
}

async function isRetryable(response: Response): Promise<boolean> {
  if (response.status === 429 || response.status === 503) return true;
  if (response.status !== 409) return false;
  const body: unknown = await response
    .clone()
    .json()
    .catch(() => undefined);
  return errorBodyOf(body)?.code === 'idempotency_key_in_use';
}

/** ms to wait before retrying after this answer, or undefined when Retry-After exceeds the cap. */
function waitFor(response: Response, attempt: number, policy: RetryPolicy): number | undefined {
  const seconds = retryAfterSeconds(response);
  if (seconds === undefined) return backoff(attempt, policy);
  const ms = seconds * 1000;
  return ms > policy.maxRetryDelay ? undefined : ms;
}

function backoff(attempt: number, policy: RetryPolicy): number {
  const ceiling = Math.min(policy.maxRetryDelay, policy.retryDelay * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Retry-After as seconds: delta-seconds, or an HTTP date. */
function retryAfterSeconds(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
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

/** Every item of a list, across its pages (see pages()). */
export async function* paginate<T>(
  call: (cursor: string | undefined) => Promise<CallResult<Page<T>>>,
): AsyncGenerator<T, void, undefined> {
  for await (const page of pages(call)) yield* page.data;
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

/**
 * Creates or updates any number of contacts by external id, 100 per request, in input order, and
 * returns what happened to each (created, updated, unchanged) with the contact, in input order.
 *
 * An external_id given twice is refused before anything is sent (within one request the service
 * refuses it too; across requests the second would silently win). Each request carries its own
 * Idempotency-Key: `${idempotencyKey}:${n}` for the n-th request when one is given (so a rerun of
 * the same import with the same key replays what was written and continues), otherwise a new one.
 * A request is one request against the key's rate limit; 429s are waited out by the client's
 * retries.
 */
export async function batchUpsertContacts(
  v2: V2Client,
  items: readonly ContactBatchItem[],
  options: { idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<ContactBatchResult[]> {
  const seen = new Map<string, number>();
  items.forEach((item, index) => {
    const first = seen.get(item.external_id);
    if (first !== undefined) {
      throw new RangeError(`items[${index}] repeats the external_id of items[${first}]: ${item.external_id}`);
    }
    seen.set(item.external_id, index);
  });
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
      results.push(...data.data);
    } catch (error) {
      if (error instanceof WorkspaceApiError) {
        throw new BatchUpsertError(error, offset, Math.min(BATCH_MAX_ITEMS, items.length - offset), results);
      }
      throw error;
    }
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
