// Reads on a streaming replica (docs/scaling.md, "Read replicas"), against a real primary and a
// real replica this file starts (pg_basebackup -R), through `serve` processes: a write on one and
// a read on another with the write's consistency position always sees the write, even while the
// replica's replay is paused (pg_wal_replay_pause), and so does a read without a token in `fresh`
// consistency; in `token` consistency a read without one is served by the replica as it is; the
// TypeScript client sends its writes' tokens by itself; a replica that lags past the bound or is
// down is skipped, and readiness says so.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { createWorkspaceApiClient, unwrap } from '../clients/typescript/src/index.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { contactBody, sleep } from './harness.js';
import { cleanUpProcesses, cli, startServer, stopServer, storeEnv, tempDir, type ServerProcess } from './processes.js';
import { readRoutes, startReplicaPair, withoutReplicaPair, type ReplicaPair } from './servers.js';

const skip = withoutReplicaPair();
let pair: ReplicaPair;
let env: NodeJS.ProcessEnv;
let replicaAdmin: pg.Client;
let key: string;
/** the workspace of `key` */
let workspaceId: string;
/**
 * two processes in `token` consistency, reads allowed to lag a minute behind: a paused replica
 * stays in use, and a read without a token shows what it has applied
 */
let servers: ServerProcess[] = [];

before(async () => {
  if (skip) return;
  pair = await startReplicaPair();
  const database = await pair.createDatabase(`wsapi_replicas_${randomUUID().slice(0, 8)}`);
  replicaAdmin = new pg.Client({ connectionString: pair.replicaUrl });
  // The last test stops the replica under it.
  replicaAdmin.on('error', () => undefined);
  await replicaAdmin.connect();
  env = storeEnv(tempDir(), {
    DATABASE_URL: database.primaryUrl,
    DATABASE_READ_URL: database.replicaUrl,
    DATABASE_READ_MAX_LAG_MS: '60000',
    DATABASE_READ_WAIT_MS: '50',
    DATABASE_READ_CONSISTENCY: 'token',
    REDIS_URL: undefined,
  });
  servers = await Promise.all([startServer(env, ['--workers', '1']), startServer(env, ['--workers', '1'])]);
  const ws = await cli(['workspaces', 'create', '--name', 'replicas', '--json'], env);
  assert.equal(ws.code, 0, ws.stderr);
  workspaceId = JSON.parse(ws.stdout).id as string;
  const scopes = 'contacts:read,contacts:write,events:read';
  const created = await cli(
    // Far above what the readers send: a 429 would hide what the tests look for.
    [
      ...['keys', 'create', '--workspace', workspaceId, '--scopes', scopes, '--name', 'r'],
      ...['--rate-limit', '1000000/min', '--concurrency', '100', '--json'],
    ],
    env,
  );
  assert.equal(created.code, 0, created.stderr);
  key = JSON.parse(created.stdout).key as string;
});

after(async () => {
  await replicaAdmin?.end().catch(() => undefined);
  await cleanUpProcesses();
});

