// PostgreSQL goes away the moment a receiver answers 2xx. A real `serve` process reaches the
// database through a proxy this file controls; the receiver cuts it while it answers each of the
// first deliveries and restores it 1.5 s later. The sender must keep trying to record the
// acknowledgement while it holds the delivery's lease (the attempt's time limit plus 5 s), so no
// acknowledged event is sent again. Figures: deliveries sent again after their 2xx.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ownerCommands } from '../../src/modules/owner/owner.service.js';
import { cleanUpProcesses, startServer, type ServerProcess } from '../processes.js';
import { Receiver, waitFor as waitUntil } from '../webhooks-support.js';
import {
  call,
  contactFor,
  FaultProxy,
  fileFigures,
  newWorkspaceKey,
  openFaultDatabase,
  report,
  serverEnv,
  sleep,
  throughProxy,
  type FaultDatabase,
} from './support.js';

const TIMEOUT_MS = 1_000;
const OUTAGE_MS = 1_500;
const CUTS = 3;

let fdb: FaultDatabase;
let proxy: FaultProxy;
let server: ServerProcess;
let receiver: Receiver;

before(async () => {
  fdb = await openFaultDatabase('webhook_ack');
  proxy = await new FaultProxy(fdb.url).start();
  receiver = await new Receiver().start();
  server = await startServer(
    serverEnv({
      DATABASE_URL: throughProxy(fdb.url, proxy.port),
      DB_POOL_SIZE: '4',
      WEBHOOK_TARGETS: 'public+loopback',
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_POLL_INTERVAL_MS: '50',
      // A failed attempt is not retried within the test: only a lost acknowledgement sends again.
      WEBHOOK_RETRY_SCHEDULE: '10m',
    }),
    ['--workers', '1'],
  );
});

after(async () => {
  fileFigures('webhook-acknowledgement.test.ts');
  await receiver?.close();
  await cleanUpProcesses();
  await proxy?.close();
  await fdb?.drop();
});

describe('the database lost while a receiver answers 2xx', () => {
  test('the acknowledgement is recorded once the database is back, within the lease: nothing is sent again', async (t) => {
    const { workspaceId, key } = await newWorkspaceKey(fdb.owner);
    const endpoint = await ownerCommands.createWebhook(
      { ...fdb.owner, webhooks: { timeoutMs: TIMEOUT_MS, targets: 'public+loopback' } },
      { workspaceId, url: `${receiver.url}/acks`, scopes: ['contacts:read'] },
    );
    receiver.secrets = [endpoint.secret];
    let cuts = 0;
    receiver.answer = () => {
      if (cuts < CUTS) {
        cuts += 1;
        proxy.cut();
        setTimeout(() => proxy.restore(), OUTAGE_MS);
      }
      return { status: 200 };
    };

    const written: string[] = [];
    for (let i = 0; i < 6; i++) {
      // Writes wait for a cut to end (sent again with their key): each one lands between outages.
      const idem = randomUUID();
      await waitUntil('the database reachable', async () => {
        const r = await call(server.baseUrl, 'POST', '/v2/contacts', { key, idem, body: contactFor(`ack${i}`) });
        if (r.status === 201) written.push(r.json.data.id);
        return r.status === 201;
      });
    }
    await waitUntil('every event acknowledged', () => new Set(receiver.acked().map((d) => d.id)).size === 6, 30_000);
    // Long enough for a lease to run out (time limit + 5 s) and its delivery to be sent again.
    await sleep(TIMEOUT_MS + 5_000 + 1_500);
    const sentAgain = receiver.deliveries.length - new Set(receiver.deliveries.map((d) => d.id)).size;
    report(t, { events: written.length, cuts, deliveries: receiver.deliveries.length, sentAgainAfter2xx: sentAgain });
    assert.equal(cuts, CUTS, 'the database was cut while answering');
    assert.equal(sentAgain, 0, 'no event was sent again after its 2xx');
    const [row] = (await ownerCommands.listWebhooks(fdb.owner, { workspaceId })).filter((e) => e.id === endpoint.id);
    assert.equal(row!.pending, 0, 'every acknowledgement recorded');
  });
});
