import type { Database, Tx } from '../../db/database.ts';
import { offsetPage } from '../../db/offset-page.ts';
import type { AccessRule } from '../../access/rules.ts';
import type { ApplicationType } from '../../access/permissions.ts';

export type ApplicationKey = { id: string; tenant_id: string; application_id: string; created_by: string | null; created_at: Date };

const COLUMNS = 'id, tenant_id, application_id, created_by, created_at';

export async function insertKey(
  db: Database,
  tenantId: string,
  k: { id: string; application_id: string; key_hash: Buffer; created_by: string | null },
  tx?: Tx,
): Promise<ApplicationKey> {
  const row = await db.one<ApplicationKey>(
    `INSERT INTO application_keys (id, tenant_id, application_id, key_hash, created_by) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [k.id, tenantId, k.application_id, k.key_hash, k.created_by],
    tx,
  );
  return row!;
}

export async function keysOfApplications(db: Database, tenantId: string, applicationIds: string[], tx?: Tx): Promise<ApplicationKey[]> {
  if (applicationIds.length === 0) return [];
  return db.query<ApplicationKey>(
    `SELECT ${COLUMNS} FROM application_keys WHERE tenant_id = $1 AND application_id = ANY($2::uuid[]) ORDER BY created_at, id`,
    [tenantId, applicationIds],
    tx,
  );
}

export async function listKeys(
  db: Database,
  tenantId: string,
  applicationId: string,
  p: { limit: number; offset: number },
): Promise<{ rows: ApplicationKey[]; total: number }> {
  // The count and the page in one statement, so one snapshot: see src/db/offset-page.ts.
  return offsetPage<ApplicationKey>(db, {
    table: 'application_keys', columns: COLUMNS, where: 'tenant_id = $1 AND application_id = $2', params: [tenantId, applicationId], orderBy: ['created_at', 'id'], ...p,
  });
}

export async function findKey(db: Database, tenantId: string, applicationId: string, id: string): Promise<ApplicationKey | undefined> {
  return db.one<ApplicationKey>(
    `SELECT ${COLUMNS} FROM application_keys WHERE tenant_id = $1 AND application_id = $2 AND id = $3`,
    [tenantId, applicationId, id],
  );
}

export async function deleteKey(db: Database, tenantId: string, applicationId: string, id: string, tx?: Tx): Promise<boolean> {
  const rows = await db.query(
    `DELETE FROM application_keys WHERE tenant_id = $1 AND application_id = $2 AND id = $3 RETURNING id`,
    [tenantId, applicationId, id],
    tx,
  );
  return rows.length > 0;
}

export type KeyOwner = {
  key_id: string;
  tenant_id: string;
  application_id: string;
  type: ApplicationType;
  permissions: string[];
  rules: AccessRule[];
  expires_at: Date | null;
};

/** Authentication: the caller's tenant is what we are finding out, so this lookup is by hash alone. */
export async function findKeyOwnerByHash(db: Database, hash: Buffer): Promise<KeyOwner | undefined> {
  return db.one<KeyOwner>(
    `SELECT k.id AS key_id, a.tenant_id, a.id AS application_id, a.type, a.permissions, a.rules, a.expires_at
     FROM application_keys k JOIN applications a ON a.id = k.application_id AND a.tenant_id = k.tenant_id
     WHERE k.key_hash = $1`,
    [hash],
  );
}
