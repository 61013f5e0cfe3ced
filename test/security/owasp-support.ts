// Shared parts of the OWASP API Security Top 10 suite (test/security/owasp-*.test.ts), one file per
// group of risks, each a matrix over every operation of /v1/openapi.json and /v2/openapi.json as
// the running server publishes them (a new route is covered without touching them):
//
// publishes them (a new route is covered without touching this file):
//
//   API1  broken object level authorization: another workspace's ids answer exactly like random
//         ones (status and bytes), in paths and in filters; its cursors and Idempotency-Keys mean
//         nothing here; a workspace's lists never carry another's ids.
//   API2  broken authentication: every way of presenting a bad key gets the same 401 bytes on every
//         route, a suspended workspace is refused everywhere, guessing keys is throttled per
//         address, and no log line of a run carries a key, a secret or internal data.
//   API3  broken object property level authorization: read-only, internal and unknown properties
//         are refused (422, nothing stored, the Idempotency-Key left free); every answer matches
//         its closed published schema and carries no internal value; errors echo no value.
//   API4  unrestricted resource consumption: 413 before the body is read, refusals that never read
//         an announced body, 429 that does nothing, header/URL/JSON size limits, slow clients.
//   API5  broken function level authorization: each operation (and HEAD) with and without each
//         scope; a refused write reads no body.
//   API9  improper inventory management: the routes the server answers are exactly the documented
//         ones (plus HEAD and the public descriptions and probes), plausible undocumented paths,
//         methods and parameters are refused, the served descriptions are the committed ones.
//   API8  security misconfiguration (last, because it also audits every answer this file got):
//         X-Request-Id, Cache-Control: no-store, no X-Powered-By/Server/CORS, error bodies without
//         stack traces or SQL, unknown methods, answers of the HTTP parser itself.
//
// Not applicable, and why:
//   API6  unrestricted access to sensitive business flows: the API offers no flow whose automated
//         use harms the business (no purchase, booking, sign-up, messaging, referral or coupon;
//         appointment writes are not offered, spec 1.3). Its only writes are contact records of
//         the caller's own workspace, bounded by the key's scope (API5) and rate limit (API4).
//   API7  server-side request forgery: the service fetches no URL: no request field is followed,
//         and webhooks or outbound notifications are not offered (spec 6.3).
//   API10 unsafe consumption of APIs: the service consumes no third-party API; its only upstreams
//         are PostgreSQL and Redis at addresses the operator configures.
//   The last describe proves both: src/ contains no HTTP client at all.
//
// docs/security.md describes each risk, how the service addresses it and which test proves it.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';
import {
  idem,
  sleep,
  type RequestOptions,
  type TestResponse,
  type TestServer,
  type TestWorkspace,
} from '../harness.js';
import { useTestServer } from '../test-server.js';
import {
  errorProblems,
  Figures,
  fillPath,
  freshValue,
  headerOf,
  headerProblems,
  isWrite,
  OPEN_ADDRESS_LIMIT,
  operationsOf,
  pathParams,
  pathValues,
  recordsToDelete,
  publishedDocuments,
  raw,
  seedSmall,
  requestBody,
  type AnyAnswer,
  type Documents,
  type Operation,
  type Param,
  type RawAnswer,
  type RawRequest,
} from './helpers.js';

export const MARKER = `SEC-INTERNAL-${randomUUID()}`;
export const figures = new Figures();

export let server: TestServer;
export let docs: Documents;
export let ops: Operation[];
export let A: TestWorkspace;
export let B: TestWorkspace;
export let valuesA: Map<string, Record<string, string>>;
export let valuesB: Map<string, Record<string, string>>;

/**
 * The file's server and two seeded workspaces before its tests; after them, its figures on one
 * line (`parts`: the counters of its own risks).
 */
export function useOwaspSuite(file: string, parts: () => string[] = () => []): void {
  server = useTestServer({
    config: OPEN_ADDRESS_LIMIT,
    setup: async () => {
      docs = await publishedDocuments(server);
      ops = operationsOf(docs);
      assert.ok(ops.length >= 23, `only ${ops.length} documented operations`);
      A = await server.workspace({ rateLimitPerMinute: 1_000_000 });
      B = await server.workspace({ rateLimitPerMinute: 1_000_000 });
      await seedSmall(server, A.id, MARKER);
      await seedSmall(server, B.id, MARKER);
      valuesA = await pathValues(server, A.key, ops);
      valuesB = await pathValues(server, B.key, ops);
    },
  });

  after(async () => {
    figures.print(file, [
      `${figures.get('requests')} requests`,
      `${ops.length} documented operations`,
      ...parts(),
      `${figures.get('5xx')} 5xx`,
      `${figures.get('api8:audited')} answers audited`,
    ]);
  });
}

// ------------------------------------------------------------------------------------------ recording

export interface Seen {
  label: string;
  answer: AnyAnswer;
  /** answered by Node's HTTP parser rather than the service (reported, not audited) */
  parser: boolean;
}
/** Every answer of this file, audited at the end (API8). */
export const seen: Seen[] = [];

export function remember(label: string, answer: AnyAnswer, parser = false): void {
  seen.push({ label, answer, parser });
  figures.add('requests');
  if (answer.status >= 500) figures.add('5xx');
}

export async function call(method: string, path: string, options: RequestOptions = {}): Promise<TestResponse> {
  const r = await server.request(method, path, options);
  remember(`${method} ${path}`, r);
  return r;
}

