// SIGTERM while writes are in flight. The database is reached through a proxy that holds every
// answer 150 ms, so each write takes about a second and the signal surely lands while they run.
// Promised (docs/api-conventions.md, Other response conventions): the server stops accepting
// connections, answers the requests in flight (with Connection: close), flushes what it buffered
// (the usage trail) and exits 0; nothing acknowledged is lost, and a request it refused had no
// effect, so sending it again elsewhere creates it once.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { cleanUpProcesses, startServer, stopServer, type ServerProcess } from '../processes.js';
import {
  call,
  contactFor,
  contactsByEmail,
  FaultProxy,
  newWorkspaceKey,
  openFaultDatabase,
  report,
  retryUntilDone,
  serverEnv,
  sleep,
  throughProxy,
  type Answer,
  type FaultDatabase,
  fileFigures,
} from './support.js';

let fdb: FaultDatabase;
let proxy: FaultProxy;

before(async () => {
  fdb = await openFaultDatabase('term');
  proxy = await new FaultProxy(fdb.url).start();
});

after(async () => {
  fileFigures('sigterm.test.ts');
  await cleanUpProcesses();
  await proxy?.close();
  await fdb?.drop();
});

/** POSTs the server has received and routed (its "incoming request" log lines, LOG_LEVEL=debug). */
function postsReceived(server: ServerProcess): number {
  let n = 0;
  for (const line of server.output().stdout.split('\n')) {
    if (!line.includes('incoming request')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; req?: { method?: string } };
      if (entry.msg === 'incoming request' && entry.req?.method === 'POST') n++;
    } catch {
      // not a log line
    }
  }
  return n;
}

/** A raw HTTP/1.1 connection: what was sent back, and when it closed. */
function rawConnection(server: ServerProcess) {
  const socket = connect(Number(new URL(server.baseUrl).port), '127.0.0.1');
  const received: string[] = [];
  socket.on('data', (d: Buffer) => received.push(d.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, received: () => received.join(''), closed, connected };
}

test('SIGTERM: in-flight requests finish with 2xx, new ones are refused, nothing is lost', async (t) => {
  const server = await startServer(
    serverEnv({
      DATABASE_URL: throughProxy(fdb.url, proxy.port),
      DB_POOL_SIZE: '4',
      SHUTDOWN_GRACE_MS: '20000',
      LOG_LEVEL: 'debug',
    }),
    ['--workers', '1'],
  );
  const { workspaceId, key, keyId } = await newWorkspaceKey(fdb.owner);
  const write = (tag: string) => ({
    method: 'POST',
    path: '/v1/contacts',
    idem: `fault-${tag}`,
    body: contactFor(`${tag}-${Date.now()}`),
  });
  assert.equal((await call(server.baseUrl, 'GET', '/v1/contacts?limit=1', { key })).status, 200);

  // A keep-alive connection that is idle when the signal comes: the server must close it.
  const idle = rawConnection(server);
  idle.socket.write(`GET /v1/contacts?limit=1 HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\n\r\n`);
  while (!idle.received().includes('\r\n\r\n')) await sleep(10);

  proxy.delayMs = 150;
  const inFlight = Array.from({ length: 12 }, (_, i) => write(`term-inflight-${i}`));
  const inFlightAnswers = Promise.all(
    inFlight.map((w) => call(server.baseUrl, w.method, w.path, { key, idem: w.idem, body: w.body })),
  );
  // And one whose body is still uploading at the signal: headers sent, body sent after.
  const uploading = write('term-uploading');
  const uploadingBody = JSON.stringify(uploading.body);
  const upload = rawConnection(server);
  upload.socket.write(
    `POST /v1/contacts HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\n` +
      `Idempotency-Key: ${uploading.idem}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(uploadingBody)}\r\n\r\n`,
  );
  // The signal comes once the server has routed all 13 (so none can be mistaken for a late one).
  const deadline = Date.now() + 20_000;
  while (postsReceived(server) < 13 && Date.now() < deadline) await sleep(20);
  assert.equal(postsReceived(server), 13, 'the server received every in-flight request before the signal');
  const signalAt = Date.now();
  server.proc.kill('SIGTERM');
  await sleep(150);
  upload.socket.write(uploadingBody);

  // After the signal: new connections are refused; none of these may have an effect.
  const late = Array.from({ length: 5 }, (_, i) => write(`term-late-${i}`));
  const lateAnswers: Answer[] = [];
  for (const w of late)
    lateAnswers.push(await call(server.baseUrl, w.method, w.path, { key, idem: w.idem, body: w.body }));

  const answers = await inFlightAnswers;
  const exitCode = await server.exited;
  const exitedAt = Date.now();
  const idleClosedAt = await idle.closed;
  await upload.closed;

  // In flight: every one answered 201, told to close the connection, and is stored.
  assert.deepEqual(
    answers.map((a) => a.status),
    inFlight.map(() => 201),
    `in-flight answers: ${answers.map((a) => a.status || a.error).join(', ')}`,
  );
  for (const a of answers) assert.equal(a.headers.connection, 'close');
  assert.ok(
    answers.some((a) => a.endedAt > signalAt + 200),
    'some in-flight requests were still running well after the signal',
  );
  const uploaded = upload.received();
  assert.match(uploaded, /^HTTP\/1\.1 201 /, `the upload in flight at the signal: ${uploaded.split('\r\n')[0]}`);
  const uploadedId = (JSON.parse(uploaded.slice(uploaded.indexOf('\r\n\r\n') + 4)) as { data: { id: string } }).data.id;
  // Refused: no HTTP answer at all (the listening socket is closed); never a success.
  for (const a of lateAnswers) {
    assert.ok(a.status === 0 || a.status === 503, `a request after SIGTERM got ${a.status}`);
    if (a.status === 0) assert.equal(a.error, 'ECONNREFUSED');
  }
  assert.equal(exitCode, 0, `exit code ${exitCode}: ${server.output().stderr}`);
  // The idle keep-alive connection was closed without an answer, long before the process ended.
  assert.equal(idle.received().match(/HTTP\/1\.1 /g)?.length, 1, 'the idle connection got no second answer');
  assert.ok(idleClosedAt < signalAt + 1_000, `idle connection closed ${idleClosedAt - signalAt} ms after the signal`);

  let stored = await contactsByEmail(fdb.db, workspaceId);
  inFlight.forEach((w, i) => assert.deepEqual(stored.get(w.body.email), [answers[i]!.json.data.id], w.idem));
  assert.deepEqual(stored.get(uploading.body.email), [uploadedId]);
  for (const w of late) assert.equal(stored.has(w.body.email), false, `${w.idem} was refused and had no effect`);
  // The usage trail buffered in memory was flushed before exit: two GETs and the 13 writes.
  const { rows: usage } = await fdb.db.query<{ n: number }>(
    'SELECT coalesce(sum(requests), 0)::int AS n FROM api_key_usage WHERE key_id = $1',
    [keyId],
  );
  assert.equal(usage[0]!.n, 15, 'usage counted by the stopped process is stored');

  // Another process takes over: the refused writes are created once, the acknowledged ones replay.
  proxy.delayMs = 0;
  const next = await startServer(serverEnv({ DATABASE_URL: throughProxy(fdb.url, proxy.port) }), ['--workers', '1']);
  for (const [i, w] of [...inFlight, uploading].entries()) {
    const again = await retryUntilDone(next.baseUrl, key, w);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.json.data.id, i < inFlight.length ? answers[i]!.json.data.id : uploadedId);
  }
  for (const w of late) assert.equal((await retryUntilDone(next.baseUrl, key, w)).status, 201);
  stored = await contactsByEmail(fdb.db, workspaceId);
  for (const w of [...inFlight, uploading, ...late]) assert.equal(stored.get(w.body.email)?.length, 1, w.idem);
  assert.equal([...stored.values()].flat().length, inFlight.length + 1 + late.length);
  await stopServer(next);

  report(t, {
    inFlightAtSignal: inFlight.length + 1,
    inFlightCompleted: answers.filter((a) => a.status === 201).length + 1,
    lastInFlightAnsweredAfterSignalMs: Math.max(...answers.map((a) => a.endedAt)) - signalAt,
    refusedAfterSignal: lateAnswers.map((a) => a.error ?? a.status),
    exitCode,
    exitAfterSignalMs: exitedAt - signalAt,
    idleKeepAliveClosedAfterMs: idleClosedAt - signalAt,
  });
});