async function call(
  server: ServerProcess,
  method: string,
  path: string,
  options: { body?: unknown; token?: string; key?: string } = {},
): Promise<{ status: number; json: any; token: string | null }> {
  const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? key}` };
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['idempotency-key'] = randomUUID();
  }
  if (options.token) headers['consistency-position'] = options.token;
  const res = await fetch(server.baseUrl + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return {
    status: res.status,
    json: text ? JSON.parse(text) : undefined,
    token: res.headers.get('consistency-position'),
  };
}

/** The process's count of reads by where they went. */
const routed = (server: ServerProcess) => readRoutes(server.baseUrl);

async function replay(paused: boolean): Promise<void> {
  await replicaAdmin.query(paused ? 'SELECT pg_wal_replay_pause()' : 'SELECT pg_wal_replay_resume()');
  for (let i = 0; i < 100; i++) {
    const { rows } = await replicaAdmin.query<{ state: string }>('SELECT pg_get_wal_replay_pause_state() AS state');
    if ((rows[0]!.state === 'paused') === paused) return;
    await sleep(50);
  }
  throw new Error(`replay did not become ${paused ? 'paused' : 'resumed'}`);
}

const readiness = async (server: ServerProcess) => (await fetch(`${server.baseUrl}/readyz`)).json() as Promise<any>;

test(
  'a write then a read with its token sees the write while replay is paused; reads without one go to the replica',
  {
    skip,
  },
  async () => {
    const [writer, reader] = servers as [ServerProcess, ServerProcess];
    const before = await routed(reader);
    await replay(true);
    try {
      const tokens: string[] = [];
      for (let i = 0; i < 20; i++) {
        const externalId = `rr-${i}-${randomUUID().slice(0, 8)}`;
        const created = await call(writer, 'PUT', `/v2/contacts/external/${externalId}`, { body: contactBody() });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        assert.match(created.token ?? '', /^1\.[0-9a-f]{16}$/, 'a write answer carries a consistency position');
        tokens.push(created.token!);
        const id = created.json.data.id as string;
        const token = created.token!;
        // With the token, on the other process: the get, the list by external id and the feed see it.
        const got = await call(reader, 'GET', `/v2/contacts/${id}`, { token });
        assert.equal(got.status, 200, `read ${i} with the token: ${got.status}`);
        const listed = await call(reader, 'GET', `/v2/contacts?external_id=${externalId}`, { token });
        assert.deepEqual(
          listed.json.data.map((c: { id: string }) => c.id),
          [id],
        );
        const feed = await call(reader, 'GET', `/v2/events?resource_id=${id}`, { token });
        assert.equal(feed.json.data.length, 1, 'the created event');
        // Without it: the paused replica, which has not applied the write.
        const stale = await call(reader, 'GET', `/v2/contacts/${id}`);
        assert.equal(stale.status, 404, `read ${i} without a token was not served by the paused replica`);
      }
      assert.deepEqual([...tokens].sort(), tokens, 'later writes have greater tokens');
      const counts = await routed(reader);
      assert.ok(
        (counts.primary_replicas_behind ?? 0) - (before.primary_replicas_behind ?? 0) >= 60,
        `reads with a token the replica had not applied went to the primary: ${JSON.stringify(counts)}`,
      );
      assert.ok((counts.replica ?? 0) - (before.replica ?? 0) >= 20, JSON.stringify(counts));
    } finally {
      await replay(false);
    }
    // Replay resumed: the same tokens are served by the replica once it has applied them.
    const last = await call(writer, 'POST', '/v2/contacts', { body: contactBody() });
    const mid = await routed(reader);
    const got = await call(reader, 'GET', `/v2/contacts/${last.json.data.id}`, { token: last.token! });
    assert.equal(got.status, 200);
    const after = await routed(reader);
    assert.equal((after.replica ?? 0) - (mid.replica ?? 0), 1, `served by the replica: ${JSON.stringify(after)}`);
  },
);

test(
  'in fresh consistency (the default) every read sees every write before it, whatever token it sends',
  {
    skip,
  },
  async () => {
    const fresh = { ...env, DATABASE_READ_CONSISTENCY: undefined };
    const [writer, reader] = await Promise.all([
      startServer(fresh, ['--workers', '1']),
      startServer(fresh, ['--workers', '1']),
    ]);
    try {
      // A reader whose own last write is older than the others' (a client keeps its writes' token).
      const older = (await call(reader, 'POST', '/v2/contacts', { body: contactBody() })).token!;
      await replay(true);
      let id = '';
      try {
        for (let i = 0; i < 10; i++) {
          const written = await call(writer, 'POST', '/v2/contacts', { body: contactBody() });
          id = written.json.data.id as string;
          for (const token of [undefined, older]) {
            const got = await call(reader, 'GET', `/v2/contacts/${id}`, { token });
            assert.equal(got.status, 200, `read ${i}, token ${token}, another process, replay paused`);
          }
        }
        assert.ok(
          ((await routed(reader)).primary_replicas_behind ?? 0) >= 20,
          'the paused replica had not applied them',
        );
      } finally {
        await replay(false);
      }
      const before = await routed(reader);
      for (let i = 0; i < 5; i++) assert.equal((await call(reader, 'GET', `/v2/contacts/${id}`)).status, 200);
      const counts = await routed(reader);
      assert.ok(
        (counts.replica ?? 0) - (before.replica ?? 0) >= 4,
        `replay resumed: the replica serves ${JSON.stringify(counts)}`,
      );
    } finally {
      await Promise.all([stopServer(writer), stopServer(reader)]);
    }
  },
);

test('on the replica, the weakest keys read what their scopes allow and nothing more', { skip }, async () => {
  const [writer, reader] = servers as [ServerProcess, ServerProcess];
  const keyWith = async (scopes: string) => {
    const made = await cli(
      ['keys', 'create', '--workspace', workspaceId, '--scopes', scopes, '--name', scopes, '--json'],
      env,
    );
    assert.equal(made.code, 0, made.stderr);
    return JSON.parse(made.stdout).key as string;
  };
  const contactsOnly = await keyWith('contacts:read');
  const eventsOnly = await keyWith('events:read');
  const eventsAndContacts = await keyWith('events:read,contacts:read');
  const written = await call(writer, 'POST', '/v2/contacts', { body: contactBody() });
  assert.equal(written.status, 201);
  const id = written.json.data.id as string;
  const token = written.token!;
  const before = await routed(reader);

  const got = await call(reader, 'GET', `/v2/contacts/${id}`, { token, key: contactsOnly });
  assert.equal(got.status, 200);
  const listed = await call(reader, 'GET', `/v2/contacts?limit=100&updated_after=2000-01-01T00:00:00Z`, {
    token,
    key: contactsOnly,
  });
  assert.ok(
    listed.json.data.some((c: { id: string }) => c.id === id),
    'the list holds the contact',
  );
  assert.equal(
    (await call(reader, 'GET', '/v2/events', { token, key: contactsOnly })).json.error.code,
    'insufficient_scope',
  );

  // events:read alone: nothing of contacts, not even their count; asking for them is 403.
  const blind = await call(reader, 'GET', '/v2/events?limit=100', { token, key: eventsOnly });
  assert.equal(blind.status, 200);
  assert.deepEqual(blind.json.data, [], 'no event of a type the key does not read');
  const asked = await call(reader, 'GET', `/v2/events?resource_id=${id}&resource_type=contact`, {
    token,
    key: eventsOnly,
  });
  assert.equal(asked.status, 403);
  assert.equal(asked.json.error.code, 'insufficient_scope');
  // with contacts:read too: the contact's event
  const seen = await call(reader, 'GET', `/v2/events?resource_id=${id}`, { token, key: eventsAndContacts });
  assert.deepEqual(
    seen.json.data.map((e: { type: string }) => e.type),
    ['contact.created'],
  );

  const counts = await routed(reader);
  const served = (counts.replica ?? 0) + (counts.primary_replicas_behind ?? 0);
  const servedBefore = (before.replica ?? 0) + (before.primary_replicas_behind ?? 0);
  assert.ok((counts.replica ?? 0) - (before.replica ?? 0) >= 1, `the replica served some: ${JSON.stringify(counts)}`);
  assert.ok(served - servedBefore >= 4, `every read went through the replica's routing: ${JSON.stringify(counts)}`);
});

