// The v2 document's `webhooks` section describes what the service really sends: real deliveries of
// every kind of event (each resource type created, updated, deleted, and earlier events of a
// deleted contact), and the owner's test message, caught by a local receiver and validated with
// Ajv against the committed document — headers and body.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { committedDocument } from './openapi-documents.js';
import { contactBody, idem } from './harness.js';
import { Receiver, waitFor, useWebhookTestServer, type Delivery } from './webhooks-support.js';

type Json = Record<string, any>;

const doc = committedDocument('v2');
const ajv = new Ajv({ strict: false, allErrors: true });
// Header values are text: an integer header is checked as the number it spells.
const headerAjv = new Ajv({ strict: false, allErrors: true, coerceTypes: true });
for (const a of [ajv, headerAjv]) addFormats.default(a);

/** The validators of one documented delivery: its headers and its JSON body. */
function deliveryOf(name: string): { headers: ValidateFunction; body: ValidateFunction; headerNames: string[] } {
  const post = doc.webhooks?.[name]?.post as Json | undefined;
  assert.ok(post, `webhooks.${name} is documented`);
  const parameters = (post.parameters as Json[]).filter((p) => p.in === 'header');
  const headers = headerAjv.compile({
    type: 'object',
    required: parameters.filter((p) => p.required).map((p) => p.name),
    properties: Object.fromEntries(parameters.map((p) => [p.name, p.schema])),
  });
  const content = post.requestBody.content as Json;
  assert.deepEqual(Object.keys(content), ['application/json']);
  return { headers, body: ajv.compile(content['application/json'].schema), headerNames: parameters.map((p) => p.name) };
}

/** The problems of `d` against the documented delivery, as text (empty when none). */
function problems(documented: ReturnType<typeof deliveryOf>, d: Delivery): string[] {
  const found: string[] = [];
  // Copied: Ajv's coercion writes into what it validates.
  const headers = { ...d.headers };
  if (!documented.headers(headers)) found.push(`headers: ${ajv.errorsText(documented.headers.errors)}`);
  const undocumented = Object.keys(d.headers).filter(
    (h) => h.startsWith('webhook-') && !documented.headerNames.includes(h),
  );
  if (undocumented.length > 0) found.push(`undocumented headers: ${undocumented.join(', ')}`);
  if (!/^application\/json\b/.test(String(d.headers['content-type']))) {
    found.push(`content-type: ${d.headers['content-type']}`);
  }
  if (!documented.body(JSON.parse(d.body))) found.push(`body: ${ajv.errorsText(documented.body.errors)}`);
  return found;
}

const receiver = new Receiver();
const server = useWebhookTestServer('wsapi_openapi_webhooks', {}, async () => {
  await receiver.start();
});
after(async () => {
  await receiver.close();
});

describe('the webhooks section of the v2 document', () => {
  test('documents the event deliveries and the test message, and the requests sent match it', async () => {
    const event = deliveryOf('event');
    const message = deliveryOf('webhook.test');
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'user-agent']) {
      assert.ok(event.headerNames.includes(name) && message.headerNames.includes(name), name);
    }

    const ws = await server.workspace();
    const created = await ownerCommands.createWebhook(server.owner, {
      workspaceId: ws.id,
      url: `${receiver.url}/hook`,
      scopes: [
        'workspace:read',
        'contacts:read',
        'appointments:read',
        'catalog:read',
        'conversations:read',
        'messages:read',
        'automations:read',
      ],
    });
    receiver.secrets = [created.secret];
    // Paused while the changes are made, so every event is built after them: those of the deleted
    // contact carry its tombstone.
    await ownerCommands.setWebhookStatus(server.owner, { id: created.id, status: 'disabled' });
    const head = (await server.request('GET', '/v2/events/head', { key: ws.key })).json.data.position as string;

    // Every resource type, then a contact with conversations and appointments deleted: its
    // messages, conversations and itself deleted, its appointments updated, its earlier events
    // erased to its tombstone.
    await ownerCommands.seed(server.owner, {
      workspaceId: ws.id,
      amounts: {
        contacts: 2,
        appointments: 2,
        catalogItems: 1,
        conversations: 2,
        messagesPerConversation: 1,
        automations: 1,
      },
    });
    const made = await server.request('POST', '/v2/contacts', { key: ws.key, idem: idem(), body: contactBody() });
    assert.equal(made.status, 201, made.text);
    const renamed = await server.request('PATCH', `/v2/contacts/${made.json.data.id}`, {
      key: ws.key,
      idem: idem(),
      body: { name: 'Renamed' },
    });
    assert.equal(renamed.status, 200, renamed.text);
    const conversations = await server.request('GET', '/v2/conversations', { key: ws.key });
    const appointments = await server.request('GET', '/v2/appointments', { key: ws.key });
    const deleted = new Set<string>([
      conversations.json.data[0].contact_id,
      appointments.json.data.find((a: Json) => a.contact_id !== null).contact_id,
    ]);
    for (const contactId of deleted) await ownerCommands.deleteContact(server.owner, { contactId });
    await ownerCommands.deleteContact(server.owner, { contactId: made.json.data.id });

    await ownerCommands.setWebhookStatus(server.owner, { id: created.id, status: 'active' });
    const feed = await server.request('GET', `/v2/events?limit=100&after=${head}`, { key: ws.key });
    const expected = (feed.json.data as Json[]).map((e) => e.id as string);
    const types = new Set((feed.json.data as Json[]).map((e) => e.type as string));
    for (const t of ['contact.deleted', 'message.deleted', 'conversation.deleted', 'appointment.updated']) {
      assert.ok(types.has(t), `the feed has a ${t} to deliver`);
    }
    await waitFor('every event delivered', () => {
      const acked = new Set(receiver.acked().map((d) => d.id));
      return expected.every((id) => acked.has(id));
    });
    const test = await ownerCommands.testWebhook(server.owner, { id: created.id });
    assert.equal(test.outcome, 'acked');

    const events = receiver.deliveries.filter((d) => d.id.startsWith('evt_'));
    const tests = receiver.deliveries.filter((d) => d.id.startsWith('test_'));
    assert.equal(tests.length, 1);
    assert.ok(events.every((d) => d.verified) && tests[0]!.verified, 'signed as documented');
    assert.deepEqual(
      events.flatMap((d) => problems(event, d).map((p) => `${d.id} ${JSON.parse(d.body).type}: ${p}`)),
      [],
    );
    assert.deepEqual(problems(message, tests[0]!), []);
    // The two documented bodies are told apart: neither kind is the other.
    assert.ok(!event.body(JSON.parse(tests[0]!.body)), 'a test message is not an event');
    assert.ok(!message.body(JSON.parse(events[0]!.body)), 'an event is not a test message');
    // The deleted contact's creation and update were delivered erased, to its tombstone.
    const erased = events.map((d) => JSON.parse(d.body)).filter((e) => e.resource_id === made.json.data.id);
    assert.deepEqual(
      erased.map((e) => [e.type, Object.keys(e.data).sort().join()]),
      ['contact.created', 'contact.updated', 'contact.deleted'].map((t) => [t, 'external_id,id']),
    );
  });
});
