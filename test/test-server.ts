// The one way a test file (or a describe) gets its server: started before its tests, stopped after
// them. The store is the run's (PGlite in memory, or PostgreSQL when DATABASE_URL is set) unless the
// file opens its own.
import { after, before } from 'node:test';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { startTestServer, type TestServer } from './harness.js';
import { newDatabase } from './servers.js';

export interface TestServerOptions extends NonNullable<Parameters<typeof startTestServer>[0]> {
  /**
   * Opens the store to serve before the server starts; it is closed after the server stops. Without
   * it (and without `db`), the server has a new store of the run's kind.
   */
  openDb?: () => Promise<Database>;
  /**
   * What the tests need once the server runs (workspaces, keys, seeded rows), made in the same
   * before hook: node:test (Node 20) runs the before hooks of a file's top level side by side, so a
   * second one could not count on the server being up.
   */
  setup?: () => Promise<void> | void;
}

/**
 * Registers the hooks that start a server before the tests of the current file or describe and
 * close it after them, and returns it. Its properties can be read once it runs (in `setup`, in
 * tests and in after hooks); before, they throw. `options` may be a function, called in the before
 * hook, when they depend on what is known only then.
 */
export function useTestServer(
  options: TestServerOptions | (() => TestServerOptions | Promise<TestServerOptions>) = {},
): TestServer {
  let running: TestServer | undefined;
  let ownDb: Database | undefined;
  before(async () => {
    const { openDb, setup, ...start } = typeof options === 'function' ? await options() : options;
    ownDb = openDb ? await openDb() : undefined;
    running = await startTestServer({ ...start, ...(ownDb ? { db: ownDb } : {}) });
    await setup?.();
  });
  after(async () => {
    await running?.close();
    await ownDb?.close();
    running = undefined;
  });
  return new Proxy({} as TestServer, {
    get(_target, property) {
      // Not a promise: awaiting the server, or returning it from an async function, is allowed.
      if (property === 'then') return undefined;
      if (!running)
        throw new Error(`the test server is not running (read .${String(property)} in a test or a later hook)`);
      return Reflect.get(running, property);
    },
  });
}

/**
 * A server over a new PostgreSQL database of its own on `serverUrl` (servers.ts, findPostgres),
 * whatever store the run uses: for what happens only between PostgreSQL connections (lock waits,
 * deadlocks), tested in both passes of the suite, and counted in a database no other test file
 * writes to. The database is made in the before hook, with `poolSize` connections to it, and dropped
 * after the server stops.
 */
export function usePostgresTestServer(
  serverUrl: string,
  prefix: string,
  options: Omit<TestServerOptions, 'db' | 'openDb'> & { poolSize?: number } = {},
): TestServer {
  const { poolSize = 10, ...start } = options;
  let database: { url: string; drop(): Promise<void> } | undefined;
  const server = useTestServer({
    ...start,
    openDb: async () => {
      database = await newDatabase(serverUrl, prefix);
      const db = createPostgresDatabase(database.url, poolSize);
      await migrate(db, GENERATED_DATABASE_CODE);
      return db;
    },
  });
  after(async () => database?.drop());
  return server;
}
