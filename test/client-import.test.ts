// The TypeScript client's import helpers against a real server: a CSV with bad rows is imported in
// partial batches, and every problem comes back with the row and the line of the file it was on;
// the valid rows are written, and nothing else.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  createWorkspaceApiClient,
  importContacts,
  problemsCsv,
  readContactsCsv,
  type InvalidRow,
} from '../clients/typescript/src/index.js';
import { importCsv } from '../examples/import-contacts/import.js';
import { type TestWorkspace } from './harness.js';
import { tempDir } from './processes.js';
import { useTestServer } from './test-server.js';

let w: TestWorkspace;
const server = useTestServer({
  setup: async () => {
    w = await server.workspace({ rateLimitPerMinute: 1_000_000 });
  },
});

/** A client with a key that may only write contacts, as an import tool gets. */
const writer = async () =>
  createWorkspaceApiClient({ baseUrl: server.baseUrl, apiKey: (await w.newKey(['contacts:write'])).key }).v2;

const stored = async (externalIds: string[]) =>
  (
    await server.db.query<{ external_id: string; name: string | null }>(
      'SELECT external_id, name FROM contacts WHERE workspace_id = $1 AND external_id = ANY($2::text[])',
      [w.id, externalIds],
    )
  ).rows;

describe('readContactsCsv', () => {
  test('quotes, doubled quotes, commas and line breaks inside quotes, CRLF, a BOM, blank lines; each row with its first line', () => {
    const { rows, lines } = readContactsCsv(
      '\uFEFFexternal_id,name,origin\r\na,"Smith, Ann",\r\n\r\nb,"Say ""hi""\nsecond line",web\nc,,\n',
    );
    assert.deepEqual(rows, [
      { external_id: 'a', name: 'Smith, Ann' },
      { external_id: 'b', name: 'Say "hi"\nsecond line', origin: 'web' },
      { external_id: 'c' },
    ]);
    assert.deepEqual(lines, [2, 4, 6]);
  });

  test('values are trimmed; a lone CR in quotes is a line; a quoted field left open is an error naming its line', () => {
    const { rows, lines } = readContactsCsv('external_id,email\n a , " ana@example.com "\nb,"x\ry"\nc,z\n');
    assert.deepEqual(rows, [
      { external_id: 'a', email: 'ana@example.com' },
      { external_id: 'b', email: 'x\ry' },
      { external_id: 'c', email: 'z' },
    ]);
    assert.deepEqual(lines, [2, 3, 5]);
    assert.throws(
      () => readContactsCsv('external_id,name\nun-1,"Ana,ana@example.com\nun-2,Bo\n'),
      /line 2: a quoted field is not closed/,
    );
  });
});

describe('importContacts', () => {
  test('a CSV with bad rows: every problem at its line, the valid rows written, an error CSV', async () => {
    const r = randomUUID().slice(0, 8);
    const csv = [
      'external_id,name,email,phone,status', // 1
      `crm-${r}-1,Ana,ana.${r}@example.com,+5511912345678,`, // 2
      `crm-${r}-2,Bruno,not-an-email,,`, // 3: bad e-mail
      `crm-${r}-3,"Carla, Lima",carla.${r}@example.com,,talking`, // 4
      `,No Id,noid.${r}@example.com,,`, // 5: no external_id
      `crm-${r}-1,Ana again,ana2.${r}@example.com,,`, // 6: repeats line 2
      `crm-${r}-6,"Dora`, // 7
      `Two Lines",dora.${r}@example.com,,`, // 8
      '', // 9
      `crm-${r}-7,Eva,eva.${r}@example.com,+12,`, // 10: bad phone
      `crm-${r}-8,Fabio,fabio.${r}@example.com,,unknown_stage`, // 11: bad status
      `crm-${r}-9,Gil,gil.${r}@example.com,,lost`, // 12
    ].join('\n');
    const { rows, lines } = readContactsCsv(csv);
    const report = await importContacts(await writer(), rows, { lines });

    const problems = (p: InvalidRow) => [p.line, p.row, p.external_id, p.errors.map((e) => e.field)];
    assert.deepEqual(report.problems.map(problems), [
      [2, 0, `crm-${r}-1`, ['external_id']],
      [3, 1, `crm-${r}-2`, ['email']],
      [5, 3, null, ['external_id']],
      [6, 4, `crm-${r}-1`, ['external_id']],
      [10, 6, `crm-${r}-7`, ['phone']],
      [11, 7, `crm-${r}-8`, ['status']],
    ]);
    assert.match(report.problems[0]!.errors[0]!.message, /2 rows send this external_id \(line 2, line 6\)/);
    assert.deepEqual(report.counts, { created: 3, updated: 0, unchanged: 0, invalid: 6 });
    assert.deepEqual(
      report.rows.map((x) => x.result),
      ['invalid', 'invalid', 'created', 'invalid', 'invalid', 'created', 'invalid', 'invalid', 'created'],
    );
    assert.deepEqual((await stored([1, 2, 3, 6, 7, 8, 9].map((n) => `crm-${r}-${n}`))).map((c) => c.name).sort(), [
      'Carla, Lima',
      'Dora\nTwo Lines',
      'Gil',
    ]);

    const errors = problemsCsv(report).trimEnd().split('\n');
    assert.equal(errors[0], 'line,row,external_id,field,message');
    assert.equal(errors.length, 1 + 6);
    assert.match(errors[2]!, new RegExp(`^3,1,crm-${r}-2,email,`));
    assert.match(errors[3]!, /^5,3,,external_id,/);
  });

  test('250 rows in three requests: problems in later chunks keep their rows; a chunk with no valid row is reported too', async () => {
    const r = randomUUID().slice(0, 8);
    const rows: Record<string, unknown>[] = Array.from({ length: 201 }, (_, i) => ({
      external_id: `bulk-${r}-${i}`,
      name: `Bulk ${i}`,
    }));
    rows[120] = { external_id: `bulk-${r}-120`, email: 'broken' };
    rows[200] = { external_id: `bulk-${r}-200`, status: 'nope' }; // alone in the third request: a 422
    const key = `import-${r}`;
    const client = await writer();
    const report = await importContacts(client, rows, { idempotencyKey: key });
    assert.deepEqual(
      report.problems.map((p) => [p.row, p.line, p.errors[0]!.field]),
      [
        [120, undefined, 'email'],
        [200, undefined, 'status'],
      ],
    );
    assert.deepEqual(report.counts, { created: 199, updated: 0, unchanged: 0, invalid: 2 });

    // The same import again with the same key: the stored answers, the same report.
    const again = await importContacts(client, rows, { idempotencyKey: key });
    assert.deepEqual(again.counts, report.counts);
    // With a new key: the valid rows are unchanged now.
    const fresh = await importContacts(client, rows);
    assert.deepEqual(fresh.counts, { created: 0, updated: 0, unchanged: 199, invalid: 2 });
  });
});

