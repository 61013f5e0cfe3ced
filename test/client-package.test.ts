// The TypeScript client as integrators get it: `npm pack` in clients/typescript gives a tarball that
// a fresh directory installs, and a plain .mjs program imports without tsx or a TypeScript setup;
// its declarations type-check a consumer in strict mode. The program talks to a real server.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';
import { withoutRegistry } from './servers.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const CLIENT = join(ROOT, 'clients/typescript');

const noRegistry = await withoutRegistry();
let w: TestWorkspace;
let dir: string;
const server = useTestServer({
  setup: async () => {
    if (noRegistry) return;
    w = await server.workspace();
    dir = mkdtempSync(join(tmpdir(), 'client-package-'));
    await run('npm', ['pack', '--pack-destination', dir], { cwd: CLIENT });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote a tarball');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${tarball}`], { cwd: dir });
  },
});

after(async () => {
  if (noRegistry) return;
  rmSync(dir, { recursive: true, force: true });
});

const PROGRAM = `
import {
  BatchUpsertError,
  batchUpsertContacts,
  createWorkspaceApiClient,
  paginate,
  withMeta,
} from '@workspace-public-api/client';

const api = createWorkspaceApiClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY });
const items = Array.from({ length: 150 }, (_, i) => ({ external_id: 'pkg-' + i, name: 'Package ' + i }));
const results = await batchUpsertContacts(api.v2, items);
const again = await batchUpsertContacts(api.v2, items.slice(0, 3));
const page = await withMeta(api.v2.GET('/v2/contacts', { params: { query: { limit: 2 } } }));
let listed = 0;
for await (const contact of paginate((cursor) => api.v2.GET('/v2/contacts', { params: { query: { limit: 100, cursor } } }))) {
  if (contact.external_id?.startsWith('pkg-')) listed++;
}
let missing;
try {
  await withMeta(api.v2.GET('/v2/contacts/{id}', { params: { path: { id: '00000000-0000-0000-0000-000000000000' } } }));
} catch (error) {
  missing = String(error);
}
let refused;
try {
  await batchUpsertContacts(api.v2, [...items.slice(0, 100), { external_id: 'pkg-bad', email: 'not-an-email' }]);
} catch (error) {
  refused = error instanceof BatchUpsertError ? { offset: error.offset, bad: error.badItems, written: error.written.length, text: error.message.split(':')[0] } : String(error);
}
console.log(JSON.stringify({
  results: results.length,
  created: results.filter((r) => r.result === 'created').length,
  unchanged: again.map((r) => r.result),
  status: page.status,
  requestId: page.requestId,
  remaining: page.rateLimit.remaining,
  replayed: page.replayed,
  listed,
  missing,
  refused,
}));
`;

test(
  'a fresh directory installs the packed client and a plain .mjs program uses it',
  { skip: noRegistry },
  async () => {
    writeFileSync(join(dir, 'program.mjs'), PROGRAM);
    const { stdout } = await run(process.execPath, ['program.mjs'], {
      cwd: dir,
      env: { ...process.env, BASE_URL: server.baseUrl, API_KEY: w.key },
    });
    const out = JSON.parse(stdout) as Record<string, unknown>;
    assert.equal(out.results, 150, 'two requests, 100 then 50, results in input order');
    assert.equal(out.created, 150);
    assert.deepEqual(out.unchanged, ['unchanged', 'unchanged', 'unchanged']);
    assert.equal(out.status, 200);
    assert.match(String(out.requestId), /^req_/);
    assert.equal(typeof out.remaining, 'number');
    assert.equal(out.replayed, false);
    assert.equal(out.listed, 150);
    assert.match(String(out.missing), /^WorkspaceApiError: 404 resource_not_found: .+ \(request req_[\w-]+\)$/);
    assert.deepEqual(out.refused, { offset: 100, bad: [100], written: 100, text: 'items 100 to 100' });
  },
);

test('its declarations type-check a strict TypeScript consumer', { skip: noRegistry }, async () => {
  writeFileSync(
    join(dir, 'consumer.mts'),
    `import { createWorkspaceApiClient, withMeta, type Contact } from '@workspace-public-api/client';
const api = createWorkspaceApiClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'wsk_x.y' });
export async function first(): Promise<Contact | undefined> {
  const { data, status } = await withMeta(api.v2.GET('/v2/contacts', { params: { query: { limit: 1 } } }));
  const code: number = status;
  void code;
  return data.data[0];
}
`,
  );
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const args = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022'];
  args.push('--typeRoots', join(ROOT, 'node_modules/@types'), '--types', 'node', 'consumer.mts');
  await run(process.execPath, [tsc, ...args], { cwd: dir });
});
