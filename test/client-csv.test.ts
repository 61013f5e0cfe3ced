// The two clients' CSV helpers (clients/typescript/src/import.ts, clients/python/workspace_api/
// importing.py) read the same file into the same rows and lines, refuse the same malformed files
// naming the same line, and write the same error CSV: an import gives the same report whichever
// client runs it. No server: the Python side runs in a child process.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import {
  createWorkspaceApiClient,
  importContacts,
  problemsCsv,
  readContactsCsv,
  type ImportReport,
} from '../clients/typescript/src/index.js';

const python = spawnSync('python3', ['--version']).status === 0;
if (!python) process.stdout.write('# the Python side is skipped: python3 is not on this machine\n');

/** Runs `script` in Python with the client importable and `input` as JSON on stdin; its JSON answer. */
function inPython(script: string, input: unknown): unknown {
  const run = spawnSync('python3', ['-c', script], {
    cwd: fileURLToPath(new URL('../clients/python', import.meta.url)),
    input: JSON.stringify(input),
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout);
}

const READ = `
import json, sys
from workspace_api.importing import read_contacts_csv
try:
    rows, lines = read_contacts_csv(json.load(sys.stdin))
    print(json.dumps({"rows": rows, "lines": lines}))
except ValueError as error:
    print(json.dumps({"error": str(error)}))
`;

/** What each client makes of `text`: its rows and lines, or its error's message. */
function readBoth(text: string): { ts: unknown; py: unknown } {
  let ts: unknown;
  try {
    ts = readContactsCsv(text);
  } catch (error) {
    ts = { error: (error as Error).message };
  }
  return { ts, py: python ? inPython(READ, text) : ts };
}

describe('the clients read a CSV alike', () => {
  test('a line of spaces is blank and skipped; values past the header are kept under a column name', () => {
    const { ts, py } = readBoth('external_id,name\n   \na,Ann,extra,,\r\nb,Bo\n \t\nc,,\n');
    assert.deepEqual(ts, {
      rows: [
        { external_id: 'a', name: 'Ann', 'column 3 (past the header)': 'extra' },
        { external_id: 'b', name: 'Bo' },
        { external_id: 'c' },
      ],
      lines: [3, 4, 6],
    });
    assert.deepEqual(py, ts);
  });

  test('anything but a comma or the line end after a closing quote is refused, naming the line', () => {
    for (const text of ['external_id,name\na,"Ann"b\n', 'external_id,name\na,Bo\nb,"Ann" \n']) {
      const { ts, py } = readBoth(text);
      const line = text.split('\n').findIndex((l) => l.includes('"Ann"')) + 1;
      assert.match(
        (ts as { error: string }).error,
        new RegExp(`^line ${line}: a quoted field ends at its closing quote`),
      );
      assert.match(
        (py as { error: string }).error,
        new RegExp(`^line ${line}: a quoted field ends at its closing quote`),
      );
    }
  });

  test('a quote after a tab is part of the value in both; a field spanning lines is named by its first line', () => {
    const tab = readBoth('external_id,name\na,\t"x,y"\n');
    assert.deepEqual(tab.ts, {
      rows: [{ external_id: 'a', name: '"x', 'column 3 (past the header)': 'y"' }],
      lines: [2],
    });
    assert.deepEqual(tab.py, tab.ts);
    const { ts, py } = readBoth('external_id,name\na,Bo\nb,"two\nlines"x\n');
    assert.match((ts as { error: string }).error, /^line 3: a quoted field ends at its closing quote/);
    assert.match((py as { error: string }).error, /^line 3: a quoted field ends at its closing quote/);
  });

  test('a header naming a column twice is refused; an empty name is named by its column', () => {
    const twice = readBoth('external_id,name,name\na,First,Second\n');
    assert.equal((twice.ts as { error: string }).error, 'line 1: the header names "name" twice; each column once');
    assert.deepEqual(twice.py, twice.ts);
    const empty = readBoth('external_id,,name\na,lost?,Bo\n');
    assert.deepEqual(empty.ts, {
      rows: [{ external_id: 'a', 'column 2 (no name in the header)': 'lost?', name: 'Bo' }],
      lines: [2],
    });
    assert.deepEqual(empty.py, empty.ts);
  });

  test('a quoted field left open is refused by both, naming the line it opened on', () => {
    const { ts, py } = readBoth('external_id,name\nun-1,Bo\nun-2,"Ana,ana@example.com\nun-3,Cy\n');
    assert.match((ts as { error: string }).error, /^line 3: /);
    assert.match((py as { error: string }).error, /^line 3: /);
  });
});

const WRITE = `
import json, sys
from workspace_api.importing import ImportReport, ImportedRow, problems_csv
rows = [ImportedRow(**{**r, "line": r.get("line"), "external_id": r.get("external_id")}) for r in json.load(sys.stdin)]
print(json.dumps(problems_csv(ImportReport(rows=rows))))
`;

describe('the clients write the same error CSV', () => {
  test('a value a spreadsheet would run as a formula is written after a quote, in every text column', () => {
    const invalid = [
      {
        row: 0,
        line: 2,
        result: 'invalid' as const,
        external_id: "=cmd|' /C calc'!A0",
        errors: [
          { field: 'email', message: 'must be a valid email' },
          { field: '@sum', message: 'is not a property of a contact' },
        ],
        more_errors: 2,
      },
      {
        row: 1,
        line: 5,
        result: 'invalid' as const,
        external_id: '-1+2',
        errors: [{ field: null, message: 'must carry external_id, "and" more' }],
      },
      { row: 2, result: 'invalid' as const, external_id: 'plain', errors: [{ field: 'phone', message: '\tx' }] },
    ];
    const report: ImportReport = {
      rows: invalid,
      problems: invalid,
      counts: { created: 0, updated: 0, unchanged: 0, invalid: 3 },
    };
    const ts = problemsCsv(report);
    assert.equal(
      ts,
      [
        'line,row,external_id,field,message',
        `2,0,'=cmd|' /C calc'!A0,email,must be a valid email`,
        `2,0,'=cmd|' /C calc'!A0,'@sum,is not a property of a contact`,
        `2,0,'=cmd|' /C calc'!A0,,and 2 more problems`,
        `5,1,'-1+2,,"must carry external_id, ""and"" more"`,
        `,2,plain,phone,'\tx`,
        '',
      ].join('\n'),
    );
    if (python) assert.equal(inPython(WRITE, invalid), ts);
  });
});

const IMPORT = `
import json, sys
from workspace_api import WorkspaceApiClient
client = WorkspaceApiClient("http://127.0.0.1:9", "wsk_x.y")
try:
    client.v2.import_contacts([{"external_id": "a", "name": "A"}], idempotency_key=json.load(sys.stdin))
    print(json.dumps("sent"))
except ValueError as error:
    print(json.dumps(str(error)))
`;

describe('an import key too short or too long for the requests it names', () => {
  test('is refused before anything is sent, naming the option', async () => {
    // Port 9 (discard): nothing answers there; a request sent would fail as a connection error.
    const v2 = createWorkspaceApiClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'wsk_x.y' }).v2;
    for (const key of ['run1', 'x'.repeat(101), 'has space']) {
      await assert.rejects(importContacts(v2, [{ external_id: 'a', name: 'A' }], { idempotencyKey: key }), (error) => {
        assert.ok(error instanceof RangeError, String(error));
        assert.match(error.message, /^idempotencyKey must be 6 to 100 visible ASCII characters/);
        return true;
      });
      if (python)
        assert.match(String(inPython(IMPORT, key)), /^idempotency_key must be 6 to 100 visible ASCII characters/);
    }
  });
});
