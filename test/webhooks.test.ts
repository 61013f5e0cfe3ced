// Outbound webhooks inside one server (the harness's, over the store of the run: PGlite, or a
// PostgreSQL database of this file's own), delivering to a real local receiver that checks every
// signature with the `standardwebhooks` package. Short retry schedules keep it fast; the process
// level (CLI, several workers, kill -9) is test/webhooks-processes.test.ts.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import { ownerCommands, OwnerError } from '../src/modules/owner/owner.service.js';
import { contactBody, deadlocksSoFar, idem, sleep, STORE } from './harness.js';
import { useTestServer } from './test-server.js';
import { ownTestStore, Receiver, waitFor, type OwnTestStore } from './webhooks-support.js';

const SCHEDULE_MS = [150, 300, 300, 300];
const TIMEOUT_MS = 800;
let store: OwnTestStore | undefined;
let db: Database;
const server = useTestServer(async () => {
  store = await ownTestStore('wsapi_webhooks');
  db = store.db;
  return {
    db,
    config: {
      webhooks: {
        delivery: true,
        retryScheduleMs: SCHEDULE_MS,
        timeoutMs: TIMEOUT_MS,
        targets: 'public+loopback',
        pollIntervalMs: 50,
        concurrency: 4,
        endpointConcurrency: 4,
        workspaceConcurrency: 4,
      },
    },
  };
});
const receivers: Receiver[] = [];

after(async () => {
  for (const r of receivers) await r.close();
  await store?.close();
});

async function receiver(): Promise<Receiver> {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
}

/** A workspace with a key that writes contacts and reads the feed as an endpoint with `scopes` would. */
async function setup(scopes: string[] = ['contacts:read']) {
  const ws = await server.workspace();
  const reader = await ws.newKey(['events:read', ...(scopes as never[])]);
  const head = (await server.request('GET', '/v2/events/head', { key: ws.key })).json.data.position as string;
  return { ws, reader, head };
}

async function endpoint(workspaceId: string, url: string, extra: { scopes?: string[]; events?: string[] } = {}) {
  return ownerCommands.createWebhook(server.owner, {
    workspaceId,
    url,
    scopes: extra.scopes ?? ['contacts:read'],
    ...(extra.events ? { events: extra.events } : {}),
  });
}

async function feed(key: string, after: string): Promise<any[]> {
  const events: any[] = [];
  let path = `/v2/events?limit=100&after=${after}`;
  for (;;) {
    const page = await server.request('GET', path, { key });
    assert.equal(page.status, 200);
    events.push(...page.json.data);
    if (!page.json.page.has_more) return events;
    path = `/v2/events?limit=100&cursor=${page.json.page.next_cursor}`;
  }
}

const createContact = async (key: string) => {
  const r = await server.request('POST', '/v1/contacts', { key, body: contactBody(), idem: idem() });
  assert.equal(r.status, 201);
  return r.json.data.id as string;
};
const renameContact = async (key: string, id: string, name: string) => {
  const r = await server.request('PATCH', `/v1/contacts/${id}`, { key, body: { name }, idem: idem() });
  assert.equal(r.status, 200);
};
const ackedIds = (r: Receiver) => r.acked().map((d) => d.id);
const endpointRow = async (id: string) =>
  (await ownerCommands.listWebhooks(server.owner, {})).find((e) => e.id === id)!;

