// What the requests of a run need from the dataset: fresh API keys (their secrets are shown once,
// so each run makes its own), ids to read, a cursor 10,000 pages deep, the id that opens the last
// page of the events feed, and a date window that holds appointments.
import type { Database } from '../src/infra/database.js';
import { instanceSecret } from '../src/infra/instance-settings.js';
import { EventIdCodec } from '../src/modules/events/event-ids.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { encodeCursor } from '../src/shared/cursor.js';
import type { Dataset } from './dataset.js';
import { CONNECTIONS, DEEP_PAGE, EVENTS_LIMIT, LIST_LIMIT } from './settings.js';

export interface Fixtures {
  /** big workspace: contacts:read, appointments:read, events:read */
  readKey: string;
  /** write workspace: contacts:write */
  writeKey: string;
  /** contacts of the big workspace, read one after the other by GET /v1/contacts/{id} */
  contactIds: string[];
  /** e-mail addresses of contacts of the big workspace, written in capitals: the lookup ignores case */
  contactEmails: string[];
  /** cursor whose page starts after row DEEP_PAGE × LIST_LIMIT of the big workspace's list */
  deepCursor: string;
  /** GET /v2/events?after= this id returns the last EVENTS_LIMIT events of the big workspace */
  lastEventsAfter: string;
  /** a week of appointments: starts_after and starts_before */
  window: { after: string; before: string };
}

// Quota far above anything a run sends, and room for every connection's request at once: no
// request of the benchmark may be a 429.
const RATE_LIMIT_PER_MINUTE = 100_000_000;
const CONCURRENT_REQUESTS = 2 * CONNECTIONS;

export async function prepareFixtures(db: Database, dataset: Dataset): Promise<Fixtures> {
  const owner = { db, defaultRateLimitPerMinute: RATE_LIMIT_PER_MINUTE };
  const key = async (workspaceId: string, scopes: string[]) =>
    (
      await ownerCommands.createKey(owner, {
        workspaceId,
        name: 'bench',
        scopes,
        rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
        concurrencyLimit: CONCURRENT_REQUESTS,
      })
    ).key;
  const big = dataset.big_workspace_id;

  // The sort key the service itself puts in a cursor: updated_at as the API prints it, and the id.
  const { rows: deep } = await db.query<{ updated_at: string; id: string }>(
    `SELECT api_time(updated_at) AS updated_at, id FROM contacts WHERE workspace_id = $1
      ORDER BY contacts.updated_at, contacts.id OFFSET $2 LIMIT 1`,
    [big, DEEP_PAGE * LIST_LIMIT - 1],
  );
  if (!deep[0]) throw new Error(`the big workspace has fewer than ${DEEP_PAGE * LIST_LIMIT} contacts`);
  const deepCursor = encodeCursor({ resource: 'contacts', workspaceId: big, filters: {} }, [
    deep[0].updated_at,
    deep[0].id,
  ]);

  const { rows: events } = await db.query<{ stamp: string; seq: string }>(
    `SELECT stamp::text, seq::text FROM events WHERE workspace_id = $1
      ORDER BY events.stamp DESC, events.seq DESC OFFSET $2 LIMIT 1`,
    [big, EVENTS_LIMIT],
  );
  // Event ids are encrypted with the installation's secret, which the server shares through the store.
  const eventIds = new EventIdCodec(await instanceSecret(db, 'event_id_secret'));
  const { rows: ids } = await db.query<{ id: string }>(
    'SELECT id FROM contacts WHERE workspace_id = $1 ORDER BY id LIMIT 1000',
    [big],
  );
  const { rows: emails } = await db.query<{ email: string }>(
    'SELECT email FROM contacts WHERE workspace_id = $1 AND email IS NOT NULL ORDER BY id LIMIT 1000',
    [big],
  );

  // The seed spreads appointment starts over ±2,000 hours around the load: the week after it holds
  // about 4% of them.
  const start = Date.parse(dataset.loaded_at);
  return {
    readKey: await key(big, ['contacts:read', 'appointments:read', 'events:read']),
    writeKey: await key(dataset.write_workspace_id, ['contacts:write']),
    contactIds: ids.map((r) => r.id),
    contactEmails: emails.map((r) => r.email.toUpperCase()),
    deepCursor,
    lastEventsAfter: eventIds.encode(big, [events[0]!.stamp, events[0]!.seq]),
    window: { after: new Date(start).toISOString(), before: new Date(start + 7 * 86_400_000).toISOString() },
  };
}
