// Test harness: a real server on a real port over a real database. The store is PGlite in memory
// by default and PostgreSQL when DATABASE_URL is set, so every test runs in both modes. Tests own
// their fixtures: each creates the workspaces and keys it needs, so files can share one database.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { buildApp, type BuiltApp } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { createEmbeddedDatabase, createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { eventsRepository } from '../src/modules/events/events.repository.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import { ownerCommands, type OwnerContext } from '../src/modules/owner/owner.service.js';
import { SCOPES, type Scope } from '../src/shared/scopes.js';
import type { EventIdCodec } from '../src/modules/events/event-ids.js';
import { assertMatchesContract } from './contract.js';

export const STORE: 'postgres' | 'embedded' = process.env.DATABASE_URL ? 'postgres' : 'embedded';

/** An id of the right shape that no row has: what a 404 is asked with. */
export const UNKNOWN_ID = '6f1c2a9e-0000-4000-8000-00000000abcd';

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  text: string;
  json: T;
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  /** sent as is, instead of JSON.stringify(body) */
  raw?: string;
  contentType?: string;
  idem?: string;
  headers?: Record<string, string>;
}

export interface TestServer {
  baseUrl: string;
  db: Database;
  built: BuiltApp;
  owner: OwnerContext;
  /** the server's codec of event ids (tests compare positions through it) */
  eventIds: EventIdCodec;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<TestResponse<T>>;
  /** A fresh workspace with a key holding `scopes` (all of them by default). */
  workspace(options?: { scopes?: Scope[]; rateLimitPerMinute?: number; timezone?: string }): Promise<TestWorkspace>;
  close(): Promise<void>;
}

export interface TestWorkspace {
  id: string;
  key: string;
  keyId: string;
  /** another key of the same workspace */
  newKey(
    scopes: Scope[],
    options?: { rateLimitPerMinute?: number; expiresInMs?: number; concurrencyLimit?: number },
  ): Promise<{ id: string; key: string }>;
}

export async function openTestDatabase(): Promise<Database> {
  // Behind a transaction pooler (DATABASE_TRANSACTION_POOLER, DATABASE_LISTEN_URL) as the service is.
  const config = loadConfig(process.env);
  const db = process.env.DATABASE_URL
    ? createPostgresDatabase(process.env.DATABASE_URL, 10, {
        listenUrl: config.databaseListenUrl ?? undefined,
        transactionPooler: config.databaseTransactionPooler,
      })
    : await createEmbeddedDatabase(null);
  await migrate(db, GENERATED_DATABASE_CODE);
  return db;
}

/**
 * Deadlocks PostgreSQL has broken in `db`'s database so far (they reach pg_stat_database within a
 * second). The embedded store runs one writer at a time: always 0.
 */
export async function deadlocksSoFar(db: Database): Promise<number> {
  if (db.kind !== 'postgres') return 0;
  const { rows } = await db.query<{ n: number }>(
    'SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return rows[0]!.n;
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...loadConfig({ LOG_LEVEL: 'silent' }),
    // Tests of other promises send more requests of one key at once than the product's default
    // allows, and on a busy machine would see their burst shed; test/admission.test.ts and
    // test/admission-processes.test.ts run both as configured.
    defaultConcurrentRequests: 1_000,
    loadShedding: { maxInFlight: 1_000_000, maxEventLoopDelayMs: 60_000, maxPoolWaiting: 1_000_000 },
    ...overrides,
  };
}

