// The log line of each request (docs: README, LOG_LEVEL): one per request as it is answered, with
// the path's ids but never an external id, e-mail or phone; one for a request its client leaves and
// for one the HTTP parser refuses; never the API key, its secret or the Authorization header.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, logLines, sleep, startTestServer, type TestServer, UNKNOWN_ID } from './harness.js';

describe('logs', () => {
  test('at info, one line per request as it is answered: method, path, address, status, time, request id', async () => {
    for (const level of ['info', 'debug'] as const) {
      const { lines, stream } = logLines();
      const logged = await startTestServer({ logger: { logger: { level, stream } } });
      const ids: string[] = [];
      try {
        const w = await logged.workspace();
        for (const [path, key] of [
          ['/v1/contacts?limit=1', w.key],
          ['/v1/contacts', undefined],
          ['/v1/nope', w.key],
        ] as const) {
          const r = await logged.request('GET', path, key ? { key } : {});
          ids.push(r.headers.get('x-request-id') ?? '');
        }
      } finally {
        await logged.close();
      }
      const entries = lines.map((l) => JSON.parse(l) as Record<string, any>);
      for (const [i, id] of ids.entries()) {
        const mine = entries.filter((e) => e.reqId === id);
        const answered = mine.filter((e) => e.msg === 'request completed');
        assert.equal(answered.length, 1, `${level}: request ${i} answered in one line`);
        assert.equal(answered[0]!.level, 30);
        assert.deepEqual(Object.keys(answered[0]!.req).sort(), ['method', 'path', 'remoteAddress']);
        assert.equal(answered[0]!.req.method, 'GET');
        assert.doesNotMatch(answered[0]!.req.path, /\?/, 'the path without its query');
        assert.equal(answered[0]!.res.statusCode, [200, 401, 404][i]);
        assert.equal(typeof answered[0]!.responseTime, 'number');
        const arrivals = mine.filter((e) => e.msg === 'incoming request');
        assert.equal(arrivals.length, level === 'debug' ? 1 : 0, `${level}: arrival lines of request ${i}`);
        assert.equal(mine.length, answered.length + arrivals.length, `${level}: no other line for request ${i}`);
      }
    }
  });

  test('the external id of an upsert is not written to the log: it may be an e-mail address', async () => {
    const { lines, stream } = logLines();
    const logged = await startTestServer({ logger: { logger: { level: 'debug', stream } } });
    try {
      const w = await logged.workspace();
      // Upserts as the router takes them (raw, "/" and "@" encoded, a query, letters of the route
      // percent-encoded), and paths no route takes, answered 404.
      for (const [path, status] of [
        ['/v1/contacts/external/ana.souza@example.com', 201],
        ['/v2/contacts/external/crm/ana.souza%40example.com', 201],
        ['/v1/contacts/external/ana.souza@example.com?x=1', 200],
        ['/v1/contacts/%65xternal/ana.souza@example.com', 200],
        ['/v2/contact%73/ext%65rnal/ana.souza@example.com', 200],
        ['/v1/contacts//external/ana.souza@example.com', 404],
        ['/v1/contacts%2Fexternal%2Fana.souza@example.com', 404],
      ] as const) {
        const r = await logged.request('PUT', path, { key: w.key, body: { name: 'Ana' }, idem: idem() });
        assert.equal(r.status, status, path);
      }
      // An e-mail address or a phone number sent where an id belongs, plain, encoded once or twice
      // (the router decodes once), and on paths no route takes.
      for (const path of [
        '/v2/contacts/ana.souza@example.com',
        '/v2/contact/external/ana.souza%40example.com',
        '/v2/contacts/+5511987654321/x',
        '/v2/contacts/ana.souza%2540example.com',
        '/v2/contacts/%252B5511987654321',
        '/v2/contacts/%2B%2055%2011%2098765-4321',
        '/v2/contacts/5511987654321',
      ]) {
        const r = await logged.request('GET', path, { key: w.key });
        assert.ok(r.status === 400 || r.status === 404, `${path}: ${r.status}`);
      }
    } finally {
      await logged.close();
    }
    assert.doesNotMatch(
      lines.join('\n'),
      /ana\.souza|5511987654321|98765-4321/,
      'no line carries the external id, e-mail or phone',
    );
    const paths = lines
      .map((l) => JSON.parse(l) as { msg?: string; req?: { path?: string } })
      .filter((e) => e.msg === 'request completed')
      .map((e) => e.req?.path);
    assert.deepEqual(paths, [
      '/v1/contacts/external/[redacted]',
      '/v2/contacts/external/[redacted]',
      '/v1/contacts/external/[redacted]',
      '/v1/contacts/external/[redacted]',
      '/v2/contacts/external/[redacted]',
      '/v1/contacts//external/[redacted]',
      '/v1/contacts/external/[redacted]',
      '/v2/contacts/[redacted]',
      '/v2/[redacted]/external/[redacted]',
      '/v2/contacts/[redacted]/[redacted]',
      '/v2/contacts/[redacted]',
      '/v2/contacts/[redacted]',
      '/v2/contacts/[redacted]',
      '/v2/contacts/[redacted]',
    ]);
  });

  test('a request its client leaves, and one the HTTP parser refuses, still have their one line', async () => {
    const { lines, stream } = logLines();
    const logged = await startTestServer({ logger: { logger: { level: 'info', stream } } });
    let refusedId = '';
    try {
      const w = await logged.workspace();
      const port = Number(new URL(logged.baseUrl).port);
      // Half a body, then the client goes.
      const leaving = connect(port, '127.0.0.1');
      await new Promise<void>((resolve) => leaving.once('connect', () => resolve()));
      leaving.write(
        `POST /v1/contacts HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${w.key}\r\nContent-Type: application/json\r\n` +
          `Idempotency-Key: ${idem()}\r\nContent-Length: 100\r\n\r\n{"name":`,
      );
      await sleep(200);
      leaving.destroy();
      // Half a body, then the client ends its side of the connection (a FIN, as curl does when it
      // gives up): it has left too, and gets no answer (the parser's error is not a refusal).
      const ending = connect(port, '127.0.0.1');
      const endingAnswer: string[] = [];
      ending.on('data', (d: Buffer) => endingAnswer.push(d.toString('latin1')));
      await new Promise<void>((resolve) => ending.once('connect', () => resolve()));
      ending.write(
        `PUT /v1/contacts/external/crm-9 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${w.key}\r\n` +
          `Content-Type: application/json\r\nIdempotency-Key: ${idem()}\r\nContent-Length: 100\r\n\r\n{"name":`,
      );
      await sleep(200);
      ending.end();
      await new Promise((resolve) => ending.once('close', resolve));
      assert.equal(endingAnswer.join(''), '', 'no answer to a client that left');
      // A header line the parser cannot read.
      const refused = connect(port, '127.0.0.1');
      const answer: string[] = [];
      refused.on('data', (d: Buffer) => answer.push(d.toString('latin1')));
      await new Promise<void>((resolve) => refused.once('connect', () => resolve()));
      refused.write('GET /v1/contacts HTTP/1.1\r\nHost: t\r\nNot a header\r\n\r\n');
      await new Promise((resolve) => refused.once('close', resolve));
      refusedId = /x-request-id: (\S+)/i.exec(answer.join(''))?.[1] ?? '';
      await sleep(200);
    } finally {
      await logged.close();
    }
    const entries = lines.map((l) => JSON.parse(l) as Record<string, any>);
    const aborted = entries.filter((e) => e.msg === 'request aborted');
    assert.deepEqual(
      aborted.map((e) => e.req.method),
      ['POST', 'PUT'],
      'the requests their clients left',
    );
    assert.deepEqual(
      entries.filter((e) => e.msg === 'request refused').map((e) => e.reqId),
      [refusedId],
      'the only refusal is the unreadable request',
    );
    assert.match(refusedId, /^req_/);
    const refusedLines = entries.filter((e) => e.reqId === refusedId);
    assert.equal(refusedLines.length, 1, 'the request the parser refused');
    assert.equal(refusedLines[0]!.res.statusCode, 400);
    assert.ok(!JSON.stringify(refusedLines[0]).includes('Not a header'), 'nothing of what it sent');
  });

  test('never contain the API key, its secret or the Authorization header', async () => {
    const { lines, stream } = logLines();
    const logged = await startTestServer({ logger: { logger: { level: 'trace', stream } } });
    let key = '';
    const ids: string[] = [];
    try {
      const w = await logged.workspace({ rateLimitPerMinute: 6 });
      key = w.key;
      const revoked = await w.newKey(['contacts:read']);
      await ownerCommands.revokeKey(logged.owner, { keyId: revoked.id });
      const wrongSecret = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
      const requests: [string, string, Parameters<TestServer['request']>[2]][] = [
        ['GET', '/v1/contacts', { key }],
        ['POST', '/v1/contacts', { key, body: contactBody(), idem: idem() }],
        ['POST', '/v1/contacts', { key, body: { name: 1 }, idem: idem() }],
        ['GET', `/v1/contacts/${UNKNOWN_ID}`, { key }],
        ['GET', '/v1/contacts', { key: wrongSecret }],
        ['GET', '/v1/contacts', { key: revoked.key }],
        ['GET', '/v1/contacts', {}],
        ['GET', '/v1/nope', { key }],
        ['GET', '/v1/contacts', { key }],
        ['GET', '/v1/contacts', { key }], // the 7th request of a 6/min key: 429
        // The key in the path, its dot percent-encoded: not a word of a route, so written as [redacted].
        ['GET', `/v1/contacts/${key.replace('.', '%2E')}`, { key }],
      ];
      const statuses: number[] = [];
      for (const [method, path, options] of requests) {
        const r = await logged.request(method, path, options);
        statuses.push(r.status);
        ids.push(r.headers.get('x-request-id') ?? '');
      }
      assert.deepEqual(statuses, [200, 201, 422, 404, 401, 401, 401, 404, 200, 429, 429]);
    } finally {
      await logged.close();
    }
    assert.ok(lines.length > 0, 'nothing was logged');
    assert.ok(
      ids.every((id) => lines.some((l) => l.includes(id))),
      'every request was logged (so the check below looked at something)',
    );
    const secret = key.slice(key.indexOf('.') + 1);
    const forbidden = [key, secret, secret.slice(0, 40), secret.slice(0, 20)];
    const leaks = lines.filter((l) => forbidden.some((f) => l.includes(f)));
    assert.equal(leaks.length, 0, `${leaks.length} log line(s) contain the key or its secret`);
    const headerLines = lines.filter((l) => /authorization|bearer/i.test(l));
    assert.equal(headerLines.length, 0, `${headerLines.length} log line(s) mention the Authorization header`);
  });
});
