// Shows that two revisions of the published documents say the same thing, whatever their
// structure: both are dereferenced (every $ref replaced by its target) and compared value by value.
// Prints each path where they differ; exits 1 if any does.
//   npm run openapi:compare -- <git revision>      (the committed documents at that revision)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { dereference } from './openapi-dereference.js';
import { PUBLISHED_VERSIONS } from './openapi.js';

type Json = Record<string, unknown>;

/** Paths (a/b/c) where two JSON values differ. */
export function differences(a: unknown, b: unknown, at = ''): string[] {
  if (isDeepStrictEqual(a, b)) return [];
  const bothObjects = a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b);
  if (!bothObjects) return [at || '/'];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].flatMap((k) => differences((a as Json)[k], (b as Json)[k], `${at}/${k}`));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const revision = process.argv[2];
  if (!revision) {
    process.stderr.write('usage: npm run openapi:compare -- <git revision>\n');
    process.exit(2);
  }
  let failed = false;
  for (const v of PUBLISHED_VERSIONS) {
    const before: unknown = JSON.parse(
      execFileSync('git', ['show', `${revision}:docs/openapi/${v}.json`], { encoding: 'utf8' }),
    );
    const now: unknown = JSON.parse(readFileSync(new URL(`../docs/openapi/${v}.json`, import.meta.url), 'utf8'));
    const diff = differences(dereference(before), dereference(now));
    process.stdout.write(`${v}: ${diff.length === 0 ? 'the same once dereferenced' : `${diff.length} differences`}\n`);
    for (const d of diff.slice(0, 50)) process.stdout.write(`  ${d}\n`);
    failed ||= diff.length > 0;
  }
  process.exit(failed ? 1 : 0);
}
