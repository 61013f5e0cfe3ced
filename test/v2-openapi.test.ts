// /v2/openapi.json: public, 3.1, every operation of spec 4.3 with examples valid against their
// schemas, the documented item schemas equal to what the service answers.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import {
  GETS,
  KEYS,
  LISTS,
  V2_ADDED_OPERATIONS,
  V2_OPERATIONS,
  server,
  sorted,
  useV2Workspaces,
} from './v2-support.js';
import { dereference } from './openapi-documents.js';

useV2Workspaces();

// ------------------------------------------------------------------------------------------ openapi

describe('/v2/openapi.json', () => {
  let doc: any;
  let v1doc: any;
  before(async () => {
    const r = await server.request('GET', '/v2/openapi.json');
    assert.equal(r.status, 200, r.text);
    doc = dereference(r.json);
    v1doc = dereference((await server.request('GET', '/v1/openapi.json')).json);
  });

  test('public, OpenAPI 3.1.x, info.version 2.0.0', async () => {
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(doc.info.version, '2.0.0');
    const withBadKey = await server.request('GET', '/v2/openapi.json', { key: 'wsk_nope.nope' });
    assert.equal(withBadKey.status, 200);
    assert.equal(v1doc.info.version, '1.0.0');
  });

  test('documents every operation of spec 4.3 with its operationId, and nothing else but the documented additions', () => {
    const documented: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) documented.push(`${method} ${path} ${op.operationId}`);
    }
    assert.deepEqual(sorted(documented), sorted([...V2_OPERATIONS, ...V2_ADDED_OPERATIONS].map((o) => o.join(' '))));
  });

  test('every response of every operation has an example in application/json', () => {
    let n = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        assert.ok(Object.keys(op.responses).length > 0);
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const content = response.content?.['application/json'];
          // A 204 (a deletion) has no content at all.
          if (status === '204') {
            assert.equal(response.content, undefined, `${method} ${path} 204 has content`);
            continue;
          }
          assert.ok(content, `${method} ${path} ${status}: application/json content`);
          assert.notEqual(content.example, undefined, `${method} ${path} ${status}: example`);
          n++;
        }
      }
    }
    assert.ok(n >= V2_OPERATIONS.length * 2);
  });

  test('every example is valid against the schema it illustrates', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const invalid: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          if (status === '204') continue;
          const content = response.content['application/json'];
          if (!ajv.validate(content.schema, content.example)) {
            const problems = (ajv.errors ?? []).map((e) => `${e.instancePath} ${e.message}`).join('; ');
            invalid.push(`${method} ${path} ${status}: ${problems}`);
          }
        }
      }
    }
    assert.deepEqual(invalid, []);
  });

  test('the documented item schemas have exactly the properties the service answers with', () => {
    const schemaOf = (path: string, status = '200') =>
      doc.paths[path].get.responses[status].content['application/json'].schema;
    assert.deepEqual(sorted(Object.keys(schemaOf('/v2/workspace').properties.data.properties)), KEYS.workspace);
    for (const def of LISTS) {
      const items = schemaOf(def.docPath).properties.data.items;
      // An event is a union, one alternative per kind of event, each with every property of an event.
      for (const alternative of items.anyOf ?? [items]) {
        assert.deepEqual(sorted(Object.keys(alternative.properties)), [...KEYS[def.resource]], def.name);
        assert.equal(alternative.additionalProperties, false, def.name);
      }
    }
    for (const g of GETS) {
      assert.deepEqual(sorted(Object.keys(schemaOf(g.docPath).properties.data.properties)), [...KEYS[g.resource]]);
    }
    // v2 contact and appointment schemas are the v1 ones.
    for (const path of ['/contacts', '/contacts/{id}', '/appointments', '/appointments/{id}']) {
      assert.deepEqual(
        doc.paths[`/v2${path}`].get.responses['200'],
        v1doc.paths[`/v1${path}`].get.responses['200'],
        path,
      );
    }
  });

  test('lists document limit 1-100, cursor, and updated_after or (messages) created_after', () => {
    for (const def of LISTS) {
      const params: any[] = doc.paths[def.docPath].get.parameters;
      const byName = new Map(params.filter((p) => p.in === 'query').map((p) => [p.name, p]));
      assert.equal(byName.get('limit')?.schema.minimum, 1, def.name);
      assert.equal(byName.get('limit')?.schema.maximum, 100, def.name);
      assert.ok(byName.has('cursor'), def.name);
      if (def.since) assert.ok(byName.has(def.since), `${def.name}: ${def.since}`);
      if (def.name === 'messages') assert.ok(!byName.has('updated_after'));
    }
  });

  test('/v1/openapi.json has no /v2 path and /v2/openapi.json no /v1 path', () => {
    const v1paths = Object.keys(v1doc.paths);
    const v2paths = Object.keys(doc.paths);
    assert.ok(v1paths.length > 0 && v2paths.length > 0);
    assert.deepEqual(
      v1paths.filter((p) => !p.startsWith('/v1/')),
      [],
    );
    assert.deepEqual(
      v2paths.filter((p) => !p.startsWith('/v2/')),
      [],
    );
    for (const id of ['getWorkspace', 'listEvents', 'listMessages']) {
      assert.ok(!JSON.stringify(v1doc.paths).includes(`"${id}"`), `${id} is not in v1`);
    }
  });
});

// Ids in responses are UUIDs wherever the resource has one (stages are named by their status).
