// The schema has one current state, whichever way a database got there (db/README.md): a database
// built from scratch and one upgraded from a released version have the same tables, columns,
// constraints, indexes, sequences, functions, triggers and views, compared as catalog text
// (test/released-schema.ts). The upgraded database keeps its rows and the feed text of its events.
// Also here: migrate re-creates the database's code only when something changed, an older release
// leaves a newer database's code alone, and each function, trigger and view has one home under db/.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { Database } from '../src/infra/database.js';
import { migrate, migrationFiles } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { SCOPES } from '../src/shared/scopes.js';
import { sleep, startTestServer, STORE } from './harness.js';
import { migrateReleased, releasedMigrationFiles, schemaText } from './released-schema.js';
import { ODD } from './schema-text.js';
import { emptyDatabase } from './servers.js';

const DB_DIR = fileURLToPath(new URL('../db/', import.meta.url));
const MIGRATIONS = migrationFiles().length;

/** Rows of every kind the feed covers, written with SQL that every released schema accepts. */
async function writeRows(db: Database): Promise<string> {
  const workspace = (
    await db.query<{ id: string }>(`INSERT INTO workspaces (name, timezone) VALUES ('Released', 'UTC') RETURNING id`)
  ).rows[0]!.id;
  await db.transaction(async (tx) => {
    await tx.query(`SELECT set_config('app.request_id', 'req_released', true)`);
    await tx.query(
      `INSERT INTO contacts (workspace_id, name, email, phone) VALUES ($1, $2, 'odd@example.com', '+5511999990000')`,
      [workspace, ODD],
    );
  });
  const gone = (
    await db.query<{ id: string }>(
      `INSERT INTO contacts (workspace_id, name, external_id) VALUES ($1, 'Gone Soon', 'crm-7') RETURNING id`,
      [workspace],
    )
  ).rows[0]!.id;
  await db.query(`UPDATE contacts SET status = 'talking' WHERE workspace_id = $1 AND id <> $2`, [workspace, gone]);
  await db.query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [workspace, gone]);
  return workspace;
}

/** The oids of the database's functions and triggers: new ones whenever migrate re-creates them. */
async function codeOids(db: Database): Promise<string> {
  const { rows } = await db.query<{ oids: string }>(
    `SELECT string_agg(oid::text, ',' ORDER BY oid) AS oids FROM (
       SELECT p.oid FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
       UNION ALL SELECT t.oid FROM pg_trigger t WHERE NOT t.tgisinternal) o`,
  );
  return rows[0]!.oids;
}

/** The database's functions, triggers (with their table) and views, as `definitions` names them. */
async function databaseObjects(db: Database): Promise<string[]> {
  const { rows } = await db.query<{ object: string }>(
    `SELECT 'function ' || p.proname AS object FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
     UNION ALL
     SELECT 'trigger ' || t.tgname || ' on ' || c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
     UNION ALL
     SELECT 'view ' || c.relname FROM pg_class c WHERE c.relkind = 'v' AND c.relnamespace = current_schema()::regnamespace`,
  );
  return rows.map((r) => r.object).sort();
}

/**
 * Objects of the released schema that the current one does not have, on purpose: anything else
 * the release had and the upgrade lost is a definition missing from db/code.
 */
