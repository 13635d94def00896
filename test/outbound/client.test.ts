import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { OutboundClient } from '../../src/outbound/client.ts';
import {
  closedPort,
  fakeResolver,
  rejectsWith,
  startRecordingServer,
  startServer,
  startSilentServer,
  trackClientsAndServers,
} from './helpers.ts';

// Only 127.0.0.1 is ever contacted. Every "blocked" case also proves the refusal came
// before any connection: the loopback server it would have reached counts zero sockets.

/** Echo server: records each request, answers 200 with a small JSON body. */
function echoServer() {
  return startRecordingServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.setHeader('x-multi', ['a', 'b']);
    res.end(JSON.stringify({ ok: true, path: req.url }));
  });
}

const { client, server } = trackClientsAndServers();

describe('happy paths against an allowlisted loopback server', () => {
  test('GET returns status, headers, body and the URL', async () => {
    const s = await server(echoServer());
    const c = client({ allowlist: ['127.0.0.1'] });
    const res = await c.request({ url: `${s.origin}/things?id=7` });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(res.headers['x-multi'], ['a', 'b']);
    assert.ok(Buffer.isBuffer(res.body));
    assert.deepEqual(JSON.parse(res.body.toString()), { ok: true, path: '/things?id=7' });
    assert.equal(res.url, `${s.origin}/things?id=7`);
    assert.equal(s.seen[0].method, 'GET');
  });

  test('POST sends string and byte bodies with their length and the caller headers', async () => {
    const s = await server(echoServer());
    const c = client({ allowlist: ['127.0.0.1'] });
    await c.request({ url: `${s.origin}/a`, method: 'post', headers: { 'Content-Type': 'text/plain', 'X-Api-Key': 'k1' }, body: 'héllo' });
    await c.request({ url: `${s.origin}/b`, method: 'PUT', headers: { 'x-list': ['1', '2'] }, body: new Uint8Array([104, 105]) });
    assert.equal(s.seen[0].method, 'POST');
    assert.equal(s.seen[0].body, 'héllo');
    assert.equal(s.seen[0].headers['content-length'], String(Buffer.byteLength('héllo')));
    assert.equal(s.seen[0].headers['content-type'], 'text/plain');
    assert.equal(s.seen[0].headers['x-api-key'], 'k1');
    assert.equal(s.seen[1].method, 'PUT');
    assert.equal(s.seen[1].body, 'hi');
    assert.equal(s.seen[1].headers['x-list'], '1, 2');
  });

  test('HEAD and non-2xx statuses come back as responses, not errors', async () => {
    const s = await server(
      startServer((req, res) => {
        res.statusCode = req.url === '/missing' ? 404 : 200;
        res.setHeader('content-length', '5');
        res.end(req.method === 'HEAD' ? undefined : 'hello');
      }),
    );
    const c = client({ allowlist: ['127.0.0.1'] });
    const head = await c.request({ url: `${s.origin}/`, method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    const missing = await c.request({ url: `${s.origin}/missing` });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.toString(), 'hello');
  });

  test("the Content-Length of an answer to HEAD (the resource's, no body follows) is not held against the size limit", async () => {
    const s = await server(
      startServer((_req, res) => {
        res.writeHead(200, { 'content-length': String(50 * 1024 * 1024) });
        res.end();
      }),
    );
    const c = client({ allowlist: ['127.0.0.1'], maxResponseBytes: 1024 });
    const head = await c.request({ url: `${s.origin}/file`, method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], String(50 * 1024 * 1024));
    assert.equal(head.body.length, 0);
    const proxied = await c.streamOrBuffer({ url: `${s.origin}/file`, method: 'HEAD', maxResponseBytes: 1024 }, 100);
    assert.equal(proxied.status, 200);
    assert.ok(Buffer.isBuffer(proxied.body) && proxied.body.length === 0, 'an empty body, handed over as bytes');
    // A GET declaring the same length is still refused.
    await rejectsWith(c.request({ url: `${s.origin}/file` }), 'too_large');
  });

  test("a 204 or 304 has no body whatever its Content-Length says (a 304's is the resource's): an empty body, not an error", async () => {
    // Raw bytes: Node's HTTP server sends no Content-Length with these statuses.
    const raw = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.on('data', (request) => {
        const [status, length] = request.toString('latin1').split(' ')[1].split('/').slice(-2);
        socket.write(`HTTP/1.1 ${status} No Body\r\ncontent-length: ${length}\r\netag: "v1"\r\n\r\n`);
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    try {
      const origin = `http://127.0.0.1:${(raw.address() as net.AddressInfo).port}`;
      const c = client({ allowlist: ['127.0.0.1'], maxResponseBytes: 1024 });
      for (const status of [304, 204]) {
        // Under the size limit, and far past it: the declared length is not held against the limit either.
        for (const length of [100, 50 * 1024 * 1024]) {
          const res = await c.request({ url: `${origin}/${status}/${length}` });
          assert.equal(res.status, status);
          assert.equal(res.headers.etag, '"v1"');
          assert.equal(res.body.length, 0);
          const proxied = await c.streamOrBuffer({ url: `${origin}/${status}/${length}` }, 64 * 1024);
          assert.equal(proxied.status, status);
          assert.ok(Buffer.isBuffer(proxied.body) && proxied.body.length === 0, 'an empty body, handed over as bytes');
        }
      }
    } finally {
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  test('header values left undefined are skipped; repeated names are merged', async () => {
    const s = await server(echoServer());
    const c = client({ allowlist: ['127.0.0.1'] });
    await c.request({ url: s.origin, headers: { 'x-absent': undefined as unknown as string, 'X-Dup': 'a', 'x-dup': ['b', 'c'] } });
    assert.equal(s.seen[0].headers['x-absent'], undefined);
    assert.equal(s.seen[0].headers['x-dup'], 'a, b, c');
  });

  test('headers named like Object members (constructor, __proto__) travel as plain headers, both ways', async () => {
    let raw: string[] = [];
    const s = await server(
      startServer((req, res) => {
        raw = req.rawHeaders;
        // writeHead with an array of pairs: a plain object could not carry a __proto__ key.
        res.writeHead(200, [['__proto__', 'p1'], ['__proto__', 'p2'], ['constructor', 'c'], ['content-length', '2']].flat());
        res.end('ok');
      }),
    );
    const c = client({ allowlist: ['127.0.0.1'] });
    const headers = JSON.parse('{"constructor":"x","toString":"y","__proto__":["z1","z2"]}') as Record<string, string | string[]>;
    const res = await c.request({ url: s.origin, headers });
    const sent = (name: string) => raw.filter((_, i) => i % 2 === 1 && raw[i - 1].toLowerCase() === name).join(', ');
    assert.equal(sent('constructor'), 'x', 'not merged with Object');
    assert.equal(sent('tostring'), 'y');
    assert.equal(sent('__proto__'), 'z1, z2');
    assert.equal(Object.getPrototypeOf(res.headers), Object.prototype, 'a destination cannot swap the prototype');
    assert.ok(Object.hasOwn(res.headers, '__proto__'));
    assert.deepEqual(res.headers.__proto__, ['p1', 'p2']);
    assert.equal(res.headers.constructor, 'c');
  });

  test('hop-by-hop, proxy-* and host request headers are dropped', async () => {
    const s = await server(echoServer());
    const c = client({ allowlist: ['127.0.0.1'] });
    await c.request({
      url: `${s.origin}/`,
      method: 'POST',
      body: 'x',
      headers: {
        Connection: 'close',
        'Keep-Alive': 'timeout=1',
        'Proxy-Authorization': 'Basic c2VjcmV0',
        'Proxy-Connection': 'keep-alive',
        TE: 'trailers',
        Trailer: 'x-foo',
        'Transfer-Encoding': 'chunked',
        Upgrade: 'websocket',
        Host: 'internal.example',
        'Content-Length': '999',
        Expect: '100-continue',
        'X-Kept': 'yes',
      },
    });
    const h = s.seen[0].headers;
    assert.equal(h.host, `127.0.0.1:${s.port}`);
    assert.equal(h.connection, 'keep-alive', 'the pool, not the caller, decides about the connection');
    for (const gone of ['keep-alive', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect']) {
      assert.equal(h[gone], undefined, gone);
    }
    assert.equal(h['content-length'], '1');
    assert.equal(h['x-kept'], 'yes');
  });

  test('keep-alive: sequential requests to one origin share one socket', async () => {
    const s = await server(echoServer());
    const c = client({ allowlist: ['127.0.0.1'] });
    for (let i = 0; i < 6; i++) {
      const res = await c.request({ url: `${s.origin}/${i}` });
      assert.equal(res.status, 200);
      // undici hands a socket back to the pool one event-loop turn after a response
      // completes (guarding against servers that close anyway); a caller that is
      // sequential in real time gets the same socket.
      await new Promise(setImmediate);
    }
    assert.equal(s.connections(), 1);
  });

  test("an idle pooled connection is closed after keepAliveMaxMs, however long the destination's Keep-Alive asks", async () => {
    let closedAt = 0;
    const s = await server(
      startServer((req, res) => {
        req.socket.once('close', () => (closedAt = Date.now()));
        res.setHeader('keep-alive', 'timeout=600');
        res.end('ok');
      }),
    );
    const c = client({ allowlist: ['127.0.0.1'], keepAliveMaxMs: 200 });
    const answered = Date.now();
    assert.equal((await c.request({ url: s.origin })).status, 200);
    // The server's own idle timeout (5 s) is far off: a close now is the client's doing.
    await sleep(1000);
    assert.ok(closedAt > 0, 'the client closed the idle socket');
    assert.ok(closedAt - answered < 900, `closed ${closedAt - answered} ms after the answer`);
  });

  test('the pool per origin is bounded by `connections`', async () => {
    const s = await server(
      startServer((_req, res) => {
        setTimeout(() => res.end('ok'), 40);
      }),
    );
    const c = client({ allowlist: ['127.0.0.1'], connections: 2 });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => c.request({ url: `${s.origin}/${i}` })));
    assert.ok(results.every((r) => r.status === 200));
    assert.equal(s.connections(), 2);
  });
});

describe('address checks', () => {
  test('the same loopback URL without the allowlist is blocked before connecting', async () => {
    const s = await server(echoServer());
    const c = client({ allowlist: [] });
    await rejectsWith(c.request({ url: `${s.origin}/` }), 'blocked_address');
    await rejectsWith(c.request({ url: `http://2130706433:${s.port}/` }), 'blocked_address');
    await rejectsWith(c.request({ url: `http://[::ffff:127.0.0.1]:${s.port}/` }), 'blocked_address');
    await rejectsWith(c.stream({ url: `${s.origin}/` }), 'blocked_address');
    assert.equal(s.connections(), 0);
  });

  test('allowlisting one loopback address does not open its neighbours', async () => {
    const c = client({ allowlist: ['127.0.0.1'] });
    const port = await closedPort();
    await rejectsWith(c.request({ url: `http://127.0.0.2:${port}/` }), 'blocked_address');
    await rejectsWith(c.request({ url: `http://[::1]:${port}/` }), 'blocked_address');
  });

  test('localhost (a hostname resolving to loopback) is blocked without the allowlist', async () => {
    const s = await server(startSilentServer());
    const c = client({ allowlist: [] });
    const err = await rejectsWith(c.request({ url: `http://localhost:${s.port}/` }), 'blocked_address');
    assert.match(err.message, /localhost/);
    await rejectsWith(c.request({ url: `http://LOCALHOST:${s.port}/` }), 'blocked_address');
    assert.equal(s.connections(), 0);
  });

  test('hostnames are checked on their resolved addresses at connect time', async () => {
    const s = await server(echoServer());
    const dns = fakeResolver({ 'api.test': ['127.0.0.1'] });
    const blocked = client({ allowlist: [], resolve: dns.resolve });
    assert.equal(blocked.validateUrl(`http://api.test:${s.port}/`).hostname, 'api.test');
    assert.deepEqual(dns.calls, [], 'validateUrl does not resolve');
    await rejectsWith(blocked.request({ url: `http://api.test:${s.port}/` }), 'blocked_address');
    assert.deepEqual(dns.calls, ['api.test']);
    assert.equal(s.connections(), 0);

    // The resolved address is what the allowlist is matched against…
    const byAddress = client({ allowlist: ['127.0.0.1'], resolve: dns.resolve });
    assert.equal((await byAddress.request({ url: `http://api.test:${s.port}/` })).status, 200);
    // …or the hostname itself, whatever it resolves to.
    const byName = client({ allowlist: ['API.test'], resolve: dns.resolve });
    assert.equal((await byName.request({ url: `http://api.test:${s.port}/` })).status, 200);
    assert.equal(s.seen[0].headers.host, `api.test:${s.port}`);
  });

  test('a hostname is refused when ANY of its addresses is blocked', async () => {
    const s = await server(echoServer());
    // 127.0.0.1 is allowlisted, 127.0.0.2 is not: the name must not be used at all.
    const dns = fakeResolver({ 'mixed.test': ['127.0.0.1', '127.0.0.2'], 'mapped.test': ['::ffff:127.0.0.2'] });
    const c = client({ allowlist: ['127.0.0.1'], resolve: dns.resolve });
    await rejectsWith(c.request({ url: `http://mixed.test:${s.port}/` }), 'blocked_address');
    await rejectsWith(c.request({ url: `http://mapped.test:${s.port}/` }), 'blocked_address');
    assert.equal(s.connections(), 0);
  });

  test('DNS rebinding: each new connection re-resolves and re-checks', async () => {
    const s = await server(
      startServer((_req, res) => {
        res.setHeader('connection', 'close'); // no reuse: the next request needs a new connection
        res.end('ok');
      }),
    );
    const answers = [['127.0.0.1'], ['127.0.0.2']];
    const calls: string[] = [];
    const c = client({
      allowlist: ['127.0.0.1'],
      resolve: async (hostname) => {
        calls.push(hostname);
        return (answers.shift() ?? []).map((address) => ({ address, family: 4 }));
      },
    });
    assert.equal((await c.request({ url: `http://rebind.test:${s.port}/` })).status, 200);
    await rejectsWith(c.request({ url: `http://rebind.test:${s.port}/` }), 'blocked_address');
    assert.deepEqual(calls, ['rebind.test', 'rebind.test']);
    assert.equal(s.connections(), 1);
  });

  test('resolution failures are dns_failed', async () => {
    const c = client({ allowlist: [], resolve: fakeResolver({ 'empty.test': [] }).resolve });
    const err = await rejectsWith(c.request({ url: 'http://nowhere.test/' }), 'dns_failed');
    assert.match(err.message, /nowhere\.test/);
    await rejectsWith(c.request({ url: 'http://empty.test/' }), 'dns_failed');
  });
});

describe('failures', () => {
  test('connection refused is connect_failed', async () => {
    const port = await closedPort();
    const c = client({ allowlist: ['127.0.0.1'] });
    const err = await rejectsWith(c.request({ url: `http://127.0.0.1:${port}/` }), 'connect_failed');
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
  });

  test('a server that never answers times out within the deadline', async () => {
    const s = await server(startSilentServer());
    const c = client({ allowlist: ['127.0.0.1'] });
    const started = Date.now();
    await rejectsWith(c.request({ url: `${s.origin}/`, timeoutMs: 300 }), 'timeout');
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 250 && elapsed < 1500, `took ${elapsed} ms`);
    assert.equal(s.connections(), 1);
  });

  test('the client-wide default timeout applies when the call gives none', async () => {
    const s = await server(startSilentServer());
    const c = client({ allowlist: ['127.0.0.1'], timeoutMs: 200 });
    const started = Date.now();
    await rejectsWith(c.request({ url: `${s.origin}/` }), 'timeout');
    assert.ok(Date.now() - started < 1500);
  });

  test('the deadline covers the body: a stalled body times out too', async () => {
    const s = await server(
      startServer((_req, res) => {
        res.writeHead(200, { 'content-length': '100' });
        res.write('partial'); // …and never the rest
      }),
    );
    const c = client({ allowlist: ['127.0.0.1'] });
    const started = Date.now();
    await rejectsWith(c.request({ url: `${s.origin}/`, timeoutMs: 300 }), 'timeout');
    assert.ok(Date.now() - started < 1500);
  });

  test('a body over the limit is too_large, whether declared or streamed', async () => {
    const big = Buffer.alloc(64 * 1024, 'x');
    const s = await server(
      startServer((req, res) => {
        if (req.url === '/declared') {
          res.setHeader('content-length', String(big.length));
          res.end(big);
        } else {
          // Chunked, no length: the limit must be enforced while reading.
          res.write(big.subarray(0, 16 * 1024));
          setTimeout(() => res.end(big.subarray(16 * 1024)), 10);
        }
      }),
    );
    const c = client({ allowlist: ['127.0.0.1'], maxResponseBytes: 32 * 1024 });
    await rejectsWith(c.request({ url: `${s.origin}/declared` }), 'too_large');
    const err = await rejectsWith(c.request({ url: `${s.origin}/chunked` }), 'too_large');
    assert.match(err.message, /32768/);
    // A per-call limit overrides the client's.
    assert.equal((await c.request({ url: `${s.origin}/chunked`, maxResponseBytes: big.length })).body.length, big.length);
    await rejectsWith(c.request({ url: `${s.origin}/chunked`, maxResponseBytes: big.length - 1 }), 'too_large');
  });

  test('oversized response headers are too_large', async () => {
    const s = await server(
      startServer((_req, res) => {
        res.setHeader('x-huge', 'h'.repeat(64 * 1024));
        res.end('ok');
      }),
    );
    const c = client({ allowlist: ['127.0.0.1'] });
    await rejectsWith(c.request({ url: s.origin }), 'too_large');
  });

  test('a default-limit client accepts a body of exactly the limit', async () => {
    const s = await server(startServer((_req, res) => res.end(Buffer.alloc(1000))));
    const c = client({ allowlist: ['127.0.0.1'], maxResponseBytes: 1000 });
    assert.equal((await c.request({ url: `${s.origin}/` })).body.length, 1000);
  });

  test('invalid URLs are refused before anything is sent', async () => {
    const c = client({ allowlist: ['127.0.0.1'] });
    for (const url of ['ftp://127.0.0.1/', '/relative', 'http://user:pw@127.0.0.1/', 'file:///etc/passwd']) {
      await rejectsWith(c.request({ url }), 'invalid_url');
    }
  });

  test('malformed methods, headers and options are invalid_request', async () => {
    const s = await server(echoServer());
    const c = client({ allowlist: ['127.0.0.1'] });
    await rejectsWith(c.request({ url: s.origin, method: 'GE T' }), 'invalid_request');
    await rejectsWith(c.request({ url: s.origin, method: 'CONNECT' }), 'invalid_request');
    await rejectsWith(c.request({ url: s.origin, method: 'trace' }), 'invalid_request');
    await rejectsWith(c.request({ url: s.origin, headers: { 'bad name': 'x' } }), 'invalid_request');
    const crlf = await rejectsWith(c.request({ url: s.origin, headers: { 'x-token': 'SECRET\r\nx-evil: 1' } }), 'invalid_request');
    assert.doesNotMatch(crlf.message, /SECRET|evil/);
    await rejectsWith(c.request({ url: s.origin, body: { a: 1 } as unknown as string }), 'invalid_request');
    await rejectsWith(c.request({ url: s.origin, timeoutMs: -1 }), 'invalid_request');
    await rejectsWith(c.request({ url: s.origin, maxResponseBytes: 0 }), 'invalid_request');
    assert.equal(s.seen.length, 0);
  });

  test('error messages never carry bodies, header values or queries', async () => {
    const secret = 'SECRET-4111111111111111';
    const port = await closedPort();
    const silent = await server(startSilentServer());
    const c = client({ allowlist: ['127.0.0.1'] });
    const attempts = [
      c.request({ url: `http://10.1.2.3/?k=${secret}`, method: 'POST', body: secret, headers: { authorization: secret } }),
      c.request({ url: `http://127.0.0.1:${port}/?k=${secret}`, method: 'POST', body: secret, headers: { authorization: secret } }),
      c.request({ url: `${silent.origin}/?k=${secret}`, method: 'POST', body: secret, headers: { authorization: secret }, timeoutMs: 100 }),
    ];
    for (const attempt of attempts) {
      const err = await attempt.then(
        () => assert.fail('should fail'),
        (e: Error) => e,
      );
      assert.doesNotMatch(`${err.message} ${err.stack ?? ''} ${JSON.stringify(err)}`, /SECRET/);
      assert.equal((err as Error & { cause?: unknown }).cause, undefined);
    }
  });

  test('validated options: a bad constructor option throws', () => {
    assert.throws(() => new OutboundClient({ allowlist: [], timeoutMs: 0 }), TypeError);
    assert.throws(() => new OutboundClient({ allowlist: [], maxRedirects: -1 }), TypeError);
    assert.throws(() => new OutboundClient({ allowlist: [], connections: Number.NaN }), TypeError);
  });

  test('close() lets in-flight requests finish', async () => {
    const s = await server(startServer((_req, res) => setTimeout(() => res.end('late'), 50)));
    const c = new OutboundClient({ allowlist: ['127.0.0.1'] });
    const pending = c.request({ url: s.origin });
    await sleep(10);
    const closing = c.close();
    assert.equal((await pending).body.toString(), 'late');
    await closing;
  });
});
