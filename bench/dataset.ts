// The benchmark database: created when missing, loaded once, and reused by later runs while its
// marker (instance_settings 'bench_dataset') says a complete load of this DATASET_VERSION is there.
//
// How the load is made fast: the rows come from the product's own seed functions (set-based SQL),
// and the events from the same api_*_json() functions the triggers call, but written set-based
// instead of by the row triggers. With the triggers firing, a load takes about four times as long
// as without them plus one INSERT … SELECT into events: their per-row PL/pgSQL and EXECUTE would
// make the load alone take most of the time budget. The loading transactions turn the triggers off
// with session_replication_role = replica, which affects those transactions only; the service and
// everyone else keep them. The one trigger that fires anyway writes an event's feed text
// (db/code/04_events_feed.sql).
import pg from 'pg';
import { createPostgresDatabase, type Database, type Queryable } from '../src/infra/database.js';
import { instanceSetting, recordInstanceSetting } from '../src/infra/instance-settings.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { seedAppointments, seedContacts } from '../src/modules/owner/seed.js';
import { DATASET, DATASET_VERSION } from './settings.js';

export interface Dataset {
  version: number;
  loaded_at: string;
  load_seconds: number;
  workspaces: number;
  contacts: number;
  appointments: number;
  events: number;
  /** every read scenario runs in this workspace */
  big_workspace_id: string;
  /** writes go to this small workspace, and are removed at the start of the next run */
  write_workspace_id: string;
}

const MARKER = 'bench_dataset';
/** The origin the benchmark's writes carry: how the next run finds them to take them out again. */
export const BENCH_ORIGIN = 'bench';
// Rows per call of a seed function, each call its own transaction: short transactions, progress to
// show, and appointments tied to more contacts (each call draws its own 5,000 to choose from).
const SEED_BATCH = 20_000;

export async function openDataset(
  url: string,
  reset: boolean,
  log: (line: string) => void,
): Promise<{ db: Database; dataset: Dataset; loaded: boolean }> {
  if (reset) await recreateDatabase(url, log);
  else await createDatabaseIfMissing(url, log);
  let db = await openMigrated(url);
  try {
    const marker = await readMarker(db);
    if (marker && marker.version === DATASET_VERSION) {
      await removeBenchWrites(db, marker);
      if (await matchesMarker(db, marker)) {
        log(`dataset: reusing the load of ${marker.loaded_at} (--reset reloads it)`);
        return { db, dataset: marker, loaded: false };
      }
      log('dataset: the database no longer holds what its marker says; reloading');
    } else if (marker) {
      log(`dataset: loaded by dataset version ${marker.version}, this is ${DATASET_VERSION}; reloading`);
    }
    if (marker || (await hasWorkspaces(db))) {
      await db.close();
      await recreateDatabase(url, log);
      db = await openMigrated(url);
    }
    return { db, dataset: await load(db, log), loaded: true };
  } catch (err) {
    await db.close();
    throw err;
  }
}

async function openMigrated(url: string): Promise<Database> {
  // Two connections: the load runs two streams of work, one per core.
  const db = createPostgresDatabase(url, 2);
  try {
    await migrate(db, GENERATED_DATABASE_CODE);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}

/** Runs `work` on a connection to a maintenance database of the same server. */
export async function withAdmin<T>(url: string, work: (client: pg.Client, name: string) => Promise<T>): Promise<T> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  let lastError: unknown;
  // `postgres` exists on a default installation; `test` is what this project's CI connects to.
  for (const maintenance of ['postgres', 'test']) {
    const adminUrl = new URL(url);
    adminUrl.pathname = `/${maintenance}`;
    const client = new pg.Client({ connectionString: adminUrl.toString() });
    try {
      await client.connect();
    } catch (err) {
      lastError = err;
      continue;
    }
    try {
      return await work(client, name);
    } finally {
      await client.end();
    }
  }
  throw lastError;
}

async function createDatabaseIfMissing(url: string, log: (line: string) => void): Promise<void> {
  await withAdmin(url, async (client, name) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return;
    log(`dataset: creating database ${name}`);
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  });
}

async function recreateDatabase(url: string, log: (line: string) => void): Promise<void> {
  await withAdmin(url, async (client, name) => {
    log(`dataset: creating database ${name} anew`);
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  });
}

async function readMarker(db: Database): Promise<Dataset | null> {
  const stored = await instanceSetting(db, MARKER);
  return stored === null ? null : (JSON.parse(stored) as Dataset);
}

async function hasWorkspaces(db: Database): Promise<boolean> {
  return (await db.query('SELECT 1 FROM workspaces LIMIT 1')).rowCount > 0;
}

