// Contact resource and request bodies, exactly as spec sections 2.1-2.3 and 8 define them.
import { Type, type Static, type TSchema } from 'typebox';
import { PROBLEM_LIMITS } from '../../shared/errors.js';
import { Cursor, DateTime, Limit, NullableString, Uuid } from '../../shared/schemas.js';

export const CONTACT_STATUSES = [
  'cold_list',
  'prospecting_started',
  'talking',
  'qualified_conversation',
  'nurturing',
  'scheduled',
  'meeting',
  'post_meeting',
  'customer_confirmed',
  'lost',
] as const;
export type ContactStatus = (typeof CONTACT_STATUSES)[number];
/** A contact created without a status starts at the first stage of the pipeline. */
export const DEFAULT_CONTACT_STATUS: ContactStatus = 'cold_list';

const PHONE_PATTERN = '^\\+[1-9]\\d{7,14}$';
export const EXTERNAL_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:@/-]*$';

const nullableString = ({ maxLength, ...options }: Record<string, unknown> & { maxLength: number }) =>
  NullableString(maxLength, options);

export const ContactStatusSchema = Type.Unsafe<ContactStatus>({
  type: 'string',
  enum: [...CONTACT_STATUSES],
  description: 'Pipeline stage of the contact.',
  title: 'ContactStatus',
});

export const Contact = Type.Object(
  {
    id: Uuid,
    external_id: nullableString({
      maxLength: 128,
      pattern: EXTERNAL_ID_PATTERN,
      description: 'Identifier chosen by the caller (set through the upsert).',
    }),
    name: nullableString({ maxLength: 160 }),
    company_name: nullableString({ maxLength: 160 }),
    email: nullableString({ format: 'email', maxLength: 254 }),
    phone: nullableString({ pattern: PHONE_PATTERN, maxLength: 16, examples: ['+5511912345678'] }),
    whatsapp: nullableString({ pattern: PHONE_PATTERN, maxLength: 16, examples: ['+5511987654321'] }),
    origin: nullableString({ maxLength: 120 }),
    status: ContactStatusSchema,
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false, title: 'Contact' },
);
export type ContactT = Static<typeof Contact>;

const writableProperties = {
  name: Type.Optional(nullableString({ maxLength: 160 })),
  company_name: Type.Optional(nullableString({ maxLength: 160 })),
  email: Type.Optional(nullableString({ format: 'email', maxLength: 254 })),
  phone: Type.Optional(
    nullableString({ pattern: PHONE_PATTERN, maxLength: 16, description: 'E.164: plus sign, then 8 to 15 digits.' }),
  ),
  whatsapp: Type.Optional(
    nullableString({ pattern: PHONE_PATTERN, maxLength: 16, description: 'E.164: plus sign, then 8 to 15 digits.' }),
  ),
  origin: Type.Optional(nullableString({ maxLength: 120 })),
  status: Type.Optional(ContactStatusSchema),
};

/**
 * "The body carries at least one of these keys", as alternatives that each require one key and
 * name it among their properties: generated client types then carry the rule (a bare
 * `{required: [key]}` becomes `unknown`, and no type says minProperties). A branch takes any value
 * of its key, so a bad value is reported by the property's own schema alone, never also as a key
 * missing.
 */
function carriesOneOf(keys: readonly string[], description: string) {
  return {
    description,
    anyOf: keys.map((key) => ({ type: 'object', required: [key], properties: { [key]: {} } })),
  };
}

export const WRITABLE_CONTACT_FIELDS = Object.keys(writableProperties) as (keyof ContactWrite)[];

export const ContactCreate = Type.Object(writableProperties, {
  additionalProperties: false,
  title: 'ContactCreate',
  description: 'Carries the key name or company_name, and at least one of the keys email, phone, whatsapp.',
  allOf: [
    carriesOneOf(['name', 'company_name'], 'The body must carry name or company_name.'),
    carriesOneOf(['email', 'phone', 'whatsapp'], 'The body must carry at least one of email, phone, whatsapp.'),
  ],
});

