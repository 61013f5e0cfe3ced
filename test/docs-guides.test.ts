// The guides as pages under /docs/guides: every docs/*.md is served as HTML, every link on them
// (and in the interface descriptions) reaches a page and an anchor that exists, Markdown's raw HTML
// never becomes markup, and any other name under /docs/guides is the error object's 404.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { GUIDE_NAMES, loadGuidePages } from '../src/api/guides.js';
import { raw } from './security/raw-http.js';
import { useTestServer } from './test-server.js';

// Pages need no key, and requests without one are limited per address: this file sends many.
const server = useTestServer({ config: { unauthenticatedRateLimitPerMinute: 1_000_000 } });

const hrefsOf = (html: string) =>
  [...html.matchAll(/<a\s[^>]*?href="([^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
const idsOf = (html: string) => new Set([...html.matchAll(/\sid="([^"]*)"/g)].map((m) => m[1]!));

describe('guide pages', () => {
  test('every docs/*.md is a guide served as an HTML page with a script-free Content-Security-Policy', async () => {
    const files = readdirSync(new URL('../docs/', import.meta.url))
      .filter((f) => f.endsWith('.md'))
      .map((f) => f.slice(0, -3));
    assert.deepEqual([...GUIDE_NAMES].sort(), files.sort(), 'GUIDE_NAMES lists exactly the guides of docs/');
    for (const name of GUIDE_NAMES) {
      const r = await server.request('GET', `/docs/guides/${name}`);
      assert.equal(r.status, 200, name);
      assert.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
      const csp = r.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/, name);
      assert.doesNotMatch(csp, /script-src/, `${name}: no script source is allowed`);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      assert.match(r.text, /<h1 id="[^"]+"[^>]*>/, `${name} renders its title`);
      assert.match(r.text, /<a href="\.\.">API reference<\/a>/, `${name} links back to the reference`);
      assert.doesNotMatch(r.text, /<script/i, name);
    }
    const index = await server.request('GET', '/docs/guides');
    assert.equal(index.status, 200);
    for (const name of GUIDE_NAMES) assert.ok(hrefsOf(index.text).includes(`guides/${name}`), `the list links ${name}`);
  });

  test('every link of every guide page reaches a page of this server, and its anchor exists there', async () => {
    const pages = new Map<string, string>();
    const fetchPage = async (url: URL) => {
      const key = url.pathname;
      if (!pages.has(key)) {
        const r = await server.request('GET', key);
        assert.equal(r.status, 200, `${key} is served`);
        pages.set(key, r.text);
      }
      return pages.get(key)!;
    };
    const broken: string[] = [];
    let checked = 0;
    for (const name of ['/docs/guides', ...GUIDE_NAMES.map((n) => `/docs/guides/${n}`)]) {
      const from = new URL(name, server.baseUrl);
      for (const href of hrefsOf(await fetchPage(from))) {
        const to = new URL(href, from);
        if (to.origin !== from.origin) {
          assert.match(to.protocol, /^https?:$/, `${name}: ${href}`);
          continue;
        }
        checked++;
        const r = await server.request('GET', to.pathname);
        if (r.status !== 200) {
          broken.push(`${name}: ${href} -> ${r.status}`);
          continue;
        }
        // The reference page draws its anchors itself; the guides' are in their HTML.
        if (to.hash && to.pathname.startsWith('/docs/guides/')) {
          const id = decodeURIComponent(to.hash.slice(1));
          if (!idsOf(await fetchPage(to)).has(id)) broken.push(`${name}: ${href} -> no #${id}`);
        }
      }
    }
    assert.deepEqual(broken, []);
    assert.ok(checked > 100, `links checked: ${checked}`);
  });

  test('the interface descriptions link every guide, and each link is a served page', async () => {
    for (const version of ['v1', 'v2']) {
      const doc = (await server.request('GET', `/${version}/openapi.json`)).json;
      const links = [...(doc.info.description as string).matchAll(/\]\((\/[^)\s]*)\)/g)].map((m) => m[1]!);
      for (const name of GUIDE_NAMES) assert.ok(links.includes(`/docs/guides/${name}`), `${version} links ${name}`);
      for (const link of links) assert.equal((await server.request('GET', link)).status, 200, `${version}: ${link}`);
      assert.doesNotMatch(doc.info.description, /docs\/[a-z0-9-]+\.md/, `${version} names no guide as a file`);
    }
  });

  test('raw HTML and script URLs in a guide stay text', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wsapi-guides-'));
    const hostile = [
      '# Hostile',
      '<script>alert(1)</script>',
      '<img src=x onerror="alert(2)">',
      'Inline <b onclick="alert(3)">bold</b> and <iframe src="https://example.com"></iframe>.',
      '[a](javascript:alert(4)) [b](JAVASCRIPT:alert(5)) [c](data:text/html;base64,PHNjcmlwdD4=) [d](vbscript:x)',
      '[e](../package.json) [f](sync.md#the-recipe) [g](https://example.com/x)',
      '<a href="javascript:alert(6)">h</a>',
    ].join('\n\n');
    for (const name of GUIDE_NAMES) writeFileSync(join(dir, `${name}.md`), name === 'sync' ? hostile : `# ${name}\n`);
    const html = loadGuidePages(pathToFileURL(`${dir}/`)).pages.get('sync')!;
    const main = html.slice(html.indexOf('<main>'));
    assert.doesNotMatch(main, /<(script|img|iframe|b)\b/i, 'no tag of the Markdown became an element');
    assert.match(main, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/, 'the tag is shown as text');
    assert.deepEqual(hrefsOf(main), ['sync#the-recipe', 'https://example.com/x']);
    assert.doesNotMatch(main, /href="(javascript|data|vbscript):/i);
  });
});

