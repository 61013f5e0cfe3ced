// A body over the limit is refused with 413 before it is read. The refusal must reach the client:
// answering and closing at once, with the client's unread bytes in the buffer, makes the kernel
// reset the connection, and fetch reports that reset instead of the answer about one time in five.
// The server runs in a process of its own here, as a user runs it: in the test's own process the
// timing that exposes the reset does not occur.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { LINGER_LIMITS } from '../src/http/lingering-close.js';
import { contactBody, idem } from './harness.js';
import { cleanUpProcesses, cli, startServer, storeEnv, tempDir, type ServerProcess } from './processes.js';

const run = promisify(execFile);

let server: ServerProcess;
let key: string;

before(async () => {
  const env = storeEnv(tempDir());
  const json = async (args: string[]) => {
    const r = await cli([...args, '--json'], env);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Record<string, string>;
  };
  const workspace = await json(['workspaces', 'create', '--name', 'Oversized bodies']);
  key = (await json(['keys', 'create', '--workspace', workspace.id!, '--scopes', 'contacts:write', '--name', 'k']))
    .key!;
  server = await startServer(env);
});
after(cleanUpProcesses);

test('an oversized body gets its 413 every time, never a reset, sized or chunked', async () => {
  const huge = JSON.stringify(contactBody({ origin: 'x'.repeat(2_000_000) }));
  const failures: string[] = [];
  for (let i = 0; i < 60; i += 1) {
    const body =
      i % 3 === 2
        ? new ReadableStream({
            start(controller) {
              for (let at = 0; at < huge.length; at += 256 * 1024) {
                controller.enqueue(Buffer.from(huge.slice(at, at + 256 * 1024)));
              }
              controller.close();
            },
          })
        : huge;
    try {
      const res = await fetch(`${server.baseUrl}/v1/contacts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idem() },
        body,
        duplex: 'half',
      });
      const answer = (await res.json()) as { error?: { code?: string } };
      if (res.status !== 413 || answer.error?.code !== 'payload_too_large') failures.push(`${i}: ${res.status}`);
    } catch (err) {
      failures.push(`${i}: ${String((err as Error).cause ?? err)}`);
    }
  }
  assert.deepEqual(failures, []);
});

test('a body announced beyond what is read of a refused one is refused at once, the connection closed', async () => {
  const answer = await new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
    const req = httpRequest(`${server.baseUrl}/v1/contacts`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': String(LINGER_LIMITS.bytes + 1),
        'idempotency-key': idem(),
      },
    });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, connection: res.headers.connection });
      req.destroy();
    });
    req.on('error', reject);
    req.write('{"name":'); // and nothing more: the answer must not wait for the rest
  });
  assert.deepEqual(answer, { status: 413, connection: 'close' });
});

test('what follows a refused body counts toward the bound too: a flood behind it is cut', async () => {
  // Sent by Python's blocking socket, as one client that reproduced it did: headers and body at
  // once, then bytes no request owns, for as long as the connection stays open (up to 8 s). The
  // reset that a cut gives that client is what is measured.
  const port = new URL(server.baseUrl).port;
  const script = `
import socket, time
s = socket.create_connection(('127.0.0.1', ${port}))
s.sendall(b"POST /v1/contacts HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer ${key}\\r\\nContent-Type: application/json\\r\\nIdempotency-Key: ${idem()}\\r\\nContent-Length: 2097152\\r\\n\\r\\n" + b"a" * 2097152)
started = time.time(); sent = 0
try:
    while time.time() - started < 8:
        s.sendall(b"\\x00garbage" * 8 * 1024); sent += 64 * 1024
    print("open", sent, round((time.time() - started) * 1000))
except OSError:
    print("cut", sent, round((time.time() - started) * 1000))
`;
  const { stdout } = await run('python3', ['-c', script]);
  const [outcome, sent, ms] = stdout.trim().split(' ');
  assert.equal(outcome, 'cut', stdout);
  // Within the bound, give or take what was in flight in the buffers when it was crossed; and
  // for what it sent, not by the time bound (10 s), which would cut a silent client too.
  assert.ok(Number(sent) < LINGER_LIMITS.bytes + 8 * 1024 * 1024, `${sent} bytes were sent after the body`);
  assert.ok(Number(ms) < LINGER_LIMITS.milliseconds / 2, `cut after ${ms} ms`);
  const after = await fetch(`${server.baseUrl}/healthz`);
  assert.equal(after.status, 200);
});
