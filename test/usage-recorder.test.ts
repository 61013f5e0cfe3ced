// The usage trail counts each request under its UTC day. The day's name is worked out once a day,
// not per request: a request a millisecond either side of midnight must still land on its own day.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Database } from '../src/infra/database.js';
import { UsageRecorder } from '../src/modules/api-keys/usage-recorder.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { openTestDatabase } from './harness.js';

let db: Database;
before(async () => {
  db = await openTestDatabase();
});
after(() => db.close());

test('requests either side of midnight UTC, and back and forth across it, count on their own days', async () => {
  const owner = { db, defaultRateLimitPerMinute: 600 };
  const workspace = await ownerCommands.createWorkspace(owner, { name: 'Usage days' });
  const key = await ownerCommands.createKey(owner, { workspaceId: workspace.id, name: 'k', scopes: ['contacts:read'] });
  const recorder = new UsageRecorder(db, 3_600_000);
  const midnight = Date.parse('2026-03-01T00:00:00.000Z');
  for (const [at, status] of [
    [midnight - 1, 200],
    [midnight, 200],
    [midnight - 86_400_001, 404],
    [midnight + 86_399_999, 200],
    [midnight - 1, 429],
    [midnight + 86_400_000, 500],
  ] as const) {
    recorder.record(key.id, 'listContacts', status, at);
  }
  await recorder.close();
  const { rows } = await db.query<{ day: string; requests: number; errors: number; limited: number }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, requests::int, (client_errors + server_errors)::int AS errors,
            rate_limited::int AS limited
       FROM api_key_usage WHERE key_id = $1 ORDER BY day`,
    [key.id],
  );
  assert.deepEqual(rows, [
    { day: '2026-02-27', requests: 1, errors: 1, limited: 0 },
    { day: '2026-02-28', requests: 2, errors: 0, limited: 1 },
    { day: '2026-03-01', requests: 2, errors: 0, limited: 0 },
    { day: '2026-03-02', requests: 1, errors: 1, limited: 0 },
  ]);
});
