// Signatures against the reference: what the server signs verifies with the `standardwebhooks`
// package, what that package signs verifies with the TypeScript client's verifyWebhook, and the
// receiver example (examples/webhook-receiver) accepts a good delivery once and refuses a forged one.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '../clients/typescript/src/index.js';
import { createReceiver } from '../examples/webhook-receiver/receiver.js';
import { loadConfig } from '../src/config.js';
import { refusalOf } from '../src/modules/webhooks/http-target.js';
import { newWebhookSecret, signatureHeader } from '../src/modules/webhooks/signing.js';

const body = JSON.stringify({
  id: 'evt_q2Xc0Lw9RkT1mHb7YpZs4A',
  type: 'contact.created',
  resource_type: 'contact',
  resource_id: '0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41',
  occurred_at: '2026-11-22T06:05:43.123Z',
  request_id: null,
  data: { id: '0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41', name: 'Ana Souza ✓' },
});
const now = () => Math.floor(Date.now() / 1000);
const headersOf = (id: string, ts: number, signature: string) => ({
  'webhook-id': id,
  'webhook-timestamp': String(ts),
  'webhook-signature': signature,
});

test('a secret is whsec_ and the base64 of 32 random bytes', () => {
  const secrets = new Set(Array.from({ length: 50 }, newWebhookSecret));
  assert.equal(secrets.size, 50);
  for (const s of secrets) {
    assert.match(s, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(s.slice(6), 'base64').length, 32);
  }
});

test('the server’s signature verifies with standardwebhooks; one by another secret or of another body does not', () => {
  const secret = newWebhookSecret();
  const ts = now();
  const headers = headersOf(
    'evt_q2Xc0Lw9RkT1mHb7YpZs4A',
    ts,
    signatureHeader('evt_q2Xc0Lw9RkT1mHb7YpZs4A', ts, body, [secret]),
  );
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  assert.equal(
    headers['webhook-signature'],
    new Webhook(secret).sign('evt_q2Xc0Lw9RkT1mHb7YpZs4A', new Date(ts * 1000), body),
  );
  assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers));
  assert.throws(() => new Webhook(secret).verify(body.replace('Ana', 'Ann'), headers));
});

test('during a rotation the header carries two signatures, and each secret alone verifies it', () => {
  const [old, fresh] = [newWebhookSecret(), newWebhookSecret()];
  const ts = now();
  const signature = signatureHeader('msg_1', ts, body, [fresh, old]);
  assert.equal(signature.split(' ').length, 2);
  for (const secret of [old, fresh]) {
    assert.deepEqual(new Webhook(secret).verify(body, headersOf('msg_1', ts, signature)), JSON.parse(body));
    assert.equal(verifyWebhook(secret, body, headersOf('msg_1', ts, signature)).id, JSON.parse(body).id);
  }
});

test('verifyWebhook accepts what standardwebhooks signs, and refuses forgeries, stale timestamps and missing headers', () => {
  const secret = newWebhookSecret();
  const ts = now();
  const signed = new Webhook(secret).sign('evt_q2Xc0Lw9RkT1mHb7YpZs4A', new Date(ts * 1000), body);
  const good = headersOf('evt_q2Xc0Lw9RkT1mHb7YpZs4A', ts, signed);
  assert.deepEqual(verifyWebhook(secret, body, good), JSON.parse(body));
  assert.deepEqual(verifyWebhook(secret, Buffer.from(body), new Headers(good)), JSON.parse(body));
  assert.deepEqual(verifyWebhook([newWebhookSecret(), secret], body, good), JSON.parse(body));
  const refused: [string, () => unknown][] = [
    ['other secret', () => verifyWebhook(newWebhookSecret(), body, good)],
    ['other body', () => verifyWebhook(secret, `${body} `, good)],
    ['other id', () => verifyWebhook(secret, body, { ...good, 'webhook-id': 'evt_other' })],
    ['stale', () => verifyWebhook(secret, body, good, { now: new Date((ts + 301) * 1000) })],
    ['future', () => verifyWebhook(secret, body, good, { now: new Date((ts - 301) * 1000) })],
    ['no signature', () => verifyWebhook(secret, body, { ...good, 'webhook-signature': undefined })],
    [
      'other version',
      () => verifyWebhook(secret, body, { ...good, 'webhook-signature': signed.replace('v1,', 'v2,') }),
    ],
    ['not a number', () => verifyWebhook(secret, body, { ...good, 'webhook-timestamp': `${ts}.0` })],
  ];
  for (const [why, attempt] of refused) assert.throws(attempt, WebhookVerificationError, why);
});

