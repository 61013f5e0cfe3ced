// What the multi-process tests share: a key of a fresh workspace, a request to one process, and the
// scenarios run against several processes in both deployments of test/multi-process.test.ts (with
// Redis, and the default one without it). `cluster` is set by that file before its tests run.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { ownerCommands, type OwnerContext } from '../src/modules/owner/owner.service.js';
import { contactBody, deadlocksSoFar, idem, propertyValue, sleep, TEXT_PROPERTIES } from './harness.js';
import type { ServerProcess } from './processes.js';

/** The database the processes share (its URL, a pool of it), and the owner's access to it. */
export const cluster = {} as { databaseUrl: string; db: Database; owner: OwnerContext };

export async function newKey(
  options: { rateLimitPerMinute?: number; workspaceId?: string; scopes?: string[]; concurrencyLimit?: number } = {},
) {
  const workspaceId =
    options.workspaceId ??
    (await ownerCommands.createWorkspace(cluster.owner, { name: `multi-${randomUUID().slice(0, 8)}` })).id;
  const key = await ownerCommands.createKey(cluster.owner, {
    workspaceId,
    name: 'multi-process test',
    scopes: options.scopes ?? ['contacts:read', 'contacts:write'],
    ...(options.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: options.rateLimitPerMinute }),
    // These tests send more requests of one key at once than the default allows; the limit itself
    // is tested across processes in test/admission-processes.test.ts.
    concurrencyLimit: options.concurrencyLimit ?? 1_000,
  });
  return { workspaceId, keyId: key.id, key: key.key };
}

export async function call(
  server: ServerProcess,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  idemKey?: string,
) {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idemKey) headers['idempotency-key'] = idemKey;
  const res = await fetch(server.baseUrl + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

/**
 * 8 batch upserts of 100 contacts, one after the other, each to the next of `servers`, with a
 * write-only key of 50 requests a minute: a batch of 100 is ten requests of the quota wherever it
 * lands, so exactly the first 5 pass and write their 100 contacts, and the 3 others are 429 and
 * write nothing (counted per process, all 8 would pass). One after the other: a batch's items are
 * counted once its body is read, after its first request was counted on arrival, so batches sent
 * at once may be refused for the first counts of those still being read.
 */
export async function batchesCountTenRequestsEach(servers: ServerProcess[]): Promise<void> {
  const { key, workspaceId } = await newKey({ rateLimitPerMinute: 50, scopes: ['contacts:write'] });
  const answers = [];
  for (let n = 0; n < 8; n++) {
    const items = Array.from({ length: 100 }, (_, i) => ({ external_id: `quota-${n}-${i}`, name: `Quota ${n}` }));
    answers.push(await call(servers[n % servers.length]!, 'POST', '/v2/contacts/batch/upsert', key, { items }, idem()));
  }
  assert.deepEqual(
    answers.map((r) => r.status),
    [200, 200, 200, 200, 200, 429, 429, 429],
  );
  const { rows } = await cluster.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
    [workspaceId],
  );
  assert.equal(rows[0]!.n, 500);
}

/**
 * 30 PUTs of one new external_id at once, each with its own Idempotency-Key, spread over
 * `servers`, in rounds: one 201, the rest 200, one contact, and no deadlock for PostgreSQL to
 * break (a broken one is retried unseen, and after three answered 500).
 */
export async function parallelUpsertsOfOneNewId(servers: ServerProcess[]): Promise<void> {
  const { key, workspaceId } = await newKey({ scopes: ['contacts:write'] });
  const before = await deadlocksSoFar(cluster.db);
  for (let round = 0; round < 3; round++) {
    const externalId = `crowd-${round}-${randomUUID().slice(0, 8)}`;
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        call(
          servers[i % servers.length]!,
          'PUT',
          `/v2/contacts/external/${externalId}`,
          key,
          { name: `Crowd ${i}` },
          idem(),
        ),
      ),
    );
    const statuses = answers.map((r) => r.status);
    assert.deepEqual(
      statuses.filter((s) => s !== 200 && s !== 201),
      [],
      `round ${round}: ${statuses.join(',')}`,
    );
    assert.equal(statuses.filter((s) => s === 201).length, 1, `round ${round}: one creation`);
    assert.equal(new Set(answers.map((r) => r.json.data.id)).size, 1, `round ${round}: one contact named`);
    const { rows } = await cluster.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND external_id = $2',
      [workspaceId, externalId],
    );
    assert.equal(rows[0]!.n, 1, `round ${round}: one contact stored`);
  }
  // The statistics reach pg_stat_database within a second.
  await sleep(1_500);
  assert.equal(await deadlocksSoFar(cluster.db), before, 'deadlocks PostgreSQL detected');
}

