// Keyset pagination shared by every list: fetch one row more than the page to learn whether a
// further page exists, and hand out a cursor holding the sort key of the last row served.
import { invalidCursor, type CursorCodec, type CursorScope, type SortKey } from './cursor.js';

export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
}

export interface PageOf<T> {
  data: T[];
  page: { limit: number; has_more: boolean; next_cursor: string | null };
}

/**
 * One page: `fetch` reads the rows after a position (null: from the start), `sortKeyOf` gives a
 * row's position, and `positionOf` reads a cursor's sort key as a position of this list (null when
 * it names none: a 400 invalid_cursor, never a query with a value of the wrong kind).
 */
export async function paginate<T, K extends SortKey>(
  codec: CursorCodec,
  scope: CursorScope,
  request: PageRequest,
  fetch: (after: K | null, take: number) => Promise<T[]>,
  sortKeyOf: (row: T) => K,
  positionOf: (key: SortKey) => K | null,
): Promise<PageOf<T>> {
  const after = request.cursor === undefined ? null : positionIn(codec, scope, request.cursor, positionOf);
  const rows = await fetch(after, request.limit + 1);
  const hasMore = rows.length > request.limit;
  const data = hasMore ? rows.slice(0, request.limit) : rows;
  const last = data.at(-1);
  return {
    data,
    page: {
      limit: request.limit,
      has_more: hasMore,
      next_cursor: hasMore && last ? codec.encode(scope, sortKeyOf(last)) : null,
    },
  };
}

function positionIn<K extends SortKey>(
  codec: CursorCodec,
  scope: CursorScope,
  cursor: string,
  positionOf: (key: SortKey) => K | null,
): K {
  const position = positionOf(codec.decode(scope, cursor));
  if (position === null) throw invalidCursor();
  return position;
}
