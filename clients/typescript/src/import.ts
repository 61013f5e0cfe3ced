// Importing contacts: rows (or a CSV file) in, a report out that says what happened to every row and
// names every problem by the caller's own row and CSV line. It sends partial batches of 100
// (POST /v2/contacts/batch/upsert, mode partial): one bad row never holds back the others.
import {
  BATCH_MAX_ITEMS,
  repeatedExternalIds,
  unwrap,
  WorkspaceApiError,
  type Contact,
  type ContactBatchItem,
  type V2Client,
} from './index.js';

/** A problem of a row, as the service words it: the property (null: the row itself) and why. */
export interface RowProblem {
  field: string | null;
  message: string;
}

/** What happened to one row of an import. */
export type ImportedRow =
  | { row: number; line?: number; result: 'created' | 'updated' | 'unchanged'; contact: Contact }
  | {
      row: number;
      line?: number;
      result: 'invalid';
      external_id: string | null;
      errors: RowProblem[];
      /** problems `errors` leaves out (the service names the first 5 of an item) */
      more_errors?: number;
    };

export type InvalidRow = Extract<ImportedRow, { result: 'invalid' }>;

export interface ImportReport {
  /** one entry per row, in row order */
  rows: ImportedRow[];
  /** the invalid rows only, in row order: what to fix and send again */
  problems: InvalidRow[];
  counts: { created: number; updated: number; unchanged: number; invalid: number };
}

/** Rows read from CSV, each with the line of the file it starts on (1 is the header). */
export interface CsvRows {
  rows: Record<string, string>[];
  lines: number[];
}

/**
 * Imports any number of contacts by external_id, 100 per request in partial mode, in row order,
 * and reports every row: created, updated or unchanged with its contact, or invalid with its
 * problems. An external_id given by several rows makes every one of them invalid (which one is
 * meant is yours to say), and those rows are not sent. `lines[i]` (readContactsCsv gives them) is
 * reported as the line of row i. Each request carries its own Idempotency-Key,
 * `${idempotencyKey}:${n}` for the n-th when one is given (6 to 100 visible ASCII characters, else a
 * RangeError before anything is sent), so rerunning an interrupted import with the same key replays
 * the requests already made. An error that is not about rows (a 401, a 403, a
 * 429 past the client's retries) stops the import and is thrown.
 */
