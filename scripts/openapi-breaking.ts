// The breaking-change gate of version 1: the committed /v1 document must stay compatible with the
// one published as 1.0.0 (docs/openapi/baseline/v1-1.0.0.json). A client written against 1.0.0
// must keep working: no operation, parameter value, response property or status it relies on may
// disappear or tighten. api-smart-diff classifies every change between the two documents,
// dereferenced so that structure alone never counts; any change it calls breaking fails the gate. Run: npm run openapi:breaking
import { readFileSync } from 'node:fs';
import { apiDiff, breaking, type Diff } from 'api-smart-diff';
import { dereference } from './openapi-dereference.js';

const BASELINE = new URL('../docs/openapi/baseline/v1-1.0.0.json', import.meta.url);
const CURRENT = new URL('../docs/openapi/v1.json', import.meta.url);

/** The breaking changes from `before` to `after`, one line each. */
export function breakingChanges(before: unknown, after: unknown): string[] {
  // Compared dereferenced: the structure (components, $refs) is not the contract, and the
  // differ's own reference resolution mistakes nested references for removed keywords.
  return apiDiff(dereference(before), dereference(after))
    .filter((d: Diff) => d.type === breaking)
    .map((d: Diff) => `${d.action} ${(d.path ?? []).join('/')}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const read = (url: URL) => JSON.parse(readFileSync(url, 'utf8')) as unknown;
  const found = breakingChanges(read(BASELINE), read(CURRENT));
  if (found.length === 0) {
    process.stdout.write('v1: no breaking change since 1.0.0\n');
  } else {
    process.stdout.write(`v1: ${found.length} breaking changes since 1.0.0:\n${found.map((l) => `  ${l}\n`).join('')}`);
    process.exit(1);
  }
}
