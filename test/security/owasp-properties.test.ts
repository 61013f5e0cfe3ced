// OWASP API3 (broken object property level authorization): no mass assignment, no excessive
// exposure.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { idem, type TestResponse } from '../harness.js';
import {
  changedTables,
  errorProblems,
  fingerprint,
  writesResource,
  queryParams,
  responseSchema,
  schemaProblems,
  requestBody,
  propertyField,
  resourceBodySchema,
  withProperties,
  writtenSchema,
  type Operation,
} from './helpers.js';
import {
  A,
  B,
  MARKER,
  auditEveryAnswer,
  byId,
  call,
  crawl,
  figures,
  ops,
  pathOf,
  send,
  server,
  useOwaspSuite,
} from './owasp-support.js';

useOwaspSuite('owasp-properties', () => [`${figures.get('api3:refused')} mass-assignment attempts refused`]);

const INTERNAL_PROPERTIES: [string, unknown][] = [
  ['notes', 'hello'],
  ['ai_memory', { likes: 'x' }],
  ['internal_notes', 'x'],
  ['private_notes', 'x'],
  ['provider_payload', { raw: 1 }],
  ['billing_plan', 'enterprise'],
  ['deleted_at', null],
  ['secret', 'x'],
];
const UNKNOWN_PROPERTIES: [string, unknown][] = [
  ['foo', 1],
  ['Name', 'Ana'],
  ['name ', 'Ana'],
  ['', 'x'],
  ['status.value', 'lost'],
  ['email\u0000', 'a@example.com'],
];

