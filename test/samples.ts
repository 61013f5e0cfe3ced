// A valid instance of a resource's schema, made from the schema itself: test fixtures that need a
// whole resource (a body the contract must accept, a value a generated type must take) follow its
// one declaration (src/modules/resources.ts) instead of listing its properties again.
import type { TObject, TSchema } from 'typebox';

export const SAMPLE_ID = '0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41';
export const SAMPLE_TIME = '2026-11-22T06:05:43.123Z';

function sampleValue(schema: TSchema): unknown {
  const s = schema as { type?: string | string[]; enum?: unknown[]; format?: string; minimum?: number };
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (s.enum) return s.enum[0];
  if (types.includes('null')) return null;
  if (s.format === 'uuid') return SAMPLE_ID;
  if (s.format === 'date-time') return SAMPLE_TIME;
  if (types.includes('string')) return 'x';
  if (types.includes('integer') || types.includes('number')) return s.minimum ?? 0;
  if (types.includes('boolean')) return true;
  throw new Error(`no sample for ${JSON.stringify(schema)}`);
}

/** Every property of `item`: nullable ones null, enums their first value, the rest a valid value. */
export const sampleOf = (item: TObject, overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  ...Object.fromEntries(Object.entries(item.properties).map(([name, schema]) => [name, sampleValue(schema)])),
  ...overrides,
});
