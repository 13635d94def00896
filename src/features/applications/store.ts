import type { Database, Tx } from '../../db/database.ts';
import { offsetPage } from '../../db/offset-page.ts';
import type { AccessRule } from '../../access/rules.ts';
import type { ApplicationType } from '../../access/permissions.ts';

export type Application = {
  id: string;
  tenant_id: string;
  name: string;
  type: ApplicationType;
  permissions: string[];
  rules: AccessRule[];
  expires_at: Date | null;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
};

const COLUMNS = 'id, tenant_id, name, type, permissions, rules, expires_at, created_by, created_at, modified_by, modified_at';
// An application past its expiry is gone for every reader, before the sweep deletes it.
const LIVE = '(expires_at IS NULL OR expires_at > now())';

export async function insertApplication(
  db: Database,
  tenantId: string,
  a: Pick<Application, 'id' | 'name' | 'type' | 'permissions' | 'rules' | 'expires_at' | 'created_by'>,
  tx?: Tx,
): Promise<Application> {
  const row = await db.one<Application>(
    `INSERT INTO applications (id, tenant_id, name, type, permissions, rules, expires_at, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [a.id, tenantId, a.name, a.type, a.permissions, JSON.stringify(a.rules), a.expires_at, a.created_by],
    tx,
  );
  return row!;
}

export async function findApplication(db: Database, tenantId: string, id: string, tx?: Tx): Promise<Application | undefined> {
  return db.one<Application>(`SELECT ${COLUMNS} FROM applications WHERE tenant_id = $1 AND id = $2 AND ${LIVE}`, [tenantId, id], tx);
}

export async function listApplications(
  db: Database,
  tenantId: string,
  f: { ids: string[]; limit: number; offset: number },
): Promise<{ rows: Application[]; total: number }> {
  const filter = `tenant_id = $1 AND ${LIVE} AND (cardinality($2::uuid[]) = 0 OR id = ANY($2::uuid[]))`;
  // The count and the page in one statement, so one snapshot: see src/db/offset-page.ts.
  return offsetPage<Application>(db, { table: 'applications', columns: COLUMNS, where: filter, params: [tenantId, f.ids], orderBy: ['created_at', 'id'], limit: f.limit, offset: f.offset });
}

export async function updateApplication(
  db: Database,
  tenantId: string,
  id: string,
  a: Pick<Application, 'name' | 'permissions' | 'rules' | 'modified_by'>,
  tx?: Tx,
): Promise<Application | undefined> {
  return db.one<Application>(
    `UPDATE applications SET name = $3, permissions = $4, rules = $5, modified_by = $6, modified_at = now()
     WHERE tenant_id = $1 AND id = $2 AND ${LIVE} RETURNING ${COLUMNS}`,
    [tenantId, id, a.name, a.permissions, JSON.stringify(a.rules), a.modified_by],
    tx,
  );
}

/** Every live application of the tenant that may hold token permissions (management ones cannot), with its grants. */
export async function listTokenGrantees(db: Database, tenantId: string, tx?: Tx): Promise<Pick<Application, 'id' | 'type' | 'permissions' | 'rules' | 'expires_at'>[]> {
  return db.query(`SELECT id, type, permissions, rules, expires_at FROM applications WHERE tenant_id = $1 AND type <> 'management' AND ${LIVE}`, [tenantId], tx);
}

export async function deleteApplication(db: Database, tenantId: string, id: string, tx?: Tx): Promise<boolean> {
  const rows = await db.query(`DELETE FROM applications WHERE tenant_id = $1 AND id = $2 AND ${LIVE} RETURNING id`, [tenantId, id], tx);
  return rows.length > 0;
}

/**
 * The expiry sweep works across tenants by nature: it finds what to delete and
 * returns each row's tenant, and the deletion itself is tenant-scoped.
 */
export async function findExpiredApplicationsAcrossTenants(db: Database, limit: number): Promise<{ tenant_id: string; id: string; name: string }[]> {
  return db.query(`SELECT tenant_id, id, name FROM applications WHERE expires_at <= now() ORDER BY expires_at LIMIT $1`, [limit]);
}

export async function deleteExpiredApplication(db: Database, tenantId: string, id: string, tx?: Tx): Promise<boolean> {
  const rows = await db.query(`DELETE FROM applications WHERE tenant_id = $1 AND id = $2 AND expires_at <= now() RETURNING id`, [tenantId, id], tx);
  return rows.length > 0;
}
