import type { Database, Tx } from '../../db/database.ts';
import type { AccessRule } from '../../access/rules.ts';

export type Session = {
  id: string;
  tenant_id: string;
  public_application_id: string;
  permissions: string[];
  rules: AccessRule[];
  authorized_at: Date | null;
  expires_at: Date;
  created_at: Date;
};

const COLUMNS = 'id, tenant_id, public_application_id, permissions, rules, authorized_at, expires_at, created_at';

export async function insertSession(
  db: Database,
  tenantId: string,
  s: { id: string; public_application_id: string; key_hash: Buffer; nonce_hash: Buffer; expires_at: Date },
  tx?: Tx,
): Promise<Session> {
  const row = await db.one<Session>(
    `INSERT INTO sessions (id, tenant_id, public_application_id, key_hash, nonce_hash, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
    [s.id, tenantId, s.public_application_id, s.key_hash, s.nonce_hash, s.expires_at],
    tx,
  );
  return row!;
}

/** Single use: the nonce is cleared in the same statement that grants access, so only one caller can win. */
export async function authorizeByNonce(
  db: Database,
  tenantId: string,
  a: { nonce_hash: Buffer; permissions: string[]; rules: AccessRule[]; authorized_by: string; expires_at: Date | null; max_lifetime_seconds: number },
  tx?: Tx,
): Promise<Session | undefined> {
  return db.one<Session>(
    `UPDATE sessions SET permissions = $3, rules = $4, authorized_by = $5, authorized_at = now(), nonce_hash = NULL,
       expires_at = COALESCE($6, expires_at)
     WHERE tenant_id = $1 AND nonce_hash = $2 AND authorized_at IS NULL AND expires_at > now()
       AND ($6::timestamptz IS NULL OR $6 <= created_at + make_interval(secs => $7))
     RETURNING ${COLUMNS}`,
    [tenantId, a.nonce_hash, a.permissions, JSON.stringify(a.rules), a.authorized_by, a.expires_at, a.max_lifetime_seconds],
    tx,
  );
}

export async function findPendingByNonce(db: Database, tenantId: string, nonceHash: Buffer): Promise<Session | undefined> {
  return db.one<Session>(
    `SELECT ${COLUMNS} FROM sessions WHERE tenant_id = $1 AND nonce_hash = $2 AND authorized_at IS NULL AND expires_at > now()`,
    [tenantId, nonceHash],
  );
}

/**
 * Authentication: the tenant is what we are finding out, so this lookup is by hash alone.
 * A session ends no later than its public application does, nor than the private application
 * that authorized it (deleting or expiring that application revokes what it granted). The
 * earliest expiry is what callers (and the key cache) see, so it stops at that instant, not at the sweep.
 */
export async function findSessionByKeyHash(db: Database, hash: Buffer): Promise<Session | undefined> {
  return db.one<Session>(
    `SELECT s.id, s.tenant_id, s.public_application_id, s.permissions, s.rules, s.authorized_at,
            LEAST(s.expires_at, a.expires_at, g.expires_at) AS expires_at, s.created_at
     FROM sessions s JOIN applications a ON a.id = s.public_application_id AND a.tenant_id = s.tenant_id
     LEFT JOIN applications g ON g.id = s.authorized_by AND g.tenant_id = s.tenant_id
     WHERE s.key_hash = $1 AND s.expires_at > now() AND (a.expires_at IS NULL OR a.expires_at > now())
       AND (s.authorized_by IS NULL OR (g.id IS NOT NULL AND (g.expires_at IS NULL OR g.expires_at > now())))`,
    [hash],
  );
}

/**
 * The live authorized sessions of the tenant with a rule on a container that one of
 * `containers` is in (the rule's `container`, or a condition on containers). Only such a
 * session can reach a token in some of these containers otherwise than in others: its plain
 * permissions and its conditions on ids hold wherever the token is.
 */
export async function findSessionsScopedTo(db: Database, tenantId: string, containers: string[], tx?: Tx): Promise<Session[]> {
  return db.query<Session>(
    `SELECT ${COLUMNS} FROM sessions s
     WHERE tenant_id = $1 AND authorized_at IS NOT NULL AND expires_at > now()
       AND EXISTS (
         SELECT 1 FROM jsonb_array_elements(s.rules) r CROSS JOIN unnest($2::text[]) t
         WHERE starts_with(t, r->>'container')
           OR EXISTS (
             SELECT 1 FROM jsonb_array_elements(r->'conditions') c
             WHERE c->>'attribute' = 'container' AND (t = c->>'value' OR (c->>'operator' = 'starts_with' AND starts_with(t, c->>'value')))))`,
    [tenantId, containers],
    tx,
  );
}

/** The expiry sweep works across tenants: expired sessions carry no access and are simply removed. */
export async function deleteExpiredSessionsAcrossTenants(db: Database, limit: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at <= now() LIMIT $1) RETURNING id`,
    [limit],
  );
  return rows.length;
}
