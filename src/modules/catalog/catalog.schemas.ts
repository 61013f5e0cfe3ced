// Catalog items as the API shows them: the workspace's public products and services.
import { Type } from 'typebox';
import { DateTime, NullableInteger, NullableString, StringEnum, SyncListQuery, Uuid } from '../../shared/schemas.js';

const KINDS = ['product', 'service'] as const;

export const CatalogItem = Type.Object(
  {
    id: Uuid,
    kind: StringEnum(KINDS),
    name: Type.String({ maxLength: 200, examples: ['Initial consultation'] }),
    description: NullableString(2000),
    price_amount: NullableInteger('int64', 0, Number.MAX_SAFE_INTEGER, {
      description: 'Price in the minor unit of the currency (cents); null when the item has no list price.',
      examples: [15000],
    }),
    currency: NullableString(3, { pattern: '^[A-Z]{3}$', description: 'ISO 4217 code.', examples: ['BRL'] }),
    duration_minutes: NullableInteger('int32', 1, 100_000, { description: 'Length of a service, when it has one.' }),
    active: Type.Boolean({ description: 'Whether the item is currently offered.' }),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false, title: 'CatalogItem' },
);

export const CatalogListQuery = Type.Object(
  {
    ...SyncListQuery,
    kind: Type.Optional(StringEnum(KINDS)),
    active: Type.Optional(Type.Boolean({ description: 'true: only items on offer; false: only retired ones.' })),
  },
  { additionalProperties: false },
);
