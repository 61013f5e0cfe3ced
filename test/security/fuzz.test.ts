// Generated negative testing. For every operation of /v1/openapi.json and /v2/openapi.json (read
// from the running server), fast-check derives requests from the operation's own schemas: query
// parameters, path parameters, headers and bodies just outside and far outside their bounds, of
// the wrong type, oddly encoded (stray and invalid percent-escapes, overlong and invalid UTF-8,
// NUL and other control characters, raw bytes), in any Unicode; bodies that break each property
// one at a time and all at once, carry additional properties, or are not JSON at all. Each request
// goes out byte for byte over a raw socket with a valid key holding every scope, and every answer
// is checked:
//
//   - never a 5xx;
//   - every 4xx is exactly the spec's error object, its request_id equal to X-Request-Id, with
//     Cache-Control: no-store and no X-Powered-By (an answer of Node's HTTP parser itself is
//     counted and reported as finding F-parser-error-body instead, see docs/security.md);
//   - every 2xx matches the documented schema of its status (generated requests may be valid);
//   - after every refused write the workspace's rows are exactly what they were (fingerprint of
//     every table with a workspace_id, the workspace and its keys), and after each read
//     operation's run nothing changed at all.
//
// Violations are collected rather than stopping at the first, grouped by status and what was
// mutated, and each group is reported with its shortest request, so one run shows every distinct
// problem. SECURITY_FUZZ_RUNS (default 100 per operation) and SECURITY_FUZZ_SEED reproduce or
// widen a run; the seed is printed with the figures at the end.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { idem, type TestWorkspace } from '../harness.js';
import { useTestServer } from '../test-server.js';
import {
  changedTables,
  encodeRequest,
  errorProblems,
  Figures,
  fingerprint,
  headerOf,
  isParserRefusal,
  isWrite,
  takesBody,
  OPEN_ADDRESS_LIMIT,
  operationsOf,
  pathParams,
  pathValues,
  publishedDocuments,
  queryParams,
  rawExchange,
  responseSchema,
  schemaProblems,
  seedSmall,
  validBody,
  VERSIONS,
  type Operation,
  type Param,
  type RawAnswer,
} from './helpers.js';
import {
  CONTENT_TYPES,
  type Piece,
  RAW_BODIES,
  fill,
  fuzzTarget,
  join,
  parameterPiece,
  pct,
  propertyValue,
  unicodeString,
} from './fuzz-arbitraries.js';

