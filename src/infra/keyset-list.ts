// One SQL builder for every keyset-paginated list: the workspace, the filters present in the
// query, the position after the last row served, the order and the page size. Each combination of
// filters is its own prepared statement, so PostgreSQL plans it once with the right index.
import type { TObject } from 'typebox';
import type { Queryable } from './database.js';
import { selectList } from './representation.js';
import type { SortKey } from '../shared/cursor.js';
import { UUID_TEXT } from '../shared/schemas.js';

export interface FilterSpec {
  /** query parameter name */
  param: string;
  /** SQL condition for the placeholder holding the parameter's value, e.g. p => `status = ${p}` */
  where: (placeholder: string, value: unknown) => string;
  /**
   * When `where` writes different conditions for different values: the part of the statement's
   * name that tells them apart (each condition is a prepared statement of its own).
   */
  shapeOf?: (value: unknown) => string;
  /**
   * A range on a column other than the sort column: how many rows it keeps depends on its
   * values, so the statement is planned for each request rather than prepared once (a generic
   * plan would read the whole range and sort it).
   */
  planEachTime?: boolean;
  /**
   * What a cursor is bound to for this filter (shared/cursor.ts) where several spellings of its
   * value select the same rows: one of them for all. Absent: the value as sent.
   */
  boundAs?: (value: unknown) => unknown;
  /** The value as PostgreSQL is sent it, where that differs from the value as the request sent it. */
  sentAs?: (value: unknown) => unknown;
}

export interface ListSpec {
  /** names the list in cursors and statement names, e.g. "catalog_items" */
  resource: string;
  table: string;
  /** the item's schema: a row is read as its properties (infra/representation.ts), nothing else */
  item: TObject;
  /** keyset order: this column, then id */
  sortColumn: 'updated_at' | 'created_at';
  idType: 'uuid' | 'text';
  filters: readonly FilterSpec[];
}

export type Position = readonly [string, string];

/**
 * The position `key` names in the list of `spec`, or null when it names none: a date-time
 * PostgreSQL reads and an id of the list's kind, as `listRows` casts them.
 */
export function positionIn(spec: ListSpec, key: SortKey): Position | null {
  if (key.length !== 2) return null;
  const [at, id] = key as [string, string];
  // A text id is any text PostgreSQL can hold (no NUL) of an id's length: a position between rows
  // is as good as one on a row.
  const idFits = spec.idType === 'uuid' ? UUID_TEXT.test(id) : id.length > 0 && id.length <= 128 && !id.includes('\0');
  return idFits && instantOf(at) !== null ? [at, id] : null;
}

export async function listRows<Row>(
  db: Queryable,
  spec: ListSpec,
  workspaceId: string,
  query: Record<string, unknown>,
  position: Position | null,
  take: number,
  fixed: Record<string, unknown> = {},
): Promise<Row[]> {
  const params: unknown[] = [workspaceId];
  const where = ['workspace_id = $1'];
  let shape = `${spec.resource}_list`;
  for (const [column, value] of Object.entries(fixed)) {
    where.push(`${column} = $${params.push(value)}`);
    shape += `_${column}`;
  }
  let prepared = true;
  for (const f of spec.filters) {
    const value = query[f.param];
    if (value === undefined) continue;
    if (f.planEachTime) prepared = false;
    where.push(f.where(`$${params.push(f.sentAs ? f.sentAs(value) : value)}`, value));
    shape += `_${f.param}${f.shapeOf?.(value) ?? ''}`;
  }
  if (position) {
    const [sortValue, id] = position;
    where.push(
      `(${spec.sortColumn}, id) > ($${params.push(sortValue)}::timestamptz, $${params.push(id)}::${spec.idType})`,
    );
    shape += '_after';
  }
  const limit = params.push(take);
  const { rows } = await db.query<Row>(statementOf(spec, shape, where, limit), params, prepared ? shape : undefined);
  return rows;
}

/**
 * Each shape's statement text, made once: a list's shape (its resource, its filters present, a
 * position or not) fixes it, as it fixes the prepared statement's name.
 */
const statements = new Map<string, string>();

function statementOf(spec: ListSpec, shape: string, where: readonly string[], limit: number): string {
  let sql = statements.get(shape);
  if (sql === undefined) {
    // ORDER BY names the table's columns: the select list prints them as text under the same
    // names, and ordering by those would defeat the index (and LIMIT) for a sort of the whole
    // workspace.
    sql = `SELECT ${columnsOf(spec)} FROM ${spec.table} WHERE ${where.join(' AND ')}
      ORDER BY ${spec.table}.${spec.sortColumn}, ${spec.table}.id LIMIT $${limit}`;
    statements.set(shape, sql);
  }
  return sql;
}

