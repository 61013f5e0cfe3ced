// Authentication and authorization through HTTP: one indistinguishable 401 for every bad credential,
// secrets stored only as digests, revocation/expiry/suspension/rotation seen by a running server
// (that already cached the key) within one second, the scope of each v1 operation, and the usage trail.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, test } from 'node:test';
import { buildApp, type BuiltApp } from '../src/app.js';
import { digestSecret, issueKey, KEY_PREFIX, parseKey } from '../src/modules/api-keys/key-format.js';
import { SCOPES, type Scope } from '../src/shared/scopes.js';
import { OwnerError, ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, sleep, testConfig, type TestResponse, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';
import { forgeKey } from './security/helpers.js';

// This file sends many refused requests on purpose; the per-address limit of requests without a valid
// key is the subject of rate-limit.test.ts, so it is set out of reach here.
const CONFIG = { unauthenticatedRateLimitPerMinute: 100_000 };

let ws: TestWorkspace;
const server = useTestServer({
  config: CONFIG,
  setup: async () => {
    ws = await server.workspace();
  },
});

// ------------------------------------------------------------------------------------------ helpers

// forgeKey (security/helpers.ts) writes a key of the published format from an id and a secret;
// the first test checks it against this module's own keys.

const get = (path: string, key?: string) => server.request('GET', path, key ? { key } : {});
const withAuthorization = (authorization: string, path = '/v1/contacts') =>
  server.request('GET', path, { headers: { authorization } });

/** The error body without request_id (which differs per request), as the exact bytes sent. */
function errorBytesWithoutRequestId(r: TestResponse): string {
  assert.equal(typeof r.json?.error?.request_id, 'string', r.text);
  assert.equal(r.json.error.request_id, r.headers.get('x-request-id'));
  return r.text.replace(r.json.error.request_id, '<request_id>');
}

function assertInvalidApiKey(r: TestResponse, label: string): void {
  assert.equal(r.status, 401, `${label}: ${r.text}`);
  assert.deepEqual(Object.keys(r.json), ['error'], label);
  assert.equal(r.json.error.type, 'authentication_error', label);
  assert.equal(r.json.error.code, 'invalid_api_key', label);
}

/**
 * Sends `send` until `done` holds or `withinMs` has passed since `since`; returns the last answer and
 * when (relative to `since`) the request that satisfied `done` was sent.
 */
async function pollUntil(
  send: () => Promise<TestResponse>,
  done: (r: TestResponse) => boolean,
  withinMs: number,
  since = Date.now(),
): Promise<{ response: TestResponse; ok: boolean; sentAfterMs: number }> {
  for (;;) {
    const sentAfterMs = Date.now() - since;
    const response = await send();
    if (done(response)) return { response, ok: true, sentAfterMs };
    if (Date.now() - since > withinMs) return { response, ok: false, sentAfterMs };
    await sleep(25);
  }
}

const is401 = (r: TestResponse) => r.status === 401;

// ------------------------------------------------------------------------------------- credentials

describe('invalid credentials', () => {
  test('the forged-key helper matches the key format of key-format.ts', () => {
    for (let i = 0; i < 20; i++) {
      const issued = issueKey();
      const parsed = parseKey(issued.key);
      assert.ok(parsed);
      assert.equal(forgeKey(parsed.id, parsed.secret), issued.key);
    }
  });

  test('missing, non-bearer, malformed, bad checksum, unknown, wrong secret, revoked, expired: one identical 401', async () => {
    const real = parseKey(ws.key)!;
    assert.ok(real);

    const wrongChecksum = ws.key.slice(0, -1) + (ws.key.endsWith('A') ? 'B' : 'A');
    assert.equal(parseKey(wrongChecksum), null);

    const unknown = issueKey(); // never inserted
    assert.ok(parseKey(unknown.key));

    const otherSecret = parseKey(issueKey().key)!.secret;
    const wrongSecret = forgeKey(real.id, otherSecret);
    assert.deepEqual(parseKey(wrongSecret), { id: real.id, secret: otherSecret }, 'valid checksum, same id');

    // Another real key's secret and checksum glued to this key's id: the checksum no longer matches.
    const second = await ws.newKey(['contacts:read']);
    const swapped = `${KEY_PREFIX}_${real.id}.${second.key.slice(KEY_PREFIX.length + 1 + 16 + 1)}`;
    assert.equal(swapped.length, ws.key.length);
    assert.equal(parseKey(swapped), null);

    const revoked = await ws.newKey(['contacts:read']);
    assert.equal((await get('/v1/contacts', revoked.key)).status, 200);
    await ownerCommands.revokeKey(server.owner, { keyId: revoked.id });

    const expired = await ws.newKey(['contacts:read'], { expiresInMs: 300 });
    await sleep(400);

    const cases: [string, () => Promise<TestResponse>][] = [
      ['no Authorization header', () => get('/v1/contacts')],
      ['Basic scheme', () => withAuthorization(`Basic ${Buffer.from(`${ws.key}:`).toString('base64')}`)],
      ['Basic scheme with the key itself', () => withAuthorization(`Basic ${ws.key}`)],
      ['Bearer not-a-key', () => withAuthorization('Bearer not-a-key')],
      ['Bearer with nothing after it', () => withAuthorization('Bearer ')],
      ['the key without a scheme', () => withAuthorization(ws.key)],
      ['well-formed key with a wrong checksum', () => get('/v1/contacts', wrongChecksum)],
      ['unknown id, valid checksum', () => get('/v1/contacts', unknown.key)],
      ['right id, wrong secret, valid checksum', () => get('/v1/contacts', wrongSecret)],
      ['right id, another key’s secret and checksum', () => get('/v1/contacts', swapped)],
      ['revoked key', () => get('/v1/contacts', revoked.key)],
      ['expired key', () => get('/v1/contacts', expired.key)],
    ];
    let reference: string | undefined;
    for (const [label, send] of cases) {
      const r = await send();
      assertInvalidApiKey(r, label);
      const bytes = errorBytesWithoutRequestId(r);
      reference ??= bytes;
      assert.equal(bytes, reference, `${label} differs from the first case`);
    }
    // The real key itself still works: the failures above are about the presented credential only.
    assert.equal((await get('/v1/contacts', ws.key)).status, 200);
  });

  test('the Bearer scheme is case-insensitive', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      const r = await withAuthorization(`${scheme} ${ws.key}`);
      assert.equal(r.status, 200, scheme);
    }
  });

  test('only a 32-byte SHA-256 digest of the secret is stored; the secret appears in no column', async () => {
    const k = await ws.newKey(['contacts:read']);
    const { secret, id } = parseKey(k.key)!;
    assert.equal(id, k.id);
    const { rows } = await server.db.query<{ n: number; digest: Uint8Array; row: string }>(
      'SELECT octet_length(secret_sha256) AS n, secret_sha256 AS digest, k::text AS row FROM api_keys k WHERE id = $1',
      [k.id],
    );
    assert.equal(rows.length, 1);
    const row = rows[0]!;
    assert.equal(row.n, 32);
    assert.ok(Buffer.from(row.digest).equals(digestSecret(secret)));
    assert.ok(!row.row.includes(secret), 'secret in clear');
    assert.ok(!row.row.includes(k.key), 'full key in clear');
    assert.ok(!row.row.toLowerCase().includes(Buffer.from(secret, 'utf8').toString('hex')), 'secret as bytes');
    assert.ok(row.row.includes(k.id), 'the public id is stored');
  });
});