test('the TypeScript client sends the token of its last write with its reads by itself', { skip }, async () => {
  const reader = servers[1]!;
  const api = createWorkspaceApiClient({ baseUrl: reader.baseUrl, apiKey: key });
  const forgetful = createWorkspaceApiClient({ baseUrl: reader.baseUrl, apiKey: key, readYourWrites: false });
  await replay(true);
  try {
    for (let i = 0; i < 5; i++) {
      const body = { name: `client ${i}`, email: `client${i}@example.com` };
      const contact = (await unwrap(api.v2.POST('/v2/contacts', { body }))).data;
      const path = { params: { path: { id: contact.id } } };
      assert.equal((await api.v2.GET('/v2/contacts/{id}', path)).response.status, 200, 'with its token');
      assert.equal((await forgetful.v2.GET('/v2/contacts/{id}', path)).response.status, 404, 'without');
    }
  } finally {
    await replay(false);
  }
});

test(
  'a token that is not one is refused with 400 invalid_header, by reads and writes, and changes nothing',
  {
    skip,
  },
  async () => {
    for (const token of ['1.123', 'abc', `1.${'g'.repeat(16)}`, `2.${'0'.repeat(16)}`, `1.${'A'.repeat(16)}`]) {
      const read = await call(servers[0]!, 'GET', '/v2/contacts', { token });
      assert.equal(read.status, 400, token);
      assert.equal(read.json.error.code, 'invalid_header');
      const externalId = `refused-${randomUUID().slice(0, 8)}`;
      const write = await call(servers[0]!, 'PUT', `/v2/contacts/external/${externalId}`, {
        body: contactBody(),
        token,
      });
      assert.equal(write.status, 400, `a write with ${token}`);
      assert.equal(write.json.error.code, 'invalid_header');
      assert.equal(
        (await call(servers[0]!, 'GET', `/v2/contacts/external/${externalId}`)).status,
        404,
        'nothing written',
      );
    }
  },
);

