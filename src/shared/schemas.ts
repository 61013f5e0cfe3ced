// Schemas every version shares: envelopes, the error object, query parameters, headers. A route's
// schema is its TypeScript type, its validator, its response serializer and its OpenAPI entry.
import { Type, type TSchema } from 'typebox';
import { IDEMPOTENCY_WINDOW } from './documented-durations.js';
import { ERROR_TYPES } from './errors.js';

/** A UUID as text, any case (what PostgreSQL's uuid type reads). */
export const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const Uuid = Type.String({
  format: 'uuid',
  maxLength: 36,
  description: 'UUID',
  examples: ['0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41'],
});

/** RFC 3339 date-time in UTC with millisecond precision, e.g. 2026-11-22T06:05:43.123Z. */
export const DateTime = Type.String({ format: 'date-time', maxLength: 35, examples: ['2026-11-22T06:05:43.123Z'] });

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const ErrorBody = Type.Object(
  {
    error: Type.Object(
      {
        type: Type.String({
          enum: [...ERROR_TYPES],
          description: `Error class: ${ERROR_TYPES.slice(0, -1).join(', ')} or ${ERROR_TYPES.at(-1)}.`,
        }),
        code: Type.String({
          pattern: '^[a-z_]+$',
          maxLength: 64,
          description: 'Stable machine-readable code; see the error catalog in the service description.',
        }),
        message: Type.String({
          maxLength: 2000,
          description: 'Human-readable explanation; safe to show, never contains secrets.',
        }),
        request_id: Type.String({
          pattern: '^req_[A-Za-z0-9_-]+$',
          maxLength: 64,
          description: 'Equals the X-Request-Id header of the same response.',
        }),
        details: Type.Optional(Type.Object({}, { additionalProperties: true })),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'Error' },
);

export const PageInfo = Type.Object(
  {
    limit: Type.Integer({ format: 'int32', minimum: 1, maximum: 100, description: 'The page size applied.' }),
    has_more: Type.Boolean({ description: 'Whether a further page exists.' }),
    next_cursor: Nullable(
      Type.String({ maxLength: 1024, description: 'Opaque cursor for the next page; null when there is none.' }),
    ),
  },
  { additionalProperties: false, title: 'PageInfo' },
);

/**
 * The title of an envelope of a named resource (ContactPage for a page of Contact): a `title`
 * names a schema once in the published documents (api/openapi-components.ts).
 */
const envelopeTitle = (item: TSchema, suffix: string) =>
  'title' in item && typeof item.title === 'string' ? { title: `${item.title}${suffix}` } : {};

export const Page = <T extends TSchema>(item: T) =>
  Type.Object(
    { data: Type.Array(item, { maxItems: LIMIT_MAX }), page: PageInfo },
    { additionalProperties: false, ...envelopeTitle(item, 'Page') },
  );

/** The answer carrying one resource: { "data": ... } (ContactResult for a Contact). */
export const Single = <T extends TSchema>(item: T) =>
  Type.Object({ data: item }, { additionalProperties: false, ...envelopeTitle(item, 'Result') });

const LIMIT_MIN = 1;
const LIMIT_MAX = 100;
export const LIMIT_DEFAULT = 50;

export const Limit = Type.Integer({
  format: 'int32',
  minimum: LIMIT_MIN,
  maximum: LIMIT_MAX,
  default: LIMIT_DEFAULT,
  description: `Page size, an integer from ${LIMIT_MIN} to ${LIMIT_MAX} (default ${LIMIT_DEFAULT}).`,
});

export const Cursor = Type.String({
  minLength: 1,
  maxLength: 1024,
  description: 'The opaque page.next_cursor of the previous page, with the same filters.',
});

export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]{8,128}$';

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.String({
    minLength: 8,
    maxLength: 128,
    pattern: IDEMPOTENCY_KEY_PATTERN,
    description: `Unique key of this write, 8 to 128 visible ASCII characters. Retrying with the same key and request returns the first response (marked Idempotent-Replayed: true) for ${IDEMPOTENCY_WINDOW}; the same key with a different request is 409.`,
  }),
});

// `type: [T, 'null']` rather than anyOf: the same meaning for validation and OpenAPI 3.1, and the
// serializer writes it without trying branches.
export const NullableString = (maxLength: number, options: Record<string, unknown> = {}) =>
  Type.Unsafe<string | null>({ ...options, maxLength, type: ['string', 'null'] });

export const NullableDateTime = (options: Record<string, unknown> = {}) =>
  NullableString(35, { ...options, format: 'date-time' });

/** Integers state their range and width, so clients size their types and nothing is unbounded. */
export const Int32 = (minimum: number, maximum: number, options: Record<string, unknown> = {}) =>
  Type.Integer({ ...options, format: 'int32', minimum, maximum });

export const Int64 = (minimum: number, options: Record<string, unknown> = {}) =>
  Type.Integer({ ...options, format: 'int64', minimum, maximum: Number.MAX_SAFE_INTEGER });

export const NullableInteger = (
  format: 'int32' | 'int64',
  minimum: number,
  maximum: number,
  options: Record<string, unknown> = {},
) => Type.Unsafe<number | null>({ ...options, format, minimum, maximum, type: ['integer', 'null'] });

export const StringEnum = <T extends string>(values: readonly T[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<T>({ ...options, type: 'string', enum: [...values] });

/** Query parameters of every v2 list that syncs by updated_at. */
export const SyncListQuery = {
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Cursor),
  updated_after: Type.Optional({ ...DateTime, description: 'Only items updated strictly after this instant.' }),
};

/** The query of an operation that takes no query parameters: any one is refused, like a typo. */
export const NoQuery = Type.Object({}, { additionalProperties: false });
