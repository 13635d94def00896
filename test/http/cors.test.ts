import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, type Response } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * CORS_ORIGINS end to end: preflights answered before authentication, Coffer's CORS headers
 * on every answer to an allowed origin (errors and proxied answers included), and nothing at
 * all for other origins, for callers that send no Origin, or when the setting is empty.
 */

const PAGE = 'https://shop.example';
const EXPOSED = ['svc-idempotent-replayed', 'svc-proxy-destination-status', 'svc-proxy-destination-request-id', 'retry-after', 'x-request-id'];

function preflight(server: TestServer, path: string, origin: string | undefined, headers: Record<string, string> = {}) {
  return call(server, 'OPTIONS', path, {
    headers: { ...(origin === undefined ? {} : { origin }), 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,svc-api-key', ...headers },
  });
}

function assertPreflight(res: Response, allowOrigin: string) {
  assert.equal(res.status, 204, res.text);
  assert.equal(res.text, '');
  assert.equal(res.headers.get('access-control-allow-origin'), allowOrigin);
  assert.equal(res.headers.get('access-control-allow-methods'), 'GET, POST, PUT, PATCH, DELETE');
  assert.equal(res.headers.get('access-control-allow-headers'), 'content-type,svc-api-key');
  assert.equal(res.headers.get('access-control-max-age'), '7200');
  assert.equal(res.headers.get('access-control-allow-credentials'), null);
}

/** Today's answer to an OPTIONS: a 404 problem, and no CORS header at all. */
/** No CORS headers; `Vary: Origin` only where a list of origins makes every answer depend on Origin. */
function assertNoCors(res: Response, status?: number, { varyOrigin = false } = {}) {
  if (status !== undefined) assert.equal(res.status, status, res.text);
  for (const [name] of res.headers) assert.ok(!name.startsWith('access-control-'), `unexpected ${name}`);
  if (varyOrigin) assert.equal(res.headers.get('vary'), 'Origin');
  else assert.doesNotMatch(res.headers.get('vary') ?? '', /origin/i);
}

function assertNotFoundProblem(res: Response) {
  assertNoCors(res, 404);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, 404);
}

function assertActual(res: Response, allowOrigin: string) {
  assert.equal(res.headers.get('access-control-allow-origin'), allowOrigin, `${res.status} ${res.text}`);
  assert.equal(res.headers.get('access-control-allow-credentials'), null);
  const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(',').map((s) => s.trim().toLowerCase());
  for (const name of EXPOSED) assert.ok(exposed.includes(name), `${name} exposed: ${exposed}`);
  if (allowOrigin === '*') assert.doesNotMatch(res.headers.get('vary') ?? '', /origin/i);
  else assert.match(res.headers.get('vary') ?? '', /(^|,\s*)Origin(\s*,|$)/i);
}