test(
  "a token ahead of the primary (another cluster's, made up) waits for nothing: the replica answers",
  { skip },
  async () => {
    const [writer, reader] = servers as [ServerProcess, ServerProcess];
    const id = (await call(writer, 'POST', '/v2/contacts', { body: contactBody() })).json.data.id as string;
    await sleep(200);
    const before = await routed(reader);
    for (let i = 0; i < 5; i++) {
      const got = await call(reader, 'GET', `/v2/contacts/${id}`, { token: `1.${'f'.repeat(16)}` });
      assert.equal(got.status, 200);
    }
    const counts = await routed(reader);
    assert.equal((counts.replica ?? 0) - (before.replica ?? 0), 5, `served by the replica: ${JSON.stringify(counts)}`);
  },
);

test(
  'a standby of another cluster is never read: readiness says down, the primary answers, the log says why',
  {
    skip,
  },
  async () => {
    const other = await startReplicaPair();
    const otherReplica = (await other.createDatabase(new URL(env.DATABASE_URL!).pathname.slice(1))).replicaUrl;
    const server = await startServer({ ...env, DATABASE_READ_URL: otherReplica, LOG_LEVEL: 'info' }, [
      '--workers',
      '1',
    ]);
    try {
      assert.deepEqual((await readiness(server)).replicas, { replica_1: 'down' });
      const id = (await call(server, 'POST', '/v2/contacts', { body: contactBody() })).json.data.id as string;
      assert.equal((await call(server, 'GET', `/v2/contacts/${id}`)).status, 200);
      const counts = await routed(server);
      assert.ok((counts.primary_no_replica_healthy ?? 0) >= 1 && !counts.replica, JSON.stringify(counts));
      const { stdout, stderr } = server.output();
      assert.match(stdout + stderr, /"replica":"replica_1","state":"down","reason":"another_cluster"/);
      assert.doesNotMatch(stdout + stderr, /postgres:\/\//, 'no URL in the log');
    } finally {
      await stopServer(server);
      other.stopReplica();
    }
  },
);

test('a replica lagging past the bound serves no read until it catches up; readiness says so', { skip }, async () => {
  const lagEnv = { ...env, DATABASE_READ_MAX_LAG_MS: '300' };
  const server = await startServer(lagEnv, ['--workers', '1']);
  try {
    assert.deepEqual((await readiness(server)).replicas, { replica_1: 'ok' });
    await replay(true);
    let id: string;
    try {
      id = (await call(server, 'POST', '/v2/contacts', { body: contactBody() })).json.data.id as string;
      // Past the bound (and the monitor's next look), the primary answers reads without a token.
      const deadline = Date.now() + 10_000;
      while ((await readiness(server)).replicas.replica_1 !== 'lagging') {
        assert.ok(Date.now() < deadline, 'the paused replica was never found lagging');
        await sleep(100);
      }
      const ready = await fetch(`${server.baseUrl}/readyz`);
      assert.equal(ready.status, 200, 'a lagging replica leaves the process ready');
      const before = await routed(server);
      const got = await call(server, 'GET', `/v2/contacts/${id}`);
      assert.equal(got.status, 200, 'served by the primary');
      const counts = await routed(server);
      assert.equal((counts.primary_no_replica_healthy ?? 0) - (before.primary_no_replica_healthy ?? 0), 1);
    } finally {
      await replay(false);
    }
    const deadline = Date.now() + 10_000;
    while ((await readiness(server)).replicas.replica_1 !== 'ok') {
      assert.ok(Date.now() < deadline, 'the replica never caught up');
      await sleep(100);
    }
    const before = await routed(server);
    assert.equal((await call(server, 'GET', `/v2/contacts/${id}`)).status, 200);
    assert.equal(((await routed(server)).replica ?? 0) - (before.replica ?? 0), 1, 'the replica serves again');
  } finally {
    await stopServer(server);
  }
});

// Last: the replica does not come back.
test('a replica that stops: every read is still answered, by the primary; readiness says down', { skip }, async () => {
  const server = servers[1]!;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    ids.push((await call(servers[0]!, 'POST', '/v2/contacts', { body: contactBody() })).json.data.id as string);
  }
  // Readers in flight while the replica goes: none may fail.
  let reading = true;
  const failures: string[] = [];
  const readers = Array.from({ length: 4 }, async () => {
    let n = 0;
    while (reading) {
      const r = await call(server, 'GET', n++ % 2 ? '/v2/contacts?limit=10' : `/v2/contacts/${ids[n % ids.length]}`);
      if (r.status !== 200 && r.status !== 404) failures.push(`${r.status} ${JSON.stringify(r.json)}`);
    }
  });
  await sleep(300);
  pair.stopReplica();
  const deadline = Date.now() + 10_000;
  while ((await readiness(server)).replicas.replica_1 !== 'down') {
    assert.ok(Date.now() < deadline, 'the stopped replica was never found down');
    await sleep(100);
  }
  await sleep(500);
  reading = false;
  await Promise.all(readers);
  assert.deepEqual(failures, [], 'every read answered while the replica stopped');
  assert.equal((await fetch(`${server.baseUrl}/readyz`)).status, 200);
  const { stdout, stderr } = server.output();
  assert.match(stdout + stderr, /"replica":"replica_1","state":"down","reason":"(unreachable|failed_under_a_read)"/);
  assert.doesNotMatch(stdout + stderr, /postgres:\/\/|127\.0\.0\.1:\d/, 'no address of the replica in the log');
  for (const id of ids) assert.equal((await call(server, 'GET', `/v2/contacts/${id}`)).status, 200);
});

test('DATABASE_READ_URL: several replicas, comma-separated; without DATABASE_URL a configuration error', () => {
  const primary = 'postgres://p@127.0.0.1:5432/db';
  const urls = 'postgres://r@127.0.0.1:5433/db,postgres://r@127.0.0.1:5434/db';
  const config = loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: urls });
  assert.deepEqual(config.readReplicas.urls, urls.split(','));
  assert.equal(config.readReplicas.consistency, 'fresh', 'the default');
  assert.throws(() => loadConfig({ DATABASE_READ_URL: urls }), ConfigError);
  assert.throws(() => loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: `${urls},` }), ConfigError);
  assert.throws(() => loadConfig({ DATABASE_URL: primary, DATABASE_READ_CONSISTENCY: 'eventual' }), ConfigError);
});
