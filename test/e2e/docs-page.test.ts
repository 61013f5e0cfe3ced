// The reference pages as an integrator sees them: headless Chromium (Debian's package, driven by
// playwright-core) opens /docs on a running server, the operations of both versions render, the
// guides are a click away, Try it out sends what the user typed and nothing else, and screenshots
// are kept under test-results/ for people to look at.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page, type Request } from 'playwright-core';
import { startTestServer, type TestServer } from '../harness.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const RESULTS = new URL('../../test-results/', import.meta.url);
const SKIP = existsSync(CHROMIUM)
  ? false
  : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let server: TestServer;
let browser: Browser;

before(async () => {
  if (SKIP) return;
  // The page loads a dozen files per visit without a key; requests without one are limited per
  // address.
  server = await startTestServer({ config: { unauthenticatedRateLimitPerMinute: 1_000_000 } });
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

test('/docs renders every operation of v2, switches to v1, and is saved as a screenshot', { skip: SKIP }, async () => {
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

/** Saves a screenshot under test-results/ and names it in the test's output. */
async function keep(t: { diagnostic: (message: string) => void }, page: Page, file: string): Promise<void> {
  const path = new URL(file, RESULTS).pathname;
  await page.screenshot({ path, fullPage: false });
  t.diagnostic(`screenshot: ${path}`);
}

/** The operation of the reference page with this method and path, expanded. */
async function openOperation(page: Page, method: string, path: string) {
  const block = page.locator(`.opblock-${method}`, {
    has: page.locator(`.opblock-summary-path[data-path="${path}"]`),
  });
  await block.locator('.opblock-summary').first().click();
  await block.locator('.try-out__btn').waitFor();
  return block;
}

test('a guide linked from the reference renders, links to the other guides, and back', { skip: SKIP }, async (t) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1400 } });
  // The guide pages' policy (the reference page's own console is Swagger UI's business).
  const refused: string[] = [];
  context.on('console', (m) => {
    if (m.page()?.url().includes('/docs/guides') && /Content.Security.Policy/i.test(m.text())) refused.push(m.text());
  });
  const reference = await context.newPage();
  await reference.goto(`${server.baseUrl}/docs`, { waitUntil: 'networkidle' });
  // Swagger UI opens the description's links in a new tab, which keeps the reference as it was.
  const [page] = await Promise.all([
    context.waitForEvent('page'),
    reference.locator('.info a', { hasText: 'synchronizing' }).click(),
  ]);
  await page.waitForLoadState();
  assert.equal(page.url(), `${server.baseUrl}/docs/guides/sync`);
  assert.match(await page.locator('main h1').innerText(), /Synchronizing/);
  assert.match(await page.title(), /Synchronizing.*Workspace Public API/);
  // The inline stylesheet applies (the page's policy allows it by its hash).
  assert.equal(await page.locator('main').evaluate((m) => (globalThis as any).getComputedStyle(m).maxWidth), '832px');
  await keep(t, page, 'docs-guide-sync.png');

  // A link in the text to another guide, then one to a section of another guide.
  await page.locator('main a[href="events"]').first().click();
  await page.waitForURL(`${server.baseUrl}/docs/guides/events`);
  assert.match(await page.locator('main h1').innerText(), /events feed/);
  await page.locator('nav a', { hasText: 'API conventions' }).click();
  await page.locator('main a[href="sync#idempotency-keys-and-the-replay-trap"]').click();
  await page.waitForURL(`${server.baseUrl}/docs/guides/sync#idempotency-keys-and-the-replay-trap`);
  assert.equal(await page.locator('[id="idempotency-keys-and-the-replay-trap"]').count(), 1);

  await page.locator('header a', { hasText: 'API reference' }).click();
  await page.waitForSelector('.opblock', { timeout: 20_000 });
  assert.equal(new URL(page.url()).pathname.replace(/\/$/, ''), '/docs');
  assert.deepEqual(refused, [], 'no resource refused by a Content-Security-Policy');
  await context.close();
});

test(
  'Try it out: a list sends no filter the user did not type; writes carry an Idempotency-Key',
  { skip: SKIP },
  async (t) => {
    const ws = await server.workspace();
    const page = await browser.newPage({ viewport: { width: 1280, height: 2000 } });
    await page.goto(`${server.baseUrl}/docs`, { waitUntil: 'networkidle' });
    await page.locator('.btn.authorize').first().click();
    await page.locator('.modal-ux input').first().fill(ws.key);
    await page.locator('.modal-ux .auth-btn-wrapper .btn.authorize').click();
    await page.locator('.modal-ux .btn-done').click();

    // A list: its parameters' examples are documentation, not values.
    const list = await openOperation(page, 'get', '/v2/contacts');
    const updatedAfter = list.locator('tr[data-param-name="updated_after"]');
    assert.match(await updatedAfter.innerText(), /Example : 2026-/, 'the example is still shown');
    await list.locator('.try-out__btn').click();
    assert.equal(await updatedAfter.locator('input').inputValue(), '', 'the field is empty');
    const listed = page.waitForRequest((r) => new URL(r.url()).pathname === '/v2/contacts' && r.method() === 'GET');
    await list.locator('.btn.execute').click();
    const listUrl = new URL((await listed).url());
    const sent = [...listUrl.searchParams.keys()];
    // limit's default is the server's own default; any other parameter would be one nobody typed.
    assert.deepEqual(
      sent.filter((k) => k !== 'limit'),
      [],
      `the first Execute sent ${listUrl.search}`,
    );
    const status = list.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor();
    assert.equal((await status.innerText()).trim(), '200');

    // A write: a fresh Idempotency-Key per request unless the user typed one.
    const create = await openOperation(page, 'post', '/v2/contacts');
    await create.locator('.try-out__btn').click();
    const execute = async (): Promise<Request> => {
      const request = page.waitForRequest((r) => new URL(r.url()).pathname === '/v2/contacts' && r.method() === 'POST');
      await create.locator('.btn.execute').click();
      return request;
    };
    const first = await execute();
    const firstKey = (await first.allHeaders())['idempotency-key'];
    assert.match(firstKey ?? '', UUID, 'the write carried a generated Idempotency-Key');
    const answer = await first.response();
    assert.ok(answer && answer.status() !== 400 && answer.status() !== 401, `answered ${answer?.status()}`);
    await keep(t, page, 'docs-try-it-out.png');

    const secondKey = (await (await execute()).allHeaders())['idempotency-key'];
    assert.match(secondKey ?? '', UUID);
    assert.notEqual(secondKey, firstKey, 'each request gets its own key');

    await create.locator('tr[data-param-name="Idempotency-Key"] input').fill('typed-by-the-user-1');
    const typed = (await (await execute()).allHeaders())['idempotency-key'];
    assert.equal(typed, 'typed-by-the-user-1', 'a key the user typed is sent as typed');
    await page.close();
  },
);
