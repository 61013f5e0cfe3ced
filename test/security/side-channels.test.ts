// What one key may learn beyond what it may read, and what outlives a deletion:
//
//   feed per scope   every scope combination that matters reads exactly the events of the groups
//                    it reads on their own routes — byte for byte the full feed with the others
//                    left out, no id, resource id or message text of theirs anywhere in the
//                    answers; filters naming them are 403; cursors do not cross between keys.
//   event ids        opaque (they do not even sort in feed order) and bound to their workspace.
//   erasure          a deleted contact's earlier events, and its conversations' and messages',
//                    keep their place but carry only the tombstone, in the answers and the store.
//   key timing       an unknown key id and a known one with a wrong secret cost the same (medians
//                    of interleaved tries within 10%).
//   /docs            no path under it, however written, is a 500 or logs an error.
//   hygiene          WWW-Authenticate on 401 and on 403 for a scope (RFC 6750), nosniff on every
//                    answer, bodies that are not UTF-8 or hold lone surrogates refused (400,
//                    nothing stored).
//
// docs/security.md lists each channel with the test here that proves it closed.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { after, describe, test } from 'node:test';
import { RESOURCE_TYPES, RESOURCES, type ResourceType } from '../../src/modules/resources.js';
import { SCOPES, type Scope } from '../../src/shared/scopes.js';
import { ownerCommands } from '../../src/modules/owner/owner.service.js';
import { contactBody, idem, startTestServer, STORE, type TestWorkspace, logLines } from '../harness.js';
import { useTestServer } from '../test-server.js';
import {
  changedTables,
  Figures,
  fingerprint,
  forgeKey,
  headerOf,
  idOf,
  OPEN_ADDRESS_LIMIT,
  raw,
  secretOf,
  seedSmall,
  type AnyAnswer,
} from './helpers.js';

const figures = new Figures();
let W: TestWorkspace;
/** the whole feed of W as a key with every scope reads it */
let full: any[];
const server = useTestServer({
  config: OPEN_ADDRESS_LIMIT,
  setup: async () => {
    W = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    await seedSmall(server, W.id);
    await server.db.query(`UPDATE workspaces SET name = 'Side channels' WHERE id = $1`, [W.id]);
    full = await walk(W.key, '');
  },
});
/** every answer this file received, for the nosniff audit */
const answers: { label: string; answer: AnyAnswer }[] = [];

after(async () => {
  figures.print('side-channels', [
    `${figures.get('combos')} scope combinations`,
    `${figures.get('requests')} requests`,
    `timing medians ${figures.get('timing:unknown-us')} µs unknown id / ${figures.get('timing:known-us')} µs wrong secret`,
  ]);
});

async function get(key: string | undefined, path: string) {
  const r = await server.request('GET', path, key ? { key } : {});
  answers.push({ label: `GET ${path}`, answer: r });
  figures.add('requests');
  return r;
}