describe('API3 broken object property level authorization: no mass assignment, no excessive exposure', () => {
  test('read-only, internal and unknown properties are refused with 422 on every write; nothing is stored; the Idempotency-Key stays free', async () => {
    const problems: string[] = [];
    const beforeB = await fingerprint(server.db, B.id);
    for (const op of ops.filter(writesResource)) {
      const success = op.successStatuses.map((s) => responseSchema(op, s)).find(Boolean);
      const readOnly = Object.keys(writtenSchema(op, success).properties).filter(
        (p) => !(p in resourceBodySchema(op).properties),
      );
      assert.ok(
        readOnly.includes('id') && readOnly.includes('created_at'),
        `${op.label}: read-only ${readOnly.join()}`,
      );
      const extras: [string, unknown][] = [
        ...readOnly.map((p): [string, unknown] => [
          p,
          p === 'id' ? randomUUID() : p.endsWith('_at') ? new Date().toISOString() : `sec-${randomUUID()}`,
        ]),
        ['workspace_id', B.id],
        ...INTERNAL_PROPERTIES,
        ...UNKNOWN_PROPERTIES,
      ];
      for (const [name, value] of extras) {
        const key = idem();
        const label = `${op.label} with ${JSON.stringify(name)}`;
        const beforeA = await fingerprint(server.db, A.id);
        const r = await call(op.method, pathOf(op), {
          key: A.key,
          body: withProperties(op, { [name]: value }),
          idem: key,
        });
        figures.add('api3:refused');
        problems.push(...errorProblems(r, { status: 422, code: 'validation_failed' }).map((p) => `${label}: ${p}`));
        // (the empty property name of a single write is reported with field null)
        const field = propertyField(op, name);
        if (r.status === 422 && !r.json.error.details?.errors?.some((e: any) => e.field === field)) {
          problems.push(`${label}: details.errors does not name it: ${JSON.stringify(r.json.error.details)}`);
        }
        const changed = changedTables(beforeA, await fingerprint(server.db, A.id));
        if (changed.length) problems.push(`${label}: stored something in ${changed.join()}`);
        // The refused request did not use the key: a valid request with it runs, not replayed.
        if (name === 'notes') {
          const again = await call(op.method, pathOf(op), { key: A.key, body: requestBody(op), idem: key });
          if (!op.successStatuses.includes(again.status) || again.headers.get('idempotent-replayed') !== null) {
            problems.push(`${label}: the Idempotency-Key was consumed (${again.status})`);
          }
        }
      }
    }
    assert.deepEqual(
      changedTables(beforeB, await fingerprint(server.db, B.id)),
      [],
      'workspace_id in a body reached B',
    );
    assert.deepEqual(problems, []);
  });

  test('values that smuggle operators or other types into known properties are refused, nothing stored', async () => {
    const problems: string[] = [];
    for (const op of ops.filter(writesResource)) {
      for (const smuggled of [
        { status: { $ne: null } },
        { name: ['Ana'] },
        { email: { $gt: '' } },
        { phone: 5511912345678 },
        { name: true },
        { status: 'won' },
        { origin: { toString: 'x' } },
      ]) {
        const before = await fingerprint(server.db, A.id);
        const r = await call(op.method, pathOf(op), {
          key: A.key,
          body: withProperties(op, smuggled),
          idem: idem(),
        });
        const label = `${op.label} ${JSON.stringify(smuggled)}`;
        problems.push(...errorProblems(r, { status: 422, code: 'validation_failed' }).map((p) => `${label}: ${p}`));
        const changed = changedTables(before, await fingerprint(server.db, A.id));
        if (changed.length) problems.push(`${label}: stored something in ${changed.join()}`);
        figures.add('api3:refused');
      }
    }
    assert.deepEqual(problems, []);
  });

  test('every success answer matches its published, closed schema and carries no internal value; event data is the public resource', async () => {
    const problems: string[] = [];
    const check = (label: string, op: Operation, r: TestResponse) => {
      const schema = responseSchema(op, r.status);
      if (r.status === 204) {
        if (!op.responses['204']) problems.push(`${label}: 204 is not documented`);
        if (r.text !== '') problems.push(`${label}: a 204 with a body`);
        return;
      }
      if (!schema) return problems.push(`${label}: ${r.status} is not documented`);
      problems.push(...schemaProblems(schema, r.json).map((p) => `${label}: ${p}`));
      if (r.text.includes(MARKER)) problems.push(`${label}: carries the internal marker`);
    };
    for (const op of ops) {
      if (op.isList) {
        const first = await call('GET', `${pathOf(op)}?limit=100`, { key: A.key });
        check(op.label, op, first);
      } else {
        check(op.label, op, await send(op, A.key));
      }
    }
    // Event data: exactly the public representation of its resource (or a tombstone).
    const itemSchemaOf: Record<string, any> = {};
    for (const [type, id] of [
      ['contact', 'listContacts'],
      ['appointment', 'listAppointments'],
      ['pipeline_stage', 'listPipelineStages'],
      ['catalog_item', 'listCatalogItems'],
      ['conversation', 'listConversations'],
      ['message', 'listMessages'],
      ['automation', 'listAutomations'],
    ] as const) {
      itemSchemaOf[type] = responseSchema(
        byId(id).find((o) => o.version === 'v2')!,
        200,
      ).properties.data.items;
    }
    itemSchemaOf.workspace = responseSchema(byId('getWorkspace')[0]!, 200).properties.data;
    const { items: events, texts } = await crawl('/v2/events', A.key);
    assert.ok(events.length > 20, `${events.length} events`);
    // A deleted resource's events carry its tombstone: its id (and a contact's external_id) only.
    const deleted = new Set(events.filter((e) => e.type.endsWith('.deleted')).map((e) => e.resource_id));
    const tombstoneKeys = (type: string) => (type === 'contact' ? 'external_id,id' : 'id');
    for (const e of events) {
      const schema = itemSchemaOf[e.resource_type];
      if (!schema) problems.push(`event ${e.id}: unknown resource_type ${e.resource_type}`);
      else if (deleted.has(e.resource_id)) {
        if (Object.keys(e.data).sort().join() !== tombstoneKeys(e.resource_type))
          problems.push(`event ${e.id}: tombstone ${JSON.stringify(e.data)}`);
      } else problems.push(...schemaProblems(schema, e.data).map((p) => `event ${e.id} (${e.type}): ${p}`));
    }
    if (texts.some((t) => t.includes(MARKER))) problems.push('the feed carries the internal marker');
    assert.deepEqual(problems, []);
  });

  test('error answers never echo a property or query value that was sent', async () => {
    const echo = `echo${randomUUID().replace(/-/g, '')}`;
    const problems: string[] = [];
    const writes = ops.filter(writesResource);
    for (const op of writes) {
      for (const body of [
        withProperties(op, { name: echo.repeat(10) }),
        withProperties(op, { email: `${echo}@` }),
        withProperties(op, { status: echo }),
        withProperties(op, { phone: echo }),
        withProperties(op, { notes: echo }),
      ]) {
        const r = await call(op.method, pathOf(op), { key: A.key, body, idem: idem() });
        if (r.status !== 422) problems.push(`${op.label}: ${r.status}`);
        if (r.text.includes(echo)) problems.push(`${op.label}: echoes ${r.text.slice(0, 200)}`);
      }
    }
    for (const op of ops.filter((o) => o.isList)) {
      for (const p of queryParams(op).filter((q) => q.name !== 'cursor')) {
        const r = await call('GET', `${pathOf(op)}?${p.name}=${echo}x`, { key: A.key });
        if (r.status >= 400 && r.text.includes(echo)) problems.push(`${op.label}?${p.name}: echoes the value`);
      }
    }
    const r = await call('GET', `/v2/contacts?cursor=${echo}.${echo}`, { key: A.key });
    if (r.text.includes(echo)) problems.push('invalid cursor echoed');
    assert.deepEqual(problems, []);
  });
});

auditEveryAnswer(200);
