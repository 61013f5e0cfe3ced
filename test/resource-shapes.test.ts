// Each resource's shape has one home: its schema (src/modules/resources.ts lists them). The read
// select lists and the database's representation functions are derived from it
// (src/infra/representation.ts), the Python client's resource types are generated from it, test
// fixtures are made from it (test/samples.ts), and which scope reads which resource is one table.
// These tests fail when a copy of a field list or of the scope table comes back.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { RESOURCE_TYPES, RESOURCES } from '../src/modules/resources.js';
import { SCOPES } from '../src/shared/scopes.js';
import { PYTHON_RESOURCES_FILE, pythonResourceTypes } from '../scripts/python-types.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const SOURCE_DIRS = ['src', 'db', 'test', 'clients', 'bench', 'scripts', 'examples'];
const SOURCE = /\.(ts|mts|cts|tsx|js|mjs|cjs|py|pyi|sql)$/;

/** Source files of the repository; generated files (marked "do not edit") and fixtures of earlier releases are not source. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (['node_modules', '__pycache__', 'dist'].includes(name)) return [];
    // The migration files of a release, exactly as it shipped them: history, not source.
    if (full === path.join(ROOT, 'test', 'fixtures', 'released-schema')) return [];
    if (statSync(full).isDirectory()) return sourceFiles(full);
    if (!SOURCE.test(name)) return [];
    // The two generators' own marks: openapi-typescript's clients and the Python resource types.
    const head = readFileSync(full, 'utf8').slice(0, 600);
    return head.startsWith('// generated — do not edit.') || head.includes('\nGenerated: do not edit.\n') ? [] : [full];
  });
}

/**
 * The places of `file` that name every one of `names` within `span` lines: a field list. Each place
 * is reported at its first line.
 */
export function fieldLists(text: string, names: readonly string[], span = 30): number[] {
  const wanted = new Set(names);
  const lastSeen = new Map<string, number>();
  const places: number[] = [];
  text.split('\n').forEach((line, i) => {
    for (const word of line.match(/[A-Za-z_]+/g) ?? []) if (wanted.has(word)) lastSeen.set(word, i);
    if (lastSeen.size === wanted.size) {
      const first = Math.min(...lastSeen.values());
      if (i - first <= span) {
        places.push(first + 1);
        lastSeen.clear();
      }
    }
  });
  return places;
}

test('the field list finder finds a list, across lines, and not names scattered far apart', () => {
  assert.deepEqual(fieldLists('a, b,\n c', ['a', 'b', 'c']), [1]);
  assert.deepEqual(fieldLists(`a\n${'\n'.repeat(40)}b c`, ['a', 'b', 'c']), []);
  assert.deepEqual(fieldLists('a b c\nx\na b c', ['a', 'b', 'c']), [1, 3]);
});

test("a contact's field list appears in source in two places: its declaration and its table's DDL", () => {
  const names = Object.keys(RESOURCES.contact.item.properties);
  assert.ok(names.length >= 10 && names.includes('whatsapp'), 'the contact has its properties');
  const places = SOURCE_DIRS.flatMap((dir) => sourceFiles(path.join(ROOT, dir))).flatMap((file) =>
    fieldLists(readFileSync(file, 'utf8'), names).map((line) => `${path.relative(ROOT, file)}:${line}`),
  );
  const declaration = places.filter((p) => p.startsWith('src/modules/contacts/contacts.schemas.ts:'));
  const ddl = places.filter(
    (p) => p.startsWith('db/') && /CREATE TABLE contacts/.test(readFileSync(path.join(ROOT, p.split(':')[0]!), 'utf8')),
  );
  assert.equal(declaration.length, 1, `the declaration: ${places.join(', ')}`);
  assert.equal(ddl.length, 1, `the table's DDL: ${places.join(', ')}`);
  assert.deepEqual(places.sort(), [...declaration, ...ddl].sort(), "no other place lists the contact's fields");
});

test("every other resource's field list appears only in its declaration and its table's DDL", () => {
  for (const type of RESOURCE_TYPES) {
    const names = Object.keys(RESOURCES[type].item.properties);
    // Five words as common as id, name, position are found together in any comment.
    if (names.length < 6) continue;
    const places = ['src', 'db', 'clients', 'scripts', 'examples']
      .flatMap((dir) => sourceFiles(path.join(ROOT, dir)))
      .flatMap((file) =>
        fieldLists(readFileSync(file, 'utf8'), names).map((line) => `${path.relative(ROOT, file)}:${line}`),
      )
      // The tables' DDL, and the owner's seed, which writes a table's columns (internal ones too).
      .filter((p) => !p.startsWith('db/migrations/') && !p.startsWith('src/modules/owner/seed.ts:'));
    assert.equal(places.length, 1, `${type}: ${places.join(', ')}`);
    assert.match(places[0]!, /^src\/modules\/.+\.schemas\.ts:/, type);
  }
});

test("the Python client's resource types are the ones generated from the schemas", () => {
  assert.equal(
    readFileSync(PYTHON_RESOURCES_FILE, 'utf8'),
    pythonResourceTypes(),
    'clients/python/workspace_api/resources.py is stale: run npm run python-types',
  );
});

test('which scope reads which resource is said in one place', () => {
  const readScopes = SCOPES.filter((s) => s.endsWith(':read') && s !== 'events:read');
  assert.deepEqual(
    [...new Set(RESOURCE_TYPES.map((t) => RESOURCES[t].readScope))].sort(),
    [...readScopes].sort(),
    'every read scope reads some resource',
  );
  const elsewhere = sourceFiles(path.join(ROOT, 'src'))
    .filter((f) => !f.endsWith('src/shared/scopes.ts') && !f.endsWith('src/modules/resources.ts'))
    .flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return readScopes.filter((s) => text.includes(`'${s}'`)).map((s) => `${path.relative(ROOT, file)} names ${s}`);
    });
  assert.deepEqual(elsewhere, []);
});
