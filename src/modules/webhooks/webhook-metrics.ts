// The webhook series of /metrics: attempts by outcome, their latency, and how old the oldest pending
// delivery of each endpoint is (read from the store when scraped, so every process reports the
// same backlog whoever delivers). The endpoint label is the endpoint's id: one series per
// endpoint the operator's owners set up, nothing of a workspace's data.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Database } from '../../infra/database.js';
import type { AttemptOutcome } from './http-target.js';
import { webhooksRepository } from './webhooks.repository.js';

export class WebhookMetrics {
  readonly #deliveries: Counter<'outcome'>;
  readonly #duration: Histogram;

  constructor(registry: Registry, db: Database) {
    const registers = [registry];
    this.#deliveries = new Counter({
      name: 'wsapi_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: acked (2xx), failed (another status), timeout, unreachable, refused (WEBHOOK_TARGETS).',
      labelNames: ['outcome'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'wsapi_webhook_attempt_duration_seconds',
      help: 'Time from sending a webhook to its answer (or to the failure).',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    new Gauge({
      name: 'wsapi_webhook_oldest_pending_seconds',
      help: 'Age of the oldest delivery of each webhook endpoint not yet acknowledged (0: none pending).',
      labelNames: ['endpoint'],
      registers,
      async collect() {
        this.reset();
        try {
          for (const row of await webhooksRepository.oldestPending(db)) {
            this.set({ endpoint: row.endpoint_id }, Math.round(row.seconds * 1000) / 1000);
          }
        } catch {
          // the store is unreachable: the series is left out of this scrape rather than failing it
        }
      },
    });
  }

  attempt(outcome: AttemptOutcome, seconds: number): void {
    this.#deliveries.inc({ outcome });
    this.#duration.observe(seconds);
  }
}
