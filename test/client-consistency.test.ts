// Read-your-writes in the typed client (clients/typescript): the greatest Consistency-Position of the
// answers is kept and sent on every later request (retries included), garbage and older tokens are
// ignored, the token can be read, set and handed to another client, and `readYourWrites: false`
// turns it all off. A fake API on node:http plays a deployment with read replicas; no real server.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  createWorkspaceApiClient,
  isConsistencyPosition,
  type WorkspaceApiClientOptions,
} from '../clients/typescript/src/index.js';

/** The token of the n-th write, as the service formats them: "1." and 16 lowercase hex digits. */
const token = (n: number) => `1.${n.toString(16).padStart(16, '0')}`;

interface Seen {
  method: string;
  path: string;
  /** the Consistency-Position header the request carried (null: none) */
  token: string | null;
}

/** One scripted answer of the fake; without one, writes get the next token and reads none. */
interface Answer {
  status?: number;
  /** Consistency-Position header of the answer (null: none) */
  token?: string | null;
  headers?: Record<string, string>;
  /** ms before answering */
  delay?: number;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const fake = {
  baseUrl: '',
  seen: [] as Seen[],
  script: [] as Answer[],
  writes: 0,
};

const server = createServer((request: IncomingMessage, response: ServerResponse) => {
  request.resume();
  request.on('end', () => {
    const header = request.headers['consistency-position'];
    fake.seen.push({
      method: request.method!,
      path: new URL(request.url!, 'http://fake').pathname,
      token: typeof header === 'string' ? header : null,
    });
    const write = WRITES.has(request.method!);
    const answer = fake.script.shift() ?? {};
    const status = answer.status ?? 200;
    const headers: Record<string, string> = { 'content-type': 'application/json', ...answer.headers };
    const given = answer.token === undefined ? (write && status < 300 ? token(++fake.writes) : null) : answer.token;
    if (given !== null) headers['consistency-position'] = given;
    const body =
      status >= 300
        ? { error: { type: 'api_error', code: 'service_unavailable', message: 'simulated', request_id: 'req_fake' } }
        : request.method === 'GET' && !/\/contacts\/[^/]+$/.test(request.url!)
          ? { data: [], page: { limit: 10, has_more: false, next_cursor: null } }
          : { data: { id: 'c1', name: 'Ana' } };
    setTimeout(() => {
      response.writeHead(status, headers);
      response.end(JSON.stringify(body));
    }, answer.delay ?? 0);
  });
});

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  fake.seen = [];
  fake.script = [];
});

const client = (options: Partial<WorkspaceApiClientOptions> = {}) =>
  createWorkspaceApiClient({
    baseUrl: fake.baseUrl,
    apiKey: 'wsk_test.key',
    retryDelay: 1,
    retryJitter: 1,
    ...options,
  });

type Api = ReturnType<typeof client>;

const list = (api: Api) => api.v2.GET('/v2/contacts', { params: { query: { limit: 10 } } });
const create = (api: Api) => api.v2.POST('/v2/contacts', { body: { name: 'Ana', email: 'ana@example.com' } });
const update = (api: Api) =>
  api.v2.PATCH('/v2/contacts/{id}', { params: { path: { id: 'c1' } }, body: { name: 'Ana Souza' } });
const remove = (api: Api) => api.v2.DELETE('/v2/contacts/{id}', { params: { path: { id: 'c1' } } });

/** The tokens the fake received, in order. */
const sentTokens = () => fake.seen.map((s) => s.token);

