import type { Database, Tx } from '../../db/database.ts';
import type { Principal } from '../../access/principal.ts';
import { ApiError } from '../../http/errors.ts';
import type { Logger } from '../../logger.ts';
import type { MailService } from '../../mail/index.ts';
import { newLinkSecret, parseLinkSecret, secretMatches } from '../../vault/link-secrets.ts';
import type { LogService } from '../logs/service.ts';
import { memberPrincipal, rolePermissions } from '../members/roles.ts';
import type { MemberRole, MemberService } from '../members/service.ts';
import type { TenantService } from '../tenants/service.ts';
import { presentUser, type UserService } from '../users/service.ts';
import { signinMail } from './mail.ts';
import {
  deleteExpiredSessions, deleteOldSigninLinks, deleteSession, findSession, findSigninLink, insertSession, insertSigninLink, markSigninLinkUsed,
  type SessionRow,
} from './store.ts';

import { CSRF_COOKIE } from '../../http/cookies.ts';

export { CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE } from '../../http/cookies.ts';

export type SigninService = ReturnType<typeof createSigninService>;
/** What a new session hands the browser: the two cookie values and when they end. */
export type StartedSession = { cookie: string; csrf: string; expiresAt: Date; maxAgeSeconds: number };
/** What the sign-in page shows for a link. */
export type LinkView = { state: 'ready'; tenantName: string; email: string | undefined } | { state: 'expired' | 'used' | 'unknown' };

/**
 * Member sign-in: one-time links by e-mail (POST /signin) or from the CLI, and the sessions
 * they start (also started by accepting an invitation). A session is a cookie holding
 * `<id>.<secret>` (HttpOnly, SameSite=Strict) plus a CSRF token the browser's code reads from
 * a second cookie and repeats in X-CSRF-Token; both are stored only as hashes. A session acts
 * in one tenant as one member, with its role's permissions as they are at each request.
 */