test('the receiver example applies a verified delivery once and refuses a forged one', async () => {
  const secret = newWebhookSecret();
  const applied: string[] = [];
  const server = createReceiver({
    secrets: [secret],
    seen: new Set<string>(),
    async apply(event) {
      applied.push(event.id);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  try {
    const ts = now();
    const headers = headersOf(
      'evt_q2Xc0Lw9RkT1mHb7YpZs4A',
      ts,
      signatureHeader('evt_q2Xc0Lw9RkT1mHb7YpZs4A', ts, body, [secret]),
    );
    const send = (h: Record<string, string>) =>
      fetch(url, { method: 'POST', headers: { ...h, 'content-type': 'application/json' }, body }).then((r) => r.status);
    assert.equal(await send(headers), 204);
    assert.equal(await send(headers), 204, 'a delivery seen again is acknowledged');
    assert.deepEqual(applied, ['evt_q2Xc0Lw9RkT1mHb7YpZs4A'], '…and applied once');
    const forged = signatureHeader('evt_q2Xc0Lw9RkT1mHb7YpZs4A', ts, body, [newWebhookSecret()]);
    assert.equal(await send({ ...headers, 'webhook-signature': forged }), 401);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('the default retry schedule: ten attempts over about three days; WEBHOOK_RETRY_SCHEDULE replaces it, a bad one stops the start', () => {
  const schedule = loadConfig({}).webhooks.retryScheduleMs;
  assert.equal(schedule.length + 1, 10);
  const hours = schedule.reduce((a, b) => a + b, 0) / 3_600_000;
  assert.ok(hours > 72 && hours < 80, `${hours} hours`);
  assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1s,2s,5s' }).webhooks.retryScheduleMs, [1000, 2000, 5000]);
  assert.throws(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1s,soon' }), /WEBHOOK_RETRY_SCHEDULE/);
});

test('WEBHOOK_TARGETS: the default reaches public addresses only; loopback is an opt-in for development', () => {
  const policy = loadConfig({}).webhooks.targets;
  assert.equal(policy, 'public');
  assert.equal(refusalOf('93.184.216.34', policy), null);
  for (const loopback of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
    assert.match(refusalOf(loopback, policy) ?? '', /is a loopback address \(WEBHOOK_TARGETS=public\)/, loopback);
    assert.equal(refusalOf(loopback, loadConfig({ WEBHOOK_TARGETS: 'public+loopback' }).webhooks.targets), null);
  }
});

test('WEBHOOK_TARGETS: only unicast IPv4 and global unicast IPv6 are public; IPv6 forms that carry an IPv4 address are refused', () => {
  const refused = [
    // IPv4 special ranges, cloud metadata among them
    ...['10.0.0.1', '172.16.0.1', '192.168.1.1', '100.64.0.1', '169.254.169.254', '0.0.0.0', '255.255.255.255'],
    ...['224.0.0.1', '192.0.0.1', '192.0.2.1', '192.88.99.1', '198.18.0.1', '198.51.100.1', '203.0.113.1', '240.0.0.1'],
    // IPv6 special ranges
    ...['::', 'fd00::1', 'fe80::1', 'fec0::1', 'ff02::1', '100::1', '2001:db8::1', '3fff::1', '5f00::1'],
    ...['2001:2::1', '2001:10::1', '2001:20::1'],
    // IPv6 that carries an IPv4 address: mapped to a private one, IPv4-compatible, SIIT, 6to4,
    // NAT64 (both prefixes), Teredo
    ...['::ffff:10.0.0.1', '::ffff:a9fe:a9fe', '::a9fe:a9fe', '::ffff:0:a9fe:a9fe', '::ffff:0:10.0.0.1'],
    ...['2002:a9fe:a9fe::1', '2002:a00:1::1', '64:ff9b::a9fe:a9fe', '64:ff9b:1::a9fe:a9fe'],
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
  ];
  for (const address of refused) {
    assert.match(refusalOf(address, 'public+loopback') ?? 'allowed', /not a public address/, address);
  }
  for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8']) {
    assert.equal(refusalOf(address, 'public'), null, address);
  }
  for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
    assert.equal(refusalOf(address, 'public+loopback'), null, address);
    assert.match(refusalOf(address, 'public') ?? 'allowed', /loopback/, address);
  }
  assert.equal(refusalOf('10.0.0.1', 'any'), null, 'any: every address');
  assert.match(refusalOf('example.com', 'public') ?? '', /not an IP address/);
});
