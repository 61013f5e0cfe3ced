// What one key may hold of a process and of the deployment, in one server process over either
// store: its requests in flight at once (429 concurrency_limit_exceeded past its limit), load
// shedding of the heaviest key while the process is saturated (503 server_overloaded, never the
// probes, never the lighter keys), and the cost of large bodies and batches against the rate
// limit. Requests are held in flight by a transaction of the test's own that they wait behind:
// on PostgreSQL a lock on the contact they change, on the embedded store the store itself.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import type { Transaction } from '../src/infra/database.js';
import { LoadShedder } from '../src/infra/load-shedder.js';
import { MemoryAdmissionStore, type Place, type Take } from '../src/infra/admission-store.js';
import { RateLimiter } from '../src/infra/rate-limiter.js';
import { contactBody, idem, logLines, sleep, startTestServer, STORE, type TestResponse } from './harness.js';
import { useTestServer } from './test-server.js';

/** the server's log lines (info and up) */
const { lines: logged, stream } = logLines();
const server = useTestServer({
  logger: { logger: { level: 'info', stream } },
  config: {
    loadShedding: { maxInFlight: 4, maxEventLoopDelayMs: 60_000, maxPoolWaiting: 1_000_000 },
    defaultConcurrentRequests: loadConfig({}).defaultConcurrentRequests,
  },
});

/** A contact of a fresh workspace, and keys of that workspace with the given limits. */
async function contactToHold() {
  const ws = await server.workspace({ scopes: ['contacts:read', 'contacts:write'] });
  const created = await server.request('POST', '/v2/contacts', { key: ws.key, idem: idem(), body: contactBody() });
  assert.equal(created.status, 201);
  return { ws, contactId: created.json.data.id as string };
}

/**
 * Runs `whileHeld` while a transaction of the test holds the contacts (and, on the embedded store,
 * the store): writes to them wait until `whileHeld` returns.
 */
async function holding<T>(contactId: string | string[], whileHeld: () => Promise<T>): Promise<T> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const tx = server.db.transaction(async (t: Transaction) => {
    await t.query('SELECT id FROM contacts WHERE id = ANY($1::uuid[]) FOR UPDATE', [[contactId].flat()]);
    locked();
    await released;
  });
  await isLocked;
  try {
    return await whileHeld();
  } finally {
    release();
    await tx;
  }
}

const patch = (key: string, contactId: string, n: number) =>
  server.request('PATCH', `/v2/contacts/${contactId}`, { key, idem: idem(), body: { origin: `held-${n}` } });

/**
 * Sends a PATCH of `body` on a connection of its own, and leaves 200 ms later without reading the
 * answer: a client that gives up while its write is held.
 */
