// The error statuses the documents list for an operation are the ones the service answers: on a
// running server, each status documented for a representative set of operations (a v1 and a v2
// list, a get, the writes, a nested list, the events feed) is provoked and answered. The harness
// checks each answer against the documents (test/contract.ts): its status, and its code among
// those listed for that status. Two statuses cannot be provoked by a request on a healthy
// server and are left to the tests that can make them happen.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contactBody, expireEvents, idem, type TestWorkspace, UNKNOWN_ID } from './harness.js';
import { useTestServer } from './test-server.js';
import { committedDocument } from './openapi-documents.js';

const NOT_BY_REQUEST: Record<string, string> = {
  '500': 'an unexpected failure; no request makes one by design',
  '503': 'the store down or the process saturated: test/availability.test.ts and test/admission.test.ts',
};

let w: TestWorkspace;
let contactId: string;
const server = useTestServer({
  setup: async () => {
    w = await server.workspace();
    const r = await server.request('POST', '/v2/contacts', { key: w.key, idem: idem(), body: contactBody() });
    assert.equal(r.status, 201, r.text);
    contactId = r.json.data.id as string;
  },
});

interface Operation {
  method: string;
  /** the documented path */
  docPath: string;
  /** a path that answers 200 */
  path: string;
  /** a body that answers 2xx (writes) */
  body?: () => unknown;
  /** the request for a status only this kind of operation answers */
  special?: Record<string, () => Promise<number>>;
}

const ops = (): Operation[] => [
  { method: 'GET', docPath: '/v1/contacts', path: '/v1/contacts' },
  { method: 'GET', docPath: '/v2/contacts/{id}', path: `/v2/contacts/${contactId}` },
  {
    method: 'POST',
    docPath: '/v2/contacts',
    path: '/v2/contacts',
    body: () => contactBody(),
    special: {
      // The replay of a create whose contact was deleted in the product since: its answer is erased.
      '404': async () => {
        const key = idem();
        const body = contactBody();
        const created = await server.request('POST', '/v2/contacts', { key: w.key, idem: key, body });
        await server.db.query('DELETE FROM contacts WHERE workspace_id = $1 AND id = $2', [w.id, created.json.data.id]);
        return (await server.request('POST', '/v2/contacts', { key: w.key, idem: key, body })).status;
      },
    },
  },
  { method: 'PATCH', docPath: '/v2/contacts/{id}', path: `/v2/contacts/${contactId}`, body: () => ({ origin: 'x' }) },
  {
    method: 'GET',
    docPath: '/v2/conversations/{contact_id}/messages',
    path: `/v2/conversations/${contactId}/messages`,
  },
  {
    method: 'GET',
    docPath: '/v2/events',
    path: '/v2/events',
    special: {
      // A position from before what retention kept: the feed is aged and purged as the server does.
      '410': async () => {
        const ws = await server.workspace();
        const head = await server.request('GET', '/v2/events/head', { key: ws.key });
        await server.request('POST', '/v2/contacts', { key: ws.key, idem: idem(), body: contactBody() });
        await expireEvents(server, ws.id);
        return (await server.request('GET', `/v2/events?after=${head.json.data.position}`, { key: ws.key })).status;
      },
    },
  },
];

/** The request of `op` with what it needs to succeed, changed by `o`. */
async function send(
  op: Operation,
  o: {
    key?: string;
    path?: string;
    body?: unknown;
    raw?: string;
    contentType?: string;
    idem?: string | null;
    headers?: Record<string, string>;
  } = {},
): Promise<number> {
  const write = op.body !== undefined;
  const r = await server.request(op.method, o.path ?? op.path, {
    key: o.key ?? w.key,
    ...(write && o.raw === undefined ? { body: o.body ?? op.body!() } : {}),
    ...(o.raw !== undefined ? { raw: o.raw } : {}),
    ...(o.contentType ? { contentType: o.contentType } : {}),
    ...(write && o.idem !== null ? { idem: o.idem ?? idem() } : {}),
    ...(o.headers ? { headers: o.headers } : {}),
  });
  return r.status;
}

/** How each status is provoked on an operation of any kind. */
const provoke: Record<string, (op: Operation) => Promise<number>> = {
  // A write takes no query schema: its 400 is a missing Idempotency-Key; a read's an unknown parameter.
  '400': (op) => (op.body ? send(op, { idem: null }) : send(op, { path: `${op.path}?colour=blue` })),
  '401': (op) => send(op, { key: 'wsk_nope.nope' }),
  '403': async (op) => send(op, { key: (await w.newKey(['workspace:read'])).key }),
  '404': (op) => send(op, { path: op.path.replace(contactId, UNKNOWN_ID) }),
  '409': async (op) => {
    const key = idem();
    await send(op, { idem: key });
    return send(op, { idem: key, body: { ...(op.body!() as object), name: 'Another body' } });
  },
  '413': (op) => send(op, { raw: JSON.stringify({ name: 'x'.repeat(1_100_000) }) }),
  '415': (op) => send(op, { raw: 'name=x', contentType: 'text/plain' }),
  '422': (op) => send(op, { body: { status: 'no such status' } }),
  '429': async (op) => {
    const limited = await w.newKey(['contacts:read', 'contacts:write', 'messages:read', 'events:read'], {
      rateLimitPerMinute: 1,
    });
    await send(op, { key: limited.key });
    return send(op, { key: limited.key });
  },
  '431': (op) => send(op, { headers: { 'x-padding': 'a'.repeat(20_000) } }),
};

test('every error status documented for these operations is answered by them', async () => {
  for (const op of ops()) {
    const version = op.docPath.startsWith('/v1') ? 'v1' : 'v2';
    const documented = committedDocument(version).paths[op.docPath][op.method.toLowerCase()].responses;
    const errors = Object.keys(documented).filter((s) => Number(s) >= 400);
    assert.ok(errors.includes('431') && errors.includes('400'), `${op.method} ${op.docPath} documents 400 and 431`);
    for (const status of errors) {
      if (NOT_BY_REQUEST[status]) continue;
      const how = op.special?.[status] ?? (() => provoke[status]!(op));
      assert.ok(op.special?.[status] ?? provoke[status], `${op.method} ${op.docPath}: no way to provoke ${status}`);
      assert.equal(await how(), Number(status), `${op.method} ${op.docPath} answers ${status}`);
    }
  }
});

test('an unknown query parameter is documented on every operation with a query schema, and refused', async () => {
  for (const version of ['v1', 'v2'] as const) {
    for (const [path, item] of Object.entries<any>(committedDocument(version).paths)) {
      if (!item.get) continue;
      assert.match(item.get.description, /unknown query parameter/, `GET ${path}`);
      assert.match(item.get.responses['400'].description, /unknown query parameter/, `GET ${path}`);
    }
  }
  const r = await server.request('GET', '/v2/workspace?colour=blue', { key: w.key });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'invalid_query_parameter');
  assert.equal(r.json.error.message, 'Unknown parameter colour.');
});