const RETIRED = [
  // The feed's and webhook delivery's row triggers, replaced by statement triggers that write a
  // statement's events together (record_events, wake_for_new_events); and feed_event_json, folded
  // into write_feed_json, the trigger that writes events.feed_json; stamp_change, which compared
  // rows as jsonb, replaced by each table's own <table>_stamp_change (stamp_trigger);
  // concurrency_acquire, which took one request's place a call, replaced by admit_requests, which counts
  // the requests of a turn and takes their places in one call. Sorted.
  'function concurrency_acquire',
  'function emit_event',
  'function feed_event_json',
  'function resource_changed',
  'function stamp_change',
  'function wake_webhook_delivery',
  'trigger appointments_events on appointments',
  'trigger appointments_events_update on appointments',
  'trigger automations_events on automations',
  'trigger automations_events_update on automations',
  'trigger catalog_items_events on catalog_items',
  'trigger catalog_items_events_update on catalog_items',
  'trigger contacts_events on contacts',
  'trigger contacts_events_update on contacts',
  'trigger conversations_events on conversations',
  'trigger conversations_events_update on conversations',
  'trigger messages_events on messages',
  'trigger messages_events_update on messages',
  'trigger pipeline_stages_events on pipeline_stages',
  'trigger pipeline_stages_events_update on pipeline_stages',
];

let fresh: { db: Database; drop(): Promise<void> };
let freshSchema: string;

before(async () => {
  fresh = await emptyDatabase();
  await migrate(fresh.db, GENERATED_DATABASE_CODE);
  freshSchema = await schemaText(fresh.db);
});

after(async () => {
  await fresh?.drop();
});

describe('one schema, from scratch or upgraded', () => {
  test('a database of the released schema, upgraded, has the schema of a new one, its rows and its feed text', async () => {
    const released = await emptyDatabase();
    try {
      await migrateReleased(released.db);
      const workspace = await writeRows(released.db);
      const releasedObjects = await databaseObjects(released.db);
      // Objects of a release that no file of db/code defines: none may outlive the upgrade, whatever
      // its signature (an overload of a current name included).
      await released.db.exec(`
        CREATE FUNCTION retired_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
        CREATE TRIGGER contacts_retired BEFORE UPDATE ON contacts FOR EACH ROW EXECUTE FUNCTION retired_touch();
        CREATE VIEW retired_contacts AS SELECT id, name FROM contacts;
        CREATE FUNCTION api_time(day date) RETURNS text LANGUAGE sql AS $$ SELECT 'retired' $$;`);
      const feed = async () =>
        (
          await released.db.query<{ feed_json: string }>(
            'SELECT feed_json FROM events WHERE workspace_id = $1 ORDER BY stamp, seq',
            [workspace],
          )
        ).rows.map((r) => r.feed_json);
      const contacts = async () =>
        (
          await released.db.query<{ row: string }>(
            `SELECT row(c.*)::text AS row FROM contacts c WHERE workspace_id = $1 ORDER BY id`,
            [workspace],
          )
        ).rows.map((r) => r.row);
      const feedBefore = await feed();
      const contactsBefore = await contacts();
      const eventsFile = async () =>
        (await released.db.query<{ file: string }>(`SELECT pg_relation_filenode('events')::text AS file`)).rows[0]!
          .file;
      const eventsFileBefore = await eventsFile();
      assert.ok(feedBefore.length >= 15, `${feedBefore.length} events`);
      assert.ok(feedBefore.some((f) => f.includes('"request_id":"req_released"')));

      const report = await migrate(released.db, GENERATED_DATABASE_CODE);
      assert.deepEqual(
        report.applied,
        migrationFiles().filter((f) => !releasedMigrationFiles().includes(f)),
      );
      assert.equal(report.code, 'applied');
      assert.equal(await schemaText(released.db), freshSchema);
      const kept = new Set(await databaseObjects(released.db));
      assert.deepEqual(
        releasedObjects.filter((o) => !kept.has(o)),
        RETIRED,
      );
      assert.deepEqual(await contacts(), contactsBefore);
      assert.deepEqual(await feed(), feedBefore);
      // feed_json stops being generated without a rewrite of the table.
      assert.equal(await eventsFile(), eventsFileBefore);

      // Through HTTP: the page splices each stored text after the event's id.
      const server = await startTestServer({ db: released.db });
      try {
        const { key } = await ownerCommands.createKey(server.owner, {
          workspaceId: workspace,
          name: 'upgraded follower',
          scopes: [...SCOPES],
          rateLimitPerMinute: 1_000_000,
        });
        const page = await server.request('GET', '/v2/events?limit=100', { key });
        assert.equal(page.status, 200, page.text);
        assert.equal(page.json.data.length, feedBefore.length);
        for (const text of feedBefore) assert.ok(page.text.includes(`",${text.slice(1)}`), text);
      } finally {
        await server.close();
      }
    } finally {
      await released.drop();
    }
  });

  for (const through of ['0001_init.sql', '0011_idempotency_claim.sql']) {
    test(`a database of an older release (through ${through}), upgraded, has the schema of a new one`, async () => {
      const older = await emptyDatabase();
      try {
        await migrateReleased(older.db, { through });
        const workspace = (
          await older.db.query<{ id: string }>(`INSERT INTO workspaces (name) VALUES ('Older') RETURNING id`)
        ).rows[0]!.id;
        await writeRows(older.db);
        await migrate(older.db, GENERATED_DATABASE_CODE);
        assert.equal(await schemaText(older.db), freshSchema);
        const stages = await older.db.query('SELECT id FROM pipeline_stages WHERE workspace_id = $1', [workspace]);
        assert.equal(stages.rows.length, 10);
        // The text 0012 wrote for events stored before it is what the trigger writes for them.
        const written = await older.db.query<{ feed_json: string }>('SELECT feed_json FROM events ORDER BY stamp, seq');
        await older.db.query('UPDATE events SET data = data');
        const rewritten = await older.db.query<{ feed_json: string }>(
          'SELECT feed_json FROM events ORDER BY stamp, seq',
        );
        assert.deepEqual(written.rows, rewritten.rows);
        // The feed came with 0002: rows of an older release have no events, and the stages 0002
        // adds to their workspaces none either (migrations run without triggers).
        if (through >= '0002') assert.ok(written.rows.some((r) => r.feed_json.includes(JSON.stringify(ODD))));
        else assert.equal(written.rows.length, 0);
      } finally {
        await older.drop();
      }
    });
  }
});