export function createSigninService(deps: {
  db: Database;
  logs: LogService;
  mail: MailService;
  members: MemberService;
  users: UserService;
  tenants: TenantService;
  log: Logger;
  now: () => number;
  publicUrl: () => string;
  linkMinutes: number;
  sessionHours: number;
}) {
  const { db, logs, mail, members, users, tenants, log, now } = deps;

  function principalOf(s: SessionRow & { role: string }): Principal {
    return memberPrincipal({ tenantId: s.tenant_id, userId: s.user_id, memberId: s.member_id, role: s.role as MemberRole, expiresAt: s.expires_at });
  }

  /** The live session a cookie names, or undefined (unknown, wrong secret, expired, member removed). */
  async function sessionOf(cookie: string | undefined) {
    const parsed = parseLinkSecret(cookie);
    if (!parsed) return undefined;
    const s = await findSession(db, parsed.id);
    if (!s || !secretMatches(parsed.hash, s.secret_hash) || s.expires_at.getTime() <= now()) return undefined;
    return s;
  }

  async function issueLink(userId: string, tenantId: string, tx?: Tx): Promise<{ token: string; expiresAt: Date }> {
    const link = newLinkSecret();
    const expiresAt = new Date(now() + deps.linkMinutes * 60_000);
    await insertSigninLink(db, { id: link.id, user_id: userId, tenant_id: tenantId, secret_hash: link.hash, expires_at: expiresAt }, tx);
    return { token: link.token, expiresAt };
  }

  return {
    /** Starts a session for the member, in `tx` when given (an acceptance's). */
    async startSession(member: { tenant_id: string; id: string; user_id: string }, tx?: Tx): Promise<StartedSession> {
      const secret = newLinkSecret();
      const csrf = newLinkSecret(secret.id);
      const expiresAt = new Date(now() + deps.sessionHours * 3_600_000);
      await insertSession(db, {
        id: secret.id, secret_hash: secret.hash, csrf_hash: csrf.hash, tenant_id: member.tenant_id, member_id: member.id, user_id: member.user_id, expires_at: expiresAt,
      }, tx);
      return { cookie: secret.token, csrf: csrf.token, expiresAt, maxAgeSeconds: deps.sessionHours * 3600 };
    },

    /**
     * The principal of a request carrying the session cookie: 401 when the session is unknown
     * or over, 403 unless X-CSRF-Token repeats the CSRF cookie and is the session's own.
     */
    async authenticate(cookie: string, csrfHeader: string | undefined, csrfCookie: string | undefined): Promise<Principal> {
      const s = await sessionOf(cookie);
      if (!s) throw ApiError.unauthorized('The session has ended (or the member was removed): sign in again, or send an SVC-API-KEY.');
      const presented = parseLinkSecret(csrfHeader);
      if (!csrfHeader || csrfHeader !== csrfCookie || !presented || presented.id !== s.id || !secretMatches(presented.hash, s.csrf_hash)) {
        throw ApiError.forbidden(`A signed-in member's request must repeat the ${CSRF_COOKIE} cookie in the X-CSRF-Token header.`);
      }
      return principalOf(s);
    },

    /** GET /me: the user, the tenant the session acts in, and every tenant they are a member of, with their roles. */
    async me(cookie: string | undefined) {
      const s = await sessionOf(cookie);
      if (!s) throw ApiError.unauthorized('Not signed in: open a sign-in link (POST /signin sends one).');
      const user = await users.get(s.user_id);
      if (!user) throw ApiError.unauthorized('Not signed in.');
      const memberships = await members.memberships(s.user_id);
      return {
        user: presentUser(user),
        tenant_id: s.tenant_id,
        member_id: s.member_id,
        role: s.role,
        permissions: rolePermissions(s.role as MemberRole),
        session_expires_at: s.expires_at.toISOString(),
        tenants: memberships.map((m) => ({ id: m.tenant_id, name: m.tenant_name, role: m.role, member_id: m.member_id })),
      };
    },

    /**
     * POST /me/tenant: the signed-in user acts in another of their tenants from now on. A new
     * session starts there (new cookies) and the one the request came with ends, in one transaction.
     */
    async switchTenant(current: Principal, cookie: string, tenantId: string): Promise<StartedSession> {
      // A member's actor is its user.
      const userId = current.actorId;
      const member = await members.ofUser(tenantId, userId);
      if (!member) throw ApiError.field('body.tenant_id', 'is not a tenant you are a member of (GET /me lists yours)');
      const old = parseLinkSecret(cookie);
      return db.transaction(async (tx) => {
        const session = await this.startSession(member, tx);
        if (old) await deleteSession(db, old.id, tx);
        await logs.record(
          memberPrincipal({ tenantId, userId, memberId: member.id, role: member.role }),
          { entityType: 'tenant_member', entityId: member.id, operation: 'signin', message: `Member switched here from tenant ${current.tenantId}` },
          tx,
        );
        return session;
      });
    },

    /** Ends the session the cookie names, if any. */
    async end(cookie: string | undefined): Promise<void> {
      const s = await sessionOf(cookie);
      if (!s) return;
      await deleteSession(db, s.id);
      await logs.record(principalOf(s), { entityType: 'tenant_member', entityId: s.member_id, operation: 'signout', message: 'Member signed out' });
    },

    issueLink,
    linkUrl: (token: string) => `${deps.publicUrl()}/signin/link?token=${encodeURIComponent(token)}`,

    /**
     * POST /signin: e-mails a sign-in link when the address is a member's (of `tenantId`, or of
     * their oldest membership); otherwise does nothing. The caller answers the same either way.
     */
    async request(email: string, tenantId: string | undefined): Promise<void> {
      const user = await users.byEmail(email);
      if (!user || !user.email) return;
      const memberships = await members.memberships(user.id);
      const membership = tenantId ? memberships.find((m) => m.tenant_id === tenantId) : memberships[0];
      if (!membership) return;
      await db.transaction(async (tx) => {
        const { token, expiresAt } = await issueLink(user.id, membership.tenant_id, tx);
        const message = signinMail({ to: user.email!, tenantName: membership.tenant_name, expiresAt, minutes: deps.linkMinutes, publicUrl: deps.publicUrl(), token });
        await mail.enqueueMail(tx, membership.tenant_id, message);
      });
      log.info({ tenant_id: membership.tenant_id, member_id: membership.member_id }, 'sign-in link e-mailed');
    },

    /** What the sign-in page shows for a link; reading it uses nothing up. */
    async viewLink(token: string): Promise<LinkView> {
      const parsed = parseLinkSecret(token);
      const link = parsed ? await findSigninLink(db, parsed.id) : undefined;
      if (!parsed || !link || !secretMatches(parsed.hash, link.secret_hash)) return { state: 'unknown' };
      if (link.used_at) return { state: 'used' };
      if (link.expires_at.getTime() <= now()) return { state: 'expired' };
      const tenant = await tenants.byId(link.tenant_id);
      const user = await users.get(link.user_id);
      return { state: 'ready', tenantName: tenant?.name ?? 'your tenant', email: user?.email ?? undefined };
    },

    /** The page's button: uses the link up and starts a session, in one transaction. */
    async useLink(token: string): Promise<StartedSession> {
      const parsed = parseLinkSecret(token);
      if (!parsed) throw new ApiError(404, 'This sign-in link is not valid.');
      return db.transaction(async (tx) => {
        const link = await findSigninLink(db, parsed.id, tx, { lock: true });
        if (!link || !secretMatches(parsed.hash, link.secret_hash)) throw new ApiError(404, 'This sign-in link is not valid.');
        if (link.used_at) throw new ApiError(409, 'This sign-in link was used already: ask for a new one.');
        if (link.expires_at.getTime() <= now()) throw new ApiError(410, 'This sign-in link has expired: ask for a new one.');
        const member = await members.ofUser(link.tenant_id, link.user_id, tx);
        if (!member) throw new ApiError(410, 'You are no longer a member of this tenant.');
        await markSigninLinkUsed(db, link.id, tx);
        const session = await this.startSession(member, tx);
        await logs.record(
          { kind: 'system', tenantId: link.tenant_id },
          { entityType: 'tenant_member', entityId: member.id, operation: 'signin', message: 'Member signed in with a one-time link' },
          tx,
        );
        return session;
      });
    },

    async sweep(): Promise<number> {
      const at = new Date(now());
      return (await deleteExpiredSessions(db, at)) + (await deleteOldSigninLinks(db, new Date(at.getTime() - 86_400_000)));
    },
  };
}
