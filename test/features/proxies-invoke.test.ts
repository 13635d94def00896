import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, createOtherTenant, type Response } from '../helpers/http.ts';
import { rawRequest } from '../helpers/raw-request.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Proxy invocation end to end: a real Coffer and a destination server on 127.0.0.1 (reachable
 * only because the test config allowlists loopback). Method, path and query mapping,
 * detokenization in JSON, text and form bodies, header forwarding, transforms and masks,
 * anonymous and authenticated proxies, and every proxy_error.
 */

type Seen = { method: string; url: string; headers: http.IncomingHttpHeaders; body: string; raw: Buffer };
/** `hang`: never answers; `stall`: sends the status and headers, then no body. */
type Answer = { status?: number; headers?: Record<string, string | string[]>; body?: string | Buffer; hang?: boolean; stall?: boolean };

/** Records every request; answers per path prefix (longest wins), by default echoing the request as JSON. */
async function startDestination() {
  const seen: Seen[] = [];
  const answers = new Map<string, (req: Seen) => Answer>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const s: Seen = { method: req.method ?? '', url: req.url ?? '/', headers: req.headers, body: raw.toString('utf8'), raw };
      seen.push(s);
      const prefix = [...answers.keys()].filter((p) => s.url.startsWith(p)).sort((a, b) => b.length - a.length)[0];
      const a = prefix ? answers.get(prefix)!(s) : { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...s, raw: undefined }) };
      if (a.hang) return;
      res.writeHead(a.status ?? 200, a.headers ?? {});
      if (a.stall) return void res.flushHeaders();
      res.end(a.body ?? '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (p = '') => `http://127.0.0.1:${port}${p}`,
    at: (prefix: string) => seen.filter((s) => s.url.startsWith(prefix)),
    answer: (prefix: string, fn: (req: Seen) => Answer) => answers.set(prefix, fn),
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const PAN = '4111111111111111';
const SECRET = 'proxy-test-secret-7731';
const DEST_STATUS = 'svc-proxy-destination-status';

/** A proxy_error: the problem inside, JSON, and no destination-status header. */
function assertProxyError(res: Response, status: number, detail?: RegExp): any {
  assert.equal(res.status, status, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(res.headers.get(DEST_STATUS), null, 'no destination status on a proxy_error');
  const problem = res.body?.proxy_error;
  assert.ok(problem, `expected a proxy_error, got ${res.text}`);
  assert.equal(problem.status, status);
  assert.equal(typeof problem.title, 'string');
  assert.equal(typeof problem.request_id, 'string');
  if (detail) assert.match(problem.detail, detail);
  return problem;
}

describe('proxy invocation', () => {
  let server: TestServer;
  let dest: Awaited<ReturnType<typeof startDestination>>;
  /** Creates tokens and reads them (reveal), and may use them anywhere. */
  let backend: { id: string; key: string };
  /** token:use only under /general/, so a card in /pci/ is forbidden. */
  let narrow: { id: string; key: string };
  let cardToken: string;
  let secretToken: string;

  before(async () => {
    rememberSecret(PAN, SECRET, '4000056655665556', '4012888888881881', '5454545454545454');
    dest = await startDestination();
    server = await startTestServer({
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      // Also the transforms' time limit: roomy enough for a cold isolate on a busy machine.
      PROXY_TIMEOUT_MS: '3000',
      PROXY_MAX_BODY_BYTES: '65536',
      PROXY_ANONYMOUS_RATE: '1',
      PROXY_ANONYMOUS_BURST: '6',
    });
    backend = await createApplication(server, {
      name: 'backend',
      type: 'private',
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }],
    });
    narrow = await createApplication(server, {
      name: 'narrow',
      type: 'private',
      rules: [{ priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:use'] }],
    });
    const card = await call(server, 'POST', '/tokens', { key: backend.key, body: { type: 'card', data: { number: PAN, expiration_month: 12, expiration_year: 2040, cvc: '123' } } });
    assert.equal(card.status, 201, card.text);
    cardToken = card.body.id;
    const secret = await call(server, 'POST', '/tokens', { key: backend.key, body: { type: 'token', data: SECRET } });
    assert.equal(secret.status, 201, secret.text);
    secretToken = secret.body.id;
  });
  after(async () => {
    await server?.stop();
    await dest?.close();
  });

  async function proxy(body: Record<string, unknown> = {}, path = '/api') {
    const res = await call(server, 'POST', '/proxies', { key: server.key, body: { name: `p ${path}`, destination_url: dest.url(path), ...body } });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.key);
    return res.body as { id: string; key: string };
  }

  /** Invokes with the proxy key header (and an API key unless `key` is null). */
  function invoke(proxyKey: string, method: string, path = '', opts: { key?: string | null; body?: unknown; raw?: string; contentType?: string; headers?: Record<string, string> } = {}) {
    const { key = backend.key, headers = {}, ...rest } = opts;
    return call(server, method, `/proxy${path}`, { ...rest, ...(key === null ? {} : { key }), headers: { 'svc-proxy-key': proxyKey, ...headers } });
  }

  describe('mapping', () => {
    it('carries every method, the path suffix and the query to destination_url', async () => {
      const p = await proxy({}, '/map');
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
        // PATCH with plain JSON: the merge-patch rule is for Coffer's resources, not for what a proxy forwards.
        const body = method === 'GET' ? {} : { body: { n: 1 } };
        const res = await invoke(p.key, method, `/v1/charges?x=1&y=a%20b`, body);
        assert.equal(res.status, 200, `${method}: ${res.text}`);
        assert.equal(res.headers.get(DEST_STATUS), '200');
        assert.equal(res.body.method, method);
        assert.equal(res.body.url, '/map/v1/charges?x=1&y=a%20b');
        if (method !== 'GET') assert.deepEqual(JSON.parse(res.body.body), { n: 1 });
      }
    });

    it('HEAD and OPTIONS are not proxied', async () => {
      const p = await proxy({}, '/head');
      assert.equal((await invoke(p.key, 'HEAD')).status, 404);
      assert.equal((await invoke(p.key, 'OPTIONS')).status, 404);
      assert.equal(dest.at('/head').length, 0);
    });

    it('POST /proxy alone goes to destination_url itself, trailing slash and its own query kept', async () => {
      const p = await proxy({ destination_url: `${dest.url('/base/')}?fixed=1` });
      const res = await invoke(p.key, 'POST', '?x=2', { body: {} });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.url, '/base/?fixed=1&x=2');
      // Below it, one slash joins them, whichever side has it.
      assert.equal((await invoke(p.key, 'POST', '/charges', { body: {} })).body.url, '/base/charges?fixed=1');
      assert.equal((await invoke(p.key, 'POST', '/', { body: {} })).body.url, '/base/?fixed=1');
      const bare = await proxy({}, '/bare');
      assert.equal((await invoke(bare.key, 'GET')).body.url, '/bare');
      assert.equal((await invoke(bare.key, 'GET', '/')).body.url, '/bare/');
      assert.equal((await invoke(bare.key, 'GET', '/x/')).body.url, '/bare/x/');
    });

    it('a destination_url stored normalised still goes where it was written to, slash and query kept', async () => {
      const p = await proxy({ destination_url: `HTTP:///127.0.0.1:${dest.port}/Norm/?fixed=1` });
      assert.equal((await call(server, 'GET', `/proxies/${p.id}`, { key: server.key })).body.destination_url, `${dest.url('/Norm/')}?fixed=1`);
      assert.equal((await invoke(p.key, 'GET')).body.url, '/Norm/?fixed=1');
      assert.equal((await invoke(p.key, 'GET', '/x?y=2')).body.url, '/Norm/x?fixed=1&y=2');
      const bare = await proxy({ destination_url: `http://127.0.0.1:${dest.port}\\Bare` });
      assert.equal((await invoke(bare.key, 'GET')).body.url, '/Bare');
      assert.equal((await invoke(bare.key, 'GET', '/x')).body.url, '/Bare/x');
    });

    it('takes the proxy key from the svc-proxy-key query parameter and never forwards it', async () => {
      const p = await proxy({}, '/query');
      const res = await call(server, 'GET', `/proxy/a?svc-proxy-key=${encodeURIComponent(p.key)}&b=2`, { key: backend.key });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.url, '/query/a?b=2');
      assert.ok(!JSON.stringify(res.body.headers).includes(p.key));
    });

    it('a raw # in the path or query is carried, not taken for a fragment that drops the rest', async () => {
      const p = await proxy({}, '/hash');
      const res = await rawRequest(server.url, 'GET', '/proxy/a#b?x=1#2&y=3', { 'svc-proxy-key': p.key, 'svc-api-key': backend.key });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.url, '/hash/a%23b?x=1%232&y=3');
    });

    it('refuses a path that climbs out of the destination path', async () => {
      const p = await proxy({}, '/jail');
      for (const path of ['/a/../b', '/%2e%2e/x', '/a/%2E%2E', '/a/..%5c..']) {
        const res = await rawRequest(server.url, 'GET', `/proxy${path}`, { 'svc-proxy-key': p.key, 'svc-api-key': backend.key });
        assertProxyError(res, 400);
      }
      assert.equal(dest.at('/jail').length, 0);
    });
  });

  describe('detokenization', () => {
    it('replaces expressions in a JSON body with the caller\'s token:use', async () => {
      const p = await proxy({}, '/json');
      const res = await invoke(p.key, 'POST', '', {
        body: { card: { number: `{{ ${cardToken} | json: '$.number' }}`, exp: `{{ ${cardToken} | card_exp: 'MM/YY' }}` }, note: `s={{ ${secretToken} }}`, whole: `{{ ${cardToken} | json: '$.expiration_month' }}` },
      });
      assert.equal(res.status, 200, res.text);
      const sent = JSON.parse(res.body.body);
      assert.deepEqual(sent, { card: { number: PAN, exp: '12/40' }, note: `s=${SECRET}`, whole: 12 });
    });

    it('replaces expressions in text bodies', async () => {
      const p = await proxy({}, '/text');
      const xml = `<pan>{{ ${cardToken} | json: '$.number' }}</pan><s>{{ ${secretToken} }}</s>`;
      const res = await invoke(p.key, 'POST', '', { raw: xml, contentType: 'application/xml' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.body, `<pan>${PAN}</pan><s>${SECRET}</s>`);
      const plain = await invoke(p.key, 'POST', '', { raw: `n={{${cardToken} | json: '$.number'}}`, contentType: 'text/plain' });
      assert.equal(plain.body.body, `n=${PAN}`);
    });

    it('replaces expressions in form-encoded values', async () => {
      const p = await proxy({}, '/form');
      const form = new URLSearchParams({ card_number: `{{ ${cardToken} | json: '$.number' }}`, amount: '100', memo: 'a b&c' }).toString();
      const res = await invoke(p.key, 'POST', '', { raw: form, contentType: 'application/x-www-form-urlencoded' });
      assert.equal(res.status, 200, res.text);
      const sent = new URLSearchParams(res.body.body);
      assert.equal(sent.get('card_number'), PAN);
      assert.equal(sent.get('amount'), '100');
      assert.equal(sent.get('memo'), 'a b&c');
    });

    it('passes bodies without expressions, and binary bodies, byte for byte', async () => {
      const p = await proxy({}, '/raw');
      const json = '{ "a" : 1,\n  "b": [ true ] }';
      assert.equal((await invoke(p.key, 'POST', '', { raw: json, contentType: 'application/json' })).body.body, json);
      const bin = '{{ not an expression in a binary body }}';
      assert.equal((await invoke(p.key, 'POST', '', { raw: bin, contentType: 'application/octet-stream' })).body.body, bin);
    });

    it('a compressed body is forwarded byte for byte, whatever bytes it holds', async () => {
      // Compressed bytes hold "{{" by chance (about one 10 KiB body in seven): they are not expressions.
      let gz = Buffer.alloc(0);
      for (let i = 0; !gz.includes('{{'); i++) gz = gzipSync(JSON.stringify({ amount: i, memo: `order ${i * 7919}` }));
      const p = await proxy({}, '/gzip-in');
      const res = await rawRequest(server.url, 'POST', '/proxy', { 'svc-proxy-key': p.key, 'svc-api-key': backend.key, 'content-type': 'application/json', 'content-encoding': 'gzip' }, gz);
      assert.equal(res.status, 200, res.text);
      const seen = dest.at('/gzip-in')[0];
      assert.ok(seen.raw.equals(gz), 'the compressed body reaches the destination unchanged');
      assert.equal(seen.headers['content-encoding'], 'gzip');
    });

    it('an unknown token is a 400 proxy_error, a bad expression too, and nothing is forwarded', async () => {
      const p = await proxy({}, '/bad');
      assertProxyError(await invoke(p.key, 'POST', '', { body: { x: '{{ 1b5e6b5c-2c1c-4a47-9d57-4ad0fd0f1b2a }}' } }), 400, /not found/);
      assertProxyError(await invoke(p.key, 'POST', '', { body: { x: `{{ ${cardToken} | no_such_filter }}` } }), 400);
      assertProxyError(await invoke(p.key, 'POST', '', { raw: `{"x": "{{ ${cardToken} }}"`, contentType: 'application/json' }), 400, /JSON/);
      assert.equal(dest.at('/bad').length, 0);
    });

    it('a token the caller may not use is a 403 proxy_error', async () => {
      const p = await proxy({}, '/forbidden');
      const res = await invoke(p.key, 'POST', '', { key: narrow.key, body: { n: `{{ ${cardToken} | json: '$.number' }}` } });
      assertProxyError(res, 403, /token:use/);
      assert.equal(dest.at('/forbidden').length, 0);
    });
  });

  describe('headers', () => {
    it('forwards the caller\'s headers, Authorization included, minus Coffer\'s and hop-by-hop ones', async () => {
      const p = await proxy({}, '/headers');
      const res = await rawRequest(server.url, 'POST', '/proxy', {
        'svc-proxy-key': p.key,
        'svc-api-key': backend.key,
        'content-type': 'application/json',
        authorization: 'Bearer dest-credential',
        'x-custom': 'kept',
        'x-hop': 'dropped',
        connection: 'keep-alive, x-hop',
        'keep-alive': 'timeout=9',
        // Addressed to the proxy on the way, which Coffer is; and Coffer has already read the body.
        'proxy-authorization': 'Basic cHJveHk=',
        'proxy-trace': 'dropped',
        expect: '100-continue',
      }, '{}');
      assert.equal(res.status, 200, res.text);
      const h = res.body.headers;
      assert.equal(h.authorization, 'Bearer dest-credential');
      assert.equal(h['x-custom'], 'kept');
      assert.equal(h['content-type'], 'application/json');
      for (const gone of ['svc-api-key', 'svc-proxy-key', 'svc-proxy-keep-alive', 'svc-proxy-connection', 'x-hop', 'keep-alive', 'proxy-authorization', 'proxy-trace', 'expect']) {
        assert.equal(h[gone], undefined, `${gone} must not be forwarded`);
      }
    });

    it('SVC-PROXY-CONNECTION becomes the Connection header of the destination call', async () => {
      const p = await proxy({}, '/conn');
      const res = await invoke(p.key, 'GET', '', { headers: { 'svc-proxy-connection': 'close' } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.headers.connection, 'close');
      const kept = await invoke(p.key, 'GET', '', { headers: { 'svc-proxy-connection': 'Keep-Alive' } });
      assert.equal(kept.status, 200, kept.text);
      assert.equal(kept.body.headers.connection, 'keep-alive');
      const bad = await invoke(p.key, 'GET', '', { headers: { 'svc-proxy-connection': 'upgrade' } });
      assertProxyError(bad, 400, /SVC-PROXY-CONNECTION/);
    });

    it('SVC-PROXY-KEEP-ALIVE becomes the Keep-Alive header of the destination call, the caller\'s own Keep-Alive does not', async () => {
      const p = await proxy({}, '/keepalive');
      const res = await rawRequest(server.url, 'POST', '/proxy/v1?x=1', {
        'svc-proxy-key': p.key,
        'svc-api-key': backend.key,
        'content-type': 'application/json',
        'keep-alive': 'timeout=9',
        'svc-proxy-keep-alive': 'timeout=5, max=100',
      }, JSON.stringify({ pan: `{{ ${cardToken} | json: '$.number' }}` }));
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get('svc-proxy-destination-status'), '200');
      assert.equal(res.body.headers['keep-alive'], 'timeout=5, max=100');
      assert.equal(res.body.headers.connection, 'keep-alive');
      assert.equal(res.body.url, '/keepalive/v1?x=1');
      assert.deepEqual(JSON.parse(res.body.body), { pan: PAN });
      const closing = await invoke(p.key, 'GET', '', { headers: { 'svc-proxy-keep-alive': 'timeout=5', 'svc-proxy-connection': 'close' } });
      assert.equal(closing.status, 200, closing.text);
      assert.equal(closing.body.headers['keep-alive'], 'timeout=5');
      assert.equal(closing.body.headers.connection, 'close');
      for (const value of ['timeout=5;max=1', 'timeout=5,', '=5']) {
        const bad = await invoke(p.key, 'GET', '', { headers: { 'svc-proxy-keep-alive': value } });
        assertProxyError(bad, 400, /SVC-PROXY-KEEP-ALIVE/);
      }
    });
  });

  describe('responses', () => {
    it('passes the destination\'s status, headers and body with SVC-PROXY-DESTINATION-STATUS', async () => {
      dest.answer('/answer/created', () => ({ status: 201, headers: { 'content-type': 'text/plain', 'x-dest': 'yes', 'set-cookie': ['a=1', 'b=2'] }, body: 'made' }));
      dest.answer('/answer/declined', () => ({ status: 402, headers: { 'content-type': 'application/json' }, body: '{"declined":true}' }));
      dest.answer('/answer/broken', () => ({ status: 503, body: 'down' }));
      dest.answer('/answer/empty', () => ({ status: 204 }));
      const p = await proxy({}, '/answer');
      const created = await invoke(p.key, 'POST', '/created', { body: {} });
      assert.equal(created.status, 201);
      assert.equal(created.text, 'made');
      assert.equal(created.headers.get('x-dest'), 'yes');
      assert.equal(created.headers.get('content-type'), 'text/plain');
      assert.deepEqual(created.headers.getSetCookie(), ['a=1', 'b=2']);
      assert.equal(created.headers.get(DEST_STATUS), '201');
      const declined = await invoke(p.key, 'POST', '/declined', { body: {} });
      assert.equal(declined.status, 402);
      assert.deepEqual(declined.body, { declined: true });
      assert.equal(declined.headers.get(DEST_STATUS), '402');
      const broken = await invoke(p.key, 'GET', '/broken');
      assert.equal(broken.status, 503);
      assert.equal(broken.text, 'down');
      assert.equal(broken.headers.get(DEST_STATUS), '503');
      const empty = await invoke(p.key, 'DELETE', '/empty');
      assert.equal(empty.status, 204);
      assert.equal(empty.headers.get(DEST_STATUS), '204');
    });

    it('keeps Coffer\'s x-request-id on the answer and returns the destination\'s as SVC-PROXY-DESTINATION-REQUEST-ID', async () => {
      dest.answer('/reqid', () => ({ headers: { 'content-type': 'text/plain', 'x-request-id': 'dest-req-42' }, body: 'ok' }));
      const p = await proxy({}, '/reqid');
      const chosen = await invoke(p.key, 'GET', '', { headers: { 'x-request-id': 'caller-req-7' } });
      assert.equal(chosen.status, 200, chosen.text);
      assert.equal(chosen.headers.get('x-request-id'), 'caller-req-7');
      assert.equal(chosen.headers.get('svc-proxy-destination-request-id'), 'dest-req-42');
      const generated = await invoke(p.key, 'GET');
      assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      assert.equal(generated.headers.get('svc-proxy-destination-request-id'), 'dest-req-42');
      // A response transform's headers are the answer's: the same rule.
      const code = `module.exports = async function (req) { return { body: 't', headers: { ...req.args.headers, 'x-request-id': 'from-transform' } }; };`;
      const t = await proxy({ response_transform: { code } }, '/reqid');
      const transformed = await invoke(t.key, 'GET', '', { headers: { 'x-request-id': 'caller-req-8' } });
      assert.equal(transformed.status, 200, transformed.text);
      assert.equal(transformed.headers.get('x-request-id'), 'caller-req-8');
      assert.equal(transformed.headers.get('svc-proxy-destination-request-id'), 'from-transform');
      // A destination that sends none: Coffer's alone.
      const none = await invoke((await proxy({}, '/no-reqid')).key, 'GET', '', { headers: { 'x-request-id': 'caller-req-9' } });
      assert.equal(none.headers.get('x-request-id'), 'caller-req-9');
      assert.equal(none.headers.get('svc-proxy-destination-request-id'), null);
    });

    it('streams large responses without a size limit', async () => {
      const big = 'x'.repeat(3 * 1024 * 1024);
      dest.answer('/big', () => ({ headers: { 'content-type': 'text/plain' }, body: big }));
      const p = await proxy({}, '/big');
      const res = await invoke(p.key, 'GET');
      assert.equal(res.status, 200);
      assert.equal(res.text.length, big.length);
    });

    it('a destination that is down is a 502 proxy_error, one past its deadline a 504', async () => {
      // A port nothing listens on (free a moment ago); not one of the ports other protocols own.
      const closed = await new Promise<number>((resolve) => {
        const probe = net.createServer().listen(0, '127.0.0.1', () => {
          const { port } = probe.address() as net.AddressInfo;
          probe.close(() => resolve(port));
        });
      });
      const down = await call(server, 'POST', '/proxies', { key: server.key, body: { name: 'down', destination_url: `http://127.0.0.1:${closed}/` } });
      assert.equal(down.status, 201, down.text);
      rememberSecret(down.body.key);
      assertProxyError(await invoke(down.body.key, 'GET'), 502, /could not be reached/);
      dest.answer('/slow', () => ({ hang: true }));
      const slow = await proxy({}, '/slow');
      const started = Date.now();
      assertProxyError(await invoke(slow.key, 'GET'), 504, /3000 ms/);
      assert.ok(Date.now() - started >= 2900);
      // Headers came, the body never did: still a 504 proxy_error, without the destination's headers.
      dest.answer('/stall', () => ({ headers: { 'content-type': 'text/plain', 'content-length': '10', 'x-dest': 'y' }, stall: true }));
      const stall = await proxy({}, '/stall');
      const stalled = await invoke(stall.key, 'GET');
      assertProxyError(stalled, 504);
      assert.equal(stalled.headers.get('x-dest'), null);
    });

    it('refuses bodies over PROXY_MAX_BODY_BYTES with 413', async () => {
      const p = await proxy({}, '/limit');
      assertProxyError(await invoke(p.key, 'POST', '', { raw: 'x'.repeat(70_000), contentType: 'text/plain' }), 413);
      assert.equal(dest.at('/limit').length, 0);
    });

    it('never replays: two invocations with one SVC-IDEMPOTENCY-KEY both reach the destination', async () => {
      const p = await proxy({}, '/idem');
      for (let i = 0; i < 2; i++) {
        const res = await invoke(p.key, 'POST', '', { body: { i }, headers: { 'svc-idempotency-key': 'same-key-1' } });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('svc-idempotent-replayed'), null);
      }
      assert.equal(dest.at('/idem').length, 2);
    });
  });

  describe('authentication', () => {
    it('needs a proxy key: none → 401, unknown → 404', async () => {
      assertProxyError(await call(server, 'GET', '/proxy', { key: backend.key }), 401, /proxy key/);
      assertProxyError(await invoke('proxy_unknown', 'GET'), 404);
    });

    it('require_auth: an API key with token:use, even without expressions', async () => {
      const p = await proxy({}, '/auth');
      assertProxyError(await invoke(p.key, 'GET', '', { key: null }), 401);
      assertProxyError(await invoke(p.key, 'GET', '', { key: 'key_bogus' }), 401);
      const noUse = await createApplication(server, { name: 'creator', type: 'private', rules: [{ priority: 1, container: '/', transform: 'redact', permissions: ['token:create'] }] });
      assertProxyError(await invoke(p.key, 'GET', '', { key: noUse.key }), 403, /token:use/);
      assertProxyError(await invoke(p.key, 'GET', '', { key: server.key }), 403);
      assert.equal(dest.at('/auth').length, 0);
      assert.equal((await invoke(p.key, 'GET', '', { key: narrow.key })).status, 200);
    });

    it('another tenant\'s proxy key with this tenant\'s API key is a 404 and is never forwarded', async () => {
      const other = await createOtherTenant(server);
      const theirs = await call(server, 'POST', '/proxies', { key: other.api_key, body: { name: 'theirs', destination_url: dest.url('/theirs') } });
      assert.equal(theirs.status, 201, theirs.text);
      rememberSecret(theirs.body.key);
      assertProxyError(await invoke(theirs.body.key, 'POST', '', { body: { n: `{{ ${cardToken} }}` } }), 404);
      assert.equal(dest.at('/theirs').length, 0);
    });

    it('anonymous proxies need only the proxy key and detokenize with their application', async () => {
      const p = await proxy({ require_auth: false, application: { id: backend.id } }, '/anon');
      const res = await invoke(p.key, 'POST', '', { key: null, body: { n: `{{ ${cardToken} | json: '$.number' }}` } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(JSON.parse(res.body.body), { n: PAN });
      assert.equal(res.body.headers['svc-api-key'], undefined);

      const narrowAnon = await proxy({ require_auth: false, application: { id: narrow.id } }, '/anon-narrow');
      assertProxyError(await invoke(narrowAnon.key, 'POST', '', { key: null, body: { n: `{{ ${cardToken} }}` } }), 403);
    });

    it('an anonymous proxy without an application forwards plain bodies and refuses expressions', async () => {
      const p = await proxy({ require_auth: false }, '/anon-plain');
      assert.equal((await invoke(p.key, 'POST', '', { key: null, body: { plain: true } })).status, 200);
      assertProxyError(await invoke(p.key, 'POST', '', { key: null, body: { n: `{{ ${cardToken} }}` } }), 400, /no application/);
      assertProxyError(await invoke(p.key, 'POST', '', { key: null, raw: `{{ ${cardToken} }}`, contentType: 'text/plain' }), 400);
    });

    it('an anonymous proxy whose application has expired says so (403), not that it has none', async () => {
      const expiresAt = Date.now() + 1500;
      const app = await createApplication(server, {
        name: 'expiring',
        type: 'private',
        expires_at: new Date(expiresAt).toISOString(),
        rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:use'] }],
      });
      const p = await proxy({ require_auth: false, application: { id: app.id } }, '/anon-expiring');
      const body = { n: `{{ ${cardToken} | json: '$.number' }}` };
      assert.deepEqual(JSON.parse((await invoke(p.key, 'POST', '', { key: null, body })).body.body), { n: PAN });
      await new Promise((r) => setTimeout(r, expiresAt - Date.now() + 250));
      const expired = await invoke(p.key, 'POST', '', { key: null, body });
      assertProxyError(expired, 403, /application has expired/);
      assert.doesNotMatch(expired.body.proxy_error.detail, /no application/);
      assert.equal(dest.at('/anon-expiring').length, 1, 'nothing forwarded once expired');
      // Plain bodies need no application: they are still forwarded.
      assert.equal((await invoke(p.key, 'POST', '', { key: null, body: { plain: true } })).status, 200);
    });

    it('rate limits anonymous callers per proxy key and address with 429 and Retry-After', async () => {
      const p = await proxy({ require_auth: false }, '/rate');
      const statuses: number[] = [];
      let limited: Response | undefined;
      for (let i = 0; i < 10; i++) {
        const res = await invoke(p.key, 'GET', '', { key: null });
        statuses.push(res.status);
        if (res.status === 429) limited = res;
      }
      assert.ok(statuses.slice(0, 6).every((s) => s === 200), statuses.join());
      assert.ok(limited, `expected a 429 after the burst: ${statuses.join()}`);
      assertProxyError(limited, 429);
      assert.ok(Number(limited.headers.get('retry-after')) >= 1);
      // Another proxy has a bucket of its own.
      const q = await proxy({ require_auth: false }, '/rate2');
      assert.equal((await invoke(q.key, 'GET', '', { key: null })).status, 200);
    });

    it('a deleted proxy stops working at once', async () => {
      const p = await proxy({}, '/deleted');
      assert.equal((await invoke(p.key, 'GET')).status, 200);
      assert.equal((await call(server, 'DELETE', `/proxies/${p.id}`, { key: server.key })).status, 204);
      assertProxyError(await invoke(p.key, 'GET'), 404);
    });
  });

  describe('transforms', () => {
    it('a request transform sees the detokenized request and configuration and shapes what is forwarded', async () => {
      const code = `module.exports = async function (req) {
        const { body, headers, method, path, query } = req.args;
        return {
          body: { wrapped: body, method, path, query, last4: body.number.slice(-4) },
          headers: { ...headers, authorization: 'Basic ' + req.configuration.CREDENTIAL, 'x-bt': String(req.bt === null), host: 'other.example', expect: '100-continue', 'proxy-trace': 't' },
        };
      };`;
      const p = await proxy({ request_transform: { code }, configuration: { CREDENTIAL: 'c2VjcmV0' } }, '/reqtx');
      const res = await invoke(p.key, 'POST', '/pay?a=1&a=2', { body: { number: `{{ ${cardToken} | json: '$.number' }}` } });
      assert.equal(res.status, 200, res.text);
      const sent = JSON.parse(res.body.body);
      assert.deepEqual(sent, { wrapped: { number: PAN }, method: 'POST', path: '/pay', query: { a: ['1', '2'] }, last4: '1111' });
      assert.equal(res.body.headers.authorization, 'Basic c2VjcmV0');
      assert.equal(res.body.headers['x-bt'], 'true', 'no application: bt is null');
      // Not sent, as when a caller sends them.
      assert.equal(res.body.headers.host, `127.0.0.1:${dest.port}`);
      assert.equal(res.body.headers.expect, undefined);
      assert.equal(res.body.headers['proxy-trace'], undefined);
      // A JSON body without expressions reaches the code parsed too; text as a string.
      const probe = `module.exports = async (req) => ({ body: { type: typeof req.args.body, body: req.args.body } });`;
      const q = await proxy({ request_transform: { code: probe } }, '/reqtx-kinds');
      const json = await invoke(q.key, 'PUT', '', { body: { plain: [1, 2] } });
      assert.deepEqual(JSON.parse(json.body.body), { type: 'object', body: { plain: [1, 2] } });
      assert.equal(json.body.headers['content-type'], 'application/json');
      const text = await invoke(q.key, 'POST', '', { raw: 'hello', contentType: 'text/plain' });
      assert.deepEqual(JSON.parse(text.body.body), { type: 'string', body: 'hello' });
      const none = await invoke(q.key, 'DELETE', '');
      assert.deepEqual(JSON.parse(none.body.body), { type: 'object', body: null });
    });

    it('a response transform with bt tokenizes what comes back', async () => {
      dest.answer('/issuer', () => ({ headers: { 'content-type': 'application/json', 'x-from': 'dest' }, body: JSON.stringify({ pan: '5555555555554444', status: 'ok' }) }));
      const code = `module.exports = async function (req) {
        const { body, headers } = req.args;
        const token = await req.bt.tokens.create({ type: 'card_number', data: body.pan });
        return { body: { pan_token: token.id, status: body.status }, headers: { ...headers, 'x-transformed': '1' } };
      };`;
      const p = await proxy({ response_transform: { code }, application: { id: backend.id } }, '/issuer');
      const res = await invoke(p.key, 'GET');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get(DEST_STATUS), '200');
      assert.equal(res.headers.get('x-transformed'), '1');
      assert.equal(res.headers.get('x-from'), 'dest');
      assert.equal(res.body.status, 'ok');
      assert.ok(!res.text.includes('5555555555554444'));
      const token = await call(server, 'GET', `/tokens/${res.body.pan_token}`, { key: backend.key });
      assert.equal(token.status, 200, token.text);
      assert.equal(token.body.data, '5555555555554444');
      rememberSecret('5555555555554444');
    });

    it('a response transform cannot frame the answer: its length, transfer-encoding and hop-by-hop headers go', async () => {
      dest.answer('/framing', () => ({ headers: { 'content-type': 'application/json' }, body: '{"a":1}' }));
      const code = `module.exports = async (req) => ({
        body: { rebuilt: true },
        headers: { ...req.args.headers, 'transfer-encoding': 'chunked', 'content-length': '1', connection: 'x-hop', 'x-hop': 'h', 'keep-alive': 'timeout=1', 'x-kept': 'k' },
      });`;
      const p = await proxy({ response_transform: { code } }, '/framing');
      const res = await rawRequest(server.url, 'GET', '/proxy', { 'svc-proxy-key': p.key, 'svc-api-key': backend.key });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { rebuilt: true });
      assert.equal(res.headers.get('x-kept'), 'k');
      assert.equal(res.headers.get('content-length'), String(Buffer.byteLength(res.text)));
      for (const gone of ['transfer-encoding', 'x-hop']) assert.equal(res.headers.get(gone), null, gone);
      // Coffer's own connection may announce a keep-alive, never the transform's.
      assert.notEqual(res.headers.get('keep-alive'), 'timeout=1');
    });

    it('a transform returning a header value HTTP cannot carry is a 422, on either side', async () => {
      dest.answer('/badvalue', () => ({ headers: { 'content-type': 'text/plain' }, body: 'ok' }));
      for (const value of ['a\\u0001b', '\\u0100', 'a\\u007fb']) {
        const code = `module.exports = async (req) => ({ headers: { ...req.args.headers, 'x-bad': '${value}' } });`;
        const back = await proxy({ response_transform: { code } }, '/badvalue');
        assertProxyError(await invoke(back.key, 'GET'), 422, /invalid headers/);
        const out = await proxy({ request_transform: { code } }, '/badvalue-out');
        assertProxyError(await invoke(out.key, 'POST', '', { body: {} }), 422, /invalid headers/);
      }
      assert.equal(dest.at('/badvalue-out').length, 0);
    });

    it('a request transform\'s Connection and Keep-Alive follow the rules of SVC-PROXY-CONNECTION and SVC-PROXY-KEEP-ALIVE', async () => {
      const setting = (connection: string, keepAlive: string) =>
        `module.exports = async (req) => ({ headers: { ...req.args.headers, connection: ${JSON.stringify(connection)}, 'keep-alive': ${JSON.stringify(keepAlive)} } });`;
      const good = await proxy({ request_transform: { code: setting(' Close ', 'timeout=7') } }, '/tx-conn');
      const res = await invoke(good.key, 'POST', '', { body: {} });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.headers.connection, 'close');
      assert.equal(res.body.headers['keep-alive'], 'timeout=7');
      for (const [connection, keepAlive, problem] of [
        ['upgrade', 'timeout=7', /invalid connection header/],
        ['keep-alive', 'timeout=5;max=1', /invalid keep-alive header/],
        ['close', '=5', /invalid keep-alive header/],
      ] as const) {
        const bad = await proxy({ request_transform: { code: setting(connection, keepAlive) } }, '/tx-conn-bad');
        assertProxyError(await invoke(bad.key, 'POST', '', { body: {} }), 422, problem);
      }
      assert.equal(dest.at('/tx-conn-bad').length, 0);
      // What the caller asked for reaches the transform and passes through it unchanged.
      const passing = await proxy({ request_transform: { code: 'module.exports = async (req) => ({ headers: req.args.headers });' } }, '/tx-conn-pass');
      const passed = await invoke(passing.key, 'GET', '', { headers: { 'svc-proxy-connection': 'close', 'svc-proxy-keep-alive': 'max=3' } });
      assert.equal(passed.status, 200, passed.text);
      assert.equal(passed.body.headers.connection, 'close');
      assert.equal(passed.body.headers['keep-alive'], 'max=3');
    });

    it('JSON nested too deeply for a transform: the caller\'s is a 400, the destination\'s a 502', async () => {
      const deep = `${'['.repeat(200)}${']'.repeat(200)}`;
      const echo = 'module.exports = async (req) => ({ body: req.args.body, headers: req.args.headers });';
      dest.answer('/deep-back', () => ({ headers: { 'content-type': 'application/json' }, body: deep }));
      const back = await proxy({ response_transform: { code: echo } }, '/deep-back');
      assertProxyError(await invoke(back.key, 'GET'), 502, /destination's JSON response is nested/);
      const out = await proxy({ request_transform: { code: echo } }, '/deep-out');
      const problem = assertProxyError(await invoke(out.key, 'POST', '', { raw: deep, contentType: 'application/json' }), 400);
      assert.ok(problem.errors.body);
      assert.equal(dest.at('/deep-out').length, 0);
    });

    it('a transform that throws is a proxy_error; a request transform failing never forwards', async () => {
      const throwing = `module.exports = async function () { throw new Error('nope'); };`;
      const p = await proxy({ request_transform: { code: throwing } }, '/throws');
      assertProxyError(await invoke(p.key, 'POST', '', { body: {} }), 422, /request transform failed.*nope/);
      assert.equal(dest.at('/throws').length, 0);
      const q = await proxy({ response_transform: { code: throwing } }, '/throws-back');
      assertProxyError(await invoke(q.key, 'GET'), 422, /response transform failed/);
      assert.equal(dest.at('/throws-back').length, 1);
      const notObject = await proxy({ request_transform: { code: 'module.exports = async () => 42;' } }, '/notobject');
      assertProxyError(await invoke(notObject.key, 'POST', '', { body: {} }), 422, /must return an object/);
    });

    it('a failing transform\'s error never holds what the body was detokenized to, nor what bt read', async () => {
      const requestSide = `module.exports = async function (req) {
        const more = await req.bt.detokenize({ s: '{{ ${secretToken} }}' });
        throw new Error('cannot send ' + req.args.body.card + ' with ' + more.s);
      };`;
      const p = await proxy({ request_transform: { code: requestSide }, application: { id: backend.id } }, '/scrub-request');
      const res = await invoke(p.key, 'POST', '', { key: narrow.key, body: { card: `{{ ${secretToken} }}` } });
      assertProxyError(res, 422, /^The request transform failed: cannot send \[redacted\] with \[redacted\]$/);
      assert.ok(!res.text.includes(SECRET));
      assert.equal(dest.at('/scrub-request').length, 0);

      // The destination echoes the detokenized request; the response transform quotes it.
      const responseSide = `module.exports = async (req) => { throw new Error('the destination said ' + req.args.body.body); };`;
      const q = await proxy({ response_transform: { code: responseSide } }, '/scrub-response');
      const back = await invoke(q.key, 'POST', '', { body: { card: `{{ ${cardToken} | json: '$.number' }}`, cvc: `{{ ${cardToken} | json: '$.cvc' }}` } });
      const problem = assertProxyError(back, 422, /^The response transform failed: the destination said /);
      assert.equal(problem.detail, 'The response transform failed: the destination said {"card":"[redacted]","cvc":"[redacted]"}');
      assert.ok(!back.text.includes(PAN));
    });

    it('bt in a transform is held to the request body limit of the route it mirrors, with its 413', async () => {
      // A larger PROXY_MAX_BODY_BYTES lets a transform send the host more than a request body may hold.
      const roomy = await startTestServer({ OUTBOUND_ALLOWLIST: '127.0.0.1', PROXY_TIMEOUT_MS: '5000', PROXY_MAX_BODY_BYTES: '2097152' });
      try {
        const app = await createApplication(roomy, { name: 'bt', type: 'private', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update'] }] });
        const code = `module.exports = async (req) => {
          const out = {};
          const big = 'x'.repeat(1100000);
          for (const [name, call] of Object.entries({
            tokenize: () => req.bt.tokenize({ a: { type: 'token', data: big } }),
            create: () => req.bt.tokens.create({ type: 'token', data: big }),
            detokenize: () => req.bt.detokenize({ a: big }),
            small: () => req.bt.tokenize({ a: { type: 'token', data: 'small' } }),
          })) {
            try { await call(); out[name] = 'resolved'; } catch (e) { out[name] = { status: e.status, message: e.message }; }
          }
          return { body: out };
        };`;
        const created = await call(roomy, 'POST', '/proxies', { key: roomy.key, body: { name: 'big bt', destination_url: dest.url('/bt-body-limit'), request_transform: { code }, application: { id: app.id } } });
        assert.equal(created.status, 201, created.text);
        rememberSecret(created.body.key);
        const caller = await createApplication(roomy, { name: 'caller', type: 'private', permissions: ['token:use'] });
        const sent = await call(roomy, 'POST', '/proxy', { key: caller.key, body: {}, headers: { 'svc-proxy-key': created.body.key } });
        assert.equal(sent.status, 200, sent.text);
        const route = await call(roomy, 'POST', '/tokenize', { key: app.key, body: { a: { type: 'token', data: 'x'.repeat(1_100_000) } } });
        assert.equal(route.status, 413, route.text);
        const expected = { status: 413, message: route.body.detail };
        assert.deepEqual(JSON.parse(sent.body.body), { tokenize: expected, create: expected, detokenize: expected, small: 'resolved' });
      } finally {
        await roomy.stop();
      }
    });

    it('regex masks replace every occurrence of each capture inside a match, char for char', async () => {
      dest.answer('/mask', () => ({ headers: { 'content-type': 'application/json' }, body: '{"pan":"4111111111111111","other":"1111","note":"card 4000056655665556 ok"}' }));
      const p = await proxy({ response_transform: { type: 'mask', matcher: 'regex', expression: '(\\d{6})\\d{6}(\\d{4})', replacement: '*' } }, '/mask');
      const res = await invoke(p.key, 'GET');
      assert.equal(res.status, 200, res.text);
      // In 4111111111111111 the captures are 411111 and 1111, and 1111 occurs all over the match: all of it
      // goes. In 4000056655665556 only the captured 400005 and 5556 do. "1111" outside any match stays.
      assert.equal(res.text, '{"pan":"****************","other":"1111","note":"card ******665566**** ok"}');
      assert.equal(res.headers.get(DEST_STATUS), '200');
    });

    it('regex masks: overlapping captures and overlapping occurrences are all masked', async () => {
      dest.answer('/overlap', () => ({ headers: { 'content-type': 'text/plain' }, body: 'id=123456 x=aaaa end' }));
      // Group 2 lies inside group 1; "aa" occurs at three overlapping offsets of "aaaa".
      const p = await proxy({ response_transform: { type: 'mask', matcher: 'regex', expression: 'id=((\\d{2})\\d{4})|x=a(aa)a', replacement: '#' } }, '/overlap');
      const res = await invoke(p.key, 'GET');
      assert.equal(res.text, 'id=###### x=#### end');
    });

    it('a mask expression that backtracks forever is stopped, not the server', async () => {
      dest.answer('/redos', () => ({ headers: { 'content-type': 'text/plain' }, body: `${'a'.repeat(40)}!` }));
      const p = await proxy({ response_transform: { type: 'mask', matcher: 'regex', expression: '((a+)+)$', replacement: '*' } }, '/redos');
      assertProxyError(await invoke(p.key, 'GET'), 422, /did not finish/);
      assert.equal((await call(server, 'GET', '/ping')).status, 200);
    });

    it('masks decode a compressed destination response', async () => {
      dest.answer('/gz', () => ({ headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip' }, body: gzipSync('pan=4000056655665556') }));
      const p = await proxy({ response_transform: { type: 'mask', matcher: 'regex', expression: 'pan=\\d{12}(\\d{4})', replacement: 'X' } }, '/gz');
      const res = await invoke(p.key, 'GET', '', { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(res.text, 'pan=400005665566XXXX');
      assert.equal(res.headers.get('content-encoding'), null);
      assert.equal(dest.at('/gz')[0].headers['accept-encoding'], undefined, 'a transformed response is asked for unencoded');
    });

    it('chase_stratus_pan masks the account number of Account Verification and Tokenize records', async () => {
      const { VERIFY_RESPONSE, TOKENIZE_RESPONSE, VERIFY_MASKED, TOKENIZE_MASKED } = stratusSamples();
      dest.answer('/stratus', () => ({ headers: { 'content-type': 'text/plain' }, body: `${VERIFY_RESPONSE}\r${TOKENIZE_RESPONSE}\r` }));
      const p = await proxy({ response_transform: { type: 'mask', matcher: 'chase_stratus_pan', replacement: 'X' } }, '/stratus');
      const res = await invoke(p.key, 'POST', '', { raw: 'request', contentType: 'text/plain' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.text, `${VERIFY_MASKED}\r${TOKENIZE_MASKED}\r`);
    });
  });

  describe('SSRF', () => {
    it('refuses private and loopback destinations unless allowlisted', async () => {
      const strict = await startTestServer({});
      try {
        const literal = await call(strict, 'POST', '/proxies', { key: strict.key, body: { name: 'x', destination_url: dest.url('/ssrf') } });
        assert.equal(literal.status, 400, literal.text);
        assert.ok(literal.body.errors['body.destination_url']);
        for (const url of ['http://10.0.0.1/', 'http://169.254.169.254/latest', 'http://[::1]/']) {
          assert.equal((await call(strict, 'POST', '/proxies', { key: strict.key, body: { name: 'x', destination_url: url } })).status, 400, url);
        }
        // A name is checked on what it resolves to, at call time.
        const named = await call(strict, 'POST', '/proxies', { key: strict.key, body: { name: 'x', destination_url: `http://localhost:${dest.port}/ssrf`, require_auth: false } });
        assert.equal(named.status, 201, named.text);
        rememberSecret(named.body.key);
        const res = await call(strict, 'GET', '/proxy', { headers: { 'svc-proxy-key': named.body.key } });
        assertProxyError(res, 403, /internal|private|loopback/);
        assert.equal(dest.at('/ssrf').length, 0);
      } finally {
        await strict.stop();
      }
    });
  });
});

/**
 * Sample Chase Stratus (Online Processing Format 7.4) response records, laid out as in
 * docs/proxies.md: record header (1–4), merchant order number (5–26), method of payment
 * (27–28), account number (29–47, left-justified, space-filled), then response fields.
 * Written out literally, so the test does not share the implementation's arithmetic.
 */
function stratusSamples() {
  return {
    // Account Verification ($0 authorization): expiry, response date, auth code, reason 100, AVS I3, CVD M.
    VERIFY_RESPONSE: 'P74VORDER0001             VI4012888888881881   1230051525tst123100I3M',
    VERIFY_MASKED: 'P74VORDER0001             VIXXXXXXXXXXXXXXXX   1230051525tst123100I3M',
    // Tokenize: the same header with the PAN echoed, the Safetech token after the response fields (kept).
    TOKENIZE_RESPONSE: 'P74VORDER0002             MC5454545454545454   1129051525      100   TK5454XYZ0000001   ',
    TOKENIZE_MASKED: 'P74VORDER0002             MCXXXXXXXXXXXXXXXX   1129051525      100   TK5454XYZ0000001   ',
  };
}
