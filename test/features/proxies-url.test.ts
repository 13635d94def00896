import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { destinationUrl, splitUrl } from '../../src/features/proxies/message.ts';
import { ApiError } from '../../src/http/errors.ts';
import { call, createApplication } from '../helpers/http.ts';
import { rawRequest } from '../helpers/raw-request.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The URL a proxy invocation goes to: the `/proxy` prefix is matched percent-decoded, as the
 * router matches it, and the rest is joined to destination_url by path segments, staying below
 * its path; Coffer's own `svc-*` query parameters are never forwarded.
 */


describe('proxies: the destination URL', () => {
  let server: TestServer;
  let dest: http.Server;
  let port = 0;
  const seen: string[] = [];
  let apiKey: string;

  before(async () => {
    dest = http.createServer((req, res) => {
      seen.push(req.url!);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url);
    });
    await new Promise<void>((r) => dest.listen(0, '127.0.0.1', r));
    port = (dest.address() as { port: number }).port;
    server = await startTestServer({ OUTBOUND_ALLOWLIST: '127.0.0.1', WORKERS: '0' });
    apiKey = (await createApplication(server, { name: 'caller', type: 'private', permissions: ['token:use'] })).key;
  });
  after(async () => {
    await server?.stop();
    dest?.closeAllConnections();
    await new Promise((r) => dest?.close(r));
  });

  async function proxy(destination_url: string): Promise<string> {
    const res = await call(server, 'POST', '/proxies', { key: server.key, body: { name: 'url', destination_url } });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.key);
    return res.body.key;
  }

  function invoke(key: string, path: string) {
    return rawRequest(server.url, 'GET', path, { 'svc-proxy-key': key, 'svc-api-key': apiKey });
  }

  it('a percent-encoded /proxy prefix is the prefix: its suffix is joined with one slash, never glued on', async () => {
    const key = await proxy(`http://127.0.0.1:${port}/base/v1`);
    for (const path of ['/prox%79/admin', '/%70roxy/admin', '/proxy/admin']) {
      const res = await invoke(key, path);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      assert.equal(res.text, '/base/v1/admin', path);
    }
    assert.ok(!seen.includes('/base/v179/admin'));
  });

  it('a destination with a port and no path takes the suffix from its first slash', async () => {
    const key = await proxy(`http://127.0.0.1:${port}`);
    for (const [path, expected] of [['/prox%79/admin', '/admin'], ['/proxy/admin?x=1', '/admin?x=1'], ['/proxy', '/'], ['/proxy/', '/'], ['/proxy/a/b/', '/a/b/']]) {
      const res = await invoke(key, path);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      assert.equal(res.text, expected, path);
    }
  });

  it('dot segments, also percent-encoded or behind backslashes, are a 400 that reaches nobody', async () => {
    const before = seen.length;
    for (const destination of [`http://127.0.0.1:${port}`, `http://127.0.0.1:${port}/base/v1`]) {
      const key = await proxy(destination);
      for (const path of ['/proxy/..', '/proxy/%2e%2e/admin', '/prox%79/%2E./admin', '/proxy/a/.%2e%2fadmin', '/proxy/a%5c..%5cadmin', '/proxy/./a']) {
        const res = await invoke(key, path);
        assert.equal(res.status, 400, `${path}: ${res.text}`);
        assert.equal(res.body.proxy_error.status, 400);
      }
    }
    assert.equal(seen.length, before);
  });

  it('svc-* query parameters are Coffer\'s: none reaches the destination, however spelled', async () => {
    const key = await proxy(`http://127.0.0.1:${port}/q`);
    const query = `svc-api-key=${apiKey}&a=1&SVC-API-KEY=${apiKey}&svc%2Dapi%2Dkey=${apiKey}&svc-other=x&b=2&svc-proxy-key=${encodeURIComponent(key)}`;
    const res = await rawRequest(server.url, 'GET', `/proxy/x?${query}`, { 'svc-api-key': apiKey });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.text, '/q/x?a=1&b=2');
  });

  it('splitUrl and destinationUrl, the pure parts', () => {
    assert.deepEqual(splitUrl('/prox%79/a?svc-x=1&y=2'), { path: '/a', query: { key: undefined, rest: 'y=2' } });
    assert.deepEqual(splitUrl('/proxy?svc-proxy-key=k&??svc-api-key=s'), { path: '', query: { key: 'k', rest: '' } });
    assert.throws(() => splitUrl('/proxyx/a'), (err: unknown) => err instanceof ApiError && err.status === 404);
    assert.throws(() => splitUrl('/proxy%2Fa'), (err: unknown) => err instanceof ApiError && err.status === 404);
    assert.equal(destinationUrl('http://h:8080', '/a', ''), 'http://h:8080/a');
    assert.equal(destinationUrl('http://h:8080/base/v1', '/a#b', 'x=1#2'), 'http://h:8080/base/v1/a%23b?x=1%232');
    assert.equal(destinationUrl('http://h/v1/?k=1', '', '?odd'), 'http://h/v1/?k=1&?odd');
    // Whatever a caller gets past the router, the result stays below the destination's path.
    assert.throws(() => destinationUrl('http://h/base/v1', '79/admin', ''), (err: unknown) => err instanceof ApiError && err.status === 400);
    assert.throws(() => destinationUrl('http://h:8080', '79/admin', ''), (err: unknown) => err instanceof ApiError && err.status === 400);
  });
});
