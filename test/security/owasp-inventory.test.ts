// OWASP API9 (improper inventory management), API8 (security misconfiguration) and, not
// applicable, API7 (SSRF) and API10 (unsafe consumption of APIs): what is served is what is
// documented; headers, error bodies, methods, CORS and the HTTP parser; no HTTP client in src/.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { idem } from '../harness.js';
import {
  changedTables,
  errorProblems,
  fingerprint,
  headerOf,
  headerProblems,
  leakProblems,
  rawExchange,
  withoutRequestId,
} from './helpers.js';
import {
  A,
  B,
  auditEveryAnswer,
  call,
  docs,
  figures,
  gets,
  ops,
  pathOf,
  rawCall,
  remember,
  send,
  server,
  useOwaspSuite,
  valuesA,
} from './owasp-support.js';
import { committedDocument } from '../openapi-documents.js';

useOwaspSuite('owasp-inventory', () => [`${figures.get('api9:served-routes')} served routes`]);

function documentedPublicPaths(): string[] {
  const root = new URL('../../', import.meta.url);
  const files = [
    new URL('README.md', root),
    ...readdirSync(new URL('docs/', root))
      .filter((f) => f.endsWith('.md') && f !== 'security.md')
      .map((f) => new URL(`docs/${f}`, root)),
  ];
  const paths = new Set<string>();
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(/(?<![\w./-])(\/[a-z][\w.-]*(?:\/[\w.-]+)*)/g)) {
      if (!/^\/v\d+$/.test(m[1]!)) paths.add(m[1]!);
    }
  }
  return [...paths];
}

const isDocumentedPublic = (path: string, documented: string[]) =>
  documented.some((d) => path === d || path.startsWith(`${d}/`));

/** The routes of the running server, from Fastify's route tree, as "METHOD /path/{param}". */
function servedRoutes(): string[] {
  const tree = server.built.app.printRoutes({ commonPrefix: false });
  const stack: string[] = [];
  const routes: string[] = [];
  for (const line of tree.split('\n')) {
    const at = line.search(/[├└]── /);
    if (at < 0) continue;
    const depth = at / 4;
    const rest = line.slice(at + 4);
    const m = /^(\S+)(?: \(([^)]+)\))?$/.exec(rest.trim());
    assert.ok(m, `unparsed route line: ${line}`);
    const path = (depth > 0 ? stack[depth - 1]! : '') + m[1]!;
    stack[depth] = path;
    stack.length = depth + 1;
    for (const method of (m[2] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      routes.push(`${method} ${path.replace(/:(\w+)/g, '{$1}')}`);
    }
  }
  return routes.sort();
}

