// One SQL builder for every keyset-paginated list: the workspace, the filters present in the
// query, the position after the last row served, the order and the page size. Each combination of
// filters is its own prepared statement, so PostgreSQL plans it once with the right index.
import type { ArrayRows, Queryable } from './database.js';

export interface FilterSpec {
  /** query parameter name */
  param: string;
  /** SQL condition for the placeholder holding the parameter's value, e.g. p => `status = ${p}` */
  where: (placeholder: string) => string;
  /**
   * A range on a column other than the sort column: how many rows it keeps depends on its
   * values, so the statement is planned for each request rather than prepared once (a generic
   * plan would read the whole range and sort it).
   */
  planEachTime?: boolean;
}

export interface ListSpec {
  /** names the list in cursors and statement names, e.g. "catalog_items" */
  resource: string;
  table: string;
  /** the public columns, as SELECT expressions */
  columns: string;
  /**
   * The item's properties as answers write them: the item schema's keys, in its order. A row
   * carries these and nothing else (a column of the select list not named here never reaches an
   * answer), so a page can be written with JSON.stringify and say what the schema's serializer
   * would (test/read-serialization.test.ts holds every list and get to it byte for byte).
   */
  publicFields: readonly string[];
  /** keyset order: this column, then id */
  sortColumn: 'updated_at' | 'created_at';
  idType: 'uuid' | 'text';
  filters: readonly FilterSpec[];
}

export type Position = readonly [string, string];

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
    where.push(f.where(`$${params.push(value)}`));
    shape += `_${f.param}`;
  }
  if (position) {
    const [sortValue, id] = position;
    where.push(
      `(${spec.sortColumn}, id) > ($${params.push(sortValue)}::timestamptz, $${params.push(id)}::${spec.idType})`,
    );
    shape += '_after';
  }
  // ORDER BY names the table's columns: the select list prints them as text under the same names,
  // and ordering by those would defeat the index (and LIMIT) for a sort of the whole workspace.
  const result = await db.queryArrays(
    `SELECT ${spec.columns} FROM ${spec.table} WHERE ${where.join(' AND ')}
      ORDER BY ${spec.table}.${spec.sortColumn}, ${spec.table}.id LIMIT $${params.push(take)}`,
    params,
    prepared ? shape : undefined,
  );
  return objects<Row>(spec.publicFields, result);
}

export async function findRow<Row>(
  db: Queryable,
  spec: ListSpec,
  workspaceId: string,
  id: string,
): Promise<Row | null> {
  const result = await db.queryArrays(
    `SELECT ${spec.columns} FROM ${spec.table} WHERE workspace_id = $1 AND id = $2::${spec.idType}`,
    [workspaceId, id],
    `${spec.resource}_find`,
  );
  return objects<Row>(spec.publicFields, result)[0] ?? null;
}

type RowBuilder = (values: unknown[]) => unknown;
const rowBuilders = new Map<string, RowBuilder>();

/**
 * The rows as objects of the public fields, in their order, each made by one function written for
 * them: an object literal with fixed keys, reading each field's column by position. The driver's
 * own loop stores each column under a computed name, at call sites every query of the process
 * shares; once the process has run a few shapes of rows, those stores go through V8's slow generic
 * path, for every column of every row of every page (bench/results/2026-11-24-evening.md). The names
 * are the schema's own property names, never input; a field the select list lacks is a defect of
 * the list's declaration, refused at its first query.
 */
function objects<Row>(fields: readonly string[], { columns, rows }: ArrayRows): Row[] {
  // JSON, not a join: the names ["a,b"] and ["a", "b"] are two lists.
  const signature = JSON.stringify([fields, columns]);
  let build = rowBuilders.get(signature);
  if (!build) {
    const properties = fields.map((name) => {
      const at = columns.indexOf(name);
      if (at < 0) throw new Error(`the select list has no column ${name}`);
      return `${JSON.stringify(name)}: v[${at}]`;
    });
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- code made from schema property names only
    build = new Function('v', `return { ${properties.join(', ')} };`) as RowBuilder;
    rowBuilders.set(signature, build);
  }
  const out = new Array<Row>(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = build(rows[i]!) as Row;
  return out;
}

/** Filters most lists share. */
export const updatedAfter: FilterSpec = { param: 'updated_after', where: (p) => `updated_at > ${p}::timestamptz` };
export const equals = (param: string, column = param): FilterSpec => ({ param, where: (p) => `${column} = ${p}` });
