// The soak's load: a bounded mix of reads, writes, replays and rate-limited requests sent from this
// process to two servers in turn. Every answer is counted by operation and status, and every write
// that succeeded is remembered (its Idempotency-Key, body and the contact it named), so the
// consistency check can compare what the clients were told with what the database holds.
import { randomUUID } from 'node:crypto';
import http from 'node:http';

export type Operation = 'list' | 'get' | 'create' | 'replay' | 'patch' | 'upsert' | 'limited';

/** Share of each operation in the mix (they add up to 100). */
export const MIX: Record<Operation, number> = {
  list: 22,
  get: 15,
  create: 20,
  replay: 10,
  patch: 10,
  upsert: 13,
  limited: 10,
};

/** What each operation may answer; anything else is counted as unexpected. */
const EXPECTED: Record<Operation, number[]> = {
  list: [200],
  get: [200],
  create: [201],
  replay: [201],
  patch: [200],
  upsert: [200, 201],
  limited: [200, 429],
};

export interface LoadOptions {
  servers: string[];
  /** the key of the soak workspace, with a quota the load never reaches */
  key: string;
  /** a key of the same workspace with a small quota: most of its requests must be 429 */
  limitedKey: string;
  concurrency: number;
  /** requests per second across all workers; 0 = as fast as the concurrency allows */
  rate: number;
  durationMs: number;
  /** called every `tickMs` with the seconds elapsed (for progress lines and memory samples) */
  onTick?: (elapsedS: number) => void;
  tickMs?: number;
}

interface Create {
  idem: string;
  body: Record<string, unknown>;
  id: string;
}

export interface LoadResult {
  durationS: number;
  requests: number;
  /** operation → status (or network error code) → count */
  statuses: Record<string, Record<string, number>>;
  latencyMs: Record<string, { p50: number; p99: number; max: number }>;
  unexpected: { op: Operation; status: number | string; body: string }[];
  /** distinct Idempotency-Keys of creates answered 201 (first time, not replays) */
  creates: Create[];
  /** external ids whose upsert answered 201 (created), with the contact id, and how often each */
  upsertCreated: Map<string, string[]>;
  /**
   * Replays of earlier creates: answered 201, with the first id, marked Idempotent-Replayed; and
   * 409 idempotency_key_in_use answered while another request with the same key was in flight.
   */
  replays: { total: number; answered201: number; sameId: number; markedReplayed: number; inUseWhileConcurrent: number };
  /** distinct Idempotency-Keys of successful PATCH and PUT requests */
  otherWriteKeys: number;
  limited: { ok: number; rateLimited: number; okPerWindow: Map<number, number> };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** the parts of an answer the load looks at */
  json: { data?: { id?: string }; error?: { code?: string } } | null;
  error?: string;
}

function send(
  agent: http.Agent,
  base: string,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  idem?: string,
) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (idem) headers['idempotency-key'] = idem;
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise<Answer>((resolve) => {
    const req = http.request(new URL(path, base), { method, headers, agent, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ status: 0, headers: {}, json: null, error: err.code }));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Answer['json'] = null;
        try {
          json = text ? (JSON.parse(text) as Answer['json']) : null;
        } catch {
          json = null;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
      });
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'CLIENT_TIMEOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ status: 0, headers: {}, json: null, error: err.code ?? err.message }),
    );
    req.end(payload);
  });
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

