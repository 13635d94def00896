import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CONSOLE_CSP, registerConsoleRoutes } from '../../src/http/console.ts';
import { createServer } from '../../src/http/server.ts';
import { createLogger } from '../../src/logger.ts';
import { call } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The Console's files as Coffer serves them (src/http/console.ts): the app at /console/ with
 * its CSP and no-cache, hashed assets cached for a year, /console redirected, nothing of it
 * in the API reference, and a clear 503 when console/dist was never built.
 */
describe('the console is served at /console', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server?.stop();
  });

  it('answers index.html at /console/ with a strict CSP and no-cache', async () => {
    const res = await call(server, 'GET', '/console/');
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(res.headers.get('content-security-policy'), CONSOLE_CSP);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.match(res.text, /<div id="app">/);
    // No inline script or style: every script and stylesheet is a file of its own.
    assert.doesNotMatch(res.text, /<script(?![^>]*\ssrc=)[^>]*>/);
    assert.doesNotMatch(res.text, /<style|\sstyle=/);
    for (const m of res.text.matchAll(/(?:src|href)="\.\/(assets\/[^"]+)"/g)) {
      const asset = await call(server, 'GET', `/console/${m[1]}`);
      assert.equal(asset.status, 200, m[1]);
      assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.match(asset.headers.get('content-type') ?? '', /^(text\/javascript|text\/css)/);
    }
  });

  it('redirects /console to /console/, relatively (it holds behind a path prefix)', async () => {
    const res = await fetch(`${server.url}/console`, { redirect: 'manual' });
    assert.equal(res.status, 308);
    assert.equal(res.headers.get('location'), 'console/');
  });

  it('answers 404 for a file it does not have, and keeps out of the API reference', async () => {
    assert.equal((await call(server, 'GET', '/console/assets/nope.js')).status, 404);
    assert.equal((await call(server, 'GET', '/console/../package.json')).status === 200 && (await call(server, 'GET', '/console/../package.json')).text.includes('"coffer"'), false);
    const doc = await call(server, 'GET', '/openapi.json');
    assert.equal(doc.status, 200);
    assert.ok(!Object.keys(doc.body.paths).some((p) => p.startsWith('/console')));
  });

  it('says how to build it when console/dist is missing (503)', async () => {
    const app = createServer(createLogger('silent'));
    registerConsoleRoutes(app, { dist: fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-no-console-')) });
    await app.ready();
    const res = await app.inject({ method: 'GET', url: '/console/' });
    assert.equal(res.statusCode, 503);
    assert.match(res.headers['content-type'] as string, /problem\+json/);
    assert.match(res.json().detail, /npm ci/);
    await app.close();
  });
});
