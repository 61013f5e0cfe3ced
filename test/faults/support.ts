// What the fault tests share: a database of their own on the local PostgreSQL (or DATABASE_URL), a
// TCP proxy that stands between a server process and PostgreSQL or Redis so a test can "stop" them
// without touching the shared servers, a plain HTTP client that reports network errors as values,
// and the checks every 5xx answer must pass.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createPostgresDatabase, type Database } from '../../src/infra/database.js';
import { migrate } from '../../src/infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../../src/modules/resources.js';
import { ownerCommands, type OwnerContext } from '../../src/modules/owner/owner.service.js';
import { NO_SHEDDING } from '../processes.js';
import { processDatabase } from '../servers.js';

export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

// ------------------------------------------------------------------------------------------ database

export interface FaultDatabase {
  /** the database's own URL (direct, no proxy) */
  url: string;
  /** its name, to scope pg_stat_activity queries */
  name: string;
  db: Database;
  owner: OwnerContext;
  /** closes the pool and, when this file created the database, drops it */
  drop(): Promise<void>;
}

/**
 * DATABASE_URL when it is set; otherwise a database made for this file (server processes need
 * PostgreSQL whatever store the rest of the suite uses, test/servers.ts), dropped by `drop()`.
 */
export async function openFaultDatabase(label: string): Promise<FaultDatabase> {
  const found = await processDatabase(`wsapi_faults_${label}`);
  if (found.skip !== undefined) throw new Error(`the fault tests ${found.skip}`);
  const db = createPostgresDatabase(found.url, 4);
  await migrate(db, GENERATED_DATABASE_CODE);
  return {
    url: found.url,
    name: new URL(found.url).pathname.slice(1),
    db,
    owner: { db, defaultRateLimitPerMinute: 600 },
    async drop() {
      await db.close().catch(() => undefined);
      await found.drop();
    },
  };
}

export async function newWorkspaceKey(
  owner: OwnerContext,
  options: { rateLimitPerMinute?: number; concurrencyLimit?: number } = {},
): Promise<{ workspaceId: string; keyId: string; key: string }> {
  const ws = await ownerCommands.createWorkspace(owner, { name: `faults-${randomUUID().slice(0, 8)}` });
  const key = await ownerCommands.createKey(owner, {
    workspaceId: ws.id,
    name: 'fault test',
    scopes: ['contacts:read', 'contacts:write'],
    // A fault test is not about quotas: a key that never runs out unless the test asks for one.
    rateLimitPerMinute: options.rateLimitPerMinute ?? 1_000_000,
    // Nor about requests in flight (unless asked): a killed process's places stay taken until
    // their lease ends.
    concurrencyLimit: options.concurrencyLimit ?? 10_000,
  });
  return { workspaceId: ws.id, keyId: key.id, key: key.key };
}