describe('webhooks in one server', () => {
  test('create: a Standard Webhooks secret shown once; list shows a hint of it at most; bad input is refused', async () => {
    const { ws } = await setup();
    const r = await receiver();
    const created = await endpoint(ws.id, `${r.url}/hook`, { events: ['contact.deleted', 'contact.created'] });
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32);
    assert.deepEqual(created.events, ['contact.created', 'contact.deleted']);
    assert.equal(created.status, 'active');
    const listed = await ownerCommands.listWebhooks(server.owner, { workspaceId: ws.id });
    assert.equal(listed.length, 1);
    assert.ok(!JSON.stringify(listed).includes(created.secret.slice(6, 20)), 'list never carries the secret');
    assert.equal(listed[0]!.secret_hint, `${created.secret.slice(0, 10)}…`);

    const refusals: [string, Parameters<typeof ownerCommands.createWebhook>[1]][] = [
      ['scheme', { workspaceId: ws.id, url: 'ftp://127.0.0.1/x', scopes: ['contacts:read'] }],
      ['not a url', { workspaceId: ws.id, url: 'nope', scopes: ['contacts:read'] }],
      ['credentials', { workspaceId: ws.id, url: 'http://u:p@127.0.0.1/', scopes: ['contacts:read'] }],
      ['private', { workspaceId: ws.id, url: 'http://10.1.2.3/', scopes: ['contacts:read'] }],
      ['metadata', { workspaceId: ws.id, url: 'http://169.254.169.254/latest', scopes: ['contacts:read'] }],
      ['mapped', { workspaceId: ws.id, url: 'http://[::ffff:192.168.0.1]/', scopes: ['contacts:read'] }],
      ['ula', { workspaceId: ws.id, url: 'http://[fd00::1]/', scopes: ['contacts:read'] }],
      ['no scope', { workspaceId: ws.id, url: r.url, scopes: [] }],
      ['unknown scope', { workspaceId: ws.id, url: r.url, scopes: ['contacts:everything'] }],
      ['reads nothing', { workspaceId: ws.id, url: r.url, scopes: ['events:read', 'contacts:write'] }],
      ['unknown type', { workspaceId: ws.id, url: r.url, scopes: ['contacts:read'], events: ['contact.merged'] }],
      [
        'type outside scopes',
        { workspaceId: ws.id, url: r.url, scopes: ['contacts:read'], events: ['message.created'] },
      ],
    ];
    for (const [why, input] of refusals) {
      await assert.rejects(ownerCommands.createWebhook(server.owner, input), OwnerError, why);
    }
    await assert.rejects(
      ownerCommands.createWebhook(server.owner, {
        workspaceId: ws.id,
        url: r.url,
        scopes: ['contacts:read'],
        events: ['message.created'],
      }),
      /needs the scope messages:read/,
    );
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });

  test('a delivery is the feed event, byte for byte, signed per Standard Webhooks; webhook-id is the event id', async () => {
    const { ws, reader, head } = await setup();
    const r = await receiver();
    const created = await endpoint(ws.id, `${r.url}/in`);
    r.secrets = [created.secret];
    const id = await createContact(ws.key);
    await renameContact(ws.key, id, 'Renamed');
    const expected = await feed(reader.key, head);
    assert.equal(expected.length, 2);
    await waitFor('both events acknowledged', () => r.acked().length === 2);
    for (const [i, d] of r.acked().entries()) {
      assert.equal(d.id, expected[i].id);
      assert.equal(d.body, JSON.stringify(expected[i]), 'the body is the event exactly as GET /v2/events lists it');
      assert.ok(d.verified, 'standardwebhooks verifies the signature with the printed secret');
      assert.ok(Math.abs(Number(d.timestamp) - Date.now() / 1000) < 60);
      assert.equal(d.path, '/in');
      assert.match(d.userAgent ?? '', /^workspace-public-api-webhooks\//);
    }
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });

  test('scope rule: contacts:read alone never receives appointment, conversation or message events', async () => {
    const { ws, reader, head } = await setup(['contacts:read']);
    const all = await ws.newKey([
      'events:read',
      'contacts:read',
      'appointments:read',
      'conversations:read',
      'messages:read',
    ]);
    const r = await receiver();
    const created = await endpoint(ws.id, r.url);
    r.secrets = [created.secret];
    await ownerCommands.seed(server.owner, {
      workspaceId: ws.id,
      amounts: { contacts: 2, appointments: 2, conversations: 1, messagesPerConversation: 2 },
    });
    const everything = await feed(all.key, head);
    const kinds = new Set(everything.map((e) => e.resource_type));
    for (const kind of ['appointment', 'conversation', 'message'])
      assert.ok(kinds.has(kind), `the feed has ${kind} events`);
    const readable = await feed(reader.key, head);
    await waitFor('every readable event acknowledged', () => r.acked().length >= readable.length);
    await sleep(300); // and nothing more arrives
    assert.deepEqual(
      r.deliveries.map((d) => d.id).sort(),
      readable.map((e) => e.id).sort(),
      'exactly the events a key with the same scopes reads, each once',
    );
    assert.ok(r.deliveries.every((d) => ['contact', 'pipeline_stage'].includes(JSON.parse(d.body).resource_type)));
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });

  test('retries: a failing event is retried with the schedule; later events of its resource wait, other resources do not', async () => {
    const { ws } = await setup();
    const r = await receiver();
    const created = await endpoint(ws.id, r.url);
    r.secrets = [created.secret];
    // The first event this receiver sees (contact a's creation) fails — 503, then a timeout, then
    // 500 — before it passes.
    let first: string | null = null;
    let failures = 0;
    r.answer = (d) => {
      first ??= d.id;
      if (d.id !== first) return { status: 200 };
      failures += 1;
      if (failures === 1) return { status: 503 };
      if (failures === 2) return { status: 200, delayMs: 1_200 }; // beyond the 800 ms limit
      if (failures === 3) return { status: 500 };
      return { status: 200 };
    };
    const head = (await server.request('GET', '/v2/events/head', { key: ws.key })).json.data.position as string;
    const a = await createContact(ws.key);
    await renameContact(ws.key, a, 'a, second event');
    const b = await createContact(ws.key);
    await renameContact(ws.key, b, 'b, second event');
    const reader = await ws.newKey(['events:read', 'contacts:read']);
    const expected = await feed(reader.key, head);
    const aFirst = expected[0].id as string;
    await waitFor('every event acknowledged', () => expected.every((e) => ackedIds(r).includes(e.id)), 20_000);
    assert.equal(first, aFirst, "the failing event is contact a's creation");

    const attemptsOfFirst = r.deliveries.filter((d) => d.id === aFirst);
    assert.ok(attemptsOfFirst.length >= 4, `${attemptsOfFirst.length} attempts of a's first event`);
    assert.ok(attemptsOfFirst.every((d) => d.verified));
    const gaps = attemptsOfFirst.slice(1).map((d, i) => d.receivedAt - attemptsOfFirst[i]!.receivedAt);
    assert.ok(gaps[0]! >= SCHEDULE_MS[0]! * 0.8, `first retry after ${gaps[0]} ms`);
    // a's second event arrives only after a's first was acknowledged; b's went on meanwhile.
    const ackedAt = (id: string) => r.acked().find((d) => d.id === id)!.answeredAt!;
    const firstArrival = (id: string) => r.deliveries.find((d) => d.id === id)!.receivedAt;
    const aEvents = expected.filter((e) => e.resource_id === a).map((e) => e.id);
    const bEvents = expected.filter((e) => e.resource_id === b).map((e) => e.id);
    assert.ok(firstArrival(aEvents[1]) >= ackedAt(aEvents[0]), "a's second event waited for its first");
    assert.ok(ackedAt(bEvents[1]) < ackedAt(aEvents[0]), 'b was not held back by a');
    // Nothing acknowledged was sent again.
    for (const id of ackedIds(r)) {
      const acked = r.acked().find((d) => d.id === id)!;
      assert.ok(!r.deliveries.some((d) => d.id === id && d.receivedAt > acked.answeredAt!), `${id} sent after its 2xx`);
    }
    const history = await ownerCommands.webhookDeliveries(server.owner, { id: created.id });
    const outcomes = history.attempts.filter((x) => x.message_id === aFirst).map((x) => x.outcome);
    assert.deepEqual(outcomes.sort(), ['acked', 'failed', 'failed', 'timeout'].sort());
    assert.ok(history.attempts.some((x) => x.message_id === aFirst && x.status === 503 && x.duration_ms >= 0));
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });

  test('410 disables the endpoint at once, with the reason; enable resumes and delivers what was pending', async () => {
    const { ws } = await setup();
    const r = await receiver();
    const created = await endpoint(ws.id, r.url);
    r.secrets = [created.secret];
    r.answer = () => ({ status: 410 });
    await createContact(ws.key);
    await waitFor('disabled', async () => (await endpointRow(created.id)).status === 'disabled');
    const row = await endpointRow(created.id);
    assert.match(row.status_reason ?? '', /410/);
    assert.equal(row.pending, 1);
    assert.equal(r.deliveries.length, 1, 'no retry after a 410');
    await createContact(ws.key);
    // Queued all the same, and counted: the backlog of a disabled endpoint is visible.
    await waitFor('the new event queued', async () => (await endpointRow(created.id)).pending === 2);
    assert.ok((await endpointRow(created.id)).oldest_pending_at);
    await sleep(400);
    assert.equal(r.deliveries.length, 1, 'nothing is sent while disabled');
    r.answer = () => ({ status: 204 });
    await ownerCommands.setWebhookStatus(server.owner, { id: created.id, status: 'active' });
    await waitFor('both acknowledged', () => r.acked().length === 2);
    // The receiver has answered; the sender records the acknowledgement just after.
    await waitFor('the acknowledgements recorded', async () => (await endpointRow(created.id)).pending === 0);
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });

  test('a spent schedule marks the endpoint failing with why; replay --after resumes and sends acknowledged events again', async () => {
    const { ws, reader, head } = await setup();
    const r = await receiver();
    const created = await endpoint(ws.id, r.url);
    r.secrets = [created.secret];
    const id = await createContact(ws.key);
    await waitFor('acknowledged', () => r.acked().length === 1);
    r.answer = () => ({ status: 500 });
    await renameContact(ws.key, id, 'second');
    await waitFor('failing', async () => (await endpointRow(created.id)).status === 'failing', 15_000);
    const failing = await endpointRow(created.id);
    assert.equal(failing.status_reason, `last attempt: HTTP 500 after ${SCHEDULE_MS.length + 1} attempts`);
    const second = (await feed(reader.key, head))[1].id;
    assert.equal(r.deliveries.filter((d) => d.id === second).length, SCHEDULE_MS.length + 1);

    r.answer = () => ({ status: 200 });
    await assert.rejects(
      ownerCommands.replayWebhook(server.owner, { id: created.id, after: 'evt_AAAAAAAAAAAAAAAAAAAAAA' }),
      /not an event id of workspace/,
    );
    const other = await setup();
    const otherId = await createContact(other.ws.key);
    const otherEvent = (await feed(other.reader.key, other.head)).find((e) => e.resource_id === otherId).id;
    await assert.rejects(
      ownerCommands.replayWebhook(server.owner, { id: created.id, after: otherEvent }),
      /not an event id of workspace/,
      "another workspace's event id is refused",
    );
    const before = r.deliveries.length;
    const replay = await ownerCommands.replayWebhook(server.owner, { id: created.id, after: head });
    assert.equal(replay.endpoint.status, 'active');
    await waitFor('both events delivered again', () => r.acked().filter((d) => d.receivedAt > 0).length >= 3);
    const again = r.deliveries.slice(before);
    assert.deepEqual(
      again.filter((d) => d.answered === 200).map((d) => d.id),
      (await feed(reader.key, head)).map((e) => e.id),
      'the replay sent every event after the position, in order',
    );
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });

  test('a suspended workspace’s deliveries wait, and go out when it is resumed', async () => {
    const { ws } = await setup();
    const r = await receiver();
    const created = await endpoint(ws.id, r.url);
    const id = await createContact(ws.key);
    await waitFor('the creation acknowledged', () => r.acked().length === 1);
    await ownerCommands.setWorkspaceStatus(server.owner, { workspaceId: ws.id, status: 'suspended' });
    await ownerCommands.deleteContact(server.owner, { contactId: id });
    await sleep(500);
    assert.equal(r.deliveries.length, 1, 'nothing is sent while the workspace is suspended');
    await ownerCommands.setWorkspaceStatus(server.owner, { workspaceId: ws.id, status: 'active' });
    await waitFor('the deletion acknowledged', () => r.acked().length === 2);
    assert.equal(JSON.parse(r.acked()[1]!.body).type, 'contact.deleted');
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });

  test('secret rotation: during the grace both signatures, each valid alone; after it only the new one', async () => {
    const { ws } = await setup();
    const r = await receiver();
    const created = await endpoint(ws.id, r.url);
    const rotated = await ownerCommands.rotateWebhookSecret(server.owner, { id: created.id, graceMs: 1_500 });
    assert.notEqual(rotated.secret, created.secret);
    r.secrets = [created.secret, rotated.secret];
    await createContact(ws.key);
    await waitFor('delivered during the grace', () => r.acked().length === 1);
    const during = r.acked()[0]!;
    assert.equal(during.signature.split(' ').length, 2);
    assert.deepEqual(during.verifiedBy, [true, true], 'the old and the new secret each verify it');
    await sleep(1_600);
    await createContact(ws.key);
    await waitFor('delivered after the grace', () => r.acked().length === 2);
    const later = r.acked()[1]!;
    assert.equal(later.signature.split(' ').length, 1);
    assert.deepEqual(later.verifiedBy, [false, true]);
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });

  test('a redirect is not followed: the 3xx is a failed attempt and its target is never asked', async () => {
    const { ws } = await setup();
    const r = await receiver();
    const target = await receiver();
    const created = await endpoint(ws.id, r.url);
    r.secrets = [created.secret];
    r.answer = () => ({ status: 307, headers: { location: `${target.url}/elsewhere` } });
    const test = await ownerCommands.testWebhook(server.owner, { id: created.id });
    assert.equal(test.outcome, 'failed');
    assert.equal(test.status, 307);
    assert.match(test.error ?? '', /redirect/);
    await createContact(ws.key);
    await waitFor('a retry', () => r.deliveries.filter((d) => d.id.startsWith('evt_')).length >= 2);
    assert.equal(target.deliveries.length, 0);
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });

  test('only the status counts: an endless answer is cut after 64 KiB, not read until the time limit', async () => {
    const { ws } = await setup();
    let written = 0;
    const endless = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = setInterval(() => {
        if (res.destroyed) return clearInterval(pump);
        written += chunk.length;
        res.write(chunk);
      }, 5);
    });
    await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
    try {
      const created = await endpoint(ws.id, `http://127.0.0.1:${(endless.address() as AddressInfo).port}/`);
      await ownerCommands.setWebhookStatus(server.owner, { id: created.id, status: 'disabled' });
      const result = await ownerCommands.testWebhook(
        { ...server.owner, webhooks: { timeoutMs: 5_000, targets: 'public+loopback' } },
        { id: created.id },
      );
      assert.equal(result.outcome, 'acked');
      assert.ok(result.duration_ms < 2_500, `cut after ${result.duration_ms} ms, not at the 5 s limit`);
      assert.ok(written > 64 * 1024, 'the answer was longer than the cap');
      await ownerCommands.deleteWebhook(server.owner, { id: created.id });
    } finally {
      endless.closeAllConnections();
      await new Promise((resolve) => endless.close(resolve));
    }
  });

  test('WEBHOOK_TARGETS=public refuses loopback, by name (at connect time) and by address; nothing reaches it', async () => {
    const { ws } = await setup();
    const r = await receiver();
    const port = new URL(r.url).port;
    const byName = await endpoint(ws.id, `http://localhost:${port}/`);
    await ownerCommands.setWebhookStatus(server.owner, { id: byName.id, status: 'disabled' });
    const strict = { ...server.owner, webhooks: { timeoutMs: 800, targets: 'public' as const } };
    const refused = await ownerCommands.testWebhook(strict, { id: byName.id });
    assert.equal(refused.outcome, 'refused');
    assert.match(refused.error ?? '', /loopback/);
    await assert.rejects(
      ownerCommands.createWebhook(strict, { workspaceId: ws.id, url: r.url, scopes: ['contacts:read'] }),
      /loopback/,
    );
    assert.equal(r.deliveries.length, 0);
    // The default (public+loopback) reaches it.
    r.secrets = [byName.secret];
    const allowed = await ownerCommands.testWebhook(server.owner, { id: byName.id });
    assert.equal(allowed.outcome, 'acked');
    assert.match(allowed.message_id, /^test_/);
    assert.ok(r.deliveries[0]!.verified);
    assert.deepEqual(JSON.parse(r.deliveries[0]!.body).type, 'webhook.test');
    await ownerCommands.deleteWebhook(server.owner, { id: byName.id });
  });

  test('an endpoint deleted while its attempts are in flight: the 2xx answers recorded with theirs are kept at once, none sent again', async () => {
    const doomed = await setup();
    const kept = await setup();
    const rDoomed = await receiver();
    const rKept = await receiver();
    rDoomed.answer = () => ({ status: 200, delayMs: 400 });
    rKept.answer = () => ({ status: 200, delayMs: 400 });
    const gone = await endpoint(doomed.ws.id, rDoomed.url);
    const stays = await endpoint(kept.ws.id, rKept.url);
    // Both endpoints' attempts in flight together, so their answers come back together and go
    // into the same statements that record them.
    await Promise.all([0, 1, 2].flatMap(() => [createContact(doomed.ws.key), createContact(kept.ws.key)]));
    await waitFor('attempts in flight to both', () => rDoomed.deliveries.length >= 3 && rKept.deliveries.length >= 3);
    await ownerCommands.deleteWebhook(server.owner, { id: gone.id });

    await waitFor('the kept endpoint answered', () => rKept.acked().length >= 3);
    const answeredAt = Math.max(...rKept.acked().map((d) => d.answeredAt!));
    await waitFor(
      'the kept endpoint’s answers recorded',
      async () => {
        const { rows } = await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND acked_at IS NOT NULL',
          [stays.id],
        );
        return rows[0]!.n === 3;
      },
      // Well inside the lease (the time limit and 5 s): a batch that failed on the deleted
      // endpoint's answers would be retried until their lease ended, and then sent again.
      2_000,
    );
    assert.ok(Date.now() - answeredAt < 2_000);
    await sleep(TIMEOUT_MS + 5_000 - (Date.now() - answeredAt) + 500);
    assert.equal(rKept.deliveries.length, 3, 'no delivery of the kept endpoint sent again');
    const history = await ownerCommands.webhookDeliveries(server.owner, { id: stays.id });
    assert.equal(history.attempts.filter((a) => a.outcome === 'acked').length, 3);
    await ownerCommands.deleteWebhook(server.owner, { id: stays.id });
  });

  // The deletion locks the endpoint, then its deliveries; an attempt being settled holds its
  // delivery, then needs the endpoint for its history row. PostgreSQL's own locks only, so
  // PostgreSQL only (the embedded store runs one statement at a time).
  if (STORE === 'postgres') {
    test('deleting an endpoint while an attempt is being settled: the deadlock PostgreSQL breaks is retried, the endpoint goes', async () => {
      const { ws } = await setup();
      // A session checks for a deadlock once, deadlock_timeout after it starts waiting. The settling
      // session checks after 10 s (where the role may set it: a superuser's setting), the deletion
      // after the default 1 s, so the deletion is the one aborted — unless the two cross more than
      // a second apart (a stalled machine): then the settling session is, and the round runs again.
      const { rows: role } = await db.query<{ rolsuper: boolean }>(
        'SELECT rolsuper FROM pg_roles WHERE rolname = current_user',
      );
      const settling = createPostgresDatabase(store!.url!, 1);
      try {
        for (let round = 1; ; round++) {
          const created = await endpoint(ws.id, 'http://127.0.0.1:9/never');
          // A pending delivery no loop will take (due in a day), held the way a settling attempt holds it.
          await db.query(
            `INSERT INTO webhook_deliveries (endpoint_id, stamp, seq, resource_type, resource_id, next_attempt_at)
             VALUES ($1, 1, 1, 'contact', 'held', now() + interval '1 day')`,
            [created.id],
          );
          const deadlocksBefore = await deadlocksSoFar(db);
          let deleting: Promise<unknown> | undefined;
          const settled = await settling
            .transaction(async (tx) => {
              if (role[0]?.rolsuper) await tx.query(`SET LOCAL deadlock_timeout = '10s'`);
              await tx.query(`UPDATE webhook_deliveries SET last_error = 'settling' WHERE endpoint_id = $1`, [
                created.id,
              ]);
              // The deletion now holds the endpoint and waits for the delivery...
              deleting = ownerCommands.deleteWebhook(server.owner, { id: created.id }).then(
                (row) => row,
                (err: unknown) => err,
              );
              await waitFor('the deletion waits for the held delivery', async () => {
                const { rows } = await db.query(
                  `SELECT 1 FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock'
                      AND query LIKE 'DELETE FROM webhook_endpoints%'`,
                );
                return rows.length > 0;
              });
              // ...and the attempt's history row waits for the endpoint: the two cross.
              await tx.query(
                `INSERT INTO webhook_attempts (endpoint_id, message_id, outcome, duration_ms) VALUES ($1, 'm', 'failed', 1)`,
                [created.id],
              );
            })
            .then(
              () => true,
              (err: { code?: string }) => {
                if (err.code === '40P01' && round < 5) return false;
                throw err;
              },
            );
          const outcome = await deleting;
          assert.ok(!(outcome instanceof Error), `the deletion failed: ${String(outcome)}`);
          const { rows } = await db.query('SELECT 1 FROM webhook_endpoints WHERE id = $1', [created.id]);
          assert.equal(rows.length, 0, 'the endpoint is gone');
          if (!settled) continue;
          // The settling transaction committed, so the deletion was the one aborted, and it went.
          await sleep(1_500);
          assert.ok((await deadlocksSoFar(db)) > deadlocksBefore, 'the two did cross');
          break;
        }
      } finally {
        await settling.close();
      }
    });
  }

  test('/metrics: attempts by outcome, their latency, the oldest pending delivery per endpoint', async () => {
    const { ws } = await setup();
    const r = await receiver();
    const created = await endpoint(ws.id, r.url);
    await createContact(ws.key);
    await waitFor('acknowledged', () => r.acked().length === 1);
    r.answer = () => 'hold';
    await createContact(ws.key);
    await waitFor('held', () => r.deliveries.length === 2);
    await sleep(200);
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const oldest = new RegExp(
      `^wsapi_webhook_oldest_pending_seconds\\{endpoint="${created.id}"\\} ([0-9.]+)$`,
      'm',
    ).exec(text);
    assert.ok(oldest && Number(oldest[1]) > 0.1, 'the held delivery is pending');
    assert.match(text, /^wsapi_webhook_deliveries_total\{outcome="acked"\} [1-9]/m);
    assert.match(text, /^wsapi_webhook_attempt_duration_seconds_count [1-9]/m);
    await ownerCommands.deleteWebhook(server.owner, { id: created.id });
  });
});
