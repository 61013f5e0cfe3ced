// The typed client (clients/typescript) against a real server: typed calls of v1 and v2, pages,
// the events helper, Idempotency-Keys it adds itself, retries (lost responses, 429, 409 in use,
// 503, network errors) that never write twice, errors it throws, and types that match the
// published documents.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { generate, generatedUrl, VERSIONS } from '../clients/typescript/generate.js';
import {
  batchUpsertContacts,
  createWorkspaceApiClient,
  deleteContacts,
  RepeatedExternalIdsError,
  eventPages,
  pages,
  paginate,
  readEvents,
  unwrap,
  WorkspaceApiError,
  type Contact,
  type ContactCreate,
  type WorkspaceApiClientOptions,
  type WorkspaceEvent,
} from '../clients/typescript/src/index.js';
import { contactBody, sleep, STORE, type TestWorkspace } from './harness.js';
import { useTestServer } from './test-server.js';

let ws: TestWorkspace;
const server = useTestServer({
  setup: async () => {
    ws = await server.workspace({ rateLimitPerMinute: 1_000_000 });
  },
});

const client = (options: Partial<WorkspaceApiClientOptions> = {}) =>
  createWorkspaceApiClient({ baseUrl: server.baseUrl, apiKey: ws.key, retryDelay: 10, retryJitter: 10, ...options });

/** A fetch that records every attempt (method, path, Idempotency-Key) and lets a test intercept it. */
function recordingFetch(intercept?: (request: Request, attempt: number) => Promise<Response | undefined>) {
  const attempts: { method: string; path: string; key: string | null; status?: number }[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    const attempt: (typeof attempts)[number] = {
      method: request.method,
      path: new URL(request.url).pathname,
      key: request.headers.get('idempotency-key'),
    };
    attempts.push(attempt);
    const response = (await intercept?.(request, attempts.length)) ?? (await globalThis.fetch(request));
    attempt.status = response.status;
    return response;
  };
  return { fetch, attempts };
}

/** An error answer shaped as the server makes them. */
function errorResponse(status: number, type: string, code: string, headers: Record<string, string> = {}): Response {
  const requestId = `req_fake${randomUUID().slice(0, 8)}`;
  return new Response(JSON.stringify({ error: { type, code, message: `simulated ${code}`, request_id: requestId } }), {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
  });
}

/** A valid create body, typed as the client wants it. */
const newContact = (overrides: Omit<ContactCreate, 'email'> = {}): ContactCreate & { email: string } => ({
  ...(contactBody() as ContactCreate & { email: string }),
  ...overrides,
});

async function contactCount(email: string): Promise<number> {
  const { rows } = await server.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND email = $2',
    [ws.id, email],
  );
  return rows[0]!.n;
}

