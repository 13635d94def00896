import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { permissionsFor } from '../../src/access/permissions.ts';
import { call, createOtherTenant } from '../helpers/http.ts';
import { asMember, freshEmail, linkToken, makeMember, memberCookies, queuedMails } from '../helpers/people.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { until } from '../helpers/until.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Members and who may do what: every people route's permission table, members acting with a
 * session cookie and X-CSRF-Token by their role's permissions, removal ending sessions at
 * once, the OWNER kept, tenant isolation, and the per-address rate limit.
 */
describe('tenant members and access', () => {
  let server: TestServer;
  let offsetMs = 0;

  before(async () => {
    server = await startTestServer({ WORKERS: '0', PEOPLE_RATE_PER_MINUTE: '1000' }, { providers: { clock: () => Date.now() + offsetMs } });
  });
  after(() => server?.stop());

  const member = (role: 'ADMIN' | 'READ_ONLY' = 'ADMIN', email?: string) => makeMember(server.url, server.tenantId, server.key, { role, email });

  it('checks each route\'s permissions (401 without a key, 403 without the permission)', async () => {
    const inv = (await call(server, 'POST', '/tenants/self/invitations', { key: server.key, body: { email: freshEmail() } })).body;
    const routes = [
      { method: 'GET', path: '/tenants/self/members', permissions: ['tenant:member:read'] },
      { method: 'DELETE', path: '/tenants/self/members/00000000-0000-4000-8000-000000000000', permissions: ['tenant:member:delete'] },
      { method: 'POST', path: '/tenants/self/invitations', permissions: ['tenant:invitation:create'], body: { email: freshEmail() } },
      { method: 'POST', path: `/tenants/self/invitations/${inv.id}/resend`, permissions: ['tenant:invitation:create', 'tenant:invitation:update'] },
      { method: 'GET', path: '/tenants/self/invitations', permissions: ['tenant:invitation:read'] },
      { method: 'GET', path: `/tenants/self/invitations/${inv.id}`, permissions: ['tenant:invitation:read'] },
      { method: 'DELETE', path: `/tenants/self/invitations/${inv.id}`, permissions: ['tenant:invitation:delete'] },
    ];
    for (const route of routes) await assertAuthCases(server, { ...route, type: 'management' });
    // Resend needs both: either alone is a 403.
    for (const one of ['tenant:invitation:create', 'tenant:invitation:update']) {
      const app = (await call(server, 'POST', '/applications', { key: server.key, body: { name: 'half', type: 'management', permissions: [one] } })).body;
      const res = await call(server, 'POST', `/tenants/self/invitations/${inv.id}/resend`, { key: app.key });
      assert.equal(res.status, 403, `${one} alone`);
    }
    // Private and public keys hold none of these permissions.
    for (const type of ['private', 'public'] as const) {
      const app = (await call(server, 'POST', '/applications', { key: server.key, body: { name: type, type, permissions: permissionsFor(type).filter((p) => !p.scoped).map((p) => p.type) } })).body;
      assert.equal((await call(server, 'GET', '/tenants/self/members', { key: app.key })).status, 403);
    }
  });

  it('the OWNER exists from the start and cannot be deleted (422)', async () => {
    const list = await call(server, 'GET', '/tenants/self/members', { key: server.key });
    const owner = list.body.data.find((m: { role: string }) => m.role === 'OWNER');
    assert.ok(owner, JSON.stringify(list.body));
    const res = await call(server, 'DELETE', `/tenants/self/members/${owner.id}`, { key: server.key });
    assert.equal(res.status, 422);
    assert.match(res.body.detail, /OWNER/);
  });

  it('an ADMIN member manages the tenant with the cookie and X-CSRF-Token; without the header, or with another, 403', async () => {
    const m = await member('ADMIN');
    const ok = await call(server, 'GET', '/tenants/self/members', asMember(m));
    assert.equal(ok.status, 200, ok.text);
    const invited = await call(server, 'POST', '/tenants/self/invitations', { ...asMember(m), body: { email: freshEmail('by-member') } });
    assert.equal(invited.status, 201, invited.text);
    assert.equal(invited.body.created_by, m.member.user.id);
    // The e-mail names the member who invited.
    const mail = (await queuedMails(server.running, server.tenantId)).find((x) => x.to === invited.body.email)!;
    assert.match(mail.text, /^Gen Erated invited you/m);
    assert.equal((await call(server, 'GET', '/applications', asMember(m))).status, 200);

    const noHeader = await call(server, 'GET', '/tenants/self/members', asMember(m, null));
    assert.equal(noHeader.status, 403);
    assert.match(noHeader.body.detail, /X-CSRF-Token/);
    const other = await member('ADMIN');
    assert.equal((await call(server, 'GET', '/tenants/self/members', asMember(m, other.csrf))).status, 403, 'another session\'s CSRF token');
    assert.equal((await call(server, 'GET', '/tenants/self/members', { headers: { cookie: `coffer_session=${m.session}`, 'x-csrf-token': m.csrf } })).status, 403, 'header without the CSRF cookie');
    assert.equal((await call(server, 'GET', '/tenants/self/members', { headers: { cookie: 'coffer_session=nonsense' } })).status, 401);
    // Members reach tokens only through their role's masking rule (test/features/people-tokens.test.ts).
    assert.equal((await call(server, 'GET', '/tokens', asMember(m))).status, 200);
  });

  it('a READ_ONLY member reads, and is refused every change (403)', async () => {
    const m = await member('READ_ONLY');
    assert.equal((await call(server, 'GET', '/tenants/self/members', asMember(m))).status, 200);
    assert.equal((await call(server, 'GET', '/tenants/self/invitations', asMember(m))).status, 200);
    assert.equal((await call(server, 'GET', '/applications', asMember(m))).status, 200);
    const refused = [
      await call(server, 'POST', '/tenants/self/invitations', { ...asMember(m), body: { email: freshEmail() } }),
      await call(server, 'DELETE', `/tenants/self/members/${m.member.id}`, asMember(m)),
      await call(server, 'POST', '/applications', { ...asMember(m), body: { name: 'x', type: 'private', permissions: ['token:read'] } }),
      await call(server, 'POST', '/webhooks', { ...asMember(m), body: { name: 'x', url: 'https://example.com/h', events: ['token.created'] } }),
      await call(server, 'POST', '/tokens', { ...asMember(m), body: { type: 'token', data: 'x' } }),
    ];
    for (const res of refused) {
      assert.equal(res.status, 403, res.text);
      assert.match(res.body.detail, /READ_ONLY|role/);
    }
    const me = await call(server, 'GET', '/me', asMember(m));
    assert.ok(me.body.permissions.every((p: string) => p.endsWith(':read') || p === 'token:search'), me.text);
  });

  it('deleting a member ends its sessions at once; the API key keeps working, cookie or not', async () => {
    const m = await member('ADMIN');
    assert.equal((await call(server, 'GET', '/tenants/self/members', asMember(m))).status, 200);
    const del = await call(server, 'DELETE', `/tenants/self/members/${m.member.id}`, { key: server.key });
    assert.equal(del.status, 204);
    assert.equal((await call(server, 'GET', '/tenants/self/members', asMember(m))).status, 401);
    assert.equal((await call(server, 'GET', '/me', asMember(m))).status, 401);
    assert.equal((await call(server, 'DELETE', `/tenants/self/members/${m.member.id}`, { key: server.key })).status, 404);
    // A key with a (dead) cookie beside it is the key's request.
    assert.equal((await call(server, 'GET', '/tenants/self/members', { key: server.key, ...asMember(m) })).status, 200);
    const [event] = await server.running.database.db.query<{ payload: { role: string } }>(`SELECT payload FROM events WHERE type = 'tenant.member.deleted' AND entity_id = $1`, [m.member.id]);
    assert.equal(event.payload.role, 'ADMIN');
  });

  it('filters members by user_id and pages them', async () => {
    const a = await member();
    const b = await member();
    const both = await call(server, 'GET', `/tenants/self/members?user_id=${a.member.user.id}&user_id=${b.member.user.id}`, { key: server.key });
    assert.equal(both.status, 200);
    assert.deepEqual(both.body.data.map((x: { id: string }) => x.id).sort(), [a.member.id, b.member.id].sort());
    const page = await call(server, 'GET', '/tenants/self/members?size=1&page=2', { key: server.key });
    assert.equal(page.body.data.length, 1);
    assert.equal(page.body.pagination.page_size, 1);
    assert.equal((await call(server, 'GET', '/tenants/self/members?user_id=nope', { key: server.key })).status, 400);
  });

  it('keeps tenants apart: another tenant\'s members and invitations are 404, its sessions act only in their own tenant', async () => {
    const other = await createOtherTenant(server);
    const m = await member();
    const inv = (await call(server, 'POST', '/tenants/self/invitations', { key: server.key, body: { email: freshEmail() } })).body;
    assert.equal((await call(server, 'DELETE', `/tenants/self/members/${m.member.id}`, { key: other.api_key })).status, 404);
    assert.equal((await call(server, 'GET', `/tenants/self/invitations/${inv.id}`, { key: other.api_key })).status, 404);
    assert.equal((await call(server, 'POST', `/tenants/self/invitations/${inv.id}/resend`, { key: other.api_key })).status, 404);
    assert.equal((await call(server, 'DELETE', `/tenants/self/invitations/${inv.id}`, { key: other.api_key })).status, 404);
    const theirs = await call(server, 'GET', '/tenants/self/members', { key: other.api_key });
    assert.ok(!theirs.body.data.some((x: { id: string }) => x.id === m.member.id));
    // The other tenant's admin member cannot see this tenant's invitation either.
    const om = await makeMember(server.url, other.tenant_id, other.api_key);
    assert.equal((await call(server, 'GET', `/tenants/self/invitations/${inv.id}`, asMember(om))).status, 404);
    // A person may be a member of both.
    const both = await makeMember(server.url, other.tenant_id, other.api_key, { email: m.email });
    assert.equal(both.member.user.id, m.member.user.id);
    const me = await call(server, 'GET', '/me', asMember(both));
    assert.equal(me.body.tenants.length, 2);
    assert.equal(me.body.tenant_id, other.tenant_id);
    // Signing in names the tenant (default: the oldest membership); the link is e-mailed from that tenant.
    const before = (await queuedMails(server.running, other.tenant_id)).length;
    assert.equal((await call(server, 'POST', '/signin', { body: { email: m.email, tenant_id: other.tenant_id } })).status, 202);
    const mail = await until(async () => (await queuedMails(server.running, other.tenant_id)).slice(before).find((x) => x.to === m.email), 'the sign-in e-mail of the other tenant');
    assert.match(mail.subject, /Sign in to Other tenant/);
  });

  it('signs in by e-mailed one-time link: the same answer for unknown addresses; the page uses nothing up; the POST does, once', async () => {
    const m = await member('ADMIN');
    const before = (await queuedMails(server.running, server.tenantId)).length;
    const unknown = await call(server, 'POST', '/signin', { body: { email: 'nobody-here@example.com' } });
    const known = await call(server, 'POST', '/signin', { body: { email: m.email.toUpperCase() } });
    assert.equal(unknown.status, 202);
    assert.equal(known.status, 202);
    assert.deepEqual(unknown.body, known.body);
    // Made after the answer (both answers take the same time): wait for it.
    const mails = await until(async () => {
      const all = (await queuedMails(server.running, server.tenantId)).slice(before);
      return all.length > 0 ? all : undefined;
    }, 'the sign-in e-mail');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal((await queuedMails(server.running, server.tenantId)).slice(before).length, 1, 'none for the unknown address');
    assert.equal(mails[0].to, m.email);
    assert.match(mails[0].subject, /Sign in to Default/);
    const token = linkToken(mails[0].text, '/signin/link');
    assert.equal(linkToken(mails[0].html!, '/signin/link'), token);

    const url = `/signin/link?token=${encodeURIComponent(token)}`;
    for (let i = 0; i < 2; i++) {
      const pageRes = await call(server, 'GET', url);
      assert.equal(pageRes.status, 200);
      assert.match(pageRes.text, /<form method="post" action="link">/);
    }
    const form = { raw: new URLSearchParams({ token }).toString(), contentType: 'application/x-www-form-urlencoded', headers: { accept: 'text/html' } };
    const signed = await call(server, 'POST', '/signin/link', form);
    assert.equal(signed.status, 200, signed.text);
    assert.match(signed.text, /You are signed in/);
    const cookies = signed.headers.getSetCookie();
    assert.ok(cookies.some((c) => /^coffer_session=/.test(c) && /HttpOnly/.test(c) && /SameSite=Strict/.test(c) && !/Secure/.test(c)));
    const again = await call(server, 'POST', '/signin/link', form);
    assert.equal(again.status, 409);
    assert.equal((await call(server, 'GET', url)).status, 409);

    assert.equal((await call(server, 'POST', '/signin', { body: { email: 'not an address' } })).status, 400);
    assert.equal((await call(server, 'POST', '/signin', { body: {} })).status, 400);
  });

  it('a sign-in link expires after 15 minutes (410); sign-out ends the session', async () => {
    const m = await member('ADMIN');
    const { token } = await server.running.services.signin.issueLink(m.member.user.id, server.tenantId);
    rememberSecret(token);
    offsetMs += 15 * 60_000 + 1000;
    try {
      const res = await call(server, 'POST', '/signin/link', { body: { token } });
      assert.equal(res.status, 410);
      assert.match((await call(server, 'GET', `/signin/link?token=${encodeURIComponent(token)}`)).text, /expired/);
    } finally {
      offsetMs -= 15 * 60_000 + 1000;
    }
    const out = await call(server, 'POST', '/signout', asMember(m));
    assert.equal(out.status, 204);
    assert.ok(out.headers.getSetCookie().some((c) => /^coffer_session=;.*Max-Age=0/.test(c)));
    assert.equal((await call(server, 'GET', '/me', asMember(m))).status, 401);
    assert.equal((await call(server, 'POST', '/signout')).status, 204);
    // The sweep removes sessions past their end (the clock moved past MEMBER_SESSION_HOURS).
    const other = await member('ADMIN');
    offsetMs += 12 * 3_600_000 + 1000;
    try {
      assert.equal((await call(server, 'GET', '/me', asMember(other))).status, 401, 'a session past its end');
      assert.ok((await server.running.services.signin.sweep()) >= 1);
      const [{ n }] = await server.running.database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM member_sessions WHERE member_id = $1`, [other.member.id]);
      assert.equal(n, 0);
    } finally {
      offsetMs -= 12 * 3_600_000 + 1000;
    }
  });
});

describe('people routes are rate limited per client address', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ WORKERS: '0', PEOPLE_RATE_PER_MINUTE: '3' });
  });
  after(() => server?.stop());

  it('answers 429 with Retry-After past PEOPLE_RATE_PER_MINUTE, for sign-in and acceptance alike', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(server, 'POST', '/signin', { body: { email: 'x@example.com' } })).status);
    assert.deepEqual(statuses, [202, 202, 202, 429]);
    const limited = await call(server, 'POST', '/invitations/accept', { body: { token: 'x', first_name: 'a', last_name: 'b' } });
    assert.equal(limited.status, 429);
    assert.match(limited.headers.get('content-type') ?? '', /problem\+json/);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    const pageRes = await call(server, 'GET', '/invitations/accept?token=x');
    assert.equal(pageRes.status, 429);
    assert.match(pageRes.text, /Too many attempts/);
  });
});

describe('the first start makes the OWNER', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ WORKERS: '0', COFFER_OWNER_EMAIL: 'founder@example.com' });
  });
  after(() => server?.stop());

  it('with COFFER_OWNER_EMAIL, and a sign-in link for them next to the management key', async () => {
    const owner = (await call(server, 'GET', '/tenants/self/members', { key: server.key })).body.data[0];
    assert.equal(owner.role, 'OWNER');
    assert.equal(owner.user.email, 'founder@example.com');
    const url = new URL(server.running.firstKey!.signin_url);
    assert.equal(url.origin, new URL(server.url).origin);
    const token = url.searchParams.get('token')!;
    rememberSecret(token);
    const res = await call(server, 'POST', '/signin/link', { body: { token } });
    assert.equal(res.status, 204);
    const m = memberCookies(res);
    assert.equal((await call(server, 'GET', '/me', asMember(m))).body.role, 'OWNER');
    // The owner may do everything a management key may, and still cannot remove itself.
    assert.equal((await call(server, 'DELETE', `/tenants/self/members/${owner.id}`, asMember(m))).status, 422);
  });
});

describe('session cookies under an https PUBLIC_URL', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ WORKERS: '0', PUBLIC_URL: 'https://coffer.example.com' });
  });
  after(() => server?.stop());

  it('are Secure, and the links point at PUBLIC_URL', async () => {
    const m = await makeMember(server.url, server.tenantId, server.key);
    const mail = (await queuedMails(server.running, server.tenantId)).find((x) => x.to === m.email)!;
    assert.match(mail.text, /^https:\/\/coffer\.example\.com\/invitations\/accept\?token=/m);
    const { token } = await server.running.services.signin.issueLink(m.member.user.id, server.tenantId);
    rememberSecret(token);
    const res = await call(server, 'POST', '/signin/link', { body: { token } });
    assert.equal(res.status, 204);
    const cookies = res.headers.getSetCookie();
    assert.equal(cookies.length, 2);
    for (const c of cookies) assert.match(c, /; Secure$|; Secure;/);
    memberCookies(res);
  });
});
