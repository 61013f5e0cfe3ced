// The sync example (examples/sync-contacts) against a real server while contacts change through
// the API, the owner commands and plain SQL: stopped midway with SIGKILL and with SIGTERM, started
// again, its local copy ends equal to the server's contacts, deletions included; and a copy whose
// feed position retention has passed (410 events_expired) is resynchronized.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  createWorkspaceApiClient,
  paginate,
  unwrap,
  type Contact,
  type ContactCreate,
  type WorkspaceApiClient,
} from '../clients/typescript/src/index.js';
import { applyEvent, run, type SyncState } from '../examples/sync-contacts/sync.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, expireEvents, idem, sleep, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

const SYNC = fileURLToPath(new URL('../examples/sync-contacts/sync.ts', import.meta.url));

let ws: TestWorkspace;
let api: WorkspaceApiClient;
let dir: string;
let statePath: string;
const server = useTestServer({
  setup: async () => {
    ws = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    api = createWorkspaceApiClient({ baseUrl: server.baseUrl, apiKey: ws.key });
    dir = await mkdtemp(path.join(tmpdir(), 'sync-contacts-'));
    statePath = path.join(dir, 'contacts.json');
  },
});

after(async () => {
  // A failed assertion may leave a child running: stop it (only this file's own children).
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

// ------------------------------------------------------------------------------------------ helpers

const children = new Set<ChildProcess>();

/** The example as a child process; only this test's own children are ever signalled. */
function startSync(...args: string[]) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', SYNC, '--base-url', server.baseUrl, '--state', statePath, '--page-size', '3', ...args],
    { env: { ...process.env, WORKSPACE_API_KEY: ws.key }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.add(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, output: () => output };
}

/** The state file, or null while there is none (a reader never sees a half-written one). */
async function readState(): Promise<SyncState | null> {
  const text = await readFile(statePath, 'utf8').catch(() => null);
  return text === null ? null : (JSON.parse(text) as SyncState);
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The server's contacts of the workspace, by id, through a full list walk. */
async function serverContacts(): Promise<Record<string, Contact>> {
  const all: Record<string, Contact> = {};
  for await (const c of paginate((cursor) => api.v2.GET('/v2/contacts', { params: { query: { limit: 100, cursor } } })))
    all[c.id] = c;
  return all;
}

const upToDate = async () => {
  const [state, expected] = await Promise.all([readState(), serverContacts()]);
  return { state, expected };
};
const isUpToDate = ({ state, expected }: Awaited<ReturnType<typeof upToDate>>) => {
  try {
    assert.equal(state?.phase, 'follow');
    assert.deepEqual(state.contacts, expected);
    return true;
  } catch {
    return false;
  }
};

const alive = new Set<string>();

async function create(): Promise<string> {
  const { data } = await unwrap(api.v2.POST('/v2/contacts', { body: contactBody() as ContactCreate }));
  alive.add(data.id);
  return data.id;
}

const pick = (n: number) => [...alive].slice(0, n);

/** A round of changes by every kind of writer: API creates, updates, upserts; owner and SQL. */
async function changeContacts(round: string): Promise<void> {
  for (let i = 0; i < 6; i++) await create();
  const [a, b, c, d] = pick(4);
  await unwrap(api.v2.PATCH('/v2/contacts/{id}', { params: { path: { id: a! } }, body: { name: `Renamed ${round}` } }));
  await unwrap(api.v1.PATCH('/v1/contacts/{id}', { params: { path: { id: b! } }, body: { status: 'meeting' } }));
  const upserted = await unwrap(
    api.v2.PUT('/v2/contacts/external/{external_id}', {
      params: { path: { external_id: `crm/${round}` } },
      body: { name: `Upserted ${round}`, email: `${round}@example.com` },
    }),
  );
  alive.add(upserted.data.id);
  await server.db.query('UPDATE contacts SET origin = $1 WHERE id = $2', [`sql ${round}`, c]);
  // Deletions: one by the product (owner command), one straight after an update.
  await ownerCommands.deleteContact(server.owner, { contactId: d! });
  alive.delete(d!);
  const e = pick(1)[0]!;
  await unwrap(api.v2.PATCH('/v2/contacts/{id}', { params: { path: { id: e } }, body: { origin: 'doomed' } }));
  await ownerCommands.deleteContact(server.owner, { contactId: e });
  alive.delete(e);
  // Deletions pushed through the API, as a two-way sync does: by id, by external id, in a batch.
  const [f, g, h] = pick(3);
  await unwrap(api.v2.DELETE('/v2/contacts/{id}', { params: { path: { id: f! } } }));
  alive.delete(f!);
  await unwrap(
    api.v2.DELETE('/v2/contacts/external/{external_id}', { params: { path: { external_id: `crm/${round}` } } }),
  );
  alive.delete(upserted.data.id);
  const batch = await unwrap(api.v2.POST('/v2/contacts/batch/delete', { body: { ids: [g!, h!, f!] } }));
  assert.deepEqual(
    batch.data.map((r) => r.result),
    ['deleted', 'deleted', 'not_found'],
  );
  alive.delete(g!);
  alive.delete(h!);
}

// -------------------------------------------------------------------------------------------- test

test('the local copy follows the server through changes, SIGKILL and SIGTERM, deletions included', async (t) => {
  for (let i = 0; i < 24; i++) await create();

  // 1. Killed outright during its first synchronization: the file holds the last page applied.
  const first = startSync('--watch', '--interval', '50');
  const killedAt = await until('a first checkpoint', readState, (s) => s !== null, 30_000);
  first.child.kill('SIGKILL');
  assert.equal((await first.exited).signal, 'SIGKILL');
  t.diagnostic(
    `SIGKILL in phase ${killedAt?.phase} with ${Object.keys(killedAt?.contacts ?? {}).length} contacts stored`,
  );

  // 2. Changes while it is down.
  await changeContacts('down-1');

  // 3. Restarted, it catches up, then keeps up with changes made while it runs.
  const second = startSync('--watch', '--interval', '50');
  await until('catching up after SIGKILL', upToDate, isUpToDate);
  for (let round = 0; round < 3; round++) {
    await changeContacts(`live-${round}`);
    await sleep(30);
  }
  await until('following live changes', upToDate, isUpToDate);

  // 4. SIGTERM: a clean stop (exit 0) at a checkpoint.
  second.child.kill('SIGTERM');
  const stopped = await second.exited;
  assert.deepEqual(stopped, { code: 0, signal: null }, second.output());
  assert.match(second.output(), /stopped/);

  // 5. Changes while it is down again, then one more run (in process): equal to the server.
  await changeContacts('down-2');
  await run({ baseUrl: server.baseUrl, apiKey: ws.key, statePath, watch: false, pageSize: 3 });
  const { state, expected } = await upToDate();
  assert.deepEqual(state!.contacts, expected);
  assert.deepEqual(Object.keys(expected).sort(), [...alive].sort());
  assert.ok(Object.keys(expected).length > 24);

  // 6. Nothing changed: another run applies nothing and leaves the copy as it is.
  const before = (await readState())!;
  await run({ baseUrl: server.baseUrl, apiKey: ws.key, statePath, watch: false, pageSize: 3 });
  const again = (await readState())!;
  assert.deepEqual(again.contacts, before.contacts);
  assert.equal(again.position, before.position);
});

test('a copy whose position retention has passed gets 410 events_expired and is resynchronized', async () => {
  // Runs after the test above: the copy is current. A contact is deleted, then every event of the
  // workspace is aged past the retention and purged as the background job does: the deletion's
  // event is gone, and the copy's position lies before what the feed still holds.
  const gone = pick(1)[0]!;
  await ownerCommands.deleteContact(server.owner, { contactId: gone });
  alive.delete(gone);
  await expireEvents(server, ws.id);
  const state = (await readState())!;
  assert.ok(gone in state.contacts);

  const logged: string[] = [];
  await run({
    baseUrl: server.baseUrl,
    apiKey: ws.key,
    statePath,
    watch: false,
    pageSize: 50,
    log: (line) => logged.push(line),
  });
  assert.ok(
    logged.some((line) => /resynchronizing/.test(line)),
    logged.join('\n'),
  );
  const { state: after, expected } = await upToDate();
  assert.equal(gone in after!.contacts, false);
  assert.deepEqual(after!.contacts, expected);
  assert.equal(after!.seen, null);
  assert.equal(after!.phase, 'follow');
});

test('an earlier event of a contact deleted since carries its tombstone: the copy stores nothing of it', async () => {
  const created = await server.request('POST', '/v2/contacts', { key: ws.key, body: contactBody(), idem: idem() });
  const id: string = created.json.data.id;
  await ownerCommands.deleteContact(server.owner, { contactId: id });
  const feed = await server.request('GET', `/v2/events?resource_id=${id}`, { key: ws.key });
  const [creation, deletion] = feed.json.data;
  assert.equal(creation.type, 'contact.created');
  assert.deepEqual(Object.keys(creation.data).sort(), ['external_id', 'id']);
  // A follower that reads the page with the creation before the one with the deletion.
  const copy: SyncState['contacts'] = {};
  assert.equal(applyEvent(copy, creation), false);
  assert.deepEqual(copy, {});
  assert.equal(deletion.type, 'contact.deleted');
  assert.equal(applyEvent(copy, deletion), false);
});
