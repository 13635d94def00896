import type { Running } from '../../src/main.ts';
import type { MailMessage } from '../../src/mail/index.ts';
import { call, type Response } from './http.ts';
import { rememberSecret, runningAt } from './server.ts';

/**
 * People in tests: the messages a tenant queued (opened from the mail.send jobs, so they can be
 * read without a job runner or an SMTP server), the link tokens in them, and members made by
 * accepting an invitation over HTTP.
 */
export async function queuedMails(running: Running, tenantId: string): Promise<MailMessage[]> {
  const rows = await running.database.db.query<{ payload: { mail_id: string; sealed: string; data_key_id: string } }>(
    `SELECT payload FROM jobs WHERE tenant_id = $1 AND kind = 'mail.send' ORDER BY created_at, id`,
    [tenantId],
  );
  const out: MailMessage[] = [];
  for (const { payload: p } of rows) {
    out.push((await running.services.vault.decrypt(tenantId, `mail:${p.mail_id}`, Buffer.from(p.sealed, 'base64'), p.data_key_id)) as MailMessage);
  }
  return out;
}

/** The token of the first /invitations/accept or /signin/link URL in a text; remembered as a secret. */
export function linkToken(text: string, path: '/invitations/accept' | '/signin/link' = '/invitations/accept'): string {
  const m = new RegExp(`https?://[^\\s"<>]+${path.replace(/\//g, '\\/')}\\?token=([^\\s"<>&]+)`).exec(text);
  if (!m) throw new Error(`no ${path} link in the message`);
  const token = decodeURIComponent(m[1]);
  rememberSecret(token, token.split('.')[1]);
  return token;
}

/** The cookie header and CSRF token a response's Set-Cookie gives a member. */
export function memberCookies(res: Response): { cookie: string; csrf: string; session: string } {
  const set = res.headers.getSetCookie();
  const value = (name: string) => set.map((c) => new RegExp(`^${name}=([^;]*)`).exec(c)?.[1]).find((v) => v);
  const session = value('coffer_session');
  const csrf = value('coffer_csrf');
  if (!session || !csrf) throw new Error(`no session cookies in ${JSON.stringify(set)}`);
  rememberSecret(session, csrf, session.split('.')[1], csrf.split('.')[1]);
  return { cookie: `coffer_session=${session}; coffer_csrf=${csrf}`, csrf, session };
}

let n = 0;
/** A fresh address for a test. */
export function freshEmail(prefix = 'person'): string {
  return `${prefix}-${Date.now().toString(36)}-${n++}@example.com`;
}

/** Invites `email` with `key` and accepts over HTTP; returns the member and its cookies. */
export async function makeMember(base: string, tenantId: string, key: string, opts: { email?: string; role?: 'ADMIN' | 'READ_ONLY' } = {}) {
  const running = runningAt(base);
  if (!running) throw new Error(`no in-process server at ${base}`);
  const email = opts.email ?? freshEmail();
  const invited = await call(base, 'POST', '/tenants/self/invitations', { key, body: { email, role: opts.role ?? 'ADMIN' } });
  if (invited.status !== 201) throw new Error(`inviting failed: ${invited.status} ${invited.text}`);
  const mails = (await queuedMails(running, tenantId)).filter((m) => m.to === email);
  const token = linkToken(mails.at(-1)!.text);
  const accepted = await call(base, 'POST', '/invitations/accept', { body: { token, first_name: 'Gen', last_name: 'Erated' } });
  if (accepted.status !== 200) throw new Error(`accepting failed: ${accepted.status} ${accepted.text}`);
  return { member: accepted.body as { id: string; role: string; user: { id: string; email: string } }, invitationId: invited.body.id as string, email, ...memberCookies(accepted) };
}

/** A call as a signed-in member: the cookies, and the CSRF header unless `csrf` says otherwise. */
export function asMember(m: { cookie: string; csrf: string }, csrf: string | null = m.csrf): { headers: Record<string, string> } {
  return { headers: { cookie: m.cookie, ...(csrf === null ? {} : { 'x-csrf-token': csrf }) } };
}