const RUNS = Number(process.env.SECURITY_FUZZ_RUNS ?? 100);
const SEED = Number(process.env.SECURITY_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const figures = new Figures();

let ops: Operation[];
let F: TestWorkspace;
let values: Map<string, Record<string, string>>;
const server = useTestServer({
  config: OPEN_ADDRESS_LIMIT,
  setup: async () => {
    ops = operationsOf(await publishedDocuments(server));
    F = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    fuzzTarget.workspaceId = F.id;
    await seedSmall(server, F.id);
    values = await pathValues(server, F.key, ops);
    for (const op of ops.filter((o) => o.isList)) {
      const r = await server.request('GET', `${fill(op, values.get(op.label)!)}?limit=1`, { key: F.key });
      if (r.json?.page?.next_cursor) fuzzTarget.cursors.set(op.label, r.json.page.next_cursor);
    }
  },
});

after(async () => {
  const c = (n: string) => figures.get(n);
  figures.print('fuzz', [
    `seed ${SEED}`,
    `${c('requests')} requests over ${c('operations')} operations (${RUNS} generated each, ${c('edge')} schema edge cases)`,
    `${c('5xx')} 5xx`,
    `${c('4xx')} 4xx all checked against the error object and X-Request-Id`,
    `DB unchanged after ${c('refused writes')} refused writes and ${c('read runs')} read runs`,
    `${c('2xx')} accepted (valid by chance, checked against the schema)`,
    `${c('parser')} refused by the HTTP parser`,
    `${c('slow answers (over 5 s)')} answers slower than 5 s`,
    `${c('violations')} violations in ${c('violation groups')} groups`,
  ]);
});

// ------------------------------------------------------------------------------------------ requests

interface Generated {
  /** what was mutated, e.g. "query limit" or "body name": violations are grouped by it */
  what: string;
  path: Record<string, Piece>;
  query: [Piece, Piece][];
  /** replaces the default header of the same name; a null value removes it */
  headers: [string, string | Buffer | null][];
  /** a JSON value to send, or raw bytes */
  body?: { json: unknown } | { bytes: Buffer };
}

const none = (what: string): Generated => ({ what, path: {}, query: [], headers: [] });

function mutations(op: Operation): fc.Arbitrary<Generated> {
  const arbs: fc.WeightedArbitrary<Generated>[] = [];
  const query = queryParams(op);
  if (query.length) {
    const one = (p: Param) =>
      fc.tuple(parameterPiece(p, op), fc.boolean()).map(([value, twice]): Generated => ({
        ...none(`query ${p.name}`),
        query: twice
          ? [
              [p.name, value],
              [p.name, value],
            ]
          : [[p.name, value]],
      }));
    arbs.push({ weight: 10, arbitrary: fc.constantFrom(...query).chain(one) });
    // several at once, each valid or not
    arbs.push({
      weight: 3,
      arbitrary: fc
        .subarray(query, { minLength: 2 })
        .chain((ps) => fc.tuple(...ps.map((p) => parameterPiece(p, op).map((v): [Piece, Piece] => [p.name, v]))))
        .map((pairs): Generated => ({ ...none(`query ${pairs.map(([n]) => String(n)).join('+')}`), query: pairs })),
    });
  }
  // Unknown parameter names (refused by lists, ignored elsewhere).
  arbs.push({
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.oneof(
          fc.constantFrom(
            'foo',
            'LIMIT',
            'limit[]',
            'limit[0]',
            '__proto__',
            'constructor',
            '',
            'limit ',
            'Cursor',
            'a.b',
          ),
          unicodeString(12),
        ),
        unicodeString(12),
      )
      .map(([n, v]): Generated => ({ ...none('query <unknown>'), query: [[pct(n), pct(v)]] })),
  });
  for (const p of pathParams(op)) {
    arbs.push({
      weight: 8,
      arbitrary: parameterPiece(p, op).map((v): Generated => ({ ...none(`path ${p.name}`), path: { [p.name]: v } })),
    });
  }
  // Headers every request may carry.
  arbs.push({
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          'X-Request-Id',
          'Accept',
          'Accept-Encoding',
          'X-Forwarded-For',
          'Forwarded',
          'If-None-Match',
          'Range',
        ),
        fc.oneof(
          unicodeString(30).map((s) => Buffer.from(s.replace(/[\r\n]/g, ''), 'utf8')),
          fc.constantFrom('*/*', 'gzip', 'bytes=0-1'),
        ),
      )
      .map(([name, value]): Generated => ({ ...none(`header ${name}`), headers: [[name, value]] })),
  });
  if (isWrite(op)) {
    arbs.push({
      weight: 3,
      arbitrary: fc
        .oneof(
          fc.constant(null),
          fc.integer({ min: 0, max: 7 }).map((n) => 'k'.repeat(n)),
          fc.integer({ min: 129, max: 2_000 }).map((n) => 'k'.repeat(n)),
          fc.stringMatching(/^[\x21-\x7e]{8,20}$/).map((s) => `${s} x`),
          unicodeString(20).map((s) => Buffer.from(`idem-${s.replace(/[\r\n]/g, '')}-key`, 'utf8')),
          fc.stringMatching(/^[\x21-\x7e]{8,128}$/),
        )
        .map((v): Generated => ({ ...none('header Idempotency-Key'), headers: [['Idempotency-Key', v]] })),
    });
  }
  if (takesBody(op)) {
    const props = Object.entries<any>(op.body.properties ?? {});
    arbs.push({
      weight: 2,
      arbitrary: fc
        .option(CONTENT_TYPES, { nil: null })
        .map((v): Generated => ({ ...none('header Content-Type'), headers: [['Content-Type', v]] })),
    });
    // One property at a time.
    arbs.push({
      weight: 10,
      arbitrary: fc.constantFrom(...props).chain(([name, schema]) =>
        propertyValue(schema).map((v): Generated => ({
          ...none(`body ${name}`),
          body: { json: { ...validBody(op), [name]: v } },
        })),
      ),
    });
    // All at once.
    arbs.push({
      weight: 3,
      arbitrary: fc
        .tuple(...props.map(([name, schema]) => propertyValue(schema).map((v): [string, unknown] => [name, v])))
        .map((entries): Generated => ({ ...none('body <all>'), body: { json: Object.fromEntries(entries) } })),
    });
    // Additional properties.
    arbs.push({
      weight: 3,
      arbitrary: fc
        .tuple(
          fc.oneof(
            fc.constantFrom(
              'id',
              'created_at',
              'updated_at',
              'external_id',
              'workspace_id',
              'notes',
              'ai_memory',
              'Name',
            ),
            unicodeString(10),
          ),
          fc.jsonValue({ maxDepth: 2 }),
        )
        .map(([name, v]): Generated => {
          const body: Record<string, unknown> = validBody(op);
          Object.defineProperty(body, name, { value: v, enumerable: true, writable: true, configurable: true });
          return { ...none('body <additional>'), body: { json: body } };
        }),
    });
    arbs.push({
      weight: 4,
      arbitrary: RAW_BODIES.map((bytes): Generated => ({ ...none('body <raw>'), body: { bytes } })),
    });
  } else {
    // A body (and a media type) where none is taken.
    arbs.push({
      weight: 1,
      arbitrary: fc.tuple(RAW_BODIES, CONTENT_TYPES).map(([bytes, ct]): Generated => ({
        ...none('body on a read'),
        body: { bytes },
        headers: [['Content-Type', ct]],
      })),
    });
  }
  const single = fc.oneof(...arbs);
  // Sometimes two mutations together.
  return fc.oneof(
    { weight: 4, arbitrary: single },
    {
      weight: 1,
      arbitrary: fc.tuple(single, single).map(([a, b]): Generated => ({
        what: `${a.what} & ${b.what}`,
        path: { ...a.path, ...b.path },
        query: [...a.query, ...b.query],
        headers: [...a.headers, ...b.headers],
        ...((b.body ?? a.body) ? { body: b.body ?? a.body } : {}),
      })),
    },
  );
}

