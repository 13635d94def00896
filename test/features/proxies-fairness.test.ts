import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { call, createOtherTenant } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

/**
 * Tenants share the outbound pool of an origin they both call, but each holds at most its
 * share (OUTBOUND_TENANT_CONNECTIONS) of its connections (OUTBOUND_CONNECTIONS): one tenant's
 * slow calls wait for each other, not the other tenants' calls.
 */
describe('proxies: one tenant\'s slow calls to an origin do not hold up another tenant\'s', () => {
  let server: TestServer;
  let dest: http.Server;
  let port = 0;
  const held: http.ServerResponse[] = [];
  let open = false;

  before(async () => {
    dest = http.createServer((req, res) => {
      if (req.url!.startsWith('/api/slow') && !open) held.push(res);
      else res.end(`answered ${req.url}`);
    });
    await new Promise<void>((r) => dest.listen(0, '127.0.0.1', r));
    port = (dest.address() as { port: number }).port;
    server = await startTestServer({
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      OUTBOUND_CONNECTIONS: '4',
      OUTBOUND_TENANT_CONNECTIONS: '2',
      // Tenant B's call fails with a 504 after this if it waits behind A's.
      PROXY_TIMEOUT_MS: '20000',
      WORKERS: '0',
    });
  });
  after(async () => {
    await server?.stop();
    dest?.closeAllConnections();
    await new Promise((r) => dest?.close(r));
  });

  async function proxy(managementKey: string): Promise<string> {
    const res = await call(server, 'POST', '/proxies', {
      key: managementKey,
      body: { name: 'shared origin', destination_url: `http://127.0.0.1:${port}/api`, require_auth: false },
    });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.key);
    return res.body.key;
  }

  it('tenant A fills its share with slow calls; tenant B\'s call to the same origin is answered at once', async () => {
    const a = await proxy(server.key);
    const b = await proxy((await createOtherTenant(server)).api_key);
    const slow = Array.from({ length: 6 }, (_, i) => call(server, 'GET', `/proxy/slow/${i}`, { headers: { 'svc-proxy-key': a } }));
    await until(() => held.length === 2, 'tenant A\'s share of the origin in flight');
    const res = await call(server, 'GET', '/proxy/quick', { headers: { 'svc-proxy-key': b } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.text, 'answered /api/quick');
    assert.equal(held.length, 2, 'tenant A\'s other calls wait for its own');
    open = true;
    for (const r of held.splice(0)) r.end('slow');
    for (const r of await Promise.all(slow)) assert.equal(r.status, 200, r.text);
  });
});
