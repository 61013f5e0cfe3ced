// Imports a CSV of contacts into a workspace and writes the rows it could not import, with their
// line in the CSV and why, to an error CSV beside it. Rows go in partial batches of 100: one bad row
// never holds back the others. Run it again after fixing the rows: the contacts already imported
// come back unchanged.
//
//   WORKSPACE_API_KEY=wsk_… node --import tsx examples/import-contacts/import.ts \
//     --base-url http://127.0.0.1:3000 --csv contacts.csv
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import {
  createWorkspaceApiClient,
  importContacts,
  problemsCsv,
  readContactsCsv,
  WorkspaceApiError,
  type ImportReport,
} from '../../clients/typescript/src/index.js';

export interface ImportOptions {
  baseUrl: string;
  apiKey: string;
  csvPath: string;
  /** where the problems go; default: the CSV's path with .errors.csv */
  errorsPath?: string;
  /** makes a rerun of an interrupted import replay what it already sent */
  idempotencyKey?: string;
}

/** Imports the CSV and writes the error CSV (only when there are problems); returns the report. */
export async function importCsv(o: ImportOptions): Promise<{ report: ImportReport; errorsPath: string | null }> {
  const { rows, lines } = readContactsCsv(await readFile(o.csvPath, 'utf8'));
  const api = createWorkspaceApiClient({ baseUrl: o.baseUrl, apiKey: o.apiKey });
  const report = await importContacts(api.v2, rows, {
    lines,
    ...(o.idempotencyKey === undefined ? {} : { idempotencyKey: o.idempotencyKey }),
  });
  if (report.problems.length === 0) return { report, errorsPath: null };
  const errorsPath = o.errorsPath ?? o.csvPath.replace(/(\.csv)?$/i, '.errors.csv');
  await writeFile(errorsPath, problemsCsv(report));
  return { report, errorsPath };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'base-url': { type: 'string' },
      key: { type: 'string' },
      csv: { type: 'string' },
      errors: { type: 'string' },
      'idempotency-key': { type: 'string' },
    },
  });
  const apiKey = values.key ?? process.env.WORKSPACE_API_KEY;
  if (!values['base-url'] || !values.csv || !apiKey) {
    process.stderr.write('usage: import.ts --base-url URL --csv FILE [--errors FILE] (key in WORKSPACE_API_KEY)\n');
    process.exit(2);
  }
  const { report, errorsPath } = await importCsv({
    baseUrl: values['base-url'],
    apiKey,
    csvPath: values.csv,
    ...(values.errors === undefined ? {} : { errorsPath: values.errors }),
    ...(values['idempotency-key'] === undefined ? {} : { idempotencyKey: values['idempotency-key'] }),
  });
  const { created, updated, unchanged, invalid } = report.counts;
  process.stdout.write(`${created} created, ${updated} updated, ${unchanged} unchanged, ${invalid} invalid\n`);
  if (errorsPath) process.stdout.write(`the invalid rows, with their line and why: ${errorsPath}\n`);
  process.exitCode = invalid > 0 ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main().catch((error: unknown) => {
    // What went wrong, in one line: the service's refusal (a key without contacts:write, a reused
    // --idempotency-key), a CSV that cannot be read, a file that is not there, a key too short.
    const text =
      error instanceof WorkspaceApiError || error instanceof SyntaxError
        ? String(error)
        : error instanceof RangeError
          ? String(error).replace('idempotencyKey', '--idempotency-key')
          : null;
    const code = (error as NodeJS.ErrnoException).code;
    process.stderr.write(`import failed: ${text ?? (code ? `${code}: ${(error as Error).message}` : String(error))}\n`);
    if (error instanceof WorkspaceApiError && error.code === 'idempotency_key_reused') {
      process.stderr.write('the file changed since that --idempotency-key was used: run with a new one\n');
    }
    process.exitCode = 2;
  });
}
