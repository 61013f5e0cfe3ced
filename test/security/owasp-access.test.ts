// OWASP API1 (broken object level authorization) and API5 (broken function level authorization):
// another workspace's ids, cursors and keys mean nothing here; each operation with and without
// each scope.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { SCOPES, type Scope } from '../../src/shared/scopes.js';
import { idem } from '../harness.js';
import {
  assertErrorObject,
  changedTables,
  errorProblems,
  fillPath,
  fingerprint,
  freshValue,
  headerNames,
  isWrite,
  takesBody,
  pathParams,
  queryParams,
  recordCalledBy,
  REQUIRED_SCOPE,
  requestBody,
  withProperties,
  writtenOf,
  withoutRequestId,
  type AnyAnswer,
} from './helpers.js';
import {
  A,
  B,
  auditEveryAnswer,
  call,
  crawl,
  figures,
  gets,
  idsOf,
  lookupParams,
  ops,
  parentListOf,
  pathOf,
  randomValues,
  rawCall,
  send,
  server,
  useOwaspSuite,
  valuesA,
  valuesB,
  withHead,
} from './owasp-support.js';

useOwaspSuite('owasp-access', () => [
  `${figures.get('api1:compared')} foreign-vs-random comparisons`,
  `${figures.get('api5:cells')} scope-matrix cells`,
]);

// ================================================================================================ API1