/** A destination that says CORS things of its own; `/stream` answers chunked, so Coffer streams it. */
async function startDestination() {
  let calls = 0;
  const theirs = { 'access-control-allow-origin': 'https://dest.example', 'access-control-allow-credentials': 'true', 'access-control-expose-headers': 'x-dest', vary: 'Accept-Encoding', 'x-dest': 'd' };
  const server = http.createServer((req, res) => {
    calls++;
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/dest/stall')) return void res.writeHead(200, { ...theirs, 'content-type': 'text/plain', 'content-length': '10' }).flushHeaders();
      res.writeHead(200, { ...theirs, 'content-type': 'text/plain' });
      if (req.url?.startsWith('/dest/stream')) {
        res.write('card 4111111111111111 ');
        setTimeout(() => res.end('end'), 20);
      } else res.end('card 4111111111111111');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/dest`,
    calls: () => calls,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('CORS', () => {
  let dest: Awaited<ReturnType<typeof startDestination>>;
  before(async () => {
    dest = await startDestination();
  });
  after(() => dest?.close());

  describe('default (CORS_ORIGINS unset): any origin', () => {
    let server: TestServer;
    let publicKey: string;
    before(async () => {
      server = await startTestServer({ OUTBOUND_ALLOWLIST: '127.0.0.1', PROXY_TIMEOUT_MS: '3000' });
      publicKey = (await createApplication(server, { name: 'browser', type: 'public', permissions: ['token:create'] })).key;
    });
    after(() => server?.stop());

    it('answers a preflight on any path with 204 and *, before authentication or routing', async () => {
      for (const path of ['/tokens', '/tokens/some-id', '/no/such/route', '/proxy', '/proxy/v1/charges?x=1']) assertPreflight(await preflight(server, path, PAGE), '*');
      assertPreflight(await preflight(server, '/tokens', 'null'), '*');
      // Only the requested headers are named; none requested, none named.
      const bare = await call(server, 'OPTIONS', '/sessions', { headers: { origin: PAGE, 'access-control-request-method': 'GET' } });
      assert.equal(bare.status, 204);
      assert.equal(bare.headers.get('access-control-allow-headers'), null);
      assert.ok(bare.headers.get('x-request-id'), 'the request id, as on every answer');
    });

    it('an OPTIONS that is no preflight, or asks for absurd headers, gets today\'s 404', async () => {
      assertNotFoundProblem(await call(server, 'OPTIONS', '/tokens', { headers: { origin: PAGE } }));
      assertNotFoundProblem(await preflight(server, '/tokens', undefined));
      assertNotFoundProblem(await call(server, 'OPTIONS', '/tokens'));
      for (const requested of ['content-type;svc-api-key', 'x y', ',content-type', 'content-type,', `a${',x-custom'.repeat(250)}`]) {
        assertNotFoundProblem(await preflight(server, '/tokens', PAGE, { 'access-control-request-headers': requested }));
      }
      // Spaces after commas, as some clients write them, are fine.
      const spaced = await preflight(server, '/tokens', PAGE, { 'access-control-request-headers': 'content-type, svc-api-key' });
      assert.equal(spaced.status, 204);
      assert.equal(spaced.headers.get('access-control-allow-headers'), 'content-type, svc-api-key');
    });

    it('a browser page creates a token with a public key, and can read the answer', async () => {
      const res = await call(server, 'POST', '/tokens', { key: publicKey, headers: { origin: PAGE }, body: { type: 'token', data: 'from a browser' } });
      assert.equal(res.status, 201, res.text);
      assertActual(res, '*');
      rememberSecret('from a browser');
      const session = await call(server, 'POST', '/sessions', { key: publicKey, headers: { origin: PAGE } });
      assert.equal(session.status, 201, session.text);
      assertActual(session, '*');
      rememberSecret(session.body.session_key);
      // A caller that sends no Origin (a server, curl) is answered as before.
      const direct = await call(server, 'POST', '/tokens', { key: publicKey, body: { type: 'token', data: 'server side' } });
      assert.equal(direct.status, 201, direct.text);
      rememberSecret('server side');
      assertNoCors(direct);
    });

    it('problems carry the headers too: 401, 403, 404, 400, 414', async () => {
      const unauthorized = await call(server, 'GET', '/tokens/x', { key: 'key_nonsense', headers: { origin: PAGE } });
      assert.equal(unauthorized.status, 401, unauthorized.text);
      assertActual(unauthorized, '*');
      const forbidden = await call(server, 'GET', '/applications', { key: publicKey, headers: { origin: PAGE } });
      assert.equal(forbidden.status, 403, forbidden.text);
      assertActual(forbidden, '*');
      const noRoute = await call(server, 'GET', '/no/such/route', { headers: { origin: PAGE } });
      assert.equal(noRoute.status, 404, noRoute.text);
      assertActual(noRoute, '*');
      const invalid = await call(server, 'POST', '/tokens', { key: publicKey, headers: { origin: PAGE }, raw: '{', contentType: 'application/json' });
      assert.equal(invalid.status, 400, invalid.text);
      assertActual(invalid, '*');
      // Refused before any route or hook runs: a malformed percent-encoding, an overlong segment.
      for (const [path, status] of [['/tokens/%zz', 400], [`/tokens/${'a'.repeat(600)}`, 414]] as const) {
        const early = await call(server, 'GET', path, { headers: { origin: PAGE } });
        assert.equal(early.status, status, early.text);
        assertActual(early, '*');
      }
    });

    it('proxies: a preflight never reaches the destination; answers carry Coffer\'s headers, not the destination\'s', async () => {
      const plain = await proxy(server, {});
      const masked = await proxy(server, { response_transform: { type: 'mask', matcher: 'regex', expression: '(\\d{12})\\d{4}', replacement: '*' } });
      const before = dest.calls();
      assertPreflight(await preflight(server, '/proxy/v1', PAGE, { 'access-control-request-headers': 'content-type,svc-api-key' }), '*');
      assert.equal(dest.calls(), before, 'a preflight is Coffer\'s to answer');

      for (const [what, p, path] of [['read whole', plain, ''], ['streamed', plain, '/stream'], ['masked', masked, '']] as const) {
        const res = await call(server, 'GET', `/proxy${path}`, { headers: { origin: PAGE, 'svc-proxy-key': p.key } });
        assert.equal(res.status, 200, `${what}: ${res.text}`);
        assertActual(res, '*');
        assert.equal(res.headers.get('svc-proxy-destination-status'), '200', what);
        assert.equal(res.headers.get('x-dest'), 'd', `${what}: the destination's other headers pass`);
        assert.equal(res.headers.get('vary'), 'Accept-Encoding', what);
        assert.doesNotMatch(res.headers.get('access-control-expose-headers') ?? '', /x-dest/, what);
        if (p === masked) assert.equal(res.text, 'card ************1111');
        // Without an Origin the destination's own CORS headers pass exactly as before.
        const direct = await call(server, 'GET', `/proxy${path}`, { headers: { 'svc-proxy-key': p.key } });
        assert.equal(direct.headers.get('access-control-allow-origin'), 'https://dest.example', what);
        assert.equal(direct.headers.get('access-control-allow-credentials'), 'true', what);
      }
    });

    it('proxy_error answers carry the headers: an unknown key, and a destination that stalls after its headers', async () => {
      const unknown = await call(server, 'GET', '/proxy', { headers: { origin: PAGE, 'svc-proxy-key': 'no-such-key' } });
      assert.ok(unknown.body?.proxy_error, unknown.text);
      assertActual(unknown, '*');
      const p = await proxy(server, {}, '/stall');
      const stalled = await call(server, 'GET', '/proxy', { headers: { origin: PAGE, 'svc-proxy-key': p.key } });
      assert.equal(stalled.status, 504, stalled.text);
      assertActual(stalled, '*');
      assert.equal(stalled.headers.get('x-dest'), null);
    });
  });

  describe('a list of origins', () => {
    let server: TestServer;
    before(async () => {
      // Written as people write them: upper case, default port, a trailing slash.
      server = await startTestServer({ CORS_ORIGINS: 'HTTPS://Shop.Example:443/, https://admin.example:8443', OUTBOUND_ALLOWLIST: '127.0.0.1' });
    });
    after(() => server?.stop());

    it('answers only the listed origins, as browsers send them, echoing the origin with Vary', async () => {
      for (const origin of [PAGE, 'https://admin.example:8443']) {
        const pre = await preflight(server, '/tokens', origin);
        assertPreflight(pre, origin);
        assert.match(pre.headers.get('vary') ?? '', /Origin/);
        assert.match(pre.headers.get('vary') ?? '', /Access-Control-Request-Headers/);
        const res = await call(server, 'GET', '/tokens/x', { headers: { origin } });
        assert.equal(res.status, 401);
        assertActual(res, origin);
      }
      // Any other origin gets today's answers: the comparison is exact, after the list was normalised.
      for (const origin of ['https://evil.example', 'http://shop.example', 'https://shop.example:8443', 'https://admin.example', 'null', 'https://SHOP.example']) {
        // Still answers that depend on Origin: no shared cache may give them to a listed origin.
        assertNoCors(await preflight(server, '/tokens', origin), 404, { varyOrigin: true });
        assertNoCors(await call(server, 'GET', '/tokens/x', { headers: { origin } }), 401, { varyOrigin: true });
      }
    });

    it('a proxied answer echoes the origin and keeps the destination\'s Vary with Origin added', async () => {
      const p = await proxy(server, {});
      const res = await call(server, 'GET', '/proxy', { headers: { origin: PAGE, 'svc-proxy-key': p.key } });
      assert.equal(res.status, 200, res.text);
      assertActual(res, PAGE);
      assert.equal(res.headers.get('vary'), 'Accept-Encoding, Origin');
      const other = await call(server, 'GET', '/proxy', { headers: { origin: 'https://evil.example', 'svc-proxy-key': p.key } });
      assert.equal(other.headers.get('access-control-allow-origin'), 'https://dest.example');
      assert.equal(other.headers.get('vary'), 'Accept-Encoding');
    });
  });

  describe('CORS_ORIGINS= (empty): off', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ CORS_ORIGINS: '' });
    });
    after(() => server?.stop());

    it('sends no CORS headers and answers preflights 404, as before', async () => {
      assert.deepEqual(server.config.corsOrigins, []);
      assertNotFoundProblem(await preflight(server, '/tokens', PAGE));
      assertNotFoundProblem(await preflight(server, '/proxy/x', PAGE));
      const res = await call(server, 'GET', '/tokens/x', { headers: { origin: PAGE } });
      assert.equal(res.status, 401);
      assertNoCors(res);
    });
  });

  async function proxy(server: TestServer, body: Record<string, unknown>, path = '') {
    const res = await call(server, 'POST', '/proxies', { key: server.key, body: { name: 'browser proxy', destination_url: dest.url + path, require_auth: false, ...body } });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.key);
    return res.body as { id: string; key: string };
  }
});
