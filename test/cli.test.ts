// The owner CLI against a REAL server process: `bin/workspace-api serve` runs on a free port over
// the store of this run (PostgreSQL when DATABASE_URL is set, otherwise a fresh embedded DATA_DIR),
// and the CLI is driven with child_process while it runs, exactly as a workspace owner would. What
// the owner does (revoke, suspend, rotate, expire) must reach the running server within a second.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sleep, STORE } from './harness.js';
import { cleanUpProcesses, cli, startServer, stopServer, storeEnv, tempDir, type ServerProcess } from './processes.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const KEY = /wsk_[0-9A-Za-z]{16}\.[0-9A-Za-z]{46}/g;

// ------------------------------------------------------------------------------------------ helpers

/** Runs a --json command that must succeed, and checks that it printed one JSON value and nothing else. */
async function cliJson(args: string[], env: NodeJS.ProcessEnv): Promise<any> {
  const r = await cli([...args, '--json'], env);
  assert.equal(r.code, 0, `${args.slice(0, 2).join(' ')} failed: ${r.stderr}`);
  assert.equal(r.stdout.trim().split('\n').length, 1, `${args.slice(0, 2).join(' ')} printed more than one line`);
  return JSON.parse(r.stdout);
}

interface ApiResponse {
  status: number;
  headers: Headers;
  json: any;
}

