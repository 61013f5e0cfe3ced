// One error class, one closed list of codes, one table that maps each code to its HTTP status and
// error type. Every error response of the service is rendered from an ApiError (plugins/errors.ts).

/** The error classes, in the order the documents list them. */
export const ERROR_TYPES = [
  'invalid_request',
  'authentication_error',
  'permission_error',
  'not_found',
  'idempotency_error',
  'validation_error',
  'rate_limit_error',
  'api_error',
] as const;
export type ErrorType = (typeof ERROR_TYPES)[number];

interface CodeDefinition {
  status: number;
  type: ErrorType;
  /** Default message; specific throws may say more, never echoing secrets or internal data. */
  message: string;
}

/** Codes that share a status and a type, each with its default message. */
function codes<C extends string>(
  status: number,
  type: ErrorType,
  messages: Record<C, string>,
): Record<C, CodeDefinition> {
  const entries = Object.entries<string>(messages).map(([code, message]) => [code, { status, type, message }]);
  return Object.fromEntries(entries) as Record<C, CodeDefinition>;
}

export const ERROR_CODES = {
  ...codes(400, 'invalid_request', {
    invalid_query_parameter: 'A query parameter is invalid.',
    invalid_path_parameter: 'A path parameter is invalid.',
    invalid_cursor: 'The cursor was not issued by this service for this workspace and these filters.',
    invalid_json: 'The request body is not valid JSON.',
    idempotency_key_missing: 'This operation requires an Idempotency-Key header (8 to 128 characters).',
    idempotency_key_invalid: 'The Idempotency-Key header must be 8 to 128 visible ASCII characters.',
    invalid_header: 'A request header is invalid.',
    malformed_request: 'The request is not valid HTTP (method, URL or headers could not be read).',
  }),
  ...codes(431, 'invalid_request', { headers_too_large: 'The request headers or URL are too large.' }),
  ...codes(401, 'authentication_error', {
    invalid_api_key: 'The API key is missing, malformed, unknown, expired or revoked.',
  }),
  ...codes(403, 'permission_error', {
    insufficient_scope: 'The API key lacks the scope this operation requires.',
    workspace_suspended: 'The workspace of this API key is suspended.',
  }),
  ...codes(404, 'not_found', { resource_not_found: 'No such resource.', route_not_found: 'No such operation.' }),
  ...codes(409, 'idempotency_error', {
    idempotency_key_reused: 'This Idempotency-Key was already used with a different request.',
    idempotency_key_in_use: 'A request with this Idempotency-Key is still being processed; retry after it completes.',
  }),
  ...codes(410, 'invalid_request', {
    events_expired:
      'Events after this position were deleted by retention: resynchronize (export the lists, then follow the feed from GET /v2/events/head).',
  }),
  ...codes(413, 'invalid_request', { payload_too_large: 'The request body is too large.' }),
  ...codes(415, 'invalid_request', {
    unsupported_media_type: 'The request body must be sent with Content-Type: application/json.',
  }),
  ...codes(422, 'validation_error', { validation_failed: 'The request body is invalid.' }),
  ...codes(429, 'rate_limit_error', {
    rate_limit_exceeded: 'Too many requests for this API key; retry after the time in Retry-After.',
    concurrency_limit_exceeded:
      'Too many requests of this API key are in progress at once; retry after the time in Retry-After.',
    address_rate_limit_exceeded:
      'Too many requests without a valid API key from this address; retry after the time in Retry-After.',
  }),
  ...codes(500, 'api_error', { internal_error: 'An unexpected error occurred; it has been logged.' }),
  ...codes(503, 'api_error', {
    service_unavailable: 'The service is temporarily unavailable; retry after the time in Retry-After.',
    server_overloaded:
      "The service is saturated and this key's workspace (or, without a key, this address) has the most requests in progress on it; retry after the time in Retry-After.",
  }),
};