export async function startTestServer(
  options: { config?: Partial<Config>; db?: Database; logger?: Parameters<typeof buildApp>[2] } = {},
): Promise<TestServer> {
  const ownsDb = !options.db;
  const db = options.db ?? (await openTestDatabase());
  const config = testConfig(options.config);
  const built = await buildApp(config, db, options.logger ?? { logger: false });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  // The owner's commands act with the server's configuration, as through its owner channel.
  const owner: OwnerContext = {
    db,
    defaultRateLimitPerMinute: config.defaultRateLimitPerMinute,
    webhooks: { timeoutMs: config.webhooks.timeoutMs, targets: config.webhooks.targets },
  };

  const request = async (method: string, path: string, o: RequestOptions = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    if (o.idem) headers['idempotency-key'] = o.idem;
    let payload: string | undefined;
    if (o.raw !== undefined) payload = o.raw;
    else if (o.body !== undefined) payload = JSON.stringify(o.body);
    if (payload !== undefined || o.contentType) headers['content-type'] = o.contentType ?? 'application/json';
    const res = await fetch(address + path, { method, headers, body: payload });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    assertMatchesContract(method, path, res.status, res.headers, json);
    return { status: res.status, headers: res.headers, text, json } as TestResponse;
  };

  const workspace: TestServer['workspace'] = async (o = {}) => {
    const ws = await ownerCommands.createWorkspace(owner, {
      name: `test-${randomUUID().slice(0, 8)}`,
      timezone: o.timezone ?? 'UTC',
    });
    const newKey: TestWorkspace['newKey'] = async (scopes, k = {}) => {
      const created = await ownerCommands.createKey(owner, {
        workspaceId: ws.id,
        name: 'test key',
        scopes,
        ...(k.rateLimitPerMinute !== undefined ? { rateLimitPerMinute: k.rateLimitPerMinute } : {}),
        ...(k.expiresInMs !== undefined ? { expiresInMs: k.expiresInMs } : {}),
        ...(k.concurrencyLimit !== undefined ? { concurrencyLimit: k.concurrencyLimit } : {}),
      });
      return { id: created.id, key: created.key };
    };
    const main = await newKey(
      o.scopes ?? [...SCOPES],
      o.rateLimitPerMinute !== undefined ? { rateLimitPerMinute: o.rateLimitPerMinute } : {},
    );
    return { id: ws.id, key: main.key, keyId: main.id, newKey };
  };

  return {
    baseUrl: address,
    db,
    built,
    owner,
    eventIds: await built.services.eventIds(),
    request,
    workspace,
    async close() {
      await built.close();
      if (ownsDb) await db.close();
    },
  };
}

/**
 * The feed position (stamp, sequence) an event id of `workspaceId` names, decrypted with the
 * server's own key: what tests compare to check the feed's order. Fails on anything else.
 */
export function eventPosition(server: TestServer, workspaceId: string, id: string): [bigint, bigint] {
  const parsed = server.eventIds.decode(workspaceId, id);
  if (parsed?.kind !== 'position') throw new Error(`not an event id of workspace ${workspaceId}: ${id}`);
  return [BigInt(parsed.position[0]), BigInt(parsed.position[1])];
}

/** The id of a feed position of `workspaceId`, as the server would issue it. */
export const eventIdAt = (server: TestServer, workspaceId: string, stamp: bigint, seq: bigint): string =>
  server.eventIds.encode(workspaceId, [stamp.toString(), seq.toString()]);

/**
 * Ages the events of `workspaceId` (of one resource type, or all) past the 30-day retention and
 * runs the purge the server runs. On PostgreSQL test files share one database and run at once, so
 * another file's purge may delete these events first; what is asserted is that none is left.
 */
export async function expireEvents(server: TestServer, workspaceId: string, resourceType?: string): Promise<void> {
  const only = resourceType ? ' AND resource_type = $2' : '';
  const params = resourceType ? [workspaceId, resourceType] : [workspaceId];
  const aged = await server.db.query(
    `UPDATE events SET occurred_at = occurred_at - interval '31 days' WHERE workspace_id = $1${only}`,
    params,
  );
  if (!aged.rowCount) throw new Error(`no events to expire in workspace ${workspaceId}`);
  await eventsRepository.purgeOlderThan(server.db, 30);
  const left = await server.db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM events WHERE workspace_id = $1${only} AND occurred_at < now() - interval '30 days'`,
    params,
  );
  if (left.rows[0]!.n !== '0') throw new Error(`the purge left ${left.rows[0]!.n} expired events`);
}

/** A log destination that keeps every line it is given, for tests that read what was logged. */
export function logLines(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, stream };
}

export const idem = () => `test-${randomUUID()}`;

/** The contact properties a write may set on their own (all but status), for writes of one property each. */
export const TEXT_PROPERTIES = ['name', 'company_name', 'email', 'phone', 'whatsapp', 'origin'] as const;

/** A valid value of `property` that differs from round to round. */
export const propertyValue = (property: (typeof TEXT_PROPERTIES)[number], round: number): string =>
  property === 'email'
    ? `round${round}@example.com`
    : property === 'phone' || property === 'whatsapp'
      ? `+551190000000${round}`
      : `${property} ${round}`;

export const contactBody = (overrides: Record<string, unknown> = {}) => ({
  name: 'Ana Souza',
  company_name: 'Souza Ltda',
  email: `ana.${randomUUID().slice(0, 8)}@example.com`,
  phone: '+5511912345678',
  whatsapp: '+5511987654321',
  origin: 'website',
  status: 'talking',
  ...overrides,
});

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