async function api(baseUrl: string, path: string, key?: string): Promise<ApiResponse> {
  const res = await fetch(baseUrl + path, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

/**
 * Polls until `probe` answers `expected`, which must happen within `limitMs` of the call (the
 * moment the CLI command returned). Returns the last response.
 */
async function expectStatusWithin(
  limitMs: number,
  probe: () => Promise<ApiResponse>,
  expected: number,
): Promise<ApiResponse> {
  const start = Date.now();
  for (;;) {
    const r = await probe();
    const elapsed = Date.now() - start;
    if (r.status === expected) {
      assert.ok(elapsed <= limitMs, `got ${expected} only after ${elapsed} ms (limit ${limitMs} ms)`);
      return r;
    }
    if (elapsed > limitMs)
      assert.fail(`still ${r.status} after ${elapsed} ms; expected ${expected} within ${limitMs} ms`);
    await sleep(50);
  }
}

const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;
const secretOf = (key: string) => key.slice(key.indexOf('.') + 1);

// ------------------------------------------------------------------------------------------ fixtures

let mainDir: string;
let env: NodeJS.ProcessEnv;
let server: ServerProcess;
/** The key used in the keys test, whose usage trail is checked later (it is written in batches). */
let usedKey: any;

/** A workspace of this file, made through the CLI once the server runs; tests add keys to it. */
let shared: any;

/** A key of `shared` made through the CLI of the running server. */
async function newKey(scopes: string, extra: string[] = []): Promise<any> {
  return cliJson(
    ['keys', 'create', '--workspace', shared.id, '--scopes', scopes, '--name', unique('cli-key'), ...extra],
    env,
  );
}

async function keyListed(id: string): Promise<any> {
  const listed: any[] = await cliJson(['keys', 'list', '--workspace', shared.id], env);
  return listed.find((k) => k.id === id);
}

/** Embedded store only, started in the background while the main server boots (each takes seconds). */
let offline: Promise<{ env: NodeJS.ProcessEnv; dir: string; name: string; ws: any; key: any }> | undefined;
let demo: Promise<{ server: ServerProcess; dir: string }> | undefined;

before(async () => {
  mainDir = tempDir();
  env = storeEnv(mainDir);
  if (STORE === 'embedded') {
    // No server runs on this DATA_DIR: the CLI opens the store itself.
    offline = (async () => {
      const dir = tempDir();
      const offlineEnv = storeEnv(dir);
      const name = unique('cli-offline');
      const ws = await cliJson(['workspaces', 'create', '--name', name], offlineEnv);
      const key = await cliJson(
        ['keys', 'create', '--workspace', ws.id, '--scopes', 'contacts:read', '--name', 'offline'],
        offlineEnv,
      );
      return { env: offlineEnv, dir, name, ws, key };
    })();
    // An empty store started with DEMO_ON_FIRST_START unset.
    demo = (async () => {
      const dir = tempDir();
      return { server: await startServer(storeEnv(dir, { DEMO_ON_FIRST_START: undefined })), dir };
    })();
    // Awaited by their tests; a failure is reported there, not as an unhandled rejection.
    offline.catch(() => undefined);
    demo.catch(() => undefined);
  }
  server = await startServer(env);
  shared = await cliJson(['workspaces', 'create', '--name', unique('cli-shared')], env);
});

after(cleanUpProcesses);

// ------------------------------------------------------------------------------------------ tests

describe('owner CLI while the server runs', () => {
  test('the server is live and ready, and made no demo workspace when DEMO_ON_FIRST_START=false', async () => {
    const health = await api(server.baseUrl, '/healthz');
    assert.equal(health.status, 200);
    const ready = await api(server.baseUrl, '/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.json.status, 'ready');
    assert.equal(typeof ready.json.checks, 'object');
    assert.equal(ready.json.checks.database, 'ok');
    assert.equal(existsSync(join(mainDir, 'demo-api-key.txt')), false);
    if (STORE === 'embedded') {
      // The embedded store of this run is fresh: only the workspace made in before(), no demo one.
      const list: any[] = await cliJson(['workspaces', 'list'], env);
      assert.deepEqual(
        list.map((w) => w.id),
        [shared.id],
      );
    }
  });

  test('workspaces create and list, as JSON and as a table', async () => {
    const zoned = await cliJson(
      ['workspaces', 'create', '--name', unique('cli-zoned'), '--timezone', 'America/Sao_Paulo'],
      env,
    );
    assert.match(zoned.id, UUID);
    assert.equal(zoned.timezone, 'America/Sao_Paulo');
    assert.equal(zoned.status, 'active');

    const name = unique('cli-plain');
    const human = await cli(['workspaces', 'create', '--name', name], env);
    assert.equal(human.code, 0, human.stderr);
    const m = /^created workspace ([0-9a-f-]{36}) \((.+), (.+)\)$/.exec(human.stdout.trim());
    assert.ok(m, `unexpected output: ${human.stdout}`);
    assert.equal(m[2], name);
    assert.equal(m[3], 'UTC');
    const plainId = m[1]!;

    const list: any[] = await cliJson(['workspaces', 'list'], env);
    const byId = new Map(list.map((w) => [w.id, w]));
    assert.equal(byId.get(zoned.id)?.timezone, 'America/Sao_Paulo');
    assert.equal(byId.get(plainId)?.name, name);
    assert.equal(byId.get(plainId)?.status, 'active');

    const table = await cli(['workspaces', 'list'], env);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+NAME\s+STATUS\s+TIMEZONE\s+CREATED_AT$/);
    const row = lines.find((l) => l.startsWith(plainId));
    assert.ok(row, 'the new workspace is not in the table');
    assert.deepEqual(row.split(/\s{2,}/).slice(0, 4), [plainId, name, 'active', 'UTC']);
    assert.ok(lines.some((l) => l.startsWith(zoned.id) && l.includes('America/Sao_Paulo')));
  });

  test('keys create prints the key once; keys list shows scopes, expiry, rate limit and usage, never the secret', async () => {
    const ws = await cliJson(['workspaces', 'create', '--name', unique('cli-keys')], env);
    const scopes = ['contacts:read', 'appointments:read'];
    const key = await cliJson(
      [
        'keys',
        'create',
        '--workspace',
        ws.id,
        '--scopes',
        scopes.join(','),
        '--name',
        'integration',
        '--rate-limit',
        '120/min',
      ],
      env,
    );
    assert.match(key.key, new RegExp(`^${KEY.source}$`));
    assert.ok(key.key.startsWith(`wsk_${key.id}.`), 'the key names its id');
    assert.equal(key.workspace_id, ws.id);
    assert.deepEqual(key.scopes, scopes);
    assert.equal(key.rate_limit_per_minute, 120);
    assert.equal(key.expires_at, null);

    const expiring = await cliJson(
      [
        'keys',
        'create',
        '--workspace',
        ws.id,
        '--scopes',
        'contacts:read',
        '--name',
        'expiring',
        '--expires-in',
        '30d',
        '--concurrency',
        '3',
      ],
      env,
    );
    assert.equal(expiring.concurrency_limit, 3, 'its own number of requests at once');
    assert.equal(key.concurrency_limit, null, 'the deployment default');
    const zero = await cli(
      ['keys', 'create', '--workspace', ws.id, '--scopes', 'contacts:read', '--name', 'z', '--concurrency', '0'],
      env,
    );
    assert.equal(zero.code, 1);
    assert.match(zero.stderr, /concurrency limit must be a whole number of requests from 1 to 10000/);
    const expiresIn = Date.parse(expiring.expires_at) - Date.now();
    assert.ok(Math.abs(expiresIn - 30 * 86_400_000) < 60_000, `expires_at ${expiring.expires_at} is not 30 days away`);
    assert.equal(expiring.rate_limit_per_minute, 600, 'the default rate limit');

    // Without --json the key is printed exactly once, with the warning that it is not shown again.
    const human = await cli(
      ['keys', 'create', '--workspace', ws.id, '--scopes', 'contacts:read', '--name', 'human'],
      env,
    );
    assert.equal(human.code, 0, human.stderr);
    const printed = human.stdout.match(KEY) ?? [];
    assert.equal(printed.length, 1, 'the key is printed once');
    assert.match(human.stdout, /only time the key is shown/);
    const humanKey = printed[0];

    // The key works over HTTP, with its own rate limit.
    const r = await api(server.baseUrl, '/v1/contacts', key.key);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('ratelimit-limit'), '120');
    assert.equal((await api(server.baseUrl, '/v1/contacts', humanKey)).status, 200);

    const secrets = [key.key, expiring.key, humanKey].flatMap((k: string) => [
      k,
      secretOf(k),
      secretOf(k).slice(0, 40),
    ]);
    const listJson = await cli(['keys', 'list', '--workspace', ws.id, '--json'], env);
    assert.equal(listJson.code, 0, listJson.stderr);
    const everyKey = await cli(['keys', 'list', '--json'], env);
    const table = await cli(['keys', 'list', '--workspace', ws.id], env);
    for (const out of [listJson, everyKey, table]) {
      assert.equal(out.code, 0, out.stderr);
      for (const s of secrets)
        assert.ok(!out.stdout.includes(s) && !out.stderr.includes(s), 'keys list shows a secret');
    }

    const listed: any[] = JSON.parse(listJson.stdout);
    assert.deepEqual(listed.map((k) => k.id).sort(), [key.id, expiring.id, humanKey.slice(4, 20)].sort());
    for (const k of listed) {
      for (const forbidden of ['key', 'secret', 'secret_sha256'])
        assert.ok(!(forbidden in k), `keys list has ${forbidden}`);
      assert.equal(k.workspace_id, ws.id);
      assert.ok(Array.isArray(k.scopes));
      assert.ok('expires_at' in k);
      assert.equal(typeof k.rate_limit_per_minute, 'number');
      assert.equal(k.status, 'active');
      assert.equal(typeof k.requests_today, 'number');
      assert.equal(typeof k.requests_last_7_days, 'number');
      assert.ok(Array.isArray(k.usage_by_day));
    }
    const mine = listed.find((k) => k.id === key.id);
    assert.deepEqual(mine.scopes, scopes);
    assert.equal(mine.rate_limit_per_minute, 120);
    assert.equal(mine.expires_at, null);
    assert.equal(listed.find((k) => k.id === expiring.id).expires_at, expiring.expires_at);

    const rows = table.stdout.trimEnd().split('\n');
    assert.match(
      rows[0]!,
      /^ID\s+WORKSPACE_ID\s+NAME\s+STATUS\s+SCOPES\s+RATE_LIMIT\s+AT_ONCE\s+EXPIRES\s+LAST_USED\s+TODAY\s+LAST_7_DAYS\s+ERRORS$/,
    );
    const row = rows.find((l) => l.startsWith(key.id));
    assert.ok(row, 'the key is not in the table');
    assert.match(row, /contacts:read,appointments:read\s+120\/min\s+default\s+never/);
    assert.match(
      rows.find((l) => l.startsWith(expiring.id))!,
      /contacts:read\s+600\/min\s+3\s+20\d\d-/,
    );

    usedKey = key;
  });

  test('keys revoke: the running server refuses the key within one second', async () => {
    const key = await newKey('contacts:read');
    // Used first, so the server has the key in its credential cache.
    assert.equal((await api(server.baseUrl, '/v1/contacts', key.key)).status, 200);
    assert.equal((await api(server.baseUrl, '/v1/contacts', key.key)).status, 200);
    const revoke = await cli(['keys', 'revoke', key.id], env);
    assert.equal(revoke.code, 0, revoke.stderr);
    const refused = await expectStatusWithin(1_000, () => api(server.baseUrl, '/v1/contacts', key.key), 401);
    assert.equal(refused.json.error.type, 'authentication_error');
    const listed = await keyListed(key.id);
    assert.equal(listed.status, 'revoked');
    assert.ok(listed.revoked_at);
  });

  test('workspaces suspend: 403 within one second; resume: 200 again within one second', async () => {
    const ws = await cliJson(['workspaces', 'create', '--name', unique('cli-suspend')], env);
    const key = await cliJson(
      ['keys', 'create', '--workspace', ws.id, '--scopes', 'contacts:read', '--name', 'suspended'],
      env,
    );
    assert.equal((await api(server.baseUrl, '/v1/contacts', key.key)).status, 200);
    const suspend = await cli(['workspaces', 'suspend', ws.id], env);
    assert.equal(suspend.code, 0, suspend.stderr);
    const refused = await expectStatusWithin(1_000, () => api(server.baseUrl, '/v1/contacts', key.key), 403);
    assert.equal(refused.json.error.type, 'permission_error');
    assert.equal(refused.json.error.code, 'workspace_suspended');
    const listed = (await cliJson(['workspaces', 'list'], env)).find((w: any) => w.id === ws.id);
    assert.equal(listed.status, 'suspended');

    const resume = await cli(['workspaces', 'resume', ws.id], env);
    assert.equal(resume.code, 0, resume.stderr);
    await expectStatusWithin(1_000, () => api(server.baseUrl, '/v1/contacts', key.key), 200);
  });

  test('keys create --expires-in: the key works, then is refused within one second of its expiry', async () => {
    // 2s rather than 1s: the first request must surely land before the expiry on a busy machine.
    const key = await newKey('contacts:read', ['--expires-in', '2s']);
    const expiresAt = Date.parse(key.expires_at);
    assert.ok(Math.abs(expiresAt - Date.parse(key.created_at) - 2_000) < 1_000, 'expires_at is 2s after creation');
    assert.equal((await api(server.baseUrl, '/v1/contacts', key.key)).status, 200);
    await sleep(Math.max(0, expiresAt - Date.now()));
    const refused = await expectStatusWithin(1_000, () => api(server.baseUrl, '/v1/contacts', key.key), 401);
    assert.equal(refused.json.error.type, 'authentication_error');
    assert.equal((await keyListed(key.id)).status, 'expired');
  });

  test('keys rotate --grace: the new key works at once, the old one until the grace ends', async () => {
    const key = await newKey('contacts:read,appointments:read', ['--rate-limit', '300/min']);
    assert.equal((await api(server.baseUrl, '/v1/contacts', key.key)).status, 200);
    // A 2s grace leaves room to observe the old key still working on a busy machine.
    const rotated = await cliJson(['keys', 'rotate', key.id, '--grace', '2s'], env);
    const oldProbe = () => api(server.baseUrl, '/v1/contacts', key.key);
    assert.equal((await oldProbe()).status, 200, 'the old key works during the grace period');
    const fresh = rotated.new_key;
    assert.notEqual(fresh.id, key.id);
    assert.notEqual(fresh.key, key.key);
    assert.deepEqual(fresh.scopes, key.scopes);
    assert.equal(fresh.rate_limit_per_minute, 300);
    assert.equal(fresh.workspace_id, key.workspace_id);
    assert.equal(rotated.old_key.id, key.id);
    assert.equal(rotated.old_key.rotated_to, fresh.id);
    const graceEnds = Date.parse(rotated.old_key.expires_at);
    assert.ok(graceEnds - Date.now() <= 2_000, 'the grace period is at most 2s');
    const newProbe = () => api(server.baseUrl, '/v1/appointments', fresh.key);
    assert.equal((await newProbe()).status, 200, 'the new key works at once');

    await sleep(Math.max(0, graceEnds - Date.now()));
    await expectStatusWithin(1_000, oldProbe, 401);
    assert.equal((await newProbe()).status, 200, 'the new key still works');
  });

  test('keys rotate --grace 0: the old key is refused at once (after a leak, no grace at all)', async () => {
    const key = await newKey('contacts:read');
    assert.equal((await api(server.baseUrl, '/v1/contacts', key.key)).status, 200);
    const rotated = await cliJson(['keys', 'rotate', key.id, '--grace', '0'], env);
    await expectStatusWithin(1_000, () => api(server.baseUrl, '/v1/contacts', key.key), 401);
    assert.equal((await api(server.baseUrl, '/v1/contacts', rotated.new_key.key)).status, 200);
  });

  test('seed: the API then lists 5 more contacts and 7 more appointments', async () => {
    const key = await newKey('contacts:read,appointments:read');
    const count = async (path: string) => {
      const r = await api(server.baseUrl, `${path}?limit=100`, key.key);
      assert.equal(r.status, 200);
      assert.equal(r.json.page.has_more, false);
      return r.json.data.length as number;
    };
    const contactsBefore = await count('/v1/contacts');
    const appointmentsBefore = await count('/v1/appointments');
    const summary = await cliJson(['seed', '--workspace', shared.id, '--contacts', '5', '--appointments', '7'], env);
    assert.equal(summary.contacts, 5);
    assert.equal(summary.appointments, 7);
    assert.equal(await count('/v1/contacts'), contactsBefore + 5);
    assert.equal(await count('/v1/appointments'), appointmentsBefore + 7);
  });

  test('contacts delete --ids-file: 1,000 contacts in one run, as the product deletes them; stdin; bad lines refuse the run', async (t) => {
    const ws = await cliJson(['workspaces', 'create', '--name', unique('cli-bulk-delete')], env);
    const key = (
      await cliJson(
        ['keys', 'create', '--workspace', ws.id, '--scopes', 'contacts:read,events:read', '--name', 'bulk'],
        env,
      )
    ).key as string;
    await cliJson(['seed', '--workspace', ws.id, '--contacts', '1003'], env);
    const ids: string[] = [];
    for (let path = '/v2/contacts?limit=100'; ;) {
      const r = await api(server.baseUrl, path, key);
      assert.equal(r.status, 200);
      ids.push(...r.json.data.map((c: { id: string }) => c.id));
      if (!r.json.page.has_more) break;
      path = `/v2/contacts?limit=100&cursor=${encodeURIComponent(r.json.page.next_cursor)}`;
    }
    assert.equal(ids.length, 1003);
    const head = (await api(server.baseUrl, '/v2/events/head', key)).json.data.position as string;
    const missing = randomUUID();
    const file = join(tempDir(), 'ids.txt');
    writeFileSync(
      file,
      `# contacts to delete\n${ids.slice(0, 999).join('\n')}\n${ids[999]}  # the last one\n\n${missing}\n${ids[0]}\n`,
    );

    const bad = join(tempDir(), 'bad.txt');
    writeFileSync(bad, `${ids[1000]}\nnot-an-id\n${ids[1001]}\n`);
    const refused = await cli(['contacts', 'delete', '--ids-file', bad], env);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /not a contact id \(a UUID\) on line 2; nothing was deleted/);
    assert.doesNotMatch(refused.stderr, /Usage:/, 'a problem of the file, not of the command line');

    const started = Date.now();
    const result = await cliJson(['contacts', 'delete', '--ids-file', file], env);
    t.diagnostic(`1,000 contacts deleted in one run in ${Date.now() - started} ms (process start included)`);
    assert.equal(result.deleted.length, 1000);
    assert.deepEqual(result.not_found, [missing]);
    assert.ok(result.deleted.every((d: { workspace_id: string }) => d.workspace_id === ws.id));

    const human = await cli(['contacts', 'delete', '--ids-file', '-'], env, `${ids[1002]}\n${missing}\n`);
    assert.equal(human.code, 0, human.stderr);
    assert.equal(human.stdout, `deleted 1 contacts\n1 not found: ${missing}\n`);

    const left = await api(server.baseUrl, '/v2/contacts?limit=100', key);
    assert.deepEqual(left.json.data.map((c: { id: string }) => c.id).sort(), [ids[1000], ids[1001]].sort());
    // The feed has one contact.deleted per contact deleted.
    let tombstones = 0;
    for (let path = `/v2/events?after=${head}&limit=100`; ;) {
      const r = await api(server.baseUrl, path, key);
      tombstones += r.json.data.filter((e: { type: string }) => e.type === 'contact.deleted').length;
      if (!r.json.page.has_more) break;
      path = `/v2/events?limit=100&cursor=${encodeURIComponent(r.json.page.next_cursor)}`;
    }
    assert.equal(tombstones, 1001);
  });

  test('keys usage and keys list report the requests made with a key', async () => {
    assert.ok(usedKey, 'the keys test did not run');
    const key = usedKey;
    // The usage trail is written in batches (every few seconds): wait for the request made above.
    let usage: any;
    const deadline = Date.now() + 15_000;
    do {
      await sleep(500);
      usage = await cliJson(['keys', 'usage', key.id], env);
    } while (!usage.usage.some((u: any) => u.operation === 'listContacts') && Date.now() < deadline);
    assert.equal(usage.key.id, key.id);
    const listRow = usage.usage.find((u: any) => u.operation === 'listContacts');
    assert.ok(listRow, 'keys usage never showed the listContacts request');
    assert.ok(listRow.requests >= 1);
    assert.equal(listRow.day, new Date().toISOString().slice(0, 10));
    const listed = (await cliJson(['keys', 'list', '--workspace', key.workspace_id], env)).find(
      (k: any) => k.id === key.id,
    );
    assert.ok(listed.requests_today >= 1);
    assert.ok(listed.requests_last_7_days >= 1);
    assert.ok(listed.last_used_at, 'last_used_at is set once the key was used');
  });

  test('usage errors exit 2 with the usage text on stderr', async () => {
    const ws = shared;
    const never = unique('never-created');
    const cases: [string[], RegExp][] = [
      [['frobnicate'], /unknown command frobnicate/],
      [['workspaces', 'create'], /--name is required/],
      [['workspaces', 'explode'], /workspaces needs one of/],
      [['keys', 'create', '--workspace', ws.id, '--scopes', 'contacts:read'], /--name is required/],
      [
        ['keys', 'create', '--workspace', ws.id, '--name', never, '--scopes', 'contacts:read', '--expires-in', 'soon'],
        /--expires-in/,
      ],
      [['workspaces', 'list', '--no-such-flag'], /no-such-flag/],
    ];
    const results = await Promise.all(cases.map(([args]) => cli(args, env)));
    for (const [i, [args, message]] of cases.entries()) {
      const r = results[i]!;
      assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code}, stderr ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.match(r.stderr, /Usage: workspace-api/, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
    const keys: any[] = await cliJson(['keys', 'list', '--workspace', ws.id], env);
    assert.ok(!keys.some((k) => k.name === never), 'a refused command created a key');
  });

  test('owner errors exit 1 with a message on stderr and change nothing', async () => {
    const ws = shared;
    const never = unique('never-created');
    const cases: [string[], RegExp][] = [
      [['keys', 'create', '--workspace', randomUUID(), '--scopes', 'contacts:read', '--name', 'x'], /No workspace/],
      [
        ['keys', 'create', '--workspace', ws.id, '--scopes', 'contacts:read,contacts:delete', '--name', never],
        /Unknown scope/,
      ],
      [['workspaces', 'create', '--name', never, '--timezone', 'Mars/Olympus_Mons'], /time zone/],
      [['workspaces', 'suspend', randomUUID()], /No workspace/],
      [['seed', '--workspace', randomUUID(), '--contacts', '1'], /No workspace/],
      [['keys', 'revoke', 'NoSuchKeyId00000'], /No API key/],
    ];
    const results = await Promise.all(cases.map(([args]) => cli(args, env)));
    for (const [i, [args, message]] of cases.entries()) {
      const r = results[i]!;
      assert.equal(r.code, 1, `${args.join(' ')}: exit ${r.code}, stderr ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.match(r.stderr, /^workspace-api: /);
      assert.doesNotMatch(r.stderr, /Usage:/, 'owner errors are not usage errors');
      assert.equal(r.stdout, '', args.join(' '));
    }
    const [keys, workspaces] = await Promise.all([
      cliJson(['keys', 'list', '--workspace', ws.id], env),
      cliJson(['workspaces', 'list'], env),
    ]);
    assert.ok(!keys.some((k: any) => k.name === never), 'the key with an unknown scope was created');
    assert.ok(!workspaces.some((w: any) => w.name === never), 'the workspace with a bad time zone was created');
  });
});

if (STORE === 'embedded') {
  describe('embedded store', () => {
    test('without a server the CLI opens DATA_DIR itself; a server started later sees its workspace and key', async () => {
      const { env: localEnv, dir, name, ws, key } = await offline!;
      assert.ok(existsSync(join(dir, 'pgdata')), 'the CLI wrote the store under DATA_DIR');

      const local = await startServer(localEnv);
      const r = await api(local.baseUrl, '/v1/contacts', key.key);
      assert.equal(r.status, 200);
      assert.deepEqual(r.json.data, []);
      // While it runs, the CLI goes through the server and still sees the same data.
      const listed: any[] = await cliJson(['workspaces', 'list'], localEnv);
      assert.deepEqual(
        listed.map((w) => [w.id, w.name]),
        [[ws.id, name]],
      );
      assert.equal(await stopServer(local), 0);
      // Stopped gracefully, the server released DATA_DIR: the CLI opens it directly again.
      const again: any[] = await cliJson(['workspaces', 'list'], localEnv);
      assert.deepEqual(
        again.map((w) => w.id),
        [ws.id],
      );
    });

    test('first start of an empty store makes a demo workspace and writes its key to DATA_DIR/demo-api-key.txt', async () => {
      const { server: demoServer, dir } = await demo!;
      const file = join(dir, 'demo-api-key.txt');
      assert.ok(existsSync(file), 'demo-api-key.txt was not written');
      assert.equal(statSync(file).mode & 0o777, 0o600, 'the key file is readable by its owner only');
      // The key alone (and a final newline), so `API_KEY=$(cat file)` is the key and nothing else.
      const held = readFileSync(file, 'utf8');
      const found = held.match(KEY);
      assert.ok(found, 'demo-api-key.txt holds no API key');
      const demoKey = found[0];
      assert.equal(held, `${demoKey}\n`, 'demo-api-key.txt holds the key alone');
      const { stdout, stderr } = demoServer.output();
      assert.ok(
        !stdout.includes(secretOf(demoKey)) && !stderr.includes(secretOf(demoKey)),
        'the server printed the key',
      );
      assert.ok(stdout.includes(file), 'the server says where the key is');

      const contacts = await api(demoServer.baseUrl, '/v1/contacts?limit=100', demoKey);
      assert.equal(contacts.status, 200);
      assert.equal(contacts.json.data.length, 25);
      const appointments = await api(demoServer.baseUrl, '/v1/appointments?limit=100', demoKey);
      assert.equal(appointments.status, 200);
      assert.equal(appointments.json.data.length, 15);
      assert.equal(await stopServer(demoServer), 0);
    });
  });
}

describe('shutdown', () => {
  if (STORE === 'postgres') {
    // (The embedded tests above stop their servers the same way.)
    test('SIGTERM with nothing in flight: the server exits 0', async () => {
      const idle = await startServer(env);
      assert.equal((await api(idle.baseUrl, '/readyz')).status, 200);
      const code = await Promise.race([stopServer(idle), sleep(15_000).then(() => 'timeout' as const)]);
      assert.equal(code, 0, `the server exited with ${String(code)}: ${idle.output().stdout}`);
    });
  }

  test('at info, every request has its line on standard output when the server exits', async () => {
    // A store of its own on the embedded store: the shared server holds the shared one.
    const logging = await startServer(storeEnv(tempDir(), { LOG_LEVEL: 'info' }));
    const ids: string[] = [];
    // Ten clients at once, so that lines are written while earlier writes are still in flight.
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        for (let i = 0; i < 40; i++) {
          const r = await fetch(`${logging.baseUrl}/healthz`);
          await r.body?.cancel();
          ids.push(r.headers.get('x-request-id') ?? '');
        }
      }),
    );
    // Stopped as soon as the last answer is in: lines still buffered must be written before exit.
    assert.equal(await stopServer(logging), 0);
    const lines = logging
      .output()
      .stdout.split('\n')
      .filter((l) => l !== '');
    const completed = new Set<string>();
    for (const line of lines) {
      const entry = JSON.parse(line) as { msg?: string; reqId?: string };
      if (entry.msg === 'request completed' && entry.reqId) completed.add(entry.reqId);
    }
    const missing = ids.filter((id) => !completed.has(id));
    assert.deepEqual(missing, [], `${missing.length} of ${ids.length} requests have no line`);
  });

  test('SIGTERM: a request in flight still completes, then the server exits 0', async () => {
    const key = await newKey('contacts:read,contacts:write');
    const url = new URL('/v1/contacts', server.baseUrl);
    const body = JSON.stringify({ name: 'In Flight', email: `in.flight.${randomUUID().slice(0, 8)}@example.com` });
    const agent = new Agent({ keepAlive: true });
    // A create whose body arrives in two halves: the server has the request (headers read, key
    // checked) but cannot answer before the second half, sent only after SIGTERM.
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${key.key}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'idempotency-key': `shutdown-${randomUUID()}`,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      setTimeout(() => {
        server.proc.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(10)), 300);
      }, 500);
    });
    const done = await response;
    assert.equal(done.status, 201, done.text);
    assert.equal(JSON.parse(done.text).data.name, 'In Flight');
    const code = await Promise.race([server.exited, sleep(15_000).then(() => 'timeout' as const)]);
    agent.destroy();
    const { stdout, stderr } = server.output();
    assert.equal(code, 0, `the server exited with ${String(code)}: ${stdout}${stderr}`);
    await assert.rejects(fetch(`${server.baseUrl}/healthz`), 'the server no longer listens');
  });
});