/** Every event `key` can read of its workspace's feed, following the cursor with small pages. */
async function walk(key: string, query: string): Promise<any[]> {
  const events: any[] = [];
  const texts: string[] = [];
  let cursor: string | null = null;
  do {
    const page = `/v2/events?limit=7${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await get(key, page);
    assert.equal(r.status, 200, r.text);
    texts.push(r.text);
    events.push(...r.json.data);
    cursor = r.json.page.next_cursor;
  } while (cursor);
  walkTexts.set(key, texts.join('\n'));
  return events;
}
const walkTexts = new Map<string, string>();

/** What the content of each resource type holds that no other type repeats. */
const DISTINCTIVE: Record<ResourceType, string[]> = {
  workspace: ['name'],
  contact: ['name', 'email', 'phone'],
  pipeline_stage: [],
  appointment: ['starts_at'],
  catalog_item: ['name', 'description'],
  conversation: [],
  message: ['text'],
  automation: ['name'],
};

/** One change of a resource of type `t` in W, made in the product (plain SQL). */
async function touch(t: ResourceType): Promise<void> {
  const sql: Record<ResourceType, string> = {
    workspace: `UPDATE workspaces SET name = 'Side ' || gen_random_uuid() WHERE id = $1`,
    contact: `UPDATE contacts SET name = 'Touched ' || gen_random_uuid()
               WHERE workspace_id = $1 AND id = (SELECT id FROM contacts WHERE workspace_id = $1 LIMIT 1)`,
    pipeline_stage: `UPDATE pipeline_stages SET name = 'Stage ' || gen_random_uuid()
                      WHERE workspace_id = $1 AND id = 'lost'`,
    appointment: `UPDATE appointments SET starts_at = coalesce(starts_at, now()) + interval '1 minute'
                   WHERE workspace_id = $1 AND id = (SELECT id FROM appointments WHERE workspace_id = $1 LIMIT 1)`,
    catalog_item: `UPDATE catalog_items SET name = 'Item ' || gen_random_uuid()
                    WHERE workspace_id = $1 AND id = (SELECT id FROM catalog_items WHERE workspace_id = $1 LIMIT 1)`,
    conversation: `UPDATE conversations SET status = CASE status WHEN 'open' THEN 'closed' ELSE 'open' END
                    WHERE workspace_id = $1 AND id = (SELECT id FROM conversations WHERE workspace_id = $1 LIMIT 1)`,
    message: `INSERT INTO messages (workspace_id, conversation_id, contact_id, direction, text)
              SELECT workspace_id, id, contact_id, 'inbound', 'Touch ' || gen_random_uuid()
                FROM conversations WHERE workspace_id = $1 LIMIT 1`,
    automation: `UPDATE automations SET name = 'Automation ' || gen_random_uuid()
                  WHERE workspace_id = $1 AND id = (SELECT id FROM automations WHERE workspace_id = $1 LIMIT 1)`,
  };
  const { rowCount } = await server.db.query(sql[t], [W.id]);
  assert.equal(rowCount, 1, t);
}

const readableBy = (scopes: readonly Scope[]) =>
  new Set<ResourceType>(RESOURCE_TYPES.filter((t) => scopes.includes(RESOURCES[t].readScope)));

// ------------------------------------------------------------------------------------------ feed per scope

describe('the events feed obeys every resource scope', () => {
  const ALL_READS = SCOPES.filter((s) => s.endsWith(':read'));
  const COMBINATIONS: Scope[][] = [
    ['events:read'],
    ...ALL_READS.filter((s) => s !== 'events:read').map((s): Scope[] => ['events:read', s]),
    ['events:read', 'conversations:read'], // the conversations, never their messages
    ['events:read', 'contacts:write'], // writing is not reading
    ALL_READS.filter((s) => s !== 'messages:read'),
    ALL_READS.filter((s) => s !== 'contacts:read'),
    [...SCOPES],
  ];

  test('the seed gives the feed events of every resource type', () => {
    assert.deepEqual(new Set(full.map((e) => e.resource_type)), new Set(RESOURCE_TYPES));
    assert.ok(full.some((e) => e.resource_type === 'message' && typeof e.data.text === 'string'));
  });

  for (const scopes of COMBINATIONS) {
    test(`${scopes.join(' + ')}: exactly the readable groups, nothing of the others anywhere`, async () => {
      figures.add('combos');
      const key = (await W.newKey(scopes, { rateLimitPerMinute: 1_000_000 })).key;
      const readable = readableBy(scopes);
      full = await walk(W.key, '');
      const seen = await walk(key, '');
      assert.deepEqual(
        seen,
        full.filter((e) => readable.has(e.resource_type)),
        'the full feed with the unreadable groups left out, in the same order, with the same ids',
      );
      const text = walkTexts.get(key)!;
      // Ids of other resources may appear as references (an appointment's contact_id); the
      // hidden events themselves, and what their resources hold, may not.
      for (const hidden of full.filter((e) => !readable.has(e.resource_type))) {
        assert.ok(!text.includes(hidden.id), `the id of a ${hidden.type} event`);
        for (const field of DISTINCTIVE[hidden.resource_type as ResourceType]) {
          const value = hidden.data[field];
          if (typeof value === 'string') assert.ok(!text.includes(value), `${hidden.type}: its ${field}`);
        }
      }
      // A filter that names an unreadable group asks for what the key may not see: 403.
      for (const t of RESOURCE_TYPES.filter((t) => !readable.has(t))) {
        for (const [parameter, value] of [
          ['resource_type', t],
          ['resource_type', `contact,${t}`],
          ['type', `${t}.created`],
          ['type', `contact.updated,${t}.deleted`],
        ] as const) {
          const r = await get(key, `/v2/events?${parameter}=${value}`);
          assert.equal(r.status, 403, `${parameter}=${value}: ${r.text}`);
          assert.equal(r.json.error.code, 'insufficient_scope');
          const named = value.split(',').map((v) => v.split('.')[0] as ResourceType);
          const missing = named.filter((n) => !readable.has(n)).map((n) => RESOURCES[n].readScope);
          assert.ok(missing.includes(r.json.error.details.required_scope), r.text);
          assert.equal(r.json.error.details.parameter, parameter);
        }
      }
      for (const t of readable) {
        const r = await get(key, `/v2/events?resource_type=${t}&limit=100`);
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(
          r.json.data,
          full.filter((e) => e.resource_type === t),
        );
      }
      // The head needs events:read only, and says nothing but a position — which moves with the
      // groups the key reads, never with the others.
      const head = async () => {
        const r = await get(key, '/v2/events/head');
        assert.equal(r.status, 200);
        return r.json.data.position as string;
      };
      const before = await head();
      assert.deepEqual((await get(key, `/v2/events?after=${before}`)).json.data, []);
      for (const t of RESOURCE_TYPES.filter((t) => !readable.has(t))) await touch(t);
      assert.equal(await head(), before, 'the head moved with a change the key may not read');
      const visible = [...readable][0];
      if (visible) {
        await touch(visible);
        const moved = await head();
        assert.notEqual(moved, before);
        const after = (await get(key, `/v2/events?after=${before}`)).json.data;
        assert.deepEqual(
          after.map((e: any) => e.resource_type),
          [visible],
        );
        if (readable.size < RESOURCE_TYPES.length) {
          assert.equal(after[0].id, moved, 'the head of a key that reads some types is its last event');
        }
      }
    });
  }

  test('a cursor never crosses between keys of different reach, either way', async () => {
    const narrow = (await W.newKey(['events:read', 'contacts:read'], { rateLimitPerMinute: 1_000_000 })).key;
    const wide = (await W.newKey(['events:read', 'contacts:read', 'messages:read'], { rateLimitPerMinute: 1_000_000 }))
      .key;
    for (const [from, to] of [
      [wide, narrow],
      [narrow, wide],
    ] as const) {
      const first = await get(from, '/v2/events?limit=2');
      assert.equal(first.json.page.has_more, true);
      const r = await get(to, `/v2/events?limit=2&cursor=${encodeURIComponent(first.json.page.next_cursor)}`);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.code, 'invalid_cursor');
    }
  });
});

// ------------------------------------------------------------------------------------------ event ids

describe('event ids reveal nothing', () => {
  test('opaque: fixed shape, and they do not sort in feed order (no counter inside)', () => {
    assert.ok(full.length >= 30);
    for (const e of full) assert.match(e.id, /^evt_[A-Za-z0-9_-]{22}$/);
    const ids = full.map((e) => e.id as string);
    assert.notDeepEqual([...ids].sort(), ids, 'ids sorted as text follow the feed: they encode its position');
  });

  test('an id or head position of another workspace is refused like a malformed one', async () => {
    const other = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    const head = (await get(W.key, '/v2/events/head')).json.data.position;
    for (const foreign of [full[0].id, full.at(-1).id, head]) {
      const r = await get(other.key, `/v2/events?after=${foreign}`);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.details.parameter, 'after');
    }
  });
});

// ------------------------------------------------------------------------------------------ erasure

describe('erasure: a deleted resource leaves its place in the feed, not its content', () => {
  test('a contact deleted with its conversations: every earlier event is reduced to the tombstone', async () => {
    const w = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    const body = contactBody({ name: 'Erasable Person', email: 'erasable.person@example.com' });
    const made = { idem: idem() };
    const put = await server.request('PUT', '/v2/contacts/external/crm-erase-1', { key: w.key, body, idem: made.idem });
    assert.equal(put.status, 201);
    const contactId: string = put.json.data.id;
    const patched = { idem: idem() };
    const patch = await server.request('PATCH', `/v2/contacts/${contactId}`, {
      key: w.key,
      body: { company_name: 'Erasable Ltda' },
      idem: patched.idem,
    });
    assert.equal(patch.status, 200);
    const { rows } = await server.db.query<{ id: string }>(
      `INSERT INTO conversations (workspace_id, contact_id, channel) VALUES ($1, $2, 'whatsapp') RETURNING id`,
      [w.id, contactId],
    );
    for (const text of ['First secret words', 'Second secret words']) {
      await server.db.query(
        `INSERT INTO messages (workspace_id, conversation_id, contact_id, direction, kind, text)
         VALUES ($1, $2, $3, 'inbound', 'text', $4)`,
        [w.id, rows[0]!.id, contactId, text],
      );
    }
    const before = await walk(w.key, '');
    await ownerCommands.deleteContact(server.owner, { contactId });
    const afterDeletion = await walk(w.key, '');

    // The same events in the same places, then the deletions.
    assert.deepEqual(
      afterDeletion.slice(0, before.length).map((e) => [e.id, e.type, e.resource_id]),
      before.map((e) => [e.id, e.type, e.resource_id]),
    );
    const erasedIds = new Set([
      contactId,
      rows[0]!.id,
      ...before.filter((e) => e.resource_type === 'message').map((e) => e.resource_id),
    ]);
    for (const e of afterDeletion.filter((e) => erasedIds.has(e.resource_id))) {
      const tombstone =
        e.resource_type === 'contact' ? { id: contactId, external_id: 'crm-erase-1' } : { id: e.resource_id };
      assert.deepEqual(e.data, tombstone, `${e.type} ${e.resource_id}`);
    }
    assert.ok(afterDeletion.some((e) => e.type === 'contact.deleted' && e.resource_id === contactId));
    // Children first: a mirror with the same foreign keys applies the deletions in feed order.
    assert.deepEqual(
      afterDeletion.slice(before.length).map((e) => e.type),
      ['message.deleted', 'message.deleted', 'conversation.deleted', 'contact.deleted'],
    );
    // The stored answers of the writes that returned the contact are erased too: a replay is 404
    // (the write is not run again) and tells nothing of it.
    for (const [method, path, sent, key] of [
      ['PUT', '/v2/contacts/external/crm-erase-1', body, made.idem],
      ['PATCH', `/v2/contacts/${contactId}`, { company_name: 'Erasable Ltda' }, patched.idem],
    ] as const) {
      const replay = await server.request(method, path, { key: w.key, body: sent, idem: key });
      assert.equal(replay.status, 404, replay.text);
      assert.equal(replay.json.error.code, 'resource_not_found');
      assert.ok(!replay.text.includes('Erasable'), replay.text);
    }
    const answers = await server.db.query<{ response_body: string }>(
      'SELECT response_body FROM idempotency_keys WHERE workspace_id = $1',
      [w.id],
    );
    assert.ok(answers.rows.length >= 2);
    for (const r of answers.rows) assert.ok(!r.response_body.includes('Erasable'), 'a stored answer kept the contact');
    // Nothing of it is left in the store either.
    // Neither in the events' data nor in the text the feed writes them with.
    const stored = await server.db.query<{ data: string }>(
      'SELECT data::text || feed_json AS data FROM events WHERE workspace_id = $1',
      [w.id],
    );
    for (const secret of ['Erasable', 'erasable.person', 'secret words', body.phone]) {
      assert.ok(!stored.rows.some((r) => r.data.includes(secret)), `"${secret}" is still in an event`);
    }
  });
});

// ------------------------------------------------------------------------------------------ timing

describe('refused keys cost the same whether their id exists or not', () => {
  test('medians of ≥ 500 interleaved tries each: unknown id vs known id with a wrong secret, within 10%', async (t) => {
    const id = idOf(W.key);
    const wrongSecret = forgeKey(
      id,
      secretOf(W.key).replace(/^./, (c) => (c === 'a' ? 'b' : 'a')),
    );
    const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    const unknownKey = () =>
      forgeKey(Array.from({ length: id.length }, () => BASE62[randomInt(62)]).join(''), secretOf(W.key));
    const once = async (key: string): Promise<number> => {
      const started = performance.now();
      const r = await fetch(`${server.baseUrl}/v1/contacts?limit=1`, { headers: { authorization: `Bearer ${key}` } });
      await r.arrayBuffer();
      const elapsed = performance.now() - started;
      assert.equal(r.status, 401);
      return elapsed;
    };
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    // The valid key is used first, so its credential is in the authentication cache.
    assert.equal((await get(W.key, '/v1/contacts?limit=1')).status, 200);
    const TRIES = 600;
    const ratios: number[] = [];
    // Scheduling noise on a shared machine can skew one round; a real difference skews them all.
    for (let round = 0; round < 3; round++) {
      const unknown: number[] = [];
      const known: number[] = [];
      for (let i = 0; i < 50; i++) await Promise.all([once(unknownKey()), once(wrongSecret)]);
      for (let i = 0; i < TRIES; i++) {
        if (i % 2 === 0) {
          unknown.push(await once(unknownKey()));
          known.push(await once(wrongSecret));
        } else {
          known.push(await once(wrongSecret));
          unknown.push(await once(unknownKey()));
        }
      }
      const [u, k] = [median(unknown), median(known)];
      const ratio = Math.max(u, k) / Math.min(u, k);
      ratios.push(ratio);
      t.diagnostic(
        `${STORE} round ${round + 1}: unknown id ${(u * 1000).toFixed(0)} µs, known id ${(k * 1000).toFixed(0)} µs, ratio ${ratio.toFixed(3)}`,
      );
      figures.add('timing:unknown-us', Math.round(u * 1000));
      figures.add('timing:known-us', Math.round(k * 1000));
      if (ratio <= 1.1) break;
    }
    assert.ok(Math.min(...ratios) <= 1.1, `medians differ by more than 10% in every round: ${ratios.join(', ')}`);
  });
});

// ------------------------------------------------------------------------------------------ /docs paths

describe('/docs: every path is the page or a 404, never a 500 or a logged error', () => {
  test('traversal, encodings, NUL, backslashes, unknown pages and methods', async () => {
    const { lines, stream } = logLines();
    const logged = await startTestServer({
      db: server.db,
      config: OPEN_ADDRESS_LIMIT,
      logger: { logger: { level: 'info', stream } },
    });
    try {
      const targets = [
        '/docs/static/../../../etc/passwd',
        '/docs/static/../../../../../../../../../../etc/passwd',
        '/docs/static/..%2f..%2f..%2fetc%2fpasswd',
        '/docs/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
        '/docs/static/%252e%252e/%252e%252e/etc/passwd',
        '/docs/static/..\\..\\..\\etc\\passwd',
        '/docs/static/%5c..%5c..%5cetc%5cpasswd',
        '/docs/static/....//....//etc/passwd',
        '/docs/static/%00',
        '/docs/static/index.css%00.html',
        '/docs/%00',
        '/docs/%ZZ',
        '/docs/static/%ZZ',
        '/docs/static/%c0%ae%c0%ae/etc/passwd',
        '/docs/static/.',
        '/docs/static/..',
        '/docs/static/%2e%2e',
        '/docs/static/../static/index.css',
        '/docs//etc/passwd',
        '/docs/static//etc/passwd',
        '/docs/../v2/openapi.json',
        '/docs/json/../yaml',
        '/docs/initOAuth',
        '/docs/nothing-here',
        '/docs/static/nothing-here.js',
        `/docs/static/${'a/'.repeat(300)}x`,
        '/docs/static',
      ];
      const wrong: string[] = [];
      for (const target of targets) {
        for (const method of ['GET', 'HEAD', 'POST', 'DELETE']) {
          const r = await raw(logged.baseUrl, { method, target });
          answers.push({ label: `${method} ${target}`, answer: r });
          figures.add('requests');
          if (r.status !== 404) wrong.push(`${method} ${target}: ${r.status}`);
          else if (method !== 'HEAD' && r.json?.error?.code !== 'route_not_found')
            wrong.push(`${method} ${target}: ${r.text}`);
          if (r.text.includes('root:')) wrong.push(`${method} ${target}: a file outside the page`);
        }
      }
      assert.deepEqual(wrong, []);
      // The page and its files are still served.
      for (const page of ['/docs', '/docs/', '/docs/static/index.css', '/docs/json']) {
        assert.equal((await raw(logged.baseUrl, { method: 'GET', target: page })).status, 200, page);
      }
      const errors = lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 50);
      assert.deepEqual(errors, [], 'a bad path logged an error');
    } finally {
      await logged.close();
    }
  });
});

// ------------------------------------------------------------------------------------------ hygiene

describe('hygiene: challenges, nosniff, UTF-8', () => {
  test('401 carries WWW-Authenticate: Bearer (error="invalid_token" once a key was presented); 403 for a scope names it', async () => {
    const none = await get(undefined, '/v2/contacts');
    assert.equal(none.status, 401);
    assert.equal(headerOf(none, 'www-authenticate'), 'Bearer realm="workspace-api"');
    // Another scheme is no bearer token: the challenge carries no error code (RFC 6750, 3.1).
    const basic = await server.request('GET', '/v2/contacts', { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    assert.equal(headerOf(basic, 'www-authenticate'), 'Bearer realm="workspace-api"');
    const presented = [
      'wsk_nothing',
      forgeKey(idOf(W.key), 'x'.repeat(secretOf(W.key).length)),
      forgeKey('0'.repeat(idOf(W.key).length), secretOf(W.key)),
    ];
    for (const key of presented) {
      const r = await get(key, '/v2/contacts');
      assert.equal(r.status, 401);
      assert.equal(headerOf(r, 'www-authenticate'), 'Bearer realm="workspace-api", error="invalid_token"');
    }
    const narrow = (await W.newKey(['contacts:read'])).key;
    const refused = await get(narrow, '/v2/conversations');
    assert.equal(refused.status, 403);
    assert.equal(
      headerOf(refused, 'www-authenticate'),
      'Bearer realm="workspace-api", error="insufficient_scope", scope="conversations:read"',
    );
    const ok = await get(W.key, '/v2/contacts?limit=1');
    assert.equal(headerOf(ok, 'www-authenticate'), null);
  });

  test('bodies that are not UTF-8, or hold lone surrogates, are 400 invalid_json and store nothing', async () => {
    const w = await server.workspace({ rateLimitPerMinute: 1_000_000 });
    const before = await fingerprint(server.db, w.id);
    const send = (body: Buffer | string, key = idem()) =>
      fetch(`${server.baseUrl}/v2/contacts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${w.key}`, 'content-type': 'application/json', 'idempotency-key': key },
        body,
      });
    const withName = (nameBytes: Buffer) =>
      Buffer.concat([Buffer.from('{"name":"'), nameBytes, Buffer.from('","email":"utf8@example.com"}')]);
    const invalid: [string, Buffer | string][] = [
      ['0xFF', withName(Buffer.from([0x41, 0xff, 0x42]))],
      ['a lone continuation byte', withName(Buffer.from([0x80]))],
      ['overlong NUL (C0 80)', withName(Buffer.from([0xc0, 0x80]))],
      ['overlong slash (E0 80 AF)', withName(Buffer.from([0xe0, 0x80, 0xaf]))],
      ['a surrogate encoded in UTF-8 (ED A0 80)', withName(Buffer.from([0xed, 0xa0, 0x80]))],
      ['a truncated sequence', withName(Buffer.from([0xe2, 0x82]))],
      ['beyond U+10FFFF', withName(Buffer.from([0xf4, 0x90, 0x80, 0x80]))],
      ['Latin-1 text', withName(Buffer.from('São Paulo', 'latin1'))],
      ['a lone high surrogate escape', '{"name":"x\\ud800","email":"utf8@example.com"}'],
      ['a lone low surrogate escape', '{"name":"\\udc00x","email":"utf8@example.com"}'],
      ['a reversed pair', '{"name":"\\udc00\\ud800","email":"utf8@example.com"}'],
      ['a lone surrogate in a property name', '{"na\\ud800me":"x","email":"utf8@example.com"}'],
      ['a lone surrogate deep inside', '{"name":"x","email":"utf8@example.com","custom":[{"a":"\\udfff"}]}'],
    ];
    const reusedKey = idem();
    for (const [what, body] of invalid) {
      const r = await send(body, reusedKey);
      const json = (await r.json()) as any;
      answers.push({ label: `POST utf8 ${what}`, answer: { status: r.status, headers: r.headers, text: '', json } });
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(json)}`);
      assert.equal(json.error.code, 'invalid_json', what);
    }
    assert.deepEqual(changedTables(before, await fingerprint(server.db, w.id)), [], 'a refused body stored something');
    // The Idempotency-Key of the refused requests is still free; a real pair and raw UTF-8 are text.
    const good = await send('{"name":"Ana \\ud83d\\ude00 São","email":"utf8@example.com"}', reusedKey);
    assert.equal(good.status, 201);
    assert.equal(((await good.json()) as any).data.name, 'Ana 😀 São');
  });

  test('every answer of this file carries X-Content-Type-Options: nosniff (pages, files, errors, the parser’s refusals)', async () => {
    for (const path of [
      '/healthz',
      '/readyz',
      '/v2/openapi.json',
      '/docs',
      '/docs/static/index.css',
      '/metrics',
      '/nowhere',
    ]) {
      answers.push({ label: `GET ${path}`, answer: await raw(server.baseUrl, { method: 'GET', target: path }) });
    }
    answers.push({
      label: 'malformed request line',
      answer: await raw(server.baseUrl, { method: 'GET', target: '/v1/contacts HTTP/1.1 junk', defaults: true }),
    });
    const missing = answers.filter(
      (a) => a.answer.status !== 0 && headerOf(a.answer, 'x-content-type-options') !== 'nosniff',
    );
    assert.deepEqual(
      missing.map((a) => `${a.label}: ${a.answer.status}`),
      [],
    );
    assert.ok(answers.length > 200, `${answers.length} answers audited`);
  });
});