describe('API1 broken object level authorization: another workspace’s ids, cursors and keys mean nothing', () => {
  test('ids of another workspace in the path answer exactly like random ids, on every operation (and HEAD)', async () => {
    const problems: string[] = [];
    const beforeB = await fingerprint(server.db, B.id);
    const targets = withHead(ops.filter((o) => lookupParams(o).length > 0));
    assert.ok(targets.length >= 10, `${targets.length} operations with ids in the path`);
    for (const [method, op] of targets) {
      const label = `${method} ${op.template}`;
      const own = await send(op, A.key, { method });
      if (!op.successStatuses.includes(own.status)) problems.push(`${label} with A's own ids: ${own.status}`);
      const foreign = await send(op, A.key, { method, values: valuesB.get(op.label)! });
      const random = await send(op, A.key, { method, values: randomValues(op) });
      figures.add('api1:compared');
      if (foreign.status !== 404)
        problems.push(`${label} with B's ids: ${foreign.status} ${foreign.text.slice(0, 150)}`);
      if (foreign.status !== random.status)
        problems.push(`${label}: B's ids ${foreign.status}, random ${random.status}`);
      if (withoutRequestId(foreign) !== withoutRequestId(random)) {
        problems.push(`${label}: bodies differ: ${foreign.text.slice(0, 150)} | ${random.text.slice(0, 150)}`);
      }
      if (headerNames(foreign).join() !== headerNames(random).join()) problems.push(`${label}: header names differ`);
      if (method !== 'HEAD') {
        problems.push(
          ...errorProblems(foreign, { status: 404, code: 'resource_not_found' }).map((p) => `${label}: ${p}`),
        );
      }
    }
    assert.deepEqual(changedTables(beforeB, await fingerprint(server.db, B.id)), [], 'B changed');
    assert.deepEqual(problems, []);
  });

  test('an identifier the caller chooses (external_id) names the caller’s own record: another workspace’s is like a new one', async () => {
    const targets = ops.filter(
      (o) => o.method !== 'GET' && o.method !== 'DELETE' && pathParams(o).some((p) => !parentListOf(o, p)),
    );
    assert.ok(targets.length >= 2, 'upserts by external id');
    for (const op of targets) {
      const chosen = pathParams(op).find((p) => !parentListOf(op, p))!;
      const ext = freshValue(chosen);
      const values = { ...valuesB.get(op.label), [chosen.name]: ext };
      const inB = await send(op, B.key, { values });
      assert.ok(op.successStatuses.includes(inB.status), `${op.label} in B: ${inB.text}`);
      const beforeB = await fingerprint(server.db, B.id);
      const foreign = await send(op, A.key, { values });
      const random = await send(op, A.key, { values: { ...values, [chosen.name]: freshValue(chosen) } });
      figures.add('api1:compared');
      assert.equal(foreign.status, random.status, `${op.label}: B's ${chosen.name} vs a new one`);
      assert.deepEqual(Object.keys(foreign.json.data), Object.keys(random.json.data));
      assert.notEqual(foreign.json.data.id, inB.json.data.id, 'A got its own record');
      assert.deepEqual(changedTables(beforeB, await fingerprint(server.db, B.id)), [], `${op.label} changed B`);
      const stillB = await call('GET', `/v2/contacts/${inB.json.data.id}`, { key: B.key });
      assert.deepEqual(stillB.json.data, inB.json.data);
    }
  });

  test('a read by an identifier the caller chooses finds only the caller’s own record: another workspace’s is like one nobody has', async () => {
    const reads = ops.filter((o) => o.method === 'GET' && pathParams(o).some((p) => !parentListOf(o, p)));
    assert.ok(reads.length >= 1, 'the lookup by external id');
    for (const op of reads) {
      const chosen = pathParams(op).find((p) => !parentListOf(op, p))!;
      const ofB = await recordCalledBy(server, B.key, ops, op, chosen);
      const inB = await send(op, B.key, { values: { [chosen.name]: ofB } });
      assert.equal(inB.status, 200, `${op.label} in B: ${inB.text}`);
      const foreign = await send(op, A.key, { values: { [chosen.name]: ofB } });
      const nobody = await send(op, A.key, { values: { [chosen.name]: freshValue(chosen) } });
      figures.add('api1:compared');
      assert.equal(foreign.status, 404, `${op.label}: B's ${chosen.name} in A: ${foreign.text}`);
      const withoutId = (r: typeof foreign) => ({ ...r.json.error, request_id: undefined });
      assert.deepEqual(withoutId(foreign), withoutId(nobody), `${op.label}: B's ${chosen.name} vs one nobody has`);
      assert.ok(!foreign.text.includes(inB.json.data.id), 'nothing of B’s record');
    }
  });

  test('a deletion by an identifier the caller chooses finds only the caller’s own record: another workspace’s is like one nobody has, and stays', async () => {
    const deletions = ops.filter((o) => o.method === 'DELETE' && pathParams(o).some((p) => !parentListOf(o, p)));
    assert.ok(deletions.length >= 1, 'the deletion by external id');
    for (const op of deletions) {
      const chosen = pathParams(op).find((p) => !parentListOf(op, p))!;
      const ofB = await recordCalledBy(server, B.key, ops, op, chosen);
      const beforeB = await fingerprint(server.db, B.id);
      const foreign = await send(op, A.key, { values: { [chosen.name]: ofB } });
      const nobody = await send(op, A.key, { values: { [chosen.name]: freshValue(chosen) } });
      figures.add('api1:compared');
      assert.equal(foreign.status, 404, `${op.label}: B's ${chosen.name} in A: ${foreign.text}`);
      const withoutId = (r: typeof foreign) => ({ ...r.json.error, request_id: undefined });
      assert.deepEqual(withoutId(foreign), withoutId(nobody), `${op.label}: B's ${chosen.name} vs one nobody has`);
      assert.deepEqual(changedTables(beforeB, await fingerprint(server.db, B.id)), [], `${op.label} changed B`);
    }
  });

  test('ids of another workspace in query filters select nothing, exactly like random ids', async () => {
    const problems: string[] = [];
    let n = 0;
    for (const op of ops.filter((o) => o.isList)) {
      for (const p of queryParams(op).filter((q) => q.schema.format === 'uuid' || /_id$/.test(q.name))) {
        const noun = p.name.replace(/_id$/, '');
        const list =
          ops.find((o) => o.version === op.version && o.isList && o.template === `/${op.version}/${noun}s`) ??
          ops.find((o) => o.version === op.version && o.operationId === 'listContacts')!;
        const ofB = await call('GET', `${list.template}?limit=1`, { key: B.key });
        const foreignId: string = ofB.json.data[0].id;
        const base = pathOf(op);
        const foreign = await call('GET', `${base}?${p.name}=${foreignId}`, { key: A.key });
        const random = await call('GET', `${base}?${p.name}=${randomUUID()}`, { key: A.key });
        n++;
        figures.add('api1:compared');
        if (foreign.status !== 200 || foreign.json?.data?.length !== 0) {
          problems.push(`${op.label}?${p.name}=<B's>: ${foreign.status} ${foreign.text.slice(0, 150)}`);
        }
        if (foreign.text !== random.text)
          problems.push(`${op.label}?${p.name}: B's and a random id answer differently`);
      }
    }
    assert.ok(n >= 3, `${n} id filters`);
    assert.deepEqual(problems, []);
  });

  test('a workspace’s lists, feed and gets never carry another workspace’s ids', async () => {
    const idsB = await idsOf(B, valuesB);
    const idsA = await idsOf(A, valuesA);
    // Pipeline stage ids are the status names, the same in every workspace: only ids unique to B count.
    for (const id of [...idsB]) if (idsA.has(id)) idsB.delete(id);
    assert.ok(idsB.size >= 20, `${idsB.size} ids of B`);
    const texts: string[] = [];
    for (const op of gets()) {
      if (op.isList) texts.push(...(await crawl(pathOf(op), A.key)).texts);
      else texts.push((await send(op, A.key)).text);
    }
    const all = texts.join('\n');
    const leaked = [...idsB].filter((id) => all.includes(id));
    assert.deepEqual(leaked, [], 'ids of B in answers to A');
    assert.ok(all.includes(A.id), 'control: A sees its own workspace');
  });

  test('a cursor of another workspace is refused exactly like a forged one, on every list', async () => {
    const problems: string[] = [];
    const lists = ops.filter((o) => o.isList);
    for (const op of lists) {
      const ofB = await call('GET', `${pathOf(op, valuesB.get(op.label))}?limit=1`, { key: B.key });
      assert.equal(ofB.json?.page?.has_more, true, `${op.label}: B needs a second page (seed more)`);
      const cursorB: string = ofB.json.page.next_cursor;
      const ofA = await call('GET', `${pathOf(op)}?limit=1`, { key: A.key });
      const cursorA: string = ofA.json.page.next_cursor;
      const own = await call('GET', `${pathOf(op)}?limit=1&cursor=${encodeURIComponent(cursorA)}`, { key: A.key });
      if (own.status !== 200) problems.push(`${op.label}: A's own cursor ${own.status}`);
      const foreign = await call('GET', `${pathOf(op)}?limit=1&cursor=${encodeURIComponent(cursorB)}`, { key: A.key });
      const forged = `${cursorB.slice(0, cursorB.indexOf('.'))}.${'A'.repeat(22)}`;
      const fake = await call('GET', `${pathOf(op)}?limit=1&cursor=${encodeURIComponent(forged)}`, { key: A.key });
      figures.add('api1:compared');
      problems.push(
        ...errorProblems(foreign, { status: 400, code: 'invalid_cursor' }).map((p) => `${op.label} B's cursor: ${p}`),
      );
      if (withoutRequestId(foreign) !== withoutRequestId(fake))
        problems.push(`${op.label}: B's cursor ≠ forged cursor`);
    }
    assert.ok(lists.length >= 10, `${lists.length} lists`);
    assert.deepEqual(problems, []);
  });

  test('an Idempotency-Key used in another workspace is free here: same key and body create anew, another body is no conflict', async () => {
    // The writes that answer what they wrote (a deletion answers what is gone: tested apart).
    for (const op of ops.filter((o) => takesBody(o) && !o.template.endsWith('/batch/delete'))) {
      const values = { ...valuesA.get(op.label)! };
      const valuesOfB = { ...valuesB.get(op.label)! };
      for (const p of pathParams(op).filter((q) => !parentListOf(op, q))) {
        values[p.name] = valuesOfB[p.name] = freshValue(p); // the same external id in both
      }
      const key = idem();
      const body = requestBody(op);
      const inB = await call(op.method, fillPath(op.template, valuesOfB), { key: B.key, body, idem: key });
      assert.ok(op.successStatuses.includes(inB.status), `${op.label} in B: ${inB.text}`);
      const inA = await call(op.method, fillPath(op.template, values), { key: A.key, body, idem: key });
      assert.ok(op.successStatuses.includes(inA.status), `${op.label} in A: ${inA.text}`);
      assert.equal(inA.headers.get('idempotent-replayed'), null, `${op.label}: B's answer replayed to A`);
      assert.notEqual(writtenOf(op, inA.json).id, writtenOf(op, inB.json).id, op.label);
      const replayB = await call(op.method, fillPath(op.template, valuesOfB), { key: B.key, body, idem: key });
      assert.equal(replayB.headers.get('idempotent-replayed'), 'true');
      assert.equal(replayB.text, inB.text, `${op.label}: B's replay is B's own answer`);
      // Another body under a key B used: no 409 in A.
      const key2 = idem();
      await call(op.method, fillPath(op.template, valuesOfB), { key: B.key, body: requestBody(op), idem: key2 });
      const other = await call(op.method, fillPath(op.template, values), {
        key: A.key,
        body: withProperties(op, { origin: 'another body' }),
        idem: key2,
      });
      assert.ok(op.successStatuses.includes(other.status), `${op.label}: ${other.status} ${other.text.slice(0, 200)}`);
      figures.add('api1:compared', 2);
    }
  });
});