export const ContactUpdate = Type.Object(writableProperties, {
  additionalProperties: false,
  title: 'ContactUpdate',
  minProperties: 1,
  allOf: [carriesOneOf(Object.keys(writableProperties), 'The body must carry at least one property.')],
  description: 'Only the properties sent are changed; send null to clear a nullable property.',
});
export type ContactWrite = Static<typeof ContactUpdate>;

export const ContactIdParams = Type.Object({ id: Uuid }, { additionalProperties: false });

export const ExternalIdParams = Type.Object(
  {
    external_id: Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: EXTERNAL_ID_PATTERN,
      description: 'Identifier of the contact in the calling system; a "/" in it may be sent raw or as %2F.',
    }),
  },
  { additionalProperties: false },
);

export const ContactListQuery = Type.Object(
  {
    limit: Type.Optional(Limit),
    cursor: Type.Optional(Cursor),
    updated_after: Type.Optional({ ...DateTime, description: 'Only contacts updated strictly after this instant.' }),
    status: Type.Optional(ContactStatusSchema),
  },
  { additionalProperties: false },
);

/** The most values a lookup filter of the contact list takes (a chunk of a sync, as a batch). */
export const LOOKUP_MAX_VALUES = 100;

/**
 * A comma-separated list of 1 to LOOKUP_MAX_VALUES values, each matching `one` (a regex without
 * anchors). `x-comma-separated` says so to the error messages (src/plugins/errors.ts describeRule)
 * and to readers of the interface description.
 */
const commaList = (one: string, maxLength: number, description: string) =>
  Type.String({
    minLength: 1,
    maxLength: LOOKUP_MAX_VALUES * (maxLength + 1),
    pattern: `^${one}(,${one}){0,${LOOKUP_MAX_VALUES - 1}}$`,
    'x-comma-separated': { maxValues: LOOKUP_MAX_VALUES, value: `^${one}$` },
    description,
  });

/**
 * The contact list of version 2: version 1's filters, and the lookups a sync makes before
 * creating (by e-mail, phone or its own id), each taking up to 100 comma-separated values.
 */
export const ContactListQueryV2 = Type.Object(
  {
    ...ContactListQuery.properties,
    email: Type.Optional(
      commaList(
        '[^,\\s@]+@[^,\\s@]+',
        254,
        `Only contacts with one of these e-mail addresses (up to ${LOOKUP_MAX_VALUES}, comma-separated), compared without regard to case.`,
      ),
    ),
    phone: Type.Optional(
      commaList(
        '\\+[1-9]\\d{7,14}',
        16,
        `Only contacts with one of these phone numbers (E.164, up to ${LOOKUP_MAX_VALUES}, comma-separated), compared exactly; send + as %2B.`,
      ),
    ),
    external_id: Type.Optional(
      commaList(
        EXTERNAL_ID_PATTERN.slice(1, -1),
        128,
        `Only contacts with one of these external_id values (up to ${LOOKUP_MAX_VALUES}, comma-separated): the contacts of one chunk of a sync in one call.`,
      ),
    ),
  },
  { additionalProperties: false },
);

/** The most contacts one batch upsert carries; a client splits larger imports into calls of this size. */
export const BATCH_MAX_ITEMS = 100;
/**
 * A batch counts against the rate limit as one request per this many items: a batch of 100 writes
 * about ten times what one upsert does in the database (docs/performance.md), and still costs a
 * tenth of the quota of 100 single upserts.
 */
export const BATCH_ITEMS_PER_REQUEST = 10;

export const ContactBatchItem = Type.Object(
  {
    external_id: Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: EXTERNAL_ID_PATTERN,
      description: 'Identifier of the contact in the calling system: the contact this item creates or updates.',
    }),
    ...writableProperties,
  },
  {
    additionalProperties: false,
    // external_id and at least one property, as PUT /contacts/external/{external_id} takes them.
    minProperties: 2,
    allOf: [carriesOneOf(Object.keys(writableProperties), 'The item must carry at least one property to write.')],
    title: 'ContactBatchItem',
    description:
      'external_id and at least one ContactUpdate property. Creates the contact with the properties sent (status cold_list when none is sent) or changes only the properties sent: the rules of PUT /v2/contacts/external/{external_id}.',
  },
);
export type ContactBatchItemT = Static<typeof ContactBatchItem>;

