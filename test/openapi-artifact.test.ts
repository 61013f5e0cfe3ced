// The committed interface descriptions (docs/openapi/*.json) are the published contract: the
// documents the service serves must equal them byte for byte. After an intended change, run
// `npm run openapi` and commit the diff.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { PUBLISHED_VERSIONS, renderDocuments } from '../scripts/openapi.js';

test('served OpenAPI documents equal the committed ones', async () => {
  const served = await renderDocuments();
  for (const v of PUBLISHED_VERSIONS) {
    const committed = readFileSync(new URL(`../docs/openapi/${v}.json`, import.meta.url), 'utf8');
    assert.equal(served[v], committed, `docs/openapi/${v}.json is stale: run npm run openapi`);
  }
});

test('documents are deterministic', async () => {
  const [a, b] = [await renderDocuments(), await renderDocuments()];
  assert.deepEqual(a, b);
});
