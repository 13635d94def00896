import type { Database, Tx } from '../../db/database.ts';
import { uuidv4 } from '../../db/ids.ts';
import type { Principal } from '../../access/principal.ts';
import { ApiError } from '../../http/errors.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import type { Logger } from '../../logger.ts';
import { emailProblem } from '../../mail/address.ts';
import { addressProblem } from '../../mail/settings.ts';
import type { MailService, MailStatus } from '../../mail/index.ts';
import { newLinkSecret } from '../../vault/link-secrets.ts';
import type { ApplicationService } from '../applications/service.ts';
import type { EventService } from '../events/service.ts';
import type { LogService } from '../logs/service.ts';
import type { MemberService } from '../members/service.ts';
import type { TenantService } from '../tenants/service.ts';
import { displayName, type UserService } from '../users/service.ts';
import { invitationMail } from './mail.ts';
import {
  expireDue, findInvitation, findPendingFor, insertInvitation, insertLink, listInvitations, lockInvitee, markDeleted, purgeDeleted,
  renewInvitation, supersedeLinks, type InvitationRole, type InvitationRow,
} from './store.ts';

export type InvitationService = ReturnType<typeof createInvitationService>;
export type InvitationView = { row: InvitationRow; status: 'PENDING' | 'EXPIRED' | 'ACCEPTED'; mail: MailStatus | undefined };

/** The mail failure handler's name (src/mail): a given-up invitation e-mail is logged and audited. */
export const INVITATION_MAIL = 'invitations';

/**
 * Tenant invitations: an e-mail with a link (src/features/invitations/accept.ts takes it) that
 * makes the invitee a member with the invitation's role. The link's secret is stored only as
 * a hash; resending makes a new one (earlier links then answer 410), deleting ends them all.
 * PENDING turns EXPIRED at `expires_at`: every read shows that at once, the sweep writes it.
 */
