// Idempotent writes (spec 4.1.4, 8): replays, collisions, scope of a key, what is and is not stored,
// concurrent duplicates, expiry and purge, and the error object of every refusal.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { contactBody, idem, STORE, type TestResponse, type TestWorkspace, UNKNOWN_ID } from './harness.js';
import { useTestServer } from './test-server.js';

let ws: TestWorkspace;
const server = useTestServer({
  setup: async () => {
    ws = await server.workspace();
  },
});

const post = (body: unknown, key: string, w: TestWorkspace = ws) =>
  server.request('POST', '/v1/contacts', { key: w.key, body, idem: key });
const patch = (id: string, body: unknown, key: string, w: TestWorkspace = ws) =>
  server.request('PATCH', `/v1/contacts/${id}`, { key: w.key, body, idem: key });
const put = (externalId: string, body: unknown, key: string, w: TestWorkspace = ws) =>
  server.request('PUT', `/v1/contacts/external/${externalId}`, { key: w.key, body, idem: key });

async function createContact(w: TestWorkspace = ws): Promise<any> {
  const r = await post(contactBody(), idem(), w);
  assert.equal(r.status, 201);
  return r.json.data;
}

async function storedKeys(workspaceId: string, key: string): Promise<number> {
  const { rows } = await server.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM idempotency_keys WHERE workspace_id = $1 AND key = $2',
    [workspaceId, key],
  );
  return rows[0]!.n;
}

async function contactsWithEmail(workspaceId: string, email: string): Promise<number> {
  const { rows } = await server.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND email = $2',
    [workspaceId, email],
  );
  return rows[0]!.n;
}

const replayed = (r: TestResponse) => r.headers.get('idempotent-replayed');

/** The spec's error object (section 7): exactly these members, request_id echoing X-Request-Id. */
function assertError(r: TestResponse, status: number, type: string, code: string): void {
  assert.equal(r.status, status, r.text);
  assert.deepEqual(Object.keys(r.json), ['error']);
  const members = Object.keys(r.json.error).sort();
  assert.deepEqual(
    members.filter((k) => k !== 'details'),
    ['code', 'message', 'request_id', 'type'],
  );
  assert.equal(r.json.error.type, type);
  assert.equal(r.json.error.code, code);
  assert.equal(typeof r.json.error.message, 'string');
  assert.ok(r.json.error.message.length > 0);
  const requestId = r.headers.get('x-request-id');
  assert.ok(requestId, 'X-Request-Id header');
  assert.equal(r.json.error.request_id, requestId);
  assert.equal(replayed(r), null, 'an error is never marked as a replay');
}

/** A replay repeats the first answer byte for byte and marks it; the first answer is not marked. */
function assertReplayOf(replay: TestResponse, first: TestResponse): void {
  assert.equal(replayed(first), null, 'the first response carries no Idempotent-Replayed');
  assert.equal(replay.status, first.status);
  assert.equal(replayed(replay), 'true');
  assert.equal(replay.text, first.text);
  assert.deepEqual(replay.json, first.json);
}

