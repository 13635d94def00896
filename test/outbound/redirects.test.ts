import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  fakeResolver,
  rejectsWith,
  startRecordingServer,
  startSilentServer,
  trackClientsAndServers,
  type TestServer,
} from './helpers.ts';

/** Routes: /to?<url> redirects (status from ?s=) to the URL; /loop/<n> redirects to /loop/<n+1>; anything else echoes. */
function redirectServer() {
  return startRecordingServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/to') {
      res.writeHead(Number(url.searchParams.get('s') ?? 302), { location: url.searchParams.get('u')! });
      res.end('redirect body');
    } else if (url.pathname.startsWith('/loop/')) {
      const n = Number(url.pathname.slice('/loop/'.length));
      res.writeHead(302, { location: `/loop/${n + 1}` });
      res.end();
    } else if (url.pathname === '/no-location') {
      res.writeHead(302);
      res.end('nowhere');
    } else {
      res.end(JSON.stringify({ method: req.method, path: req.url }));
    }
  });
}

const to = (s: TestServer, target: string, status = 302) => `${s.origin}/to?s=${status}&u=${encodeURIComponent(target)}`;

const { client, server } = trackClientsAndServers();

test('redirects are not followed unless asked', async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  const res = await c.request({ url: to(s, '/final') });
  assert.equal(res.status, 302);
  assert.equal(res.headers.location, '/final');
  assert.equal(res.body.toString(), 'redirect body');
  assert.equal(res.url, to(s, '/final'));
  assert.equal(s.seen.length, 1);
});

test('followed redirects report the final URL; relative locations resolve against the current one', async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  const res = await c.request({ url: to(s, '/final?x=1'), followRedirects: true });
  assert.equal(res.status, 200);
  assert.equal(res.url, `${s.origin}/final?x=1`);
  assert.deepEqual(JSON.parse(res.body.toString()), { method: 'GET', path: '/final?x=1' });
  const rel = await c.request({ url: to(s, '../a/./b/../c'), followRedirects: true });
  assert.equal(rel.url, `${s.origin}/a/c`);
});

test('a redirect from an allowed server to a blocked literal IP is refused at the hop', async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  for (const target of ['http://169.254.169.254/latest/meta-data/', 'http://[::1]/', 'http://2130706434/', 'http://10.0.0.1/']) {
    const err = await rejectsWith(c.request({ url: to(s, target), followRedirects: true }), 'blocked_address');
    assert.match(err.message, /redirect from 127\.0\.0\.1:\d+ refused/);
    assert.doesNotMatch(err.message, /meta-data/);
  }
});

test("a redirect to another protocol's port on an allowed address is refused at the hop", async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  const err = await rejectsWith(c.request({ url: to(s, 'http://127.0.0.1:25/'), method: 'POST', body: 'HELO x', followRedirects: true }), 'blocked_address');
  assert.match(err.message, /redirect from 127\.0\.0\.1:\d+ refused: port 25 /);
});

test('a redirect to a hostname resolving to a blocked address is refused before connecting', async () => {
  const s = await server(redirectServer());
  // Nothing listens on 127.0.0.2: a connection there would fail as connect_failed, not blocked_address.
  const dns = fakeResolver({ 'internal.test': ['127.0.0.2'] });
  const c = client({ allowlist: ['127.0.0.1'], resolve: dns.resolve });
  await rejectsWith(c.request({ url: to(s, `http://internal.test:${s.port}/admin`), followRedirects: true }), 'blocked_address');
  assert.deepEqual(dns.calls, ['internal.test']);
  assert.equal(s.seen.length, 1);
});

test('a redirect to another scheme or to a URL with credentials is invalid_url', async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  await rejectsWith(c.request({ url: to(s, 'ftp://127.0.0.1/x'), followRedirects: true }), 'invalid_url');
  await rejectsWith(c.request({ url: to(s, 'file:///etc/passwd'), followRedirects: true }), 'invalid_url');
  await rejectsWith(c.request({ url: to(s, `http://u:p@127.0.0.1:${s.port}/`), followRedirects: true }), 'invalid_url');
  await rejectsWith(c.request({ url: to(s, 'http://[::1'), followRedirects: true }), 'invalid_url');
});