describe('typed calls', () => {
  test('create, get, update, upsert and list through v1 and v2', async () => {
    const api = client();
    const body = newContact({ status: 'talking' });
    const created = await api.v2.POST('/v2/contacts', { body });
    assert.equal(created.response.status, 201);
    const contact: Contact = (await unwrap(created)).data;
    assert.equal(contact.email, body.email);
    assert.equal(contact.status, 'talking');

    const viaV1 = await unwrap(api.v1.GET('/v1/contacts/{id}', { params: { path: { id: contact.id } } }));
    assert.deepEqual(viaV1.data, contact);

    const updated = await unwrap(
      api.v2.PATCH('/v2/contacts/{id}', { params: { path: { id: contact.id } }, body: { name: 'Ana Renamed' } }),
    );
    assert.equal(updated.data.name, 'Ana Renamed');
    assert.ok(updated.data.updated_at > contact.updated_at);

    // "/" in an external id is percent-encoded by the client.
    const externalId = `hubspot/${randomUUID().slice(0, 8)}`;
    const first = await api.v1.PUT('/v1/contacts/external/{external_id}', {
      params: { path: { external_id: externalId } },
      body: { name: 'Upserted', phone: '+5511911112222' },
    });
    assert.equal(first.response.status, 201);
    const second = await api.v1.PUT('/v1/contacts/external/{external_id}', {
      params: { path: { external_id: externalId } },
      body: { status: 'meeting' },
    });
    assert.equal(second.response.status, 200);
    assert.equal((await unwrap(second)).data.id, (await unwrap(first)).data.id);
    assert.equal((await unwrap(second)).data.external_id, externalId);

    const meeting = await unwrap(api.v1.GET('/v1/contacts', { params: { query: { status: 'meeting', limit: 100 } } }));
    assert.deepEqual(
      meeting.data.map((c) => c.external_id),
      [externalId],
    );
    const stage = await unwrap(api.v2.GET('/v2/pipeline/stages', { params: { query: { limit: 1 } } }));
    assert.equal(stage.data[0]?.id, 'cold_list');
  });

  test('calls, bodies and answers are typed from the documents', () => {
    const api = client();
    // Never called: these lines only have to (not) compile, which `npm run typecheck` checks.
    const compileOnly = async () => {
      // @ts-expect-error: no such path in v2
      await api.v2.GET('/v2/nothing');
      // @ts-expect-error: v1 has no events feed
      await api.v1.GET('/v2/events');
      // @ts-expect-error: status is one of the pipeline stages
      await api.v2.POST('/v2/contacts', { body: { name: 'x', email: 'x@example.com', status: 'won' } });
      // @ts-expect-error: the path parameter is required
      await api.v2.GET('/v2/contacts/{id}', {});
      const { data } = await unwrap(api.v2.GET('/v2/workspace'));
      // @ts-expect-error: the workspace has no such property
      return data.billing;
    };
    assert.equal(typeof compileOnly, 'function');
  });

  test('the options are checked when the client is built, not at its first call', () => {
    const build = (options: Record<string, unknown>) => () =>
      createWorkspaceApiClient({ baseUrl: server.baseUrl, apiKey: ws.key, ...options });
    const refused: [Record<string, unknown>, ErrorConstructor, RegExp][] = [
      [{ baseUrl: undefined }, TypeError, /baseUrl must be an absolute http\(s\) URL .*not undefined/],
      [{ baseUrl: '' }, TypeError, /baseUrl must be .*not ""/],
      [{ baseUrl: 'api.example.com' }, TypeError, /baseUrl must be .*not "api\.example\.com"/],
      [{ baseUrl: 'ftp://api.example.com' }, TypeError, /baseUrl must be an absolute http\(s\) URL/],
      [{ baseUrl: 'http://127.0.0.1:3000?x=1' }, TypeError, /baseUrl must have no query or fragment/],
      [{ baseUrl: 'http://127.0.0.1:3000/#f' }, TypeError, /baseUrl must have no query or fragment/],
      [{ baseUrl: 'http://user:hunter2@127.0.0.1:3000' }, TypeError, /^(?!.*hunter2).*must not carry credentials/],
      [{ apiKey: undefined }, TypeError, /apiKey must be a string .*not undefined/],
      [{ apiKey: 42 }, TypeError, /apiKey must be a string .*not number/],
      [{ apiKey: '' }, TypeError, /apiKey must be a non-empty string of visible ASCII/],
      [{ apiKey: 'wsk_a\nX-Injected: 1' }, TypeError, /apiKey must be a non-empty string of visible ASCII/],
      [{ fetch: 'fetch' }, TypeError, /fetch must be a function/],
      [{ retryDelay: -1 }, RangeError, /retryDelay must be a finite number of 0 or more, not -1/],
      [{ retryDeadline: -5 }, RangeError, /retryDeadline must be a finite number of 0 or more, not -5/],
      [{ retryDeadline: Number.POSITIVE_INFINITY }, RangeError, /retryDeadline must be a finite number/],
      [{ retryJitter: '10' }, RangeError, /retryJitter must be a finite number/],
      [{ maxRetries: 1.5 }, RangeError, /maxRetries must be a whole number/],
    ];
    for (const [options, Kind, message] of refused) {
      assert.throws(build(options), (error: unknown) => {
        assert.ok(error instanceof Kind, `${JSON.stringify(options)}: ${String(error)}`);
        assert.match(error.message, /^createWorkspaceApiClient: /);
        assert.match(error.message, message);
        return true;
      });
    }
    // The key is never part of a message.
    assert.throws(build({ apiKey: `${ws.key}\n` }), (error: unknown) => !String(error).includes(ws.key));
    assert.doesNotThrow(build({ baseUrl: 'https://api.example.com/prefix', maxRetries: 0, retryDeadline: 0 }));
  });

  test('every write carries an Idempotency-Key of its own; one given by the caller is kept', async () => {
    const { fetch, attempts } = recordingFetch();
    const api = client({ fetch });
    await unwrap(api.v2.POST('/v2/contacts', { body: newContact() }));
    await unwrap(api.v1.POST('/v1/contacts', { body: newContact() }));
    await unwrap(api.v2.GET('/v2/contacts', { params: { query: { limit: 1 } } }));
    const own = `caller-${randomUUID()}`;
    await unwrap(api.v2.POST('/v2/contacts', { params: { header: { 'Idempotency-Key': own } }, body: newContact() }));
    const [a, b, read, given] = attempts;
    assert.match(a!.key!, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.match(b!.key!, /^[0-9a-f-]{36}$/);
    assert.notEqual(a!.key, b!.key);
    assert.equal(read!.key, null);
    assert.equal(given!.key, own);
  });
});

describe('pagination', () => {
  test('paginate() yields every item across pages; pages() yields the envelopes', async () => {
    const own = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    const api = client({ apiKey: own.key });
    const created: string[] = [];
    for (let i = 0; i < 7; i++)
      created.push((await unwrap(api.v2.POST('/v2/contacts', { body: newContact() }))).data.id);

    const items: Contact[] = [];
    for await (const contact of paginate((cursor) =>
      api.v2.GET('/v2/contacts', { params: { query: { limit: 3, cursor } } }),
    )) {
      items.push(contact);
    }
    assert.deepEqual(items.map((c) => c.id).sort(), [...created].sort());

    const envelopes = [];
    for await (const page of pages((cursor) =>
      api.v1.GET('/v1/contacts', { params: { query: { limit: 3, cursor } } }),
    )) {
      envelopes.push(page);
    }
    assert.deepEqual(
      envelopes.map((p) => [p.data.length, p.page.has_more]),
      [
        [3, true],
        [3, true],
        [1, false],
      ],
    );
    assert.equal(envelopes.at(-1)!.page.next_cursor, null);
  });

  test('pages() and paginate() resume a walk from a stored next_cursor', async () => {
    const own = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    const api = client({ apiKey: own.key });
    for (let i = 0; i < 5; i++) await unwrap(api.v2.POST('/v2/contacts', { body: newContact() }));
    const list = (cursor: string | undefined) =>
      api.v2.GET('/v2/contacts', { params: { query: { limit: 2, cursor } } });
    const all: string[] = [];
    for await (const contact of paginate(list)) all.push(contact.id);
    assert.equal(all.length, 5);

    // A first run stops after its first page, keeping the page's next_cursor ...
    let stored: string | null = null;
    for await (const page of pages(list)) {
      stored = page.page.next_cursor;
      break;
    }
    assert.ok(stored);
    // ... and a later run goes on from there: the rest of the list, nothing twice.
    const resumed: string[] = [];
    for await (const page of pages(list, stored)) resumed.push(...page.data.map((c) => c.id));
    assert.deepEqual(resumed, all.slice(2));
    const items: string[] = [];
    for await (const contact of paginate(list, stored)) items.push(contact.id);
    assert.deepEqual(items, all.slice(2));
  });

  test('an error answer stops the walk with a WorkspaceApiError', async () => {
    const api = client();
    const walk = paginate((cursor) => api.v2.GET('/v2/contacts', { params: { query: { limit: 500, cursor } } }));
    await assert.rejects(walk.next(), (error: unknown) => {
      assert.ok(error instanceof WorkspaceApiError);
      assert.equal(error.status, 400);
      assert.equal(error.code, 'invalid_query_parameter');
      assert.equal(error.details?.parameter, 'limit');
      return true;
    });
  });
});

describe('events helper', () => {
  /** Events become visible once older transactions end; other test files share the database. */
  async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const value = await read();
      if (done(value) || Date.now() > deadline) return value;
      await sleep(50);
    }
  }

  test('eventPages() and readEvents() follow the feed from `after` and end with the last id', async () => {
    const own = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    const api = client({ apiKey: own.key });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await unwrap(api.v2.POST('/v2/contacts', { body: newContact() }))).data.id);

    const readAll = async () => {
      const seen: WorkspaceEvent[] = [];
      const last = await readEvents(api.v2, { resource_type: 'contact', limit: 2 }, (e) => void seen.push(e));
      return { seen, last };
    };
    const { seen, last } = await eventually(readAll, (r) => r.seen.length === 5);
    assert.deepEqual(
      seen.map((e) => [e.type, e.resource_id]),
      ids.map((id) => ['contact.created', id]),
    );
    assert.equal(last, seen.at(-1)!.id);

    const walk = eventPages(api.v2, { after: last, resource_type: 'contact' });
    const nothing = await walk.next();
    assert.deepEqual(nothing.value, { events: [], lastEventId: last });
    assert.deepEqual(await walk.next(), { done: true, value: last });

    await unwrap(api.v2.PATCH('/v2/contacts/{id}', { params: { path: { id: ids[0]! } }, body: { name: 'Changed' } }));
    const next = await eventually(
      async () => {
        const events: WorkspaceEvent[] = [];
        const end = await readEvents(api.v2, { after: last, type: 'contact.updated' }, (e) => void events.push(e));
        return { events, end };
      },
      (r) => r.events.length === 1,
    );
    const updated = next.events[0]!;
    assert.equal(updated.resource_id, ids[0]);
    // Narrowed on type, the data is a Contact (or, once the contact is deleted, its tombstone).
    assert.ok(updated.type === 'contact.updated' && 'name' in updated.data, JSON.stringify(updated));
    assert.equal(updated.data.name, 'Changed');
    assert.equal(next.end, next.events[0]!.id);
  });
});

