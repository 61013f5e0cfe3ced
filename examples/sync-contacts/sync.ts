// Keeps a local copy of a workspace's contacts up to date, deletions included, and can be stopped
// (SIGTERM, SIGINT, or killed outright) and started again at any moment without missing or
// double-applying a change.
//
//   node --import tsx examples/sync-contacts/sync.ts --base-url http://127.0.0.1:3000 \
//     --key "$WORKSPACE_API_KEY" --state ./contacts.json [--once | --watch] [--interval 5000]
//
// It follows docs/sync.md exactly (README.md beside this file says why it is correct):
//   1. head: take the feed's current position (GET /v2/events/head);
//   2. list: walk GET /v2/contacts to its end, storing every contact (and the cursor, to resume);
//   3. follow: apply the feed after that position — contact.created/updated store the event's
//      data, contact.deleted removes the contact — forever (--watch) or up to its end (--once).
//   A 410 events_expired (the position is older than the feed keeps) starts again at 1, and the
//   new walk drops the contacts it does not return.
// After every page, the copy and the position are written together, atomically, to one file.
import { open, readFile, rename } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  createWorkspaceApiClient,
  eventPages,
  feedHead,
  isEventsExpired,
  pages,
  WorkspaceApiError,
  type Contact,
  type V2Client,
  type WorkspaceEvent,
} from '../../clients/typescript/src/index.js';

export interface SyncState {
  version: 2;
  /** the local copy: contacts by id, exactly as the API returns them */
  contacts: Record<string, Contact>;
  /** what to do next (see the top of this file) */
  phase: 'head' | 'list' | 'follow';
  /** position in the events feed: id of the last event applied, or the head taken in step 1 */
  position: string | null;
  /** during the list walk, the cursor of the next page (null: the walk starts from the beginning) */
  listCursor: string | null;
  /** during a resynchronization, the ids the list walk saw: the others are dropped at its end */
  seen: string[] | null;
}

export const initialState = (): SyncState => ({
  version: 2,
  contacts: {},
  phase: 'head',
  position: null,
  listCursor: null,
  seen: null,
});

/** The state file: read once, then rewritten whole after every page (temporary file + rename). */
export class StateFile {
  private constructor(
    readonly path: string,
    readonly state: SyncState,
  ) {}

  static async open(path: string): Promise<StateFile> {
    const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    const stored = text === null ? null : (JSON.parse(text) as Partial<SyncState>);
    // A file of another format is started again as a resynchronization (kept contacts are checked).
    const state: SyncState =
      stored?.version === 2
        ? (stored as SyncState)
        : { ...initialState(), contacts: stored?.contacts ?? {}, seen: stored ? [] : null };
    return new StateFile(path, state);
  }

  /**
   * A reader (or a crash) sees the previous file or this one, never a part of it: the new content
   * is written to a temporary file, flushed to disk, then renamed over the old one. (One process
   * per state file: a second one would overwrite the first one's checkpoints.)
   */
  async save(): Promise<void> {
    const temporary = `${this.path}.tmp`;
    const handle = await open(temporary, 'w');
    try {
      await handle.writeFile(JSON.stringify(this.state));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, this.path);
  }
}

export interface SyncOptions {
  pageSize?: number;
  signal?: AbortSignal;
  log?: (line: string) => void;
}

/** Brings the copy up to date with the current end of the feed. */
export async function syncOnce(v2: V2Client, file: StateFile, options: SyncOptions = {}): Promise<void> {
  const { state } = file;
  const { pageSize = 100, signal, log = () => {} } = options;
  const init = signal ? { signal } : {};

  if (state.phase === 'head') {
    // 1. The position first: every change from now on is in the feed after it.
    state.position = await feedHead(v2, init);
    Object.assign(state, { phase: 'list', listCursor: null });
    await file.save();
  }

  if (state.phase === 'list') {
    // 2. Every contact, page by page; a restart resumes at the stored cursor.
    try {
      await walkContacts(v2, file, pageSize, init, log);
    } catch (error) {
      // A stored cursor the server no longer accepts (a signed one after its CURSOR_SECRET
      // changed, or one of a form an upgrade retired): the walk starts again from the beginning; contacts stored so far are simply stored again.
      if (!(error instanceof WorkspaceApiError && error.code === 'invalid_cursor' && state.listCursor)) throw error;
      log('stored list cursor refused (invalid_cursor): walking the list again from the start');
      state.listCursor = null;
      if (state.seen) state.seen = [];
      await walkContacts(v2, file, pageSize, init, log);
    }
    if (state.seen) {
      const seen = new Set(state.seen);
      for (const id of Object.keys(state.contacts)) if (!seen.has(id)) delete state.contacts[id];
      state.seen = null;
    }
    Object.assign(state, { phase: 'follow', listCursor: null });
    await file.save();
  }

  // 3. The feed after the position, to its current end.
  try {
    const feed = eventPages(
      v2,
      { resource_type: 'contact', limit: pageSize, ...(state.position ? { after: state.position } : {}) },
      init,
    );
    for await (const page of feed) {
      const changed = page.events.filter((event) => applyEvent(state.contacts, event)).length;
      state.position = page.lastEventId ?? state.position;
      await file.save();
      if (page.events.length) log(`follow: ${page.events.length} events, ${changed} applied`);
    }
  } catch (error) {
    if (!isEventsExpired(error)) throw error;
    // Events after our position were deleted by retention (deletions among them): walk the whole
    // list again and drop what it does not return.
    log('position older than the feed retention (410 events_expired): resynchronizing');
    Object.assign(state, { phase: 'head', position: null, listCursor: null, seen: [] });
    await file.save();
    await syncOnce(v2, file, options);
  }
}

