import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { closedPort, fakeResolver, rejectsWith, startRecordingServer, startServer, startSilentServer, trackClientsAndServers } from './helpers.ts';

// A streaming call carrying a Keep-Alive header goes out through Node's HTTP client (undici
// refuses the header): the same checks, deadline and pooling must hold on that path.
const { client, server } = trackClientsAndServers();
const fixtures = path.join(import.meta.dirname, 'fixtures');
const pair = { key: fs.readFileSync(path.join(fixtures, 'key.pem'), 'utf8'), cert: fs.readFileSync(path.join(fixtures, 'cert.pem'), 'utf8') };

async function text(body: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

test('a Keep-Alive header reaches the destination with the method, path, Host, body and its length', async () => {
  const s = await server(startRecordingServer((_req, res) => {
    res.setHeader('set-cookie', ['a=1', 'b=2']);
    res.setHeader('x-twice', ['one', 'two']);
    res.end('answered');
  }));
  const c = client({ allowlist: ['127.0.0.1'] });
  const res = await c.stream({
    url: `${s.origin}/v1/charges?x=1&y=%20`,
    method: 'PUT',
    headers: { 'Keep-Alive': 'timeout=5, max=100', 'content-type': 'application/json', authorization: 'Bearer t', 'x-list': ['1', '2'] },
    body: '{"amount":100}',
  });
  assert.equal(res.status, 200);
  assert.equal(await text(res.body), 'answered');
  assert.deepEqual(res.headers['set-cookie'], ['a=1', 'b=2']);
  assert.deepEqual(res.headers['x-twice'], ['one', 'two'], 'repeats stay separate values, as undici gives them');
  assert.equal(res.headers['content-length'], '8');
  const [seen] = s.seen;
  assert.equal(seen.method, 'PUT');
  assert.equal(seen.url, '/v1/charges?x=1&y=%20');
  assert.equal(seen.body, '{"amount":100}');
  assert.equal(seen.headers['keep-alive'], 'timeout=5, max=100');
  assert.equal(seen.headers.connection, 'keep-alive');
  assert.equal(seen.headers.host, `127.0.0.1:${s.port}`);
  assert.equal(seen.headers['content-length'], '14');
  assert.equal(seen.headers['content-type'], 'application/json');
  assert.equal(seen.headers.authorization, 'Bearer t');
  assert.equal(seen.headers['x-list'], '1, 2');
});

test('requests with Keep-Alive share one pooled connection; Connection: close takes it out of the pool', async () => {
  const ports: number[] = [];
  const seen: (string | undefined)[] = [];
  const s = await server(startServer((req, res) => {
    ports.push(req.socket.remotePort!);
    seen.push(req.headers.connection);
    res.end('ok');
  }));
  const c = client({ allowlist: ['127.0.0.1'] });
  for (let i = 0; i < 3; i++) {
    const res = await c.stream({ url: s.origin, headers: { 'keep-alive': 'timeout=5' } });
    await text(res.body);
    await new Promise(setImmediate);
  }
  assert.equal(new Set(ports).size, 1, `one socket for all three: ${ports.join(',')}`);
  const closing = await c.stream({ url: s.origin, headers: { 'keep-alive': 'timeout=5', connection: 'close' } });
  await text(closing.body);
  assert.equal(seen[3], 'close');
  await new Promise(setImmediate);
  const after = await c.stream({ url: s.origin, headers: { 'keep-alive': 'timeout=5' } });
  await text(after.body);
  assert.notEqual(ports[4], ports[3], 'the closed socket is not reused');
  assert.equal(s.connections(), 2);
});

test('the Keep-Alive path refuses blocked addresses before connecting, by literal IP and by resolved name', async () => {
  const s = await server(startServer((_req, res) => res.end('reached')));
  const dns = fakeResolver({ 'api.test': ['127.0.0.1'] });
  const c = client({ allowlist: [], resolve: dns.resolve });
  await rejectsWith(c.stream({ url: `http://api.test:${s.port}/`, headers: { 'keep-alive': 'timeout=5' } }), 'blocked_address');
  await rejectsWith(c.stream({ url: `http://127.0.0.1:${s.port}/`, headers: { 'keep-alive': 'timeout=5' } }), 'blocked_address');
  assert.equal(s.connections(), 0);
  // Allowed by name: the socket connects to the checked address.
  const allowed = client({ allowlist: ['api.test'], resolve: dns.resolve });
  const res = await allowed.stream({ url: `http://api.test:${s.port}/`, headers: { 'keep-alive': 'timeout=5' } });
  assert.equal(await text(res.body), 'reached');
});

test('the Keep-Alive path keeps the deadline and reports a refused connection', async () => {
  const silent = await server(startSilentServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  await rejectsWith(c.stream({ url: silent.origin, headers: { 'keep-alive': 'timeout=5' }, timeoutMs: 200 }), 'timeout');
  const port = await closedPort();
  await rejectsWith(c.stream({ url: `http://127.0.0.1:${port}/`, headers: { 'keep-alive': 'timeout=5' } }), 'connect_failed');
});

test('the Keep-Alive path refuses a connection header other than close or keep-alive, as undici does', async () => {
  const s = await server(startServer((_req, res) => res.end('reached')));
  const c = client({ allowlist: ['127.0.0.1'] });
  await rejectsWith(c.stream({ url: s.origin, headers: { 'keep-alive': 'timeout=5', connection: 'upgrade' } }), 'invalid_request');
  assert.equal(s.connections(), 0);
});

test('the Keep-Alive path speaks HTTPS, verifying the certificate by the URL\'s name', async () => {
  const s = await server(startServer((req, res) => res.end(`secure ${req.headers.host} ${req.headers['keep-alive']}`), pair));
  const dns = fakeResolver({ 'api.test': ['127.0.0.1'], 'other.test': ['127.0.0.1'] });
  const c = client({ allowlist: ['api.test', 'other.test'], resolve: dns.resolve, ca: pair.cert });
  const res = await c.stream({ url: `https://api.test:${s.port}/`, headers: { 'keep-alive': 'timeout=5' } });
  assert.equal(await text(res.body), `secure api.test:${s.port} timeout=5`);
  const err = await rejectsWith(c.stream({ url: `https://other.test:${s.port}/`, headers: { 'keep-alive': 'timeout=5' } }), 'connect_failed');
  assert.match(err.message, /TLS/);
});

test('request() still drops a Keep-Alive header: only streaming calls (proxies) pass it', async () => {
  const s = await server(startRecordingServer((_req, res) => res.end('ok')));
  const c = client({ allowlist: ['127.0.0.1'] });
  await c.request({ url: s.origin, headers: { 'keep-alive': 'timeout=5' } });
  assert.equal(s.seen[0].headers['keep-alive'], undefined);
});

test('the Keep-Alive path opens at most `connections` sockets per origin, as undici does; the rest wait their turn', async () => {
  let open = 0;
  let most = 0;
  const s = await server(startServer((_req, res) => {
    open++;
    most = Math.max(most, open);
    setTimeout(() => {
      open--;
      res.end('ok');
    }, 50);
  }));
  const c = client({ allowlist: ['127.0.0.1'], connections: 2 });
  const bodies = await Promise.all(Array.from({ length: 8 }, async () => text((await c.stream({ url: s.origin, headers: { 'keep-alive': 'timeout=5' } })).body)));
  assert.deepEqual(bodies, Array(8).fill('ok'));
  assert.ok(s.connections() <= 2, `${s.connections()} connections for a pool of 2`);
  assert.ok(most <= 2, `${most} requests at once on a pool of 2`);
});

test('a call waiting on the Keep-Alive path for a free connection still ends at its deadline', async () => {
  const silent = await server(startSilentServer());
  const c = client({ allowlist: ['127.0.0.1'], connections: 1 });
  const first = c.stream({ url: silent.origin, headers: { 'keep-alive': 'timeout=5' }, timeoutMs: 400 });
  const started = Date.now();
  await rejectsWith(c.stream({ url: silent.origin, headers: { 'keep-alive': 'timeout=5' }, timeoutMs: 100 }), 'timeout');
  assert.ok(Date.now() - started < 350, 'the waiting call gave up at its own deadline');
  await rejectsWith(first, 'timeout');
  assert.equal(silent.connections(), 1);
});

test('the Keep-Alive path hands response headers over as undici does: a single Set-Cookie is a string', async () => {
  const s = await server(startServer((_req, res) => {
    res.setHeader('set-cookie', 'only=1');
    res.end('ok');
  }));
  const c = client({ allowlist: ['127.0.0.1'] });
  const plain = await c.stream({ url: s.origin });
  await text(plain.body);
  const kept = await c.stream({ url: s.origin, headers: { 'keep-alive': 'timeout=5' } });
  await text(kept.body);
  assert.equal(plain.headers['set-cookie'], 'only=1');
  assert.deepEqual(kept.headers, { ...plain.headers, date: kept.headers.date, 'keep-alive': kept.headers['keep-alive'] });
});

test('a header value HTTP cannot carry is invalid_request on the Keep-Alive path too, not a failed exchange', async () => {
  const s = await server(startServer((_req, res) => res.end('reached')));
  const c = client({ allowlist: ['127.0.0.1'] });
  for (const value of ['a\u0001b', '\u20ac']) {
    await rejectsWith(c.stream({ url: s.origin, headers: { 'x-value': value } }), 'invalid_request');
    await rejectsWith(c.stream({ url: s.origin, headers: { 'x-value': value, 'keep-alive': 'timeout=5' } }), 'invalid_request');
  }
  assert.equal(s.connections(), 0);
});

test('the deadline holds while the connection is still being made (a slow DNS answer), on both paths', async () => {
  const s = await server(startServer((_req, res) => res.end('late')));
  let answered = 0;
  const resolve = async () => {
    await new Promise((r) => setTimeout(r, 1500));
    answered++;
    return [{ address: '127.0.0.1', family: 4 }];
  };
  const c = client({ allowlist: ['slow.test'], resolve });
  for (const headers of [{}, { 'keep-alive': 'timeout=5' }] as Record<string, string>[]) {
    const started = Date.now();
    await rejectsWith(c.stream({ url: `http://slow.test:${s.port}/`, headers, timeoutMs: 200 }), 'timeout');
    const took = Date.now() - started;
    assert.ok(took < 1000, `gave up after ${took} ms, past its 200 ms deadline`);
  }
  // The connections made after the deadline serve nobody, and break nothing.
  while (answered < 2) await new Promise((r) => setTimeout(r, 50));
});