async function patchAndLeave(baseUrl: string, key: string, contactId: string, idempotencyKey: string, body: unknown) {
  const socket = connect(Number(new URL(baseUrl).port), '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const text = JSON.stringify(body);
  socket.write(
    `PATCH /v2/contacts/${contactId} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nIdempotency-Key: ${idempotencyKey}\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
  await sleep(200);
  socket.destroy();
}

/** Settles when `count` of `answers` have come back, giving those. */
async function firstAnswers(answers: Promise<TestResponse>[], count: number): Promise<TestResponse[]> {
  const done: TestResponse[] = [];
  await new Promise<void>((resolve) => {
    for (const a of answers)
      void a.then((r) => {
        done.push(r);
        if (done.length === count) resolve();
      });
  });
  return done;
}

/** This server's count of answers whose client had left (wsapi_http_answers_undelivered_total). */
async function undeliveredSoFar(): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('wsapi_http_answers_undelivered_total '));
  assert.ok(line, 'the series is on /metrics');
  return Number(line.split(' ')[1]);
}

describe(`requests in flight per key (${STORE})`, () => {
  test('a key of 3 requests at once: of 8 sent together, 3 run and 5 are 429 at once, not counted; places come back', async () => {
    const { ws, contactId } = await contactToHold();
    // 10 a minute: the 5 refusals counted would leave too few for the requests after them.
    const writer = await ws.newKey(['contacts:write'], { concurrencyLimit: 3, rateLimitPerMinute: 10 });
    // Authenticated once, so the held store is not needed to read the key.
    assert.equal((await patch(writer.key, contactId, 0)).status, 200);

    await holding(contactId, async () => {
      const answers = Array.from({ length: 8 }, (_, n) => patch(writer.key, contactId, n + 1));
      const refused = await firstAnswers(answers, 5);
      for (const r of refused) {
        assert.equal(r.status, 429);
        assert.equal(r.json.error.code, 'concurrency_limit_exceeded');
        assert.equal(r.json.error.type, 'rate_limit_error');
        assert.equal(r.json.error.details.limit, 3);
        assert.equal(r.headers.get('retry-after'), '1');
        assert.ok(r.headers.get('ratelimit-limit'), 'RateLimit headers on the refusal');
      }
      // Each refusal leaves the count as it was: the same Remaining on all of them (the first
      // request and the three running counted, about 6 left).
      const left = new Set(refused.map((r) => r.headers.get('ratelimit-remaining')));
      assert.equal(left.size, 1, `refusals do not count: Remaining ${[...left].join(', ')}`);
      await sleep(200);
      // The three admitted are still waiting for the contact.
      const settled = await Promise.race([Promise.all(answers).then(() => true), sleep(50).then(() => false)]);
      assert.equal(settled, false, 'the three admitted requests wait for the held contact');
      return answers;
    }).then(async (answers) => {
      const all = await Promise.all(answers);
      assert.deepEqual(all.map((r) => r.status).sort(), [200, 200, 200, 429, 429, 429, 429, 429]);
    });
    // Every place came back with its answer.
    const again = await Promise.all(Array.from({ length: 3 }, (_, n) => patch(writer.key, contactId, 20 + n)));
    assert.deepEqual(
      again.map((r) => r.status),
      [200, 200, 200],
    );
    // 7 of the quota of 10 counted (one more may have come back meanwhile): the refusals are not in it.
    const last = await patch(writer.key, contactId, 30);
    assert.equal(last.status, 200);
    assert.ok(
      ['2', '3'].includes(last.headers.get('ratelimit-remaining') ?? ''),
      `Remaining ${last.headers.get('ratelimit-remaining')}`,
    );
  });

  test('another key of the same workspace has places of its own', async () => {
    const { ws, contactId } = await contactToHold();
    const one = await ws.newKey(['contacts:write'], { concurrencyLimit: 1 });
    const other = await ws.newKey(['contacts:write'], { concurrencyLimit: 1 });
    for (const k of [one, other]) assert.equal((await patch(k.key, contactId, 0)).status, 200);
    await holding(contactId, async () => {
      const first = patch(one.key, contactId, 1);
      await sleep(100);
      const second = patch(one.key, contactId, 2);
      assert.equal((await second).status, 429, 'the key of one place is full');
      // Admitted, not refused: it waits for the held contact like the first.
      const theirs = patch(other.key, contactId, 3);
      await sleep(100);
      return [first, theirs];
    }).then(async ([first, theirs]) => {
      assert.equal((await first!).status, 200);
      assert.equal((await theirs!).status, 200);
    });
  });
});

describe(`a request holds its place until its work ends (${STORE})`, () => {
  test('a client that leaves early keeps its place until the handler returns, then it comes back; its write is applied and accounted', async () => {
    const { ws, contactId } = await contactToHold();
    const writer = await ws.newKey(['contacts:write'], { concurrencyLimit: 1 });
    const undeliveredBefore = await undeliveredSoFar();
    assert.equal((await patch(writer.key, contactId, 0)).status, 200);
    let sent = 1;
    const leftKey = idem();
    await holding(contactId, async () => {
      await patchAndLeave(server.baseUrl, writer.key, contactId, leftKey, { origin: 'left' });
      sent++;
      await sleep(100);
      const meanwhile = await patch(writer.key, contactId, 1);
      sent++;
      assert.equal(meanwhile.status, 429, 'the work of the request that left still runs');
      assert.equal(meanwhile.json.error.code, 'concurrency_limit_exceeded');
    });
    // Its handler returned once the contact was free: the place is back.
    for (let waited = 0; ; waited += 50) {
      const r = await patch(writer.key, contactId, 2);
      sent++;
      if (r.status === 200) break;
      assert.ok(waited < 5_000, `still ${r.status}`);
      await sleep(50);
    }
    assert.equal(server.built.services.shedder.inFlight, 0, 'nothing left counted in flight');

    // The write was applied, and its answer kept: a retry with its Idempotency-Key replays it.
    const retried = await server.request('PATCH', `/v2/contacts/${contactId}`, {
      key: writer.key,
      idem: leftKey,
      body: { origin: 'left' },
    });
    sent++;
    assert.equal(retried.status, 200);
    assert.equal(retried.headers.get('idempotent-replayed'), 'true');
    assert.equal(retried.json.data.origin, 'left');
    // Accounted like any answer: one line (with delivered: false), the metrics, the usage trail.
    const undelivered = logged.map((l) => JSON.parse(l)).filter((l) => l.delivered === false);
    assert.deepEqual(
      undelivered.map((l) => [l.level, l.msg, l.req.method, l.req.path, l.req.remoteAddress, l.res.statusCode]),
      [[30, 'request completed', 'PATCH', `/v2/contacts/${contactId}`, '127.0.0.1', 200]],
    );
    assert.ok(
      !logged.some((l) => JSON.parse(l).msg === 'request aborted'),
      'its body had arrived: not an aborted request',
    );
    assert.equal((await undeliveredSoFar()) - undeliveredBefore, 1);
    await server.built.services.usage.flush();
    const usage = await server.db.query<{ requests: number }>(
      'SELECT sum(requests)::int AS requests FROM api_key_usage WHERE key_id = $1',
      [writer.id],
    );
    assert.equal(usage.rows[0]!.requests, sent, 'every request of the key in its usage trail, the one that left too');
  });
});

describe(`shutdown and the work of clients that left (${STORE})`, () => {
  test('shutdown waits for the work of a request whose client left, and writes it to the usage trail', async () => {
    const { ws, contactId } = await contactToHold();
    const writer = await ws.newKey(['contacts:write']);
    const other = await startTestServer({ db: server.db });
    // Authenticated once, so the held store is not needed to read the key.
    const first = await other.request('PATCH', `/v2/contacts/${contactId}`, {
      key: writer.key,
      idem: idem(),
      body: { origin: 'first' },
    });
    assert.equal(first.status, 200);
    let closed = false;
    await holding(contactId, async () => {
      await patchAndLeave(other.baseUrl, writer.key, contactId, idem(), { origin: 'left before shutdown' });
      void other.close().then(() => (closed = true));
      await sleep(300);
      assert.equal(closed, false, 'the server does not close while the work goes on');
    });
    for (let waited = 0; !closed; waited += 20) {
      assert.ok(waited < 5_000, 'the server closes once the work has ended');
      await sleep(20);
    }
    const usage = await server.db.query<{ requests: number }>(
      'SELECT coalesce(sum(requests), 0)::int AS requests FROM api_key_usage WHERE key_id = $1',
      [writer.id],
    );
    assert.equal(usage.rows[0]!.requests, 2, 'the request whose client left is in the usage trail');
    const stored = await server.db.query<{ origin: string }>('SELECT origin FROM contacts WHERE id = $1', [contactId]);
    assert.equal(stored.rows[0]!.origin, 'left before shutdown');
  });
});

describe(`load shedding (${STORE}; this server counts 4 requests in flight as saturated)`, () => {
  test('a workspace is one tenant, however many keys it spreads its requests over', async () => {
    // Hostile: three keys of one workspace, one request each; the other workspace: one key, one
    // request. Four in flight: saturated. Counted per key, the other workspace's key would tie
    // with each hostile key and be shed, and a fourth hostile key would pass.
    const hostile = await contactToHold();
    const hostileKeys = await Promise.all([0, 1, 2, 3].map(() => hostile.ws.newKey(['contacts:write'])));
    const other = await contactToHold();
    const otherKey = await other.ws.newKey(['contacts:write']);
    // Authenticated once, so the held store is not needed to read the keys.
    for (const k of hostileKeys) assert.equal((await patch(k.key, hostile.contactId, 0)).status, 200);
    assert.equal((await patch(otherKey.key, other.contactId, 0)).status, 200);

    const { held, otherAgain, hostileFourth } = await holding([hostile.contactId, other.contactId], async () => {
      const held = [
        ...hostileKeys.slice(0, 3).map((k, n) => patch(k.key, hostile.contactId, n + 1)),
        patch(otherKey.key, other.contactId, 1),
      ];
      const shedder = server.built.services.shedder;
      for (let waited = 0; shedder.inFlight < 4; waited += 10) {
        assert.ok(waited < 5_000, `only ${shedder.inFlight} requests in flight`);
        await sleep(10);
      }
      // Each is answered at once if shed, or held with the others if admitted.
      const hostileFourth = patch(hostileKeys[3]!.key, hostile.contactId, 9);
      const otherAgain = patch(otherKey.key, other.contactId, 2);
      await sleep(200);
      return { held, otherAgain, hostileFourth };
    });
    const fourth = await hostileFourth;
    assert.equal(fourth.status, 503, 'a new key of the heaviest workspace is shed');
    assert.equal(fourth.json.error.code, 'server_overloaded');
    assert.equal((await otherAgain).status, 200, 'the lighter workspace is served');
    assert.deepEqual(
      (await Promise.all(held)).map((r) => r.status),
      [200, 200, 200, 200],
    );
  });

  test('the workspace holding the most is refused with 503 first; a lighter one and the probes are served', async () => {
    const { ws, contactId } = await contactToHold();
    const heavy = await ws.newKey(['contacts:write']);
    const light = (await server.workspace({ scopes: ['contacts:read'] })).key;
    assert.equal((await patch(heavy.key, contactId, 0)).status, 200);
    assert.equal((await server.request('GET', '/v2/contacts?limit=1', { key: light })).status, 200);

    const { heavyHeld, lightAnswers, shed, probes } = await holding(contactId, async () => {
      const heavyHeld = Array.from({ length: 4 }, (_, n) => patch(heavy.key, contactId, n + 1));
      // Once the process counts the four in flight, the next of the same key is shed.
      const shedder = server.built.services.shedder;
      for (let waited = 0; shedder.inFlight < 4; waited += 10) {
        assert.ok(waited < 5_000, `only ${shedder.inFlight} requests in flight`);
        await sleep(10);
      }
      const shed = await patch(heavy.key, contactId, 99);
      const probes = await Promise.all([fetch(`${server.baseUrl}/healthz`), fetch(`${server.baseUrl}/healthz`)]);
      // The light key is admitted, twice over: it holds less than the heavy one.
      const lightAnswers = [
        server.request('GET', '/v2/contacts?limit=1', { key: light }),
        server.request('GET', '/v2/contacts?limit=1', { key: light }),
      ];
      await sleep(100);
      return { heavyHeld, lightAnswers, shed, probes };
    });
    assert.equal(shed.status, 503);
    assert.equal(shed.json.error.code, 'server_overloaded');
    assert.equal(shed.json.error.type, 'api_error');
    assert.equal(shed.json.error.details.reason, 'in_flight');
    assert.equal(shed.headers.get('retry-after'), '1');
    assert.ok(shed.headers.get('ratelimit-remaining'), 'RateLimit headers on the refusal');
    // A refusal by design: its one line at info, no error line with a stack.
    const aboutShed = logged.map((l) => JSON.parse(l)).filter((l) => l.reqId === shed.headers.get('x-request-id'));
    assert.deepEqual(
      aboutShed.map((l) => [l.level, l.msg, l.res?.statusCode]),
      [[30, 'request completed', 503]],
    );
    assert.deepEqual(
      probes.map((p) => p.status),
      [200, 200],
      'probes are never shed',
    );
    assert.deepEqual(
      (await Promise.all(lightAnswers)).map((r) => r.status),
      [200, 200],
    );
    assert.deepEqual(
      (await Promise.all(heavyHeld)).map((r) => r.status),
      [200, 200, 200, 200],
    );
    // No longer saturated: the heavy key is served again.
    assert.equal((await patch(heavy.key, contactId, 100)).status, 200);
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    assert.match(metrics, /wsapi_load_shed_total\{reason="in_flight"\} [1-9]/);
  });
});

describe(`the cost of a request against the rate limit (${STORE})`, () => {
  test('a body counts one request per 16 KiB started, valid or not, and a refusal is 429 with nothing done', async () => {
    const ws = await server.workspace({ scopes: ['contacts:write'], rateLimitPerMinute: 12 });
    // 40 KB of unknown properties: three requests of the quota, and a 422.
    const big = {
      name: 'x',
      email: 'a@example.com',
      ...Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`unknown_${i}`, i])),
    };
    const raw = JSON.stringify(big);
    assert.ok(raw.length > 32 * 1024 && raw.length <= 48 * 1024, `${raw.length} bytes`);
    const refused = await server.request('POST', '/v2/contacts', { key: ws.key, idem: idem(), raw });
    assert.equal(refused.status, 422);
    assert.equal(refused.headers.get('ratelimit-remaining'), '9', '3 of 12');
    const small = await server.request('POST', '/v2/contacts', { key: ws.key, idem: idem(), body: contactBody() });
    assert.equal(small.status, 201);
    assert.equal(small.headers.get('ratelimit-remaining'), '8', 'a small body is one request');
    // 8 left: a body of nine requests (128 KiB < size <= 144 KiB) is refused, and nothing is stored.
    const nine = JSON.stringify({ ...contactBody(), origin: 'y'.repeat(140 * 1024) });
    const over = await server.request('POST', '/v2/contacts', { key: ws.key, idem: idem(), raw: nine });
    assert.equal(over.status, 429);
    assert.equal(over.json.error.code, 'rate_limit_exceeded');
    // A body that announces no length (chunked) counts as received, parsed or not.
    const chunked = async (text: string) => {
      const other = await server.workspace({ scopes: ['contacts:write'], rateLimitPerMinute: 12 });
      const res = await fetch(`${server.baseUrl}/v2/contacts`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${other.key}`,
          'content-type': 'application/json',
          'idempotency-key': idem(),
        },
        body: new Blob([text]).stream(),
        duplex: 'half',
      });
      await res.text();
      const next = await server.request('POST', '/v2/contacts', { key: other.key, idem: idem(), body: contactBody() });
      return { status: res.status, remainingAfterNext: next.headers.get('ratelimit-remaining') };
    };
    assert.deepEqual(await chunked(JSON.stringify(contactBody()) + ' '.repeat(40 * 1024)), {
      status: 201,
      remainingAfterNext: '8',
    });
    assert.deepEqual(await chunked(`{"name": "${'x'.repeat(40 * 1024)}`), { status: 400, remainingAfterNext: '8' });
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
      [ws.id],
    );
    assert.equal(rows[0]!.n, 1, 'only the small body wrote');
  });
});

