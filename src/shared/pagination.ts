// Keyset pagination shared by every list: fetch one row more than the page to learn whether a
// further page exists, and hand out a cursor holding the sort key of the last row served.
import type { CursorCodec, CursorScope, SortKey } from './cursor.js';

export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
}

export interface PageOf<T> {
  data: T[];
  page: { limit: number; has_more: boolean; next_cursor: string | null };
}

export async function paginate<T, K extends SortKey>(
  codec: CursorCodec,
  scope: CursorScope,
  request: PageRequest,
  fetch: (after: K | null, take: number) => Promise<T[]>,
  sortKeyOf: (row: T) => K,
): Promise<PageOf<T>> {
  const after = request.cursor === undefined ? null : (codec.decode(scope, request.cursor) as K);
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