/** The environment of a `serve` process: quiet, no demo, a short forced-exit grace unless told otherwise. */
export function serverEnv(vars: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOG_LEVEL: 'warn',
    DEMO_ON_FIRST_START: 'false',
    SHUTDOWN_GRACE_MS: '3000',
    ...NO_SHEDDING,
  };
  delete env.NODE_TEST_CONTEXT;
  delete env.PORT;
  delete env.REDIS_URL;
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** `url` with its host and port replaced by the proxy's. */
export function throughProxy(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

// ------------------------------------------------------------------------------------------ proxy

/**
 * A TCP proxy on a free loopback port in front of `target`. `cut()` is the backend going away:
 * every open connection is closed and new ones are closed as soon as they arrive; `restore()` lets
 * them through again. `pause()` is a backend that hangs (or a network that stalls): connections
 * stay open but nothing moves until `resume()` delivers what was held, in order, as TCP would.
 * `delayMs` holds every chunk from the backend that long (a slow database).
 */
export class FaultProxy {
  readonly #target: { host: string; port: number };
  readonly #server: Server;
  readonly #pairs = new Set<{ client: Socket; upstream: Socket }>();
  #down = false;
  #held: (() => void)[] | null = null;
  delayMs = 0;
  /** connections accepted, and refused while cut */
  accepted = 0;
  refused = 0;
  port = 0;

  constructor(targetUrl: string) {
    const u = new URL(targetUrl);
    const defaultPort = u.protocol.startsWith('redis') ? 6379 : 5432;
    this.#target = { host: u.hostname || '127.0.0.1', port: Number(u.port || defaultPort) };
    this.#server = createServer((client) => this.#accept(client));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = this.#server.address();
    if (!address || typeof address !== 'object') throw new Error('proxy has no port');
    this.port = address.port;
    return this;
  }

  /** Local ports of the proxy's connections to the backend: what pg_stat_activity shows as client_port. */
  upstreamPorts(): number[] {
    return [...this.#pairs].map((p) => p.upstream.localPort).filter((p): p is number => typeof p === 'number');
  }

  /** The backend stops: open connections are closed, new ones refused. */
  cut(): void {
    this.#down = true;
    for (const pair of this.#pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    this.#pairs.clear();
  }

  restore(): void {
    this.#down = false;
  }

  pause(): void {
    this.#held ??= [];
  }

  resume(): void {
    const held = this.#held ?? [];
    this.#held = null;
    for (const send of held) send();
  }

  async close(): Promise<void> {
    this.#held = null;
    this.cut();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2_000);
      this.#server.close(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  #accept(client: Socket): void {
    if (this.#down) {
      this.refused++;
      client.destroy();
      return;
    }
    this.accepted++;
    const upstream = connect(this.#target.port, this.#target.host);
    const pair = { client, upstream };
    this.#pairs.add(pair);
    const drop = () => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    const pass = (send: () => void) => (this.#held ? this.#held.push(send) : send());
    client.on('data', (chunk: Buffer) => pass(() => upstream.writable && upstream.write(chunk)));
    upstream.on('data', (chunk: Buffer) =>
      pass(() => {
        // Timers of one duration fire in the order they were set: the byte stream keeps its order.
        if (this.delayMs > 0) setTimeout(() => client.writable && client.write(chunk), this.delayMs);
        else if (client.writable) client.write(chunk);
      }),
    );
  }
}

// ------------------------------------------------------------------------------------------ HTTP

export interface Answer {
  /** 0 when the request got no HTTP answer */
  status: number;
  headers: http.IncomingHttpHeaders;
  json: any;
  /** the network error code when status is 0 (ECONNREFUSED, ECONNRESET, ...) */
  error?: string;
  startedAt: number;
  endedAt: number;
}

export interface CallOptions {
  key?: string;
  body?: unknown;
  idem?: string;
  /** a keep-alive agent; by default every request has a connection of its own */
  agent?: http.Agent;
  timeoutMs?: number;
}

let requestsSent = 0;

/** One line of figures for a whole file: every HTTP request it sent (probes and retries included). */
export function fileFigures(file: string): void {
  process.stdout.write(`[faults] ${file}: ${requestsSent} HTTP requests sent\n`);
}

/** One HTTP request with node:http; network failures come back as `{status: 0, error}`, never thrown. */
export function call(baseUrl: string, method: string, path: string, o: CallOptions = {}): Promise<Answer> {
  requestsSent++;
  const startedAt = Date.now();
  const headers: Record<string, string> = {};
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  if (o.idem) headers['idempotency-key'] = o.idem;
  const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve) => {
    // A connection or response that fails is an answer too: status 0 and why.
    const failed = (err: NodeJS.ErrnoException) =>
      resolve({
        status: 0,
        headers: {},
        json: undefined,
        error: err.code ?? err.message,
        startedAt,
        endedAt: Date.now(),
      });
    const req = http.request(
      new URL(path, baseUrl),
      { method, headers, agent: o.agent ?? false, timeout: o.timeoutMs ?? 20_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', failed);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = { unparsable: text };
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json, startedAt, endedAt: Date.now() });
        });
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })));
    req.on('error', failed);
    req.end(payload);
  });
}

/** A 503 as the conventions promise it: the error object, service_unavailable, Retry-After, request id. */
export function assertCleanUnavailable(a: Answer, context: string): void {
  assert.equal(a.status, 503, context);
  assert.ok(Number(a.headers['retry-after']) >= 1, `${context}: Retry-After ${String(a.headers['retry-after'])}`);
  assert.deepEqual(Object.keys(a.json ?? {}), ['error'], `${context}: body ${JSON.stringify(a.json)}`);
  assert.equal(a.json.error.type, 'api_error', context);
  assert.equal(a.json.error.code, 'service_unavailable', context);
  assert.equal(a.json.error.request_id, a.headers['x-request-id'], context);
  assert.doesNotMatch(JSON.stringify(a.json), /ECONN|127\.0\.0\.1|postgres|redis|terminat/i, context);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export const contactFor = (tag: string) => ({
  name: `Fault ${tag}`,
  email: `${tag}@faults.example.com`,
  phone: '+5511912345678',
});

/**
 * Sends each write again with its own Idempotency-Key and body until it gets its 2xx (waiting out
 * 409 idempotency_key_in_use and 503), so the test can count effects per key afterwards.
 */
export async function retryUntilDone(
  baseUrl: string,
  key: string,
  write: { method: string; path: string; idem: string; body: unknown },
  limitMs = 15_000,
): Promise<Answer> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const a = await call(baseUrl, write.method, write.path, { key, idem: write.idem, body: write.body });
    if (a.status >= 200 && a.status < 300) return a;
    const transient = a.status === 503 || (a.status === 409 && a.json?.error?.code === 'idempotency_key_in_use');
    assert.ok(transient, `retry of ${write.idem}: ${a.status} ${a.error ?? JSON.stringify(a.json)}`);
    assert.ok(Date.now() < deadline, `retry of ${write.idem} still ${a.status} after ${limitMs} ms`);
    await sleep(200);
  }
}