describe(`a request refused for the rest of its cost (${STORE})`, () => {
  test('a batch sent again after the Retry-After of its refusal passes, though its arrival counts again', async () => {
    // 60 a minute: a request every second, so whole-second Retry-After values are not rounded
    // up past the wait.
    const ws = await server.workspace({ scopes: ['contacts:read', 'contacts:write'], rateLimitPerMinute: 60 });
    for (let i = 0; i < 60; i++) {
      const read = await server.request('GET', '/v2/contacts?limit=1', { key: ws.key });
      assert.equal(read.status, 200, `read ${i}: ${read.text}`);
    }
    // 20 items: two requests of the quota, one counted on arrival and one once the body is read.
    const items = Array.from({ length: 20 }, (_, i) => ({ external_id: `rest-${i}`, name: `Rest ${i}` }));
    const key = idem();
    const answers: string[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      const r = await server.request('POST', '/v2/contacts/batch/upsert', { key: ws.key, idem: key, body: { items } });
      answers.push(`${r.status} Retry-After ${r.headers.get('retry-after')}`);
      if (r.status !== 429) break;
      assert.equal(r.json.error.code, 'rate_limit_exceeded', r.text);
      await sleep(Number(r.headers.get('retry-after')) * 1_000 + 50);
    }
    // Refused on arrival at most once, then at most once for the rest; the next attempt passes.
    assert.equal(answers.at(-1)?.slice(0, 3), '200', answers.join(', '));
    assert.ok(answers.length <= 3, answers.join(', '));
  });
});