function chooseOperation(): Operation {
  let r = Math.random() * 100;
  for (const [op, share] of Object.entries(MIX) as [Operation, number][]) {
    if ((r -= share) < 0) return op;
  }
  return 'list';
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const agents = o.servers.map(() => new http.Agent({ keepAlive: true, maxSockets: o.concurrency }));
  const statuses: LoadResult['statuses'] = {};
  const latencies: Record<string, number[]> = {};
  const unexpected: LoadResult['unexpected'] = [];
  const creates: Create[] = [];
  const upsertCreated = new Map<string, string[]>();
  const externalIds: string[] = [];
  const replays = { total: 0, answered201: 0, sameId: 0, markedReplayed: 0, inUseWhileConcurrent: 0 };
  // Idempotency-Keys with a request in flight, and keys that ever had two in flight at once.
  const active = new Map<string, number>();
  const overlapped = new Set<string>();
  const limited = { ok: 0, rateLimited: 0, okPerWindow: new Map<number, number>() };
  const otherWriteKeys = new Set<string>();
  let requests = 0;
  let turn = 0;
  const started = Date.now();
  const endAt = started + o.durationMs;
  let nextSlot = started;
  const runId = randomUUID().slice(0, 8);
  let serial = 0;

  const record = (op: Operation, a: Answer, ms: number, explained = false) => {
    requests++;
    const status = a.status === 0 ? `network ${a.error}` : String(a.status);
    (statuses[op] ??= {})[status] = (statuses[op][status] ?? 0) + 1;
    (latencies[op] ??= []).push(ms);
    if (!explained && !EXPECTED[op].includes(a.status) && unexpected.length < 1_000) {
      unexpected.push({ op, status: a.status || `network ${a.error}`, body: JSON.stringify(a.json).slice(0, 300) });
    }
  };

  const one = async () => {
    const op = chooseOperation();
    const base = o.servers[turn++ % o.servers.length]!;
    const agent = agents[o.servers.indexOf(base)]!;
    const t0 = performance.now();
    let a: Answer;
    switch (op) {
      case 'list':
        a = await send(agent, base, 'GET', `/v1/contacts?limit=${pick([5, 20, 50])}`, o.key);
        break;
      case 'get': {
        const c = creates.length ? pick(creates) : null;
        if (!c) return;
        a = await send(agent, base, 'GET', `/v1/contacts/${c.id}`, o.key);
        if (a.status === 200 && a.json?.data?.id !== c.id) {
          unexpected.push({ op, status: 'another contact', body: JSON.stringify(a.json).slice(0, 300) });
        }
        break;
      }
      case 'create': {
        const n = serial++;
        const idem = `soak-${runId}-create-${n}`;
        const body = { name: `Soak ${n}`, email: `soak.${runId}.${n}@example.com`, phone: '+5511912345678' };
        a = await send(agent, base, 'POST', '/v1/contacts', o.key, body, idem);
        const id = a.json?.data?.id;
        if (a.status === 201 && id) creates.push({ idem, body, id });
        break;
      }
      case 'replay': {
        const c = creates.length ? pick(creates) : null;
        if (!c) return;
        if ((active.get(c.idem) ?? 0) > 0) overlapped.add(c.idem);
        active.set(c.idem, (active.get(c.idem) ?? 0) + 1);
        a = await send(agent, base, 'POST', '/v1/contacts', o.key, c.body, c.idem);
        active.set(c.idem, active.get(c.idem)! - 1);
        replays.total++;
        if (a.status === 201) replays.answered201++;
        if (a.status === 201 && a.json?.data?.id === c.id) replays.sameId++;
        if (a.headers['idempotent-replayed'] === 'true') replays.markedReplayed++;
        // Two replays of one key at the same moment: the service answers the second 409 in_use.
        if (a.status === 409 && a.json?.error?.code === 'idempotency_key_in_use' && overlapped.has(c.idem)) {
          replays.inUseWhileConcurrent++;
          record(op, a, performance.now() - t0, true);
          return;
        }
        break;
      }
      case 'patch': {
        const c = creates.length ? pick(creates) : null;
        if (!c) return;
        const idem = `soak-${runId}-patch-${serial++}`;
        a = await send(agent, base, 'PATCH', `/v1/contacts/${c.id}`, o.key, { origin: `soak-${serial}` }, idem);
        if (a.status === 200) otherWriteKeys.add(idem);
        break;
      }
      case 'upsert': {
        // Half new external ids (201), half ones already upserted (200).
        const fresh = externalIds.length === 0 || Math.random() < 0.5;
        const ext = fresh ? `soak-${runId}-${serial++}` : pick(externalIds);
        if (fresh) externalIds.push(ext);
        const idem = `soak-${runId}-upsert-${serial++}`;
        a = await send(agent, base, 'PUT', `/v1/contacts/external/${ext}`, o.key, { name: `Ext ${ext}` }, idem);
        const id = a.json?.data?.id;
        if (a.status === 201 && id) upsertCreated.set(ext, [...(upsertCreated.get(ext) ?? []), id]);
        if (a.status === 200 || a.status === 201) otherWriteKeys.add(idem);
        break;
      }
      case 'limited':
        a = await send(agent, base, 'GET', '/v1/contacts?limit=1', o.limitedKey);
        if (a.status === 200) {
          limited.ok++;
          // Which quota window served it: the window's end, from RateLimit-Reset.
          const reset = Date.parse(String(a.headers['ratelimit-reset']));
          limited.okPerWindow.set(reset, (limited.okPerWindow.get(reset) ?? 0) + 1);
        } else if (a.status === 429) limited.rateLimited++;
        break;
    }
    record(op, a, performance.now() - t0);
  };

  const worker = async () => {
    while (Date.now() < endAt) {
      if (o.rate > 0) {
        const slot = (nextSlot = Math.max(nextSlot + 1000 / o.rate, Date.now() - 1000));
        const wait = slot - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (Date.now() >= endAt) break;
      }
      await one();
    }
  };

  const tick = o.onTick
    ? setInterval(() => o.onTick!(Math.round((Date.now() - started) / 1000)), o.tickMs ?? 5_000)
    : null;
  try {
    await Promise.all(Array.from({ length: o.concurrency }, () => worker()));
  } finally {
    if (tick) clearInterval(tick);
    for (const agent of agents) agent.destroy();
  }

  const latencyMs: LoadResult['latencyMs'] = {};
  for (const [op, values] of Object.entries(latencies)) {
    const sorted = values.sort((x, y) => x - y);
    latencyMs[op] = {
      p50: round2(percentile(sorted, 50)),
      p99: round2(percentile(sorted, 99)),
      max: round2(sorted[sorted.length - 1] ?? 0),
    };
  }
  return {
    durationS: (Date.now() - started) / 1000,
    requests,
    statuses,
    latencyMs,
    unexpected,
    creates,
    upsertCreated,
    replays,
    otherWriteKeys: otherWriteKeys.size,
    limited,
  };
}
