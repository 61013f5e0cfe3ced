// The layers of src/ only point down: a file may import from its own layer or the ones below it,
// never from above. The order, bottom to top, is the one README.md's layout section describes.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const SRC = path.resolve(import.meta.dirname, '../src');

const LAYERS: [name: string, matches: (file: string) => boolean][] = [
  [
    'shared (pure vocabulary: errors, scopes, schemas, cursors) and config',
    (f) => f.startsWith('shared/') || f === 'config.ts',
  ],
  ['infra (database, stores, limiter)', (f) => f.startsWith('infra/')],
  ['modules: schemas, repositories, domain services', (f) => f.startsWith('modules/') && !f.endsWith('.routes.ts')],
  ['services.ts (what routes are handed)', (f) => f === 'services.ts'],
  ['http (route helpers: lists, gets, writes, responses)', (f) => f.startsWith('http/')],
  ['modules: routes; plugins (hooks)', (f) => f.endsWith('.routes.ts') || f.startsWith('plugins/')],
  ['api (versions, OpenAPI, docs, health)', (f) => f.startsWith('api/')],
  ['composition (app, server, cluster, CLI)', () => true],
];

const layerOf = (file: string): number => LAYERS.findIndex(([, matches]) => matches(file));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [path.relative(SRC, full)] : [];
  });
}

/** Relative imports of a file (type-only ones too: they couple the layers all the same). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(SRC, file), 'utf8');
  return [...text.matchAll(/(?:from\s+|import\()['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) =>
    path.relative(SRC, path.resolve(path.dirname(path.join(SRC, file)), m[1]!.replace(/\.js$/, '.ts'))),
  );
}

test('no import in src/ runs up the layers', () => {
  const files = sourceFiles(SRC);
  assert.ok(files.length > 40, 'the walk found the sources');
  const upward = files.flatMap((file) =>
    importsOf(file)
      .filter((target) => layerOf(target) > layerOf(file))
      .map((target) => `${file} (${LAYERS[layerOf(file)]![0]}) imports ${target} (${LAYERS[layerOf(target)]![0]})`),
  );
  assert.deepEqual(upward, []);
});

test('shared/ imports nothing outside itself', () => {
  const outside = sourceFiles(SRC)
    .filter((f) => f.startsWith('shared/'))
    .flatMap((file) =>
      importsOf(file)
        .filter((t) => !t.startsWith('shared/'))
        .map((t) => `${file} imports ${t}`),
    );
  assert.deepEqual(outside, []);
});

test('every resource module has the one shape: schemas, repository, routes', () => {
  // Not resources of the API: keys, the owner's commands, outbound webhooks (managed by the owner).
  // modules/resources.ts is the table of the resources these modules declare.
  const resources = readdirSync(path.join(SRC, 'modules'), { withFileTypes: true })
    .filter((m) => m.isDirectory() && !['api-keys', 'owner', 'webhooks'].includes(m.name))
    .map((m) => m.name);
  assert.deepEqual(resources.sort(), [
    'appointments',
    'automations',
    'catalog',
    'contacts',
    'conversations',
    'events',
    'pipeline',
    'workspaces',
  ]);
  for (const resource of resources) {
    const files = readdirSync(path.join(SRC, 'modules', resource));
    for (const part of ['schemas', 'repository', 'routes']) {
      assert.ok(files.includes(`${resource}.${part}.ts`), `modules/${resource} has no ${resource}.${part}.ts`);
    }
  }
});
