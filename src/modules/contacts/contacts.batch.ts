// Which items of a batch upsert can be written, and what is wrong with the others. All or nothing
// (the default), any problem refuses the batch with the 422 of them all; partial, the problems stay
// with their items and the valid ones are written. Either way every item is checked against the
// same schema and rules, and the problems are worded as the 422 of a body words them.
import {
  clipName,
  PROBLEM_LIMITS,
  ProblemReport,
  nulCharacterProblems,
  validationFailed,
  type ApiError,
} from '../../shared/errors.js';
import type { BodyProblem } from '../../shared/errors.js';
import { BATCH_DELETE_MAX } from './contacts.schemas.js';
import type { BatchMode, ContactBatchDeleteT, ContactBatchInvalidT, ContactBatchItemT } from './contacts.schemas.js';

/** An item's problems as a batch's 422 lists them (details.items). */
interface ItemProblems {
  errors: BodyProblem[];
  more_errors?: number;
}

/** A compiled check of a body or a part of one: true, or the 422 of its problems. */
type Check = (data: unknown) => true | { error: ApiError };

/**
 * The checks a batch whose body broke its schema runs itself: ContactBatchEnvelope, then each item
 * as the only item of a batch (ContactBatchUpsert without its mode), so that every bad item is
 * found, the duplicated and the NUL-holding ones included, whatever the mode.
 */
export interface BatchChecks {
  envelope: Check;
  item: Check;
}

export interface SortedBatch {
  /** the items to write, with their places in the request */
  valid: { index: number; item: ContactBatchItemT }[];
  invalid: ContactBatchInvalidT[];
}

/**
 * Sorts the items of a batch body. `declared` is the body's check against ContactBatchUpsert, run
 * by the route (null when it passed). Throws the 422 the batch gets, listing every bad item: any
 * problem in all-or-nothing mode, a body that is no batch, or a partial batch without one valid
 * item.
 */
export function sortBatch(body: unknown, declared: ApiError | null, checks: BatchChecks): SortedBatch {
  const mode: BatchMode = (body as { mode?: unknown } | null)?.mode === 'partial' ? 'partial' : 'all_or_nothing';
  if (declared) {
    const envelope = checks.envelope(body);
    if (envelope !== true) throw envelope.error;
  }
  const items = (body as { items: unknown[] }).items;
  const problems = new Map<number, { errors: BodyProblem[]; count: number }>();
  /** whether an item breaks a rule the schema cannot say (a repeated external_id, a NUL) */
  let ruleBroken = false;
  /** `first`: ahead of the item's other problems, so that no cut of them (five an item) drops it */
  const add = (index: number, found: readonly BodyProblem[], count = found.length, first = false) => {
    const entry = problems.get(index) ?? { errors: [], count: 0 };
    if (first) entry.errors.unshift(...found);
    else entry.errors.push(...found);
    entry.count += count;
    problems.set(index, entry);
  };
  items.forEach((item, index) => {
    if (declared) {
      // As the only item of a batch: its problems are found and worded as in any batch's 422.
      const checked = checks.item({ items: [item] });
      if (checked !== true) {
        const [found] = (checked.error.details as { items?: ItemProblems[] }).items ?? [];
        if (found) {
          add(index, found.errors, found.errors.length + (found.more_errors ?? 0));
          return;
        }
      }
    }
    const nul = nulCharacterProblems(item as object);
    if (nul.length > 0) ruleBroken = true;
    add(index, nul);
  });
  for (const indexes of repeatedExternalIds(items)) {
    ruleBroken = true;
    const message = `${indexes.length} items send this external_id (items ${listOf(indexes)}); each may be sent once`;
    // Each item sending the id names the others: kept whatever else is wrong with the item.
    for (const index of indexes) add(index, [{ field: 'external_id', message }], 1, true);
  }
  for (const [index, entry] of problems) if (entry.count === 0) problems.delete(index);
  const valid = items.flatMap((item, index) =>
    problems.has(index) ? [] : [{ index, item: item as ContactBatchItemT }],
  );
  // Partial with no valid item is refused as all or nothing is, with the same 422.
  const refused = problems.size > 0 && (mode === 'all_or_nothing' || valid.length === 0);
  // Only the schema was broken: refused, the body's check says it all (it names an item's
  // property even when its name is empty, which an item's own check cannot tell from the item).
  if (declared && (problems.size === 0 || (refused && !ruleBroken))) throw declared;
  if (refused) throw batchRefusal(problems);
  const invalid = [...problems].map(([index, { errors, count }]): ContactBatchInvalidT => {
    const externalId = (items[index] as { external_id?: unknown } | null)?.external_id;
    const shown = errors.slice(0, PROBLEM_LIMITS.perItem);
    return {
      result: 'invalid',
      index,
      external_id: typeof externalId === 'string' ? clipName(externalId) : null,
      errors: shown,
      ...(count > shown.length ? { more_errors: count - shown.length } : {}),
    };
  });
  return { valid, invalid: invalid.sort((a, b) => a.index - b.index) };
}

