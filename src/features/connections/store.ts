import type { Database, Tx } from '../../db/database.ts';
import { offsetPage } from '../../db/offset-page.ts';

export type ConnectionRow = {
  tenant_id: string;
  id: string;
  name: string;
  processor: string;
  settings: Record<string, unknown>;
  credentials: Buffer;
  credentials_key_id: string;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date;
  deleted_at: Date | null;
};

const COLUMNS = 'tenant_id, id, name, processor, settings, credentials, credentials_key_id, created_by, created_at, modified_by, modified_at, deleted_at';

export async function insertConnection(db: Database, row: Omit<ConnectionRow, 'created_at' | 'modified_at' | 'deleted_at' | 'modified_by'>, tx?: Tx): Promise<ConnectionRow> {
  return (await db.one<ConnectionRow>(
    `INSERT INTO connections (tenant_id, id, name, processor, settings, credentials, credentials_key_id, created_by, modified_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING ${COLUMNS}`,
    [row.tenant_id, row.id, row.name, row.processor, row.settings, row.credentials, row.credentials_key_id, row.created_by],
    tx,
  ))!;
}

/**
 * A connection, also a deleted one when `withDeleted` (its transactions still capture, void and
 * refund through it); `lock` takes the row for the rest of `tx`.
 */
export function findConnection(db: Database, tenantId: string, id: string, opts: { withDeleted?: boolean; tx?: Tx; lock?: boolean } = {}): Promise<ConnectionRow | undefined> {
  const live = opts.withDeleted ? '' : ' AND deleted_at IS NULL';
  return db.one<ConnectionRow>(
    `SELECT ${COLUMNS} FROM connections WHERE tenant_id = $1 AND id = $2${live}${opts.lock ? ' FOR UPDATE' : ''}`,
    [tenantId, id],
    opts.tx,
  );
}

export async function updateConnection(
  db: Database,
  tenantId: string,
  id: string,
  fields: Pick<ConnectionRow, 'name' | 'settings' | 'credentials' | 'credentials_key_id' | 'modified_by'>,
  tx: Tx,
): Promise<ConnectionRow> {
  return (await db.one<ConnectionRow>(
    `UPDATE connections SET name = $3, settings = $4, credentials = $5, credentials_key_id = $6, modified_by = $7,
       modified_at = date_trunc('milliseconds', clock_timestamp())
     WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, id, fields.name, fields.settings, fields.credentials, fields.credentials_key_id, fields.modified_by],
    tx,
  ))!;
}

/** Marks a live connection deleted; returns it, or undefined when there is none. */
export function deleteConnection(db: Database, tenantId: string, id: string, by: string | null, tx: Tx): Promise<ConnectionRow | undefined> {
  return db.one<ConnectionRow>(
    `UPDATE connections SET deleted_at = clock_timestamp(), modified_by = $3, modified_at = date_trunc('milliseconds', clock_timestamp())
     WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    [tenantId, id, by],
    tx,
  );
}

export function listConnections(db: Database, tenantId: string, f: { limit: number; offset: number }): Promise<{ rows: ConnectionRow[]; total: number }> {
  return offsetPage<ConnectionRow>(db, {
    table: 'connections', columns: COLUMNS, where: 'tenant_id = $1 AND deleted_at IS NULL', params: [tenantId], orderBy: ['created_at', 'id'], ...f,
  });
}