test('each hop counts against maxRedirects', async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'], maxRedirects: 3 });
  const err = await rejectsWith(c.request({ url: `${s.origin}/loop/0`, followRedirects: true }), 'too_many_redirects');
  assert.match(err.message, /more than 3 redirects/);
  assert.deepEqual(
    s.seen.map((r) => r.url),
    ['/loop/0', '/loop/1', '/loop/2', '/loop/3'],
  );
  // Exactly the limit is fine.
  const chain = to(s, to(s, to(s, '/done')));
  assert.equal((await c.request({ url: chain, followRedirects: true })).url, `${s.origin}/done`);
  // The default is 5.
  const five = client({ allowlist: ['127.0.0.1'] });
  s.seen.length = 0;
  await rejectsWith(five.request({ url: `${s.origin}/loop/0`, followRedirects: true }), 'too_many_redirects');
  assert.equal(s.seen.length, 6);
});

test('maxRedirects 0 refuses the first redirect when following', async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'], maxRedirects: 0 });
  await rejectsWith(c.request({ url: to(s, '/final'), followRedirects: true }), 'too_many_redirects');
  assert.equal((await c.request({ url: to(s, '/final') })).status, 302);
});

test('303, and 301/302 after POST, become GET without the body; 307/308 keep method and body', async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  const post = (status: number, method = 'POST') =>
    c.request({ url: to(s, '/final', status), method, body: 'payload', headers: { 'content-type': 'text/plain' }, followRedirects: true });

  for (const status of [301, 302, 303]) {
    s.seen.length = 0;
    await post(status);
    const final = s.seen[1];
    assert.equal(final.method, 'GET', `${status}`);
    assert.equal(final.body, '');
    assert.equal(final.headers['content-type'], undefined);
    assert.equal(final.headers['content-length'], undefined);
  }
  for (const status of [307, 308]) {
    s.seen.length = 0;
    await post(status);
    const final = s.seen[1];
    assert.equal(final.method, 'POST', `${status}`);
    assert.equal(final.body, 'payload');
    assert.equal(final.headers['content-type'], 'text/plain');
  }
  // Only POST changes on 301/302; 303 changes everything but HEAD.
  s.seen.length = 0;
  await post(302, 'PUT');
  assert.equal(s.seen[1].method, 'PUT');
  assert.equal(s.seen[1].body, 'payload');
  s.seen.length = 0;
  await post(303, 'PUT');
  assert.equal(s.seen[1].method, 'GET');
  s.seen.length = 0;
  await c.request({ url: to(s, '/final', 303), method: 'HEAD', followRedirects: true });
  assert.equal(s.seen[1].method, 'HEAD');
});

test('credentials stay with their origin: a cross-origin hop drops authorization and cookie', async () => {
  const a = await server(redirectServer());
  const b = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  const headers = { authorization: 'Bearer a-token', cookie: 'sid=1', 'x-custom': 'kept' };

  await c.request({ url: to(a, '/same'), headers, followRedirects: true });
  assert.equal(a.seen[1].headers.authorization, 'Bearer a-token', 'same origin keeps them');
  assert.equal(a.seen[1].headers.cookie, 'sid=1');

  await c.request({ url: to(a, `${b.origin}/other`), headers, followRedirects: true });
  const atB = b.seen[0];
  assert.equal(atB.url, '/other');
  assert.equal(atB.headers.authorization, undefined);
  assert.equal(atB.headers.cookie, undefined);
  assert.equal(atB.headers['x-custom'], 'kept');
  assert.equal(atB.headers.host, `127.0.0.1:${b.port}`);
});

test('a 3xx without Location is returned as it is', async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  const res = await c.request({ url: `${s.origin}/no-location`, followRedirects: true });
  assert.equal(res.status, 302);
  assert.equal(res.body.toString(), 'nowhere');
});

test('one deadline covers every hop', async () => {
  const s = await server(redirectServer());
  const silent = await server(startSilentServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  const started = Date.now();
  await rejectsWith(c.request({ url: to(s, `${silent.origin}/`), followRedirects: true, timeoutMs: 300 }), 'timeout');
  assert.ok(Date.now() - started < 1500);
  assert.equal(silent.connections(), 1);
});

test('stream follows redirects with the same checks', async () => {
  const s = await server(redirectServer());
  const c = client({ allowlist: ['127.0.0.1'] });
  const res = await c.stream({ url: to(s, '/streamed'), followRedirects: true });
  assert.equal(res.status, 200);
  assert.equal(res.url, `${s.origin}/streamed`);
  const chunks: Buffer[] = [];
  for await (const chunk of res.body) chunks.push(chunk as Buffer);
  assert.deepEqual(JSON.parse(Buffer.concat(chunks).toString()), { method: 'GET', path: '/streamed' });
  await rejectsWith(c.stream({ url: to(s, 'http://169.254.169.254/'), followRedirects: true }), 'blocked_address');
});