export type ErrorCode = keyof typeof ERROR_CODES;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  readonly details: Record<string, unknown> | undefined;
  /** Seconds, sent as Retry-After (429, 503, 409 in use). */
  readonly retryAfter: number | undefined;
  /** Sent as WWW-Authenticate (401, and 403 for a missing scope): RFC 6750, 3. */
  readonly challenge: string | undefined;
  readonly #fitDetails: ((maxBytes: number) => Record<string, unknown>) | undefined;

  constructor(
    code: ErrorCode,
    options: {
      message?: string;
      details?: Record<string, unknown>;
      /** how to shorten long details to a number of bytes of JSON (ProblemReport) */
      fitDetails?: (maxBytes: number) => Record<string, unknown>;
      retryAfter?: number;
      challenge?: string;
    } = {},
  ) {
    const def: CodeDefinition = ERROR_CODES[code];
    super(options.message ?? def.message);
    this.name = 'ApiError';
    this.code = code;
    this.status = def.status;
    this.type = def.type;
    this.details = options.details;
    this.retryAfter = options.retryAfter;
    this.challenge = options.challenge;
    this.#fitDetails = options.fitDetails;
  }

  /**
   * The details, shortened where they can be to at most `maxBytes` of JSON; details that cannot be
   * shortened are small by construction (names in them are clipped, clipName).
   */
  detailsWithin(maxBytes: number): Record<string, unknown> | undefined {
    if (!this.details || !this.#fitDetails) return this.details;
    return this.#fitDetails(maxBytes);
  }
}

export const eventsExpired = (
  retentionDays: number,
  parameter: 'after' | 'cursor',
  problem: 'expired' | 'ahead',
): ApiError =>
  new ApiError('events_expired', {
    message:
      problem === 'expired'
        ? `Events after this position were deleted (the feed keeps ${retentionDays} days): resynchronize — take GET /v2/events/head, export the lists, then follow the feed from that position.`
        : 'This position is ahead of the end of the feed, so it was not issued by this store (it may come from a store since restored or replaced): resynchronize — take GET /v2/events/head, export the lists, then follow the feed from that position.',
    details: { parameter, retention_days: retentionDays },
  });

/** The realm of every WWW-Authenticate challenge. */
const REALM = 'Bearer realm="workspace-api"';

/**
 * 401: without a bearer token the challenge names the scheme only; with a bad one, also
 * error="invalid_token" (RFC 6750, 3.1) — the same for every reason a key is refused.
 */
export const invalidApiKey = (presented: boolean): ApiError =>
  new ApiError('invalid_api_key', { challenge: presented ? `${REALM}, error="invalid_token"` : REALM });

/** 403 for a scope the key lacks, with the scope it needs (RFC 6750, 3.1). */
export const insufficientScope = (scope: string, message: string, details: Record<string, unknown> = {}): ApiError =>
  new ApiError('insufficient_scope', {
    message,
    details: { required_scope: scope, ...details },
    challenge: `${REALM}, error="insufficient_scope", scope="${scope}"`,
  });

export const notFound = (what: string) => new ApiError('resource_not_found', { message: `No such ${what}.` });

/** One problem of a request body: the field (a path such as `items/3/email`; null: the body) and what is wrong. */
export interface BodyProblem {
  field: string | null;
  message: string;
}

/**
 * How much of a body's problems a 422 lists (docs/api-conventions.md, "Errors"). Everything past
 * these is counted, not listed; the answer is then cut further to fit its byte budget.
 */
export const PROBLEM_LIMITS = {
  /** entries of details.errors */
  listed: 20,
  /** entries of each details.items[].errors */
  perItem: 5,
  /** entries of details.items (a batch holds at most 100 items; a hostile body may hold more) */
  items: 100,
  /** characters of a field path or parameter name repeated in an answer */
  nameChars: 120,
} as const;

/**
 * A caller-chosen name (a property, a parameter) as an answer repeats it: cut to at most
 * PROBLEM_LIMITS.nameChars characters as JSON writes them (a control character takes six), never
 * within a surrogate pair.
 */
export function clipName(name: string): string {
  let clipped = '';
  let written = 0;
  for (const char of name) {
    written += JSON.stringify(char).length - 2;
    if (written > PROBLEM_LIMITS.nameChars) return `${clipped}…`;
    clipped += char;
  }
  return clipped;
}

interface ItemProblems {
  index: number;
  errors: BodyProblem[];
  count: number;
}

/**
 * The problems of one body, gathered in one pass at a bounded cost whatever their number: the
 * first PROBLEM_LIMITS.listed in order, and for a body carrying an `items` array (the batch
 * operations) the first PROBLEM_LIMITS.perItem of each of the first PROBLEM_LIMITS.items bad items;
 * the rest are counted. A batch is all or nothing, so the client learns the items to fix at once.
 */
export class ProblemReport {
  readonly #listed: BodyProblem[] = [];
  readonly #items = new Map<number, ItemProblems>();
  #count = 0;
  #badItems = 0;

