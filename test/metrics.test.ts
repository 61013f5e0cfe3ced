// /metrics exposes, in Prometheus format, the series operators need: requests by route, status
// and version, latency histograms, rate-limit rejections, idempotency outcomes, database pool use
// and events-feed lag — and nothing a tenant owns.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contactBody, idem, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

let ws: TestWorkspace;
const server = useTestServer({
  config: { unauthenticatedRateLimitPerMinute: 1 },
  setup: async () => {
    ws = await server.workspace();
  },
});

async function scrape(): Promise<string> {
  const res = await fetch(`${server.baseUrl}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  return res.text();
}

/** The value of one series, by name and exact label set as Prometheus prints them. */
function value(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

test('requests, latency, rate limits, idempotency, pool and feed lag are exposed', async () => {
  const before = await scrape();
  const listSeries = 'wsapi_http_requests_total{method="GET",route="/v1/contacts",status="200",version="v1"}';

  await server.request('GET', '/v1/contacts', { key: ws.key });
  await server.request('GET', '/v1/contacts', { key: ws.key });
  await server.request('GET', '/v2/contacts/0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41', { key: ws.key });
  const body = contactBody();
  const k = idem();
  await server.request('POST', '/v1/contacts', { key: ws.key, body, idem: k });
  await server.request('POST', '/v1/contacts', { key: ws.key, body, idem: k });
  await server.request('POST', '/v1/contacts', { key: ws.key, body: contactBody(), idem: k });
  const slow = await ws.newKey(['contacts:read'], { rateLimitPerMinute: 1 });
  await server.request('GET', '/v1/contacts', { key: slow.key });
  await server.request('GET', '/v1/contacts', { key: slow.key });
  await server.request('GET', '/v1/contacts');
  await server.request('GET', '/v1/contacts');

  const text = await scrape();
  assert.equal(value(text, listSeries) - value(before, listSeries), 3);
  assert.ok(
    value(text, 'wsapi_http_requests_total{method="GET",route="/v2/contacts/:id",status="404",version="v2"}') >= 1,
  );
  assert.ok(
    value(text, 'wsapi_http_request_duration_seconds_count{method="GET",route="/v1/contacts",version="v1"}') >= 3,
  );
  assert.match(text, /wsapi_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/v1\/contacts"/);
  // A histogram's buckets count every observation at or below their bound: they never decrease,
  // and +Inf holds them all.
  const labels = 'method="GET",route="/v1/contacts",version="v1"';
  const buckets = [
    ...text.matchAll(
      new RegExp(
        `^wsapi_http_request_duration_seconds_bucket\\{le="([^"]+)",${labels.replaceAll('/', '\\/')}\\} (\\d+)$`,
        'gm',
      ),
    ),
  ];
  assert.equal(buckets.length, 12);
  assert.equal(buckets.at(-1)![1], '+Inf');
  const counts = buckets.map((b) => Number(b[2]));
  assert.deepEqual(
    counts,
    [...counts].sort((a, b) => a - b),
  );
  assert.equal(counts.at(-1), value(text, `wsapi_http_request_duration_seconds_count{${labels}}`));
  assert.ok(value(text, `wsapi_http_request_duration_seconds_sum{${labels}}`) > 0);
  assert.equal(value(text, 'wsapi_rate_limit_rejections_total{bucket="key"}'), 1);
  assert.equal(value(text, 'wsapi_rate_limit_rejections_total{bucket="address"}'), 1);
  assert.equal(value(text, 'wsapi_idempotent_writes_total{outcome="executed"}'), 1);
  assert.equal(value(text, 'wsapi_idempotent_writes_total{outcome="replayed"}'), 1);
  assert.equal(value(text, 'wsapi_idempotent_writes_total{outcome="reused"}'), 1);
  assert.ok(value(text, 'wsapi_db_pool_connections{state="total"}') >= 1);
  assert.match(text, /^wsapi_process_resident_memory_bytes \d/m);
});

test('no tenant data in any series', async () => {
  const text = await scrape();
  assert.ok(!text.includes(ws.id), 'a workspace id');
  assert.ok(!text.includes(ws.keyId), 'a key id');
});

test('/metrics needs no key and is not rate limited', async () => {
  for (let i = 0; i < 5; i++) assert.equal((await fetch(`${server.baseUrl}/metrics`)).status, 200);
});
