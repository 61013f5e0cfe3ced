// The guides (docs/*.md) as HTML pages under /docs/guides, beside the reference page: the prose an
// integrator needs next to the operations, from the same origin and with the same files as the
// repository. Markdown is rendered once, at start, by markdown-it with raw HTML off (a tag in a
// guide is shown as text, never run) and its link check (no javascript:, vbscript:, file: or data:
// URLs); heading ids are GitHub's, so the anchors the guides link to work on both.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { slug } from 'github-slugger';
import MarkdownIt from 'markdown-it';
import anchor from 'markdown-it-anchor';
import type { Token } from 'markdown-it';

const DOCS_DIR = new URL('../../docs/', import.meta.url);

/** Every guide served, in the order an integrator reads them; each is docs/<name>.md. */
export const GUIDE_NAMES = [
  'api-conventions',
  'sync',
  'events',
  'webhooks',
  'security',
  'resources-v2',
  'scaling',
  'reliability',
  'performance',
] as const;

/** Where the guide pages are, from the site's root. */
export const GUIDES_PATH = '/docs/guides';

export interface Guide {
  name: string;
  title: string;
  html: string;
}

export interface GuidePages {
  /** The page of each guide, by name; a Map, so no inherited name ("constructor") is a guide. */
  pages: Map<string, string>;
  /** The page listing them. */
  index: string;
  /** The Content-Security-Policy of every page: no script at all, only its own stylesheet. */
  csp: string;
}

// Short, readable text on a narrow column; tables scroll rather than squeeze.
const STYLE = `
body { margin: 0; font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24; }
header { background: #1b1f24; color: #fff; padding: 0.6rem 1.5rem; }
header a { color: #fff; margin-right: 1.2rem; }
nav { padding: 0.6rem 1.5rem; border-bottom: 1px solid #d0d7de; font-size: 0.9rem; }
nav a { margin-right: 0.9rem; white-space: nowrap; }
nav a[aria-current="page"] { font-weight: 600; color: #1b1f24; text-decoration: none; }
main { max-width: 52rem; padding: 1rem 1.5rem 4rem; }
a { color: #0969da; }
code { font: 0.88em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f3f4f6; padding: 0.1em 0.3em; border-radius: 4px; }
pre { background: #f3f4f6; padding: 0.8rem 1rem; overflow-x: auto; border-radius: 6px; }
pre code { padding: 0; background: none; }
table { border-collapse: collapse; display: block; overflow-x: auto; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #d0d7de; padding: 0.35rem 0.6rem; vertical-align: top; }
th { background: #f6f8fa; }
blockquote { margin: 0; padding-left: 1rem; border-left: 4px solid #d0d7de; color: #57606a; }
h1, h2, h3, h4 { line-height: 1.25; }
`;

const GUIDE_LINK = /^([a-z0-9-]+)\.md(#[^\s]*)?$/;

/**
 * What a link of a guide becomes on its page: another guide's page (a relative link, so it works
 * whatever the origin), an anchor or an outside address unchanged, or null for a file of the
 * repository that is not served (its text stays, unlinked).
 */
function servedHref(href: string, known: ReadonlySet<string>): string | null {
  if (href.startsWith('#') || /^(https?:|mailto:)/i.test(href)) return href;
  const guide = GUIDE_LINK.exec(href);
  if (guide && known.has(guide[1]!)) return `${guide[1]}${guide[2] ?? ''}`;
  return null;
}

function markdownRenderer(known: ReadonlySet<string>): MarkdownIt {
  const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
  md.use(anchor, { slugify: (text: string) => slug(text) });
  md.core.ruler.push('guide_links', (state) => {
    for (const block of state.tokens) {
      if (block.type !== 'inline' || !block.children) continue;
      const kept: Token[] = [];
      let dropClose = false;
      for (const token of block.children) {
        if (token.type === 'link_open') {
          const href = servedHref(token.attrGet('href') ?? '', known);
          if (href === null) {
            dropClose = true;
            continue;
          }
          token.attrSet('href', href);
        } else if (token.type === 'link_close' && dropClose) {
          dropClose = false;
          continue;
        }
        kept.push(token);
      }
      block.children = kept;
    }
  });
  return md;
}

const { escapeHtml } = new MarkdownIt().utils;

/** Where a page's links lead, relative to the page itself. */
interface Hrefs {
  /** before a guide's name */
  guide: string;
  index: string;
  reference: string;
}

function page(title: string, current: string | null, hrefs: Hrefs, body: string, guides: Guide[]): string {
  const links = guides
    .map((g) => {
      const mark = g.name === current ? ' aria-current="page"' : '';
      return `<a href="${hrefs.guide}${g.name}"${mark}>${escapeHtml(g.title)}</a>`;
    })
    .join('\n');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Workspace Public API</title>
<style>${STYLE}</style>
</head>
<body>
<header><a href="${hrefs.reference}">API reference</a><a href="${hrefs.index}">Guides</a></header>
<nav aria-label="Guides">
${links}
</nav>
<main>
${body}
</main>
</body>
</html>
`;
}

/**
 * Reads and renders every guide of `dir` (the repository's docs/ unless a test gives another); a
 * missing file stops the start, as a missing migration would.
 */
export function loadGuidePages(dir: URL = DOCS_DIR): GuidePages {
  const known = new Set<string>(GUIDE_NAMES);
  const md = markdownRenderer(known);
  const guides: Guide[] = GUIDE_NAMES.map((name) => {
    const source = readFileSync(new URL(`${name}.md`, dir), 'utf8');
    const tokens = md.parse(source, {});
    const heading = tokens.findIndex((t) => t.type === 'heading_open' && t.tag === 'h1');
    const title = heading >= 0 ? (tokens[heading + 1]?.content ?? name) : name;
    return { name, title, html: md.renderer.render(tokens, md.options, {}) };
  });
  // A guide's page is /docs/guides/<name>, so its siblings are "<name>" and the reference (/docs/)
  // is ".."; the list is /docs/guides, where a guide is "guides/<name>" and the reference ".".
  const fromGuide: Hrefs = { guide: '', index: '../guides', reference: '..' };
  const fromIndex: Hrefs = { guide: 'guides/', index: 'guides', reference: '.' };
  const pages = new Map(guides.map((g) => [g.name, page(g.title, g.name, fromGuide, g.html, guides)]));
  const list = guides.map((g) => `<li><a href="guides/${g.name}">${escapeHtml(g.title)}</a></li>`).join('\n');
  const intro = 'How the interface behaves and why, beside the operations of the <a href=".">API reference</a>.';
  const index = page('Guides', null, fromIndex, `<h1>Guides</h1>\n<p>${intro}</p>\n<ul>\n${list}\n</ul>`, guides);
  const styleHash = createHash('sha256').update(STYLE).digest('base64');
  const csp = [
    "default-src 'none'",
    `style-src 'sha256-${styleHash}'`,
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'self'",
  ].join('; ');
  return { pages, index, csp };
}