describe('replay', () => {
  test('POST: the same key and body returns the first 201 and body, marked, and creates nothing more', async () => {
    const body = contactBody();
    const key = idem();
    const first = await post(body, key);
    assert.equal(first.status, 201);
    const again = await post(body, key);
    const third = await post(body, key);
    assertReplayOf(again, first);
    assertReplayOf(third, first);
    assert.equal(await contactsWithEmail(ws.id, body.email), 1);
    assert.equal(await storedKeys(ws.id, key), 1);
  });

  test('a replay returns the first body even after the contact changed since', async () => {
    const body = contactBody();
    const key = idem();
    const first = await post(body, key);
    assert.equal(first.status, 201);
    const changed = await patch(first.json.data.id, { name: 'Changed Since' }, idem());
    assert.equal(changed.status, 200);
    const replay = await post(body, key);
    assertReplayOf(replay, first);
    assert.equal(replay.json.data.name, body.name);
    const current = await server.request('GET', `/v1/contacts/${first.json.data.id}`, { key: ws.key });
    assert.equal(current.json.data.name, 'Changed Since', 'the replay did not write again');
  });

  test('a replay answers the recorded bytes, whatever the response schema would write today', async () => {
    const body = contactBody();
    const key = idem();
    const first = await post(body, key);
    assert.equal(first.status, 201);
    // The bytes as recorded, here with a space the route's serializer never writes: a replay sends
    // them as they are, so an answer recorded before a change of the response schema replays as it was.
    const recorded = first.text.replace('{"data":', '{"data": ');
    assert.notEqual(recorded, first.text);
    await server.db.query(`UPDATE idempotency_keys SET response_body = $3 WHERE workspace_id = $1 AND key = $2`, [
      ws.id,
      key,
      recorded,
    ]);
    const replay = await post(body, key);
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.text, recorded);
  });

  test('PATCH: the same key, id and body replays the first 200 and leaves updated_at alone', async () => {
    const c = await createContact();
    const key = idem();
    const first = await patch(c.id, { name: 'Patched Once', status: 'meeting' }, key);
    assert.equal(first.status, 200);
    assert.equal(first.json.data.name, 'Patched Once');
    // another write in between, so a re-execution would be visible
    assert.equal((await patch(c.id, { name: 'Someone Else' }, idem())).status, 200);
    const replay = await patch(c.id, { name: 'Patched Once', status: 'meeting' }, key);
    assertReplayOf(replay, first);
    const current = await server.request('GET', `/v1/contacts/${c.id}`, { key: ws.key });
    assert.equal(current.json.data.name, 'Someone Else');
  });

  test('PUT upsert: a replay answers 201 again although the contact now exists; a new key answers 200', async () => {
    const ext = `idem-put-${idem()}`;
    const key = idem();
    const first = await put(ext, { name: 'Upserted', email: 'upserted@example.com' }, key);
    assert.equal(first.status, 201);
    const replay = await put(ext, { name: 'Upserted', email: 'upserted@example.com' }, key);
    assertReplayOf(replay, first);
    const fresh = await put(ext, { name: 'Upserted', email: 'upserted@example.com' }, idem());
    assert.equal(fresh.status, 200);
    assert.equal(replayed(fresh), null);
    assert.equal(fresh.json.data.id, first.json.data.id);
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND external_id = $2',
      [ws.id, ext],
    );
    assert.equal(rows[0]!.n, 1);
  });

  test('the same body with other key order and white space is the same request (replay)', async () => {
    const email = `order.${idem()}@example.com`.toLowerCase();
    const key = idem();
    const first = await server.request('POST', '/v1/contacts', {
      key: ws.key,
      idem: key,
      raw: `{"name":"Key Order","email":"${email}","status":"talking"}`,
    });
    assert.equal(first.status, 201);
    const reordered = await server.request('POST', '/v1/contacts', {
      key: ws.key,
      idem: key,
      raw: `{\n  "status" : "talking",\n\t"email":  "${email}" ,  "name":"Key Order"\n}\n`,
    });
    assertReplayOf(reordered, first);
    assert.equal(await contactsWithEmail(ws.id, email), 1);
  });

  test('keys belong to the workspace, not to the API key: another key of the workspace replays', async () => {
    const other = await ws.newKey(['contacts:write']);
    const body = contactBody();
    const key = idem();
    const first = await post(body, key);
    assert.equal(first.status, 201);
    const viaOtherKey = await server.request('POST', '/v1/contacts', { key: other.key, body, idem: key });
    assertReplayOf(viaOtherKey, first);
    assert.equal(await contactsWithEmail(ws.id, body.email), 1);
  });
});

