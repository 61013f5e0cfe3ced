// Prometheus metrics for operators (GET /metrics). Labels carry routes, statuses and versions,
// never a workspace, a key or anything else a tenant owns. Each app has its own registry, so
// several apps in one process (tests, workers of a benchmark) never mix their series.
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { Saturation } from './load-shedder.js';
import type { Database } from './database.js';
import type { ReadRoute } from './read-replicas.js';

export type IdempotencyOutcome = 'executed' | 'replayed' | 'reused' | 'in_use';

export class Metrics {
  readonly registry = new Registry();
  readonly #requests = new RequestSeries();
  readonly #rateLimited: Counter<'bucket'>;
  readonly #idempotency: Counter<'outcome'>;
  readonly #shed: Counter<'reason'>;
  readonly #reads: Counter<'route'>;
  readonly #countsInMemory: Gauge;
  readonly #undelivered: Counter;

  constructor(db: Database) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'wsapi_' });
    for (const metric of this.#requests.metrics()) this.registry.registerMetric(metric);
    this.#rateLimited = new Counter({
      name: 'wsapi_rate_limit_rejections_total',
      help: "Requests refused with 429, by bucket kind (key, client address without a valid key, or the key's concurrent requests).",
      labelNames: ['bucket'],
      registers,
    });
    this.#shed = new Counter({
      name: 'wsapi_load_shed_total',
      help: 'Requests refused with 503 server_overloaded while this process was saturated, by what saturated it.',
      labelNames: ['reason'],
      registers,
    });
    this.#idempotency = new Counter({
      name: 'wsapi_idempotent_writes_total',
      help: 'Writes by Idempotency-Key outcome: executed, replayed, reused (409) or in_use (409).',
      labelNames: ['outcome'],
      registers,
    });
    this.#reads = new Counter({
      name: 'wsapi_replica_routed_reads_total',
      help: "Requests whose reads read replicas could serve (DATABASE_READ_URL), by where they went: replica, or primary and why (the position to see was ahead of every replica, no replica was healthy, the replica failed under the read, the primary's position could not be read).",
      labelNames: ['route'],
      registers,
    });
    this.#undelivered = new Counter({
      name: 'wsapi_http_answers_undelivered_total',
      help: 'Requests whose work ended after their client had closed the connection: done (a write applied), the answer sent nowhere. Also counted in wsapi_http_requests_total with the status answered.',
      registers,
    });
    this.#countsInMemory = new Gauge({
      name: 'wsapi_rate_limit_counts_in_memory',
      help: "1 while this process counts rate limits and a key's concurrent requests in its own memory because the shared store (Redis, or PostgreSQL without it) is failing: limits then hold per process; 0 otherwise.",
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
    this.#requests.observe(method, route ?? 'unmatched', status, seconds);
  }

  answerUndelivered(): void {
    this.#undelivered.inc();
  }

  countsInMemory(inMemory: boolean): void {
    this.#countsInMemory.set(inMemory ? 1 : 0);
  }

  readServed(route: ReadRoute): void {
    this.#reads.inc({ route });
  }

  rateLimited(bucket: 'key' | 'address' | 'concurrency'): void {
    this.#rateLimited.inc({ bucket });
  }

  shed(reason: Exclude<Saturation, null>): void {
    this.#shed.inc({ reason });
  }

  idempotency(outcome: IdempotencyOutcome): void {
    this.#idempotency.inc({ outcome });
  }
}

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface DurationSeries {
  labels: { method: string; route: string; version: string };
  /** observations at or below each bound of DURATION_BUCKETS, not yet cumulative */
  buckets: number[];
  count: number;
  sum: number;
}

/**
 * Requests answered (a counter by method, route, status and version) and their durations (a
 * histogram by method, route and version). Counted in plain maps on the request path and turned
 * into Prometheus series only when scraped: prom-client's own counters and histograms hash their
 * label set on every call, which cost more than the rest of the bookkeeping of a request. Routes are
 * patterns, so the series stay few.
 */
class RequestSeries {
  readonly #answered = new Map<string, { labels: Record<string, string>; count: number }>();
  readonly #durations = new Map<string, DurationSeries>();

  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route}`;
    let duration = this.#durations.get(key);
    if (!duration) {
      const version = /^\/(v\d+)\//.exec(route)?.[1] ?? 'none';
      duration = { labels: { method, route, version }, buckets: DURATION_BUCKETS.map(() => 0), count: 0, sum: 0 };
      this.#durations.set(key, duration);
    }
    duration.count += 1;
    duration.sum += seconds;
    const bucket = DURATION_BUCKETS.findIndex((bound) => seconds <= bound);
    if (bucket >= 0) duration.buckets[bucket]! += 1;

    const answeredKey = `${key} ${status}`;
    const answered = this.#answered.get(answeredKey);
    if (answered) answered.count += 1;
    else
      this.#answered.set(answeredKey, {
        labels: { method, route, status: String(status), version: duration.labels.version },
        count: 1,
      });
  }

  /** The two metrics, in the form prom-client's registry prints. */
  metrics(): Metric[] {
    const answered = this.#answered;
    const durations = this.#durations;
    const duration = 'wsapi_http_request_duration_seconds';
    return [
      scrapedMetric(
        'wsapi_http_requests_total',
        'Requests answered, by route pattern, status and API version.',
        'counter',
        () => [...answered.values()].map((s) => ({ labels: s.labels, value: s.count })),
        () => answered.clear(),
      ),
      scrapedMetric(
        duration,
        'Time from the request arriving to the response being sent.',
        'histogram',
        () =>
          [...durations.values()].flatMap((s) => {
            let cumulative = 0;
            const buckets = DURATION_BUCKETS.map((bound, i) => {
              cumulative += s.buckets[i]!;
              return { metricName: `${duration}_bucket`, labels: { le: bound, ...s.labels }, value: cumulative };
            });
            return [
              ...buckets,
              { metricName: `${duration}_bucket`, labels: { le: '+Inf', ...s.labels }, value: s.count },
              { metricName: `${duration}_sum`, labels: s.labels, value: s.sum },
              { metricName: `${duration}_count`, labels: s.labels, value: s.count },
            ];
          }),
        () => durations.clear(),
      ),
    ];
  }
}

/** A metric whose values are read when the registry is scraped, in the shape prom-client prints. */
function scrapedMetric(
  name: string,
  help: string,
  type: 'counter' | 'histogram',
  values: () => unknown[],
  reset: () => void,
): Metric {
  const about = { name, help, type, aggregator: 'sum' };
  return { ...about, get: () => Promise.resolve({ ...about, values: values() }), reset } as unknown as Metric;
}
