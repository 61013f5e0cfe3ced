// Writes the published interface descriptions to docs/openapi/, where they are committed: a change
// to the contract shows up in review as a diff, and test/openapi-artifact.test.ts fails when the
// served documents and the committed ones part ways. Run: npm run openapi
import { writeFileSync } from 'node:fs';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createEmbeddedDatabase } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';

export const PUBLISHED_VERSIONS = ['v1', 'v2'] as const;

/** The documents as served under the default configuration, or under `env` when given. */
export async function renderDocuments(env: Record<string, string> = {}): Promise<Record<string, string>> {
  const db = await createEmbeddedDatabase(null);
  await migrate(db, GENERATED_DATABASE_CODE);
  const built = await buildApp(loadConfig({ ...env, LOG_LEVEL: 'silent' }), db, { logger: false });
  try {
    const out: Record<string, string> = {};
    for (const v of PUBLISHED_VERSIONS) {
      const res = await built.app.inject({ method: 'GET', url: `/${v}/openapi.json` });
      out[v] = `${JSON.stringify(res.json(), null, 2)}\n`;
    }
    return out;
  } finally {
    await built.close();
    await db.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [v, text] of Object.entries(await renderDocuments())) {
    writeFileSync(new URL(`../docs/openapi/${v}.json`, import.meta.url), text);
    process.stdout.write(`wrote docs/openapi/${v}.json\n`);
  }
}
