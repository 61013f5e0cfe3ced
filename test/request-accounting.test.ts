// Every request whose work ran is accounted once — its log line, its metrics, its key's usage
// trail — whether or not its answer reached the client: a client that leaves does not undo a
// write, so the trail must not lose it. The service's hooks on a bare Fastify app over HTTP, with
// the moments a client can leave made exact: while the handler works, and while a later onSend
// hook works (as the consistency position's query of a write does with read replicas).
// test/admission.test.ts shows the same on the whole service: a write whose client left, applied,
// replayed, and in the trail.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { accountEveryAnswer } from '../src/http/request-accounting.js';
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
let port = 0;
/** Ends the wait of the route's handler, or of the slow onSend hook, of the request that holds it. */
const held = new Map<string, () => void>();
const holdUntilReleased = (name: string) => new Promise<void>((resolve) => held.set(name, resolve));

before(async () => {
  app = Fastify({ logger: { level: 'info', stream }, disableRequestLogging: true });
  app.decorateRequest('principal', null);
  accountEveryAnswer(app, services);
  app.addHook('preHandler', async (request) => {
    request.principal = { keyId: 'key_1' } as Principal;
  });
  app.addHook('onSend', async (request, _reply, payload) => {
    if (request.headers['x-hold'] === 'onSend') await holdUntilReleased('onSend');
    return payload;
  });
  app.post('/things', { schema: { operationId: 'createThing' } }, async (request, reply) => {
    if (request.headers['x-hold'] === 'handler') await holdUntilReleased('handler');
    return reply.code(201).send({ created: true });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});
after(() => app.close());

/** Sends a POST of `body` (declared `length` bytes long) and leaves once `leaveWhen` resolves. */
async function postAndLeave(hold: string, body: string, length: number, leaveWhen: Promise<unknown>): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(
    `POST /things HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nX-Hold: ${hold}\r\n` +
      `Content-Length: ${length}\r\n\r\n${body}`,
  );
  await leaveWhen;
  socket.destroy();
  await sleep(50);
}

const waitFor = async (name: string) => {
  for (let waited = 0; !held.has(name); waited += 10) {
    assert.ok(waited < 5_000, `no request reached ${name}`);
    await sleep(10);
  }
};

/** The log lines and what the hooks told, from `from` on. */
const since = (from: { lines: number; told: number }) => ({
  lines: lines.slice(from.lines).map((l) => JSON.parse(l) as Record<string, any>),
  told: told.slice(from.told),
});
const mark = () => ({ lines: lines.length, told: told.length });

describe('one account of every request whose work ran', () => {
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

  for (const where of ['handler', 'onSend'] as const) {
    test(`a client that leaves while the ${where === 'handler' ? 'handler' : 'last onSend hook'} works: the answer is accounted once, undelivered`, async () => {
      const from = mark();
      const leaving = postAndLeave(where, '{}', 2, waitFor(where));
      await leaving;
      // While the handler works there is no answer to account yet; once it has returned, the answer
      // is known, and accounted as the client leaves.
      if (where === 'handler') assert.deepEqual(since(from).told, [], 'nothing accounted before the work ends');
      held.get(where)!();
      held.delete(where);
      await sleep(100);
      const { lines: logged, told: calls } = since(from);
      assert.deepEqual(
        logged.map((l) => [l.level, l.msg, l.req.method, l.req.url, l.res.statusCode, l.delivered]),
        [[30, 'request completed', 'POST', '/things', 201, false]],
      );
      assert.equal(typeof logged[0]!.responseTime, 'number');
      assert.deepEqual(calls, ['metrics POST /things 201', 'metrics undelivered', 'usage key_1 createThing 201']);
    });
  }

  test('a client that leaves before its body has arrived: one "request aborted" line, no work, nothing accounted', async () => {
    const from = mark();
    await postAndLeave('handler', '{"na', 100, sleep(100));
    await sleep(100);
    assert.equal(held.has('handler'), false, 'the handler never ran');
    const { lines: logged, told: calls } = since(from);
    assert.deepEqual(
      logged.map((l) => [l.msg, l.req.method]),
      [['request aborted', 'POST']],
    );
    assert.deepEqual(calls, []);
  });
});