describe('read-your-writes', () => {
  test('the greatest token received is sent on every later read and write', async () => {
    fake.writes = 0x16b3740;
    const api = client();
    assert.equal(api.consistencyPosition, undefined);
    await list(api); // nothing received yet: no header
    await create(api); // answered token(…41)
    await list(api);
    await update(api); // …42
    fake.script.push({ token: token(0x16b3700) }); // an older write's token, answered late
    await create(api);
    await list(api);
    await remove(api); // …43
    await list(api);
    assert.deepEqual(sentTokens(), [
      null,
      null,
      token(0x16b3741),
      token(0x16b3741),
      token(0x16b3742),
      token(0x16b3742), // the older token did not lower it
      token(0x16b3742),
      token(0x16b3743),
    ]);
    assert.equal(api.consistencyPosition, token(0x16b3743));
    assert.equal(api.consistencyPosition, '1.00000000016b3743');
  });

  test('malformed tokens in answers are ignored', async () => {
    fake.writes = 10;
    const api = client();
    await create(api); // token(11)
    const garbage = [
      'garbage',
      '2.0000000000000000', // another format compares greater: still ignored
      '1.FFFFFFFFFFFFFFFF', // upper case
      '1.ffffffffffffffff0', // 17 digits
      '1.fffffffffffffff', // 15 digits
      '1.ffffffffffffffff, 1.ffffffffffffffff', // the header twice, folded
      '',
    ];
    for (const value of garbage) {
      fake.script.push({ token: value });
      await create(api);
    }
    await list(api);
    assert.equal(api.consistencyPosition, token(11));
    assert.deepEqual(sentTokens(), [null, ...garbage.map(() => token(11)), token(11)]);
  });

  test('calls in flight at once: the greatest token wins, whatever the order of the answers', async () => {
    const api = client();
    // Answers arrive in another order than their tokens: the greatest comes back first.
    fake.script.push(
      { token: token(0x300), delay: 10 },
      { token: token(0x500), delay: 1 },
      { token: token(0x100), delay: 40 },
      { token: token(0x200), delay: 25 },
    );
    await Promise.all([create(api), create(api), create(api), create(api)]);
    assert.equal(api.consistencyPosition, token(0x500));
    await list(api);
    assert.equal(fake.seen.at(-1)!.token, token(0x500));
  });

  test('a retried request carries the token, and the retry answer raises it', async () => {
    fake.writes = 0x20;
    const api = client();
    await create(api); // token(0x21)
    // A read answered 503 once (Retry-After: 0), then 200: both attempts carry the token.
    fake.script.push({ status: 503, headers: { 'retry-after': '0' } });
    const read = await list(api);
    assert.equal(read.response.status, 200);
    // A write answered 503 once: its retry carries the token, and the retry's token is kept.
    fake.script.push({ status: 503, headers: { 'retry-after': '0' } });
    const written = await update(api);
    assert.equal(written.response.status, 200);
    await list(api);
    assert.deepEqual(
      fake.seen.map((s) => `${s.method} ${s.token}`),
      [
        `POST null`,
        `GET ${token(0x21)}`,
        `GET ${token(0x21)}`, // the retry
        `PATCH ${token(0x21)}`,
        `PATCH ${token(0x21)}`, // the retry
        `GET ${token(0x22)}`,
      ],
    );
  });

  test('consistencyPosition can be read, set, cleared and handed to another client', async () => {
    fake.writes = 0x16b3747;
    const writer = client();
    await create(writer);
    assert.equal(writer.consistencyPosition, '1.00000000016b3748');

    // Another client (another process, say) reads after the writer's writes.
    const reader = client();
    reader.consistencyPosition = writer.consistencyPosition;
    assert.equal(reader.consistencyPosition, '1.00000000016b3748');
    await list(reader);
    assert.equal(fake.seen.at(-1)!.token, '1.00000000016b3748');

    // Setting replaces; undefined clears.
    reader.consistencyPosition = token(5);
    await list(reader);
    assert.equal(fake.seen.at(-1)!.token, token(5));
    reader.consistencyPosition = undefined;
    assert.equal(reader.consistencyPosition, undefined);
    await list(reader);
    assert.equal(fake.seen.at(-1)!.token, null);

    // A malformed value throws and changes nothing.
    for (const bad of ['', 'garbage', '1.00000000016B3748', '1.00000000016b374', '1.00000000016b3748\n', 42, null]) {
      assert.throws(
        () => {
          writer.consistencyPosition = bad as string;
        },
        (error: unknown) =>
          error instanceof TypeError && /consistencyPosition must be a Consistency-Position/.test(error.message),
        `consistencyPosition = ${JSON.stringify(bad)}`,
      );
    }
    assert.equal(writer.consistencyPosition, '1.00000000016b3748');
    assert.ok(isConsistencyPosition('1.00000000016b3748'));
    assert.ok(!isConsistencyPosition('1.00000000016b3748 '));
  });

  test('a Consistency-Position given to a call is sent as it is', async () => {
    const api = client();
    api.consistencyPosition = token(9);
    await api.v2.GET('/v2/contacts', {
      params: { query: { limit: 10 } },
      headers: { 'Consistency-Position': token(3) },
    });
    assert.equal(fake.seen.at(-1)!.token, token(3));
  });

  test('readYourWrites: false neither keeps nor sends tokens', async () => {
    fake.writes = 0x40;
    const api = client({ readYourWrites: false });
    await create(api);
    await list(api);
    await update(api);
    await list(api);
    assert.deepEqual(sentTokens(), [null, null, null, null]);
    assert.equal(api.consistencyPosition, undefined);
    api.consistencyPosition = token(7); // checked, but not kept
    assert.equal(api.consistencyPosition, undefined);
    await list(api);
    assert.equal(fake.seen.at(-1)!.token, null);
    assert.throws(() => {
      api.consistencyPosition = 'garbage';
    }, TypeError);

    // true is the default, and can be said.
    const on = client({ readYourWrites: true });
    await create(on);
    await list(on);
    assert.equal(fake.seen.at(-1)!.token, token(0x43));
  });

  test('readYourWrites is checked when the client is built', () => {
    for (const value of ['false', 0, 1, null, {}]) {
      assert.throws(
        () => client({ readYourWrites: value as unknown as boolean }),
        (error: unknown) =>
          error instanceof TypeError &&
          /^createWorkspaceApiClient: readYourWrites must be a boolean, not /.test(error.message),
        `readYourWrites: ${JSON.stringify(value)}`,
      );
    }
    assert.doesNotThrow(() => client({ readYourWrites: undefined }));
  });
});
