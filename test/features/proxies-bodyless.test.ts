import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { call, createApplication } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A 204 or 304 has no body whatever its headers say. A 304 may carry the Content-Length of the
 * representation it stands for; the HTTP client then finds fewer bytes than declared and fails
 * the (empty) body, which the proxy drops for these statuses: that failure must find a listener.
 */

const DEST_STATUS = 'svc-proxy-destination-status';

describe('proxy invocation: a 204 or 304 that declares a length', () => {
  let server: TestServer;
  let dest: net.Server;
  let apiKey: string;
  let proxyKey: string;
  let maskedKey: string;

  before(async () => {
    // Raw bytes: Node's HTTP server would not send a Content-Length with these statuses.
    dest = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.on('data', (request) => {
        // /s/<status>/<declared length>: past 64 KiB a proxy hands the body over as a stream, under it the body is read whole.
        const [status, length] = request.toString('latin1').split(' ')[1].split('/').slice(-2);
        socket.write(`HTTP/1.1 ${status} Odd\r\ncontent-type: text/plain\r\ncontent-length: ${length}\r\netag: "v1"\r\n\r\n`);
      });
    });
    await new Promise<void>((r) => dest.listen(0, '127.0.0.1', r));
    server = await startTestServer({ OUTBOUND_ALLOWLIST: '127.0.0.1', PROXY_TIMEOUT_MS: '4000', WORKERS: '0' });
    apiKey = (await createApplication(server, { name: 'backend', type: 'private', permissions: ['token:use'] })).key;
    const res = await call(server, 'POST', '/proxies', { key: server.key, body: { name: 'cached', destination_url: `http://127.0.0.1:${(dest.address() as net.AddressInfo).port}/s` } });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.key);
    proxyKey = res.body.key;
    const masked = await call(server, 'POST', '/proxies', {
      key: server.key,
      body: {
        name: 'cached, masked',
        destination_url: `http://127.0.0.1:${(dest.address() as net.AddressInfo).port}/s`,
        response_transform: { type: 'mask', matcher: 'regex', expression: '(\\d{4})', replacement: '*' },
      },
    });
    assert.equal(masked.status, 201, masked.text);
    rememberSecret(masked.body.key);
    maskedKey = masked.body.key;
  });
  after(async () => {
    await server?.stop();
    await new Promise((r) => dest?.close(r));
  });

  it('is passed on as the destination answered, streamed, read whole or through a response transform, and the server carries on', async () => {
    for (const [key, length] of [[proxyKey, 100_000], [proxyKey, 100], [maskedKey, 100]] as const) {
      for (const status of [304, 204]) {
        const res = await call(server, 'GET', `/proxy/${status}/${length}`, { key: apiKey, headers: { 'svc-proxy-key': key, 'if-none-match': '"v1"' } });
        assert.equal(res.status, status, `${status}, ${length}: ${res.text}`);
        assert.equal(res.headers.get(DEST_STATUS), String(status));
        assert.equal(res.headers.get('etag'), '"v1"');
        assert.equal(res.text, '');
      }
    }
    // The failed body's error is raised as the answer completes: the process is still here to answer.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await call(server, 'GET', '/ping')).status, 200);
  });
});
