// OWASP API4 (unrestricted resource consumption): limits on bodies, rates, headers, JSON and slow
// clients.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { SCOPES } from '../../src/shared/scopes.js';
import { idem, sleep, startTestServer } from '../harness.js';
import {
  assertErrorObject,
  changedTables,
  errorProblems,
  fingerprint,
  isWrite,
  takesBody,
  leakProblems,
  OPEN_ADDRESS_LIMIT,
  recordsToDelete,
  resourceBodySchema,
  validBody,
  type RawRequest,
} from './helpers.js';
import {
  A,
  auditEveryAnswer,
  byId,
  call,
  figures,
  ops,
  pathOf,
  rawCall,
  send,
  server,
  useOwaspSuite,
  withHead,
} from './owasp-support.js';
import { encodeRequest, type RawRequest as Raw } from './raw-http.js';

useOwaspSuite('owasp-consumption', () => []);

// ================================================================================================ API4

describe('API4 unrestricted resource consumption: limits on bodies, rates, headers, JSON and slow clients', () => {
  const limit = () => server.built.services.config.bodyLimitBytes;
  const writeHeaders = (key: string, extra: [string, string][] = []): [string, string][] => [
    ['Authorization', `Bearer ${key}`],
    ['Content-Type', 'application/json'],
    ['Idempotency-Key', idem()],
    ...extra,
  ];

  test('a body announced above BODY_LIMIT_BYTES is refused with 413 before it is sent, on every write; nothing is stored', async () => {
    assert.equal(limit(), 1_048_576, 'the default limit, 1 MiB');
    const beforeA = await fingerprint(server.db, A.id);
    for (const op of ops.filter(isWrite)) {
      for (const announced of [limit() + 1, 50_000_000, 2 ** 40]) {
        const r = await rawCall(
          {
            method: op.method,
            target: pathOf(op),
            headers: writeHeaders(A.key, [['Content-Length', String(announced)]]),
          },
          { timeoutMs: 3_000 },
        );
        assertErrorObject(r, { status: 413, code: 'payload_too_large' }, `${op.label} announcing ${announced} bytes`);
        assert.ok(r.elapsedMs < 2_000, `${op.label}: answered after ${r.elapsedMs} ms`);
        assert.ok(
          r.closed || /close/i.test(r.headers.connection ?? ''),
          `${op.label}: the connection is closed, not left to drain`,
        );
      }
    }
    assert.deepEqual(changedTables(beforeA, await fingerprint(server.db, A.id)), []);
  });

  test('a chunked body that grows past the limit is refused with 413; a body of exactly the limit is read', async () => {
    const op = byId('createContact')[0]!;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const chunks: Buffer[] = [Buffer.from(`1\r\n{\r\n`)];
    for (let sent = 1; sent <= limit(); sent += chunk.length) {
      chunks.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'));
    }
    chunks.push(Buffer.from('0\r\n\r\n'));
    const chunked = await rawCall(
      {
        method: 'POST',
        target: pathOf(op),
        headers: writeHeaders(A.key, [['Transfer-Encoding', 'chunked']]),
        body: Buffer.concat(chunks),
      },
      { timeoutMs: 5_000 },
    );
    assertErrorObject(chunked, { status: 413, code: 'payload_too_large' }, 'chunked');
    const json = JSON.stringify(validBody(op));
    const exact = json + ' '.repeat(limit() - Buffer.byteLength(json));
    const atLimit = await call('POST', pathOf(op), { key: A.key, raw: exact, idem: idem() });
    assert.equal(atLimit.status, 201, `a body of exactly ${limit()} bytes: ${atLimit.text.slice(0, 200)}`);
    const over = await call('POST', pathOf(op), { key: A.key, raw: `${exact} `, idem: idem() });
    assertErrorObject(over, { status: 413, code: 'payload_too_large' }, 'one byte over');
  });

  test('a request refused before its body (no key, missing scope, over its rate limit) is answered at once, the body never read', async () => {
    const op = byId('createContact')[0]!;
    const readOnly = await A.newKey(['contacts:read']);
    const exhausted = await A.newKey(['contacts:write'], { rateLimitPerMinute: 1 });
    await call('GET', '/v2/nope', { key: exhausted.key });
    const beforeA = await fingerprint(server.db, A.id);
    for (const [label, headers, status, code] of [
      ['no key', writeHeaders('x').slice(1), 401, 'invalid_api_key'],
      ['read-only key', writeHeaders(readOnly.key), 403, 'insufficient_scope'],
      ['exhausted key', writeHeaders(exhausted.key), 429, 'rate_limit_exceeded'],
    ] as const) {
      const r = await rawCall(
        { method: 'POST', target: pathOf(op), headers: [...headers, ['Content-Length', '50000000']] },
        { timeoutMs: 3_000 },
      );
      assertErrorObject(r, { status, code }, label);
      assert.ok(r.elapsedMs < 2_000, `${label}: ${r.elapsedMs} ms`);
    }
    assert.deepEqual(changedTables(beforeA, await fingerprint(server.db, A.id)), []);
  });

  test('past a key’s rate limit every route answers 429 with Retry-After, and nothing is done', async () => {
    const k = await A.newKey([...SCOPES], { rateLimitPerMinute: 3 });
    for (let i = 0; i < 3; i++) assert.equal((await call('GET', '/v2/workspace', { key: k.key })).status, 200);
    // The records the deletions would delete, made before the fingerprint.
    const targets = new Map<string, Record<string, string>>();
    for (const op of ops.filter((o) => o.method === 'DELETE'))
      targets.set(op.label, await recordsToDelete(server, A.key, ops, op));
    const beforeA = await fingerprint(server.db, A.id);
    const problems: string[] = [];
    const keysUsed: string[] = [];
    for (const [method, op] of withHead()) {
      const key = idem();
      keysUsed.push(key);
      const r = await send(op, k.key, {
        method,
        values: targets.get(op.label),
        extra: isWrite(op) ? { idem: key } : {},
      });
      const where = `${method} ${op.template}`;
      if (r.status !== 429) problems.push(`${where}: ${r.status}`);
      if (!/^\d+$/.test(r.headers.get('retry-after') ?? ''))
        problems.push(`${where}: Retry-After ${r.headers.get('retry-after')}`);
      if (r.headers.get('ratelimit-remaining') !== '0') problems.push(`${where}: RateLimit-Remaining`);
      if (method !== 'HEAD') {
        problems.push(...errorProblems(r, { status: 429, code: 'rate_limit_exceeded' }).map((p) => `${where}: ${p}`));
        if (typeof r.json?.error?.details?.reset_at !== 'string') problems.push(`${where}: details.reset_at`);
      }
    }
    assert.deepEqual(problems, []);
    assert.deepEqual(changedTables(beforeA, await fingerprint(server.db, A.id)), [], 'a 429 changed something');
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM idempotency_keys WHERE workspace_id = $1 AND key = ANY($2::text[])',
      [A.id, keysUsed],
    );
    assert.equal(rows[0]!.n, 0, 'an Idempotency-Key of a 429 was recorded');
  });

  test('headers or a URL over Node’s 16 KiB limit are refused with 431 and the connection closed; the server keeps serving', async () => {
    const cases: [string, RawRequest][] = [
      [
        'a 20 KiB header',
        {
          method: 'GET',
          target: '/v2/contacts',
          headers: [
            ['Authorization', `Bearer ${A.key}`],
            ['X-Big', 'a'.repeat(20_000)],
          ],
        },
      ],
      [
        'a 20 KiB URL',
        {
          method: 'GET',
          target: `/v2/contacts?cursor=${'a'.repeat(20_000)}`,
          headers: [['Authorization', `Bearer ${A.key}`]],
        },
      ],
      [
        'a 20 KiB Authorization header',
        { method: 'GET', target: '/v2/contacts', headers: [['Authorization', `Bearer ${'a'.repeat(20_000)}`]] },
      ],
    ];
    for (const [label, request] of cases) {
      const r = await rawCall(request, { timeoutMs: 3_000, parser: true });
      assert.equal(r.status, 431, `${label}: ${r.status} ${r.text.slice(0, 200)}`);
      assert.ok(r.closed, `${label}: connection closed`);
      assert.deepEqual(leakProblems(r.text), []);
      const problems = errorProblems(r, { status: 431 });
      if (problems.length) {
        figures.finding(
          'F-parser-error-body',
          `431 (${label}) is answered by Node/Fastify's default client-error handler, not the spec error object: ` +
            `${JSON.stringify(r.text)}, headers ${JSON.stringify(Object.keys(r.headers))} (no X-Request-Id, no Cache-Control, no RateLimit-*)`,
        );
      }
    }
    // Just under the limits: the service's own answers.
    const long = await call('GET', `/v2/contacts?cursor=${'a'.repeat(12_000)}`, { key: A.key });
    assertErrorObject(long, { status: 400, code: 'invalid_query_parameter' }, '12 KB cursor');
    const param = await call('GET', `/v2/contacts/${'a'.repeat(513)}`, { key: A.key });
    assertErrorObject(param, { status: 400, code: 'invalid_path_parameter' }, '513-character path parameter');
    // More headers than Node's maxHeadersCount (2000), within the byte limit: the extra ones are dropped.
    const many = await rawCall({
      method: 'GET',
      target: '/v2/contacts?limit=1',
      headers: [
        ['Authorization', `Bearer ${A.key}`],
        ...Array.from({ length: 2500 }, (): [string, string] => ['a', '1']),
      ],
    });
    assert.equal(many.status, 200, `2500 headers: ${many.text.slice(0, 200)}`);
    assert.equal((await call('GET', '/v2/workspace', { key: A.key })).status, 200, 'still serving');
  });

  test('JSON that is deep, wide or long within the size limit is answered quickly with the error object', async () => {
    const op = byId('createContact')[0]!;
    const bodies: [string, string][] = [
      ['100 000 nested arrays', '['.repeat(100_000) + ']'.repeat(100_000)],
      ['200 000 unclosed arrays', '['.repeat(200_000)],
      [
        '10 000 nested objects in a property',
        `{"name":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)},"email":"a@b.co"}`,
      ],
      ['a 1 MB string', JSON.stringify({ name: 'x'.repeat(1_000_000), email: 'a@b.co' })],
      ['100 000 array items', JSON.stringify({ name: Array.from({ length: 100_000 }, () => 1), email: 'a@b.co' })],
      ['a number with 500 000 digits', `{"name":${'9'.repeat(500_000)},"email":"a@b.co"}`],
    ];
    for (const [label, body] of bodies) {
      assert.ok(Buffer.byteLength(body) <= limit(), `${label} fits the limit`);
      const started = Date.now();
      const r = await call('POST', pathOf(op), { key: A.key, raw: body, idem: idem() });
      const ms = Date.now() - started;
      assertErrorObject(r, {}, label);
      assert.ok([400, 422].includes(r.status), `${label}: ${r.status}`);
      assert.ok(ms < 3_000, `${label}: ${ms} ms`);
      figures.add('api4:json-bombs');
    }
  });

  test('a refused body is not amplified: the error answer is never larger than the request that caused it', async () => {
    const op = byId('createContact')[0]!;
    const problems: string[] = [];
    for (const n of [1_000, 20_000, 90_000]) {
      const body = `{${Array.from({ length: n }, (_, i) => `"${i}":0`).join(',')}}`;
      const started = Date.now();
      const r = await call('POST', pathOf(op), { key: A.key, raw: body, idem: idem() });
      const ms = Date.now() - started;
      assertErrorObject(r, { status: 422 }, `${n} unknown properties`);
      const ratio = Buffer.byteLength(r.text) / Buffer.byteLength(body);
      figures.add(`api4:amplification-${n}-props=${ratio.toFixed(1)}x/${ms}ms`, 0);
      if (ratio > 1) {
        problems.push(
          `${n} unknown properties: a ${Buffer.byteLength(body)}-byte body gets a ${Buffer.byteLength(r.text)}-byte 422 ` +
            `(${ratio.toFixed(1)}×, ${r.json.error.details.errors.length} entries in details.errors) after ${ms} ms`,
        );
      }
    }
    assert.deepEqual(problems, []);
  });

  test('every operation: an error answer is at most 64 KiB and at most its request (4 KiB always allowed), whatever the request holds', async () => {
    // A quota that hostile bodies (up to 64 requests each by size) never exhaust: every answer
    // below is the operation's own refusal, not a 429.
    const k = await A.newKey([...SCOPES], { rateLimitPerMinute: 1_000_000 });
    const bound = (sent: number) => Math.min(64 * 1024, Math.max(sent, 4 * 1024));
    const problems: string[] = [];
    let checked = 0;
    let largest = 0;
    for (const op of ops) {
      for (const [label, r] of hostileRequests(op, k.key)) {
        const answer = await rawCall(r, { timeoutMs: 20_000 });
        const sent = encodeRequest(server.baseUrl, r).length;
        const size = Buffer.byteLength(answer.text);
        checked++;
        if (answer.status < 400) continue;
        largest = Math.max(largest, size / sent);
        if (answer.status >= 429 && answer.status !== 431)
          problems.push(`${op.label} ${label}: ${answer.status} ${answer.text.slice(0, 200)}`);
        if (size > bound(sent)) problems.push(`${op.label} ${label}: a ${size}-byte answer to a ${sent}-byte request`);
        if (answer.status !== 431 && !answer.json?.error) problems.push(`${op.label} ${label}: no error object`);
      }
    }
    figures.add(`api4:hostile-requests=${checked},largest-answer/request=${largest.toFixed(3)}`, 0);
    assert.deepEqual(problems, []);
  });

  test('server timeouts are the configured ones, and slow clients (slow headers, slow bodies) do not hold up others', async () => {
    const http = server.built.app.server;
    const configured = server.built.services.config.timeouts;
    assert.deepEqual(
      {
        requestTimeout: http.requestTimeout,
        headersTimeout: http.headersTimeout,
        socketTimeout: http.timeout,
        keepAliveTimeout: http.keepAliveTimeout,
      },
      {
        requestTimeout: configured.requestMs,
        headersTimeout: configured.requestMs,
        socketTimeout: configured.connectionIdleMs,
        keepAliveTimeout: configured.keepAliveMs,
      },
    );
    assert.deepEqual(configured, { requestMs: 30_000, connectionIdleMs: 60_000, keepAliveMs: 72_000 }, 'the defaults');
    // Requests are bounded to 30 s: no longer request deadline is taken.
    assert.throws(() => loadConfig({ REQUEST_TIMEOUT_MS: '30001' }), /REQUEST_TIMEOUT_MS must be <= 30000/);

    const { hostname, port } = new URL(server.baseUrl);
    const slow: net.Socket[] = [];
    const open = (head: string) => {
      const s = net.connect(Number(port), hostname);
      s.on('error', () => undefined);
      s.write(head);
      slow.push(s);
    };
    for (let i = 0; i < 60; i++) open(`GET /v2/contacts HTTP/1.1\r\nHost: x\r\nX-Slow-${i}: `);
    for (let i = 0; i < 20; i++) {
      open(
        `POST /v2/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${A.key}\r\nContent-Type: application/json\r\n` +
          `Idempotency-Key: ${idem()}\r\nContent-Length: 100000\r\n\r\n{"name":"`,
      );
    }
    const drip = setInterval(() => {
      for (const s of slow) if (!s.destroyed) s.write('a');
    }, 100);
    const latencies: number[] = [];
    try {
      const until = Date.now() + 2_500;
      while (Date.now() < until) {
        const started = Date.now();
        const r = await call('GET', '/v2/contacts?limit=5', { key: A.key });
        latencies.push(Date.now() - started);
        assert.equal(r.status, 200);
        await sleep(20);
      }
    } finally {
      clearInterval(drip);
    }
    const stillOpen = slow.filter((s) => !s.destroyed && !s.readableEnded).length;
    for (const s of slow) s.destroy();
    figures.add('api4:slow-connections', slow.length);
    const worst = Math.max(...latencies);
    // Not a speed target (those live in the benchmark): only that the slow clients block nobody.
    assert.ok(latencies.length >= 5, `${latencies.length} requests served meanwhile`);
    assert.ok(worst < 5_000, `a request waited ${worst} ms behind ${slow.length} slow clients`);
    figures.add('api4:slow-still-open', stillOpen);
  });

  test('a client that sends its request too slowly is cut off within REQUEST_TIMEOUT_MS, an idle connection within CONNECTION_IDLE_TIMEOUT_MS, a kept-alive one within KEEP_ALIVE_TIMEOUT_MS; nothing is stored', async () => {
    // A server of its own with small timeouts, distinct enough to tell which one cut a connection.
    const timeouts = { requestMs: 2_500, connectionIdleMs: 500, keepAliveMs: 1_000 };
    const short = await startTestServer({ db: server.db, config: { ...OPEN_ADDRESS_LIMIT, timeouts } });
    try {
      const w = await short.workspace();
      const before = await fingerprint(server.db, w.id);
      const { hostname, port } = new URL(short.baseUrl);
      /** Opens a connection, sends `head`, then one byte every 100 ms if `drip`, until the server closes it. */
      const connection = (head: string | null, drip: boolean) =>
        new Promise<{ closedAfterMs: number; answeredAfterMs: number | null; received: string }>((resolve) => {
          const opened = Date.now();
          let answered: number | null = null;
          let received = '';
          const socket = net.connect(Number(port), hostname);
          socket.on('error', () => undefined);
          socket.on('data', (chunk: Buffer) => {
            answered ??= Date.now();
            received += chunk.toString('latin1');
          });
          if (head !== null) socket.write(head);
          const dripping = drip ? setInterval(() => socket.destroyed || socket.write('a'), 100) : undefined;
          socket.on('close', () => {
            clearInterval(dripping);
            const now = Date.now();
            resolve({
              closedAfterMs: now - opened,
              answeredAfterMs: answered === null ? null : now - answered,
              received,
            });
          });
        });
      const [slowHeaders, slowBody, idle, keptAlive] = await Promise.all([
        connection(`GET /v2/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${w.key}\r\nX-Slow: `, true),
        connection(
          `POST /v2/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${w.key}\r\n` +
            `Content-Type: application/json\r\nIdempotency-Key: ${idem()}\r\nContent-Length: 100000\r\n\r\n{"name":"`,
          true,
        ),
        connection(null, false),
        connection('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', false),
      ]);
      figures.add(
        `api4:cut-after-ms=headers:${slowHeaders.closedAfterMs},body:${slowBody.closedAfterMs},` +
          `idle:${idle.closedAfterMs},kept-alive:${keptAlive.answeredAfterMs}`,
        0,
      );
      // Bytes every 100 ms keep a connection from being idle: only the request's deadline cuts it,
      // checked every tenth of it; the upper bounds leave a busy machine a second and a half.
      for (const [what, c] of [
        ['slow headers', slowHeaders],
        ['slow body', slowBody],
      ] as const) {
        assert.ok(
          c.closedAfterMs >= timeouts.requestMs - 100,
          `${what}: cut after ${c.closedAfterMs} ms, before the deadline`,
        );
        assert.ok(c.closedAfterMs <= timeouts.requestMs + 1_500, `${what}: still open after ${c.closedAfterMs} ms`);
        // What a cut request is answered, if anything, is the error object.
        if (c.received) {
          assert.match(c.received, /^HTTP\/1\.1 4\d\d /, `${what}: ${c.received.slice(0, 200)}`);
          const body = JSON.parse(c.received.slice(c.received.indexOf('\r\n\r\n') + 4)) as { error?: object };
          assert.deepEqual(Object.keys(body.error ?? {}).sort(), ['code', 'message', 'request_id', 'type']);
        }
      }
      assert.equal(idle.received, '');
      assert.ok(idle.closedAfterMs >= timeouts.connectionIdleMs - 100, `idle: cut after ${idle.closedAfterMs} ms`);
      assert.ok(idle.closedAfterMs < timeouts.requestMs, `idle: still open after ${idle.closedAfterMs} ms`);
      // Node keeps a kept-alive connection one second longer than the Keep-Alive header announces,
      // so that a request sent just as it expires is not lost.
      assert.match(keptAlive.received, /^HTTP\/1\.1 200 [^]*\r\nKeep-Alive: timeout=1\r\n/i);
      const keptFor = keptAlive.answeredAfterMs!;
      assert.ok(keptFor >= timeouts.keepAliveMs, `kept alive: cut ${keptFor} ms after the answer`);
      assert.ok(keptFor <= timeouts.keepAliveMs + 1_000 + 1_500, `kept alive: open ${keptFor} ms after the answer`);
      assert.deepEqual(changedTables(before, await fingerprint(server.db, w.id)), [], 'nothing stored');
    } finally {
      await short.close();
    }
  });
});

