// The load generator: autocannon's programmatic API, in the benchmark's own process (every server
// under test runs in a process of its own). Latencies are taken from autocannon's per-response
// event, which carries the time in fractional milliseconds; its own histogram keeps whole
// milliseconds, too coarse for sub-millisecond baselines.
import autocannon from 'autocannon';
import type { CpuUse } from './cpu.js';

export interface Scenario {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Rewrites each request before it is sent (a fresh Idempotency-Key, the next id). */
  next?: (request: autocannon.Request) => autocannon.Request;
  /** Headers of the n-th connection, fixed for its life (each connection replays its own key). */
  perConnection?: (n: number) => Record<string, string>;
  connections: number;
  /** requests per second over all connections; unset: as fast as the server answers */
  rate?: number;
  /** statuses that count as answered; anything else is reported as unexpected */
  expect: readonly number[];
}

export interface Repetition {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  answered: number;
  unexpected: number;
  cpu?: CpuUse;
}

export interface Measurement {
  name: string;
  connections: number;
  /** medians over the repetitions */
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** medians of each figure over the repetitions */
  cpu: CpuUse | null;
  repetitions: Repetition[];
  /** status (or "error") → count, over every repetition; empty when all went as expected */
  unexpected: Record<string, number>;
}

export function summarize(
  name: string,
  connections: number,
  repetitions: Repetition[],
  unexpected: Record<string, number> = {},
): Measurement {
  return {
    name,
    connections,
    rps: median(repetitions.map((r) => r.rps)),
    p50_ms: median(repetitions.map((r) => r.p50_ms)),
    p99_ms: median(repetitions.map((r) => r.p99_ms)),
    cpu: medianCpu(repetitions.flatMap((r) => (r.cpu ? [r.cpu] : []))),
    repetitions,
    unexpected,
  };
}

/** Runs `s` for `seconds`; `statuses` counts the answers it did not expect. */
export async function measureOnce(
  url: string,
  s: Scenario,
  seconds: number,
): Promise<{ repetition: Repetition; statuses: Record<string, number> }> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const base: autocannon.Request = {
    method: s.method,
    path: s.path,
    headers: s.headers ?? {},
    ...(s.body !== undefined ? { body: s.body } : {}),
  };
  const next = s.next;
  const perConnection = s.perConnection;
  let connection = 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections: s.connections,
        duration: seconds,
        ...(s.rate ? { overallRate: s.rate } : {}),
        requests: [next ? { ...base, setupRequest: (request) => next(request) } : base],
        ...(perConnection
          ? { setupClient: (client) => client.setHeaders({ ...base.headers, ...perConnection(connection++) }) }
          : {}),
      },
      (err, res) => (err ? reject(err as Error) : resolve(res)),
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      if (s.expect.includes(status)) latencies.push(ms);
      else statuses[status] = (statuses[status] ?? 0) + 1;
    });
  });
  const failed = result.errors + result.timeouts;
  if (failed > 0) statuses.error = failed;
  const unexpectedCount = Object.values(statuses).reduce((a, b) => a + b, 0);
  return { repetition: repetitionOf(latencies, seconds, unexpectedCount), statuses };
}

/**
 * GETs `paths` in turn on one connection for `seconds`, one repetition per path. Each request waits
 * for the previous answer, so the latency is the request's own cost, not time in a queue; and the
 * paths meet the same load on the machine, so they compare even while other work comes and goes.
 */
export async function measureAlternating(
  url: string,
  headers: Record<string, string>,
  paths: readonly string[],
  seconds: number,
): Promise<{ repetitions: Repetition[]; statuses: Record<string, number> }> {
  const latencies: number[][] = paths.map(() => []);
  const statuses: Record<string, number> = {};
  // A request's onResponse runs just before the instance's 'response' event for the same answer.
  let answered = 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections: 1,
        duration: seconds,
        requests: paths.map((path, i) => ({ method: 'GET', path, headers, onResponse: () => void (answered = i) })),
      },
      (err, res) => (err ? reject(err as Error) : resolve(res)),
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status === 200) latencies[answered]!.push(ms);
      else statuses[status] = (statuses[status] ?? 0) + 1;
    });
  });
  const failed = result.errors + result.timeouts;
  if (failed > 0) statuses.error = failed;
  const unexpectedCount = Object.values(statuses).reduce((a, b) => a + b, 0);
  return { repetitions: latencies.map((l) => repetitionOf(l, seconds, unexpectedCount)), statuses };
}

/** One repetition's figures from the latencies (ms) of the requests answered in `seconds`. */
export function repetitionOf(latencies: number[], seconds: number, unexpected: number): Repetition {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    rps: round(sorted.length / seconds),
    p50_ms: round(percentile(sorted, 0.5)),
    p99_ms: round(percentile(sorted, 0.99)),
    answered: sorted.length,
    unexpected,
  };
}

/** Nearest-rank percentile of sorted values (NaN when there are none). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

function medianCpu(uses: CpuUse[]): CpuUse | null {
  if (uses.length === 0) return null;
  const of = (pick: (u: CpuUse) => number | null) => {
    const values = uses.map(pick).filter((v): v is number => v !== null);
    return values.length ? median(values) : null;
  };
  return {
    server_ms: of((u) => u.server_ms),
    postgres_ms: of((u) => u.postgres_ms),
    redis_ms: of((u) => u.redis_ms),
    generator_ms: of((u) => u.generator_ms),
    machine_cores: median(uses.map((u) => u.machine_cores)),
    others_cores: of((u) => u.others_cores),
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : round((sorted[mid - 1]! + sorted[mid]!) / 2);
}

function round(n: number): number {
  return n >= 100 ? Math.round(n) : Math.round(n * 100) / 100;
}
