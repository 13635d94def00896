import type { Database, Tx } from '../db/database.ts';

export type TenantKeyRow = { id: string; tenant_id: string; purpose: 'data' | 'index'; kek_id: string; wrapped: Buffer };

export async function findActiveKeys(db: Database, tenantId: string): Promise<TenantKeyRow[]> {
  return db.query<TenantKeyRow>(`SELECT id, tenant_id, purpose, kek_id, wrapped FROM tenant_keys WHERE tenant_id = $1 AND active`, [tenantId]);
}

export async function findKeyById(db: Database, tenantId: string, id: string): Promise<TenantKeyRow | undefined> {
  return db.one<TenantKeyRow>(`SELECT id, tenant_id, purpose, kek_id, wrapped FROM tenant_keys WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
}

/** Inserts a tenant key unless another process just did; the caller re-reads either way. */
export async function insertKeyIfAbsent(db: Database, tenantId: string, k: Omit<TenantKeyRow, 'tenant_id'>, tx?: Tx): Promise<void> {
  await db.query(
    `INSERT INTO tenant_keys (id, tenant_id, purpose, kek_id, wrapped) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id, purpose) WHERE active DO NOTHING`,
    [k.id, tenantId, k.purpose, k.kek_id, k.wrapped],
    tx,
  );
}

/** Rotation walks every tenant's keys: by nature across tenants, each update tenant-scoped. */
export async function findKeysNotWrappedBy(db: Database, kekId: string, limit: number): Promise<TenantKeyRow[]> {
  return db.query<TenantKeyRow>(
    `SELECT id, tenant_id, purpose, kek_id, wrapped FROM tenant_keys WHERE kek_id <> $1 ORDER BY id LIMIT $2`,
    [kekId, limit],
  );
}

/** One tenant key per KEK id in use (any tenant), with how many keys that KEK wraps. */
export async function findKeySamplePerKek(db: Database): Promise<(TenantKeyRow & { keys: number })[]> {
  return db.query(
    `SELECT DISTINCT ON (kek_id) id, tenant_id, purpose, kek_id, wrapped, count(*) OVER (PARTITION BY kek_id)::int AS keys
     FROM tenant_keys ORDER BY kek_id, id`,
  );
}

export async function rewrapKey(db: Database, tenantId: string, id: string, from: string, k: { kek_id: string; wrapped: Buffer }): Promise<boolean> {
  const rows = await db.query(
    `UPDATE tenant_keys SET kek_id = $4, wrapped = $5, rewrapped_at = now() WHERE tenant_id = $1 AND id = $2 AND kek_id = $3 RETURNING id`,
    [tenantId, id, from, k.kek_id, k.wrapped],
  );
  return rows.length > 0;
}

/** Adds `n` seals to a data key's count; the new count, and whether it is still the active key. */
export async function addSeals(db: Database, tenantId: string, id: string, n: number): Promise<{ sealed: number; active: boolean } | undefined> {
  return db.one<{ sealed: number; active: boolean }>(
    `UPDATE tenant_keys SET sealed = sealed + $3 WHERE tenant_id = $1 AND id = $2 RETURNING sealed::float8 AS sealed, active`,
    [tenantId, id, n],
  );
}

/** Retires the tenant's active key `id`; false when it was no longer active (another process retired it). */
export async function retireKey(db: Database, tenantId: string, id: string, tx: Tx): Promise<boolean> {
  return (await db.query(`UPDATE tenant_keys SET active = false WHERE tenant_id = $1 AND id = $2 AND active RETURNING id`, [tenantId, id], tx)).length > 0;
}