/** How a batch treats its invalid items: refuse the whole batch (the default), or write the others. */
export const BATCH_MODES = ['all_or_nothing', 'partial'] as const;
export type BatchMode = (typeof BATCH_MODES)[number];

const batchMode = Type.Unsafe<BatchMode>({
  type: 'string',
  enum: [...BATCH_MODES],
  description:
    'all_or_nothing (the default): any invalid item refuses the whole batch with 422 and nothing is written. partial: the valid items are written in one transaction and each invalid one comes back in the answer (result invalid, its index, external_id and problems), with 207 when there is one; 422 when no item is valid.',
});

const batchItems = <T extends TSchema>(item: T) =>
  Type.Array(item, {
    minItems: 1,
    maxItems: BATCH_MAX_ITEMS,
    description: `1 to ${BATCH_MAX_ITEMS} contacts, each external_id at most once.`,
  });

export const ContactBatchUpsert = Type.Object(
  { mode: Type.Optional(batchMode), items: batchItems(ContactBatchItem) },
  { additionalProperties: false, title: 'ContactBatchUpsert' },
);

/**
 * A batch body as a partial batch checks it before its items: the mode and 1 to 100 items. Each
 * item is then checked alone against ContactBatchItem.
 */
export const ContactBatchEnvelope = Type.Object(
  { mode: Type.Optional(batchMode), items: batchItems(Type.Unknown()) },
  { additionalProperties: false },
);

export const BATCH_RESULTS = ['created', 'updated', 'unchanged'] as const;
export type BatchResult = (typeof BATCH_RESULTS)[number];

export const ContactBatchResult = Type.Object(
  {
    result: Type.Unsafe<BatchResult>({
      type: 'string',
      enum: [...BATCH_RESULTS],
      description:
        'created: no contact had the external_id; updated: a stored value changed; unchanged: every value sent was already stored (updated_at did not move, no event).',
    }),
    contact: Contact,
  },
  { additionalProperties: false, title: 'ContactBatchResult' },
);
export type ContactBatchResultT = Static<typeof ContactBatchResult>;

export const ItemProblem = Type.Object(
  {
    field: Type.Union([Type.String({ maxLength: 160 }), Type.Null()], {
      description: 'The property of the item (a path within it); null: the item itself.',
    }),
    message: Type.String({ maxLength: 2000 }),
  },
  { additionalProperties: false, title: 'ItemProblem' },
);

export const ContactBatchInvalid = Type.Object(
  {
    result: Type.Unsafe<'invalid'>({ type: 'string', enum: ['invalid'], description: 'The item was not written.' }),
    index: Type.Integer({
      format: 'int32',
      minimum: 0,
      maximum: BATCH_MAX_ITEMS - 1,
      description: "The item's place in items.",
    }),
    external_id: Type.Union([Type.String({ maxLength: 160 }), Type.Null()], {
      description:
        'The external_id the item sent, when it sent a string (cut after 120 characters, with …); otherwise null.',
    }),
    errors: Type.Array(ItemProblem, {
      maxItems: PROBLEM_LIMITS.perItem,
      description: `The item's problems, the first ${PROBLEM_LIMITS.perItem}.`,
    }),
    more_errors: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: 1_000_000,
        description: 'How many problems errors leaves out.',
      }),
    ),
  },
  { additionalProperties: false, title: 'ContactBatchInvalid' },
);
export type ContactBatchInvalidT = Static<typeof ContactBatchInvalid>;

const itemCount = (description?: string) =>
  Type.Integer({ format: 'int32', minimum: 0, maximum: BATCH_MAX_ITEMS, ...(description ? { description } : {}) });

