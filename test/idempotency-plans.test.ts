// The claim of an Idempotency-Key reads the key's stored answer by primary key on every write. Its
// plan is cached by each database session; one planned while idempotency_keys was nearly empty (a
// new installation, or just after the expired keys were purged and the table analyzed) would scan
// the whole table on every write as it grows again, slowing every write of every workspace more
// with each key (measured with `npm run bench`: writes fell to a fifth of their rate within a
// minute). The claim reads by the index whatever the table looked like when it was planned.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { emptyDatabase } from './servers.js';

describe('the claim of an Idempotency-Key', () => {
  let store: Awaited<ReturnType<typeof emptyDatabase>>;
  let workspace: string;
  // One connection: the plan is cached by the session that made it.
  before(async () => {
    store = await emptyDatabase(1);
    await migrate(store.db, GENERATED_DATABASE_CODE);
    workspace = (
      await store.db.query<{ id: string }>(
        `INSERT INTO workspaces (name, timezone) VALUES ('Plans', 'UTC') RETURNING id`,
      )
    ).rows[0]!.id;
  });
  after(async () => {
    await store?.drop();
  });

  /** Claims `n` keys in one statement, and says how many rows of idempotency_keys sequential scans read for it. */
  const claim = (prefix: string, n: number) =>
    store.db.transaction(async (tx) => {
      await tx.query(
        `SELECT count(*) FROM generate_series(1, $3::int) AS i, LATERAL idempotency_claim($1, $2 || i, 'req_plans') AS c`,
        [workspace, prefix, n],
      );
      const { rows } = await tx.query<{ read: string }>(
        `SELECT pg_stat_get_xact_tuples_returned('idempotency_keys'::regclass) AS read`,
      );
      return Number(rows[0]!.read);
    });

  test('reads by primary key after the table grew from empty under a plan made while it was empty', async () => {
    await store.db.query('ANALYZE idempotency_keys');
    // Planned, and cached by this session, while the table is empty (after five runs the session
    // keeps one plan for every value).
    await claim('early-', 10);
    await store.db.query(
      `INSERT INTO idempotency_keys (workspace_id, key, request_sha256, status_code, response_body, expires_at)
       SELECT $1, 'grown-' || i, '\\x00', 200, '{}', now() + interval '1 day' FROM generate_series(1, 20000) AS i`,
      [workspace],
    );
    assert.equal(await claim('late-', 10), 0, 'rows of idempotency_keys read by sequential scans for ten claims');
  });
});
