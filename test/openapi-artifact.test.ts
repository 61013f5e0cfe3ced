// The committed interface descriptions (docs/openapi/*.json) are the published contract: the
// documents the service serves must equal them byte for byte. After an intended change, run
// `npm run openapi` and commit the diff. Compatibility with the published versions is
// test/openapi-breaking.test.ts's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import Fastify from 'fastify';
import { v1 } from '../src/api/v1.js';
import { v2 } from '../src/api/v2.js';
import { loadConfig } from '../src/config.js';
import type { Services } from '../src/services.js';
import { PUBLISHED_VERSIONS, renderDocuments } from '../scripts/openapi.js';
import { committedDocument } from './openapi-documents.js';
import { useStrictValidators } from '../src/http/validators.js';

const raw = (v: string) => JSON.parse(readFileSync(new URL(`../docs/openapi/${v}.json`, import.meta.url), 'utf8'));

test('served OpenAPI documents equal the committed ones', async () => {
  const served = await renderDocuments();
  for (const v of PUBLISHED_VERSIONS) {
    const committed = readFileSync(new URL(`../docs/openapi/${v}.json`, import.meta.url), 'utf8');
    assert.equal(served[v], committed, `docs/openapi/${v}.json is stale: run npm run openapi`);
  }
});

test('durations in the documents are the configured ones', async () => {
  const docs = await renderDocuments({ IDEMPOTENCY_TTL_HOURS: '1', EVENTS_RETENTION_DAYS: '7' });
  for (const v of PUBLISHED_VERSIONS) {
    assert.doesNotMatch(docs[v]!, /\{\{|48 hours|30 days/, `${v} still says a default`);
    assert.match(docs[v]!, /within 1 hour returns/, v);
  }
  assert.match(docs.v2!, /Events are kept for 7 days;/);
  assert.match(docs.v2!, /kept for 7 days \(EVENTS_RETENTION_DAYS\)/);
  const defaults = await renderDocuments();
  assert.match(defaults.v1!, /within 48 hours returns/);
});

test('documents are deterministic', async () => {
  const [a, b] = [await renderDocuments(), await renderDocuments()];
  assert.deepEqual(a, b);
});

const withoutTitles = (node: any): any => {
  if (Array.isArray(node)) return node.map(withoutTitles);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k, v]) => !(k === 'title' && typeof v === 'string'))
      .map(([k, v]) => [k, withoutTitles(v)]),
  );
};

test('components only change the structure: the inline document is the committed one dereferenced', async () => {
  // The versions as the routes declare them, every schema inline (no request is served).
  const app = Fastify();
  // The service's validators: the routes' schemas are written for them (x- keywords included).
  useStrictValidators(app);
  const services = { config: loadConfig({}) } as Services;
  await app.register(v1, { prefix: '/v1', services, inlineOpenApi: true });
  await app.register(v2, { prefix: '/v2', services, inlineOpenApi: true });
  try {
    for (const v of PUBLISHED_VERSIONS) {
      const inline = (await app.inject({ method: 'GET', url: `/${v}/openapi.json` })).json();
      assert.equal(JSON.stringify(inline).includes('$ref'), false, 'the inline document has no reference');
      // A schema's title is the name it is published under; the rest must be the same.
      const { info, components, ...rest } = inline;
      const expected = { info, ...withoutTitles(rest), components: { securitySchemes: components.securitySchemes } };
      assert.deepEqual(committedDocument(v), expected, v);
    }
  } finally {
    await app.close();
  }
});

test('every resource is a named schema, used by reference', () => {
  const v2 = raw('v2');
  const names = Object.keys(v2.components.schemas);
  for (const name of ['Contact', 'ContactCreate', 'ContactUpdate', 'Appointment', 'Workspace', 'PipelineStage']) {
    assert.ok(names.includes(name), name);
  }
  for (const name of ['CatalogItem', 'Conversation', 'Message', 'Automation', 'Event', 'Error', 'PageInfo']) {
    assert.ok(names.includes(name), name);
  }
  const text = JSON.stringify(v2);
  assert.ok((text.match(/"\$ref"/g) ?? []).length >= 50);
});
