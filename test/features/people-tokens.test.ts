import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, createOtherTenant } from '../helpers/http.ts';
import { asMember, freshEmail, makeMember } from '../helpers/people.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * What the console needs of the API for signed-in members: tokens shown masked, an explicit
 * reveal for OWNER and ADMIN (audited, refused to READ_ONLY and meaningless to keys), reactors
 * run and proxies tried with the session, Coffer's own cookies never forwarded, and switching
 * the session to another of the user's tenants.
 */
describe('members and tokens, reactors, proxies; switching tenants', () => {
  let server: TestServer;
  let receiver: Receiver;

  before(async () => {
    server = await startTestServer({ WORKERS: '0', PEOPLE_RATE_PER_MINUTE: '1000', OUTBOUND_ALLOWLIST: '127.0.0.1' });
    receiver = await startReceiver();
  });
  after(async () => {
    await server?.stop();
    await receiver?.close();
  });

  const member = (role: 'ADMIN' | 'READ_ONLY' = 'ADMIN', email?: string) => makeMember(server.url, server.tenantId, server.key, { role, email });
  const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
  /** A card token's mask: the BIN and the last four. */
  const MASKED = '424242XXXXXX4242';
  /** A card token made by an ADMIN member (management keys hold no token permission). */
  const cardToken = async () => {
    const res = await call(server, 'POST', '/tokens', { ...asMember(await member('ADMIN')), body: { type: 'card', data: card } });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string };
  };

  it('shows members token data masked; reveal=true shows an ADMIN the plaintext and audits it', async () => {
    const admin = await member('ADMIN');
    const created = await call(server, 'POST', '/tokens', { ...asMember(admin), body: { type: 'card', data: card } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.created_by, admin.member.user.id);
    assert.notEqual(created.body.data?.number, card.number, 'the create answer is masked too');

    const masked = await call(server, 'GET', `/tokens/${created.body.id}`, asMember(admin));
    assert.equal(masked.status, 200, masked.text);
    assert.equal(masked.body.data.number, MASKED);
    const listed = await call(server, 'GET', '/v2/tokens?size=5', asMember(admin));
    assert.equal(listed.body.data.find((t: { id: string }) => t.id === created.body.id).data.number, MASKED);

    const revealed = await call(server, 'GET', `/tokens/${created.body.id}?reveal=true`, asMember(admin));
    assert.equal(revealed.status, 200, revealed.text);
    assert.deepEqual(revealed.body.data, card);
    const logs = await call(server, 'GET', `/logs?entity_type=token&entity_id=${created.body.id}`, { key: server.key });
    const reveal = logs.body.data.find((l: { operation: string }) => l.operation === 'reveal');
    assert.ok(reveal, JSON.stringify(logs.body.data));
    assert.equal(reveal.actor_id, admin.member.user.id);
    assert.equal(reveal.actor_type, 'user');
  });

  it('a READ_ONLY member reads tokens masked and is refused reveal and every change (403)', async () => {
    const ro = await member('READ_ONLY');
    const token = await cardToken();
    const masked = await call(server, 'GET', `/tokens/${token.id}`, asMember(ro));
    assert.equal(masked.status, 200, masked.text);
    assert.equal(masked.body.data.number, MASKED);
    const reveal = await call(server, 'GET', `/tokens/${token.id}?reveal=true`, asMember(ro));
    assert.equal(reveal.status, 403);
    assert.match(reveal.body.detail, /READ_ONLY/);
    const search = await call(server, 'POST', '/v2/tokens/search', { ...asMember(ro), body: { query: `id:${token.id}` } });
    assert.equal(search.status, 200, search.text);
    assert.equal(search.body.data[0].data.number, MASKED);
    for (const res of [
      await call(server, 'POST', '/tokens', { ...asMember(ro), body: { type: 'card', data: card } }),
      await call(server, 'DELETE', `/tokens/${token.id}`, asMember(ro)),
    ]) assert.equal(res.status, 403, res.text);
    // Detokenizing is a read (token:read): masked like the others.
    const detokenized = await call(server, 'POST', '/detokenize', { ...asMember(ro), body: { n: `{{ ${token.id} }}` } });
    assert.equal(detokenized.body.n.number, MASKED);
  });

  it('reveal is a 400 for an API key, which sees what its rules give', async () => {
    const token = await cardToken();
    const app = (await call(server, 'POST', '/applications', { key: server.key, body: { name: 'reader', type: 'private', permissions: ['token:read'] } })).body;
    const res = await call(server, 'GET', `/tokens/${token.id}?reveal=true`, { key: app.key });
    assert.equal(res.status, 400);
    assert.deepEqual(Object.keys(res.body.errors), ['query.reveal']);
    assert.equal((await call(server, 'GET', `/tokens/${token.id}?reveal=false`, { key: app.key })).body.data.number, MASKED);
  });

  it('an ADMIN runs a reactor with the session; a READ_ONLY member may not', async () => {
    const admin = await member('ADMIN');
    const reactor = await call(server, 'POST', '/reactors', { ...asMember(admin), body: { name: 'twice', code: 'module.exports = async (req) => ({ raw: { twice: req.args.n * 2 } })', configuration: {} } });
    assert.equal(reactor.status, 201, reactor.text);
    const run = await call(server, 'POST', `/reactors/${reactor.body.id}/react`, { ...asMember(admin), body: { args: { n: 21 } } });
    assert.equal(run.status, 200, run.text);
    assert.deepEqual(run.body.raw, { twice: 42 });
    const ro = await member('READ_ONLY');
    assert.equal((await call(server, 'POST', `/reactors/${reactor.body.id}/react`, { ...asMember(ro), body: { args: { n: 1 } } })).status, 403);
  });

  it('a member\'s run answers with the lines the code printed, its failure too; a key\'s never', async () => {
    const admin = await member('ADMIN');
    const code = `module.exports = async (req) => {
      console.log('card', req.args.card.number);
      console.warn('n is', req.args.n);
      if (req.args.n < 0) throw new Error('negative');
      return { raw: { n: req.args.n } };
    };`;
    const reactor = (await call(server, 'POST', '/reactors', { ...asMember(admin), body: { name: 'printer', code, configuration: {} } })).body;
    const token = await cardToken();
    const args = (n: number) => ({ args: { n, card: `{{ ${token.id} }}` } });
    const run = await call(server, 'POST', `/reactors/${reactor.id}/react`, { ...asMember(admin), body: args(1) });
    assert.equal(run.status, 200, run.text);
    // What the run was handed of a token (here its mask) is scrubbed from the lines, as from errors.
    assert.deepEqual(run.body, { raw: { n: 1 }, console: ['card [redacted]', '[warn] n is 1'] });
    const failed = await call(server, 'POST', `/reactors/${reactor.id}/react`, { ...asMember(admin), body: args(-1) });
    assert.equal(failed.status, 422, failed.text);
    assert.deepEqual(failed.body.console, ['card [redacted]', '[warn] n is -1']);

    const app = (await call(server, 'POST', '/applications', { key: server.key, body: { name: 'user', type: 'private', permissions: ['token:use'] } })).body;
    const byKey = await call(server, 'POST', `/reactors/${reactor.id}/react`, { key: app.key, body: args(2) });
    assert.equal(byKey.status, 200, byKey.text);
    assert.deepEqual(byKey.body, { raw: { n: 2 } });
  });

  it('a member tries a proxy with the session: Coffer\'s cookies and X-CSRF-Token never reach the destination', async () => {
    const admin = await member('ADMIN');
    const proxy = await call(server, 'POST', '/proxies', { ...asMember(admin), body: { name: 'try', destination_url: receiver.url('/dest'), require_auth: true } });
    assert.equal(proxy.status, 201, proxy.text);
    const token = await cardToken();
    const headers = { ...asMember(admin).headers, cookie: `theirs=1; ${admin.cookie}; also=2`, 'svc-proxy-key': proxy.body.key, 'x-custom': 'kept' };
    const res = await call(server, 'POST', '/proxy/path', { headers, body: { number: `{{ ${token.id} | json: '$.number' }}` } });
    assert.equal(res.status, 200, res.text);
    const got = receiver.at('/dest/path').at(-1)!;
    assert.equal(got.headers.cookie, 'theirs=1; also=2');
    assert.equal(got.headers['x-csrf-token'], undefined);
    assert.equal(got.headers['x-custom'], 'kept');
    // A member's use of a token is masked like its reads: plaintext needs an explicit reveal.
    assert.deepEqual(JSON.parse(got.body), { number: MASKED });

    // Only Coffer's cookies: no Cookie header at all.
    await call(server, 'POST', '/proxy', { headers: { ...asMember(admin).headers, 'svc-proxy-key': proxy.body.key }, body: {} });
    assert.equal(receiver.at('/dest').at(-1)!.headers.cookie, undefined);

    // Without the CSRF header the session is not the caller's (403); READ_ONLY lacks token:use.
    const noCsrf = await call(server, 'POST', '/proxy', { headers: { cookie: admin.cookie, 'svc-proxy-key': proxy.body.key }, body: {} });
    assert.equal(noCsrf.status, 403, noCsrf.text);
    const ro = await member('READ_ONLY');
    const refused = await call(server, 'POST', '/proxy', { headers: { ...asMember(ro).headers, 'svc-proxy-key': proxy.body.key }, body: {} });
    assert.equal(refused.status, 403);
    assert.match(refused.text, /READ_ONLY/);
  });

  it('switches a session to another of the user\'s tenants: new cookies, the old session ends', async () => {
    const email = freshEmail('two-tenants');
    const here = await member('ADMIN', email);
    const other = await createOtherTenant(server);
    const there = await makeMember(server.url, other.tenant_id, other.api_key, { email, role: 'READ_ONLY' });

    const me = await call(server, 'GET', '/me', asMember(here));
    assert.deepEqual(me.body.tenants.map((t: { id: string }) => t.id).sort(), [server.tenantId, other.tenant_id].sort());

    const noCsrf = await call(server, 'POST', '/me/tenant', { ...asMember(here, null), body: { tenant_id: other.tenant_id } });
    assert.equal(noCsrf.status, 403);
    const stranger = await call(server, 'POST', '/me/tenant', { ...asMember(here), body: { tenant_id: '00000000-0000-4000-8000-000000000000' } });
    assert.equal(stranger.status, 400);
    assert.match(stranger.text, /body\.tenant_id/);

    const switched = await call(server, 'POST', '/me/tenant', { ...asMember(here), body: { tenant_id: other.tenant_id } });
    assert.equal(switched.status, 200, switched.text);
    assert.equal(switched.body.tenant_id, other.tenant_id);
    assert.equal(switched.body.role, 'READ_ONLY');
    const cookies = switched.headers.getSetCookie();
    const value = (name: string) => cookies.map((c) => new RegExp(`^${name}=([^;]*)`).exec(c)?.[1]).find(Boolean)!;
    const now = { cookie: `coffer_session=${value('coffer_session')}; coffer_csrf=${value('coffer_csrf')}`, csrf: value('coffer_csrf') };
    const members = await call(server, 'GET', '/tenants/self/members', asMember(now));
    assert.ok(members.body.data.some((m: { id: string }) => m.id === there.member.id));
    assert.equal((await call(server, 'GET', '/tenants/self/members', asMember(here))).status, 401, 'the old session ended');
  });
});