// ----------------------------------------------------------------------- changes seen within 1 s

describe('revocation, expiry, suspension', () => {
  test('a revoked key is refused within 1 s by a server that already cached it', async () => {
    const k = await ws.newKey(['contacts:read']);
    assert.equal((await get('/v1/contacts', k.key)).status, 200);
    assert.equal((await get('/v1/contacts', k.key)).status, 200);
    const revoked = await ownerCommands.revokeKey(server.owner, { keyId: k.id });
    assert.ok(revoked.revoked_at);
    const r = await pollUntil(() => get('/v1/contacts', k.key), is401, 1_000);
    assert.ok(r.ok, `still ${r.response.status} after 1 s`);
    assert.ok(r.sentAfterMs <= 1_000);
    assertInvalidApiKey(r.response, 'revoked');
    // Revoking again is harmless and keeps the first revocation time.
    const again = await ownerCommands.revokeKey(server.owner, { keyId: k.id });
    assert.equal(again.revoked_at, revoked.revoked_at);
  });

  test('another server process over the same database also refuses a revoked key within 1 s', async () => {
    const other: BuiltApp = await buildApp(testConfig(CONFIG), server.db, { logger: false });
    try {
      const address = await other.app.listen({ port: 0, host: '127.0.0.1' });
      const viaOther = async (key: string): Promise<TestResponse> => {
        const res = await fetch(`${address}/v1/contacts`, { headers: { authorization: `Bearer ${key}` } });
        const text = await res.text();
        return { status: res.status, headers: res.headers, text, json: JSON.parse(text) };
      };
      const k = await ws.newKey(['contacts:read']);
      assert.equal((await viaOther(k.key)).status, 200);
      assert.equal((await get('/v1/contacts', k.key)).status, 200);
      await ownerCommands.revokeKey(server.owner, { keyId: k.id });
      const since = Date.now();
      const [a, b] = await Promise.all([
        pollUntil(() => viaOther(k.key), is401, 1_000, since),
        pollUntil(() => get('/v1/contacts', k.key), is401, 1_000, since),
      ]);
      assert.ok(a.ok, `other process still ${a.response.status} after 1 s`);
      assert.ok(b.ok, `test server still ${b.response.status} after 1 s`);
    } finally {
      await other.close();
    }
  });

  test('an expired key is refused once its expiry passes, even though it was cached', async () => {
    const k = await ws.newKey(['contacts:read'], { expiresInMs: 800 });
    const created = Date.now();
    assert.equal((await get('/v1/contacts', k.key)).status, 200);
    await sleep(Math.max(0, created + 800 - Date.now()));
    const r = await pollUntil(() => get('/v1/contacts', k.key), is401, 1_000);
    assert.ok(r.ok, `still ${r.response.status} 1 s after expiry`);
    assertInvalidApiKey(r.response, 'expired');
    const listed = (await ownerCommands.listKeys(server.owner, { workspaceId: ws.id })).find((x) => x.id === k.id);
    assert.equal(listed?.status, 'expired');
  });

  test('suspension gives 403 workspace_suspended within 1 s; resuming gives 200 again within 1 s', async () => {
    const w = await server.workspace({ scopes: ['contacts:read'] });
    assert.equal((await get('/v1/contacts', w.key)).status, 200);

    await ownerCommands.setWorkspaceStatus(server.owner, { workspaceId: w.id, status: 'suspended' });
    const suspended = await pollUntil(
      () => get('/v1/contacts', w.key),
      (r) => r.status === 403,
      1_000,
    );
    assert.ok(suspended.ok, `still ${suspended.response.status} after 1 s`);
    assert.equal(suspended.response.json.error.type, 'permission_error');
    assert.equal(suspended.response.json.error.code, 'workspace_suspended');
    // Suspension is about the workspace, not the key: a key of that workspace made now is refused too.
    const fresh = await w.newKey(['contacts:read']);
    assert.equal((await get('/v1/contacts', fresh.key)).json.error.code, 'workspace_suspended');
    // Other workspaces are not affected.
    assert.equal((await get('/v1/contacts', ws.key)).status, 200);

    await ownerCommands.setWorkspaceStatus(server.owner, { workspaceId: w.id, status: 'active' });
    const resumed = await pollUntil(
      () => get('/v1/contacts', w.key),
      (r) => r.status === 200,
      1_000,
    );
    assert.ok(resumed.ok, `still ${resumed.response.status} 1 s after resuming`);
  });
});