export async function rawCall(r: RawRequest, options?: { timeoutMs?: number; parser?: boolean }): Promise<RawAnswer> {
  const answer = await raw(server.baseUrl, r, options);
  remember(`${r.method} ${String(r.target).slice(0, 100)}`, answer, options?.parser ?? false);
  return answer;
}

// ------------------------------------------------------------------------------------------ helpers

export const byId = (id: string) => ops.filter((o) => o.operationId === id);
export const gets = () => ops.filter((o) => o.method === 'GET');

/** The documented list a path parameter continues (`/v2/conversations` for `{contact_id}`), if any. */
export const parentListOf = (op: Operation, p: Param) => {
  const parent = op.template.slice(0, op.template.indexOf(`/{${p.name}}`));
  return ops.find((o) => o.version === op.version && o.method === 'GET' && o.template === parent && o.isList);
};
/** Path parameters naming an existing resource, not chosen by the caller. */
export const lookupParams = (op: Operation) => pathParams(op).filter((p) => parentListOf(op, p));

export const randomValues = (op: Operation): Record<string, string> =>
  Object.fromEntries(pathParams(op).map((p) => [p.name, p.schema.format === 'uuid' ? randomUUID() : freshValue(p)]));

export const pathOf = (op: Operation, values = valuesA.get(op.label)!) => fillPath(op.template, values);

/**
 * A valid request of `op` (fresh body and Idempotency-Key for writes). A deletion without `values`
 * deletes a record of A's made for it, so every call of it finds one.
 */
export async function send(
  op: Operation,
  key: string | undefined,
  { method = op.method, values = undefined as Record<string, string> | undefined, extra = {} } = {},
): Promise<TestResponse> {
  const target =
    values ?? (op.method === 'DELETE' ? await recordsToDelete(server, A.key, ops, op) : valuesA.get(op.label)!);
  return call(method, pathOf(op, target), {
    ...(key ? { key } : {}),
    ...(isWrite(op) && method === op.method ? { body: requestBody(op), idem: idem() } : {}),
    ...extra,
  });
}

/** Every operation, and HEAD of every GET, as [method, operation]. */
export const withHead = (list: Operation[] = ops): [string, Operation][] =>
  list.flatMap((op): [string, Operation][] =>
    op.method === 'GET'
      ? [
          ['GET', op],
          ['HEAD', op],
        ]
      : [[op.method, op]],
  );

export async function waitForStatus(
  key: string,
  status: number,
  path = '/v2/workspace',
  withinMs = 3_000,
): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const r = await call('GET', path, { key });
    if (r.status === status) return;
    assert.ok(Date.now() < deadline, `still ${r.status} after ${withinMs} ms, expected ${status}`);
    await sleep(25);
  }
}

/** Every item of a list, all pages. */
export async function crawl(path: string, key: string): Promise<{ items: any[]; texts: string[] }> {
  const items: any[] = [];
  const texts: string[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const url: string = `${path}${sep}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await call('GET', url, { key });
    assert.equal(r.status, 200, `${url}: ${r.text.slice(0, 200)}`);
    items.push(...r.json.data);
    texts.push(r.text);
    cursor = r.json.page.next_cursor;
  } while (cursor);
  return { items, texts };
}

/** Every id (and *_id) value found in a workspace's lists. */
export async function idsOf(ws: TestWorkspace, values: Map<string, Record<string, string>>): Promise<Set<string>> {
  const ids = new Set<string>([ws.id]);
  for (const op of ops.filter((o) => o.isList)) {
    const { items } = await crawl(pathOf(op, values.get(op.label)), ws.key);
    for (const item of items) {
      for (const [k, v] of Object.entries(item))
        if ((k === 'id' || k.endsWith('_id')) && typeof v === 'string') ids.add(v);
    }
  }
  return ids;
}

/**
 * The last test of each file: every answer it received carries X-Request-Id (unique),
 * Cache-Control: no-store and no X-Powered-By, Server or CORS header; errors are the exact object
 * without stack traces or SQL (API8).
 */
export function auditEveryAnswer(atLeast: number): void {
  test('every answer this file received: X-Request-Id (unique), Cache-Control: no-store, no X-Powered-By, Server or CORS; errors are the exact object without stack traces or SQL', () => {
    const problems: string[] = [];
    const ids = new Set<string>();
    let audited = 0;
    for (const { label, answer, parser } of seen) {
      if (parser) continue;
      audited++;
      const id = headerOf(answer, 'x-request-id');
      if (!id) problems.push(`${label}: no X-Request-Id`);
      else if (ids.has(id)) problems.push(`${label}: X-Request-Id ${id} given twice`);
      else ids.add(id);
      problems.push(...headerProblems(answer).map((p) => `${label}: ${p}`));
      if (answer.status >= 400) {
        if (answer.text) problems.push(...errorProblems(answer).map((p) => `${label}: ${p}`));
      } else if (answer.text && !/^application\/json; charset=utf-8$/.test(headerOf(answer, 'content-type') ?? '')) {
        problems.push(`${label}: content-type ${headerOf(answer, 'content-type')}`);
      }
    }
    figures.add('api8:audited', audited);
    assert.ok(audited >= atLeast, `${audited} answers audited`);
    assert.deepEqual(problems.slice(0, 50), [], `${problems.length} problems`);
  });
}
