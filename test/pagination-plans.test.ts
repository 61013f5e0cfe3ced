// The index a list page runs on: the (updated_at, id) keyset predicate is an index range condition,
// and the page statements the service actually sends (with a cursor, with a filter) are range scans
// of the sync indexes, without a sort — a page never reads the whole workspace.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { BATCH_LOCK } from '../src/modules/contacts/contacts.repository.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';
import { firstCursor as firstCursorOf, withCursor } from './pagination-support.js';

const server = useTestServer();

const get = (w: TestWorkspace, path: string) => server.request('GET', path, { key: w.key });
const firstCursor = (w: TestWorkspace, path: string) => firstCursorOf(server, w, path);

describe('index use', () => {
  /** Enough rows for the planner's choice to matter: a page must not read the whole workspace. */
  let big: TestWorkspace;
  let bigContacts: any[];
  let bigAppointments: any[];
  before(async () => {
    big = await server.workspace();
    await ownerCommands.seed(server.owner, { workspaceId: big.id, amounts: { contacts: 5000, appointments: 3000 } });
    await server.db.query('ANALYZE contacts');
    await server.db.query('ANALYZE appointments');
    bigContacts = (await get(big, '/v1/contacts?limit=100')).json.data;
    bigAppointments = (await get(big, '/v1/appointments?limit=100')).json.data;
  });

  async function plan(sql: string, params: readonly unknown[]): Promise<string> {
    const { rows } = await server.db.query<Record<string, string>>(`EXPLAIN ${sql}`, params);
    return rows.map((r) => Object.values(r)[0]).join('\n');
  }

  /**
   * The generic plan of a prepared statement: the plan PostgreSQL keeps and reuses for any
   * parameters once a named statement has run a few times, made without their values.
   */
  async function genericPlan(sql: string, params: readonly unknown[]): Promise<string> {
    return server.db.transaction(async (tx) => {
      await tx.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await tx.query(`PREPARE generic_plan_check AS ${sql}`);
      // EXECUTE takes its arguments as SQL literals, not as parameters of the statement around it.
      const literals = params
        .map((v) => (v === null ? 'NULL' : `'${String(v as string | number).replaceAll("'", "''")}'`))
        .join(', ');
      const { rows } = await tx.query<Record<string, string>>(`EXPLAIN EXECUTE generic_plan_check(${literals})`);
      await tx.query('DEALLOCATE generic_plan_check');
      return rows.map((r) => Object.values(r)[0]).join('\n');
    });
  }

  /** The statements the service sends to the store while answering GET `path`. */
  async function statementsOf(w: TestWorkspace, path: string): Promise<{ sql: string; params: readonly unknown[] }[]> {
    const db = server.db;
    const seen: { sql: string; params: readonly unknown[] }[] = [];
    const methods = ['query'] as const;
    const own = methods.map((m) => Object.getOwnPropertyDescriptor(db, m)!);
    for (const [i, m] of methods.entries()) {
      const original = own[i]!.value as (sql: string, params?: readonly unknown[], name?: string) => unknown;
      Object.defineProperty(db, m, {
        ...own[i],
        value: (sql: string, params?: readonly unknown[], name?: string) => {
          seen.push({ sql, params: params ?? [] });
          return original(sql, params, name);
        },
      });
    }
    try {
      assert.equal((await get(w, path)).status, 200);
    } finally {
      for (const [i, m] of methods.entries()) Object.defineProperty(db, m, own[i]!);
    }
    return seen;
  }

  function assertKeysetRangeScan(text: string, index: string, table: string): void {
    assert.match(text, new RegExp(`Index (Only )?Scan using ${index} on ${table}`), text);
    assert.match(text, /Index Cond: .*ROW\(updated_at, id\) > ROW\(/, text);
    assert.doesNotMatch(text, /Sort|Seq Scan/, text);
  }

  test('the (updated_at, id) keyset predicate is an index range condition on contacts_sync', async () => {
    const pivot = bigContacts[50];
    const text = await plan(
      `SELECT id FROM contacts WHERE workspace_id = $1 AND (updated_at, id) > ($2::timestamptz, $3::uuid)
        ORDER BY updated_at, id LIMIT 51`,
      [big.id, pivot.updated_at, pivot.id],
    );
    assertKeysetRangeScan(text, 'contacts_sync', 'contacts');
    const appt = bigAppointments[50];
    const apptText = await plan(
      `SELECT id FROM appointments WHERE workspace_id = $1 AND (updated_at, id) > ($2::timestamptz, $3::uuid)
        ORDER BY updated_at, id LIMIT 51`,
      [big.id, appt.updated_at, appt.id],
    );
    assertKeysetRangeScan(apptText, 'appointments_sync', 'appointments');
  });

  test('the page statements the service runs are range scans of the sync indexes, without a sort', async () => {
    const cases = [
      { w: big, path: '/v1/contacts', index: 'contacts_sync', table: 'contacts' },
      { w: big, path: '/v1/contacts?status=talking', index: 'contacts_status_sync', table: 'contacts' },
      { w: big, path: '/v1/appointments', index: 'appointments_sync', table: 'appointments' },
    ];
    const problems: string[] = [];
    for (const c of cases) {
      const cursor = await firstCursor(c.w, c.path);
      const statements = (await statementsOf(c.w, withCursor(c.path, cursor))).filter((s) =>
        new RegExp(`FROM ${c.table} WHERE[\\s\\S]*ORDER BY`).test(s.sql),
      );
      assert.equal(statements.length, 1, `one page statement for ${c.path}`);
      const text = await plan(statements[0]!.sql, statements[0]!.params);
      try {
        assertKeysetRangeScan(text, c.index, c.table);
      } catch {
        problems.push(`${c.path} with a cursor:\n${text}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  test("a batch upsert's lookup of the stored contacts reads the unique index once per external id, generic plan included", async () => {
    const { rows } = await server.db.query<{ external_id: string }>(
      `UPDATE contacts SET external_id = 'batch-lock-' || id
        WHERE id IN (SELECT id FROM contacts WHERE workspace_id = $1 ORDER BY id DESC LIMIT 99)
        RETURNING external_id`,
      [big.id],
    );
    await server.db.query('ANALYZE contacts');
    const ids = rows.map((r) => r.external_id);
    const params = [big.id, `{${[...ids, 'not-stored'].map((id) => JSON.stringify(id)).join(',')}}`];
    const plans = [
      ['plan for these values', await plan(BATCH_LOCK, params)],
      ['generic plan', await genericPlan(BATCH_LOCK, params)],
    ];
    for (const [kind, text] of plans) {
      assert.match(text!, /Index Scan using contacts_workspace_id_external_id_key on contacts/, `${kind}:\n${text}`);
      assert.doesNotMatch(text!, /Seq Scan|Hash Join|contacts_(by_|sync|status|pkey)/, `${kind}:\n${text}`);
    }
  });

  test('the lookups of GET /v2/contacts (email, phone, external_id) read their index, not the workspace', async () => {
    const [a, b] = (bigContacts as { email: string | null }[]).filter((c) => c.email !== null);
    const keyed = Array.from({ length: 100 }, (_, i) => `lookup-plan-${i}`);
    await server.db.query(
      `UPDATE contacts SET external_id = 'lookup-plan-' || n, phone = '+55119' || lpad(n::text, 8, '0')
         FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM contacts WHERE workspace_id = $1
                ORDER BY id LIMIT 100) chosen
        WHERE contacts.id = chosen.id`,
      [big.id],
    );
    await server.db.query('ANALYZE contacts');
    const emails = [a!, b!].map((c) => c.email!.toUpperCase()).join(',');
    const cases = [
      { path: `/v2/contacts?email=${encodeURIComponent(emails)}`, index: 'contacts_by_email', rows: 2 },
      {
        path: `/v2/contacts?phone=${encodeURIComponent('+5511900000007,+5511900000042')}`,
        index: 'contacts_by_phone',
        rows: 2,
      },
      {
        path: `/v2/contacts?external_id=${keyed.join(',')}&limit=100`,
        index: 'contacts_workspace_id_external_id_key',
        rows: 100,
      },
      // One value: a statement of its own (an equality), whose generic plan PostgreSQL keeps.
      {
        path: `/v2/contacts?email=${encodeURIComponent(a!.email!.toUpperCase())}`,
        index: 'contacts_by_email',
        rows: 1,
      },
      { path: `/v2/contacts?phone=${encodeURIComponent('+5511900000042')}`, index: 'contacts_by_phone', rows: 1 },
      { path: `/v2/contacts?external_id=${keyed[7]}`, index: 'contacts_workspace_id_external_id_key', rows: 1 },
    ];
    const problems: string[] = [];
    for (const c of cases) {
      const r = await get(big, c.path);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.data.length, c.rows, c.path);
      const statements = (await statementsOf(big, c.path)).filter((s) =>
        /FROM contacts WHERE[\s\S]*ORDER BY/.test(s.sql),
      );
      assert.equal(statements.length, 1, `one page statement for ${c.path}`);
      for (const [kind, text] of [
        ['plan for these values', await plan(statements[0]!.sql, statements[0]!.params)],
        ['generic plan', await genericPlan(statements[0]!.sql, statements[0]!.params)],
      ] as const) {
        if (
          !new RegExp(`(Index (Only )?Scan using|Bitmap Index Scan on) ${c.index}\\b`).test(text) ||
          /Seq Scan|contacts_sync/.test(text)
        )
          problems.push(`${c.path.slice(0, 60)}, ${kind}:\n${text}`);
      }
    }
    assert.deepEqual(problems, []);
  });
});
