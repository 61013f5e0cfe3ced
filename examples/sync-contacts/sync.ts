// Keeps a local copy of a workspace's contacts up to date, deletions included, and can be stopped
// (SIGTERM, SIGINT, or killed outright) and started again at any moment without missing or
// double-applying a change.
//
//   node --import tsx examples/sync-contacts/sync.ts --base-url http://127.0.0.1:3000 \
//     --key "$WORKSPACE_API_KEY" --state ./contacts.json [--once | --watch] [--interval 5000]
//
// How (README.md beside this file explains why it is correct):
//   1. head: read the events feed (contact events) to its current end, remembering the position;
//   2. list: walk GET /v2/contacts ordered by updated_at, resuming with updated_after;
//   3. follow: apply the feed from the remembered position — contact.created/updated upsert the
//      local copy from the event's data, contact.deleted removes it — forever (--watch) or up to
//      its current end (--once).
// After every page, the copy and the position are written together, atomically, to one file.
// Applying is idempotent: a contact is replaced only by a version with a later updated_at.
import { open, readFile, rename } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  createWorkspaceApiClient,
  eventPages,
  pages,
  WorkspaceApiError,
  type Contact,
  type V2Client,
  type WorkspaceEvent,
} from '../../clients/typescript/src/index.js';

/** Events are kept 30 days; a copy whose feed position is older than this is resynchronized. */
const RESYNC_AFTER_MS = 29 * 24 * 60 * 60 * 1000;

export interface SyncState {
  version: 1;
  /** the local copy: contacts by id, exactly as the API returns them */
  contacts: Record<string, Contact>;
  /** what to do next (see the top of this file) */
  phase: 'head' | 'list' | 'follow';
  /** position in the events feed: id of the last event applied (null: from the feed's start) */
  lastEventId: string | null;
  /** when the feed was last read to its end (ISO); tells when the position may have expired */
  feedReadAt: string | null;
  /** updated_at of the last contact stored by the list walk, which resumes from there */
  listedUpTo: string | null;
  /** during a resynchronization, the ids the list walk saw: the others are dropped at its end */
  seen: string[] | null;
}

export const initialState = (): SyncState => ({
  version: 1,
  contacts: {},
  phase: 'head',
  lastEventId: null,
  feedReadAt: null,
  listedUpTo: null,
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
    return new StateFile(path, text === null ? initialState() : (JSON.parse(text) as SyncState));
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

  if (state.phase === 'follow' && state.feedReadAt && Date.now() - Date.parse(state.feedReadAt) > RESYNC_AFTER_MS) {
    // Events this old may have been deleted (deletions among them): walk the whole list again and
    // drop what it does not return.
    log('position older than the feed retention: resynchronizing');
    Object.assign(state, { phase: 'head', listedUpTo: null, seen: [] });
    await file.save();
  }

  if (state.phase !== 'list') {
    // head and follow: the feed from the stored position to its current end. In the head phase
    // this only finds the position from which step 3 starts (applying is harmless, so it applies).
    const feed = eventPages(
      v2,
      { resource_type: 'contact', limit: pageSize, ...(state.lastEventId ? { after: state.lastEventId } : {}) },
      init,
    );
    for await (const page of feed) {
      const changed = page.events.filter((event) => applyEvent(state.contacts, event)).length;
      state.lastEventId = page.lastEventId ?? null;
      await file.save();
      if (page.events.length) log(`${state.phase}: ${page.events.length} events, ${changed} applied`);
    }
    state.feedReadAt = new Date().toISOString();
    if (state.phase === 'head') state.phase = 'list';
    await file.save();
  }

  if (state.phase === 'list') {
    // updated_after is exclusive and several contacts may share one updated_at: resume 1 ms before
    // the last one stored (the contacts seen again are skipped as not newer).
    const after = state.listedUpTo ? new Date(Date.parse(state.listedUpTo) - 1).toISOString() : undefined;
    const list = pages((cursor) =>
      v2.GET('/v2/contacts', { params: { query: { limit: pageSize, updated_after: after, cursor } }, ...init }),
    );
    for await (const page of list) {
      const changed = page.data.filter((contact) => upsert(state.contacts, contact)).length;
      state.seen?.push(...page.data.map((contact) => contact.id));
      state.listedUpTo = page.data.at(-1)?.updated_at ?? state.listedUpTo;
      await file.save();
      log(`list: ${page.data.length} contacts, ${changed} stored`);
    }
    if (state.seen) {
      const seen = new Set(state.seen);
      for (const id of Object.keys(state.contacts)) if (!seen.has(id)) delete state.contacts[id];
      state.seen = null;
    }
    state.phase = 'follow';
    await file.save();
    // The feed from the position found in the head phase: everything changed since.
    await syncOnce(v2, file, options);
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
function applyEvent(contacts: Record<string, Contact>, event: WorkspaceEvent): boolean {
  if (event.resource_type !== 'contact') return false;
  if (event.type === 'contact.deleted') {
    // Deletions are final (ids are never reused), so a replayed one is harmless too.
    if (!(event.resource_id in contacts)) return false;
    delete contacts[event.resource_id];
    return true;
  }
  // contact.created and contact.updated carry the contact as GET returns it.
  if (event.type === 'contact.created' || event.type === 'contact.updated') {
    return upsert(contacts, event.data as unknown as Contact);
  }
  return false;
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
