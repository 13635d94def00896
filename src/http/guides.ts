import fs from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Marked, type Tokens } from 'marked';
import { gfmHeadingId } from 'marked-gfm-heading-id';
import { ApiError } from './errors.ts';

/**
 * The guides in docs/, served read-only as HTML at /docs/guides/<name> so that the API
 * reference can link to them. Only the names listed here are served, each read from
 * docs/<name>.md: no part of a request becomes a path.
 * test/http/docs.test.ts checks this list against the directory.
 */
export const GUIDES = [
  { name: 'vault', title: 'Tokens, encryption at rest, key rotation' },
  { name: 'expressions', title: 'Detokenization expressions and filters' },
  { name: 'reactors', title: 'Reactors (customer code in a sandbox)' },
  { name: 'proxies', title: 'Proxies (forwarding with detokenization and transforms)' },
  { name: 'payment-methods', title: 'Payment methods: token intents, Google Pay, bank account verification' },
  { name: 'google-pay', title: 'Google Pay tokens in depth (ECv2 checks, keys, error codes)' },
  { name: '3ds', title: '3-D Secure: sessions, challenges, the built-in simulator and its test cards' },
  { name: 'orchestration', title: 'Orchestration: processors, the test processor, transaction and refund states' },
  { name: 'people', title: 'People: tenant members, invitations by e-mail, member sign-in' },
  { name: 'console', title: 'The Console: the web interface for a tenant\'s members' },
  { name: 'webhooks', title: 'Webhooks (signed deliveries)' },
  { name: 'outbound', title: 'Outbound HTTP guard (SSRF protection)' },
  { name: 'security', title: 'Threat model: what each key, tenant and piece of code can and cannot do' },
  { name: 'cors', title: 'Calling Coffer from a browser (CORS)' },
  { name: 'configuration', title: 'Configuration (environment variables)' },
  { name: 'operations', title: 'Running in production, metrics' },
  { name: 'decisions', title: 'Design decisions' },
  { name: 'benchmarks', title: 'Benchmarks' },
] as const;

export type GuideName = (typeof GUIDES)[number]['name'];

const DOCS_DIR = path.resolve(import.meta.dirname, '../../docs');
const NAMES = new Set<string>(GUIDES.map((g) => g.name));

/** Where a guide is served, from the site's root. */
export const guideUrl = (name: GuideName): string => `/docs/guides/${name}`;

/**
 * A guide page runs no script and loads nothing but itself: its one stylesheet is inline and
 * its headings' anchors are ids. Links out (to a standard, a library) are plain links.
 */
export const GUIDE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const STYLE = `
body { font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24; margin: 0; }
header { border-bottom: 1px solid #d8dee4; padding: 12px 24px; font-size: 14px; display: flex; gap: 16px; align-items: center; }
header strong { font-size: 16px; }
main { max-width: 880px; margin: 0 auto; padding: 8px 24px 48px; }
a { color: #0969da; }
code, pre { font: 13.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f3f5f7; border-radius: 4px; }
code { padding: 1px 4px; }
pre { padding: 12px 14px; overflow-x: auto; }
pre code { padding: 0; background: none; }
table { border-collapse: collapse; display: block; overflow-x: auto; }
th, td { border: 1px solid #d8dee4; padding: 5px 10px; text-align: left; vertical-align: top; }
h1, h2, h3 { line-height: 1.25; }
h2 { border-bottom: 1px solid #d8dee4; padding-bottom: 4px; margin-top: 2em; }
`;

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * Markdown to HTML with GitHub's heading ids (the guides link to `other.md#a-heading`, as they
 * do on GitHub), and a link to another guide (`vault.md#…`) made a link to where it is served.
 */
export function renderGuide(name: GuideName, markdown: string): string {
  // One instance per call: its heading ids are numbered per document (`limits`, `limits-1`).
  const marked = new Marked({ gfm: true, async: false });
  marked.use(gfmHeadingId());
  marked.use({
    walkTokens(token) {
      if (token.type !== 'link') return;
      const link = token as Tokens.Link;
      const m = /^([a-z0-9-]+)\.md(#[^\s]*)?$/.exec(link.href);
      if (m && NAMES.has(m[1])) link.href = `${m[1]}${m[2] ?? ''}`;
    },
  });
  const body = marked.parse(markdown) as string;
  const title = GUIDES.find((g) => g.name === name)!.title;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Coffer</title>
<style>${STYLE}</style>
</head>
<body>
<header><strong>Coffer</strong><a href="/docs/">API reference</a><span>Guide: ${escapeHtml(name)}.md</span></header>
<main>
${body}
</main>
</body>
</html>
`;
}

/** GET /docs/guides/:name for the names in GUIDES; each is read and rendered once, on its first request. */
export function registerGuideRoutes(app: FastifyInstance): void {
  const rendered = new Map<string, Promise<string>>();
  const load = (name: GuideName) => {
    let page = rendered.get(name);
    if (!page) {
      page = fs.readFile(path.join(DOCS_DIR, `${name}.md`), 'utf8').then((md) => renderGuide(name, md));
      // A failed read (docs/ not deployed) is not remembered: it answers 404 until the file is there.
      page.catch(() => rendered.delete(name));
      rendered.set(name, page);
    }
    return page;
  };
  app.get<{ Params: { name: string } }>('/docs/guides/:name', {
    config: { access: 'public' },
    schema: { hide: true },
  }, async (request, reply) => {
    const { name } = request.params;
    // The allow-list: any other name, a path among them, is a page that does not exist.
    if (!NAMES.has(name)) throw new ApiError(404, 'No such guide.');
    let html: string;
    try {
      html = await load(name as GuideName);
    } catch {
      throw new ApiError(404, `The guide ${name} is not installed with this server.`);
    }
    return reply.header('content-type', 'text/html; charset=utf-8').header('content-security-policy', GUIDE_CSP).send(html);
  });
}