describe('rotation', () => {
  test('the new key works at once and the old key keeps working during the grace period', async () => {
    const old = await ws.newKey(['contacts:read', 'appointments:read'], { rateLimitPerMinute: 77 });
    assert.equal((await get('/v1/contacts', old.key)).status, 200);
    const { new_key, old_key } = await ownerCommands.rotateKey(server.owner, { keyId: old.id, graceMs: 60_000 });
    assert.notEqual(new_key.id, old.id);
    assert.notEqual(new_key.key, old.key);
    assert.deepEqual([...new_key.scopes].sort(), ['appointments:read', 'contacts:read']);
    assert.equal(new_key.rate_limit_per_minute, 77);
    assert.equal(new_key.workspace_id, ws.id);
    assert.equal(old_key.rotated_to, new_key.id);
    const left = Date.parse(old_key.expires_at!) - Date.now();
    assert.ok(left > 50_000 && left <= 60_000, `old key expires in ${left} ms`);

    assert.equal((await get('/v1/contacts', new_key.key)).status, 200);
    assert.equal((await get('/v1/appointments', new_key.key)).status, 200);
    await sleep(300); // past the invalidation: the old key is still inside its grace period
    assert.equal((await get('/v1/contacts', old.key)).status, 200);
    assert.equal((await get('/v1/contacts', new_key.key)).status, 200);
  });

  test('with graceMs 0 the old key stops within 1 s; with a short grace it stops soon after it', async () => {
    const now = await ws.newKey(['contacts:read']);
    assert.equal((await get('/v1/contacts', now.key)).status, 200);
    const r0 = await ownerCommands.rotateKey(server.owner, { keyId: now.id, graceMs: 0 });
    const stopped = await pollUntil(() => get('/v1/contacts', now.key), is401, 1_000);
    assert.ok(stopped.ok, `old key still ${stopped.response.status} 1 s after rotation with graceMs 0`);
    assertInvalidApiKey(stopped.response, 'rotated, no grace');
    assert.equal((await get('/v1/contacts', r0.new_key.key)).status, 200);

    const soon = await ws.newKey(['contacts:read']);
    assert.equal((await get('/v1/contacts', soon.key)).status, 200);
    const rotatedAt = Date.now();
    const r1 = await ownerCommands.rotateKey(server.owner, { keyId: soon.id, graceMs: 400 });
    const ended = await pollUntil(() => get('/v1/contacts', soon.key), is401, 1_400, rotatedAt);
    assert.ok(ended.ok, `old key still ${ended.response.status} 1 s after a 400 ms grace period`);
    assert.equal((await get('/v1/contacts', r1.new_key.key)).status, 200);
  });

  test('rotation never lengthens the life of a key that expires before the grace period ends', async () => {
    const k = await ws.newKey(['contacts:read'], { expiresInMs: 600 });
    const created = Date.now();
    assert.equal((await get('/v1/contacts', k.key)).status, 200);
    const { new_key, old_key } = await ownerCommands.rotateKey(server.owner, { keyId: k.id, graceMs: 60_000 });
    assert.ok(Date.parse(old_key.expires_at!) <= created + 600 + 1_000, `old key now expires at ${old_key.expires_at}`);
    assert.equal((await get('/v1/contacts', new_key.key)).status, 200);
    await sleep(Math.max(0, created + 600 - Date.now()));
    const r = await pollUntil(() => get('/v1/contacts', k.key), is401, 1_000);
    assert.ok(r.ok, `old key still ${r.response.status} after its own expiry`);
  });

  test('a revoked or already-retired key cannot be rotated (OwnerError)', async () => {
    const k = await ws.newKey(['contacts:read']);
    await ownerCommands.revokeKey(server.owner, { keyId: k.id });
    await assert.rejects(ownerCommands.rotateKey(server.owner, { keyId: k.id, graceMs: 0 }), OwnerError);

    const j = await ws.newKey(['contacts:read']);
    await ownerCommands.rotateKey(server.owner, { keyId: j.id, graceMs: 0 });
    await assert.rejects(ownerCommands.rotateKey(server.owner, { keyId: j.id, graceMs: 0 }), OwnerError);

    await assert.rejects(ownerCommands.rotateKey(server.owner, { keyId: 'nope', graceMs: 0 }), OwnerError);
    await assert.rejects(ownerCommands.rotateKey(server.owner, { keyId: ws.keyId, graceMs: -1 }), OwnerError);
  });
});

