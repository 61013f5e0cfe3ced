// Liveness and readiness for orchestrators: /healthz says the process answers, /readyz that it can
// reach its store (and Redis when one is configured); /metrics is for Prometheus.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';

export async function healthRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  const probe = { config: { public: true, unmetered: true }, schema: { hide: true } } as const;

  app.get('/healthz', probe, async () => ({ status: 'ok' }));

  // Prometheus scrapes: route patterns, statuses and counts only, nothing a tenant owns.
  app.get('/metrics', probe, async (_request, reply) =>
    reply.type(services.metrics.registry.contentType).send(await services.metrics.registry.metrics()),
  );

  app.get('/readyz', probe, async (_request, reply) => {
    const checks: Record<string, 'ok' | 'unavailable'> = {};
    try {
      await services.db.query('SELECT 1', [], 'ready_probe');
      checks.database = 'ok';
    } catch {
      checks.database = 'unavailable';
    }
    if (services.redis) checks.redis = (await services.redis.ping()) ? 'ok' : 'unavailable';
    const ready = Object.values(checks).every((c) => c === 'ok');
    // A replica down or lagging leaves the process ready: the primary serves its reads meanwhile.
    const replicas = services.reads.enabled ? { replicas: services.reads.health() } : {};
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks, ...replicas });
  });
}