/**
 * Edge cases every run tries first, derived from the schemas alone: for every date-time parameter
 * year 0 and offsets past ±15:59, for every other string parameter a NUL, for every body property
 * a NUL in a string, for every path parameter a NUL and an overlong UTF-8 slash.
 */
function edgeCases(op: Operation): Generated[] {
  const cases: Generated[] = [];
  for (const p of queryParams(op)) {
    if (p.schema.format === 'date-time') {
      for (const v of ['0000-01-01T00:00:00Z', '2026-11-22T06:05:43.123+23:59', '9999-12-31T23:59:59.999-16:00']) {
        cases.push({ ...none(`query ${p.name}`), query: [[p.name, pct(v)]] });
      }
    } else if (([] as string[]).concat(p.schema.type ?? []).includes('string')) {
      cases.push({ ...none(`query ${p.name}`), query: [[p.name, 'a%00b']] });
    }
  }
  for (const p of pathParams(op)) {
    for (const v of ['%00', '%C0%AF', `${'%F0%9F%98%80'.repeat(130)}`])
      cases.push({ ...none(`path ${p.name}`), path: { [p.name]: v } });
  }
  if (takesBody(op)) {
    for (const [name, schema] of Object.entries<any>(op.body.properties ?? {})) {
      if (!([] as string[]).concat(schema.type ?? []).includes('string') || schema.enum) continue;
      const valid = validBody(op)[name];
      const nul = typeof valid === 'string' && schema.pattern ? `${valid}\u0000` : 'a\u0000b';
      cases.push({ ...none(`body ${name}`), body: { json: { ...validBody(op), [name]: nul } } });
    }
  }
  return cases;
}