describe('API9 improper inventory management: what is served is what is documented', () => {
  test('the server answers the documented operations (and HEAD of each GET) and, besides them, only public paths the README or docs/ name', () => {
    const served = servedRoutes();
    const documented = new Set([...ops.map((o) => o.label), ...gets().map((o) => `HEAD ${o.template}`)]);
    const prose = documentedPublicPaths();
    const undocumented = served.filter((r) => !documented.has(r) && !isDocumentedPublic(r.split(' ')[1]!, prose));
    assert.deepEqual(undocumented, [], 'served but documented nowhere');
    assert.deepEqual(
      [...documented].filter((r) => !served.includes(r)),
      [],
      'documented but not served',
    );
    for (const p of ['/healthz', '/readyz', '/v1/openapi.json', '/v2/openapi.json']) {
      assert.ok(served.includes(`GET ${p}`) && isDocumentedPublic(p, prose), p);
    }
    figures.add('api9:served-routes', served.length);
  });

  test('every documented operation is served: a valid request with every scope succeeds', async () => {
    const problems: string[] = [];
    for (const op of ops) {
      const r = await send(op, A.key);
      if (!op.successStatuses.includes(r.status)) problems.push(`${op.label}: ${r.status} ${r.text.slice(0, 120)}`);
    }
    assert.deepEqual(problems, []);
  });

  test('the served descriptions are the committed docs/openapi/*.json, and describe one version each', () => {
    for (const v of ['v1', 'v2'] as const) {
      assert.deepEqual(docs[v], committedDocument(v), `docs/openapi/${v}.json`);
      assert.deepEqual(
        Object.keys(docs[v].paths).filter((p) => !p.startsWith(`/${v}/`)),
        [],
      );
    }
  });

  test('plausible undocumented paths and methods: 404 route_not_found with a key, the same 401 without one', async () => {
    const contact = valuesA.get('GET /v2/contacts/{id}')!.id!;
    const automation = valuesA.get('GET /v2/automations/{id}')!.id!;
    const paths = [
      '/',
      '/v1',
      '/v2',
      '/v0/contacts',
      '/v3/contacts',
      '/v1/workspace',
      '/v1/events',
      '/v1/catalog/items',
      '/v2/workspaces',
      '/v2/api-keys',
      '/v2/api_keys',
      '/v2/keys',
      '/v2/admin',
      '/v2/owner',
      '/v2/users',
      '/v2/webhooks',
      '/v2/billing',
      '/v2/credentials',
      '/v2/workspace/credentials',
      '/v2/messages',
      '/v2/notes',
      '/v2/automation_logs',
      `/v2/automations/${automation}/logs`,
      `/v2/automations/${automation}/rules`,
      `/v2/contacts/${contact}/notes`,
      `/v2/contacts/${contact}/ai_memory`,
      `/v2/contacts/${contact}/messages`,
      `/v2/conversations/${contact}`,
      '/v2/pipeline',
      '/v2/pipeline/stages/cold_list',
      '/v2/events/evt_1_1',
      `/v2/contacts/${contact}/export`,
      '/v2/export/contacts',
      '/v2/search',
      '/v2/bulk/contacts',
      '/v2/openapi.yaml',
      '/v2/openapi',
      '/openapi.json',
      '/documentation',
      '/documentation/json',
      '/docs',
      '/swagger',
      '/swagger.json',
      '/metrics',
      '/debug',
      '/status',
      '/health',
      '/admin',
      '/internal',
      '/graphql',
      '/.env',
      '/.git/config',
    ];
    const problems: string[] = [];
    let reference401: string | undefined;
    const probe = async (method: string, path: string) => {
      const withKey = await call(method, path, { key: A.key });
      problems.push(
        ...errorProblems(withKey, { status: 404, code: 'route_not_found' }).map((p) => `${method} ${path}: ${p}`),
      );
      const without = await call(method, path);
      problems.push(...errorProblems(without, { status: 401 }).map((p) => `${method} ${path} without a key: ${p}`));
      reference401 ??= withoutRequestId(without);
      if (without.status === 401 && withoutRequestId(without) !== reference401)
        problems.push(`${method} ${path}: another 401`);
    };
    // Paths a route serves (documented public pages, say) are the first test's subject, not probes.
    const served = servedRoutes().map((r) => {
      const [method, template] = r.split(' ');
      const pattern = template!
        .replace(/[.]/g, '\\.')
        .replace(/\{[^}]+\}/g, '[^/]+')
        .replace(/\*/g, '.*');
      return { method: method!, re: new RegExp(`^${pattern}$`) };
    });
    const routed = (method: string, path: string) =>
      served.some((r) => r.method === method && r.re.test(decodeURIComponent(path.split('?')[0]!)));
    for (const path of paths) {
      await Promise.all(['GET', 'POST', 'DELETE'].filter((m) => !routed(m, path)).map((m) => probe(m, path)));
    }
    // Methods a documented path does not offer.
    for (const template of new Set(ops.map((o) => o.template))) {
      const offered = new Set(ops.filter((o) => o.template === template).map((o) => o.method));
      const path = pathOf(ops.find((o) => o.template === template)!);
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])
        if (!offered.has(method)) await probe(method, path);
    }
    assert.deepEqual(problems, []);
  });

  test('undocumented query parameters: refused on every read, never silently ignored or obeyed', async () => {
    const shadow = [
      ['include_deleted', 'true'],
      ['workspace_id', B.id],
      ['fields', 'notes'],
      ['expand', 'ai_memory'],
      ['debug', '1'],
      ['internal', 'true'],
      ['limit_override', '100000'],
    ];
    const problems: string[] = [];
    for (const op of gets()) {
      for (const [name, value] of shadow) {
        const r = await call('GET', `${pathOf(op)}?${name}=${encodeURIComponent(value!)}`, { key: A.key });
        const where = `${op.label}?${name}`;
        problems.push(
          ...errorProblems(r, { status: 400, code: 'invalid_query_parameter' }).map((p) => `${where}: ${p}`),
        );
      }
    }
    assert.deepEqual(problems, []);
  });
});

// ================================================================================================ API8

