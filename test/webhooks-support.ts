// A real webhook receiver for the tests (node:http on 127.0.0.1, a free port) that records every
// delivery and checks its signature with the `standardwebhooks` package — the reference
// implementation, not our code — against the secrets the test hands it. What it answers is up to
// the test: a status, after a delay, or no answer at all while it holds the request open.
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { migrate } from '../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../src/modules/resources.js';
import type { WebhookConfig } from '../src/config.js';
import { openTestDatabase, STORE, type TestServer } from './harness.js';
import { useTestServer } from './test-server.js';
import { newDatabase } from './servers.js';

export interface Delivery {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  path: string;
  userAgent: string | undefined;
  /** every header of the request, as node:http gives them (names in lower case) */
  headers: IncomingHttpHeaders;
  /** verified by standardwebhooks with one of the receiver's secrets */
  verified: boolean;
  /** verified by each secret alone, in the order of `secrets` */
  verifiedBy: boolean[];
  receivedAt: number;
  /** what the receiver answered (null: nothing, the connection was dropped or is held) */
  answered: number | null;
  answeredAt: number | null;
  /** when the connection of the request closed (answered, dropped, or given up by the sender) */
  closedAt: number | null;
}

export type Answer = { status: number; delayMs?: number; headers?: Record<string, string> } | 'hold';

export class Receiver {
  readonly deliveries: Delivery[] = [];
  /** the secrets deliveries are checked against (set by the test as the CLI prints them) */
  secrets: string[] = [];
  answer: (d: Delivery) => Answer = () => ({ status: 200 });
  /** (path, id) with a request in flight right now, and those ever in flight twice at once */
  readonly #inFlight = new Map<string, number>();
  readonly overlapping = new Set<string>();
  readonly #held: ServerResponse[] = [];
  readonly #server: Server;
  url = '';

  constructor() {
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = {
      'webhook-id': String(req.headers['webhook-id'] ?? ''),
      'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
      'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
    };
    const verifiedBy = this.secrets.map((secret) => {
      try {
        new Webhook(secret).verify(body, headers);
        return true;
      } catch {
        return false;
      }
    });
    const delivery: Delivery = {
      id: headers['webhook-id'],
      timestamp: headers['webhook-timestamp'],
      signature: headers['webhook-signature'],
      body,
      path: req.url ?? '/',
      userAgent: req.headers['user-agent'],
      headers: req.headers,
      verified: verifiedBy.some(Boolean),
      verifiedBy,
      receivedAt: Date.now(),
      answered: null,
      answeredAt: null,
      closedAt: null,
    };
    this.deliveries.push(delivery);
    const key = `${delivery.path} ${delivery.id}`;
    const inFlight = (this.#inFlight.get(key) ?? 0) + 1;
    this.#inFlight.set(key, inFlight);
    if (inFlight > 1) this.overlapping.add(key);
    // Before the answer is written, a close means the sender went away (it gave up: a timeout).
    let gone = false;
    res.on('close', () => {
      gone = true;
      delivery.closedAt = Date.now();
      this.#inFlight.set(key, (this.#inFlight.get(key) ?? 1) - 1);
    });
    const answer = this.answer(delivery);
    if (answer === 'hold') {
      this.#held.push(res);
      return;
    }
    if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
    if (gone || res.destroyed) return;
    // Taken before the answer leaves: the sender cannot act on it (and send the next event of the
    // resource) any earlier.
    const answeredAt = Date.now();
    res.writeHead(answer.status, answer.headers ?? {}).end('ok', () => {
      delivery.answered = answer.status;
      delivery.answeredAt = answeredAt;
    });
  }

  /** Deliveries answered 2xx, in the order they were answered. */
  acked(): Delivery[] {
    return this.deliveries
      .filter((d) => d.answered !== null && d.answered >= 200 && d.answered < 300)
      .sort((a, b) => a.answeredAt! - b.answeredAt!);
  }

  async close(): Promise<void> {
    for (const res of this.#held) res.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

export const waitFor = async (
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

/**
 * A PostgreSQL database of this test file alone, on the server of DATABASE_URL (or the local test
 * server): delivery loops of other test files' servers, which share DATABASE_URL's database, must
 * not deliver this file's endpoints with their own settings.
 */
export function ownPostgresDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  return newDatabase(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', prefix);
}

export interface OwnTestStore {
  db: Database;
  /** the PostgreSQL database's URL; null for the embedded store */
  url: string | null;
  close(): Promise<void>;
}

/**
 * The store of a test file alone, migrated: on PostgreSQL a database of its own
 * (`ownPostgresDatabase`), on the embedded store a new one. `close` closes it, and drops the
 * PostgreSQL database.
 */
export async function ownTestStore(prefix: string): Promise<OwnTestStore> {
  if (STORE !== 'postgres') {
    const db = await openTestDatabase();
    return { db, url: null, close: () => db.close() };
  }
  const own = await ownPostgresDatabase(prefix);
  const db = createPostgresDatabase(own.url, 10);
  await migrate(db, GENERATED_DATABASE_CODE);
  return {
    db,
    url: own.url,
    close: async () => {
      await db.close();
      await own.drop();
    },
  };
}

/**
 * The file's server, delivering webhooks over a store of its own (`ownTestStore`) to receivers on
 * this machine: every process setting of the product's defaults but those the test gives. `setup`
 * runs once it is up (useTestServer's).
 */
export function useWebhookTestServer(
  prefix: string,
  webhooks: Partial<WebhookConfig>,
  setup?: () => Promise<void>,
): TestServer {
  let store: OwnTestStore | undefined;
  const server = useTestServer(async () => {
    store = await ownTestStore(prefix);
    return {
      db: store.db,
      config: {
        webhooks: {
          delivery: true,
          retryScheduleMs: [1_000],
          timeoutMs: 1_000,
          targets: 'public+loopback',
          pollIntervalMs: 50,
          concurrency: 8,
          endpointConcurrency: 4,
          workspaceConcurrency: 4,
          ...webhooks,
        },
      },
      ...(setup ? { setup } : {}),
    };
  });
  // After the server has stopped (its after hook is registered first).
  after(async () => store?.close());
  return server;
}