describe('retries', () => {
  test('a write whose answer was lost is sent again with the same key and has one effect', async () => {
    const { fetch, attempts } = recordingFetch(async (request, n) => {
      if (n !== 1) return undefined;
      await (await globalThis.fetch(request)).text(); // the server did the write ...
      throw new TypeError('fetch failed'); // ... and the answer never arrived
    });
    const api = client({ fetch });
    const body = newContact();
    const result = await api.v2.POST('/v2/contacts', { body });
    assert.equal(result.response.status, 201);
    assert.equal(result.response.headers.get('idempotent-replayed'), 'true');
    assert.equal(attempts.length, 2);
    assert.equal(attempts[0]!.key, attempts[1]!.key);
    assert.equal(await contactCount(body.email), 1);
  });

  test('429 with Retry-After is waited for, then the same request is sent again', async () => {
    const { fetch, attempts } = recordingFetch(async (_request, n) =>
      n === 1 ? errorResponse(429, 'rate_limit_error', 'rate_limit_exceeded', { 'retry-after': '1' }) : undefined,
    );
    const api = client({ fetch });
    const body = newContact();
    const started = performance.now();
    const { data } = await unwrap(api.v2.POST('/v2/contacts', { body }));
    assert.ok(performance.now() - started >= 950, 'waited Retry-After');
    assert.equal(data.email, body.email);
    assert.deepEqual(
      attempts.map((a) => a.status),
      [429, 201],
    );
    assert.equal(attempts[0]!.key, attempts[1]!.key);
    assert.equal(await contactCount(body.email), 1);
  });

  test('with the default options, the longest Retry-After the service sends (60 s) is waited out, not thrown', async () => {
    const { fetch, attempts } = recordingFetch(async (_request, n) =>
      n === 1 ? errorResponse(429, 'rate_limit_error', 'rate_limit_exceeded', { 'retry-after': '60' }) : undefined,
    );
    const api = client({ fetch });
    // Waiting a minute in a test is too long: the call is aborted after 1.5 s. A client that does
    // not wait would have thrown the 429 at once; one that waits is still waiting, and aborting
    // interrupts its wait.
    const abort = AbortSignal.timeout(1_500);
    const started = performance.now();
    await assert.rejects(api.v2.GET('/v2/contacts', { signal: abort }), (error: unknown) => {
      assert.ok(!(error instanceof WorkspaceApiError), String(error));
      return true;
    });
    assert.ok(performance.now() - started >= 1_400, 'it was waiting when aborted');
    assert.equal(attempts.length, 1);
  });

  test('a real rate limit whose Retry-After ends after the deadline is thrown at once, with retryAfter', async () => {
    const limited = await ws.newKey(['contacts:read', 'contacts:write'], { rateLimitPerMinute: 1 });
    const { fetch, attempts } = recordingFetch();
    const api = client({ apiKey: limited.key, fetch, retryDeadline: 2_000 });
    await unwrap(api.v1.GET('/v1/contacts', { params: { query: { limit: 1 } } }));
    const started = performance.now();
    await assert.rejects(unwrap(api.v1.GET('/v1/contacts', { params: { query: { limit: 1 } } })), (error: unknown) => {
      assert.ok(error instanceof WorkspaceApiError);
      assert.equal(error.status, 429);
      assert.equal(error.type, 'rate_limit_error');
      assert.equal(error.code, 'rate_limit_exceeded');
      assert.ok(
        error.retryAfter !== undefined && error.retryAfter > 2 && error.retryAfter <= 60,
        `${error.retryAfter}`,
      );
      assert.match(error.requestId ?? '', /^req_/);
      assert.equal(typeof error.details?.reset_at, 'string');
      return true;
    });
    assert.ok(performance.now() - started < 1_000, 'did not wait');
    assert.equal(attempts.length, 2);
  });

  test('409 idempotency_key_in_use is retried until the first request has ended, then replayed', async () => {
    // Simulated (both stores): the first attempt is answered as the server answers a duplicate.
    const simulated = recordingFetch(async (_request, n) =>
      n === 1 ? errorResponse(409, 'idempotency_error', 'idempotency_key_in_use', { 'retry-after': '1' }) : undefined,
    );
    const body = newContact();
    const { data } = await unwrap(client({ fetch: simulated.fetch }).v2.POST('/v2/contacts', { body }));
    assert.equal(data.email, body.email);
    assert.deepEqual(
      simulated.attempts.map((a) => a.status),
      [409, 201],
    );
    assert.equal(simulated.attempts[0]!.key, simulated.attempts[1]!.key);

    // Real (PostgreSQL: PGlite is a single session, where the first request would simply wait):
    // the key's lock is held, as by a first request still running, until the client got its 409.
    if (STORE === 'postgres') {
      const key = `in-use-${randomUUID()}`;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      const holder = server.db.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${ws.id}:${key}`]);
        locked();
        await released;
      });
      await lockTaken;
      const real = recordingFetch(async (request) => {
        const response = await globalThis.fetch(request);
        if (response.status === 409) release();
        return response;
      });
      const again = newContact();
      const result = await client({ fetch: real.fetch }).v2.POST('/v2/contacts', {
        params: { header: { 'Idempotency-Key': key } },
        body: again,
      });
      await holder;
      assert.deepEqual(
        real.attempts.map((a) => a.status),
        [409, 201],
      );
      assert.equal((await unwrap(result)).data.email, again.email);
      assert.equal(await contactCount(again.email), 1);
    }
  });

  test('503 is retried up to maxRetries, then thrown', async () => {
    const { fetch, attempts } = recordingFetch(async () =>
      errorResponse(503, 'api_error', 'service_unavailable', { 'retry-after': '0' }),
    );
    const api = client({ fetch, maxRetries: 2 });
    await assert.rejects(unwrap(api.v2.GET('/v2/workspace')), (error: unknown) => {
      assert.ok(error instanceof WorkspaceApiError);
      assert.equal(error.status, 503);
      assert.equal(error.code, 'service_unavailable');
      assert.equal(error.retryAfter, 0);
      return true;
    });
    assert.equal(attempts.length, 3);
  });

  test('network errors are retried with backoff; the last one is rethrown', async () => {
    const { fetch, attempts } = recordingFetch(async () => {
      throw new TypeError('fetch failed');
    });
    const api = client({ fetch, maxRetries: 2, retryDelay: 5 });
    await assert.rejects(unwrap(api.v2.GET('/v2/workspace')), /fetch failed/);
    assert.equal(attempts.length, 3);

    // A read that fails once, then succeeds.
    const flaky = recordingFetch(async (_request, n) => {
      if (n === 1) throw new TypeError('fetch failed');
      return undefined;
    });
    const { data } = await unwrap(client({ fetch: flaky.fetch }).v2.GET('/v2/workspace'));
    assert.equal(data.id, ws.id);
    assert.equal(flaky.attempts.length, 2);
  });

  test('other 4xx are thrown at once with the fields of the error body', async () => {
    const { fetch, attempts } = recordingFetch();
    const api = client({ fetch });

    // @ts-expect-error the client's types refuse this body too: it carries no email, phone or whatsapp
    await assert.rejects(unwrap(api.v2.POST('/v2/contacts', { body: { name: 'No channel' } })), (error: unknown) => {
      assert.ok(error instanceof WorkspaceApiError);
      assert.equal(error.name, 'WorkspaceApiError');
      assert.equal(error.status, 422);
      assert.equal(error.type, 'validation_error');
      assert.equal(error.code, 'validation_failed');
      assert.match(error.message, /email, phone, whatsapp/);
      assert.ok(Array.isArray(error.details?.errors));
      assert.match(error.requestId ?? '', /^req_/);
      assert.equal(error.retryAfter, undefined);
      return true;
    });

    const missing = '00000000-0000-4000-8000-000000000000';
    await assert.rejects(unwrap(api.v2.GET('/v2/contacts/{id}', { params: { path: { id: missing } } })), {
      name: 'WorkspaceApiError',
      status: 404,
      type: 'not_found',
      code: 'resource_not_found',
    });

    const key = `reused-${randomUUID()}`;
    await unwrap(api.v2.POST('/v2/contacts', { params: { header: { 'Idempotency-Key': key } }, body: newContact() }));
    await assert.rejects(
      unwrap(api.v2.POST('/v2/contacts', { params: { header: { 'Idempotency-Key': key } }, body: newContact() })),
      { status: 409, type: 'idempotency_error', code: 'idempotency_key_reused' },
    );

    await assert.rejects(unwrap(client({ apiKey: 'wsk_nope', fetch }).v2.GET('/v2/workspace')), {
      status: 401,
      type: 'authentication_error',
      code: 'invalid_api_key',
    });

    assert.deepEqual(
      attempts.map((a) => a.status),
      [422, 404, 201, 409, 401],
    );
  });
});

describe('a client under a rate limit', () => {
  test('a 429 holds every call of the client for its Retry-After, then releases them one per 60/N s', async () => {
    // A key of 120 a minute (one request per 0.5 s), whose first answer is a simulated refusal.
    const paced = await ws.newKey(['workspace:read', 'contacts:write'], { rateLimitPerMinute: 120 });
    let refusedAt = 0;
    let refused!: () => void;
    const firstRefused = new Promise<void>((resolve) => (refused = resolve));
    const sentAt: number[] = [];
    const { fetch, attempts } = recordingFetch(async (_request, n) => {
      if (n !== 1) {
        sentAt.push(performance.now());
        return undefined;
      }
      refusedAt = performance.now();
      refused();
      return errorResponse(429, 'rate_limit_error', 'rate_limit_exceeded', {
        'retry-after': '1',
        'ratelimit-limit': '120',
        'ratelimit-remaining': '0',
      });
    });
    const api = client({ apiKey: paced.key, fetch, retryJitter: 0 });
    const first = unwrap(api.v2.POST('/v2/contacts', { body: newContact() }));
    await firstRefused;
    await sleep(200); // the client has read the 429 (a few microtasks) and holds
    // Three more calls start while the first waits: none of them is sent before the hold ends,
    // and the first call, refused first, is released first.
    const others = [1, 2, 3].map(() => unwrap(api.v2.GET('/v2/workspace')));
    await Promise.all([first, ...others]);
    assert.equal(attempts.length, 5);
    assert.deepEqual(
      attempts.map((a) => a.status),
      [429, 201, 200, 200, 200],
    );
    // Release i has its slot 1 s + i × 0.5 s after the 429; its send may come later than its slot
    // (a busy event loop), never earlier (10 ms of timer tolerance). Measured from the 429, not
    // from the send before: one late send would shorten the gap to the next without any slot
    // coming early.
    for (let i = 0; i < sentAt.length; i++) {
      assert.ok(
        sentAt[i]! - refusedAt >= 1000 + i * 500 - 10,
        `release ${i}: ${sentAt[i]! - refusedAt} ms after the 429, before its slot at ${1000 + i * 500} ms`,
      );
    }

    // The key's answers report quota left and no call waits: pacing has ended, two calls in a
    // row are not sent 0.5 s apart (the interval the pacing above kept).
    await unwrap(api.v2.GET('/v2/workspace'));
    await unwrap(api.v2.GET('/v2/workspace'));
    const [last, afterIt] = sentAt.slice(-2) as [number, number];
    assert.ok(afterIt - last < 490, `no longer paced: sent ${afterIt - last} ms apart`);
  });

  test('a 429 is retried until the deadline, whatever maxRetries says; then it is thrown', async () => {
    const { fetch, attempts } = recordingFetch(async () =>
      errorResponse(429, 'rate_limit_error', 'rate_limit_exceeded', { 'retry-after': '0' }),
    );
    const api = client({ fetch, maxRetries: 1, retryDeadline: 300 });
    await assert.rejects(unwrap(api.v2.GET('/v2/workspace')), { status: 429, code: 'rate_limit_exceeded' });
    assert.ok(attempts.length > 2, `${attempts.length} attempts`);
  });

  test('15 parallel writes on a key of 10 a minute all succeed, with at most the first wave refused', async () => {
    // The finest quota a key can have is per minute: a burst of 10 passes, then one per 6 s, so
    // the last of the 15 is written about 30 s after the first. The only slow test of the file.
    const own = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    const limited = await own.newKey(['contacts:read', 'contacts:write'], { rateLimitPerMinute: 10 });
    const { fetch, attempts } = recordingFetch();
    const api = client({ apiKey: limited.key, fetch, retryDeadline: 60_000 });
    const bodies = Array.from({ length: 15 }, () => newContact());
    const created = await Promise.all(bodies.map((body) => unwrap(api.v2.POST('/v2/contacts', { body }))));
    assert.deepEqual(
      created.map((c) => c.data.email),
      bodies.map((b) => b.email),
    );
    const refusals = attempts.filter((a) => a.status === 429).length;
    assert.ok(refusals <= 5, `${refusals} refusals: the released calls were refused again`);
    assert.equal(attempts.filter((a) => a.status === 201).length, 15);
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1',
      [own.id],
    );
    assert.equal(rows[0]!.n, 15);
  });
});

describe('batch upserts', () => {
  test('external_ids sent more than once: every one named with all its places, nothing sent', async () => {
    const simulated = recordingFetch();
    const items = ['a', 'b', 'a', 'c', 'a', 'b'].map((id, n) => ({ external_id: `dup-${id}`, name: `N ${n}` }));
    await assert.rejects(batchUpsertContacts(client({ fetch: simulated.fetch }).v2, items), (error: unknown) => {
      assert.ok(error instanceof RepeatedExternalIdsError);
      assert.ok(error instanceof RangeError);
      assert.deepEqual(error.repeated, [
        { externalId: 'dup-a', indexes: [0, 2, 4] },
        { externalId: 'dup-b', indexes: [1, 5] },
      ]);
      assert.match(error.message, /"dup-a" at items 0, 2, 4; "dup-b" at items 1, 5/);
      return true;
    });
    assert.equal(simulated.attempts.length, 0);
  });
});

describe('deletions', () => {
  test('DELETE calls carry an Idempotency-Key of their own; deleteContacts() sends 100 values a request, in order', async () => {
    const api = client();
    const made = await batchUpsertContacts(
      api.v2,
      Array.from({ length: 130 }, (_, i) => ({
        external_id: `gone-${i}-${randomUUID().slice(0, 6)}`,
        name: `Gone ${i}`,
      })),
    );
    const recorded = recordingFetch();
    const deleting = client({ fetch: recorded.fetch });
    const first = made[0]!.contact;
    const one = await deleting.v2.DELETE('/v2/contacts/{id}', { params: { path: { id: first.id } } });
    assert.equal(one.response.status, 204);
    const second = made[1]!.contact;
    const byExternal = await deleting.v2.DELETE('/v2/contacts/external/{external_id}', {
      params: { path: { external_id: second.external_id! } },
    });
    assert.equal(byExternal.response.status, 204);
    assert.ok(recorded.attempts.every((a) => a.key !== null && a.key.length > 8));

    const ids = made.slice(2, 70).map((r) => r.contact.id);
    const externalIds = [...made.slice(70).map((r) => r.contact.external_id!), second.external_id!];
    const results = await deleteContacts(
      deleting.v2,
      { ids, externalIds },
      { idempotencyKey: `rerun-${randomUUID()}` },
    );
    assert.equal(results.length, ids.length + externalIds.length);
    assert.deepEqual(
      results.map((r) => r.result),
      [...Array<string>(ids.length + externalIds.length - 1).fill('deleted'), 'not_found'],
    );
    assert.deepEqual(
      results.slice(0, ids.length).map((r) => r.id),
      ids,
    );
    const batchCalls = recorded.attempts.filter((a) => a.path === '/v2/contacts/batch/delete');
    assert.equal(batchCalls.length, 2, '129 values: two requests');
    assert.match(batchCalls[1]!.key!, /^rerun-.*:1$/);
    const { rows } = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE id = ANY($1::uuid[])',
      [made.map((r) => r.contact.id)],
    );
    assert.equal(rows[0]!.n, 0);

    // A value given twice (an id in either case) is refused before anything is sent.
    const before = recorded.attempts.length;
    const id = randomUUID();
    await assert.rejects(deleteContacts(deleting.v2, { ids: [id, randomUUID(), id.toUpperCase()] }), RangeError);
    assert.equal(recorded.attempts.length, before);
  });
});

describe('generated types', () => {
  test('src/generated/*.ts are what openapi-typescript makes of docs/openapi/*.json today', async () => {
    for (const version of VERSIONS) {
      const committed = await readFile(generatedUrl(version), 'utf8');
      assert.ok(
        committed === (await generate(version)),
        `clients/typescript/src/generated/${version}.ts is out of date: run node --import tsx clients/typescript/generate.ts`,
      );
    }
  });
});