/** Contacts of a workspace per email, for counting effects. */
export async function contactsByEmail(db: Database, workspaceId: string): Promise<Map<string, string[]>> {
  const { rows } = await db.query<{ email: string; id: string }>(
    'SELECT email, id FROM contacts WHERE workspace_id = $1',
    [workspaceId],
  );
  const byEmail = new Map<string, string[]>();
  for (const r of rows) byEmail.set(r.email, [...(byEmail.get(r.email) ?? []), r.id]);
  return byEmail;
}

/** Figures each fault test prints (as a TAP diagnostic) for docs/reliability.md. */
export function report(test: { diagnostic(message: string): void }, figures: Record<string, unknown>): void {
  test.diagnostic(`figures ${JSON.stringify(figures)}`);
}

// ------------------------------------------------------------------------------------------ load

export interface Sent {
  op: 'list' | 'create';
  /** the server it went to */
  baseUrl: string;
  /** what the test was doing when the request started and when it ended */
  phaseAtStart: string;
  phaseAtEnd: string;
  write?: { method: string; path: string; idem: string; body: unknown };
  answer: Answer;
}

/**
 * `workers` loops, each sending list and create requests in turn (to each of `baseUrls` in turn)
 * until `stop()` is called; every request is recorded with the phase (set through `setPhase`) at
 * its start and at its end.
 */
export function startLoad(options: { baseUrls: string[]; key: string; workers: number; tag: string }) {
  const sent: Sent[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.workers });
  let phase = 'before';
  let stopped = false;
  let n = 0;
  const loop = async (w: number) => {
    for (let i = 0; !stopped; i++) {
      const phaseAtStart = phase;
      const baseUrl = options.baseUrls[(i + w) % options.baseUrls.length]!;
      let record: Sent;
      if ((i + w) % 2 === 0) {
        const answer = await call(baseUrl, 'GET', '/v1/contacts?limit=5', { key: options.key, agent });
        record = { op: 'list', baseUrl, phaseAtStart, phaseAtEnd: phase, answer };
      } else {
        const tag = `${options.tag}-${n++}-${randomUUID().slice(0, 8)}`;
        const write = { method: 'POST', path: '/v1/contacts', idem: `fault-${tag}`, body: contactFor(tag) };
        const answer = await call(baseUrl, write.method, write.path, { ...write, key: options.key, agent });
        record = { op: 'create', baseUrl, phaseAtStart, phaseAtEnd: phase, write, answer };
      }
      sent.push(record);
      // A refused connection answers at once: do not spin.
      if (record.answer.status !== 200 && record.answer.status !== 201) await sleep(20);
    }
  };
  const loops = Array.from({ length: options.workers }, (_, w) => loop(w));
  return {
    sent,
    setPhase(p: string) {
      phase = p;
    },
    async stop(): Promise<Sent[]> {
      stopped = true;
      await Promise.all(loops);
      agent.destroy();
      return sent;
    },
  };
}

/** Runs `work` over `items` with at most `limit` at a time; the first failure stops the others. */
export async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length && !failed) {
        try {
          await work(items[next++]!);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    }),
  );
}

/** Polls `probe` every 100 ms until it is true or `limitMs` pass; returns the milliseconds it took, or null. */
export async function waitFor(limitMs: number, probe: () => Promise<boolean>): Promise<number | null> {
  const start = Date.now();
  for (;;) {
    if (await probe()) return Date.now() - start;
    if (Date.now() - start >= limitMs) return null;
    await sleep(100);
  }
}

/** Whether a server process still runs, and if not how it ended and the end of what it wrote. */
export function processState(server: { proc: ChildProcess; output(): { stderr: string } }): {
  alive: boolean;
  description: string;
} {
  const { exitCode, signalCode } = server.proc;
  if (exitCode === null && signalCode === null) return { alive: true, description: 'running' };
  return {
    alive: false,
    description: `exited (${exitCode ?? signalCode}); its stderr ends with:\n${server.output().stderr.slice(-1500)}`,
  };
}