/** The places of every external_id sent more than once, each list in item order. */
function repeatedExternalIds(items: readonly unknown[]): number[][] {
  const places = new Map<string, number[]>();
  items.forEach((item, index) => {
    const externalId = (item as { external_id?: unknown } | null)?.external_id;
    if (typeof externalId === 'string') places.set(externalId, [...(places.get(externalId) ?? []), index]);
  });
  return [...places.values()].filter((indexes) => indexes.length > 1);
}

/**
 * "0, 3 and 7"; past LISTED_PLACES places, the first of them and how many others: every item that
 * sends the id is answered with this text, so it must not grow with the number of repeats.
 */
const listOf = (indexes: readonly number[]) =>
  indexes.length > LISTED_PLACES
    ? `${indexes.slice(0, LISTED_PLACES).join(', ')} and ${indexes.length - LISTED_PLACES} others`
    : indexes.length === 1
      ? String(indexes[0])
      : `${indexes.slice(0, -1).join(', ')} and ${indexes.at(-1)}`;
const LISTED_PLACES = 10;

/**
 * The 422 of a batch: every item's problems, under items/<index>/, with those an item's own check
 * found but did not word (past PROBLEM_LIMITS.perItem) counted in its more_errors.
 */
function batchRefusal(problems: ReadonlyMap<number, { errors: BodyProblem[]; count: number }>): ApiError {
  const report = new ProblemReport();
  for (const [index, { errors, count }] of [...problems].sort(([a], [b]) => a - b)) {
    for (const { field, message } of errors)
      report.add(field === null ? `items/${index}` : `items/${index}/${field}`, message);
    report.countUnworded(`items/${index}`, count - errors.length);
  }
  return report.toError();
}

/**
 * The contacts a batch delete names: its ids (in lower case: a UUID in either case names one
 * contact) and external ids. Refused with a 422 when it names none, more than BATCH_DELETE_MAX in
 * all, or one value twice in a list (every such value named with its places).
 */
export function deletionTargets(body: ContactBatchDeleteT): { ids: string[]; externalIds: string[] } {
  const ids = (body.ids ?? []).map((id) => id.toLowerCase());
  const externalIds = body.external_ids ?? [];
  const problems: BodyProblem[] = [];
  const total = ids.length + externalIds.length;
  if (total === 0)
    problems.push({ field: null, message: 'The body names no contact: give ids, external_ids or both.' });
  if (total > BATCH_DELETE_MAX) {
    problems.push({
      field: null,
      message: `The body names ${total} contacts (ids and external_ids together); at most ${BATCH_DELETE_MAX} may be deleted in one request.`,
    });
  }
  for (const [field, values] of [
    ['ids', ids],
    ['external_ids', externalIds],
  ] as const) {
    const places = new Map<string, number[]>();
    values.forEach((value, index) => places.set(value, [...(places.get(value) ?? []), index]));
    for (const [value, at] of places) {
      if (at.length < 2) continue;
      problems.push({
        field,
        message: `${clipName(value)} is sent ${at.length} times (${field} ${at.slice(0, 10).join(', ')}${at.length > 10 ? ', …' : ''}); each value may be sent once`,
      });
    }
  }
  if (problems.length > 0) throw validationFailed(problems);
  return { ids, externalIds };
}