describe('collisions: the same key with a different request is 409 idempotency_key_reused', () => {
  test('different body', async () => {
    const key = idem();
    const body = contactBody();
    const first = await post(body, key);
    assert.equal(first.status, 201);
    const other = contactBody();
    const r = await post(other, key);
    assertError(r, 409, 'idempotency_error', 'idempotency_key_reused');
    assert.equal(await contactsWithEmail(ws.id, other.email), 0);
    // a collision does not replace what was stored: the first request still replays
    assertReplayOf(await post(body, key), first);
  });

  test('a body that differs only by one property value', async () => {
    const key = idem();
    const body = contactBody();
    assert.equal((await post(body, key)).status, 201);
    assertError(await post({ ...body, status: 'lost' }, key), 409, 'idempotency_error', 'idempotency_key_reused');
    const withoutStatus: Record<string, unknown> = { ...body };
    delete withoutStatus.status;
    assertError(await post(withoutStatus, key), 409, 'idempotency_error', 'idempotency_key_reused');
  });

  test('different path: the same PATCH on another contact', async () => {
    const a = await createContact();
    const b = await createContact();
    const key = idem();
    const first = await patch(a.id, { origin: 'path-test' }, key);
    assert.equal(first.status, 200);
    const r = await patch(b.id, { origin: 'path-test' }, key);
    assertError(r, 409, 'idempotency_error', 'idempotency_key_reused');
    const untouched = await server.request('GET', `/v1/contacts/${b.id}`, { key: ws.key });
    assert.equal(untouched.json.data.origin, b.origin);
  });

  test('different path: the same PUT on another external_id', async () => {
    const key = idem();
    const first = await put(`ext-a-${idem()}`, { name: 'A' }, key);
    assert.equal(first.status, 201);
    const otherExt = `ext-b-${idem()}`;
    assertError(await put(otherExt, { name: 'A' }, key), 409, 'idempotency_error', 'idempotency_key_reused');
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND external_id = $2',
      [ws.id, otherExt],
    );
    assert.equal(rows[0]!.n, 0);
  });

  test('different method: a POST key reused on PATCH (and on PUT)', async () => {
    const key = idem();
    const body = contactBody();
    const created = await post(body, key);
    assert.equal(created.status, 201);
    const r = await patch(created.json.data.id, { name: 'Via Patch' }, key);
    assertError(r, 409, 'idempotency_error', 'idempotency_key_reused');
    assertError(
      await put(`ext-${idem()}`, { name: 'Via Put' }, key),
      409,
      'idempotency_error',
      'idempotency_key_reused',
    );
    const current = await server.request('GET', `/v1/contacts/${created.json.data.id}`, { key: ws.key });
    assert.equal(current.json.data.name, body.name);
  });
});