/** Walks the contact list from the stored cursor to its end, checkpointing after every page. */
async function walkContacts(
  v2: V2Client,
  file: StateFile,
  pageSize: number,
  init: { signal?: AbortSignal },
  log: (line: string) => void,
): Promise<void> {
  const { state } = file;
  const list = pages(
    (cursor) => v2.GET('/v2/contacts', { params: { query: { limit: pageSize, cursor } }, ...init }),
    state.listCursor ?? undefined,
  );
  for await (const page of list) {
    const changed = page.data.filter((contact) => upsert(state.contacts, contact)).length;
    state.seen?.push(...page.data.map((contact) => contact.id));
    state.listCursor = page.page.next_cursor;
    await file.save();
    log(`list: ${page.data.length} contacts, ${changed} stored`);
  }
}

/** Stores `contact` unless the copy already has this version or a later one; true when stored. */
function upsert(contacts: Record<string, Contact>, contact: Contact): boolean {
  const current = contacts[contact.id];
  if (current && Date.parse(current.updated_at) >= Date.parse(contact.updated_at)) return false;
  contacts[contact.id] = contact;
  return true;
}

/** Applies one contact event to the copy; true when it changed something. */
export function applyEvent(contacts: Record<string, Contact>, event: WorkspaceEvent): boolean {
  if (event.type === 'contact.deleted') {
    // Deletions are final (ids are never reused), so a replayed one is harmless too.
    if (!(event.resource_id in contacts)) return false;
    delete contacts[event.resource_id];
    return true;
  }
  if (event.type !== 'contact.created' && event.type !== 'contact.updated') return false;
  // The contact as GET returns it — unless the contact was deleted since: its earlier events then
  // carry only its tombstone ({id, external_id}), and its contact.deleted comes later in the feed.
  // Such an event has nothing to store.
  return 'updated_at' in event.data ? upsert(contacts, event.data) : false;
}

// ------------------------------------------------------------------------------------------ CLI

export interface RunOptions extends SyncOptions {
  baseUrl: string;
  apiKey: string;
  statePath: string;
  watch: boolean;
  intervalMs?: number;
}

/** --once: one sync; --watch: sync, wait, again, until the signal. */
export async function run(options: RunOptions): Promise<void> {
  const api = createWorkspaceApiClient({ baseUrl: options.baseUrl, apiKey: options.apiKey });
  const file = await StateFile.open(options.statePath);
  const { signal } = options;
  for (;;) {
    await syncOnce(api.v2, file, options);
    if (!options.watch || signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, options.intervalMs ?? 5000);
      signal?.addEventListener('abort', done, { once: true });
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
    });
    if (signal?.aborted) return;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'base-url': { type: 'string' },
      key: { type: 'string' },
      state: { type: 'string', default: './contacts-state.json' },
      once: { type: 'boolean', default: false },
      watch: { type: 'boolean', default: false },
      interval: { type: 'string', default: '5000' },
      'page-size': { type: 'string', default: '100' },
    },
  });
  const baseUrl = values['base-url'];
  const apiKey = values.key ?? process.env.WORKSPACE_API_KEY;
  if (!baseUrl || !apiKey || (values.once && values.watch)) {
    process.stderr.write(
      'usage: sync.ts --base-url URL (--key KEY | WORKSPACE_API_KEY=KEY) [--state FILE] [--once | --watch] [--interval MS] [--page-size N]\n',
    );
    process.exit(2);
  }
  // SIGTERM / SIGINT: stop the request in flight and leave; the file holds the last page applied.
  const controller = new AbortController();
  for (const name of ['SIGTERM', 'SIGINT'] as const) process.once(name, () => controller.abort());
  const log = (line: string) => process.stdout.write(`[sync-contacts] ${line}\n`);
  try {
    await run({
      baseUrl,
      apiKey,
      statePath: values.state,
      watch: values.watch,
      intervalMs: Number(values.interval),
      pageSize: Number(values['page-size']),
      signal: controller.signal,
      log,
    });
    log(controller.signal.aborted ? 'stopped' : 'up to date');
  } catch (error) {
    if (controller.signal.aborted) {
      log('stopped');
      return;
    }
    const message =
      error instanceof WorkspaceApiError
        ? `${error.status} ${error.code}: ${error.message} (request ${error.requestId})`
        : String(error);
    process.stderr.write(`[sync-contacts] failed: ${message}\n`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
