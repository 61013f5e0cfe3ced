// OWASP API2 (broken authentication): one indistinguishable 401, suspension everywhere, throttled
// guessing, clean logs.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { issueKey } from '../../src/modules/api-keys/key-format.js';
import { SCOPES } from '../../src/shared/scopes.js';
import { ownerCommands } from '../../src/modules/owner/owner.service.js';
import { idem, sleep, startTestServer, type RequestOptions, logLines } from '../harness.js';
import {
  assertErrorObject,
  changedTables,
  errorProblems,
  fingerprint,
  forgeKey,
  headerOf,
  idOf,
  isWrite,
  OPEN_ADDRESS_LIMIT,
  pathValues,
  secretOf,
  seedSmall,
  requestBody,
  withoutRequestId,
  type Operation,
} from './helpers.js';
import {
  A,
  MARKER,
  auditEveryAnswer,
  call,
  figures,
  ops,
  pathOf,
  remember,
  send,
  server,
  useOwaspSuite,
  valuesA,
  waitForStatus,
  withHead,
} from './owasp-support.js';

useOwaspSuite('owasp-authentication', () => [
  `${figures.get('api2:refused')} bad-credential requests (1 distinct body)`,
]);

// ================================================================================================ API2

describe('API2 broken authentication: one indistinguishable 401, suspension everywhere, throttled guessing, clean logs', () => {
  test('every bad credential gets the same 401 bytes on every route (and HEAD, and unknown paths); writes store nothing', async () => {
    const all = [...SCOPES];
    const revoked = await A.newKey(all);
    const expired = await A.newKey(all, { expiresInMs: 700 });
    const rotated = await A.newKey(all);
    for (const k of [revoked, expired, rotated])
      assert.equal((await call('GET', '/v2/workspace', { key: k.key })).status, 200);
    await ownerCommands.revokeKey(server.owner, { keyId: revoked.id });
    await ownerCommands.rotateKey(server.owner, { keyId: rotated.id, graceMs: 0 });
    await waitForStatus(revoked.key, 401);
    await waitForStatus(rotated.key, 401);
    await waitForStatus(expired.key, 401);

    const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
    const presented: [string, Record<string, string>, string?][] = [
      ['no Authorization header', {}],
      ['an empty Authorization header', { authorization: '' }],
      ['Bearer and nothing', { authorization: 'Bearer ' }],
      ['Basic with the key', { authorization: `Basic ${Buffer.from(`${A.key}:`).toString('base64')}` }],
      ['Token scheme', { authorization: `Token ${A.key}` }],
      ['the key without a scheme', { authorization: A.key }],
      ['not a key', bearer('not-a-key')],
      ['the key twice', { authorization: `Bearer ${A.key} ${A.key}` }],
      ['the key with one character more', bearer(`${A.key}x`)],
      ['the key without its last character', bearer(A.key.slice(0, -1))],
      ['the key upper-cased', bearer(A.key.toUpperCase())],
      ['the key id alone', bearer(`wsk_${idOf(A.key)}`)],
      ['a broken checksum', bearer(A.key.slice(0, -1) + (A.key.endsWith('A') ? 'B' : 'A'))],
      ['an unknown id (valid format)', bearer(issueKey().key)],
      ['the right id, a wrong secret (valid checksum)', bearer(forgeKey(idOf(A.key), secretOf(issueKey().key)))],
      ['a revoked key', bearer(revoked.key)],
      ['an expired key', bearer(expired.key)],
      ['a key rotated without grace', bearer(rotated.key)],
      ['the key in X-Api-Key', { 'x-api-key': A.key }],
      ['the key in the query string', {}, `api_key=${encodeURIComponent(A.key)}`],
    ];
    const routes: [string, string, Operation | null][] = [
      ...withHead().map(([m, op]): [string, string, Operation] => [m, pathOf(op), op]),
      ['GET', '/v2/nope', null],
      ['DELETE', `/v1/contacts/${valuesA.get('GET /v1/contacts/{id}')!.id}`, null],
    ];
    const beforeA = await fingerprint(server.db, A.id);
    const problems: string[] = [];
    let reference: string | undefined;
    for (const [method, path, op] of routes) {
      // The presentations of one route go out together; each answer is still checked on its own.
      const answers = await Promise.all(
        presented.map(([, headers, query]) => {
          const url = query ? `${path}?${query}` : path;
          const writes = op && isWrite(op) && method === op.method;
          return call(method, url, { headers, ...(writes ? { body: requestBody(op), idem: idem() } : {}) });
        }),
      );
      answers.forEach((r, i) => {
        figures.add('api2:refused');
        const where = `${method} ${path} with ${presented[i]![0]}`;
        if (r.status !== 401) return problems.push(`${where}: ${r.status} ${r.text.slice(0, 120)}`);
        if (!/^\d+$/.test(headerOf(r, 'ratelimit-remaining') ?? '')) problems.push(`${where}: no RateLimit headers`);
        if (method === 'HEAD') return;
        problems.push(...errorProblems(r, { status: 401, code: 'invalid_api_key' }).map((p) => `${where}: ${p}`));
        reference ??= withoutRequestId(r);
        if (withoutRequestId(r) !== reference) problems.push(`${where}: ${r.text} differs from ${reference}`);
      });
    }
    assert.deepEqual(problems, []);
    assert.deepEqual(changedTables(beforeA, await fingerprint(server.db, A.id)), [], 'a refused request changed A');
  });

  test('a suspended workspace answers 403 workspace_suspended on every route, with the same bytes, and nothing is stored', async () => {
    const C = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    await seedSmall(server, C.id);
    const valuesC = await pathValues(server, C.key, ops);
    await ownerCommands.setWorkspaceStatus(server.owner, { workspaceId: C.id, status: 'suspended' });
    await waitForStatus(C.key, 403);
    const beforeC = await fingerprint(server.db, C.id);
    const problems: string[] = [];
    let reference: string | undefined;
    for (const [method, op] of withHead()) {
      const r = await send(op, C.key, { method, values: valuesC.get(op.label)! });
      const where = `${method} ${op.template}`;
      if (r.status !== 403) problems.push(`${where}: ${r.status}`);
      if (method === 'HEAD') continue;
      problems.push(...errorProblems(r, { status: 403, code: 'workspace_suspended' }).map((p) => `${where}: ${p}`));
      reference ??= withoutRequestId(r);
      if (withoutRequestId(r) !== reference) problems.push(`${where}: ${r.text}`);
    }
    assert.deepEqual(problems, []);
    assert.deepEqual(changedTables(beforeC, await fingerprint(server.db, C.id)), []);
  });

  test('guessing keys is throttled per address: past the limit, 429 address_rate_limit_exceeded; valid keys are not affected', async () => {
    const limited = await startTestServer({ db: server.db, config: { unauthenticatedRateLimitPerMinute: 5 } });
    try {
      const guess = () =>
        limited.request('GET', '/v2/contacts', { key: forgeKey(idOf(A.key), secretOf(issueKey().key)) });
      for (let i = 0; i < 5; i++)
        assertErrorObject(await guess(), { status: 401, code: 'invalid_api_key' }, `guess ${i}`);
      for (let i = 0; i < 3; i++) {
        const r = await guess();
        remember('address-limited guess', r);
        assertErrorObject(r, { status: 429, code: 'address_rate_limit_exceeded' }, 'past the address limit');
        assert.match(r.headers.get('retry-after') ?? '', /^\d+$/);
      }
      // Without any key, too.
      assertErrorObject(await limited.request('GET', '/v2/contacts'), { status: 429 }, 'no key');
      // A valid key is counted on its own quota.
      assert.equal((await limited.request('GET', '/v2/contacts', { key: A.key })).status, 200);
    } finally {
      await limited.close();
    }
  });

  test('no log line of a run carries any key or secret it created, nor internal data', async () => {
    const { lines, stream } = logLines();
    const logged = await startTestServer({
      db: server.db,
      config: OPEN_ADDRESS_LIMIT,
      logger: { logger: { level: 'trace', stream } },
    });
    const keys: string[] = [];
    const requestIds: string[] = [];
    try {
      const w1 = await logged.workspace({ rateLimitPerMinute: 40 });
      const w2 = await logged.workspace({ scopes: ['contacts:read'] });
      await seedSmall(logged, w1.id, MARKER);
      const readOnly = await w1.newKey(['contacts:read']);
      const revoked = await w1.newKey([...SCOPES]);
      const expired = await w1.newKey([...SCOPES], { expiresInMs: 300 });
      const rotating = await w1.newKey([...SCOPES]);
      const { new_key: successor } = await ownerCommands.rotateKey(logged.owner, {
        keyId: rotating.id,
        graceMs: 60_000,
      });
      keys.push(w1.key, w2.key, readOnly.key, revoked.key, expired.key, rotating.key, successor.key);
      const wrong = keys.map((k) => forgeKey(idOf(k), secretOf(issueKey().key)));
      keys.push(...wrong);
      await ownerCommands.revokeKey(logged.owner, { keyId: revoked.id });
      await sleep(350);
      const contactId = (await logged.request('GET', '/v2/contacts?limit=1', { key: w1.key })).json.data[0].id;
      const requests: [string, string, RequestOptions][] = [];
      for (const k of keys) {
        requests.push(['GET', '/v2/contacts', { key: k }]);
        requests.push([
          'POST',
          '/v2/contacts',
          { key: k, body: { name: 'Logged', email: 'x@example.com' }, idem: idem() },
        ]);
        requests.push(['PATCH', `/v2/contacts/${contactId}`, { key: k, body: { notes: MARKER }, idem: idem() }]);
        requests.push(['GET', '/v2/events?limit=5', { key: k }]);
        requests.push(['GET', '/v1/nope', { key: k }]);
        requests.push(['GET', '/v2/contacts', { headers: { authorization: `Basic ${k}` } }]);
        requests.push(['GET', '/v2/contacts', { headers: { 'x-api-key': k } }]);
      }
      // and past the 40/min limit of w1's main key
      for (let i = 0; i < 45; i++) requests.push(['GET', `/v2/conversations?limit=1`, { key: w1.key }]);
      for (const [method, path, options] of requests) {
        const r = await logged.request(method, path, options);
        requestIds.push(r.headers.get('x-request-id') ?? '');
        remember(`logged ${method} ${path}`, r);
      }
    } finally {
      await logged.close();
    }
    assert.ok(lines.length >= requestIds.length, `${lines.length} log lines`);
    const missing = requestIds.filter((id) => !lines.some((l) => l.includes(id)));
    assert.deepEqual(missing, [], 'every request was logged (so the grep below looked at something)');
    const forbidden = new Set<string>([MARKER]);
    for (const k of keys) {
      const secret = secretOf(k);
      const digest = createHash('sha256').update(secret).digest();
      for (const f of [
        k,
        secret,
        secret.slice(0, 16),
        secret.slice(-16),
        digest.toString('hex'),
        digest.toString('base64'),
      ]) {
        forbidden.add(f);
      }
    }
    const leaks = lines.filter((l) => [...forbidden].some((f) => l.includes(f)));
    figures.add('api2:log-lines', lines.length);
    figures.add('api2:log-secrets', forbidden.size);
    assert.deepEqual(
      leaks.map((l) => l.slice(0, 300)),
      [],
      `${leaks.length} of ${lines.length} log lines carry a key, a secret, its digest or internal data`,
    );
  });

  test('a key sent by mistake in the URL (query or path) is not written to the logs', async () => {
    const { lines, stream } = logLines();
    const logged = await startTestServer({
      db: server.db,
      config: OPEN_ADDRESS_LIMIT,
      logger: { logger: { level: 'info', stream } },
    });
    const w = await logged.workspace();
    try {
      const inQuery = await logged.request('GET', `/v2/contacts?api_key=${w.key}`);
      const inPath = await logged.request('GET', `/v2/${w.key}`, { key: w.key });
      assert.equal(inQuery.status, 401);
      assert.equal(inPath.status, 404);
    } finally {
      await logged.close();
    }
    const leaks = lines.filter((l) => l.includes(secretOf(w.key)));
    if (leaks.length > 0) {
      figures.finding(
        'F-key-in-url-logged',
        `a key sent in the URL is logged verbatim by the request logger (${leaks.length} lines), e.g. ` +
          leaks[0]!.split(secretOf(w.key)).join('<the secret>').slice(0, 260),
      );
    }
  });
});

// ================================================================================================ API3

/** Properties no write body may carry: what the product keeps internally, and ownership. */

auditEveryAnswer(1000);