/** Methods that no route offers, known to Node's HTTP parser. */
const OTHER_METHODS = ['DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'SEARCH', 'PURGE', 'LINK', 'MKCOL', 'COPY', 'LOCK'];

describe('API8 security misconfiguration: headers, error bodies, methods, CORS and the HTTP parser', () => {
  test('methods no route offers, on every documented path: the same 401 without a key, 404 route_not_found with one; TRACE echoes nothing', async () => {
    const problems: string[] = [];
    for (const template of new Set(ops.map((o) => o.template))) {
      const offered = new Set(ops.filter((o) => o.template === template).map((o) => o.method));
      const target = pathOf(ops.find((o) => o.template === template)!);
      for (const method of OTHER_METHODS.filter((m) => !offered.has(m))) {
        const headers: [string, string][] = [['X-Echo-Me', 'echo-marker']];
        const without = await rawCall({ method, target, headers });
        const withKey = await rawCall({ method, target, headers: [...headers, ['Authorization', `Bearer ${A.key}`]] });
        const where = `${method} ${template}`;
        problems.push(...errorProblems(without, { status: 401, code: 'invalid_api_key' }).map((p) => `${where}: ${p}`));
        problems.push(...errorProblems(withKey, { status: 404, code: 'route_not_found' }).map((p) => `${where}: ${p}`));
        if (withKey.text.includes('echo-marker') || withKey.text.includes(A.key))
          problems.push(`${where} echoes the request`);
      }
    }
    assert.deepEqual(problems, []);
  });

  test('QUERY (a method with a body) on a documented path is 404 route_not_found like any other method not offered', async () => {
    const problems: string[] = [];
    for (const template of new Set(ops.map((o) => o.template))) {
      const target = pathOf(ops.find((o) => o.template === template)!);
      const r = await rawCall({ method: 'QUERY', target, headers: [['Authorization', `Bearer ${A.key}`]] });
      problems.push(
        ...errorProblems(r, { status: 404, code: 'route_not_found' }).map((p) => `QUERY ${template}: ${p}`),
      );
    }
    assert.deepEqual(problems, []);
  });

  test('no CORS: a browser preflight or request from any origin gets no Access-Control-* header', async () => {
    for (const op of ops) {
      const target = pathOf(op);
      for (const r of [
        await rawCall({
          method: 'OPTIONS',
          target,
          headers: [
            ['Origin', 'https://evil.example'],
            ['Access-Control-Request-Method', op.method],
            ['Access-Control-Request-Headers', 'authorization,idempotency-key'],
          ],
        }),
        await rawCall({
          method: 'GET',
          target,
          headers: [
            ['Origin', 'null'],
            ['Authorization', `Bearer ${A.key}`],
          ],
        }),
      ]) {
        const cors = Object.keys(r.headers).filter((h) => h.startsWith('access-control-'));
        assert.deepEqual(cors, [], `${op.label}: ${cors.join()}`);
      }
    }
  });

  test('the health probes say whether the service is up and nothing more', async () => {
    const health = await call('GET', '/healthz');
    assert.deepEqual(health.json, { status: 'ok' });
    const ready = await call('GET', '/readyz');
    assert.deepEqual(Object.keys(ready.json).sort(), ['checks', 'status']);
    for (const value of Object.values<string>(ready.json.checks)) assert.match(value, /^(ok|unavailable)$/);
    for (const r of [health, ready]) assert.deepEqual(headerProblems(r), []);
  });

  test('requests the HTTP parser refuses (malformed request line, unknown method, smuggling, no Host, control characters) never reach a handler, and get the error object with every contract header', async () => {
    const A_ = `Authorization: Bearer ${A.key}\r\n`;
    const cases: [string, Buffer | string][] = [
      ['an unknown method', `FOO /v2/contacts HTTP/1.1\r\nHost: x\r\n${A_}\r\n`],
      ['a lower-case method', `get /v2/contacts HTTP/1.1\r\nHost: x\r\n${A_}\r\n`],
      ['HTTP/9.9', `GET /v2/contacts HTTP/9.9\r\nHost: x\r\n${A_}\r\n`],
      ['bare LF line ends', `GET /v2/contacts HTTP/1.1\nHost: x\n${A_.trim()}\n\n`],
      ['an obs-fold header', `GET /v2/contacts HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n${A_}\r\n`],
      ['a space in a header name', `GET /v2/contacts HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n${A_}\r\n`],
      ['a NUL in a header value', `GET /v2/contacts HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n${A_}\r\n`],
      ['a space in the target', `GET /v2/contacts?a=b c HTTP/1.1\r\nHost: x\r\n${A_}\r\n`],
      [
        'raw non-UTF-8 bytes in the target',
        Buffer.concat([
          Buffer.from('GET /v2/events?resource_id='),
          Buffer.from([0xff, 0xc3, 0x28]),
          Buffer.from(` HTTP/1.1\r\nHost: x\r\n${A_}\r\n`),
        ]),
      ],
      ['no Host header', `GET /v2/contacts HTTP/1.1\r\n${A_}\r\n`],
      [
        'Content-Length and Transfer-Encoding (request smuggling)',
        `POST /v2/contacts HTTP/1.1\r\nHost: x\r\n${A_}Content-Type: application/json\r\nIdempotency-Key: ${idem()}\r\n` +
          `Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v2/workspace HTTP/1.1\r\nHost: x\r\n${A_}\r\n`,
      ],
      [
        'two different Content-Lengths',
        `POST /v2/contacts HTTP/1.1\r\nHost: x\r\n${A_}Content-Type: application/json\r\nIdempotency-Key: ${idem()}\r\n` +
          `Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
      ],
      ['a negative Content-Length', `POST /v2/contacts HTTP/1.1\r\nHost: x\r\n${A_}Content-Length: -1\r\n\r\n`],
      ['an HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
    ];
    const FRAMING = [
      'Content-Length and Transfer-Encoding (request smuggling)',
      'two different Content-Lengths',
      'a negative Content-Length',
    ];
    const beforeA = await fingerprint(server.db, A.id);
    const problems: string[] = [];
    for (const [label, payload] of cases) {
      const r = await rawExchange(server.baseUrl, Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'utf8'), {
        timeoutMs: 3_000,
      });
      remember(`parser: ${label}`, r, true);
      if (r.status < 400 || r.status >= 500) problems.push(`${label}: ${r.status} ${r.text.slice(0, 150)}`);
      if (!r.closed) problems.push(`${label}: the connection stays open`);
      if (r.text.includes('"data"')) problems.push(`${label}: a smuggled request was served: ${r.text.slice(0, 150)}`);
      // A body whose length is ambiguous is a malformed request, not a header with bad characters.
      if (FRAMING.includes(label) && !r.text.includes('"code":"malformed_request"'))
        problems.push(`${label}: not answered malformed_request: ${r.text.slice(0, 200)}`);
      problems.push(...leakProblems(r.text).map((p) => `${label}: ${p}`));
      // Even a request that never reaches a route gets the contract's answer (spec 4.1.2, 7): the
      // error object, X-Request-Id equal to its request_id, no-store, and the RateLimit-* headers.
      problems.push(...errorProblems(r).map((p) => `${label}: ${p}`));
      problems.push(...headerProblems(r).map((p) => `${label}: ${p}`));
      for (const h of ['x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
        if (!headerOf(r, h)) problems.push(`${label}: no ${h}`);
      }
    }
    assert.deepEqual(problems, []);
    assert.deepEqual(changedTables(beforeA, await fingerprint(server.db, A.id)), []);
  });
});

// ================================================================================================ API7 / API10

describe('API7 server-side request forgery / API10 unsafe consumption of APIs', () => {
  test('no request field is fetched: the only network clients in src/ are its configured store, Redis, the owner’s Unix socket and the webhook sender, which checks every address it connects to', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith('.ts')) files.push(path);
      }
    };
    const root = new URL('../../src/', import.meta.url).pathname;
    walk(root);
    assert.ok(files.length > 20);
    const NETWORK = /from '(node:(?:https?|http2|net|tls|dgram)|undici|axios|node-fetch|got|ws|pg|ioredis)'/g;
    const clients: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      // Type-only imports bring no code, hence no client.
      const code = text.replace(/^import type .*$/gm, '');
      for (const m of code.matchAll(NETWORK)) clients.push(`${file.slice(root.length)} ${m[1]}`);
      // the global fetch, XMLHttpRequest or WebSocket (pagination.ts names a parameter "fetch")
      if (/globalThis\.fetch|\bfetch\(\s*['"`]|\bfetch\(\s*new URL|XMLHttpRequest|new WebSocket/.test(text)) {
        clients.push(`${file.slice(root.length)} global fetch`);
      }
    }
    assert.deepEqual(clients.sort(), [
      'infra/database.ts pg',
      'infra/redis.ts ioredis',
      'modules/owner/owner-channel.ts node:http',
      'modules/webhooks/http-target.ts node:http',
      'modules/webhooks/http-target.ts node:https',
      'modules/webhooks/http-target.ts node:net',
    ]);
    // Webhook URLs are the workspace owner's (CLI), never an API caller's; every request goes through
    // the URL check and the lookup that refuses addresses WEBHOOK_TARGETS does not allow
    // (test/webhooks.test.ts shows both refusing).
    const sender = readFileSync(join(root, 'modules/webhooks/http-target.ts'), 'utf8');
    assert.match(sender, /url = checkTargetUrl\(req\.url, req\.targets\)/);
    assert.match(sender, /lookup: guardedLookup\(req\.targets\)/);
    // The owner channel's client speaks only to a Unix socket derived from DATA_DIR, never a URL.
    const channel = readFileSync(join(root, 'modules/owner/owner-channel.ts'), 'utf8');
    assert.match(channel, /httpRequest\(\s*\{\s*socketPath,/);
  });
});

auditEveryAnswer(1000);