  get size(): number {
    return this.#count;
  }

  add(field: string | null, message: string): void {
    this.#count += 1;
    if (this.#listed.length < PROBLEM_LIMITS.listed) {
      this.#listed.push({ field: field === null ? null : clipName(field), message });
    }
    const found = field === null ? undefined : this.#itemOf(field);
    if (!found) return;
    found.item.count += 1;
    if (found.item.errors.length < PROBLEM_LIMITS.perItem) {
      found.item.errors.push({ field: found.within === undefined ? null : clipName(found.within), message });
    }
  }

  /** Counts `n` more problems of `field` that were found but not worded (a part's own check cut them). */
  countUnworded(field: string, n: number): void {
    if (n <= 0) return;
    this.#count += n;
    // Its item had a worded problem first: counted there already, or past PROBLEM_LIMITS.items.
    const found = this.#itemOf(field, false);
    if (found) found.item.count += n;
  }

  /**
   * The batch item a problem's field names (items/3/email: problem `email` of item 3, read without
   * a regular expression: a hostile body brings a problem per byte or two), made on its first
   * problem when `create`; undefined for another field, or an item past PROBLEM_LIMITS.items.
   */
  #itemOf(field: string, create = true): { item: ItemProblems; within: string | undefined } | undefined {
    if (!field.startsWith('items/')) return undefined;
    const slash = field.indexOf('/', 6);
    const digits = field.slice(6, slash === -1 ? undefined : slash);
    if (!/^\d+$/.test(digits)) return undefined;
    const index = Number(digits);
    const within = slash === -1 || slash === field.length - 1 ? undefined : field.slice(slash + 1);
    let item = this.#items.get(index);
    if (!item) {
      if (!create) return undefined;
      this.#badItems += 1;
      if (this.#items.size >= PROBLEM_LIMITS.items) return undefined;
      item = { index, errors: [], count: 0 };
      this.#items.set(index, item);
    }
    return { item, within };
  }

  /** The 422 of these problems; its details are cut at render time to the answer's byte budget. */
  toError(): ApiError {
    const first = this.#listed[0];
    const message = first ? `${first.field ? `${first.field}: ` : ''}${first.message}` : 'The request body is invalid.';
    return new ApiError('validation_failed', { message, details: this.#details(), fitDetails: (b) => this.#fit(b) });
  }

  #details(listed = this.#listed.length, items = this.#items.size): Record<string, unknown> {
    const shownItems = [...this.#items.values()].sort((a, b) => a.index - b.index).slice(0, items);
    return {
      errors: this.#listed.slice(0, listed),
      ...(this.#count > listed ? { more_errors: this.#count - listed } : {}),
      ...(this.#items.size > 0
        ? {
            items: shownItems.map(({ index, errors, count }) => ({
              index,
              errors,
              ...(count > errors.length ? { more_errors: count - errors.length } : {}),
            })),
          }
        : {}),
      ...(this.#badItems > shownItems.length ? { more_items: this.#badItems - shownItems.length } : {}),
    };
  }

  /** The details within `maxBytes` of JSON: whole items dropped from the end first, then errors. */
  #fit(maxBytes: number): Record<string, unknown> {
    let items = this.#items.size;
    let listed = this.#listed.length;
    let details = this.#details(listed, items);
    while (Buffer.byteLength(JSON.stringify(details)) > maxBytes && (items > 0 || listed > 0)) {
      if (items > 0) items = Math.floor(items / 2);
      else listed = Math.floor(listed / 2);
      details = this.#details(listed, items);
    }
    return details;
  }
}

/** The 422 of problems found by a rule the schema cannot say (a repeated external id, a NUL). */
export function validationFailed(problems: readonly BodyProblem[]): ApiError {
  const report = new ProblemReport();
  for (const p of problems) report.add(p.field, p.message);
  return report.toError();
}

/**
 * The properties of a flat write body (`pathPrefix`: where it sits in the request, e.g. `items/3/`)
 * whose strings hold a NUL character: PostgreSQL cannot store it in text, so a write is refused
 * with the field named instead of failing in the store.
 */
export function nulCharacterProblems(fields: object, pathPrefix = ''): BodyProblem[] {
  return Object.entries(fields)
    .filter(([, value]) => typeof value === 'string' && value.includes('\u0000'))
    .map(([field]) => ({
      field: `${pathPrefix}${field}`,
      message: 'holds a NUL character (U+0000), which cannot be stored',
    }));
}