describe('scope and storage of a key', () => {
  test('the same key string in two workspaces gives two independent 201s', async () => {
    const other = await server.workspace();
    const key = idem();
    const body = contactBody();
    const a = await post(body, key, ws);
    const b = await post(body, key, other);
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.equal(replayed(a), null);
    assert.equal(replayed(b), null);
    assert.notEqual(a.json.data.id, b.json.data.id);
    assert.equal(await contactsWithEmail(ws.id, body.email), 1);
    assert.equal(await contactsWithEmail(other.id, body.email), 1);
    assert.equal(await storedKeys(ws.id, key), 1);
    assert.equal(await storedKeys(other.id, key), 1);
    // and a different body in the second workspace collides only there
    assertError(await post(contactBody(), key, other), 409, 'idempotency_error', 'idempotency_key_reused');
    assertReplayOf(await post(body, key, ws), a);
  });

  test('a record is kept 48 hours', async () => {
    const key = idem();
    assert.equal((await post(contactBody(), key)).status, 201);
    const { rows } = await server.db.query<{ seconds: number }>(
      `SELECT extract(epoch FROM expires_at - created_at)::int AS seconds
         FROM idempotency_keys WHERE workspace_id = $1 AND key = $2`,
      [ws.id, key],
    );
    assert.equal(rows[0]!.seconds, 48 * 3600);
  });

  test('a record 47 hours old still replays', async () => {
    const key = idem();
    const body = contactBody();
    const first = await post(body, key);
    assert.equal(first.status, 201);
    await server.db.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '47 hours', expires_at = now() + interval '1 hour'
        WHERE workspace_id = $1 AND key = $2`,
      [ws.id, key],
    );
    assertReplayOf(await post(body, key), first);
    assertError(await post(contactBody(), key), 409, 'idempotency_error', 'idempotency_key_reused');
  });

  test('a 422 with a key is not stored: the same key with a fixed body gives 201', async () => {
    const key = idem();
    const bad = await post({ name: 'No Channel' }, key);
    assertError(bad, 422, 'validation_error', 'validation_failed');
    assert.equal(await storedKeys(ws.id, key), 0);
    const again = await post({ name: 'No Channel' }, key);
    assertError(again, 422, 'validation_error', 'validation_failed');
    const body = contactBody();
    const fixed = await post(body, key);
    assert.equal(fixed.status, 201);
    assert.equal(replayed(fixed), null);
    assert.equal(await contactsWithEmail(ws.id, body.email), 1);
    assert.equal(await storedKeys(ws.id, key), 1);
  });

  test('malformed JSON (400) and a non-JSON body (415) with a key are not stored either', async () => {
    const key = idem();
    const malformed = await server.request('POST', '/v1/contacts', { key: ws.key, idem: key, raw: '{"name":' });
    assertError(malformed, 400, 'invalid_request', 'invalid_json');
    const text = await server.request('POST', '/v1/contacts', {
      key: ws.key,
      idem: key,
      raw: JSON.stringify(contactBody()),
      contentType: 'text/plain',
    });
    assertError(text, 415, 'invalid_request', 'unsupported_media_type');
    assert.equal(await storedKeys(ws.id, key), 0);
    const ok = await post(contactBody(), key);
    assert.equal(ok.status, 201);
    assert.equal(replayed(ok), null);
  });

  test('a PATCH that is 404 is not stored: the same key on an existing contact gives 200', async () => {
    const key = idem();
    const missing = await patch(UNKNOWN_ID, { name: 'Ghost' }, key);
    assertError(missing, 404, 'not_found', 'resource_not_found');
    assert.equal(await storedKeys(ws.id, key), 0);
    // retrying the failed request executes it again (still 404), it is not a replay of a 404
    assertError(await patch(UNKNOWN_ID, { name: 'Ghost' }, key), 404, 'not_found', 'resource_not_found');
    const c = await createContact();
    const ok = await patch(c.id, { name: 'Ghost' }, key);
    assert.equal(ok.status, 200);
    assert.equal(replayed(ok), null);
    assert.equal(ok.json.data.name, 'Ghost');
    assert.equal(await storedKeys(ws.id, key), 1);
  });

  test('a contact of another workspace is 404 and leaves the key free', async () => {
    const other = await server.workspace();
    const foreign = await createContact(other);
    const key = idem();
    assertError(await patch(foreign.id, { name: 'Steal' }, key), 404, 'not_found', 'resource_not_found');
    const mine = await createContact();
    assert.equal((await patch(mine.id, { name: 'Steal' }, key)).status, 200);
  });
});

describe('concurrent duplicates', () => {
  test('twenty identical POSTs at once create exactly one contact', async () => {
    const w = await server.workspace();
    const body = contactBody();
    const key = idem();
    const results = await Promise.all(Array.from({ length: 20 }, () => post(body, key, w)));
    const created = results.filter((r) => r.status === 201);
    const inUse = results.filter((r) => r.status === 409);
    assert.equal(created.length + inUse.length, 20, results.map((r) => `${r.status} ${r.text}`).join('\n'));
    assert.ok(created.length >= 1);
    assert.equal(new Set(created.map((r) => r.json.data.id)).size, 1);
    assert.equal(new Set(created.map((r) => r.text)).size, 1, 'every 201 carries the same body');
    assert.equal(created.filter((r) => replayed(r) === null).length, 1, 'exactly one request executed');
    for (const r of inUse) {
      assertError(r, 409, 'idempotency_error', 'idempotency_key_in_use');
      assert.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    }
    assert.equal(await contactsWithEmail(w.id, body.email), 1);
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
      [w.id],
    );
    assert.equal(rows[0]!.n, 1);
    assert.equal(await storedKeys(w.id, key), 1);
    // once the burst is over, a retry replays the one contact
    const retry = await post(body, key, w);
    assert.equal(retry.status, 201);
    assert.equal(replayed(retry), 'true');
    assert.equal(retry.json.data.id, created[0]!.json.data.id);
  });

  test('parallel PATCHes with the same key have one effect', async () => {
    const w = await server.workspace();
    const c = await createContact(w);
    const key = idem();
    const body = { name: 'Parallel Patch', status: 'qualified_conversation' };
    const results = await Promise.all(Array.from({ length: 12 }, () => patch(c.id, body, key, w)));
    const ok = results.filter((r) => r.status === 200);
    const inUse = results.filter((r) => r.status === 409);
    assert.equal(ok.length + inUse.length, 12, results.map((r) => `${r.status} ${r.text}`).join('\n'));
    assert.equal(ok.filter((r) => replayed(r) === null).length, 1, 'exactly one request executed');
    assert.equal(new Set(ok.map((r) => r.text)).size, 1, 'every 200 carries the same body');
    for (const r of inUse) {
      assertError(r, 409, 'idempotency_error', 'idempotency_key_in_use');
      assert.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    }
    const current = await server.request('GET', `/v1/contacts/${c.id}`, { key: w.key });
    assert.deepEqual(current.json.data, ok[0]!.json.data);
    assert.equal(await storedKeys(w.id, key), 1);
  });

  test('parallel upserts with the same key create one contact', async () => {
    const w = await server.workspace();
    const ext = `burst-${idem()}`;
    const key = idem();
    const results = await Promise.all(Array.from({ length: 12 }, () => put(ext, { name: 'Burst' }, key, w)));
    const ok = results.filter((r) => r.status === 201);
    const inUse = results.filter((r) => r.status === 409);
    assert.equal(ok.length + inUse.length, 12, results.map((r) => `${r.status} ${r.text}`).join('\n'));
    assert.equal(ok.filter((r) => replayed(r) === null).length, 1);
    for (const r of inUse) assertError(r, 409, 'idempotency_error', 'idempotency_key_in_use');
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
      [w.id],
    );
    assert.equal(rows[0]!.n, 1);
  });
});

describe('expiry and purge', () => {
  test('after expiry the key is free: a different body is accepted (201) and then replays', async () => {
    const key = idem();
    const firstBody = contactBody();
    const first = await post(firstBody, key);
    assert.equal(first.status, 201);
    const secondBody = contactBody();
    assertError(await post(secondBody, key), 409, 'idempotency_error', 'idempotency_key_reused');
    const expired = await server.db.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE workspace_id = $1 AND key = $2`,
      [ws.id, key],
    );
    assert.equal(expired.rowCount, 1);
    const second = await post(secondBody, key);
    assert.equal(second.status, 201);
    assert.equal(replayed(second), null);
    assert.notEqual(second.json.data.id, first.json.data.id);
    assert.equal(await contactsWithEmail(ws.id, secondBody.email), 1);
    // the key now belongs to the second request
    assertReplayOf(await post(secondBody, key), second);
    assertError(await post(firstBody, key), 409, 'idempotency_error', 'idempotency_key_reused');
    assert.equal(await storedKeys(ws.id, key), 1);
  });

  test('an expired record is not replayed even for the identical request', async () => {
    const key = idem();
    const body = contactBody();
    assert.equal((await post(body, key)).status, 201);
    await server.db.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE workspace_id = $1 AND key = $2`,
      [ws.id, key],
    );
    const again = await post(body, key);
    assert.equal(again.status, 201);
    assert.equal(replayed(again), null);
    assert.equal(await contactsWithEmail(ws.id, body.email), 2);
  });

  test('purgeExpired deletes expired records and keeps live ones', async () => {
    const w = await server.workspace();
    const dead = [idem(), idem(), idem()];
    const live = idem();
    for (const key of [...dead, live]) assert.equal((await post(contactBody(), key, w)).status, 201);
    await server.db.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE workspace_id = $1 AND key = ANY($2)`,
      [w.id, dead],
    );
    const purged = await server.built.services.idempotency.purgeExpired();
    // The embedded store is this file's alone; the PostgreSQL one is shared with other runs, whose
    // own purges may take some of these rows first, so only its outcome is asserted there.
    if (STORE === 'embedded') assert.equal(purged, dead.length);
    else assert.ok(Number.isInteger(purged) && purged >= 0, `purged ${purged}`);
    const { rows } = await server.db.query<{ key: string }>(
      'SELECT key FROM idempotency_keys WHERE workspace_id = $1 ORDER BY key',
      [w.id],
    );
    assert.deepEqual(
      rows.map((r) => r.key),
      [live],
    );
    // small batches still delete everything
    const more = [idem(), idem(), idem()];
    for (const key of more) assert.equal((await post(contactBody(), key, w)).status, 201);
    await server.db.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE workspace_id = $1 AND key = ANY($2)`,
      [w.id, more],
    );
    const batched = await server.built.services.idempotency.purgeExpired(1);
    if (STORE === 'embedded') assert.equal(batched, more.length);
    assert.equal(await storedKeys(w.id, live), 1);
    for (const key of more) assert.equal(await storedKeys(w.id, key), 0);
  });
});

describe('the Idempotency-Key header itself', () => {
  test('missing or malformed keys are 400 with the error object and nothing is written', async () => {
    const body = contactBody();
    const missing = await server.request('POST', '/v1/contacts', { key: ws.key, body });
    assertError(missing, 400, 'invalid_request', 'idempotency_key_missing');
    for (const bad of ['short', 'x'.repeat(129), 'has space in it']) {
      const r = await server.request('POST', '/v1/contacts', { key: ws.key, body, idem: bad });
      assertError(r, 400, 'invalid_request', 'idempotency_key_invalid');
    }
    assert.equal(await contactsWithEmail(ws.id, body.email), 0);
    // the bounds themselves are accepted
    assert.equal((await post(contactBody(), 'k'.repeat(8))).status, 201);
    assert.equal((await post(contactBody(), 'K'.repeat(128))).status, 201);
  });
});