describe('names that are not guides', () => {
  test('are 404 route_not_found with the error object, however written, and never a file', async () => {
    const targets = [
      '/docs/guides/nothing-here',
      '/docs/guides/sync.md',
      '/docs/guides/SYNC',
      '/docs/guides/sync/',
      '/docs/guides/',
      '/docs/guides/constructor',
      '/docs/guides/__proto__',
      '/docs/guides/toString',
      '/docs/guides/..%2f..%2fpackage.json',
      '/docs/guides/..%2F..%2Fdocs%2Fsync.md',
      '/docs/guides/%2e%2e%2f%2e%2e%2fpackage.json',
      '/docs/guides/..%5c..%5cpackage.json',
      '/docs/guides/../../package.json',
      '/docs/guides/../../../etc/passwd',
      '/docs/guides/..',
      '/docs/guides/%2e%2e',
      '/docs/guides/sync%00',
      '/docs/guides/sync%00.md',
      '/docs/guides/%ZZ',
      '/docs/guides/sync/events',
      `/docs/guides/${'a'.repeat(600)}`,
    ];
    const wrong: string[] = [];
    for (const target of targets) {
      for (const method of ['GET', 'POST', 'PUT', 'DELETE']) {
        const r = await raw(server.baseUrl, { method, target });
        const body = r.json?.error;
        if (r.status !== 404) wrong.push(`${method} ${target}: ${r.status}`);
        else if (body?.code !== 'route_not_found' || body?.type !== 'not_found' || !body?.request_id)
          wrong.push(`${method} ${target}: ${r.text.slice(0, 200)}`);
        if (/workspace-public-api|root:/.test(r.text)) wrong.push(`${method} ${target}: a file outside the guides`);
      }
    }
    assert.deepEqual(wrong, []);
    // Only GET (and HEAD) read a guide.
    for (const method of ['POST', 'PATCH', 'DELETE', 'OPTIONS']) {
      assert.equal((await raw(server.baseUrl, { method, target: '/docs/guides/sync' })).status, 404, method);
    }
    assert.equal((await raw(server.baseUrl, { method: 'HEAD', target: '/docs/guides/sync' })).status, 200);
  });
});

describe('the reference page keeps what it had', () => {
  test('its page, its Content-Security-Policy, and the Try it out script from the same origin', async () => {
    const page = await server.request('GET', '/docs');
    assert.equal(page.status, 200);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'/);
    // Served over plain HTTP at a non-loopback address, a page whose policy upgrades insecure
    // requests asks for its own scripts over https and stays blank.
    assert.doesNotMatch(csp, /upgrade-insecure-requests/);
    for (const asset of ['/docs/static/swagger-ui-bundle.js', '/docs/static/index.css']) {
      const r = await server.request('GET', asset);
      assert.doesNotMatch(r.headers.get('content-security-policy') ?? '', /upgrade-insecure-requests/, asset);
    }
    assert.match(page.text, /static\/theme\/try-it-out\.js/);
    const script = await server.request('GET', '/docs/static/theme/try-it-out.js');
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /^application\/javascript/);
    assert.match(script.text, /Idempotency-Key/);
  });
});