describe('what saturates a process, and who is shed then', () => {
  const settings = { maxInFlight: 100, maxEventLoopDelayMs: 50, maxPoolWaiting: 8 };

  test('the event loop is watched from the moment the server listens: the work of starting is not overload', async () => {
    const busy = (ms: number) => {
      for (const end = Date.now() + ms; Date.now() < end;) {
        // The event loop is busy: nothing else runs.
      }
    };
    const stalledAtStart = new LoadShedder(settings, null);
    busy(300);
    await sleep(100);
    assert.equal(stalledAtStart.saturation(), null, 'not watched before the server listens');
    stalledAtStart.close();

    const server = await startTestServer({ config: { loadShedding: settings } });
    try {
      busy(300);
      await sleep(100);
      assert.equal(server.built.services.shedder.saturation(), 'event_loop_delay', 'watched once it listens');
    } finally {
      await server.close();
    }
  });

  test('an event loop running late: the subject holding the most is shed, then no one once it is on time', async () => {
    const shedder = new LoadShedder(settings, null);
    shedder.watchEventLoop();
    try {
      const leave = [shedder.enter('heavy'), shedder.enter('heavy'), shedder.enter('light')];
      for (const end = Date.now() + 300; Date.now() < end;) {
        // The event loop is busy: nothing else runs.
      }
      // The shedder's timer, late by 300 ms, marks the process saturated.
      for (let waited = 0; shedder.saturation() !== 'event_loop_delay'; waited += 20) {
        assert.ok(waited < 1_000, 'the late event loop is not seen');
        await sleep(20);
      }
      assert.equal(shedder.sheds('heavy'), 'event_loop_delay');
      assert.equal(shedder.sheds('light'), null, 'lighter than the heaviest');
      assert.equal(shedder.sheds('new'), null, 'nothing in flight');
      await sleep(1_100);
      assert.equal(shedder.saturation(), null, 'on time again');
      assert.equal(shedder.sheds('heavy'), null);
      for (const end of leave) end();
      assert.equal(shedder.inFlight, 0);
    } finally {
      shedder.close();
    }
  });

  test('requests queued for database connections: more than LOAD_SHED_MAX_POOL_WAITING saturate', () => {
    let waiting = 0;
    const shedder = new LoadShedder(settings, () => waiting);
    try {
      const end = shedder.enter('a');
      waiting = 8;
      assert.equal(shedder.sheds('a'), null, 'the limit itself is not yet saturated');
      waiting = 9;
      assert.equal(shedder.sheds('a'), 'database_pool');
      end();
      end();
      assert.equal(shedder.inFlight, 0, 'a request ends once');
      assert.equal(shedder.sheds('a'), null, 'nothing in flight: never shed');
    } finally {
      shedder.close();
    }
  });
});

