// What the pagination tests share: the cursor of a list's first page, and a path continued by it.
import assert from 'node:assert/strict';
import type { TestServer, TestWorkspace } from './harness.js';

/** The next_cursor of the first page of `path` (two items a page), which must have a second page. */
export async function firstCursor(server: TestServer, w: TestWorkspace, path: string): Promise<string> {
  const sep = path.includes('?') ? '&' : '?';
  const r = await server.request('GET', `${path}${sep}limit=2`, { key: w.key });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.page.has_more, true);
  return r.json.page.next_cursor as string;
}

/** `path` at its page after `cursor`, two items a page. */
export const withCursor = (path: string, cursor: string) =>
  `${path}${path.includes('?') ? '&' : '?'}limit=2&cursor=${encodeURIComponent(cursor)}`;