/**
 * Rounds of 6 writes at once to one contact, spread over `servers`, each of a different property
 * (PATCH by id and PUT by external id in turn), with a write-only key: every change is kept, none
 * overwritten by a write that set only another property.
 */
export async function parallelWritesOfDifferentProperties(servers: ServerProcess[]): Promise<void> {
  const { key, workspaceId } = await newKey({ scopes: ['contacts:write'] });
  const externalId = `properties-${randomUUID().slice(0, 8)}`;
  const created = await call(servers[0]!, 'PUT', `/v1/contacts/external/${externalId}`, key, contactBody(), idem());
  assert.equal(created.status, 201);
  const fields = TEXT_PROPERTIES;
  for (let round = 0; round < 5; round++) {
    const value = (field: (typeof fields)[number]) => propertyValue(field, round);
    const answers = await Promise.all(
      fields.map((field, i) =>
        i % 2 === 0
          ? call(
              servers[i % servers.length]!,
              'PATCH',
              `/v1/contacts/${created.json.data.id}`,
              key,
              {
                [field]: value(field),
              },
              idem(),
            )
          : call(
              servers[i % servers.length]!,
              'PUT',
              `/v1/contacts/external/${externalId}`,
              key,
              {
                [field]: value(field),
              },
              idem(),
            ),
      ),
    );
    assert.deepEqual(
      answers.map((r) => r.status),
      fields.map(() => 200),
    );
    const { rows } = await cluster.db.query<Record<string, string>>(
      `SELECT ${fields.join(', ')} FROM contacts WHERE workspace_id = $1 AND external_id = $2`,
      [workspaceId, externalId],
    );
    for (const field of fields) assert.equal(rows[0]![field], value(field), `${field}, round ${round}`);
  }
}

/**
 * 8 overlapping partial batches, each with one invalid item in a different place, sent at once to
 * `servers` in turn: all 207, no deadlock, only the valid items written, each once, and each
 * batch's events those of its written items, in item order.
 */
export async function overlappingPartialBatches(processes: ServerProcess[]): Promise<void> {
  const servers = Array.from({ length: 8 }, (_, n) => processes[n % processes.length]!);
  const { key, workspaceId } = await newKey({ scopes: ['contacts:write'] });
  const pool = Array.from({ length: 60 }, (_, i) => `partial-${i}-${randomUUID().slice(0, 6)}`);
  const refused = Array.from({ length: 8 }, (_, i) => `refused-${i}-${randomUUID().slice(0, 6)}`);
  const deadlocksBefore = await deadlocksSoFar(cluster.db);
  const answers = await Promise.all(
    servers.map((server, n) => {
      const ids = [...pool].sort(() => Math.random() - 0.5).slice(0, 40);
      const items: unknown[] = ids.map((external_id) => ({ external_id, origin: `partial-${n}` }));
      // An invalid item among the valid ones, in a different place in each batch.
      items.splice(n * 5, 0, { external_id: refused[n], email: 'not an e-mail' });
      return call(server, 'POST', '/v2/contacts/batch/upsert', key, { mode: 'partial', items }, idem());
    }),
  );
  for (const r of answers) {
    assert.equal(r.status, 207, r.text);
    assert.equal(r.json.counts.invalid, 1);
  }
  await sleep(1_500);
  assert.equal(await deadlocksSoFar(cluster.db), deadlocksBefore, 'deadlocks detected by PostgreSQL');
  const { rows } = await cluster.db.query<{ external_id: string; n: number }>(
    `SELECT external_id, count(*)::int AS n FROM contacts
      WHERE workspace_id = $1 AND (external_id = ANY($2::text[]) OR external_id = ANY($3::text[]))
      GROUP BY external_id`,
    [workspaceId, pool, refused],
  );
  assert.ok(rows.every((r) => r.n === 1 && r.external_id.startsWith('partial-')));
  const created = answers.flatMap((r) => r.json.data.filter((x: { result: string }) => x.result === 'created'));
  assert.equal(created.length, rows.length, 'each contact was created by exactly one batch');
  // Each batch's events, found by its request id: one per item it created or updated, in item
  // order, created and updated interleaved as the batches overlapped.
  for (const r of answers) {
    const written = (r.json.data as { result: string; contact?: { id: string } }[]).flatMap((x) =>
      x.result === 'created' || x.result === 'updated' ? [[`contact.${x.result}`, x.contact!.id]] : [],
    );
    const { rows: events } = await cluster.db.query<{ type: string; resource_id: string }>(
      `SELECT type, resource_id FROM events WHERE workspace_id = $1 AND request_id = $2 ORDER BY stamp, seq`,
      [workspaceId, r.headers.get('x-request-id')],
    );
    assert.deepEqual(
      events.map((e) => [e.type, e.resource_id]),
      written,
    );
  }
}

