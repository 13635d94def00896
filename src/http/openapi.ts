import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import { registerApiReference } from './api-reference.ts';
import { GUIDES, guideUrl, registerGuideRoutes } from './guides.ts';
import { ProblemComponent } from './schemas.ts';

/** The security scheme every operation that needs a key names: an API key in a header. */
export const API_KEY_SCHEME = 'ApiKey';
export const API_KEY_HEADER = 'SVC-API-KEY';

/** The document's description: what Coffer is, how to authenticate, where the guides are. Markdown. */
export function apiDescription(): string {
  return [
    'A self-hostable, multi-tenant token vault and payment orchestration API. Put card numbers, bank ' +
      'accounts and other secrets into Coffer and get tokens back; your systems then use the data only ' +
      'through Coffer, under per-application permissions and access rules.',
    '## Authentication',
    `Every operation that is not public takes an API key in the \`${API_KEY_HEADER}\` header ` +
      '(on this page: **Authentication** above the operations, or the key field of **Test Request**):',
    '```sh\ncurl http://127.0.0.1:8080/applications/key -H "SVC-API-KEY: key_…"\n```',
    'Where keys come from:',
    [
      '- **The first start.** On its very first start Coffer creates a tenant and prints that tenant\'s ' +
        'management key once, on the terminal (stderr). It is shown only then.',
      '- **`coffer init`.** Creates another tenant with a management application and prints its key ' +
        'and a one-time sign-in link for its owner (`--json` prints `{"tenant_id", "application_id", "api_key", "owner_user_id", ' +
        '"signin_url"}`); it works while the server runs.',
      '- **`POST /applications`.** A management key creates applications (`management`, `private` or `public`); ' +
        'the new key is in the answer (`key`), and only there. `POST /applications/{id}/keys` adds a key to an ' +
        'application, `DELETE /applications/{id}/keys/{keyId}` revokes one at once.',
      '- **`POST /sessions`.** A public application\'s key creates a short-lived session key, which a private ' +
        'application\'s key then authorizes.',
      '- **Signed-in members.** A tenant member signed in from a browser (an accepted invitation, or a one-time ' +
        'sign-in link) calls the management operations with its session cookie and an `X-CSRF-Token` header ' +
        'repeating the `coffer_csrf` cookie, with the permissions of its role (see the People guide).',
    ].join('\n'),
    'Each operation lists the permissions it needs (`x-permissions`). Errors are RFC 9457 problem details ' +
      '(`application/problem+json`) with a `request_id` to quote.',
    '## Guides',
    GUIDES.map((g) => `- [${g.title}](${guideUrl(g.name)})`).join('\n'),
  ].join('\n\n');
}

/**
 * The policy of every page under /docs: everything from this server and nothing from anywhere
 * else. The reference page's one inline script (its configuration) is allowed by its hash,
 * computed from the page as sent; styles may be inline (the renderer sets them from script).
 */
