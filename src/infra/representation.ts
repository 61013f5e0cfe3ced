// How a resource's public representation is read from its table, derived from the resource's
// schema alone: each property is the column of the same name, as the API writes it. A timestamp
// goes through api_time() (milliseconds, UTC, "Z"). Reads take a number or a 64-bit integer as a
// float8, which the driver hands over as a number rather than as text; jsonb keeps the column's
// own numeric value, which it prints exactly. The reads' select lists
// and the database's representation functions (what an event records of the row) are both made
// here, so the two cannot disagree, and a resource's properties are listed only in its schema.
import type { TObject, TSchema } from 'typebox';

/** The SQL expression for a property of the row `row` (a table name or alias), read by the driver or as jsonb. */
function expression(row: string, name: string, schema: TSchema, into: 'driver' | 'jsonb'): string {
  const column = `${row}.${name}`;
  const s = schema as { format?: unknown; type?: unknown };
  const types = Array.isArray(s.type) ? (s.type as unknown[]) : [s.type];
  if (s.format === 'date-time') return `api_time(${column})`;
  const numeric = types.includes('number') || (types.includes('integer') && s.format === 'int64');
  return numeric && into === 'driver' ? `${column}::float8` : column;
}

/** The properties of an item schema, in its order, with their schemas. */
const propertiesOf = (item: TObject): [string, TSchema][] => Object.entries(item.properties);

/**
 * The members of api_<kind>_text(r): the row as compact JSON text, every public property in schema
 * order, which is what GET writes for it (test/events-feed-json.test.ts holds it byte for byte to
 * api_public_json of api_<kind>_json, and test/write-answers.test.ts to the route's serializer). A
 * write's recorded answer is this text: written member by member, it costs a fraction of building
 * the jsonb and ordering its keys. A string goes through to_json, anything else through to_jsonb,
 * as jsonb_build_object converts it; both escape as JSON.stringify does.
 */
function textMembers(item: TObject): string {
  const members = propertiesOf(item).map(([name, schema], i) => {
    const s = schema as { type?: unknown };
    const types = Array.isArray(s.type) ? (s.type as unknown[]) : [s.type];
    if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a property name: ${name}`);
    if (types.includes('object') || types.includes('array')) throw new Error(`${name}: a public property is a scalar`);
    const convert = types.includes('string') ? 'to_json' : 'to_jsonb';
    return `'${i === 0 ? '{' : ','}"${name}":' || coalesce(${convert}(${expression('r', name, schema, 'jsonb')})::text, 'null')`;
  });
  return `${members.join(' || ')} || '}'`;
}

/** The select list of a resource's reads: every public property, under its own name, nothing else. */
export function selectList(item: TObject, table: string): string {
  return propertiesOf(item)
    .map(([name, schema]) => `${expression(table, name, schema, 'driver')} AS ${name}`)
    .join(', ');
}

export interface RepresentedResource {
  /** the resource type, as events name it: api_<kind>_json() is its representation function */
  kind: string;
  table: string;
  item: TObject;
}

/**
 * The database's representation functions, one per resource, and api_properties(): the row as
 * jsonb (api_<kind>_json), the row as compact JSON text (api_<kind>_text: a write's answer, and an
 * event's data as the feed's triggers write it), and which of its properties the feed writes, in
 * the schema's order. Applied by every migrate before the files of db/code that call them.
 */
export function representationFunctions(resources: readonly RepresentedResource[]): string {
  const functions = resources.map(({ kind, table, item }) => {
    const pairs = propertiesOf(item)
      .map(([name, schema]) => `'${name}', ${expression('r', name, schema, 'jsonb')}`)
      .join(', ');
    return `CREATE OR REPLACE FUNCTION api_${kind}_json(r ${table}) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(${pairs}) $$;

CREATE OR REPLACE FUNCTION api_${kind}_text(r ${table}) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT ${textMembers(item)} $$;`;
  });
  const cases = resources
    .map(
      ({ kind, item }) =>
        `    WHEN '${kind}' THEN ARRAY[${Object.keys(item.properties)
          .map((p) => `'${p}'`)
          .join(', ')}]`,
    )
    .join('\n');
  const properties = `CREATE OR REPLACE FUNCTION api_properties(kind text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE kind
${cases}
    ELSE ARRAY['id']
  END $$;`;
  return [...functions, properties].join('\n\n');
}