async function tableCounts(
  db: Queryable,
): Promise<Pick<Dataset, 'workspaces' | 'contacts' | 'appointments' | 'events'>> {
  const { rows } = await db.query<{ workspaces: number; contacts: number; appointments: number; events: number }>(
    `SELECT (SELECT count(*) FROM workspaces)::int AS workspaces, (SELECT count(*) FROM contacts)::int AS contacts,
            (SELECT count(*) FROM appointments)::int AS appointments, (SELECT count(*) FROM events)::int AS events`,
  );
  return rows[0]!;
}

async function matchesMarker(db: Database, marker: Dataset): Promise<boolean> {
  const counts = await tableCounts(db);
  return (
    counts.workspaces === marker.workspaces &&
    counts.contacts === marker.contacts &&
    counts.appointments === marker.appointments &&
    counts.events === marker.events
  );
}

/**
 * Takes out what an earlier run wrote (contacts with the bench origin and their events, idempotency
 * records, the run's API keys), so every run measures the same data. Nothing refers to those
 * contacts, so they go without the triggers (no deletion events to clean up in turn).
 */
async function removeBenchWrites(db: Database, dataset: Dataset): Promise<void> {
  const ws = dataset.write_workspace_id;
  await db.transaction(async (tx) => {
    await tx.query('SET LOCAL session_replication_role = replica');
    await tx.query(
      `DELETE FROM events WHERE workspace_id = $1 AND resource_type = 'contact'
          AND resource_id IN (SELECT id::text FROM contacts WHERE workspace_id = $1 AND origin = $2)`,
      [ws, BENCH_ORIGIN],
    );
    await tx.query('DELETE FROM contacts WHERE workspace_id = $1 AND origin = $2', [ws, BENCH_ORIGIN]);
    await tx.query('DELETE FROM idempotency_keys WHERE workspace_id = $1', [ws]);
  });
  await db.query(`DELETE FROM api_keys WHERE name = 'bench'`);
  // Autovacuum may be off (it is on this machine): without this the next run would scan dead rows.
  await db.query('VACUUM (ANALYZE) contacts, events, idempotency_keys, api_keys, api_key_usage');
}

interface WorkspacePlan {
  id: string;
  contacts: number;
  appointments: number;
  /** contacts whose status changes once, each making one contact.updated event */
  updates: number;
}

async function load(db: Database, log: (line: string) => void): Promise<Dataset> {
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  log(
    `dataset: loading ${DATASET.workspaces} workspaces, ${DATASET.contacts.toLocaleString('en')} contacts, ` +
      `${DATASET.appointments.toLocaleString('en')} appointments, ${DATASET.events.toLocaleString('en')} events`,
  );

  // Workspaces through their triggers: each also gets its pipeline stages and their events.
  const { rows: created } = await db.query<{ id: string }>(
    `INSERT INTO workspaces (name, timezone)
     SELECT 'Bench workspace ' || lpad(g::text, 3, '0'), 'America/Sao_Paulo' FROM generate_series(1, $1::int) AS g
     RETURNING id`,
    [DATASET.workspaces],
  );
  const ids = created.map((r) => r.id);
  const plans = planWorkspaces(ids, (await tableCounts(db)).events);

  const done = { contacts: 0, appointments: 0, events: 0 };
  const progress = () =>
    log(
      `dataset: ${elapsed()}  contacts ${done.contacts.toLocaleString('en')}/${DATASET.contacts.toLocaleString('en')}` +
        `  appointments ${done.appointments.toLocaleString('en')}/${DATASET.appointments.toLocaleString('en')}` +
        `  events ${done.events.toLocaleString('en')} written`,
    );
  const ticker = setInterval(progress, 5_000);
  try {
    // Two streams, one per core; the big workspace first, so the small ones fill in beside it.
    const queue = [...plans];
    const stream = async () => {
      for (let plan = queue.shift(); plan; plan = queue.shift()) await loadWorkspace(db, plan, done);
    };
    await Promise.all([stream(), stream()]);
  } finally {
    clearInterval(ticker);
  }
  progress();

  log(`dataset: ${elapsed()}  VACUUM ANALYZE`);
  await Promise.all([
    db.query('VACUUM (ANALYZE) events'),
    db.query('VACUUM (ANALYZE) contacts, appointments, workspaces, pipeline_stages'),
  ]);

  const counts = await tableCounts(db);
  const dataset: Dataset = {
    version: DATASET_VERSION,
    loaded_at: new Date(started).toISOString(),
    load_seconds: Math.round((Date.now() - started) / 100) / 10,
    ...counts,
    big_workspace_id: ids[0]!,
    write_workspace_id: ids[1]!,
  };
  await recordInstanceSetting(db, MARKER, JSON.stringify(dataset));
  log(
    `dataset: loaded in ${dataset.load_seconds} s: ${counts.contacts.toLocaleString('en')} contacts, ` +
      `${counts.appointments.toLocaleString('en')} appointments, ${counts.events.toLocaleString('en')} events`,
  );
  return dataset;
}

