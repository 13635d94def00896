import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, createOtherTenant, createToken } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Code one tenant writes must not take Coffer down for the others: through the HTTP API, a
 * reactor and an anonymous proxy's request transform whose code V8 cannot contain in its
 * isolate (it ends the whole process it runs in) fail on their own, while another tenant's
 * token reads and reactor calls go on answering.
 */
const BOMB = `module.exports = () => { const o = {}; for (let i = 0; i < 2e6; i++) o['k' + i] = 1; return { raw: 1 }; };`;
const TRANSFORM_BOMB = `module.exports = async function (req) { const o = {}; for (let i = 0; i < 2e6; i++) o['k' + i] = 1; return { body: 'x' }; };`;

describe('a hostile tenant\'s code', () => {
  let server: TestServer;
  let destination: http.Server;
  let destinationUrl: string;

  before(async () => {
    destination = http.createServer((_req, res) => res.end('{}'));
    await new Promise<void>((r) => destination.listen(0, '127.0.0.1', r));
    destinationUrl = `http://127.0.0.1:${(destination.address() as { port: number }).port}/api`;
    server = await startTestServer({ OUTBOUND_ALLOWLIST: '127.0.0.1', SANDBOX_PROCESSES: '1', PROXY_TIMEOUT_MS: '6000' });
  });
  after(async () => {
    await server?.stop();
    await new Promise((r) => destination?.close(r));
  });

  it('ends only the runs of its own, through a reactor and an anonymous proxy\'s transform', async () => {
    // The victim: a token, a reader and a trivial reactor of another tenant.
    const victim = await createOtherTenant(server);
    const reader = (await createApplication(server, { name: 'reader', type: 'private', permissions: ['token:read', 'token:create', 'token:use'] }, victim.api_key)).key;
    const tokenId = await createToken(server, reader, { type: 'token', data: { secret: 'victim data' } });
    const quick = await call(server, 'POST', '/reactors', { key: victim.api_key, body: { name: 'quick', code: 'module.exports = async (req) => ({ raw: req.args.n * 2 });', configuration: {} } });
    assert.equal(quick.status, 201, quick.text);

    // The attacker: a reactor and an anonymous proxy, each with code that ends its process.
    const bomb = await call(server, 'POST', '/reactors', { key: server.key, body: { name: 'bomb', code: BOMB, configuration: {} } });
    assert.equal(bomb.status, 201, bomb.text);
    const invoker = (await createApplication(server, { name: 'invoker', type: 'private', permissions: ['token:use'] })).key;
    const proxy = await call(server, 'POST', '/proxies', { key: server.key, body: { name: 'bomb', destination_url: destinationUrl, require_auth: false, request_transform: { code: TRANSFORM_BOMB } } });
    assert.equal(proxy.status, 201, proxy.text);

    let stop = false;
    const victimErrors: string[] = [];
    let victimRequests = 0;
    const victimLoop = (async () => {
      for (let n = 0; !stop; n++) {
        const read = await call(server, 'GET', `/tokens/${tokenId}`, { key: reader });
        const react = await call(server, 'POST', `/reactors/${quick.body.id}/react`, { key: reader, body: { args: { n } } });
        victimRequests += 2;
        if (read.status !== 200 || read.body.id !== tokenId) victimErrors.push(`read ${read.status} ${read.text.slice(0, 300)}`);
        if (react.status !== 200 || react.body.raw !== n * 2) victimErrors.push(`react ${react.status} ${react.text.slice(0, 300)}`);
      }
    })();

    const attacks = await Promise.all([
      call(server, 'POST', `/reactors/${bomb.body.id}/react`, { key: invoker, body: {} }),
      call(server, 'POST', '/proxy', { headers: { 'svc-proxy-key': proxy.body.key }, body: { a: 1 } }),
      call(server, 'POST', `/reactors/${bomb.body.id}/react`, { key: invoker, body: {} }),
    ]);
    stop = true;
    await victimLoop;

    for (const res of attacks) {
      // 422 as out of memory; on a machine too loaded for the code to reach its limit in time, a 408.
      assert.ok(res.status === 422 || res.status === 408, res.text);
      if (res.status === 422) assert.match(res.body.detail ?? res.text, /out of memory|memory limit/, res.text);
    }
    assert.deepEqual(victimErrors.slice(0, 5), [], `${victimErrors.length} of ${victimRequests} requests failed`);
    assert.ok(victimRequests > 0);
    const ping = await call(server, 'GET', '/ping');
    assert.equal(ping.status, 200);
    assert.ok(server.running.services.sandbox.restarts >= 1, 'the code did end a sandbox process');
  });

  it('with its share of the sandbox held by endless proxy transforms, delays no other tenant\'s transform', async () => {
    const looping = await call(server, 'POST', '/proxies', {
      key: server.key,
      body: { name: 'endless', destination_url: destinationUrl, require_auth: false, request_transform: { code: 'module.exports = async function () { for (;;) {} };' } },
    });
    assert.equal(looping.status, 201, looping.text);
    const other = await createOtherTenant(server);
    const quick = await call(server, 'POST', '/proxies', {
      key: other.api_key,
      body: { name: 'quick', destination_url: destinationUrl, require_auth: false, request_transform: { code: 'module.exports = async function (req) { return { body: req.args.body }; };' } },
    });
    assert.equal(quick.status, 201, quick.text);

    // More endless transforms than the tenant's share (4 of 8): the rest of its calls wait or are refused.
    const held = Array.from({ length: 12 }, () => call(server, 'POST', '/proxy', { headers: { 'svc-proxy-key': looping.body.key }, body: { a: 1 } }));
    await new Promise((r) => setTimeout(r, 300));
    const started = performance.now();
    for (let i = 0; i < 5; i++) {
      const res = await call(server, 'POST', '/proxy', { headers: { 'svc-proxy-key': quick.body.key }, body: { n: i } });
      assert.equal(res.status, 200, res.text);
    }
    // Five calls, each waiting for no slot: well under one endless transform's time limit (6 s),
    // which a call queued behind the endless ones would wait out first.
    assert.ok(performance.now() - started < 4500, `${Math.round(performance.now() - started)} ms`);
    for (const res of await Promise.all(held)) assert.ok(res.status === 408 || res.status === 429 || res.status === 422, res.text);
  });
});
