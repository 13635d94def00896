import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pkg from '../../package.json' with { type: 'json' };
import { GUIDES } from '../../src/http/guides.ts';
import { call, type Response } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * /docs is Coffer's: its name and version, how to authenticate, links to the guides (served
 * here too), and nothing loaded from any origin but the server's. test/http/docs-browser.test.ts
 * looks at the same page in a browser.
 */

/** The sources a Content-Security-Policy allows, by directive. */
function parseCsp(header: string): Map<string, string[]> {
  return new Map(header.split(';').map((d) => d.trim().split(/\s+/)).filter((d) => d[0]).map(([name, ...sources]) => [name, sources]));
}

/** Sources that name no other origin: the page's own, none, inline styles, data:, a script's hash. */
const OWN_SOURCE = /^('self'|'none'|'unsafe-inline'|data:|'sha256-[A-Za-z0-9+/]+=*')$/;

/** Every URL an HTML page makes the browser load: script and image src, link href, CSS url() and @import. */
function loadedUrls(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/<script\b[^>]*\bsrc\s*=\s*["']([^"']*)["']/gi)) out.push(m[1]);
  for (const m of html.matchAll(/<link\b[^>]*\bhref\s*=\s*["']([^"']*)["']/gi)) out.push(m[1]);
  for (const m of html.matchAll(/<(?:img|iframe|source|video|audio|embed)\b[^>]*\bsrc\s*=\s*["']([^"']*)["']/gi)) out.push(m[1]);
  for (const m of html.matchAll(/url\(\s*["']?([^"')]+)/gi)) out.push(m[1]);
  for (const m of html.matchAll(/@import\s+["']([^"']+)/gi)) out.push(m[1]);
  return out;
}

describe('the API reference at /docs', () => {
  let server: TestServer;
  let page: Response;
  let doc: Record<string, any>;
  before(async () => {
    server = await startTestServer();
    page = await call(server, 'GET', '/docs/');
    doc = (await call(server, 'GET', '/openapi.json')).body;
  });
  after(() => server.stop());

  it('is Coffer\'s page, with its version', async () => {
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.text, new RegExp(`<title>Coffer ${pkg.version.replace(/\./g, '\\.')} · API reference</title>`));
    assert.doesNotMatch(page.text, /swagger/i);
    // /docs is the same page.
    const bare = await fetch(`${server.url}/docs`, { redirect: 'manual' });
    assert.equal(bare.status, 301);
    assert.equal(bare.headers.get('location'), '/docs/');
  });

  it('loads nothing from another origin, and its Content-Security-Policy allows none', async () => {
    const urls = loadedUrls(page.text);
    assert.ok(urls.length > 0, 'the page loads its script');
    for (const u of urls) {
      const resolved = new URL(u, `${server.url}/docs/`);
      assert.equal(resolved.origin, new URL(server.url).origin, `${u} is loaded from another origin`);
      const res = await fetch(resolved);
      assert.equal(res.status, 200, `${u} is served`);
      const text = await res.text();
      if (/css/.test(res.headers.get('content-type') ?? '')) {
        for (const inner of loadedUrls(`<style>${text}</style>`)) assert.equal(new URL(inner, resolved).origin, resolved.origin, `${u} loads ${inner}`);
      }
    }

    const csp = page.headers.get('content-security-policy');
    assert.ok(csp, 'the page has a Content-Security-Policy');
    const policy = parseCsp(csp);
    assert.deepEqual(policy.get('default-src'), ["'self'"]);
    for (const [directive, sources] of policy) {
      for (const s of sources) assert.match(s, OWN_SOURCE, `${directive} allows ${s}`);
    }
    // No inline script runs but the page's own (by hash), and no code is evaluated.
    const scriptSrc = policy.get('script-src')!;
    assert.ok(!scriptSrc.includes("'unsafe-inline'") && !scriptSrc.includes("'unsafe-eval'"));
    const inline = [...page.text.matchAll(/<script\b(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/gi)].map((m) => m[1]);
    assert.ok(inline.length > 0);
    for (const body of inline) assert.ok(scriptSrc.includes(`'sha256-${createHash('sha256').update(body).digest('base64')}'`), 'each inline script is allowed by its hash');
    assert.deepEqual(policy.get('connect-src'), ["'self'"]);
    assert.deepEqual(policy.get('font-src'), ["'self'", 'data:']);
    assert.deepEqual(policy.get('object-src'), ["'none'"]);
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');

    // The renderer's script, served by this process, has the same policy.
    const script = await fetch(`${server.url}/docs/js/scalar.js`);
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /javascript/);
    assert.equal(script.headers.get('content-security-policy')?.startsWith("default-src 'self'"), true);
    await script.arrayBuffer();
  });

  it('answers 304 for the renderer\'s script a browser already has', async () => {
    const first = await fetch(`${server.url}/docs/js/scalar.js`);
    const body = await first.text();
    const etag = first.headers.get('etag');
    assert.ok(etag && body.length > 100_000);
    assert.equal(first.headers.get('cache-control'), 'no-cache');
    const again = await fetch(`${server.url}/docs/js/scalar.js`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), '');
    const stale = await fetch(`${server.url}/docs/js/scalar.js`, { headers: { 'if-none-match': '"other"' } });
    assert.equal(stale.status, 200);
    assert.equal((await stale.text()).length, body.length);
  });

  it('serves the OpenAPI document with Coffer\'s name, version, how to authenticate and the guides', () => {
    assert.equal(doc.info.title, 'Coffer');
    assert.equal(doc.info.version, pkg.version);
    const description: string = doc.info.description;
    for (const needle of ['## Authentication', '`SVC-API-KEY`', 'first start', '`coffer init`', '`POST /applications`', '## Guides']) {
      assert.ok(description.includes(needle), `the description says ${needle}`);
    }
    assert.deepEqual(doc.components.securitySchemes, {
      ApiKey: { type: 'apiKey', in: 'header', name: 'SVC-API-KEY', description: 'An application key (`key_…`) or a session key (`session_…`).' },
    });
    assert.deepEqual(doc.paths['/applications'].get.security, [{ ApiKey: [] }]);
    assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/docs')), 'the docs pages are not operations');
  });

  it('links to every guide in docs/, and each link is served', async () => {
    const onDisk = fs.readdirSync(path.resolve(import.meta.dirname, '../../docs')).filter((f) => f.endsWith('.md')).map((f) => f.slice(0, -3));
    assert.deepEqual(GUIDES.map((g) => g.name).sort(), onDisk.sort(), 'src/http/guides.ts GUIDES lists every guide in docs/');
    const links = [...(doc.info.description as string).matchAll(/\]\((\/docs\/guides\/[a-z0-9-]+)\)/g)].map((m) => m[1]);
    assert.deepEqual(links, GUIDES.map((g) => `/docs/guides/${g.name}`));
    for (const link of links) {
      const res = await call(server, 'GET', link);
      assert.equal(res.status, 200, link);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(res.text, /<h1[^>]*>/);
      assert.doesNotMatch(res.text, /<script/i, `${link} runs no script`);
      const policy = parseCsp(res.headers.get('content-security-policy') ?? '');
      assert.deepEqual(policy.get('default-src'), ["'none'"], link);
      assert.equal(policy.get('script-src'), undefined, `${link} allows no script`);
    }
  });

  it('links between guides lead to a served guide and a heading that is there', async () => {
    const pages = new Map<string, string>();
    for (const g of GUIDES) pages.set(g.name, (await call(server, 'GET', `/docs/guides/${g.name}`)).text);
    const ids = (html: string) => new Set([...html.matchAll(/\bid="([^"]+)"/g)].map((m) => m[1]));
    const broken: string[] = [];
    let checked = 0;
    for (const [name, html] of pages) {
      for (const [, href] of html.matchAll(/<a href="([^"]+)"/g)) {
        if (/^https?:\/\//.test(href) || href === '/docs/') continue;
        checked++;
        const m = /^([a-z0-9-]*)(?:#(.+))?$/.exec(href.replace(/&amp;/g, '&'));
        const target = m && (m[1] === '' ? name : m[1]);
        if (!m || !target || !pages.has(target)) broken.push(`${name}: ${href} is no guide`);
        else if (m[2] && !ids(pages.get(target)!).has(decodeURIComponent(m[2]))) broken.push(`${name}: ${href} names no heading`);
      }
    }
    assert.ok(checked > 20, 'the guides link to each other');
    assert.deepEqual(broken, []);
  });

  it('serves only the guides it lists, whatever the path asked', async () => {
    for (const p of ['/docs/guides/nope', '/docs/guides/vault.md', '/docs/guides/..%2Fpackage.json', '/docs/guides/%2E%2E%2F%2E%2E%2Fpackage.json', '/docs/guides/..%2F..%2Fsrc%2Fconfig.ts', '/docs/guides/README']) {
      const res = await call(server, 'GET', p);
      assert.equal(res.status, 404, p);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    }
  });
});