/**
 * The first workspace gets the big share; the 99 others split the rest evenly. Status updates make
 * up the events the inserts do not, spread in proportion to contacts.
 */
function planWorkspaces(ids: string[], eventsSoFar: number): WorkspacePlan[] {
  const split = (total: number, parts: number, i: number) => Math.floor(total / parts) + (i < total % parts ? 1 : 0);
  const others = ids.length - 1;
  const plans = ids.map((id, i) => ({
    id,
    contacts:
      i === 0 ? DATASET.bigWorkspaceContacts : split(DATASET.contacts - DATASET.bigWorkspaceContacts, others, i - 1),
    appointments:
      i === 0
        ? DATASET.bigWorkspaceAppointments
        : split(DATASET.appointments - DATASET.bigWorkspaceAppointments, others, i - 1),
    updates: 0,
  }));
  const updates = DATASET.events - eventsSoFar - DATASET.contacts - DATASET.appointments;
  for (const p of plans) p.updates = Math.floor((updates * p.contacts) / DATASET.contacts);
  plans[0]!.updates += updates - plans.reduce((sum, p) => sum + p.updates, 0);
  return plans;
}

/** Rows in batches (each its own transaction), then the events those rows would have written. */
async function loadWorkspace(
  db: Database,
  plan: WorkspacePlan,
  done: { contacts: number; appointments: number; events: number },
): Promise<void> {
  const untriggered = (work: (tx: Queryable) => Promise<number>) =>
    db.transaction(async (tx) => {
      await tx.query('SET LOCAL session_replication_role = replica');
      return work(tx);
    });
  // Counted after the await: `done.x += await …` would read done.x before the other stream adds to it.
  const events = async (sql: string, params: unknown[]) => {
    const written = await untriggered(async (tx) => (await tx.query(sql, params)).rowCount);
    done.events += written;
  };

  for (let left = plan.contacts; left > 0; left -= SEED_BATCH) {
    const seeded = await untriggered((tx) => seedContacts(tx, plan.id, Math.min(SEED_BATCH, left)));
    done.contacts += seeded;
  }
  await events(
    `INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, data)
     SELECT c.workspace_id, stamp_position(c.created_at), 'contact.created', 'contact', c.id::text, api_contact_json(c)
       FROM contacts c WHERE c.workspace_id = $1 ORDER BY c.created_at, c.id`,
    [plan.id],
  );

  // Appointments after the contacts: the seed ties them to contacts of the same workspace.
  for (let left = plan.appointments; left > 0; left -= SEED_BATCH) {
    const seeded = await untriggered((tx) => seedAppointments(tx, plan.id, Math.min(SEED_BATCH, left)));
    done.appointments += seeded;
  }
  await events(
    `INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, data)
     SELECT a.workspace_id, stamp_position(a.created_at), 'appointment.created', 'appointment', a.id::text,
            api_appointment_json(a)
       FROM appointments a WHERE a.workspace_id = $1 ORDER BY a.created_at, a.id`,
    [plan.id],
  );

  // A status change and its contact.updated event. Each event's feed position (stamp, in
  // milliseconds, and the sequence) is the time of its row's change. Triggers are off for the bulk
  // load, so the stamp is the clock (a historic data set: its rows spread over months, not one sync-clock stamp
  // per batch); the workspace's sync clock starts after it on the first write through the API.
  await events(
    `WITH changed AS (
       UPDATE contacts c
          SET status = CASE c.status WHEN 'talking' THEN 'meeting' ELSE 'talking' END,
              updated_at = greatest(clock_timestamp(), c.updated_at + interval '1 millisecond')
        WHERE c.workspace_id = $1
          AND c.id IN (SELECT id FROM contacts WHERE workspace_id = $1 ORDER BY id LIMIT $2)
       RETURNING c.*)
     INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, data)
     SELECT workspace_id, stamp_position(updated_at), 'contact.updated', 'contact', id::text,
            api_contact_json(ROW(changed.*)::contacts)
       FROM changed ORDER BY updated_at, id`,
    [plan.id, plan.updates],
  );
  // The workspace's sync clock at its last event, as the triggers would have left it: the feed's
  // head, and the check that a position is not ahead of the feed, read it.
  await db.query(
    `INSERT INTO workspace_clocks AS k (workspace_id, last_stamp)
     SELECT $1, to_timestamp(max(stamp) / 1000.0) FROM events WHERE workspace_id = $1
     ON CONFLICT (workspace_id) DO UPDATE SET last_stamp = greatest(k.last_stamp, EXCLUDED.last_stamp)`,
    [plan.id],
  );
}