export function createInvitationService(deps: {
  db: Database;
  logs: LogService;
  events: EventService;
  mail: MailService;
  members: MemberService;
  users: UserService;
  tenants: TenantService;
  applications: ApplicationService;
  log: Logger;
  now: () => number;
  publicUrl: () => string;
  ttlHours: number;
}) {
  const { db, logs, events, mail, members, users, tenants, applications, log, now } = deps;

  mail.registerFailureHandler(INVITATION_MAIL, async (failure, tx) => {
    await logs.record(
      { kind: 'system', tenantId: failure.tenantId },
      { entityType: 'tenant_invitation', entityId: failure.ref, operation: 'email_failed', message: `The invitation e-mail could not be sent after ${failure.attempts} attempts: ${failure.error}` },
      tx,
    );
  });

  function statusOf(row: InvitationRow): InvitationView['status'] {
    if (row.status === 'PENDING' && row.expires_at.getTime() <= now()) return 'EXPIRED';
    return row.status === 'DELETED' ? 'EXPIRED' : row.status;
  }

  async function view(row: InvitationRow, statuses?: Map<string, MailStatus>): Promise<InvitationView> {
    const m = row.mail_id ? (statuses ? statuses.get(row.mail_id) : await mail.mailStatus(row.tenant_id, row.mail_id)) : undefined;
    return { row, status: statusOf(row), mail: m };
  }

  /** Who invites, as the e-mail and the page say it mid-sentence (capitalised where a sentence starts with it). */
  async function inviterOf(principal: Principal): Promise<string> {
    if (principal.kind === 'member') {
      const user = await users.get(principal.actorId);
      return (user && displayName(user)) ?? 'a member of the tenant';
    }
    try {
      const app = await applications.get(principal, principal.applicationId);
      return `the "${app.name}" application`;
    } catch {
      return 'an administrator of the tenant';
    }
  }

  /** Queues the e-mail with a new link, in `tx`; returns the mail id. */
  async function send(tx: Tx, row: Pick<InvitationRow, 'tenant_id' | 'id' | 'email' | 'role' | 'inviter'>, expiresAt: Date): Promise<string> {
    const link = newLinkSecret();
    await insertLink(db, { id: link.id, tenant_id: row.tenant_id, invitation_id: row.id, secret_hash: link.hash }, tx);
    const tenant = await tenants.byId(row.tenant_id);
    const message = invitationMail({
      to: row.email, tenantName: tenant?.name ?? 'a tenant', inviter: row.inviter, role: row.role, expiresAt, publicUrl: deps.publicUrl(), token: link.token,
    });
    return mail.enqueueMail(tx, row.tenant_id, message, { onFailure: { handler: INVITATION_MAIL, ref: row.id } });
  }

  function payload(row: InvitationRow): Record<string, unknown> {
    return { id: row.id, email: row.email, role: row.role, expires_at: row.expires_at.toISOString() };
  }

  return {
    async create(principal: Principal, input: { email: string; role: InvitationRole }): Promise<InvitationView> {
      const email = input.email.trim();
      const problem = emailProblem(email) ?? (addressProblem(email) ? 'is an address Coffer cannot send e-mail to (a quoted local part with spaces)' : undefined);
      if (problem) throw ApiError.field('body.email', problem);
      const tenantId = principal.tenantId;
      const inviter = await inviterOf(principal);
      const row = await db.transaction(async (tx) => {
        await lockInvitee(db, tenantId, email, tx);
        if (await members.isMemberByEmail(tenantId, email, tx)) throw ApiError.conflict('Someone with this e-mail address is a member of the tenant already.');
        const pending = await findPendingFor(db, tenantId, email, new Date(now()), tx);
        if (pending) throw ApiError.conflict(`A pending invitation for this e-mail address exists already (${pending.id}): resend it instead.`);
        const id = uuidv4();
        const expiresAt = new Date(now() + deps.ttlHours * 3_600_000);
        const mailId = await send(tx, { tenant_id: tenantId, id, email, role: input.role, inviter }, expiresAt);
        const created = await insertInvitation(db, { tenant_id: tenantId, id, email, role: input.role, expires_at: expiresAt, mail_id: mailId, inviter, created_by: principal.actorId }, tx);
        await logs.record(principal, { entityType: 'tenant_invitation', entityId: id, operation: 'create', message: `Invitation created (${input.role})` }, tx);
        await events.emit(tenantId, 'tenant.invitation.created', id, payload(created), tx);
        return created;
      });
      log.info({ tenant_id: tenantId, invitation_id: row.id }, 'invitation created');
      return view(row);
    },

    async resend(principal: Principal, id: string): Promise<InvitationView> {
      const row = await db.transaction(async (tx) => {
        const current = await findInvitation(db, principal.tenantId, id, tx, { lock: true });
        if (!current) throw ApiError.notFound('invitation');
        if (current.status === 'ACCEPTED') throw ApiError.conflict('This invitation was accepted already: there is nothing to resend.');
        await lockInvitee(db, principal.tenantId, current.email, tx);
        if (await members.isMemberByEmail(principal.tenantId, current.email, tx)) throw ApiError.conflict('Someone with this e-mail address is a member of the tenant already.');
        const other = await findPendingFor(db, principal.tenantId, current.email, new Date(now()), tx);
        if (other && other.id !== id) throw ApiError.conflict(`Another pending invitation for this e-mail address exists (${other.id}).`);
        await supersedeLinks(db, principal.tenantId, id, tx);
        const expiresAt = new Date(now() + deps.ttlHours * 3_600_000);
        const mailId = await send(tx, current, expiresAt);
        const renewed = await renewInvitation(db, principal.tenantId, id, { expires_at: expiresAt, mail_id: mailId, modified_by: principal.actorId }, tx);
        await logs.record(principal, { entityType: 'tenant_invitation', entityId: id, operation: 'resend', message: 'Invitation sent again; earlier links no longer work' }, tx);
        await events.emit(principal.tenantId, 'tenant.invitation.resent', id, payload(renewed), tx);
        return renewed;
      });
      log.info({ tenant_id: principal.tenantId, invitation_id: id }, 'invitation resent');
      return view(row);
    },

    async get(principal: Principal, id: string): Promise<InvitationView> {
      const row = await findInvitation(db, principal.tenantId, id);
      if (!row) throw ApiError.notFound('invitation');
      return view(row);
    },

    async list(principal: Principal, q: Offset) {
      const { rows, total } = await listInvitations(db, principal.tenantId, offsetOf(q));
      const statuses = await mail.mailStatuses(principal.tenantId, rows.flatMap((r) => (r.mail_id ? [r.mail_id] : [])));
      return offsetPage(await Promise.all(rows.map((r) => view(r, statuses))), total, q);
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const current = await findInvitation(db, principal.tenantId, id, tx, { lock: true });
        if (!current) throw ApiError.notFound('invitation');
        await markDeleted(db, principal.tenantId, id, principal.actorId, tx);
        await logs.record(principal, { entityType: 'tenant_invitation', entityId: id, operation: 'delete', message: 'Invitation deleted; its links no longer work' }, tx);
        await events.emit(principal.tenantId, 'tenant.invitation.deleted', id, payload(current), tx);
      });
    },

    statusOf,

    /** Persists EXPIRED; then forgets deleted invitations after `deletedDays` (their links answer 404 from then on). */
    async sweep(deletedDays: number): Promise<number> {
      let n = 0;
      for (let batch = 1000; batch === 1000; ) {
        batch = await expireDue(db, new Date(now()), 1000);
        n += batch;
      }
      return n + (await purgeDeleted(db, new Date(now() - deletedDays * 86_400_000), 1000));
    },
  };
}
