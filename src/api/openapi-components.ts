// Turns the document @fastify/swagger writes — every schema inline in every operation — into one
// that names each thing once: schemas titled in the route schemas (Contact, Event, Error, the page
// envelopes...), the headers every answer carries, the error answers, the parameters lists share.
// Only the structure changes: dereferencing the result gives back the inline document exactly
// (test/openapi-artifact.test.ts checks it), so generated clients get named types and the
// document stays a faithful picture of what the routes validate and send.

import { ERROR_CODES_KEY, errorResponseName } from '../http/responses.js';
import { canonicalJson as canonical } from '../shared/canonical-json.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const pascal = (name: string) =>
  name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');

interface TitledUse {
  body: Json;
  description: unknown;
  placeholder: Json;
}

/**
 * Replaces every schema with a `title`, innermost first, by a reference to components.schemas
 * under that title. Uses of one title must agree on everything but their description: a
 * description shared by all uses stays in the component, otherwise each use keeps its own
 * beside the reference (OpenAPI 3.1 allows it).
 */
function liftTitledSchemas(doc: Json, schemas: Json): void {
  const uses = new Map<string, TitledUse[]>();
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (!isObject(node)) return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) out[k] = k === 'example' || k === 'examples' ? v : visit(v);
    if (typeof out.title !== 'string' || !['type', 'properties', 'enum', 'anyOf'].some((k) => k in out)) return out;
    const { title, description, ...body } = out;
    const placeholder: Json = { $ref: `#/components/schemas/${title}` };
    uses.set(title, [...(uses.get(title) ?? []), { body, description, placeholder }]);
    return placeholder;
  };
  doc.paths = visit(doc.paths);
  if (doc.webhooks !== undefined) doc.webhooks = visit(doc.webhooks);
  for (const [title, all] of uses) {
    const shapes = new Set(all.map((u) => canonical(u.body)));
    if (shapes.size > 1) throw new Error(`OpenAPI: the schemas titled ${title} differ; give them different titles`);
    const descriptions = new Set(all.map((u) => canonical(u.description)));
    const shared = descriptions.size === 1 ? all[0]!.description : undefined;
    schemas[title] = shared === undefined ? all[0]!.body : { ...all[0]!.body, description: shared };
    if (shared === undefined) {
      for (const u of all) if (u.description !== undefined) u.placeholder.description = u.description;
    }
  }
}

/** Groups identical objects under one name; throws when one name would stand for two things. */
function register(into: Json, name: string, value: Json, kind: string): Json {
  const existing = into[name];
  if (existing !== undefined && canonical(existing) !== canonical(value)) {
    throw new Error(`OpenAPI: two different ${kind} would be named ${name}`);
  }
  into[name] = value;
  return { $ref: `#/components/${kind}/${name}` };
}

type Operation = Json & { parameters?: Json[]; responses?: Record<string, Json> };

function operationsOf(doc: Json): Operation[] {
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Operation>>;
  return Object.values(paths).flatMap((item) => Object.values(item));
}

/**
 * Response headers as components: one name per header, or per variant of it when some answers
 * require it and others do not (Retry-After is always sent on 429 and 503, sometimes on 409).
 */
function liftHeaders(doc: Json, headers: Json): void {
  const variants = new Map<string, Set<string>>();
  for (const op of operationsOf(doc)) {
    for (const response of Object.values(op.responses ?? {})) {
      for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
        variants.set(name, (variants.get(name) ?? new Set()).add(canonical(header)));
      }
    }
  }
  const componentName = (name: string, header: Json) =>
    (variants.get(name)?.size ?? 0) > 1 && header.required !== true ? `${name}-Optional` : name;
  for (const op of operationsOf(doc)) {
    for (const response of Object.values(op.responses ?? {})) {
      const own = (response.headers ?? {}) as Record<string, Json>;
      for (const [name, header] of Object.entries(own)) {
        own[name] = register(headers, componentName(name, header), header, 'headers');
      }
    }
  }
}

/** Error answers recur across operations: one component per status (per kind of operation for 400). */
function liftErrorResponses(doc: Json, responses: Json): void {
  for (const op of operationsOf(doc)) {
    const own = op.responses ?? {};
    for (const [status, response] of Object.entries(own)) {
      const codes = response[ERROR_CODES_KEY];
      if (!Array.isArray(codes)) continue;
      own[status] = register(responses, errorResponseName(Number(status), codes as string[]), response, 'responses');
    }
  }
}

/** A parameter written the same way wherever it appears (limit, cursor, Idempotency-Key...). */
function liftSharedParameters(doc: Json, parameters: Json): void {
  const seen = new Map<string, { shapes: Set<string>; count: number }>();
  const keyOf = (p: Json) => `${String(p.in)}:${String(p.name)}`;
  for (const op of operationsOf(doc)) {
    for (const p of op.parameters ?? []) {
      const entry = seen.get(keyOf(p)) ?? { shapes: new Set(), count: 0 };
      entry.shapes.add(canonical(p));
      entry.count += 1;
      seen.set(keyOf(p), entry);
    }
  }
  for (const op of operationsOf(doc)) {
    if (!op.parameters) continue;
    op.parameters = op.parameters.map((p) => {
      const entry = seen.get(keyOf(p))!;
      if (entry.count < 2 || entry.shapes.size > 1 || p.in === 'path') return p;
      return register(parameters, pascal(String(p.name)), p, 'parameters');
    });
  }
}

export function componentize(doc: Json): Json {
  const components = (doc.components ?? {}) as Json;
  const schemas: Json = {};
  const headers: Json = {};
  const responses: Json = {};
  const parameters: Json = {};
  liftTitledSchemas(doc, schemas);
  liftHeaders(doc, headers);
  liftErrorResponses(doc, responses);
  liftSharedParameters(doc, parameters);
  doc.components = { ...components, schemas, headers, responses, parameters };
  return doc;
}