export async function findRow<Row>(
  db: Queryable,
  spec: ListSpec,
  workspaceId: string,
  id: string,
  /** a column unique within the workspace (a contact's external_id) that finds the row instead of its id */
  by?: 'external_id',
): Promise<Row | null> {
  const where = by ? `${by} = $2` : `id = $2::${spec.idType}`;
  const { rows } = await db.query<Row>(
    `SELECT ${columnsOf(spec)} FROM ${spec.table} WHERE workspace_id = $1 AND ${where}`,
    [workspaceId, id],
    `${spec.resource}_find${by ? `_by_${by}` : ''}`,
  );
  return rows[0] ?? null;
}

const selectLists = new WeakMap<ListSpec, string>();

/** The list's select list, derived from its item schema once. */
function columnsOf(spec: ListSpec): string {
  let columns = selectLists.get(spec);
  if (columns === undefined) selectLists.set(spec, (columns = selectList(spec.item, spec.table)));
  return columns;
}

/**
 * What a page's cursor is bound to: the filters of `query` (each as its filter binds it) and the
 * path's; and, when a filter's binding differs from its spelling, the filters as sent.
 */
export function cursorFilters(
  spec: ListSpec,
  query: Record<string, unknown>,
  fixed: Record<string, unknown>,
): { filters: Record<string, unknown>; filtersAsSent?: Record<string, unknown> } {
  const asSent = { ...query, ...fixed };
  let filters = asSent;
  for (const f of spec.filters) {
    const value = query[f.param];
    if (value === undefined || !f.boundAs) continue;
    const bound = f.boundAs(value);
    if (bound !== value) filters = { ...filters, [f.param]: bound };
  }
  return filters === asSent ? { filters } : { filters, filtersAsSent: asSent };
}

/** An RFC 3339 date-time with its offset, from year 1 on, in parts. */
const DATE_TIME = /^(?!0000)(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * The instant `text` names, as toISOString prints it, and whether that is exact (no digit past the
 * millisecond but zeros); null when `text` is no date-time PostgreSQL reads. Date reads 2026-02-30
 * as 2 March and 24:00 as the next day: a day and time it prints back unchanged are real ones.
 */
function instantOf(text: string): { iso: string; exact: boolean } | null {
  const m = DATE_TIME.exec(text);
  if (!m) return null;
  const [, day, time, fraction = '', sign, hours = '0', minutes = '0'] = m as unknown as (string | undefined)[];
  const asUtc = Date.parse(`${day}T${time}Z`);
  if (Number.isNaN(asUtc) || new Date(asUtc).toISOString().slice(0, 19) !== `${day}T${time}`) return null;
  if (Number(hours) > 15 || Number(minutes) > 59) return null;
  const offsetMs = (sign === '-' ? -1 : 1) * (Number(hours) * 60 + Number(minutes)) * 60_000;
  const ms = asUtc - offsetMs + Number(fraction.slice(0, 3).padEnd(3, '0'));
  return { iso: new Date(ms).toISOString(), exact: !/[1-9]/.test(fraction.slice(3)) };
}

/**
 * A date-time filter bound by the instant it names (2026-01-01T00:00:00Z, …00.000Z and
 * …00+00:00 are one). Bound as sent when a digit past the millisecond is not zero, which the
 * instant's text cannot hold.
 */
function instantBinding(value: unknown): unknown {
  const instant = typeof value === 'string' ? instantOf(value) : null;
  return instant?.exact ? instant.iso : value;
}

/**
 * A date-time filter: `column op value`, answered for the instant the value names to any precision.
 * PostgreSQL keeps microseconds and rounds a value with more digits to the nearest one, which can
 * land after the instant named (…30.4909995 is read as …30.491000, and `> …30.4909995` would leave
 * out a row of …30.491). Stored instants are whole milliseconds (timestamptz(3)), so for a value
 * between two microseconds it is sent cut to the earlier one, `t`, and `> value` is `> t`,
 * `<= value` is `<= t`, `>= value` is `> t`.
 */
export function instantFilter(
  param: string,
  column: string,
  op: '>' | '>=' | '<=',
  options: Pick<FilterSpec, 'planEachTime'> = {},
): FilterSpec {
  return {
    param,
    where: (p, value) => `${column} ${op === '>=' && betweenMicroseconds(value) ? '>' : op} ${p}::timestamptz`,
    ...(op === '>=' ? { shapeOf: (value: unknown) => (betweenMicroseconds(value) ? '_between_us' : '') } : {}),
    sentAs: (value) => (typeof value === 'string' ? value.replace(PAST_MICROSECONDS, '$1$3') : value),
    boundAs: instantBinding,
    ...options,
  };
}

/** A date-time's fraction: its first six digits, the digits past them, and what follows. */
const PAST_MICROSECONDS = /(\.\d{6})(\d+)(\D.*)$/;

function betweenMicroseconds(value: unknown): boolean {
  const digits = typeof value === 'string' ? PAST_MICROSECONDS.exec(value)?.[2] : undefined;
  return digits !== undefined && /[1-9]/.test(digits);
}

/** Filters most lists share. */
export const updatedAfter = instantFilter('updated_after', 'updated_at', '>');
export const equals = (param: string, column = param): FilterSpec => ({ param, where: (p) => `${column} = ${p}` });
