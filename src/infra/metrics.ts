// Prometheus metrics for operators (GET /metrics). Labels carry routes, statuses and versions,
// never a workspace, a key or anything else a tenant owns. Each app has its own registry, so
// several apps in one process (tests, workers of a benchmark) never mix their series.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from './database.js';

export type IdempotencyOutcome = 'executed' | 'replayed' | 'reused' | 'in_use';

export class Metrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'route' | 'status' | 'version'>;
  readonly #duration: Histogram<'method' | 'route' | 'version'>;
  readonly #rateLimited: Counter<'bucket'>;
  readonly #idempotency: Counter<'outcome'>;
  readonly #versions = new Map<string, string>();

  constructor(db: Database) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'wsapi_' });
    this.#requests = new Counter({
      name: 'wsapi_http_requests_total',
      help: 'Requests answered, by route pattern, status and API version.',
      labelNames: ['method', 'route', 'status', 'version'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'wsapi_http_request_duration_seconds',
      help: 'Time from the request arriving to the response being sent.',
      labelNames: ['method', 'route', 'version'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.#rateLimited = new Counter({
      name: 'wsapi_rate_limit_rejections_total',
      help: 'Requests refused with 429, by bucket kind (key, or client address without a valid key).',
      labelNames: ['bucket'],
      registers,
    });
    this.#idempotency = new Counter({
      name: 'wsapi_idempotent_writes_total',
      help: 'Writes by Idempotency-Key outcome: executed, replayed, reused (409) or in_use (409).',
      labelNames: ['outcome'],
      registers,
    });
    new Gauge({
      name: 'wsapi_db_pool_connections',
      help: 'Database connections of this process by state.',
      labelNames: ['state'],
      registers,
      collect() {
        const s = db.poolStats();
        this.set({ state: 'total' }, s.total);
        this.set({ state: 'idle' }, s.idle);
        this.set({ state: 'waiting' }, s.waiting);
      },
    });
  }

  /** `route`: the matched route pattern; undefined when none matched. */
  observeRequest(method: string, route: string | undefined, status: number, seconds: number): void {
    route ??= 'unmatched';
    let version = this.#versions.get(route);
    if (version === undefined) {
      version = /^\/(v\d+)\//.exec(route)?.[1] ?? 'none';
      this.#versions.set(route, version); // one entry per route pattern: a bounded set
    }
    this.#requests.inc({ method, route, status: String(status), version });
    this.#duration.observe({ method, route, version }, seconds);
  }

  rateLimited(bucket: 'key' | 'address'): void {
    this.#rateLimited.inc({ bucket });
  }

  idempotency(outcome: IdempotencyOutcome): void {
    this.#idempotency.inc({ outcome });
  }
}
