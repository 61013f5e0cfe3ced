// Every request whose work ran is accounted once — its log line, its metrics, its key's usage
// trail — whether or not its answer reached the client: a client that leaves does not undo a
// write, so the trail must not lose it; and one that leaves before its body was read stops its
// request, which then has one "request aborted" line and nothing else. The service's accounting
// on a bare Fastify app over HTTP, told of arrivals and closed connections as the guard tells it,
// with the moments a client can leave made exact: before its body is read (as while it waits for
// its admission), while the handler works, while a later onSend hook works (as the consistency
// position's query of a write does with read replicas). test/admission.test.ts shows the same on
// the whole service: a write whose client left, applied, replayed, in the trail, and waited for
// by shutdown.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { RequestAccounting } from '../src/http/request-accounting.js';
import type { Principal } from '../src/modules/api-keys/authenticator.js';
import type { Services } from '../src/services.js';
import { logLines, sleep } from './harness.js';

const { lines, stream } = logLines();
/** What the hooks told the metrics and the usage trail, in order. */
const told: string[] = [];
const services = {
  metrics: {
    observeRequest: (method: string, route: string | undefined, status: number) =>
      told.push(`metrics ${method} ${route} ${status}`),
    answerUndelivered: () => told.push('metrics undelivered'),
  },
  usage: {
    record: (keyId: string, operation: string, status: number) => told.push(`usage ${keyId} ${operation} ${status}`),
  },
} as unknown as Pick<Services, 'metrics' | 'usage'>;

let app: FastifyInstance;
let accounting: RequestAccounting;
let port = 0;
/** Ends the wait of the request held at this stage (onRequest, handler, onSend). */
const held = new Map<string, () => void>();
const holdUntilReleased = (stage: string) => new Promise<void>((resolve) => held.set(stage, resolve));
const holds = (request: FastifyRequest, stage: string) => request.headers['x-hold'] === stage;

before(async () => {
  app = Fastify({ logger: { level: 'info', stream }, disableRequestLogging: true });
  app.decorateRequest('principal', null);
  accounting = new RequestAccounting(services);
  accounting.register(app);
  // As the guard does for every metered request: the accounting hears of its arrival and of its
  // connection closing, and the request may wait before its body is read (as for its admission).
  app.addHook('onRequest', async (request, reply) => {
    accounting.arrived(request);
    reply.raw.once('close', () => accounting.connectionClosed(request, reply));
    if (holds(request, 'onRequest')) await holdUntilReleased('onRequest');
  });
  app.addHook('preHandler', async (request) => {
    request.principal = { keyId: 'key_1' } as Principal;
  });
  app.addHook('onSend', async (request, _reply, payload) => {
    if (holds(request, 'onSend')) await holdUntilReleased('onSend');
    return payload;
  });
  app.post('/things', { schema: { operationId: 'createThing' } }, async (request, reply) => {
    handled.push('POST');
    if (holds(request, 'handler')) await holdUntilReleased('handler');
    return reply.code(201).send({ created: true });
  });
  app.get('/things', { schema: { operationId: 'listThings' } }, async (request, reply) => {
    handled.push('GET');
    if (holds(request, 'handler')) await holdUntilReleased('handler');
    return reply.send({ data: [] });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});
after(() => app.close());

/** The handlers that ran, in order. */
const handled: string[] = [];

/**
 * Sends a request (a POST of `body`, declared `length` bytes long, or a GET) held at `stage`, and
 * leaves once the request is held there (or, for a body never finished, after 100 ms).
 */
async function sendAndLeave(method: 'POST' | 'GET', stage: string, body = '', length = body.length): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const head = `${method} /things HTTP/1.1\r\nHost: t\r\nX-Hold: ${stage}\r\n`;
  socket.write(
    method === 'GET'
      ? `${head}\r\n`
      : `${head}Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`,
  );
  if (body.length < length) await sleep(100);
  else
    for (let waited = 0; !held.has(stage); waited += 10) {
      assert.ok(waited < 5_000, `no request reached ${stage}`);
      await sleep(10);
    }
  socket.destroy();
  await sleep(50);
}

const release = (stage: string) => {
  held.get(stage)!();
  held.delete(stage);
};

/** The log lines, what the hooks told and the handlers that ran, from `from` on. */
const since = (from: ReturnType<typeof mark>) => ({
  lines: lines.slice(from.lines).map((l) => JSON.parse(l) as Record<string, any>),
  told: told.slice(from.told),
  handled: handled.slice(from.handled),
});
const mark = () => ({ lines: lines.length, told: told.length, handled: handled.length });

describe('one account of every request', () => {
  test('a delivered answer: one line without `delivered`, metrics and usage once', async () => {
    const from = mark();
    const r = await fetch(`http://127.0.0.1:${port}/things`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(r.status, 201);
    await sleep(50);
    const { lines: logged, told: calls } = since(from);
    assert.deepEqual(
      logged.map((l) => [l.msg, l.res.statusCode, l.delivered]),
      [['request completed', 201, undefined]],
    );
    assert.deepEqual(calls, ['metrics POST /things 201', 'usage key_1 createThing 201']);
  });

  for (const [method, stage, status, operation] of [
    ['POST', 'handler', 201, 'createThing'],
    ['POST', 'onSend', 201, 'createThing'],
    ['GET', 'handler', 200, 'listThings'],
    ['GET', 'onRequest', 200, 'listThings'],
  ] as const) {
    test(`a ${method} whose client leaves while held at ${stage}: its work runs, accounted once as it ends, undelivered`, async () => {
      const from = mark();
      await sendAndLeave(method, stage, method === 'POST' ? '{}' : '');
      // Before the answer is ready there is nothing to account; once it is, it is accounted as the
      // client leaves. Either way the work goes on, and shutdown waits for it.
      let settled = false;
      void accounting.settled().then(() => (settled = true));
      await sleep(20);
      if (stage !== 'onSend') {
        assert.deepEqual(since(from).told, [], 'nothing accounted before the work ends');
        assert.equal(settled, false, 'shutdown would wait for this work');
      }
      release(stage);
      await sleep(100);
      assert.equal(settled, true, 'settled once the work has ended');
      const { lines: logged, told: calls, handled: ran } = since(from);
      assert.deepEqual(ran, [method]);
      assert.deepEqual(
        logged.map((l) => [l.level, l.msg, l.req.method, l.req.url, l.res?.statusCode, l.delivered]),
        [[30, 'request completed', method, '/things', status, false]],
      );
      assert.equal(typeof logged[0]!.responseTime, 'number');
      assert.deepEqual(calls, [
        `metrics ${method} /things ${status}`,
        'metrics undelivered',
        `usage key_1 ${operation} ${status}`,
      ]);
    });
  }

  for (const [what, body, length] of [
    ['has sent only part of its body', '{"na', 100],
    ['has sent its whole body, not yet read', '{}', 2],
  ] as const) {
    test(`a client that leaves once it ${what}: one "request aborted" line, no work, nothing counted`, async () => {
      const from = mark();
      await sendAndLeave('POST', 'onRequest', body, length);
      if (held.has('onRequest')) release('onRequest');
      await sleep(100);
      const { lines: logged, told: calls, handled: ran } = since(from);
      assert.deepEqual(
        logged.map((l) => [l.msg, l.req.method]),
        [['request aborted', 'POST']],
      );
      assert.deepEqual(calls, []);
      assert.deepEqual(ran, [], 'the handler never ran');
      await accounting.settled();
    });
  }
});
