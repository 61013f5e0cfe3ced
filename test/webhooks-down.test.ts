// A receiver that is down, then back. While it hangs, its endpoint backs off as a whole: after a
// few failed attempts in a row it is paused and tried one attempt at a time, instead of keeping
// its share of delivery slots busy with timeouts event after event. Once it answers 2xx, every
// pending delivery is due at once, including those whose own retry was a minute away. One server
// over a store of this file's own (PGlite, or a PostgreSQL database), with a retry schedule of a
// single one-minute wait, so nothing here is delivered by an event's own retry.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { ownerCommands } from '../src/modules/owner/owner.service.js';
import { contactBody, idem, sleep, STORE } from './harness.js';
import { Receiver, waitFor, useWebhookTestServer, type Delivery } from './webhooks-support.js';

const TIMEOUT_MS = 300;
const EVENTS = 40;

let receiver: Receiver;
const server = useWebhookTestServer(
  'wsapi_webhooks_down',
  { retryScheduleMs: [60_000], timeoutMs: TIMEOUT_MS },
  async () => {
    receiver = await new Receiver().start();
  },
);

after(async () => {
  await receiver?.close();
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
    // The owner sees why nothing arrives: the failures, and the pause between probes.
    const [failing] = (await ownerCommands.listWebhooks(server.owner, { workspaceId: ws.id })).filter(
      (e) => e.id === created.id,
    );
    assert.ok(failing!.failures_in_a_row >= 5, `${failing!.failures_in_a_row} failures in a row listed`);
    assert.ok(failing!.failing_since !== null && Date.parse(failing!.failing_since) >= startedAt - 1_000);
    const hangMs = Date.now() - startedAt;
    // The first attempts fail in fours (the endpoint's cap) until five have failed in a row; then
    // one probe at a time, after pauses that double. Without backing off, the cap would be kept
    // busy the whole time: a new attempt every 75 ms. The probes are the attempts begun a time limit
    // after the fifth failure (one begun before it was recorded still belongs to the fours), and not
    // before 4 time limits from the start: on a loaded machine the fours come later.
    const fifthFailureAt = whileDown.map((d) => d.closedAt ?? Infinity).sort((x, y) => x - y)[4] ?? Infinity;
    const late = whileDown.filter(
      (d) => d.receivedAt > Math.max(startedAt + 4 * TIMEOUT_MS, fifthFailureAt + TIMEOUT_MS),
    );

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
      return (
        row!.pending === 0 && row!.status === 'active' && row!.failures_in_a_row === 0 && row!.paused_until === null
      );
    });
  });

  test('events of other resources are not held back by many later events of one whose earliest waits for a retry', async (t) => {
    const ws = await server.workspace();
    const created = await ownerCommands.createWebhook(server.owner, {
      workspaceId: ws.id,
      url: `${receiver.url}/order`,
      scopes: ['contacts:read'],
    });
    receiver.secrets = [created.secret];
    const create = async () => {
      const r = await server.request('POST', '/v1/contacts', { key: ws.key, body: contactBody(), idem: idem() });
      assert.equal(r.status, 201);
      return r.json.data.id as string;
    };
    const stuck = await create();
    // The receiver refuses the stuck contact's events: its first waits a minute for its retry.
    receiver.answer = (d) => (JSON.parse(d.body).resource_id === stuck ? { status: 500 } : { status: 204 });
    await waitFor('the stuck contact’s first event refused', () =>
      receiver.deliveries.some((d) => d.path === '/order' && d.answered === 500),
    );
    // More later events of it than the claim looks at per endpoint, then another contact.
    for (let i = 0; i < 70; i++) {
      const r = await server.request('PATCH', `/v1/contacts/${stuck}`, {
        key: ws.key,
        body: { name: `Stuck ${i}` },
        idem: idem(),
      });
      assert.equal(r.status, 200);
    }
    const other = await create();
    const startedAt = Date.now();
    await waitFor(
      'the other contact’s event delivered',
      () => receiver.acked().some((d) => d.path === '/order' && JSON.parse(d.body).resource_id === other),
      10_000,
    );
    t.diagnostic(`figures ${JSON.stringify({ otherDeliveredAfterMs: Date.now() - startedAt })}`);
    assert.ok(
      !receiver.deliveries.some((d) => d.path === '/order' && JSON.parse(d.body).data?.name === 'Stuck 0'),
      'the stuck contact’s later events wait for its first',
    );
  });
});
