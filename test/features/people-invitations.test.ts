import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ParsedMail } from 'mailparser';
import { call } from '../helpers/http.ts';
import { asMember, freshEmail, linkToken, memberCookies } from '../helpers/people.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

/**
 * Invitations end to end, against a real SMTP server (smtp-server) and a real parser
 * (mailparser): the e-mail, its link, acceptance, resend and delete ending earlier links,
 * expiry on a clock the test moves, and the members the acceptances make.
 */
describe('tenant invitations, by e-mail', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;
  let offsetMs = 0;

  before(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer({ SMTP_URL: smtp.url, MAIL_FROM: 'Coffer <coffer@example.com>', JOB_POLL_MS: '20', PEOPLE_RATE_PER_MINUTE: '1000' }, { providers: { clock: () => Date.now() + offsetMs } });
  });
  after(async () => {
    await server?.stop();
    await smtp?.close();
  });

  const invite = (body: unknown, key = server.key) => call(server, 'POST', '/tenants/self/invitations', { key, body });
  const get = (id: string) => call(server, 'GET', `/tenants/self/invitations/${id}`, { key: server.key });
  const accept = (token: string, names = { first_name: 'Ada', last_name: 'Lovelace' }) => call(server, 'POST', '/invitations/accept', { body: { token, ...names } });

  /** The next e-mail to `to` (waiting for it), parsed. */
  async function mailTo(to: string, nth = 1): Promise<ParsedMail> {
    return until(() => smtp.received.filter((m) => m.to && JSON.stringify(m.to).includes(to))[nth - 1], `e-mail ${nth} to ${to}`, 20_000);
  }

  async function events(type: string): Promise<{ payload: Record<string, unknown> }[]> {
    return server.running.database.db.query(`SELECT payload FROM events WHERE tenant_id = $1 AND type = $2 ORDER BY id`, [server.tenantId, type]);
  }

  it('e-mails an invitation with the tenant, the inviter, the expiry and the link, text and HTML', async () => {
    const email = freshEmail('ada');
    const res = await invite({ email });
    assert.equal(res.status, 201, res.text);
    const inv = res.body;
    assert.equal(inv.email, email);
    assert.equal(inv.role, 'ADMIN');
    assert.equal(inv.status, 'PENDING');
    assert.equal(inv.tenant_id, server.tenantId);
    const hours = (Date.parse(inv.expires_at) - Date.parse(inv.created_at)) / 3_600_000;
    assert.ok(Math.abs(hours - 72) < 0.01, `expires 72 h after creation (${hours})`);
    assert.ok(['pending', 'sent'].includes(inv.email_status));

    const mail = await mailTo(email);
    assert.match(mail.subject ?? '', /invited you to join Default on Coffer/);
    assert.match(mail.text ?? '', /The "Management" application invited you to join the tenant "Default" on Coffer as an administrator/);
    assert.match(mail.text ?? '', /expires on \d{1,2} \w+ \d{4}, \d\d:\d\d UTC/);
    const token = linkToken(mail.text ?? '');
    assert.equal(linkToken(String(mail.html)), token, 'the HTML body has the same link');
    assert.match(String(mail.html), /Accept the invitation/);
    assert.equal(mail.from?.value[0].address, 'coffer@example.com');

    // Delivery shows on the invitation.
    await until(async () => (await get(inv.id)).body.email_status === 'sent' || undefined, 'email_status sent');
    // No secret in the event payload.
    const created = (await events('tenant.invitation.created')).find((e) => e.payload.id === inv.id);
    assert.ok(created);
    assert.ok(!JSON.stringify(created).includes(token.split('.')[1]));
    assert.deepEqual(Object.keys(created!.payload).sort(), ['email', 'expires_at', 'id', 'role']);
  });

  it('validates the body: RFC 5322 addresses, the roles, no other fields', async () => {
    for (const email of ['', 'plain', 'a@', '@b.example', 'a b@example.com', 'Ada <ada@example.com>', 'a..b@example.com', 'a@-x.example', `${'a'.repeat(65)}@example.com`]) {
      const res = await invite({ email });
      assert.equal(res.status, 400, `${JSON.stringify(email)}: ${res.text}`);
      assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
      assert.ok(res.body.errors['body.email'], res.text);
    }
    // Well-formed, but not an address the mail layer sends to.
    assert.equal((await invite({ email: '"quoted local"@example.com' })).status, 400);
    for (const email of ['"quoted.local"@example.com', 'a.b+tag@sub.example.co', 'x@[192.0.2.1]', "o'brien@example.com"]) {
      const res = await invite({ email, role: 'READ_ONLY' });
      assert.equal(res.status, 201, `${email}: ${res.text}`);
      assert.equal(res.body.role, 'READ_ONLY');
    }
    assert.equal((await invite({ email: freshEmail(), role: 'OWNER' })).status, 400);
    assert.equal((await invite({ email: freshEmail(), extra: 1 })).status, 400);
    assert.equal((await invite({})).status, 400);
    assert.equal((await call(server, 'GET', '/tenants/self/invitations?size=101', { key: server.key })).status, 400);
    assert.equal((await call(server, 'GET', '/tenants/self/invitations?size=100', { key: server.key })).status, 200);
    assert.equal((await call(server, 'GET', '/tenants/self/members?size=51', { key: server.key })).status, 400);
    assert.equal((await call(server, 'GET', '/tenants/self/members?size=50', { key: server.key })).status, 200);
  });

  it('refuses a second pending invitation for an address (any case) with 409', async () => {
    const email = freshEmail('twice');
    assert.equal((await invite({ email })).status, 201);
    const again = await invite({ email: email.toUpperCase() });
    assert.equal(again.status, 409, again.text);
    assert.match(again.body.detail, /pending invitation/);
  });

  it('accepts: the page shows tenant and inviter, the POST makes the member with the role, marks ACCEPTED, signs in', async () => {
    const email = freshEmail('grace');
    const inv = (await invite({ email, role: 'READ_ONLY' })).body;
    const token = linkToken((await mailTo(email)).text ?? '');

    const pageRes = await call(server, 'GET', `/invitations/accept?token=${encodeURIComponent(token)}`);
    assert.equal(pageRes.status, 200);
    assert.match(pageRes.headers.get('content-type') ?? '', /text\/html/);
    assert.match(pageRes.text, /Join Default/);
    assert.match(pageRes.text, /The &quot;Management&quot; application invited you/);
    assert.match(pageRes.text, /name="first_name"/);
    assert.doesNotMatch(pageRes.text, /<script/);
    assert.match(pageRes.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    // Opening the page twice changes nothing.
    assert.equal((await call(server, 'GET', `/invitations/accept?token=${encodeURIComponent(token)}`)).status, 200);

    const res = await accept(token, { first_name: 'Grace', last_name: 'Hopper' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.role, 'READ_ONLY');
    assert.equal(res.body.user.email, email);
    assert.equal(res.body.user.first_name, 'Grace');
    const cookies = res.headers.getSetCookie();
    assert.ok(cookies.some((c) => /^coffer_session=.*HttpOnly/.test(c) && /SameSite=Strict/.test(c)), cookies.join(' | '));
    assert.ok(cookies.some((c) => /^coffer_csrf=/.test(c) && !/HttpOnly/.test(c)));
    const m = memberCookies(res);

    const after = (await get(inv.id)).body;
    assert.equal(after.status, 'ACCEPTED');
    assert.equal(after.member_id, res.body.id);
    const listed = await call(server, 'GET', `/tenants/self/members?user_id=${res.body.user.id}`, { key: server.key });
    assert.equal(listed.body.pagination.total_items, 1);
    assert.equal(listed.body.data[0].id, res.body.id);

    // Signed in: /me, and a read with the cookie and CSRF header.
    const me = await call(server, 'GET', '/me', asMember(m));
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.user.email, email);
    assert.deepEqual(me.body.tenants.map((t: { name: string; role: string }) => [t.name, t.role]), [['Default', 'READ_ONLY']]);

    // Used: 409, as JSON and as a page.
    assert.equal((await accept(token)).status, 409);
    const usedPage = await call(server, 'GET', `/invitations/accept?token=${encodeURIComponent(token)}`);
    assert.equal(usedPage.status, 409);
    assert.match(usedPage.text, /accepted this invitation already/);

    const accepted = (await events('tenant.invitation.accepted')).find((e) => e.payload.id === inv.id);
    assert.equal(accepted?.payload.member_id, res.body.id);
    const memberCreated = (await events('tenant.member.created')).find((e) => e.payload.id === res.body.id);
    assert.deepEqual(memberCreated?.payload, { id: res.body.id, user_id: res.body.user.id, role: 'READ_ONLY' });
  });

  it('accepts from the HTML form too, answering with a page and the cookies', async () => {
    const email = freshEmail('form');
    await invite({ email });
    const token = linkToken((await mailTo(email)).text ?? '');
    const res = await call(server, 'POST', '/invitations/accept', {
      raw: new URLSearchParams({ token, first_name: 'Form', last_name: 'Filler' }).toString(),
      contentType: 'application/x-www-form-urlencoded',
      headers: { accept: 'text/html,application/xhtml+xml' },
    });
    assert.equal(res.status, 200, res.text);
    assert.match(res.text, /Welcome to Default/);
    memberCookies(res);
  });

  it('a resend makes a new link and ends the old one (410 naming whom to ask); expiry extended', async () => {
    const email = freshEmail('resend');
    const inv = (await invite({ email })).body;
    const oldToken = linkToken((await mailTo(email)).text ?? '');
    offsetMs += 60_000;
    const resent = await call(server, 'POST', `/tenants/self/invitations/${inv.id}/resend`, { key: server.key });
    assert.equal(resent.status, 200, resent.text);
    assert.ok(Date.parse(resent.body.expires_at) > Date.parse(inv.expires_at));
    const newToken = linkToken((await mailTo(email, 2)).text ?? '');
    assert.notEqual(newToken, oldToken);

    const old = await accept(oldToken);
    assert.equal(old.status, 410, old.text);
    assert.match(old.body.detail, /replaced by a newer invitation/);
    const oldPage = await call(server, 'GET', `/invitations/accept?token=${encodeURIComponent(oldToken)}`);
    assert.equal(oldPage.status, 410);
    assert.match(oldPage.text, /A newer invitation was sent/);
    assert.match(oldPage.text, /ask the &quot;Management&quot; application to invite you again/);
    assert.equal((await accept(newToken)).status, 200);
    assert.equal((await events('tenant.invitation.resent')).filter((e) => e.payload.id === inv.id).length, 1);
  });

  it('deleting an invitation ends its link (410 withdrawn) and hides it (404)', async () => {
    const email = freshEmail('deleted');
    const inv = (await invite({ email })).body;
    const token = linkToken((await mailTo(email)).text ?? '');
    assert.equal((await call(server, 'DELETE', `/tenants/self/invitations/${inv.id}`, { key: server.key })).status, 204);
    assert.equal((await get(inv.id)).status, 404);
    assert.equal((await call(server, 'DELETE', `/tenants/self/invitations/${inv.id}`, { key: server.key })).status, 404);
    const res = await accept(token);
    assert.equal(res.status, 410);
    assert.match(res.body.detail, /withdrawn/);
    const pageRes = await call(server, 'GET', `/invitations/accept?token=${encodeURIComponent(token)}`);
    assert.equal(pageRes.status, 410);
    assert.match(pageRes.text, /This invitation was withdrawn/);
    // The address may be invited again.
    assert.equal((await invite({ email })).status, 201);
    assert.ok((await events('tenant.invitation.deleted')).some((e) => e.payload.id === inv.id));
  });

  it('expires after 72 hours: reads show EXPIRED at once, the sweep writes it, the link answers 410, a resend revives it', async () => {
    const email = freshEmail('late');
    const inv = (await invite({ email })).body;
    const token = linkToken((await mailTo(email)).text ?? '');
    offsetMs += 72 * 3_600_000 + 1000;
    assert.equal((await get(inv.id)).body.status, 'EXPIRED');
    const res = await accept(token);
    assert.equal(res.status, 410);
    assert.match(res.body.detail, /has expired/);
    assert.match((await call(server, 'GET', `/invitations/accept?token=${encodeURIComponent(token)}`)).text, /This invitation has expired/);
    await server.running.services.invitations.sweep(30);
    const [row] = await server.running.database.db.query(`SELECT status FROM tenant_invitations WHERE id = $1`, [inv.id]);
    assert.equal(row.status, 'EXPIRED');
    // An expired invitation does not block a new one for the address; resending revives this one.
    const resent = await call(server, 'POST', `/tenants/self/invitations/${inv.id}/resend`, { key: server.key });
    assert.equal(resent.status, 200, resent.text);
    assert.equal(resent.body.status, 'PENDING');
    assert.equal((await accept(linkToken((await mailTo(email, 2)).text ?? ''))).status, 200);
  });

  it('refuses to invite a member, or to resend an accepted invitation (409)', async () => {
    const email = freshEmail('member');
    const inv = (await invite({ email })).body;
    assert.equal((await accept(linkToken((await mailTo(email)).text ?? ''))).status, 200);
    assert.equal((await invite({ email })).status, 409);
    assert.equal((await call(server, 'POST', `/tenants/self/invitations/${inv.id}/resend`, { key: server.key })).status, 409);
  });

  it('answers 404 for links that are not valid, and 400 for malformed acceptances', async () => {
    assert.equal((await accept('nonsense')).status, 404);
    assert.equal((await accept('00000000-0000-4000-8000-000000000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).status, 404);
    const bad = await call(server, 'POST', '/invitations/accept', { body: { token: 'x', first_name: '' } });
    assert.equal(bad.status, 400);
    for (const name of ['   ', 'Ada\nLovelace', 'tab\there', '\u0001']) {
      const res = await call(server, 'POST', '/invitations/accept', { body: { token: 'x', first_name: name, last_name: 'L' } });
      assert.equal(res.status, 400, JSON.stringify(name));
      assert.ok(res.body.errors['body.first_name'], res.text);
    }
    assert.equal((await call(server, 'GET', '/invitations/accept?token=nope')).status, 404);
  });

  it('lists invitations with offset pages', async () => {
    const res = await call(server, 'GET', '/tenants/self/invitations?size=2&page=1', { key: server.key });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 2);
    assert.ok(res.body.pagination.total_items >= 10, JSON.stringify(res.body.pagination));
    for (const i of res.body.data) assert.ok(['PENDING', 'EXPIRED', 'ACCEPTED'].includes(i.status));
  });
});

describe('tenant invitations under contention and mail failure', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;

  before(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer({ SMTP_URL: smtp.url, MAIL_FROM: 'coffer@example.com', JOB_POLL_MS: '20', MAIL_MAX_ATTEMPTS: '1', PEOPLE_RATE_PER_MINUTE: '1000' });
  });
  after(async () => {
    await server?.stop();
    await smtp?.close();
  });

  it('of concurrent invitations of one address, one is made and the rest are 409', async () => {
    const email = freshEmail('race');
    const answers = await Promise.all(Array.from({ length: 6 }, () => call(server, 'POST', '/tenants/self/invitations', { key: server.key, body: { email } })));
    assert.deepEqual(answers.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409]);
  });

  it('of concurrent acceptances of one link, one makes the member and the rest are 409', async () => {
    const email = freshEmail('twice-accepted');
    await call(server, 'POST', '/tenants/self/invitations', { key: server.key, body: { email } });
    const mail = await until(() => smtp.received.find((m) => JSON.stringify(m.to).includes(email)), 'the invitation');
    const token = linkToken(mail.text ?? '');
    const answers = await Promise.all(Array.from({ length: 5 }, () => call(server, 'POST', '/invitations/accept', { body: { token, first_name: 'R', last_name: 'C' } })));
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409, 409, 409, 409]);
    const [{ n }] = await server.running.database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM users WHERE lower(email) = lower($1)`, [email]);
    assert.equal(n, 1);
  });

  it('an e-mail that cannot be delivered shows as email_status failed, and in the audit log', async () => {
    smtp.refuseRecipients = true;
    try {
      const inv = (await call(server, 'POST', '/tenants/self/invitations', { key: server.key, body: { email: freshEmail('bounce') } })).body;
      const failed = await until(async () => {
        const res = await call(server, 'GET', `/tenants/self/invitations/${inv.id}`, { key: server.key });
        return res.body.email_status === 'failed' ? res.body : undefined;
      }, 'email_status failed', 20_000);
      assert.equal(failed.status, 'PENDING');
      const logs = await call(server, 'GET', `/logs?entity_type=tenant_invitation&entity_id=${inv.id}`, { key: server.key });
      assert.ok(logs.body.data.some((e: { operation: string; message: string }) => e.operation === 'email_failed' && /550/.test(e.message)), JSON.stringify(logs.body.data));
      const types = await call(server, 'GET', '/logs/entity-types', { key: server.key });
      assert.ok(types.body.includes('tenant_invitation') && types.body.includes('tenant_member'));
    } finally {
      smtp.refuseRecipients = false;
    }
  });
});
