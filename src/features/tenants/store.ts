import type { Database, Tx } from '../../db/database.ts';

export type Tenant = { id: string; name: string; owner_id: string | null; created_at: Date; modified_at: Date | null };

export async function insertTenant(db: Database, t: { id: string; name: string; owner_id: string }, tx?: Tx): Promise<Tenant> {
  const row = await db.one<Tenant>(
    `INSERT INTO tenants (id, name, owner_id) VALUES ($1, $2, $3) RETURNING id, name, owner_id, created_at, modified_at`,
    [t.id, t.name, t.owner_id],
    tx,
  );
  return row!;
}

export async function insertOwner(db: Database, tenantId: string, o: { user_id: string; member_id: string; email: string | null; existing: boolean }, tx?: Tx): Promise<void> {
  if (!o.existing) await db.query(`INSERT INTO users (id, email) VALUES ($1, $2)`, [o.user_id, o.email], tx);
  await db.query(`INSERT INTO tenant_members (id, tenant_id, user_id, role) VALUES ($1, $2, $3, 'OWNER')`, [o.member_id, tenantId, o.user_id], tx);
}

export async function findTenant(db: Database, tenantId: string): Promise<Tenant | undefined> {
  return db.one<Tenant>(`SELECT id, name, owner_id, created_at, modified_at FROM tenants WHERE id = $1`, [tenantId]);
}

export async function countTenants(db: Database, tx?: Tx): Promise<number> {
  return (await db.one<{ n: number }>(`SELECT count(*) AS n FROM tenants`, [], tx))!.n;
}

/** Serialises first-start tenant creation across processes until the transaction ends. */
export async function lockTenantCreation(db: Database, tx: Tx): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(726411904)`, [], tx);
}

/** The tenant's settings (operator-set overrides such as quotas); undefined for no such tenant. */
export async function findTenantSettings(db: Database, tenantId: string): Promise<Record<string, unknown> | undefined> {
  return (await db.one<{ settings: Record<string, unknown> }>(`SELECT settings FROM tenants WHERE id = $1`, [tenantId]))?.settings;
}

/** Sets one setting of the tenant, or removes it (null); false when there is no such tenant. */
export async function setTenantSetting(db: Database, tenantId: string, key: string, value: unknown): Promise<boolean> {
  const rows = await db.query(
    `UPDATE tenants SET settings = CASE WHEN $3::jsonb IS NULL THEN settings - $2 ELSE jsonb_set(settings, ARRAY[$2], $3::jsonb) END, modified_at = now()
     WHERE id = $1 RETURNING id`,
    [tenantId, key, value === null ? null : JSON.stringify(value)],
  );
  return rows.length > 0;
}