export function docsCsp(inlineScriptHashes: string[]): string {
  return [
    "default-src 'self'",
    `script-src 'self'${inlineScriptHashes.map((h) => ` '${h}'`).join('')}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** sha256 hashes (CSP source expressions) of the inline scripts of an HTML page. */
export function inlineScriptHashes(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    if (/\ssrc\s*=/i.test(m[1])) continue;
    out.push(`sha256-${createHash('sha256').update(m[2], 'utf8').digest('base64')}`);
  }
  return out;
}

/**
 * The OpenAPI 3.1 document and the /docs page are generated from the route schemas;
 * nothing here is written by hand except the document's header. /docs is Scalar's API
 * reference, its script served by this process (docs/decisions.md, "The API reference page is Scalar's"),
 * loaded on the first request for it (api-reference.ts).
 */
export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  // Before any route: their error responses refer to it (schemas.ts problem()); the document lists it under components.
  app.addSchema(ProblemComponent);
  await app.register(swagger, {
    // Shared schemas appear under their own $id (components.schemas.Problem), not def-0: client generators name types after it.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Coffer',
        version,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
        description: apiDescription(),
      },
      components: {
        securitySchemes: {
          [API_KEY_SCHEME]: {
            type: 'apiKey',
            in: 'header',
            name: API_KEY_HEADER,
            description: 'An application key (`key_…`) or a session key (`session_…`).',
          },
        },
      },
    },
    transform: ({ schema, url, route }) => {
      const access = route.config?.access;
      const secured = access !== undefined && access !== 'public';
      const out = { ...(schema ?? {}) } as Record<string, unknown>;
      if (!secured) {
        // Public operations say so (an empty list) rather than leave readers to guess. (A proxy
        // invocation's keys depend on the proxy: its description says which.)
        out.security = [];
      } else {
        out.security = [{ [API_KEY_SCHEME]: [] }];
        const perms = access.permissions.length ? `Permissions: \`${access.permissions.join('`, `')}\`.` : 'Any valid API key.';
        out.description = [out.description, perms].filter(Boolean).join('\n\n');
        // The same access, machine-readable: the isolation and fuzz suites derive their keys from it.
        out['x-permissions'] = access.permissions;
        if (access.types) out['x-application-types'] = access.types;
        if (access.sessions === false) out['x-sessions'] = false;
      }
      // PATCH bodies are merge patches (see http/merge-patch.ts); say so rather than application/json.
      if (out.body && [route.method].flat().includes('PATCH')) out.consumes = ['application/merge-patch+json'];
      return { schema: out as never, url };
    },
  });
  app.get('/openapi.json', { config: { access: 'public' }, schema: { hide: true } }, async () => app.swagger());
  // In a context of its own, so that its hook sees only the pages under /docs.
  await app.register(async (docs) => {
    docs.addHook('onSend', addDocsHeaders);
    registerApiReference(docs, {
      routePrefix: '/docs',
      configuration: {
        // The same document as /openapi.json, fetched from this server (the page is /docs/).
        url: '../openapi.json',
        pageTitle: `Coffer ${version} · API reference`,
        title: 'Coffer',
        // Nothing is fetched from or sent to anywhere but this server: Scalar's own fonts, its
        // AI agent and MCP panels, its developer toolbar (shown on localhost), "Open API Client"
        // (its hosted client) and its telemetry are all off. The CSP enforces the same.
        withDefaultFonts: false,
        agent: { disabled: true },
        mcp: { disabled: true },
        showDeveloperTools: 'never',
        hideClientButton: true,
        telemetry: false,
        documentDownloadType: 'json',
        authentication: { preferredSecurityScheme: API_KEY_SCHEME },
        // A key typed in the page stays in the page: not kept in the browser's storage.
        persistAuth: false,
        customCss: DOCS_CSS,
      },
    });
    registerGuideRoutes(docs);
  });
}

/**
 * System fonts (nothing is loaded for them); no "Powered by" link in the sidebar; and the API
 * key's field shows no placeholder (Scalar's is a base64 joke, not an example of a Coffer key).
 */
const DOCS_CSS = `
.scalar-app, .scalar-api-reference {
  --scalar-font: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  --scalar-font-code: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
}
a[href^="https://scalar.com"] { display: none; }
input.scalar-password-input::placeholder { color: transparent; }
`;

let lastPage: { html: string; csp: string } | undefined;
let lastScript: { js: string; etag: string } | undefined;

/**
 * Under /docs: the Content-Security-Policy (a guide page sets its own, stricter), and for the
 * renderer's script (some 4.9 MB, the same string on every request) an ETag, so that a browser
 * asks again on each visit (no-cache: an upgrade is seen at once) and is answered 304 while it is unchanged.
 */
function addDocsHeaders(request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void): void {
  reply.header('x-content-type-options', 'nosniff');
  if (!reply.hasHeader('content-security-policy')) {
    let csp: string;
    if (typeof payload === 'string' && /^\s*<!doctype html/i.test(payload)) {
      // The reference page is the same on every request: its hashes are computed once.
      if (lastPage?.html !== payload) lastPage = { html: payload, csp: docsCsp(inlineScriptHashes(payload)) };
      csp = lastPage.csp;
    } else csp = docsCsp([]);
    reply.header('content-security-policy', csp);
  }
  if (typeof payload === 'string' && reply.statusCode === 200 && /javascript/.test(String(reply.getHeader('content-type')))) {
    if (lastScript?.js !== payload) lastScript = { js: payload, etag: `"${createHash('sha256').update(payload).digest('base64url').slice(0, 27)}"` };
    reply.header('etag', lastScript.etag).header('cache-control', 'no-cache');
    if (request.headers['if-none-match'] === lastScript.etag) {
      reply.code(304);
      return done(null, '');
    }
  }
  done(null, payload);
}
