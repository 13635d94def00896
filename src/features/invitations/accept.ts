import type { Database } from '../../db/database.ts';
import { ApiError } from '../../http/errors.ts';
import type { Logger } from '../../logger.ts';
import { parseLinkSecret, secretMatches } from '../../vault/link-secrets.ts';
import type { EventService } from '../events/service.ts';
import type { LogService } from '../logs/service.ts';
import { memberPrincipal } from '../members/roles.ts';
import type { MemberService } from '../members/service.ts';
import type { SigninService, StartedSession } from '../signin/service.ts';
import type { TenantService } from '../tenants/service.ts';
import type { UserService } from '../users/service.ts';
import { findLink, invitationOfLink, markAccepted, type InvitationRow, type LinkRow } from './store.ts';

/** What the acceptance page shows for a link. */
export type AcceptView =
  | { state: 'ready'; tenantName: string; inviter: string; email: string; role: string; expiresAt: Date }
  /** 410: the link no longer works, and why; the inviter is whom to ask. */
  | { state: 'gone'; reason: 'expired' | 'resent' | 'deleted'; tenantName: string; inviter: string }
  /** 409: accepted already. */
  | { state: 'used'; tenantName: string }
  | { state: 'unknown' };

/** A refused acceptance: the problem, with what the page says about it. */
export class AcceptanceRefused extends ApiError {
  readonly view: Exclude<AcceptView, { state: 'ready' }>;
  constructor(view: Exclude<AcceptView, { state: 'ready' }>) {
    super(...refusal(view));
    this.view = view;
  }
}

function refusal(view: Exclude<AcceptView, { state: 'ready' }>): [number, string] {
  switch (view.state) {
    case 'unknown':
      return [404, 'This invitation link is not valid: check that it was copied whole.'];
    case 'used':
      return [409, 'This invitation was accepted already: sign in instead.'];
    case 'gone': {
      const why = { expired: 'has expired', resent: 'was replaced by a newer invitation e-mail', deleted: 'was withdrawn' }[view.reason];
      return [410, `This invitation link ${why}. Ask ${view.inviter} (of ${view.tenantName}) to invite you again.`];
    }
  }
}

export type Acceptance = ReturnType<typeof createAcceptance>;

/**
 * Accepting an invitation (the link's page, then its form): in one transaction the user is
 * made (or the existing user with the address joins), becomes a member with the invitation's
 * role, the invitation turns ACCEPTED, and a session starts, signing the person in.
 */
export function createAcceptance(deps: {
  db: Database;
  logs: LogService;
  events: EventService;
  users: UserService;
  members: MemberService;
  tenants: TenantService;
  signin: SigninService;
  log: Logger;
  now: () => number;
}) {
  const { db, logs, events, users, members, tenants, signin, log, now } = deps;

  /** The refusal for a link and its invitation, or undefined when it may be accepted. */
  async function check(link: LinkRow | undefined, hash: Buffer, invitation: InvitationRow | undefined): Promise<AcceptView> {
    if (!link || !secretMatches(hash, link.secret_hash) || !invitation) return { state: 'unknown' };
    const tenantName = (await tenants.byId(invitation.tenant_id))?.name ?? 'the tenant';
    if (invitation.status === 'ACCEPTED') return { state: 'used', tenantName };
    const gone = (reason: 'expired' | 'resent' | 'deleted'): AcceptView => ({ state: 'gone', reason, tenantName, inviter: invitation.inviter });
    if (invitation.status === 'DELETED') return gone('deleted');
    if (link.superseded_at) return gone('resent');
    if (invitation.status === 'EXPIRED' || invitation.expires_at.getTime() <= now()) return gone('expired');
    return { state: 'ready', tenantName, inviter: invitation.inviter, email: invitation.email, role: invitation.role, expiresAt: invitation.expires_at };
  }

  return {
    /** What the page shows; opening it changes nothing. */
    async view(token: string): Promise<AcceptView> {
      const parsed = parseLinkSecret(token);
      if (!parsed) return { state: 'unknown' };
      const link = await findLink(db, parsed.id);
      return check(link, parsed.hash, link ? await invitationOfLink(db, link) : undefined);
    },

    async accept(token: string, names: { first_name: string; last_name: string }): Promise<{ session: StartedSession; tenantName: string; tenantId: string; memberId: string }> {
      const parsed = parseLinkSecret(token);
      if (!parsed) throw new AcceptanceRefused({ state: 'unknown' });
      const clean = { first_name: names.first_name.trim(), last_name: names.last_name.trim() };
      const done = await db.transaction(async (tx) => {
        const link = await findLink(db, parsed.id, tx);
        // Locked: of two acceptances of one invitation, the second sees it ACCEPTED.
        const invitation = link ? await invitationOfLink(db, link, tx, { lock: true }) : undefined;
        const v = await check(link, parsed.hash, invitation);
        if (v.state !== 'ready') throw new AcceptanceRefused(v);
        const inv = invitation!;
        const { user } = await users.findOrCreate(tx, inv.email, clean);
        const existing = await members.ofUser(inv.tenant_id, user.id, tx);
        if (existing) throw ApiError.conflict(`You are a member of ${v.tenantName} already: sign in instead.`);
        // The new member acts for itself from here on: the audit log names the user.
        const actor = memberPrincipal({ tenantId: inv.tenant_id, userId: user.id, role: inv.role });
        const member = await members.add(actor, inv.tenant_id, user.id, inv.role, tx);
        await markAccepted(db, inv.tenant_id, inv.id, member.id, user.id, tx);
        await logs.record(actor, { entityType: 'tenant_invitation', entityId: inv.id, operation: 'accept', message: `Invitation accepted; member ${member.id} added (${inv.role})` }, tx);
        await events.emit(inv.tenant_id, 'tenant.invitation.accepted', inv.id, { id: inv.id, email: inv.email, role: inv.role, member_id: member.id, user_id: user.id }, tx);
        const session = await signin.startSession(member, tx);
        return { session, tenantName: v.tenantName, memberId: member.id, tenantId: inv.tenant_id, invitationId: inv.id };
      });
      log.info({ tenant_id: done.tenantId, invitation_id: done.invitationId, member_id: done.memberId }, 'invitation accepted');
      return done;
    },
  };
}
