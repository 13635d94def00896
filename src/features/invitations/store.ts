import type { Database, Tx } from '../../db/database.ts';
import { offsetPage } from '../../db/offset-page.ts';

export type InvitationRole = 'ADMIN' | 'READ_ONLY';
export type StoredStatus = 'PENDING' | 'EXPIRED' | 'ACCEPTED' | 'DELETED';

export type InvitationRow = {
  tenant_id: string;
  id: string;
  email: string;
  role: InvitationRole;
  status: StoredStatus;
  expires_at: Date;
  mail_id: string | null;
  inviter: string;
  member_id: string | null;
  accepted_at: Date | null;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
};

const COLUMNS = 'tenant_id, id, email, role, status, expires_at, mail_id, inviter, member_id, accepted_at, created_by, created_at, modified_by, modified_at';

/** Serialises invitations of one address to one tenant until the transaction ends (no two PENDING at once). */
export async function lockInvitee(db: Database, tenantId: string, email: string, tx: Tx): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || lower($2), 726411905))`, [tenantId, email], tx);
}

export async function insertInvitation(db: Database, r: Omit<InvitationRow, 'member_id' | 'accepted_at' | 'modified_by' | 'modified_at' | 'created_at' | 'status'>, tx: Tx): Promise<InvitationRow> {
  return (await db.one<InvitationRow>(
    `INSERT INTO tenant_invitations (tenant_id, id, email, role, status, expires_at, mail_id, inviter, created_by)
     VALUES ($1, $2, $3, $4, 'PENDING', $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [r.tenant_id, r.id, r.email, r.role, r.expires_at, r.mail_id, r.inviter, r.created_by],
    tx,
  ))!;
}

/** An invitation the API may show (any status but DELETED). */
export function findInvitation(db: Database, tenantId: string, id: string, tx?: Tx, opts: { lock?: boolean } = {}): Promise<InvitationRow | undefined> {
  return db.one<InvitationRow>(
    `SELECT ${COLUMNS} FROM tenant_invitations WHERE tenant_id = $1 AND id = $2 AND status <> 'DELETED'${opts.lock ? ' FOR UPDATE' : ''}`,
    [tenantId, id],
    tx,
  );
}

/** A PENDING invitation of the address that has not expired by `now`. */
export function findPendingFor(db: Database, tenantId: string, email: string, now: Date, tx?: Tx): Promise<InvitationRow | undefined> {
  return db.one<InvitationRow>(
    `SELECT ${COLUMNS} FROM tenant_invitations WHERE tenant_id = $1 AND lower(email) = lower($2) AND status = 'PENDING' AND expires_at > $3 LIMIT 1`,
    [tenantId, email, now],
    tx,
  );
}

export function listInvitations(db: Database, tenantId: string, p: { limit: number; offset: number }) {
  return offsetPage<InvitationRow>(db, {
    table: 'tenant_invitations',
    columns: COLUMNS,
    where: `tenant_id = $1 AND status <> 'DELETED'`,
    params: [tenantId],
    orderBy: ['created_at', 'id'],
    ...p,
  });
}

/** A resend: PENDING again until `expires_at`, with the new e-mail. */
export async function renewInvitation(db: Database, tenantId: string, id: string, r: { expires_at: Date; mail_id: string; modified_by: string }, tx: Tx): Promise<InvitationRow> {
  return (await db.one<InvitationRow>(
    `UPDATE tenant_invitations SET status = 'PENDING', expires_at = $3, mail_id = $4, modified_by = $5, modified_at = now()
     WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, id, r.expires_at, r.mail_id, r.modified_by],
    tx,
  ))!;
}

export async function markDeleted(db: Database, tenantId: string, id: string, by: string, tx: Tx): Promise<void> {
  await db.query(
    `UPDATE tenant_invitations SET status = 'DELETED', deleted_at = now(), modified_by = $3, modified_at = now() WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, by],
    tx,
  );
}

export async function markAccepted(db: Database, tenantId: string, id: string, memberId: string, by: string, tx: Tx): Promise<void> {
  await db.query(
    `UPDATE tenant_invitations SET status = 'ACCEPTED', member_id = $3, accepted_at = now(), modified_by = $4, modified_at = now() WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, memberId, by],
    tx,
  );
}

/** Writes EXPIRED on up to `limit` PENDING invitations past their expiry; returns how many. */
export async function expireDue(db: Database, now: Date, limit: number): Promise<number> {
  const rows = await db.query(
    `UPDATE tenant_invitations SET status = 'EXPIRED' WHERE (tenant_id, id) IN (
       SELECT tenant_id, id FROM tenant_invitations WHERE status = 'PENDING' AND expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
     AND status = 'PENDING' RETURNING id`,
    [now, limit],
  );
  return rows.length;
}

/** Removes deleted invitations (and their links) deleted before `before`. */
export async function purgeDeleted(db: Database, before: Date, limit: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM tenant_invitations WHERE (tenant_id, id) IN (
       SELECT tenant_id, id FROM tenant_invitations WHERE status = 'DELETED' AND deleted_at < $1 LIMIT $2) RETURNING id`,
    [before, limit],
  );
  return rows.length;
}

// Links.

export async function insertLink(db: Database, l: { id: string; tenant_id: string; invitation_id: string; secret_hash: Buffer }, tx: Tx): Promise<void> {
  await db.query(`INSERT INTO invitation_links (id, tenant_id, invitation_id, secret_hash) VALUES ($1, $2, $3, $4)`, [l.id, l.tenant_id, l.invitation_id, l.secret_hash], tx);
}

/** Ends every link of the invitation still current (a resend makes a new one). */
export async function supersedeLinks(db: Database, tenantId: string, invitationId: string, tx: Tx): Promise<void> {
  await db.query(`UPDATE invitation_links SET superseded_at = now() WHERE tenant_id = $1 AND invitation_id = $2 AND superseded_at IS NULL`, [tenantId, invitationId], tx);
}

export type LinkRow = { id: string; tenant_id: string; invitation_id: string; secret_hash: Buffer; superseded_at: Date | null };

/** A link by its id, with no tenant: the acceptance page has only the link (whose secret the caller then checks). */
export function findLink(db: Database, id: string, tx?: Tx): Promise<LinkRow | undefined> {
  return db.one<LinkRow>(`SELECT id, tenant_id, invitation_id, secret_hash, superseded_at FROM invitation_links WHERE id = $1`, [id], tx);
}

/** The invitation a link belongs to, whatever its status (a deleted one's link says so). */
export function invitationOfLink(db: Database, link: LinkRow, tx?: Tx, opts: { lock?: boolean } = {}): Promise<InvitationRow | undefined> {
  return db.one<InvitationRow>(
    `SELECT ${COLUMNS} FROM tenant_invitations WHERE tenant_id = $1 AND id = $2${opts.lock ? ' FOR UPDATE' : ''}`,
    [link.tenant_id, link.invitation_id],
    tx,
  );
}