describe('a refused quota is answered from memory until its Retry-After', () => {
  test('a client that keeps sending while refused costs no store round trip; the store is asked again after', async () => {
    let takes = 0;
    const store = new MemoryAdmissionStore();
    const counting = {
      admit: (take: Take, place?: Place) => {
        takes++;
        return store.admit(take, place);
      },
      release: (bucket: string, holder: string) => store.release(bucket, holder),
      close: () => store.close(),
    };
    const limiter = new RateLimiter(counting);
    // 600 a minute: one every 100 ms, a burst of 600.
    for (let i = 0; i < 600; i++) assert.equal((await limiter.consume('key:k', 600)).allowed, true);
    const refused = await limiter.consume('key:k', 600);
    assert.equal(refused.allowed, false);
    assert.equal(takes, 601);
    for (let i = 0; i < 50; i++) {
      const again = await limiter.consume('key:k', 600);
      assert.equal(again.allowed, false);
      assert.ok(again.retryAfterMs > 0 && again.retryAfterMs <= refused.retryAfterMs);
      assert.equal(again.resetAtMs, refused.resetAtMs);
    }
    assert.equal(takes, 601, 'refused from memory');
    await sleep(refused.retryAfterMs + 5);
    assert.equal((await limiter.consume('key:k', 600)).allowed, true, 'passes once Retry-After has passed');
    assert.equal(takes, 602);
    await limiter.close();
  });

  test('a larger cost refused from memory waits for all of it, as the store would say', async () => {
    const store = new MemoryAdmissionStore();
    const limiter = new RateLimiter(store);
    // What the store answers, without the memory of another limiter.
    const fromStore = new RateLimiter(store);
    // 60 a minute: one a second.
    for (let i = 0; i < 60; i++) assert.equal((await limiter.consume('key:m', 60)).allowed, true);
    assert.equal((await limiter.consume('key:m', 60)).allowed, false, 'a single request refused: remembered');
    const remembered = await limiter.consume('key:m', 60, 9);
    const asked = await fromStore.consume('key:m', 60, 9);
    assert.equal(remembered.allowed, false);
    assert.equal(asked.allowed, false);
    assert.ok(
      Math.abs(remembered.retryAfterMs - asked.retryAfterMs) < 50,
      `from memory ${remembered.retryAfterMs} ms, from the store ${asked.retryAfterMs} ms`,
    );
    await limiter.close();
  });
});