test('events.feed_json is what the trigger writes, whatever a writer puts in it', async () => {
  const db = fresh.db;
  const workspace = (await db.query<{ id: string }>(`INSERT INTO workspaces (name) VALUES ('Forger') RETURNING id`))
    .rows[0]!.id;
  await db.query(
    `INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, data, feed_json)
     VALUES ($1, 1, 'contact.created', 'contact', 'c-forged', '{"id": "c-forged"}', 'forged')`,
    [workspace],
  );
  await db.query(`UPDATE events SET feed_json = 'forged' WHERE workspace_id = $1 AND type = 'workspace.created'`, [
    workspace,
  ]);
  const { rows } = await db.query<{ feed_json: string }>('SELECT feed_json FROM events WHERE workspace_id = $1', [
    workspace,
  ]);
  assert.ok(rows.length >= 2);
  for (const r of rows) assert.match(r.feed_json, /^\{"type":"[a-z_]+\.[a-z]+","resource_type":/);
  assert.ok(rows.some((r) => r.feed_json.endsWith(`"data":{"id":"c-forged"}}`)));
  await db.query('DELETE FROM workspaces WHERE id = $1', [workspace]);
});

describe('when migrate re-creates the code', () => {
  test('nothing changed: nothing re-created, and a hand edit stays; code changed: all re-created from the files', async () => {
    const db = fresh.db;
    const oids = await codeOids(db);
    assert.deepEqual(await migrate(db, GENERATED_DATABASE_CODE), {
      applied: [],
      alreadyApplied: MIGRATIONS,
      code: 'unchanged',
    });
    assert.equal(await codeOids(db), oids);

    await db.query(
      `CREATE OR REPLACE FUNCTION api_time(ts timestamptz) RETURNS text LANGUAGE sql AS $$ SELECT 'edited' $$`,
    );
    assert.equal((await migrate(db, GENERATED_DATABASE_CODE)).code, 'unchanged');
    assert.equal((await db.query<{ t: string }>('SELECT api_time(now()) AS t')).rows[0]!.t, 'edited');

    await db.query(`UPDATE schema_code SET checksum = 'another release'`);
    assert.deepEqual(await migrate(db, GENERATED_DATABASE_CODE), {
      applied: [],
      alreadyApplied: MIGRATIONS,
      code: 'applied',
    });
    assert.match((await db.query<{ t: string }>('SELECT api_time(now()) AS t')).rows[0]!.t, /^\d{4}-\d\d-\d\dT/);
    assert.notEqual(await codeOids(db), oids);
    assert.equal(await schemaText(db), freshSchema);
  });

  test('a table that depends on a function of db/code stops migrate, which then changes nothing', async () => {
    const db = fresh.db;
    await db.query(`CREATE TABLE depends_on_code (at text DEFAULT api_time(now()))`);
    await db.query(`UPDATE schema_code SET checksum = 'another release'`);
    const before = await schemaText(db);
    try {
      await assert.rejects(migrate(db, GENERATED_DATABASE_CODE), (err: { message: string; detail?: string }) => {
        assert.match(err.message, /depend/);
        assert.match(err.detail ?? '', /depends_on_code/);
        assert.match(err.detail ?? '', /api_time/);
        return true;
      });
      assert.equal(await schemaText(db), before);
      const { rows } = await db.query<{ checksum: string }>('SELECT DISTINCT checksum FROM schema_code');
      assert.deepEqual(rows, [{ checksum: 'another release' }], 'no code recorded');
    } finally {
      await db.query('DROP TABLE depends_on_code');
    }
    assert.equal((await migrate(db, GENERATED_DATABASE_CODE)).code, 'applied');
    assert.equal(await schemaText(db), freshSchema);
  });

  test('a process of a release whose code was replaced by a later one, with the same migrations, leaves it', async () => {
    const db = fresh.db;
    const later = [
      ...GENERATED_DATABASE_CODE,
      {
        name: '99_of_a_later_release',
        sql: 'CREATE FUNCTION of_a_later_release() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;',
      },
    ];
    assert.equal((await migrate(db, later)).code, 'applied');
    const oids = await codeOids(db);
    try {
      assert.deepEqual(await migrate(db, GENERATED_DATABASE_CODE), {
        applied: [],
        alreadyApplied: MIGRATIONS,
        code: 'newer',
      });
      assert.equal(await codeOids(db), oids);
      assert.equal((await migrate(db, later)).code, 'unchanged');
    } finally {
      // Going back to this release's code, deliberately: its record goes first.
      await db.query('DELETE FROM schema_code');
    }
    assert.equal((await migrate(db, GENERATED_DATABASE_CODE)).code, 'applied');
    assert.equal(await schemaText(db), freshSchema);
  });

  test('a process of an older release leaves the code of a newer database as it is', async () => {
    const db = fresh.db;
    await db.query(`INSERT INTO schema_migrations (version) VALUES ('9999_of_a_newer_release.sql')`);
    await db.query(`UPDATE schema_code SET checksum = 'a newer release'`);
    const oids = await codeOids(db);
    try {
      assert.deepEqual(await migrate(db, GENERATED_DATABASE_CODE), {
        applied: [],
        alreadyApplied: MIGRATIONS + 1,
        code: 'newer',
      });
      assert.equal(await codeOids(db), oids);
    } finally {
      await db.query(`DELETE FROM schema_migrations WHERE version = '9999_of_a_newer_release.sql'`);
    }
    assert.equal((await migrate(db, GENERATED_DATABASE_CODE)).code, 'applied');
  });

  // One connection cannot hold a table while migrate runs on another: PostgreSQL only.
  if (STORE === 'postgres') {
    test('with nothing to change, migrate takes no lock on a table a write holds; with code to re-create, it waits for it', async () => {
      const own = await emptyDatabase();
      const writer = new pg.Client({ connectionString: own.url });
      try {
        await migrate(own.db, GENERATED_DATABASE_CODE);
        await writer.connect();
        await writer.query('BEGIN');
        await writer.query('LOCK TABLE contacts IN ROW EXCLUSIVE MODE'); // what every INSERT holds
        const unchanged = await Promise.race([
          migrate(own.db, GENERATED_DATABASE_CODE),
          sleep(10_000).then(() => 'blocked'),
        ]);
        assert.deepEqual(unchanged, { applied: [], alreadyApplied: MIGRATIONS, code: 'unchanged' });

        await own.db.query(`UPDATE schema_code SET checksum = 'another release'`);
        const reapplying = migrate(own.db, GENERATED_DATABASE_CODE);
        assert.equal(
          await Promise.race([reapplying.then(() => 'done'), sleep(1_000).then(() => 'waiting')]),
          'waiting',
        );
        await writer.query('ROLLBACK');
        assert.equal((await reapplying).code, 'applied');
      } finally {
        await writer.end().catch(() => undefined);
        await own.drop();
      }
    });
  }
});

/** Functions, triggers (with their table) and views a SQL file creates, as `kind name`. */
function definitions(sql: string): string[] {
  const text = sql.replace(/--[^\n]*/g, '');
  const found: string[] = [];
  const name = (n: string) => n.toLowerCase().replace(/^public\./, '');
  for (const m of text.matchAll(
    /\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:TEMP|TEMPORARY|RECURSIVE|MATERIALIZED)\s+)*(FUNCTION|PROCEDURE|VIEW)\s+([\w.]+)/gi,
  )) {
    found.push(`${m[1]!.toLowerCase() === 'view' ? 'view' : 'function'} ${name(m[2]!)}`);
  }
  for (const m of text.matchAll(
    /\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?TRIGGER\s+(\w+)\s+(?:BEFORE|AFTER|INSTEAD\s+OF)\b[\s\S]*?\bON\s+([\w.]+)/gi,
  )) {
    found.push(`trigger ${name(m[1]!)} on ${name(m[2]!)}`);
  }
  // stamp_trigger('<table>', …) (db/code/03_sync_clock.sql) creates <table>_stamp_change and <table>_stamp.
  for (const m of text.matchAll(/\bSELECT\s+stamp_trigger\('(\w+)'/gi)) {
    found.push(`function ${name(m[1]!)}_stamp_change`, `trigger ${name(m[1]!)}_stamp on ${name(m[1]!)}`);
  }
  return found;
}

function sqlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sqlFiles(join(dir, e.name)) : e.name.endsWith('.sql') ? [join(dir, e.name)] : [],
  );
}

describe('one home for each function, trigger and view', () => {
  test('each is defined in one file under db/, once, and never in a numbered migration', () => {
    const homes = new Map<string, string[]>();
    for (const file of sqlFiles(DB_DIR)) {
      for (const object of definitions(readFileSync(file, 'utf8'))) {
        homes.set(object, [...(homes.get(object) ?? []), file.slice(DB_DIR.length)]);
      }
    }
    assert.ok(homes.size >= 60, `${homes.size} definitions found`);
    const elsewhere = [...homes].filter(([, files]) => files.length > 1 || !files[0]!.startsWith('code/'));
    assert.deepEqual(elsewhere, []);
  });

  test("the database's functions, triggers and views are the ones db/code and the generated code define", async () => {
    const declared = [
      ...sqlFiles(join(DB_DIR, 'code')).flatMap((f) => definitions(readFileSync(f, 'utf8'))),
      ...GENERATED_DATABASE_CODE.flatMap((unit) => definitions(unit.sql)),
    ];
    assert.deepEqual(await databaseObjects(fresh.db), declared.sort());
  });
});