export const ContactBatchCounts = Type.Object(
  {
    created: itemCount(),
    updated: itemCount(),
    unchanged: itemCount(),
    invalid: itemCount('Items not written (partial mode only; 0 otherwise).'),
  },
  { additionalProperties: false, title: 'ContactBatchCounts', description: 'How many items had each result.' },
);

/** 200: every item was written (or found unchanged). */
export const ContactBatchResults = Type.Object(
  {
    data: Type.Array(ContactBatchResult, {
      maxItems: BATCH_MAX_ITEMS,
      description: 'One entry per item, in item order.',
    }),
    counts: ContactBatchCounts,
  },
  { additionalProperties: false, title: 'ContactBatchUpsertResult' },
);

/** 207: a partial batch with invalid items; each is answered in its place. */
export const ContactBatchPartialResults = Type.Object(
  {
    data: Type.Array(Type.Union([ContactBatchResult, ContactBatchInvalid]), {
      maxItems: BATCH_MAX_ITEMS,
      description: 'One entry per item, in item order: what was written, or why the item was not.',
    }),
    counts: ContactBatchCounts,
  },
  { additionalProperties: false, title: 'ContactBatchUpsertPartialResult' },
);

/** The most contacts one batch delete names; counts against the rate limit as the batch upsert does. */
export const BATCH_DELETE_MAX = BATCH_MAX_ITEMS;

const externalIdValue = (description: string) =>
  Type.String({ minLength: 1, maxLength: 128, pattern: EXTERNAL_ID_PATTERN, description });

export const ContactBatchDelete = Type.Object(
  {
    ids: Type.Optional(
      Type.Array(
        { ...Uuid, description: 'Id of a contact to delete.' },
        {
          maxItems: BATCH_DELETE_MAX,
          description: 'Contacts to delete, by id (in either case); each at most once.',
        },
      ),
    ),
    external_ids: Type.Optional(
      Type.Array(externalIdValue('external_id of a contact to delete.'), {
        maxItems: BATCH_DELETE_MAX,
        description: 'Contacts to delete, by external_id; each at most once.',
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'ContactBatchDelete',
    description: `ids, external_ids or both: 1 to ${BATCH_DELETE_MAX} values in all, each at most once in its list.`,
    allOf: [carriesOneOf(['ids', 'external_ids'], 'The body must carry ids or external_ids.')],
  },
);
export type ContactBatchDeleteT = Static<typeof ContactBatchDelete>;

export const DELETE_RESULTS = ['deleted', 'not_found'] as const;
export type DeleteResult = (typeof DELETE_RESULTS)[number];

export const ContactDeleteResult = Type.Object(
  {
    result: Type.Unsafe<DeleteResult>({
      type: 'string',
      enum: [...DELETE_RESULTS],
      description:
        'deleted: this request deleted the contact; not_found: the workspace has no such contact (never had it, or it was deleted before).',
    }),
    id: NullableString(36, {
      format: 'uuid',
      description:
        'The id sent, or the id of the contact deleted by its external_id; null for an external_id not found.',
    }),
    external_id: NullableString(128, {
      description:
        'The external_id sent, or the one the contact deleted by its id had; null for an id not found, or a contact without one.',
    }),
  },
  { additionalProperties: false, title: 'ContactDeleteResult' },
);
export type ContactDeleteResultT = Static<typeof ContactDeleteResult>;

export const ContactBatchDeleteResults = Type.Object(
  {
    data: Type.Array(ContactDeleteResult, {
      maxItems: BATCH_DELETE_MAX,
      description: 'One entry per value sent: the ids in their order, then the external_ids in theirs.',
    }),
    counts: Type.Object(
      { deleted: itemCount(), not_found: itemCount() },
      {
        additionalProperties: false,
        title: 'ContactBatchDeleteCounts',
        description: 'How many values had each result.',
      },
    ),
  },
  { additionalProperties: false, title: 'ContactBatchDeleteResult' },
);