function build(op: Operation, g: Generated): Buffer {
  const base = values.get(op.label)!;
  const pathPieces: Piece[] = [];
  let last = 0;
  for (const m of op.template.matchAll(/\{([^}]+)\}/g)) {
    pathPieces.push(op.template.slice(last, m.index));
    pathPieces.push(g.path[m[1]!] ?? encodeURIComponent(base[m[1]!]!));
    last = m.index + m[0].length;
  }
  pathPieces.push(op.template.slice(last));
  const target: Piece[] = [...pathPieces];
  g.query.forEach(([name, value], i) => target.push(i === 0 ? '?' : '&', name, '=', value));

  const headers = new Map<string, [string, string | Buffer]>([['authorization', ['Authorization', `Bearer ${F.key}`]]]);
  let body: Buffer | undefined;
  if (isWrite(op)) headers.set('idempotency-key', ['Idempotency-Key', idem()]);
  if (takesBody(op)) {
    headers.set('content-type', ['Content-Type', 'application/json']);
    body = Buffer.from(JSON.stringify(validBody(op)), 'utf8');
  }
  if (g.body) body = 'bytes' in g.body ? g.body.bytes : Buffer.from(JSON.stringify(g.body.json) ?? 'null', 'utf8');
  const extra: [string, string | Buffer][] = [];
  for (const [name, value] of g.headers) {
    if (value === null) headers.delete(name.toLowerCase());
    else if (headers.has(name.toLowerCase())) headers.set(name.toLowerCase(), [name, value]);
    else extra.push([name, value]);
  }
  return encodeRequest(server.baseUrl, {
    method: op.method,
    target: join(target),
    headers: [...headers.values(), ...extra],
    ...(body ? { body } : {}),
  });
}

// ------------------------------------------------------------------------------------------ checking

interface Violation {
  group: string;
  request: Buffer;
  detail: string;
}

/** The workspace's fingerprint as last verified, or null when a request may have changed it. */
let known: Record<string, string> | null = null;

