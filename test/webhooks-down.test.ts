// A receiver that is down, then back. While it hangs, its endpoint backs off as a whole: after a
// few failed attempts in a row it is paused and tried one attempt at a time, instead of keeping
// its share of delivery slots busy with timeouts event after event. Once it answers 2xx, every
// pending delivery is due at once, including those whose own retry was a minute away. One server
// over a store of this file's own (PGlite, or a PostgreSQL database), with a retry schedule of a
// single one-minute wait, so nothing here is delivered by an event's own retry.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../src/infra/database.js';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, sleep, startTestServer, STORE, type TestServer } from './harness.js';
import { ownTestStore, Receiver, waitFor, type Delivery, type OwnTestStore } from './webhooks-support.js';

const TIMEOUT_MS = 300;
const EVENTS = 40;

let store: OwnTestStore | undefined;
let db: Database;
let server: TestServer;
let receiver: Receiver;

before(async () => {
  store = await ownTestStore('wsapi_webhooks_down');
  db = store.db;
  server = await startTestServer({
    db,
    config: {
      webhooks: {
        delivery: true,
        retryScheduleMs: [60_000],
        timeoutMs: TIMEOUT_MS,
        targets: 'public+loopback',
        pollIntervalMs: 50,
        concurrency: 8,
        endpointConcurrency: 4,
        workspaceConcurrency: 4,
      },
    },
  });
  receiver = await new Receiver().start();
});

after(async () => {
  await receiver?.close();
  await server?.close();
  await store?.close();
});

/** The most attempts of `deliveries` in flight at one time. */
function peakInFlight(deliveries: Delivery[]): number {
  const edges = deliveries.flatMap((d) => [
    { at: d.receivedAt, step: 1 },
    { at: d.closedAt ?? Date.now(), step: -1 },
  ]);
  edges.sort((x, y) => x.at - y.at || x.step - y.step);
  let open = 0;
  let peak = 0;
  for (const e of edges) peak = Math.max(peak, (open += e.step));
  return peak;
}

describe(`a receiver down, then back (${STORE})`, () => {
  test('while it hangs the endpoint backs off as a whole; once it answers, the whole backlog comes at once', async (t) => {
    const ws = await server.workspace();
    const created = await ownerCommands.createWebhook(server.owner, {
      workspaceId: ws.id,
      url: `${receiver.url}/down`,
      scopes: ['contacts:read'],
    });
    receiver.secrets = [created.secret];
    let down = true;
    receiver.answer = () => (down ? 'hold' : { status: 204 });

    const startedAt = Date.now();
    for (let i = 0; i < EVENTS; i++) {
      const r = await server.request('POST', '/v1/contacts', { key: ws.key, body: contactBody(), idem: idem() });
      assert.equal(r.status, 201);
    }
    await sleep(2_500);
    const whileDown = receiver.deliveries.filter((d) => d.receivedAt < Date.now());
    const hangMs = Date.now() - startedAt;
    // The first attempts fail in fours (the endpoint's cap) until five have failed in a row; then
    // one probe at a time, after pauses that double. Without backing off, the cap would be kept
    // busy the whole time: a new attempt every 75 ms.
    const late = whileDown.filter((d) => d.receivedAt > startedAt + 4 * TIMEOUT_MS);

    down = false;
    const backAt = Date.now();
    await waitFor('every event acknowledged', () => new Set(receiver.acked().map((d) => d.id)).size === EVENTS, 15_000);
    const allAckedAfterMs = Math.max(...receiver.acked().map((d) => d.answeredAt!)) - backAt;
    const figures = {
      attemptsWhileDown: whileDown.length,
      withoutBackingOff: Math.floor(hangMs / TIMEOUT_MS) * 4,
      peakInFlightAfterFirstFailures: peakInFlight(late),
      allAckedAfterMs,
    };
    t.diagnostic(`figures ${JSON.stringify(figures)}`);
    assert.ok(figures.attemptsWhileDown <= 20, `${figures.attemptsWhileDown} attempts while it hung`);
    assert.ok(figures.peakInFlightAfterFirstFailures <= 1, 'one probe at a time');
    // The events attempted once wait for a retry a minute away: only recovery brings them now.
    assert.ok(allAckedAfterMs < 10_000, `the backlog took ${allAckedAfterMs} ms after the receiver came back`);
    await waitFor('the acknowledgements recorded', async () => {
      const [row] = (await ownerCommands.listWebhooks(server.owner, { workspaceId: ws.id })).filter(
        (e) => e.id === created.id,
      );
      return row!.pending === 0 && row!.status === 'active';
    });
  });
});