// ------------------------------------------------------------------------------------------ scopes

describe('scopes', () => {
  let contactId: string;
  let appointmentId: string;

  before(async () => {
    const c = await server.request('POST', '/v1/contacts', { key: ws.key, body: contactBody(), idem: idem() });
    assert.equal(c.status, 201);
    contactId = c.json.data.id;
    await ownerCommands.seed(server.owner, { workspaceId: ws.id, amounts: { contacts: 2, appointments: 3 } });
    const a = await get('/v1/appointments?limit=1', ws.key);
    assert.equal(a.status, 200);
    appointmentId = a.json.data[0].id;
  });

  const operations: {
    operation: string;
    scope: Scope;
    success: number[];
    send: (key: string) => Promise<TestResponse>;
  }[] = [
    { operation: 'listContacts', scope: 'contacts:read', success: [200], send: (key) => get('/v1/contacts', key) },
    {
      operation: 'getContact',
      scope: 'contacts:read',
      success: [200],
      send: (key) => get(`/v1/contacts/${contactId}`, key),
    },
    {
      operation: 'createContact',
      scope: 'contacts:write',
      success: [201],
      send: (key) => server.request('POST', '/v1/contacts', { key, body: contactBody(), idem: idem() }),
    },
    {
      operation: 'updateContact',
      scope: 'contacts:write',
      success: [200],
      send: (key) =>
        server.request('PATCH', `/v1/contacts/${contactId}`, {
          key,
          body: { name: `Renamed ${randomUUID().slice(0, 6)}` },
          idem: idem(),
        }),
    },
    {
      operation: 'upsertContactByExternalId',
      scope: 'contacts:write',
      success: [200, 201],
      send: (key) =>
        server.request('PUT', `/v1/contacts/external/ext-${randomUUID()}`, {
          key,
          body: contactBody(),
          idem: idem(),
        }),
    },
    {
      operation: 'listAppointments',
      scope: 'appointments:read',
      success: [200],
      send: (key) => get('/v1/appointments', key),
    },
    {
      operation: 'getAppointment',
      scope: 'appointments:read',
      success: [200],
      send: (key) => get(`/v1/appointments/${appointmentId}`, key),
    },
  ];

  for (const op of operations) {
    test(`${op.operation}: ${op.scope} alone suffices; every other scope together gets 403 insufficient_scope`, async () => {
      const only = await ws.newKey([op.scope]);
      const ok = await op.send(only.key);
      assert.ok(op.success.includes(ok.status), `${op.operation} with ${op.scope}: ${ok.status} ${ok.text}`);

      const others = await ws.newKey(SCOPES.filter((s) => s !== op.scope));
      const denied = await op.send(others.key);
      assert.equal(denied.status, 403, denied.text);
      assert.equal(denied.json.error.type, 'permission_error');
      assert.equal(denied.json.error.code, 'insufficient_scope');
      assert.deepEqual(denied.json.error.details, { required_scope: op.scope });
    });
  }

  test('contacts:write alone cannot read contacts', async () => {
    const writer = await ws.newKey(['contacts:write']);
    for (const path of ['/v1/contacts', `/v1/contacts/${contactId}`]) {
      const r = await get(path, writer.key);
      assert.equal(r.status, 403, path);
      assert.equal(r.json.error.code, 'insufficient_scope');
      assert.equal(r.json.error.details.required_scope, 'contacts:read');
    }
  });

  test('a refused write changes nothing', async () => {
    const reader = await ws.newKey(['contacts:read']);
    const before = await get(`/v1/contacts/${contactId}`, ws.key);
    const r = await server.request('PATCH', `/v1/contacts/${contactId}`, {
      key: reader.key,
      body: { name: 'Should not be stored' },
      idem: idem(),
    });
    assert.equal(r.status, 403);
    assert.deepEqual((await get(`/v1/contacts/${contactId}`, ws.key)).json, before.json);
  });

  test('an unknown path is 404 not_found with a valid key and 401 without one', async () => {
    const withKey = await get('/v1/no-such-thing', ws.key);
    assert.equal(withKey.status, 404);
    assert.equal(withKey.json.error.type, 'not_found');
    assert.equal(withKey.json.error.code, 'route_not_found');
    const reader = await ws.newKey(['contacts:read']);
    assert.equal((await get('/v1/no-such-thing', reader.key)).status, 404);
    const without = await get('/v1/no-such-thing');
    assertInvalidApiKey(without, 'unknown path without key');
    assertInvalidApiKey(await get('/v1/no-such-thing', issueKey().key), 'unknown path with unknown key');
  });
});

