import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { call, createApplication } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A destination whose status line is no final HTTP status (HTTP parsers take any three digits;
 * a final answer's is 200–599, 1xx being interim): its answer is malformed, so the caller gets
 * a 502 proxy_error, and the body behind it is dropped at once rather than left to the deadline.
 */

const DEST_STATUS = 'svc-proxy-destination-status';

describe('proxy invocation: a destination status outside 200–599', () => {
  let server: TestServer;
  let dest: http.Server;
  let port = 0;
  let apiKey: string;
  /** When the destination saw each answer's connection close, by path. */
  const closedAt = new Map<string, number>();

  before(async () => {
    dest = http.createServer((req, res) => {
      const [, , status, mode] = req.url!.split('/');
      res.on('close', () => closedAt.set(req.url!, Date.now()));
      res.writeHead(Number(status), { 'content-type': 'text/plain' });
      // `stall`: the head and a first chunk, then nothing until the connection goes.
      if (mode === 'stall') res.write('partial');
      else res.end('odd');
    });
    await new Promise<void>((r) => dest.listen(0, '127.0.0.1', r));
    port = (dest.address() as { port: number }).port;
    server = await startTestServer({ OUTBOUND_ALLOWLIST: '127.0.0.1', PROXY_TIMEOUT_MS: '4000', WORKERS: '0' });
    apiKey = (await createApplication(server, { name: 'backend', type: 'private', permissions: ['token:use'] })).key;
  });
  after(async () => {
    await server?.stop();
    dest?.closeAllConnections();
    await new Promise((r) => dest?.close(r));
  });

  async function proxy(body: Record<string, unknown> = {}) {
    const res = await call(server, 'POST', '/proxies', { key: server.key, body: { name: 'odd', destination_url: `http://127.0.0.1:${port}/s`, ...body } });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.key);
    return res.body.key as string;
  }

  function assertMalformed(res: Awaited<ReturnType<typeof call>>, status: number) {
    assert.equal(res.status, 502, res.text);
    assert.equal(res.headers.get(DEST_STATUS), null);
    assert.equal(res.body.proxy_error.status, 502);
    assert.match(res.body.proxy_error.detail, new RegExp(`status ${status}`));
  }

  it('is a 502 proxy_error, streamed, read whole or transformed', async () => {
    const plain = await proxy();
    const masked = await proxy({ response_transform: { type: 'mask', matcher: 'regex', expression: '(d)', replacement: '*' } });
    for (const status of [600, 999]) {
      for (const key of [plain, masked]) {
        assertMalformed(await call(server, 'GET', `/proxy/${status}`, { key: apiKey, headers: { 'svc-proxy-key': key } }), status);
      }
    }
    // The edges of the range are statuses like any other: the destination's.
    for (const status of [200, 599]) {
      const res = await call(server, 'GET', `/proxy/${status}`, { key: apiKey, headers: { 'svc-proxy-key': plain } });
      assert.equal(res.status, status);
      assert.equal(res.headers.get(DEST_STATUS), String(status));
      assert.equal(res.text, 'odd');
    }
  });

  it('drops the body behind it at once, not at the deadline', async () => {
    const key = await proxy();
    const started = Date.now();
    assertMalformed(await call(server, 'GET', '/proxy/700/stall', { key: apiKey, headers: { 'svc-proxy-key': key } }), 700);
    // Well before the 4 s deadline, whose expiry on a body nobody reads would be an unhandled error.
    for (let i = 0; i < 40 && !closedAt.has('/s/700/stall'); i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok(closedAt.has('/s/700/stall'), 'the destination connection is closed');
    assert.ok(closedAt.get('/s/700/stall')! - started < 2000);
  });

  it('below 100 too, through the client that sends SVC-PROXY-KEEP-ALIVE, which reads such a status as any other', async () => {
    // Node's HTTP server will not write a status below 100: the destination writes its bytes itself.
    let closed = 0;
    const raw = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.on('close', () => (closed = Date.now()));
      socket.once('data', (request) => {
        const status = request.toString('latin1').split(' ')[1].split('/').pop();
        // The head and a first chunk of a body that never ends.
        socket.write(`HTTP/1.1 ${status} Odd\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n7\r\npartial\r\n`);
      });
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    try {
      const res = await call(server, 'POST', '/proxies', { key: server.key, body: { name: 'low', destination_url: `http://127.0.0.1:${(raw.address() as net.AddressInfo).port}/s` } });
      assert.equal(res.status, 201, res.text);
      rememberSecret(res.body.key);
      // 101 too: a final 1xx (Switching Protocols without an Upgrade asked for) is no answer a proxy can pass on.
      for (const status of ['099', '000', '101']) {
        closed = 0;
        const started = Date.now();
        const answer = await call(server, 'GET', `/proxy/${status}`, { key: apiKey, headers: { 'svc-proxy-key': res.body.key, 'svc-proxy-keep-alive': 'timeout=5' } });
        assertMalformed(answer, Number(status));
        // Dropped at once: left to the 4 s deadline, the body's error would find no listener.
        for (let i = 0; i < 40 && closed === 0; i++) await new Promise((r) => setTimeout(r, 25));
        assert.ok(closed > 0 && closed - started < 2000, 'the destination connection is closed');
      }
    } finally {
      raw.close();
    }
  });
});