/** Sends one generated request and records what is wrong with its answer. */
async function exchange(op: Operation, g: Generated, violations: Violation[]): Promise<void> {
  const request = build(op, g);
  // The fingerprint taken after a refused write is the one before the next request: only a write
  // that was not refused makes it unknown again.
  const before = isWrite(op) ? (known ??= await fingerprint(server.db, F.id)) : null;
  const started = Date.now();
  const r: RawAnswer = await rawExchange(server.baseUrl, request, { timeoutMs: 15_000, closeWaitMs: 0 });
  figures.add('requests');
  if (Date.now() - started > 5_000) figures.add('slow answers (over 5 s)');
  const problems: string[] = [];
  let group = `${r.status} ${g.what}`;
  if (isWrite(op) && !(r.status >= 400 && r.status < 500)) known = null;
  if (r.status === 0) problems.push(`no answer (${r.closed ? 'connection closed' : 'timed out'})`);
  else if (r.status >= 500) {
    figures.add('5xx');
    group = `${r.status} ${r.json?.error?.code ?? ''} ${g.what}`;
    problems.push(`${r.status}: ${r.text.slice(0, 200)}`);
  } else if (r.status >= 400 && isParserRefusal(r)) {
    figures.add('parser');
    figures.finding(
      'F-parser-error-body',
      `${r.status} from Node's HTTP parser / Fastify's default client-error handler (e.g. ${g.what}): ${r.text}`,
    );
  } else if (r.status >= 400) {
    figures.add('4xx');
    problems.push(...errorProblems(r));
  } else if (r.status >= 200 && r.status < 300) {
    figures.add('2xx');
    const schema = responseSchema(op, r.status);
    if (r.status === 204) {
      if (!op.responses['204']) problems.push('status 204 is not documented');
      if (r.text !== '') problems.push('a 204 with a body');
    } else if (!schema) problems.push(`status ${r.status} is not documented`);
    else problems.push(...schemaProblems(schema, r.json).map((p) => `2xx body: ${p}`));
    if (!headerOf(r, 'x-request-id')) problems.push('no X-Request-Id');
  } else problems.push(`unexpected status ${r.status}`);
  if (before && r.status >= 400 && r.status < 500) {
    figures.add('refused writes');
    known = await fingerprint(server.db, F.id);
    const changed = changedTables(before, known);
    if (changed.length) problems.push(`a refused write changed ${changed.join(', ')}`);
  }
  const sentRequestId = g.headers.find(([n]) => n.toLowerCase() === 'x-request-id')?.[1];
  if (sentRequestId && headerOf(r, 'x-request-id') === String(sentRequestId))
    problems.push('X-Request-Id taken from the request');
  if (problems.length) {
    figures.add('violations');
    violations.push({ group, request, detail: problems.join('; ') });
  }
}

/** A request as printable text, the fixture key replaced (PostgreSQL keeps it in a shared database). */
const show = (b: Buffer) => {
  const s = b.toString('latin1').split(F.key).join('<fixture key>');
  return JSON.stringify(s.length > 600 ? `${s.slice(0, 600)}…(${s.length} bytes)` : s);
};

async function fuzz(op: Operation, seed: number): Promise<void> {
  const violations: Violation[] = [];
  const readBefore = isWrite(op) ? null : await fingerprint(server.db, F.id);
  const edges = edgeCases(op);
  figures.add('edge', edges.length);
  for (const g of edges) await exchange(op, g, violations);
  await fc.assert(
    fc.asyncProperty(mutations(op), async (g) => {
      await exchange(op, g, violations);
    }),
    { numRuns: RUNS, seed },
  );
  if (readBefore) {
    figures.add('read runs');
    assert.deepEqual(
      changedTables(readBefore, await fingerprint(server.db, F.id)),
      [],
      `${op.label} changed the database`,
    );
  }
  const groups = new Map<string, Violation[]>();
  for (const v of violations) groups.set(v.group, [...(groups.get(v.group) ?? []), v]);
  figures.add('violation groups', groups.size);
  const report = [...groups].map(([group, vs]) => {
    const shortest = vs.reduce((a, b) => (b.request.length < a.request.length ? b : a));
    return `${group} (×${vs.length}): ${shortest.detail.slice(0, 300)}\n      request: ${show(shortest.request)}`;
  });
  assert.equal(
    violations.length,
    0,
    `${op.label}, seed ${seed}: ${violations.length} violations\n  ${report.join('\n  ')}`,
  );
}

for (const version of VERSIONS) {
  test(`every operation of /${version}/openapi.json, with generated requests just and far outside its schemas`, async (t) => {
    const mine = ops.filter((o) => o.version === version);
    assert.ok(mine.length > 0);
    for (const [i, op] of mine.entries()) {
      figures.add('operations');
      await t.test(op.label, () => fuzz(op, SEED + i + (version === 'v2' ? 1_000 : 0)));
    }
  });
}

test('after the run the service still serves the fixture workspace and is ready', async () => {
  const r = await server.request('GET', '/v2/workspace', { key: F.key });
  assert.equal(r.status, 200);
  assert.equal(r.json.data.id, F.id);
  assert.equal((await server.request('GET', '/readyz')).status, 200);
});