export async function importContacts(
  v2: V2Client,
  rows: readonly Record<string, unknown>[],
  options: { lines?: readonly number[]; idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<ImportReport> {
  if (options.idempotencyKey !== undefined && !IMPORT_KEY.test(options.idempotencyKey)) {
    throw new RangeError(
      `idempotencyKey must be 6 to 100 visible ASCII characters (each request's key is it plus ":<n>"), not ${JSON.stringify(options.idempotencyKey)}`,
    );
  }
  const report: ImportedRow[] = new Array<ImportedRow>(rows.length);
  const at = (row: number) => (options.lines?.[row] === undefined ? {} : { line: options.lines[row] });
  const sendable: number[] = [];
  const repeated = new Map<number, { externalId: string; indexes: number[] }>();
  const keyed = rows.flatMap((r, row) =>
    typeof r.external_id === 'string' ? [{ external_id: r.external_id, row }] : [],
  );
  for (const r of repeatedExternalIds(keyed)) {
    const places = r.indexes.map((i) => keyed[i]!.row);
    for (const row of places) repeated.set(row, { externalId: r.externalId, indexes: places });
  }
  rows.forEach((_, row) => {
    const twice = repeated.get(row);
    if (!twice) return sendable.push(row);
    const where = twice.indexes.map((r) =>
      options.lines?.[r] === undefined ? `row ${r}` : `line ${options.lines[r]}`,
    );
    report[row] = {
      row,
      ...at(row),
      result: 'invalid',
      external_id: twice.externalId,
      errors: [
        {
          field: 'external_id',
          message: `${where.length} rows send this external_id (${where.join(', ')}); each may be sent once`,
        },
      ],
    };
  });

  // Requests to send: the rows of each chunk, and its Idempotency-Key.
  const queue: { chunk: number[]; key: string | undefined }[] = [];
  for (let start = 0, n = 0; start < sendable.length; start += BATCH_MAX_ITEMS, n++) {
    const key = options.idempotencyKey === undefined ? undefined : `${options.idempotencyKey}:${n}`;
    queue.push({ chunk: sendable.slice(start, start + BATCH_MAX_ITEMS), key });
  }
  for (let next = queue.shift(); next; next = queue.shift()) {
    const { chunk, key } = next;
    let entries: { index: number; entry: Record<string, unknown> }[];
    try {
      const answer = await unwrap(
        v2.POST('/v2/contacts/batch/upsert', {
          body: { mode: 'partial', items: chunk.map((row) => rows[row]) as ContactBatchItem[] },
          ...(key === undefined ? {} : { params: { header: { 'Idempotency-Key': key } } }),
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      );
      entries = answer.data.map((entry, index) => ({ index, entry }));
    } catch (error) {
      // No item of the chunk was valid: the 422 names its bad items in details.items, as many as an
      // error answer may hold (details.more_items counts the others). Those others are all invalid
      // too, and are sent again on their own to learn their problems; nothing of them is written.
      const items =
        error instanceof WorkspaceApiError && error.code === 'validation_failed' ? error.details?.items : undefined;
      if (!Array.isArray(items) || items.length === 0) throw error;
      const listed = items as { index: number; errors: RowProblem[]; more_errors?: number }[];
      entries = listed.map((item) => ({
        index: item.index,
        entry: { result: 'invalid', ...item, external_id: externalIdOf(rows[chunk[item.index]!]) },
      }));
      const named = new Set(listed.map((item) => item.index));
      const rest = chunk.filter((_, index) => !named.has(index));
      if (rest.length > 0) queue.unshift({ chunk: rest, key: key === undefined ? undefined : `${key}.rest` });
    }
    for (const { index, entry } of entries) {
      const row = chunk[index]!;
      report[row] =
        entry.result === 'invalid'
          ? {
              row,
              ...at(row),
              result: 'invalid',
              external_id: (entry.external_id as string | null) ?? null,
              errors: entry.errors as RowProblem[],
              ...(entry.more_errors === undefined ? {} : { more_errors: entry.more_errors as number }),
            }
          : {
              row,
              ...at(row),
              result: entry.result as 'created' | 'updated' | 'unchanged',
              contact: entry.contact as Contact,
            };
    }
  }

  const counts = { created: 0, updated: 0, unchanged: 0, invalid: 0 };
  for (const r of report) counts[r.result] += 1;
  return { rows: report, problems: report.filter((r): r is InvalidRow => r.result === 'invalid'), counts };
}

/**
 * An import's Idempotency-Key: each request's key is it plus ":<n>" (and ".rest" for rows sent
 * again), which the service takes from 8 to 128 visible ASCII characters.
 */
const IMPORT_KEY = /^[\x21-\x7e]{6,100}$/;

/** The external_id a row sent, when it sent a string. */
function externalIdOf(row: Record<string, unknown> | undefined): string | null {
  return typeof row?.external_id === 'string' ? row.external_id : null;
}

/**
 * Reads CSV text (RFC 4180: a header line, fields optionally in double quotes, "" for a quote
 * inside them, line breaks inside quoted fields) into rows keyed by the header's names, with the
 * line each row starts on. Values are trimmed, and an empty one is left out of its row (an import
 * does not clear a property it has no value for); blank lines are skipped. A quoted field left open
 * at the end is a SyntaxError naming the line it opened on: the rest of the file would otherwise
 * become its value.
 */
export function readContactsCsv(text: string): CsvRows {
  const records: { fields: string[]; line: number }[] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let recordLine = 1;
  let quoteLine = 1;
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  /** set after a closing quote: only a comma or the line's end may follow */
  let closed = false;
  const endRecord = () => {
    fields.push(field);
    // A blank line (nothing, or spaces only) is no row.
    if (fields.length > 1 || fields[0]!.trim() !== '') records.push({ fields, line: recordLine });
    fields = [];
    field = '';
    closed = false;
  };
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (quoted) {
      if (c === '"' && source[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') {
        quoted = false;
        closed = true;
      } else {
        // A line break inside quotes: \n, \r\n (counted at its \n) or a lone \r.
        if (c === '\n' || (c === '\r' && source[i + 1] !== '\n')) line++;
        field += c;
      }
    } else if (closed && c !== ',' && c !== '\n' && c !== '\r') {
      throw new SyntaxError(
        `line ${recordLine}: a quoted field ends at its closing quote; ${JSON.stringify(c)} follows it (a " inside a quoted field is written "")`,
      );
    } else if (c === '"' && /^ *$/.test(field)) {
      quoted = true;
      quoteLine = line;
      field = '';
    } else if (c === ',') {
      fields.push(field);
      field = '';
      closed = false;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && source[i + 1] === '\n') i++;
      endRecord();
      line++;
      recordLine = line;
    } else field += c;
  }
  if (quoted) throw new SyntaxError(`line ${quoteLine}: a quoted field is not closed (a " is missing)`);
  if (field !== '' || fields.length > 0) endRecord();
  const [header, ...body] = records;
  if (!header) return { rows: [], lines: [] };
  const names = headerNames(header.fields, header.line);
  return {
    rows: body.map(({ fields: values }) =>
      Object.fromEntries(
        values.flatMap((raw, i) => {
          const value = raw.trim();
          return value ? [[names[i] ?? beyondHeader(i), value]] : [];
        }),
      ),
    ),
    lines: body.map((r) => r.line),
  };
}

/**
 * The header's names, trimmed; an empty one named by its column, so that a value under it is
 * reported as such. A name given twice is a SyntaxError: one of its columns would be lost.
 */
function headerNames(fields: readonly string[], line: number): string[] {
  const names = fields.map((raw, i) => raw.trim() || `column ${i + 1} (no name in the header)`);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) {
    throw new SyntaxError(`line ${line}: the header names ${JSON.stringify(twice)} twice; each column once`);
  }
  return names;
}

/**
 * The name a value past the header's last column is kept under: no property of a contact, so the
 * service refuses the row and the report names its line, rather than the value being dropped
 * unseen (a comma left unquoted shifts a row's values).
 */
const beyondHeader = (i: number) => `column ${i + 1} (past the header)`;

/**
 * A cell a spreadsheet would run as a formula (=, +, -, @, or a tab or carriage return first), led
 * by a quote so that it is shown as text: an error CSV holds values its readers did not write.
 */
const asText = (text: string) => (/^[=+\-@\t\r]/.test(text) ? `'${text}` : text);

/** A CSV of an import's problems, one line per problem: line, row, external_id, field, message. */
export function problemsCsv(report: ImportReport): string {
  const cell = (value: string | number | null | undefined) => {
    const text = value === undefined || value === null ? '' : typeof value === 'number' ? String(value) : asText(value);
    return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  const lines = ['line,row,external_id,field,message'];
  for (const p of report.problems) {
    for (const e of p.errors) lines.push([p.line, p.row, p.external_id, e.field, e.message].map(cell).join(','));
    if (p.more_errors)
      lines.push([p.line, p.row, p.external_id, '', `and ${p.more_errors} more problems`].map(cell).join(','));
  }
  return `${lines.join('\n')}\n`;
}