auditEveryAnswer(150);

/**
 * Requests built to make each operation's error answer as large as it can be: unknown query
 * parameters with long names, long path parameters, and for writes bodies of many (or long)
 * unknown properties, in the body or in every batch item, too many items, every property of the
 * wrong type in every item, long strings and deep nesting, all within BODY_LIMIT_BYTES and the
 * parser's 16 KiB of URL and headers.
 */
function hostileRequests(op: (typeof ops)[number], key: string): [string, Raw][] {
  const path = pathOf(op);
  const headers: [string, string][] = [
    ['Authorization', `Bearer ${key}`],
    ['Content-Type', 'application/json'],
    ['Idempotency-Key', idem()],
  ];
  const request = (target: string, body?: string): Raw => ({
    method: op.method,
    target,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const long = (n: number, c = 'q') => c.repeat(n);
  const joiner = path.includes('?') ? '&' : '?';
  const out: [string, Raw][] = [
    [
      '40 unknown query parameters of 300 characters',
      request(path + joiner + Array.from({ length: 40 }, (_, i) => `${long(300)}${i}=1`).join('&')),
    ],
    ['one unknown query parameter of 12,000 characters', request(`${path}${joiner}${long(12_000)}=1`)],
  ];
  const pathParam = op.template.match(/\{[a-z_]+\}/)?.[0];
  if (pathParam)
    out.push(['a path parameter of 500 characters', request(op.template.replaceAll(/\{[a-z_]+\}/g, long(500, 'z')))]);
  if (!takesBody(op)) return out;
  const batch = op.body.properties?.items?.type === 'array';
  const itemSchema = resourceBodySchema(op);
  const unknownProps = (n: number, nameLength = 8) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`${long(nameLength, 'u')}${i}`, i]));
  const wrongTypes = Object.fromEntries(Object.keys(itemSchema.properties ?? {}).map((name) => [name, [[{ x: 1 }]]]));
  const longStrings = Object.fromEntries(
    Object.entries<any>(itemSchema.properties ?? {})
      .filter(([, s]) => JSON.stringify(s).includes('"string"'))
      .map(([name]) => [name, long(60_000, 's')]),
  );
  const deep = `{"name":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
  const bodies: [string, string][] = batch
    ? [
        [
          '100 items of 900 unknown properties',
          JSON.stringify({ items: Array.from({ length: 100 }, () => unknownProps(900)) }),
        ],
        [
          '100 items of 60 unknown properties with names of 120 characters',
          JSON.stringify({ items: Array.from({ length: 100 }, () => unknownProps(60, 120)) }),
        ],
        ['30,000 items', JSON.stringify({ items: Array.from({ length: 30_000 }, () => ({})) })],
        [
          '100 items with every property of the wrong type',
          JSON.stringify({ items: Array.from({ length: 100 }, () => wrongTypes) }),
        ],
        [
          '100 items with every string property too long',
          JSON.stringify({ items: Array.from({ length: 10 }, () => longStrings) }),
        ],
        ['items nested 20,000 deep', `{"items":${'['.repeat(20_000)}${']'.repeat(20_000)}}`],
      ]
    : [
        ['60,000 unknown properties', JSON.stringify({ ...validBody(op), ...unknownProps(60_000) })],
        ['3,000 unknown properties with names of 300 characters', JSON.stringify(unknownProps(3_000, 300))],
        ['every property of the wrong type', JSON.stringify(wrongTypes)],
        ['every string property too long', JSON.stringify(longStrings)],
        ['a property nested 20,000 deep', deep],
      ];
  for (const [label, body] of bodies) out.push([label, request(path, body)]);
  return out;
}