/**
 * 8 overlapping batch deletes and 8 single deletes sent at once to `servers` in turn, with a
 * write-only key: each contact deleted once, by one request, no deadlock.
 */
export async function overlappingDeletions(processes: ServerProcess[]): Promise<void> {
  const servers = Array.from({ length: 8 }, (_, n) => processes[n % processes.length]!);
  const { key, workspaceId } = await newKey({ scopes: ['contacts:write'] });
  const pool = Array.from({ length: 60 }, (_, i) => `doomed-${i}-${randomUUID().slice(0, 6)}`);
  const made = await call(
    processes[0]!,
    'POST',
    '/v2/contacts/batch/upsert',
    key,
    {
      items: pool.map((external_id) => ({ external_id, name: 'Doomed' })),
    },
    idem(),
  );
  assert.equal(made.status, 200, made.text);
  const deadlocksBefore = await deadlocksSoFar(cluster.db);
  const shuffled = () => [...pool].sort(() => Math.random() - 0.5);
  const [batches, singles] = await Promise.all([
    Promise.all(
      servers.map((server) =>
        call(server, 'POST', '/v2/contacts/batch/delete', key, { external_ids: shuffled().slice(0, 25) }, idem()),
      ),
    ),
    Promise.all(
      servers.map((server, n) =>
        call(server, 'DELETE', `/v2/contacts/external/${shuffled()[n]}`, key, undefined, idem()),
      ),
    ),
  ]);
  for (const r of batches) assert.equal(r.status, 200, r.text);
  for (const r of singles) assert.ok(r.status === 204 || r.status === 404, r.text);
  await sleep(1_500);
  assert.equal(await deadlocksSoFar(cluster.db), deadlocksBefore, 'deadlocks detected by PostgreSQL');
  const deletedByBatches = batches.flatMap((r) =>
    r.json.data.filter((x: { result: string }) => x.result === 'deleted').map((x: { id: string }) => x.id),
  );
  assert.equal(new Set(deletedByBatches).size, deletedByBatches.length, 'no contact deleted by two batches');
  const { rows } = await cluster.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND external_id = ANY($2::text[])',
    [workspaceId, pool],
  );
  const deletions = deletedByBatches.length + singles.filter((r) => r.status === 204).length;
  assert.equal(rows[0]!.n, pool.length - deletions, 'every deletion answered removed one contact');
  const tombstones = await cluster.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE workspace_id = $1 AND type = 'contact.deleted'`,
    [workspaceId],
  );
  assert.equal(tombstones.rows[0]!.n, deletions, 'one contact.deleted per deletion');
}

/**
 * A writer outside the API (the product itself) changes two contacts in two steps without locking
 * them first: it takes the workspace's clock with the first and then waits for the second, which
 * API writes on `servers` have locked while they wait for the clock. PostgreSQL aborts the API's
 * side (this session checks for deadlocks after 10 s, where the role may set it); each write runs
 * again after its wait and is answered 200 (docs/sync.md), with every change kept. Write-only key.
 */
export async function writesCrossedByAnOutsideWriter(servers: ServerProcess[]): Promise<void> {
  // A session checks for a deadlock once, a second after it starts waiting: on a machine stalled
  // for longer between the two steps, the outside writer is the one aborted, and the round runs again.
  for (let round = 1; !(await crossOnce(servers, round < 5)); round++);
}

/** One crossing; false when PostgreSQL aborted the outside writer instead (and `mayFail`). */
export async function crossOnce(servers: ServerProcess[], mayFail: boolean): Promise<boolean> {
  const { key, workspaceId } = await newKey({ scopes: ['contacts:write'] });
  const [first, second] = [`crossed-a-${randomUUID().slice(0, 8)}`, `crossed-b-${randomUUID().slice(0, 8)}`];
  for (const externalId of [first, second]) {
    const created = await call(servers[0]!, 'PUT', `/v1/contacts/external/${externalId}`, key, contactBody(), idem());
    assert.equal(created.status, 201);
  }
  const [apiField, otherApiField, outsideField] = ['name', 'company_name', 'origin'] as const;
  const { rows: role } = await cluster.db.query<{ rolsuper: boolean }>(
    'SELECT rolsuper FROM pg_roles WHERE rolname = current_user',
  );
  const outside = createPostgresDatabase(cluster.databaseUrl, 1);
  const deadlocksBefore = await deadlocksSoFar(cluster.db);
  let writes: Promise<Awaited<ReturnType<typeof call>>[]> | undefined;
  let crossed = true;
  try {
    await outside.transaction(async (tx) => {
      if (role[0]?.rolsuper) await tx.query(`SET LOCAL deadlock_timeout = '10s'`);
      const touch = (externalId: string) =>
        tx.query(`UPDATE contacts SET ${outsideField} = $3 WHERE workspace_id = $1 AND external_id = $2`, [
          workspaceId,
          externalId,
          propertyValue(outsideField, 1),
        ]);
      await touch(first);
      // The API's writes of the second contact lock it, then wait for the clock this writer holds...
      writes = Promise.all(
        [apiField, otherApiField].map((field, i) =>
          call(
            servers[i % servers.length]!,
            'PUT',
            `/v1/contacts/external/${second}`,
            key,
            {
              [field]: propertyValue(field, 1),
            },
            idem(),
          ),
        ),
      );
      for (let waited = 0; ; waited += 20) {
        if (await waitsForClock(cluster.db, workspaceId)) break;
        assert.ok(waited < 30_000, 'an API write waits for the clock');
        await sleep(20);
      }
      // ...and this writer now waits for the second contact: the two cross.
      await touch(second);
    });
  } catch (err) {
    if ((err as { code?: string }).code !== '40P01' || !mayFail) throw err;
    crossed = false;
  } finally {
    await outside.close();
  }
  const answers = await writes!;
  assert.deepEqual(
    answers.map((r) => r.status),
    [200, 200],
    JSON.stringify(answers.map((r) => r.json)),
  );
  if (!crossed) return false;
  await sleep(1_500); // the statistics reach pg_stat_database within a second
  assert.ok((await deadlocksSoFar(cluster.db)) > deadlocksBefore, 'the writers did cross');
  const { rows } = await cluster.db.query<Record<string, string>>(
    `SELECT ${apiField}, ${otherApiField}, ${outsideField} FROM contacts WHERE workspace_id = $1 AND external_id = $2`,
    [workspaceId, second],
  );
  for (const field of [apiField, otherApiField, outsideField]) {
    assert.equal(rows[0]![field], propertyValue(field, 1), field);
  }
  return true;
}

/**
 * Whether a connection of the service waits for the workspace's sync clock: the advisory lock the
 * clock is taken behind (db/code/03_sync_clock.sql), whose 64-bit key pg_locks shows in two halves.
 */
async function waitsForClock(db: Database, workspaceId: string): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE a.datname = current_database() AND a.application_name = 'workspace-public-api'
        AND l.locktype = 'advisory' AND NOT l.granted
        AND (l.classid::bigint << 32 | l.objid::bigint) = hashtextextended($1::uuid::text, 2)`,
    [workspaceId],
  );
  return rows.length > 0;
}