test('SIGTERM: a request still arriving at the signal is refused: no answer, or a 503 with the error object', async () => {
  const server = await startServer(serverEnv({ DATABASE_URL: fdb.url, SHUTDOWN_GRACE_MS: '20000' }), [
    '--workers',
    '1',
  ]);
  const { key } = await newWorkspaceKey(fdb.owner);
  assert.equal((await call(server.baseUrl, 'GET', '/v1/contacts?limit=1', { key })).status, 200);
  // Its request line has arrived, its headers have not: the connection is busy, so it stays open.
  const arriving = rawConnection(server);
  await arriving.connected;
  arriving.socket.write('GET /v1/contacts?limit=1 HTTP/1.1\r\nHost: test\r\n');
  await sleep(200);
  server.proc.kill('SIGTERM');
  await sleep(300);
  arriving.socket.write(`Authorization: Bearer ${key}\r\n\r\n`);
  await arriving.closed;
  assert.equal(await server.exited, 0);

  // Refused: closed without an answer, or answered 503 as every error of this API is answered.
  const text = arriving.received();
  if (text === '') return;
  const head = text.slice(0, text.indexOf('\r\n\r\n')).toLowerCase();
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  assert.match(head, /^http\/1\.1 503 /, 'refused with 503');
  // As every error of this API (docs/api-conventions.md, Errors): the error object, a request id,
  // Retry-After on a 503, no caching.
  const requestId = /^x-request-id: (.+)$/m.exec(head)?.[1];
  assert.ok(/^retry-after: \d+$/m.test(head), `Retry-After on the 503; the answer was:\n${text}`);
  assert.ok(requestId, `X-Request-Id on the 503; the answer was:\n${text}`);
  assert.match(head, /^cache-control: no-store$/m);
  const json = JSON.parse(body) as { error?: Record<string, unknown> };
  assert.deepEqual(Object.keys(json), ['error'], body);
  assert.equal(json.error?.type, 'api_error', body);
  assert.equal(json.error?.code, 'service_unavailable', body);
  assert.equal(json.error?.request_id?.toString().toLowerCase(), requestId, body);
});
