// The reference pages at /docs: Swagger UI, served from the package's own assets (no CDN, so the
// page works on closed networks), showing /v1/openapi.json and /v2/openapi.json with a switch
// between them. We chose Swagger UI over Redoc (no "try it") and Scalar (its Fastify plugin needs
// a newer Node than ours) because it is maintained by the Fastify organisation, renders both
// documents, lets an integrator try every operation with their own key, and ships as one package.
// The guides are pages of their own under /docs/guides (guides.ts).
import { readFileSync } from 'node:fs';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { routeNotFound } from '../plugins/errors.js';
import { GUIDES_PATH, loadGuidePages } from './guides.js';

// A browser script, not compiled: read from the sources, which sit at the same place relative to
// src/api/ and dist/api/.
const TRY_IT_OUT_SCRIPT = new URL('../../src/api/docs-try-it-out.browser.js', import.meta.url);

export async function docsRoutes(app: FastifyInstance): Promise<void> {
  // Every route of the page is public: the page holds no data, only the published documents.
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), public: true };
  });
  // swagger-ui serves the document of a @fastify/swagger instance of its own context; the page
  // loads the two published documents instead, so this one only describes the page itself.
  await app.register(swagger, {
    mode: 'static',
    specification: {
      document: { openapi: '3.1.0', info: { title: 'Workspace Public API reference', version: '2.0.0' }, paths: {} },
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: {
      // The first entry is the one shown first.
      urls: [
        { url: '/v2/openapi.json', name: 'Version 2' },
        { url: '/v1/openapi.json', name: 'Version 1' },
      ],
      docExpansion: 'list',
      deepLinking: true,
      persistAuthorization: false,
      displayRequestDuration: true,
      tryItOutEnabled: false,
    },
    staticCSP: true,
    // Swagger UI's policy ends in upgrade-insecure-requests: a browser then asks for the page's own
    // scripts over https, and on a deployment served over plain HTTP at any address but loopback
    // (a container, a private network) the reference page stays blank. The page's assets are its
    // own origin's whatever the scheme, so the policy keeps them to 'self' without upgrading.
    transformStaticCSP: (header: string) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
    // The browser tab and bookmarks name the product and both versions, not the viewer.
    theme: {
      title: 'Workspace Public API reference: v1 and v2',
      // Loaded after Swagger UI and before it starts: no example pre-fills a field, and writes
      // get an Idempotency-Key (the script says how).
      js: [{ filename: 'try-it-out.js', content: readFileSync(TRY_IT_OUT_SCRIPT, 'utf8') }],
    },
  });

  const guides = loadGuidePages();
  const sendPage = (reply: FastifyReply, html: string) =>
    reply.header('content-type', 'text/html; charset=utf-8').header('content-security-policy', guides.csp).send(html);
  app.get(GUIDES_PATH, async (_request, reply) => sendPage(reply, guides.index));
  app.get<{ Params: { name: string } }>(`${GUIDES_PATH}/:name`, async (request, reply) => {
    const html = guides.pages.get(request.params.name);
    // Only the names of the list are pages: whatever else the parameter holds (dots, encoded
    // slashes, "constructor") names none.
    if (html === undefined) throw routeNotFound(request);
    return sendPage(reply, html);
  });
  // Any other path or method under /docs names no page: 404 for everyone, key or not (the page
  // and its files are public, so what is not among them is simply absent, not forbidden).
  const notAPage = async (request: Parameters<typeof routeNotFound>[0]) => {
    throw routeNotFound(request);
  };
  const OTHER_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
  app.route({ method: ['GET', ...OTHER_METHODS], url: '/docs/*', handler: notAPage });
  app.route({ method: [...OTHER_METHODS], url: '/docs', handler: notAPage });
}
