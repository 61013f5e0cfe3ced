// The published OpenAPI documents as tests read them: dereferenced, so a test walks one
// operation's answers without following references.
import { readFileSync } from 'node:fs';
import { dereference } from '../scripts/openapi-dereference.js';

export { dereference };

/** docs/openapi/<version>.json as committed, dereferenced. */
export function committedDocument(version: 'v1' | 'v2'): Record<string, any> {
  const text = readFileSync(new URL(`../docs/openapi/${version}.json`, import.meta.url), 'utf8');
  return dereference(JSON.parse(text) as Record<string, any>);
}