describe('importContacts, every row of a chunk invalid', () => {
  test('the 422 names as many rows as an error may hold; the others are sent again until each has its problems', async () => {
    const r = randomUUID().slice(0, 8);
    // A CRM export with one column too many: every row is invalid, and nothing is written.
    const rows = Array.from({ length: 130 }, (_, i) => ({ external_id: `nt-${r}-${i}`, name: `N ${i}`, notes: 'vip' }));
    const report = await importContacts(await writer(), rows, { idempotencyKey: `nt-${r}` });
    assert.equal(report.rows.length, 130);
    assert.deepEqual(report.counts, { created: 0, updated: 0, unchanged: 0, invalid: 130 });
    assert.deepEqual(
      report.problems.map((p) => p.row),
      rows.map((_, i) => i),
    );
    for (const p of report.problems)
      assert.deepEqual(
        p.errors.map((e) => e.field),
        ['notes'],
        `row ${p.row}`,
      );
    assert.equal((await stored(rows.map((x) => x.external_id))).length, 0);
  });
});

describe('examples/import-contacts', () => {
  test('imports a CSV file and writes its bad rows, with their lines, to an error CSV; a fixed file then imports', async () => {
    const r = randomUUID().slice(0, 8);
    const csvPath = join(tempDir(), 'contacts.csv');
    const good = (n: number) => `ex-${r}-${n},Person ${n},p${n}.${r}@example.com`;
    await writeFile(
      csvPath,
      [
        'external_id,name,email',
        good(1),
        `ex-${r}-2,Bruno,not-an-email`,
        good(3),
        `ex-${r}-1,Twice,x.${r}@example.com`,
      ].join('\n'),
    );
    const apiKey = (await w.newKey(['contacts:write'])).key;
    const { report, errorsPath } = await importCsv({ baseUrl: server.baseUrl, apiKey, csvPath });
    assert.deepEqual(report.counts, { created: 1, updated: 0, unchanged: 0, invalid: 3 });
    assert.equal(errorsPath, csvPath.replace(/\.csv$/, '.errors.csv'));
    const errors = (await readFile(errorsPath, 'utf8')).trimEnd().split('\n');
    assert.deepEqual(
      errors.map((line) => line.split(',').slice(0, 4).join(',')),
      ['line,row,external_id,field', `2,0,ex-${r}-1,external_id`, `3,1,ex-${r}-2,email`, `5,3,ex-${r}-1,external_id`],
    );
    // The rows fixed: the import completes, and what was imported already is unchanged.
    await writeFile(csvPath, ['external_id,name,email', good(1), good(2), good(3)].join('\n'));
    const fixed = await importCsv({ baseUrl: server.baseUrl, apiKey, csvPath });
    assert.deepEqual(fixed.report.counts, { created: 2, updated: 0, unchanged: 1, invalid: 0 });
    assert.equal(fixed.errorsPath, null);
  });
});