// ================================================================================================ API5

describe('API5 broken function level authorization: each operation with and without each scope', () => {
  test('every documented operation has exactly one required scope, and every scope opens something', () => {
    const missing = ops.filter((o) => !REQUIRED_SCOPE[o.operationId]).map((o) => o.label);
    assert.deepEqual(missing, [], 'documented operations without a declared scope');
    const used = new Set(ops.map((o) => REQUIRED_SCOPE[o.operationId]));
    assert.deepEqual(
      SCOPES.filter((s) => !used.has(s)),
      [],
      'scopes that open no operation',
    );
  });

  test('a key with one scope is let through exactly where that scope is required (GET, HEAD and writes)', async () => {
    const keys = new Map<Scope, string>();
    for (const s of SCOPES) keys.set(s, (await A.newKey([s])).key);
    const problems: string[] = [];
    for (const [method, op] of withHead()) {
      const required = REQUIRED_SCOPE[op.operationId]!;
      const answers = await Promise.all(SCOPES.map((s) => send(op, keys.get(s), { method })));
      SCOPES.forEach((s, i) => {
        const r = answers[i]!;
        figures.add('api5:cells');
        const where = `${method} ${op.template} with only ${s}`;
        if (s === required) {
          if (!op.successStatuses.includes(r.status)) problems.push(`${where}: ${r.status} ${r.text.slice(0, 120)}`);
        } else if (r.status !== 403) {
          problems.push(`${where}: ${r.status}, expected 403`);
        } else if (method !== 'HEAD') {
          problems.push(...errorProblems(r, { status: 403, code: 'insufficient_scope' }).map((p) => `${where}: ${p}`));
          if (r.json?.error?.details?.required_scope !== required) {
            problems.push(
              `${where}: details.required_scope ${r.json?.error?.details?.required_scope}, expected ${required}`,
            );
          }
        }
      });
    }
    assert.deepEqual(problems, []);
  });

  test('a key with every scope but the required one is refused on every operation', async () => {
    const problems: string[] = [];
    const keys = new Map<Scope, string>();
    for (const s of SCOPES) keys.set(s, (await A.newKey(SCOPES.filter((x) => x !== s))).key);
    for (const [method, op] of withHead()) {
      const required = REQUIRED_SCOPE[op.operationId]!;
      const r = await send(op, keys.get(required), { method });
      figures.add('api5:cells');
      if (r.status !== 403) problems.push(`${method} ${op.template} without ${required}: ${r.status}`);
    }
    assert.deepEqual(problems, []);
  });

  test('a write refused for its scope reads no body: malformed JSON, wrong media type, no Idempotency-Key and 50 MB all get the same 403, nothing stored', async () => {
    const readOnly = (await A.newKey(SCOPES.filter((s) => s !== 'contacts:write'))).key;
    const beforeA = await fingerprint(server.db, A.id);
    for (const op of ops.filter(isWrite)) {
      const answers: AnyAnswer[] = [
        await call(op.method, pathOf(op), { key: readOnly, body: requestBody(op), idem: idem() }),
        await call(op.method, pathOf(op), { key: readOnly, raw: '{"name":', idem: idem() }),
        await call(op.method, pathOf(op), { key: readOnly, raw: 'name=x', contentType: 'text/plain', idem: idem() }),
        await call(op.method, pathOf(op), { key: readOnly, body: requestBody(op) }),
        await rawCall(
          {
            method: op.method,
            target: pathOf(op),
            headers: [
              ['Authorization', `Bearer ${readOnly}`],
              ['Content-Type', 'application/json'],
              ['Content-Length', '50000000'],
            ],
          },
          { timeoutMs: 3_000 },
        ),
      ];
      const reference = withoutRequestId(answers[0]!);
      for (const r of answers) {
        assertErrorObject(r, { status: 403, code: 'insufficient_scope' }, op.label);
        assert.equal(withoutRequestId(r), reference, op.label);
        figures.add('api5:cells');
      }
    }
    assert.deepEqual(changedTables(beforeA, await fingerprint(server.db, A.id)), []);
  });
});

// ================================================================================================ API9

/**
 * Paths the prose documentation names (README.md, docs/*.md): the public routes outside the
 * OpenAPI documents (the descriptions themselves, the health probes, reference pages) must be
 * among them. A path is documented when a named path equals it or is one of its leading segments.
 */

auditEveryAnswer(500);
