import type { Database, Tx } from '../../db/database.ts';

export type SessionRow = { id: string; secret_hash: Buffer; csrf_hash: Buffer; tenant_id: string; member_id: string; user_id: string; expires_at: Date };
export type SigninLinkRow = { id: string; user_id: string; tenant_id: string; secret_hash: Buffer; expires_at: Date; used_at: Date | null };

export async function insertSession(db: Database, s: SessionRow, tx?: Tx): Promise<void> {
  await db.query(
    `INSERT INTO member_sessions (id, secret_hash, csrf_hash, tenant_id, member_id, user_id, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [s.id, s.secret_hash, s.csrf_hash, s.tenant_id, s.member_id, s.user_id, s.expires_at],
    tx,
  );
}

/** A session with the role its member has now (a session outlives no change of its member: it is deleted with it). */
export function findSession(db: Database, id: string): Promise<(SessionRow & { role: string }) | undefined> {
  return db.one<SessionRow & { role: string }>(
    `SELECT s.id, s.secret_hash, s.csrf_hash, s.tenant_id, s.member_id, s.user_id, s.expires_at, m.role
     FROM member_sessions s JOIN tenant_members m ON m.tenant_id = s.tenant_id AND m.id = s.member_id WHERE s.id = $1`,
    [id],
  );
}

export async function deleteSession(db: Database, id: string, tx?: Tx): Promise<void> {
  await db.query(`DELETE FROM member_sessions WHERE id = $1`, [id], tx);
}

export async function deleteExpiredSessions(db: Database, now: Date): Promise<number> {
  return (await db.query(`DELETE FROM member_sessions WHERE expires_at <= $1 RETURNING id`, [now])).length;
}

export async function insertSigninLink(db: Database, l: Omit<SigninLinkRow, 'used_at'>, tx?: Tx): Promise<void> {
  await db.query(
    `INSERT INTO signin_links (id, user_id, tenant_id, secret_hash, expires_at) VALUES ($1, $2, $3, $4, $5)`,
    [l.id, l.user_id, l.tenant_id, l.secret_hash, l.expires_at],
    tx,
  );
}

export function findSigninLink(db: Database, id: string, tx?: Tx, opts: { lock?: boolean } = {}): Promise<SigninLinkRow | undefined> {
  return db.one<SigninLinkRow>(
    `SELECT id, user_id, tenant_id, secret_hash, expires_at, used_at FROM signin_links WHERE id = $1${opts.lock ? ' FOR UPDATE' : ''}`,
    [id],
    tx,
  );
}

export async function markSigninLinkUsed(db: Database, id: string, tx: Tx): Promise<void> {
  await db.query(`UPDATE signin_links SET used_at = now() WHERE id = $1`, [id], tx);
}

/** Sign-in links a day past their expiry (kept that long so a late click can say it expired). */
export async function deleteOldSigninLinks(db: Database, before: Date): Promise<number> {
  return (await db.query(`DELETE FROM signin_links WHERE expires_at <= $1 RETURNING id`, [before])).length;
}