// ------------------------------------------------------------------------------------- usage trail

describe('usage trail', () => {
  test('listKeys and keyUsage report requests per operation, client errors included', async () => {
    const w = await server.workspace();
    const before = Date.now();
    for (let i = 0; i < 3; i++) assert.equal((await get('/v1/contacts', w.key)).status, 200);
    assert.equal((await get(`/v1/contacts/${randomUUID()}`, w.key)).status, 404);
    const invalid = await server.request('POST', '/v1/contacts', { key: w.key, body: { name: 42 }, idem: idem() });
    assert.equal(invalid.status, 422);
    assert.equal((await get('/v1/no-such-thing', w.key)).status, 404);
    // Refused credentials are not a key's usage.
    assert.equal((await get('/v1/contacts', forgeKey(w.keyId, parseKey(issueKey().key)!.secret))).status, 401);

    await server.built.services.usage.flush();

    const keys = await ownerCommands.listKeys(server.owner, { workspaceId: w.id });
    assert.equal(keys.length, 1);
    const k = keys[0]!;
    assert.equal(k.id, w.keyId);
    assert.equal(k.status, 'active');
    assert.equal(k.requests_today, 6);
    assert.equal(k.requests_last_7_days, 6);
    assert.ok(k.last_used_at, 'last_used_at is set');
    assert.ok(Date.parse(k.last_used_at) >= before - 1_000 && Date.parse(k.last_used_at) <= Date.now() + 1_000);
    assert.ok(!('secret_sha256' in k), 'listKeys does not expose the digest');

    const { key, usage } = await ownerCommands.keyUsage(server.owner, { keyId: w.keyId });
    assert.equal(key.id, w.keyId);
    const byOperation = Object.fromEntries(
      usage.map((u) => [u.operation, [u.requests, u.client_errors, u.server_errors, u.rate_limited]]),
    );
    assert.deepEqual(byOperation, {
      listContacts: [3, 0, 0, 0],
      getContact: [1, 1, 0, 0],
      createContact: [1, 1, 0, 0],
      unmatched: [1, 1, 0, 0],
    });
    const today = new Date().toISOString().slice(0, 10);
    assert.ok(usage.every((u) => u.day === today));

    // Counts accumulate across flushes.
    assert.equal((await get('/v1/contacts', w.key)).status, 200);
    await server.built.services.usage.flush();
    const again = await ownerCommands.keyUsage(server.owner, { keyId: w.keyId });
    assert.equal(again.usage.find((u) => u.operation === 'listContacts')?.requests, 4);

    await assert.rejects(ownerCommands.keyUsage(server.owner, { keyId: 'nope' }), OwnerError);
  });
});
