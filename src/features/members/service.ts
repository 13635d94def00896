import type { Database, Tx } from '../../db/database.ts';
import { uuidv4 } from '../../db/ids.ts';
import type { Principal } from '../../access/principal.ts';
import { ApiError } from '../../http/errors.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import type { EventService } from '../events/service.ts';
import type { Actor, LogService } from '../logs/service.ts';
import { presentUser } from '../users/service.ts';
import {
  deleteMember, findMember, findMemberOfUser, findOwner, insertMember, isMemberByEmail, listMembers, membershipsOf,
  type MemberRole, type MemberRow,
} from './store.ts';

export type { MemberRole, MemberRow, Membership } from './store.ts';
export type MemberService = ReturnType<typeof createMemberService>;

export function presentMember(m: MemberRow) {
  return {
    id: m.id,
    tenant_id: m.tenant_id,
    role: m.role,
    user: presentUser({ id: m.user_id, email: m.email, first_name: m.first_name, last_name: m.last_name, picture: m.picture }),
    ...(m.created_by ? { created_by: m.created_by } : {}),
    created_at: m.created_at.toISOString(),
    ...(m.modified_by ? { modified_by: m.modified_by } : {}),
    ...(m.modified_at ? { modified_at: m.modified_at.toISOString() } : {}),
  };
}

/**
 * Tenant members: the tenant's OWNER (made with the tenant) and the people who accepted an
 * invitation. Deleting a member revokes all its access at once: its signed-in sessions are
 * deleted in the same statement (member_sessions' foreign key).
 */
export function createMemberService(deps: { db: Database; logs: LogService; events: EventService }) {
  const { db, logs, events } = deps;
  return {
    async list(principal: Principal, q: Offset & { user_id: string[] }) {
      const { rows, total } = await listMembers(db, principal.tenantId, [...new Set(q.user_id.map((id) => id.toLowerCase()))], offsetOf(q));
      return offsetPage(rows.map(presentMember), total, q);
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const member = await findMember(db, principal.tenantId, id, tx);
        if (!member) throw ApiError.notFound('member');
        if (member.role === 'OWNER') throw ApiError.unprocessable('The tenant\'s OWNER member cannot be deleted.');
        if (!(await deleteMember(db, principal.tenantId, id, tx))) throw ApiError.notFound('member');
        await logs.record(principal, { entityType: 'tenant_member', entityId: id, operation: 'delete', message: `Member removed (${member.role})` }, tx);
        await events.emit(principal.tenantId, 'tenant.member.deleted', id, { id, user_id: member.user_id, role: member.role }, tx);
      });
    },

    /** Makes the user a member with `role`, in `tx` (an invitation's acceptance); 409 when it is one already. */
    async add(actor: Actor, tenantId: string, userId: string, role: MemberRole, tx: Tx): Promise<MemberRow> {
      if (await findMemberOfUser(db, tenantId, userId, tx)) throw ApiError.conflict('This person is a member of the tenant already.');
      const id = uuidv4();
      await insertMember(db, { tenant_id: tenantId, id, user_id: userId, role, created_by: actor.kind === 'system' ? null : actor.actorId }, tx);
      await logs.record(actor, { entityType: 'tenant_member', entityId: id, operation: 'create', message: `Member added (${role})` }, tx);
      await events.emit(tenantId, 'tenant.member.created', id, { id, user_id: userId, role }, tx);
      return (await findMember(db, tenantId, id, tx))!;
    },

    get: (tenantId: string, id: string, tx?: Tx) => findMember(db, tenantId, id, tx),
    ofUser: (tenantId: string, userId: string, tx?: Tx) => findMemberOfUser(db, tenantId, userId, tx),
    isMemberByEmail: (tenantId: string, email: string, tx?: Tx) => isMemberByEmail(db, tenantId, email, tx),
    owner: (tenantId: string, tx?: Tx) => findOwner(db, tenantId, tx),
    memberships: (userId: string, tx?: Tx) => membershipsOf(db, userId, tx),
  };
}
