// Every response the integration suite receives through the harness is checked against the
// published interface description that covers it (docs/openapi/*.json, which
// openapi-artifact.test.ts keeps equal to what the service serves): the status must be one the
// operation documents, an error's code one it lists for that status, the documented headers
// must be there, and the body must validate against the documented schema. A response the documents do not describe fails the test that got it.
import assert from 'node:assert/strict';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { committedDocument } from './openapi-documents.js';

type Json = Record<string, any>;

interface Operation {
  pattern: RegExp;
  method: string;
  responses: Record<string, Json>;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
addFormats.default(ajv);

const operations: Operation[] = [];
let errorSchema: ValidateFunction | undefined;
for (const version of ['v1', 'v2']) {
  const doc = committedDocument(version as 'v1' | 'v2');
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    const pattern = new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    for (const [method, op] of Object.entries(item)) {
      operations.push({
        pattern,
        method: method.toUpperCase(),
        responses: (op as Json).responses as Record<string, Json>,
      });
    }
  }
  errorSchema ??= ajv.compile(
    (doc.paths['/v1/contacts'] ?? doc.paths['/v2/contacts']).get.responses['401'].content['application/json'].schema,
  );
}

const validators = new Map<Json, ValidateFunction>();
const validatorFor = (schema: Json) => {
  let v = validators.get(schema);
  if (!v) validators.set(schema, (v = ajv.compile(schema)));
  return v;
};

let checked = 0;
export const contractChecks = () => checked;

export function assertMatchesContract(
  method: string,
  url: string,
  status: number,
  headers: Headers,
  body: unknown,
): void {
  const path = url.split('?')[0]!;
  const where = `${method} ${path} -> ${status}`;
  const op = operations.find((o) => o.method === method && o.pattern.test(path));
  if (!op) {
    // Paths outside the documents (unknown routes, probes, the documents themselves): their errors
    // still use the error object.
    if (status >= 400 && body !== undefined && errorSchema && !errorSchema(body)) {
      assert.fail(`${where}: error body does not match the error schema: ${ajv.errorsText(errorSchema.errors)}`);
    }
    return;
  }
  checked++;
  const response = op.responses[String(status)];
  assert.ok(response, `${where}: status ${status} is not documented for this operation`);
  // An error answer lists the codes it can carry there (src/http/responses.ts).
  const codes = response['x-error-codes'] as string[] | undefined;
  if (codes && method !== 'HEAD') {
    const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
    assert.ok(
      typeof code === 'string' && codes.includes(code),
      `${where}: error code ${String(code)} is not documented for this status (${codes.join(', ')})`,
    );
  }
  for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
    const value = headers.get(name);
    // A header the document marks required must be sent; the others only in some of the
    // status's cases (a replay; a 409 in use; a 403 for a scope).
    const optional = header.required !== true;
    if (value === null) {
      assert.ok(optional, `${where}: documented header ${name} is missing`);
      continue;
    }
    const schema = header.schema as Json;
    const typed = schema.type === 'integer' ? Number(value) : value;
    const valid = validatorFor(schema);
    assert.ok(valid(typed), `${where}: header ${name}: ${value} breaks ${ajv.errorsText(valid.errors)}`);
  }
  if (method === 'HEAD') return;
  const schema = response.content?.['application/json']?.schema as Json | undefined;
  if (!schema) return;
  const valid = validatorFor(schema);
  assert.ok(valid(body), `${where}: body breaks the documented schema: ${ajv.errorsText(valid.errors)}`);
}
