// GET /v2/events writes its pages by hand (each event's data spliced in as the JSON text it already
// is), for speed. Whatever it writes must be byte for byte what the route's schema serializer would
// write for the same page: checked here against Fastify serializing the schema Page(Event).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { feedPageJson } from '../src/modules/events/events.routes.js';
import { Event } from '../src/modules/events/events.schemas.js';
import { publicJson } from '../src/modules/events/events.repository.js';
import { Page } from '../src/shared/schemas.js';

const CONTACT_KEYS = ['id', 'name', 'email', 'tags', 'score', 'external_id', 'notes'];

test('pages written by hand equal what the Page(Event) serializer writes, odd characters included', async () => {
  const app = Fastify();
  let page: unknown;
  app.get('/', { schema: { response: { 200: Page(Event) } } }, async () => page);
  await app.ready();
  const odd = 'quote " backslash \\ slash / tab \t newline \n nul \u0000 line sep \u2028 emoji 🐙 é ﬁ';
  const stored = [
    { id: 'c1', name: 'Ada', email: null, tags: ['a', odd], score: 1.5, external_id: null },
    {
      id: 'c2',
      name: odd,
      email: 'x@example.com',
      tags: [],
      score: -0,
      external_id: 'hub/1',
      nested: { a: [1, { b: odd }] },
    },
    { id: 'c3' },
  ];
  const events = stored.map((data, i) => ({
    id: `evt_${'A'.repeat(21)}${i}`,
    type: i === 2 ? 'contact.deleted' : 'contact.updated',
    resource_type: 'contact' as const,
    resource_id: data.id,
    occurred_at: '2026-11-23T10:00:00.123Z',
    request_id: i === 0 ? null : `req_${odd.slice(0, 10)}`,
    data: publicJson(JSON.stringify(data), [...CONTACT_KEYS, 'nested']),
  }));
  for (const [data, pageInfo] of [
    [[], { limit: 50, has_more: false, next_cursor: null }],
    [events, { limit: 3, has_more: true, next_cursor: 'abc"\\def' }],
    [events.slice(0, 1), { limit: 100, has_more: false, next_cursor: null }],
  ] as const) {
    page = { data: data.map((e) => ({ ...e, data: JSON.parse(e.data) as unknown })), page: pageInfo };
    const bySchema = (await app.inject({ method: 'GET', url: '/' })).body;
    assert.equal(feedPageJson({ data: [...data], page: pageInfo }), bySchema);
  }
  await app.close();
});

test('event data keeps only the public properties, in the order of the schema (as GET writes them)', () => {
  const text = JSON.stringify({ id: 'c1', internal_notes: 'secret', email: null, ai_memory: { x: 1 }, name: 'Ada' });
  assert.equal(publicJson(text, CONTACT_KEYS), '{"id":"c1","name":"Ada","email":null}');
  // As PostgreSQL prints jsonb: shorter keys first, spaces after colons and commas.
  assert.equal(
    publicJson('{"id": "c1", "name": "Ada", "email": "a@b.co"}', CONTACT_KEYS),
    '{"id":"c1","name":"Ada","email":"a@b.co"}',
  );
  assert.equal(publicJson('{"toString": 1, "id": "c1"}', CONTACT_KEYS), '{"id":"c1"}');
});
