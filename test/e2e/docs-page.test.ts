// The reference pages as an integrator sees them: headless Chromium (Debian's package, driven by
// playwright-core) opens /docs on a running server, the operations of both versions render, and a
// screenshot is kept under test-results/ for people to look at.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../harness.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const RESULTS = new URL('../../test-results/', import.meta.url);

let server: TestServer;
let browser: Browser;

before(async () => {
  server = await startTestServer();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // The flags of a locked-down machine: no sandbox as root, no GPU, and no background calls to
    // the outside, which this network refuses anyway.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  mkdirSync(RESULTS, { recursive: true });
});
after(async () => {
  await browser?.close();
  await server?.close();
});

test('/docs renders every operation of v2, switches to v1, and is saved as a screenshot', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 2000 } });
  const failed: string[] = [];
  page.on('requestfailed', (r) => failed.push(r.url()));
  await page.goto(`${server.baseUrl}/docs`, { waitUntil: 'networkidle' });

  await page.waitForSelector('.opblock', { timeout: 20_000 });
  const v2Operations = await page.locator('.opblock-summary-path').allInnerTexts();
  for (const path of ['/v2/workspace', '/v2/contacts', '/v2/events', '/v2/conversations/{contact_id}/messages']) {
    assert.ok(
      v2Operations.some((p) => p.replace(/\u200b/g, '').trim() === path),
      `${path} rendered (got ${v2Operations.join(', ')})`,
    );
  }
  assert.equal(await page.title(), 'Workspace Public API reference: v1 and v2');
  assert.match(await page.locator('.info .title').innerText(), /Workspace Public API/);
  assert.match(await page.locator('.info').innerText(), /Idempotency/);
  await page.screenshot({ path: new URL('docs-v2.png', RESULTS).pathname, fullPage: false });

  // The switch between the two published documents.
  await page.selectOption('select#select', { label: 'Version 1' });
  // A locator, not waitForFunction: the page's Content-Security-Policy forbids eval, which the
  // in-page polling of a predicate needs whenever it is not true at the first check.
  await page.locator('.info .title', { hasText: '1.0.0' }).waitFor();
  const v1Operations = await page.locator('.opblock-summary-path').allInnerTexts();
  assert.ok(v1Operations.length >= 5, `v1 operations rendered: ${v1Operations.join(', ')}`);
  assert.ok(!v1Operations.some((p) => p.includes('/v2/')), 'the v1 page lists only v1 operations');
  await page.screenshot({ path: new URL('docs-v1.png', RESULTS).pathname, fullPage: false });

  assert.deepEqual(failed, [], 'every asset of the page loaded from the service itself');
});
