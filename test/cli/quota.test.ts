import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { call, createApplication, createOtherTenant, createToken } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * `coffer quota TENANT_ID detokenize_limit N|default`: an operator sets one tenant's Detokenize
 * Limit apart from DETOKENIZE_LIMIT; GET /tenants/self shows it, and every detokenization of
 * that tenant (and of no other) applies it.
 */
describe('coffer quota', () => {
  let server: TestServer;
  let reader: string;
  let token: string;
  let other: { tenant_id: string; api_key: string };

  before(async () => {
    // No cache: a change applies at once (otherwise within AUTH_CACHE_SECONDS).
    server = await startTestServer({ DETOKENIZE_LIMIT: '4', AUTH_CACHE_SECONDS: '0' });
    reader = (await createApplication(server, { name: 'reader', type: 'private', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }] })).key;
    token = await createToken(server, reader, { type: 'token', data: 'quota value' });
    other = await createOtherTenant(server);
  });
  after(() => server?.stop());

  const quota = (...args: string[]) => runCli(['quota', ...args], { DATABASE_URL: server.config.databaseUrl! });
  const detokenize = (n: number, key = reader) =>
    call(server, 'POST', '/detokenize', { key, body: Object.fromEntries(Array.from({ length: n }, (_, i) => [`v${i}`, `{{ ${token} }}`])) });
  const limitShown = async (key: string) => (await call(server, 'GET', '/tenants/self', { key })).body.quotas.detokenize_limit;

  it('starts at DETOKENIZE_LIMIT', async () => {
    assert.equal(await limitShown(server.key), 4);
    assert.equal((await detokenize(4)).status, 200);
    assert.equal((await detokenize(5)).status, 400);
  });

  it('sets one tenant\'s limit, and back to the default', async () => {
    const set = await quota(server.tenantId, 'detokenize_limit', '6');
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /detokenize_limit of tenant .* is now 6/);
    assert.equal(await limitShown(server.key), 6);
    assert.equal((await detokenize(6)).status, 200);
    const over = await detokenize(7);
    assert.equal(over.status, 400);
    assert.match(over.body.detail, /limit of 6 per request/);
    assert.equal(await limitShown(other.api_key), 4, 'another tenant keeps the default');

    const reset = await quota(server.tenantId.toUpperCase(), 'detokenize_limit', 'default');
    assert.equal(reset.code, 0, reset.stderr);
    assert.equal(await limitShown(server.key), 4);
    assert.equal((await detokenize(5)).status, 400);
  });

  it('refuses what is not a tenant, a quota or a value, and changes nothing', async () => {
    const cases: [string[], RegExp][] = [
      [[server.tenantId, 'detokenize_limit'], /TENANT_ID NAME VALUE/],
      [['not-a-uuid', 'detokenize_limit', '5'], /not a tenant id/],
      [[server.tenantId, 'rate', '5'], /unknown quota "rate"/],
      [[server.tenantId, 'detokenize_limit', '0'], /from 1 to 10000/],
      [[server.tenantId, 'detokenize_limit', '10001'], /from 1 to 10000/],
      [[server.tenantId, 'detokenize_limit', '5.5'], /from 1 to 10000/],
      [[randomUUID(), 'detokenize_limit', '5'], /no tenant/],
    ];
    for (const [args, message] of cases) {
      const res = await quota(...args);
      assert.equal(res.code, 1, args.join(' '));
      assert.match(res.stderr, message, args.join(' '));
    }
    assert.equal(await limitShown(server.key), 4);
  });
});
