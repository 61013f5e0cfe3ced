// Validation of JSON request bodies at a bounded cost, whatever the body holds. A valid body is
// checked once, stopping at its first problem. An invalid one is explained: when its shape is
// hostile (more unknown properties than an answer lists, an array longer than its schema allows),
// by those problems alone, found in one walk that descends into nothing it will not report;
// otherwise by every problem of the schema, which a body of bounded shape holds few of. Either way
// the 422 lists a bounded number (ProblemReport) and the walk never builds one object per
// unknown key. docs/security.md ("API4") gives the bound per operation.
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { PROBLEM_LIMITS, ProblemReport, type ApiError } from '../shared/errors.js';

/** What the walk checks of one place in a body: its known properties, or its items. */
interface Shape {
  /** an object that takes only these properties, with the shapes of those that have one */
  properties?: Map<string, Shape | undefined>;
  /** an array of at most maxItems items of this shape */
  maxItems?: number;
  minItems?: number;
  items?: Shape;
}

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  required?: string[];
  items?: JsonSchema;
  maxItems?: number;
  minItems?: number;
  minProperties?: number;
  allOf?: JsonSchema[];
  anyOf?: JsonSchema[];
}

/**
 * The schema paths (as Ajv names them) of the anyOf rules that say again what their object's
 * minProperties says: one alternative per optional property, each requiring that property. They
 * are there so generated client types carry the minimum (contacts.schemas.ts, carriesOneOf); the
 * 422 names the minimum once, by minProperties, and an object whose only properties are unknown
 * ones is explained by those.
 */
function minPropertiesRestated(schema: JsonSchema | undefined, path = '#', into = new Set<string>()): Set<string> {
  if (!schema) return into;
  if (schema.minProperties !== undefined && schema.properties) {
    const optional = Object.keys(schema.properties)
      .filter((name) => !(schema.required ?? []).includes(name))
      .sort();
    schema.allOf?.forEach((member, i) => {
      const keys = member.anyOf?.map((branch) => (branch.required?.length === 1 ? branch.required[0] : undefined));
      if (keys && !keys.includes(undefined) && [...keys].sort().join() === optional.join()) {
        into.add(`${path}/allOf/${i}/anyOf`);
      }
    });
  }
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    minPropertiesRestated(child, `${path}/properties/${name}`, into);
  }
  minPropertiesRestated(schema.items, `${path}/items`, into);
  return into;
}

function shapeOf(schema: JsonSchema | undefined): Shape | undefined {
  if (!schema) return undefined;
  if (schema.type === 'object' && schema.additionalProperties === false) {
    const properties = new Map<string, Shape | undefined>();
    for (const [name, child] of Object.entries(schema.properties ?? {})) properties.set(name, shapeOf(child));
    return { properties };
  }
  if (schema.type === 'array') {
    const items = shapeOf(schema.items);
    if (schema.maxItems === undefined && !items) return undefined;
    return { maxItems: schema.maxItems, minItems: schema.minItems, items };
  }
  return undefined;
}

/**
 * The shape problems of `data`, added to `report`: unknown properties and arrays longer than
 * allowed. An array over its bound is not descended into, nor is an unknown property's value.
 * Returns whether an array was over its bound.
 */
function shapeProblems(shape: Shape, data: unknown, path: string, report: ProblemReport): boolean {
  let oversized = false;
  if (shape.properties && data !== null && typeof data === 'object' && !Array.isArray(data)) {
    for (const key in data) {
      if (!Object.hasOwn(data, key)) continue;
      if (!shape.properties.has(key)) {
        report.add(`${path}${key}`, 'is not a property of this body');
        continue;
      }
      const child = shape.properties.get(key);
      if (child)
        oversized = shapeProblems(child, (data as Record<string, unknown>)[key], `${path}${key}/`, report) || oversized;
    }
    return oversized;
  }
  if (Array.isArray(data)) {
    if (shape.maxItems !== undefined && data.length > shape.maxItems) {
      report.add(
        path.replace(/\/$/, '') || null,
        `must hold ${shape.minItems ?? 0} to ${shape.maxItems} items (got ${data.length})`,
      );
      return true;
    }
    const items = shape.items;
    if (items) data.forEach((item, i) => (oversized = shapeProblems(items, item, `${path}${i}/`, report) || oversized));
  }
  return oversized;
}

export type BodyValidator = ((data: unknown) => true | { error: ApiError }) & { errors?: null };

/**
 * A body validator for Fastify's validator compiler: `firstError` and `everyError` are the same
 * schema compiled by an Ajv that stops at the first problem and by one that collects them all.
 */
export function compileBodyValidator(schema: JsonSchema, firstError: Ajv, everyError: Ajv): BodyValidator {
  const valid = firstError.compile(schema);
  let explain: ValidateFunction | undefined;
  const shape = shapeOf(schema);
  const restated = minPropertiesRestated(schema);
  return (data: unknown) => {
    if (valid(data)) return true;
    if (shape) {
      const shapeReport = new ProblemReport();
      const oversized = shapeProblems(shape, data, '', shapeReport);
      if (oversized || shapeReport.size > PROBLEM_LIMITS.listed) {
        return { error: shapeReport.toError() };
      }
    }
    explain ??= everyError.compile(schema);
    explain(data);
    return { error: schemaProblems(explain.errors ?? [], restated).toError() };
  };
}

/** Every problem Ajv found, as the 422 names them. */
function schemaProblems(errors: readonly ErrorObject[], restated: ReadonlySet<string>): ProblemReport {
  // Errors inside an anyOf branch only explain why that branch failed; the anyOf itself carries
  // the rule, written in its description. The branches are few (one per anyOf of the schema,
  // whatever the body), so each error is checked against a handful of paths.
  const branchPaths = [...new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.schemaPath))];
  const report = new ProblemReport();
  for (const e of errors) {
    if (e.keyword === 'anyOf' && restated.has(e.schemaPath)) continue;
    if (branchPaths.some((p) => e.schemaPath !== p && e.schemaPath.startsWith(p))) continue;
    const field =
      e.keyword === 'additionalProperties'
        ? `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}`
        : e.keyword === 'required'
          ? `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`
          : e.instancePath;
    report.add(field.replace(/^\//, '') || null, bodyMessage(e));
  }
  return report;
}

function bodyMessage(e: ErrorObject): string {
  const parent = e.parentSchema as { description?: string } | undefined;
  switch (e.keyword) {
    case 'anyOf':
      return parent?.description ?? 'must match one of the allowed forms';
    case 'additionalProperties':
      return 'is not a property of this body';
    case 'minProperties':
      // Nested: a batch item, which carries its external_id and something to write.
      return e.instancePath === ''
        ? 'the body must contain at least one property'
        : 'must carry external_id and at least one property to write';
    case 'required':
      return 'is required';
    case 'minItems':
    case 'maxItems': {
      const bounds = e.parentSchema as { minItems?: number; maxItems?: number } | undefined;
      const got = Array.isArray(e.data) ? ` (got ${e.data.length})` : '';
      return `must hold ${bounds?.minItems ?? 0} to ${bounds?.maxItems ?? 'any number of'} items${got}`;
    }
    case 'type':
      return `must be ${String((e.params as { type: string | string[] }).type).replace(',', ' or ')}`;
    case 'enum':
      return `must be one of: ${((e.params as { allowedValues: unknown[] }).allowedValues ?? []).join(', ')}`;
    case 'pattern':
      return `must match ${(e.params as { pattern: string }).pattern}`;
    case 'format':
      return `must be a valid ${(e.params as { format: string }).format}`;
    default:
      return e.message ?? 'is invalid';
  }
}
