// The breaking-change gate: each committed document (docs/openapi/v1.json, v2.json) must stay
// compatible with the one its version was published as (docs/openapi/baseline/). A client written
// against the baseline must keep working: no operation, parameter value, response property,
// response header or success status it relies on may disappear or tighten, and no new required
// input may appear. api-smart-diff classifies every change between the two documents, compared
// dereferenced so that structure alone never counts; two checks of our own cover what it lets
// through, and one of its verdicts is overruled (breakingChanges). Run: npm run openapi:breaking
import { readFileSync } from 'node:fs';
import { apiDiff, breaking, type Diff } from 'api-smart-diff';
import { dereference } from './openapi-dereference.js';

type Json = Record<string, unknown>;

/** `value` as an object to read keys of; {} for anything else. */
const obj = (value: unknown): Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};

/** Each published version and the document it was published as. */
export const GATED = [
  { version: 'v1', published: '1.0.0' },
  { version: 'v2', published: '2.0.0' },
] as const;

const documentUrl = (name: string) => new URL(`../docs/openapi/${name}.json`, import.meta.url);

/** The committed document of a version, and its published baseline. */
export function gatedDocuments(version: (typeof GATED)[number]['version']): { baseline: unknown; current: unknown } {
  const published = GATED.find((g) => g.version === version)!.published;
  const read = (name: string) => JSON.parse(readFileSync(documentUrl(name), 'utf8')) as unknown;
  return { baseline: read(`baseline/${version}-${published}`), current: read(version) };
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every response of both documents, keyed by path, method and status. */
function sharedResponses(before: Json, after: Json): { where: string; before: Json; after: Json }[] {
  const shared: { where: string; before: Json; after: Json }[] = [];
  for (const [path, item] of Object.entries(obj(before.paths))) {
    for (const method of HTTP_METHODS) {
      const responses = obj(obj(obj(item)[method]).responses);
      const later = obj(obj(obj(obj(after.paths)[path])[method]).responses);
      for (const [status, response] of Object.entries(responses)) {
        if (later[status] === undefined) continue;
        shared.push({
          where: `paths/${path}/${method}/responses/${status}`,
          before: obj(response),
          after: obj(later[status]),
        });
      }
    }
  }
  return shared;
}

/** A schema's type and format as a client parses a value by them: "string date-time", "integer int32". */
function parsedAs(schema: Json): string {
  const types = schema.type === undefined ? [] : [schema.type].flat().map(String).sort();
  return [types.join('|') || 'any', typeof schema.format === 'string' ? schema.format : ''].filter(Boolean).join(' ');
}

/**
 * A response header whose type or format changed (RateLimit-Reset from a date-time to an
 * integer): a client that parses the header the old way breaks. api-smart-diff leaves such a
 * change unclassified.
 */
function headerTypeChanges(before: Json, after: Json): string[] {
  const found: string[] = [];
  for (const r of sharedResponses(before, after)) {
    for (const [name, header] of Object.entries(obj(r.before.headers))) {
      const later = obj(r.after.headers)[name];
      if (later === undefined) continue; // a header removed is api-smart-diff's finding
      const [was, is] = [parsedAs(obj(obj(header).schema)), parsedAs(obj(obj(later).schema))];
      if (was !== is) found.push(`replace ${r.where}/headers/${name}/schema (${was} -> ${is})`);
    }
  }
  return found;
}

/**
 * The properties a response's JSON body can carry, as paths ("data/[]/email"): through objects,
 * arrays, allOf (its parts hold together) and each branch of anyOf and oneOf ("data/oneOf[0]/email").
 */
function propertyPaths(schema: unknown, prefix = '', into = new Set<string>()): Set<string> {
  if (!schema || typeof schema !== 'object') return into;
  const s = schema as Json;
  for (const [name, child] of Object.entries(obj(s.properties))) {
    into.add(`${prefix}${name}`);
    propertyPaths(child, `${prefix}${name}/`, into);
  }
  if (s.items) propertyPaths(s.items, `${prefix}[]/`, into);
  for (const part of (s.allOf as unknown[] | undefined) ?? []) propertyPaths(part, prefix, into);
  for (const key of ['anyOf', 'oneOf'] as const) {
    ((s[key] as unknown[] | undefined) ?? []).forEach((branch, i) =>
      propertyPaths(branch, `${prefix}${key}[${i}]/`, into),
    );
  }
  return into;
}

/**
 * A property a response body declared that it no longer declares: a client reading it finds
 * nothing. api-smart-diff calls most such removals breaking, but a property removed from a branch
 * of anyOf or oneOf (an event's data as one of several resources) non-breaking.
 */
function removedResponseProperties(before: Json, after: Json): string[] {
  const found: string[] = [];
  for (const r of sharedResponses(before, after)) {
    const schema = (x: Json) => obj(obj(x.content)['application/json']).schema;
    const later = propertyPaths(schema(r.after));
    for (const path of propertyPaths(schema(r.before))) {
      if (!later.has(path)) found.push(`remove ${r.where}/content/application/json/schema: property ${path}`);
    }
  }
  return found;
}

/**
 * api-smart-diff calls every removed response breaking. An error status an operation no longer
 * documents is not: a client cannot rely on being refused, and every error carries the same error
 * object, so its handling of the others is unchanged. A success status removed stays breaking.
 */
const isErrorStatusRemoved = (d: Diff) =>
  d.action === 'remove' &&
  d.path?.length === 5 &&
  d.path[0] === 'paths' &&
  d.path[3] === 'responses' &&
  Number(d.path[4]) >= 400;

/** The breaking changes from `before` to `after`, one line each. */
export function breakingChanges(before: unknown, after: unknown): string[] {
  // Compared dereferenced: the structure (components, $refs) is not the contract, and the
  // differ's own reference resolution mistakes nested references for removed keywords. The
  // differ changes the documents it reads, so it gets copies of its own.
  const [was, is] = [dereference(before) as Json, dereference(after) as Json];
  const differ = apiDiff(dereference(before), dereference(after))
    .filter((d: Diff) => d.type === breaking && !isErrorStatusRemoved(d))
    .map((d: Diff) => `${d.action} ${(d.path ?? []).join('/')}`);
  const own = [...headerTypeChanges(was, is), ...removedResponseProperties(was, is)];
  return [...new Set([...differ, ...own])];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let failed = false;
  for (const { version, published } of GATED) {
    const { baseline, current } = gatedDocuments(version);
    const found = breakingChanges(baseline, current);
    if (found.length === 0) {
      process.stdout.write(`${version}: no breaking change since ${published}\n`);
    } else {
      failed = true;
      process.stdout.write(
        `${version}: ${found.length} breaking changes since ${published}:\n${found.map((l) => `  ${l}\n`).join('')}`,
      );
    }
  }
  if (failed) process.exit(1);
}
