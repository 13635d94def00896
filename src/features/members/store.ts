import type { Database, Tx } from '../../db/database.ts';
import { offsetPage } from '../../db/offset-page.ts';

export type MemberRole = 'OWNER' | 'ADMIN' | 'READ_ONLY';

/** A member with its user's fields (u_…). */
export type MemberRow = {
  id: string;
  tenant_id: string;
  user_id: string;
  role: MemberRole;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  picture: string | null;
};

const TABLE = 'tenant_members m JOIN users u ON u.id = m.user_id';
const COLUMNS = 'm.id, m.tenant_id, m.user_id, m.role, m.created_by, m.created_at, m.modified_by, m.modified_at, u.email, u.first_name, u.last_name, u.picture';

export function listMembers(db: Database, tenantId: string, userIds: string[], p: { limit: number; offset: number }) {
  const filtered = userIds.length > 0;
  return offsetPage<MemberRow>(db, {
    table: TABLE,
    columns: COLUMNS,
    where: filtered ? 'm.tenant_id = $1 AND m.user_id = ANY($2::uuid[])' : 'm.tenant_id = $1',
    params: filtered ? [tenantId, userIds] : [tenantId],
    // Output column names (ORDER BY prefers them to the joined tables' columns).
    orderBy: ['created_at', 'id'],
    ...p,
  });
}

export function findMember(db: Database, tenantId: string, id: string, tx?: Tx): Promise<MemberRow | undefined> {
  return db.one<MemberRow>(`SELECT ${COLUMNS} FROM ${TABLE} WHERE m.tenant_id = $1 AND m.id = $2`, [tenantId, id], tx);
}

export function findMemberOfUser(db: Database, tenantId: string, userId: string, tx?: Tx): Promise<MemberRow | undefined> {
  return db.one<MemberRow>(`SELECT ${COLUMNS} FROM ${TABLE} WHERE m.tenant_id = $1 AND m.user_id = $2`, [tenantId, userId], tx);
}

/** Whether someone with this e-mail address is a member of the tenant. */
export async function isMemberByEmail(db: Database, tenantId: string, email: string, tx?: Tx): Promise<boolean> {
  return (await db.one(`SELECT 1 FROM ${TABLE} WHERE m.tenant_id = $1 AND lower(u.email) = lower($2)`, [tenantId, email], tx)) !== undefined;
}

export async function insertMember(db: Database, m: { tenant_id: string; id: string; user_id: string; role: MemberRole; created_by: string | null }, tx?: Tx): Promise<void> {
  await db.query(
    `INSERT INTO tenant_members (id, tenant_id, user_id, role, created_by) VALUES ($1, $2, $3, $4, $5)`,
    [m.id, m.tenant_id, m.user_id, m.role, m.created_by],
    tx,
  );
}

/** Deletes a member that is not the OWNER; its sessions go with it (member_sessions' foreign key). */
export async function deleteMember(db: Database, tenantId: string, id: string, tx?: Tx): Promise<boolean> {
  const rows = await db.query(`DELETE FROM tenant_members WHERE tenant_id = $1 AND id = $2 AND role <> 'OWNER' RETURNING id`, [tenantId, id], tx);
  return rows.length > 0;
}

/** The tenant's OWNER member. */
export function findOwner(db: Database, tenantId: string, tx?: Tx): Promise<MemberRow | undefined> {
  return db.one<MemberRow>(`SELECT ${COLUMNS} FROM ${TABLE} WHERE m.tenant_id = $1 AND m.role = 'OWNER' ORDER BY m.created_at LIMIT 1`, [tenantId], tx);
}

export type Membership = { member_id: string; tenant_id: string; tenant_name: string; role: MemberRole; created_at: Date };

/** Every tenant the user is a member of, oldest membership first. */
export function membershipsOf(db: Database, userId: string, tx?: Tx): Promise<Membership[]> {
  return db.query<Membership>(
    `SELECT m.id AS member_id, m.tenant_id, t.name AS tenant_name, m.role, m.created_at
     FROM tenant_members m JOIN tenants t ON t.id = m.tenant_id WHERE m.user_id = $1 ORDER BY m.created_at, m.id`,
    [userId],
    tx,
  );
}
