import type { Database, Tx } from '../../db/database.ts';
import { offsetPage } from '../../db/offset-page.ts';
import type { Statement } from '../../db/group-commit.ts';

/** A reactor as stored: its configuration sealed under the tenant's data key. */
export type ReactorRow = {
  id: string;
  tenant_id: string;
  name: string;
  code: string;
  configuration_ciphertext: Buffer;
  configuration_key_id: string;
  application_id: string | null;
  version: number;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
};

const COLUMNS = `id, tenant_id, name, code, configuration_ciphertext, configuration_key_id, application_id, version,
  created_by, created_at, modified_by, modified_at`;

export async function insertReactor(
  db: Database,
  tenantId: string,
  r: Pick<ReactorRow, 'id' | 'name' | 'code' | 'configuration_ciphertext' | 'configuration_key_id' | 'application_id' | 'created_by'>,
  tx?: Tx,
): Promise<ReactorRow> {
  const row = await db.one<ReactorRow>(
    `INSERT INTO reactors (id, tenant_id, name, code, configuration_ciphertext, configuration_key_id, application_id, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [r.id, tenantId, r.name, r.code, r.configuration_ciphertext, r.configuration_key_id, r.application_id, r.created_by],
    tx,
  );
  return row!;
}

export async function findReactor(db: Database, tenantId: string, id: string, tx?: Tx, lock = false): Promise<ReactorRow | undefined> {
  return db.one<ReactorRow>(`SELECT ${COLUMNS} FROM reactors WHERE tenant_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [tenantId, id], tx);
}

/** `namePattern` is a LIKE pattern built by the service from the caller's wildcard. */
export async function listReactors(
  db: Database,
  tenantId: string,
  f: { ids: string[]; namePattern?: string; limit: number; offset: number },
): Promise<{ rows: ReactorRow[]; total: number }> {
  const where = `tenant_id = $1 AND (cardinality($2::uuid[]) = 0 OR id = ANY($2::uuid[])) AND ($3::text IS NULL OR name ILIKE $3)`;
  // The count and the page in one statement, so one snapshot: see src/db/offset-page.ts.
  return offsetPage<ReactorRow>(db, { table: 'reactors', columns: COLUMNS, where, params: [tenantId, f.ids, f.namePattern ?? null], orderBy: ['created_at', 'id'], limit: f.limit, offset: f.offset });
}

export async function updateReactor(
  db: Database,
  tenantId: string,
  r: Pick<ReactorRow, 'id' | 'name' | 'code' | 'configuration_ciphertext' | 'configuration_key_id' | 'application_id'> & { modified_by: string },
  tx?: Tx,
): Promise<ReactorRow | undefined> {
  return db.one<ReactorRow>(
    `UPDATE reactors SET name = $3, code = $4, configuration_ciphertext = $5, configuration_key_id = $6, application_id = $7,
       modified_by = $8, modified_at = now(), version = version + 1
     WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, r.id, r.name, r.code, r.configuration_ciphertext, r.configuration_key_id, r.application_id, r.modified_by],
    tx,
  );
}

/** The deleted reactor's id as stored (the caller's may differ in case), or undefined when there was none. */
export async function deleteReactor(db: Database, tenantId: string, id: string, tx?: Tx): Promise<string | undefined> {
  return (await db.one<{ id: string }>(`DELETE FROM reactors WHERE tenant_id = $1 AND id = $2 RETURNING id`, [tenantId, id], tx))?.id;
}

export type ReactorResultRow = {
  id: string;
  reactor_id: string;
  /** The application or session that started the run (its principal's actor id); null for results kept before migration 013. */
  started_by: string | null;
  status: 'pending' | 'completed' | 'failed';
  ciphertext: Buffer | null;
  data_key_id: string | null;
};

export async function insertPendingResult(db: Database, tenantId: string, r: { id: string; reactor_id: string; started_by: string }, tx?: Tx): Promise<void> {
  await db.query(
    `INSERT INTO reactor_results (id, tenant_id, reactor_id, started_by, status) VALUES ($1, $2, $3, $4, 'pending')`,
    [r.id, tenantId, r.reactor_id, r.started_by],
    tx,
  );
}

export async function completeResult(
  db: Database,
  tenantId: string,
  r: { id: string; status: 'completed' | 'failed'; ciphertext: Buffer; data_key_id: string },
  tx?: Tx,
): Promise<boolean> {
  const rows = await db.query(
    `UPDATE reactor_results SET status = $3, ciphertext = $4, data_key_id = $5, completed_at = now()
     WHERE tenant_id = $1 AND id = $2 AND status = 'pending' RETURNING id`,
    [tenantId, r.id, r.status, r.ciphertext, r.data_key_id],
    tx,
  );
  return rows.length > 0;
}

export async function findResult(db: Database, tenantId: string, reactorId: string, id: string): Promise<ReactorResultRow | undefined> {
  return db.one<ReactorResultRow>(
    `SELECT id, reactor_id, started_by, status, ciphertext, data_key_id FROM reactor_results WHERE tenant_id = $1 AND reactor_id = $2 AND id = $3`,
    [tenantId, reactorId, id],
  );
}

/** Results are kept for `days`; the sweep works across tenants, each row carrying its own. */
export async function deleteOldResultsAcrossTenants(db: Database, days: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM reactor_results WHERE id IN (SELECT id FROM reactor_results WHERE created_at < now() - make_interval(days => $1) LIMIT 5000) RETURNING id`,
    [days],
  );
  return rows.length;
}

/**
 * A run's result as a group commit writes it: pending from a synchronous run's first call out
 * (its request id is then on record in reactor.invoked), then settled.
 */
export type ResultWrite = Pick<ReactorResultRow, 'id' | 'reactor_id' | 'status' | 'ciphertext' | 'data_key_id'> & { tenant_id: string; started_by: string };

/**
 * The INSERT of results (any tenants), for a group commit. A settled result takes the place of
 * the pending row its run wrote earlier, never of one already settled (nor of another tenant's
 * or reactor's row). A run's pending and settled rows are never in one batch: it settles only
 * once its pending row is written.
 */
export function insertResultsStatement(rows: ResultWrite[]): Statement {
  return {
    sql: `INSERT INTO reactor_results AS r (id, tenant_id, reactor_id, started_by, status, ciphertext, data_key_id, completed_at)
     SELECT id, tenant_id, reactor_id, started_by, status, ciphertext, data_key_id, CASE WHEN status = 'pending' THEN NULL ELSE now() END
     FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::bytea[], $7::uuid[]) AS t (id, tenant_id, reactor_id, started_by, status, ciphertext, data_key_id)
     ON CONFLICT (id) DO UPDATE SET status = excluded.status, ciphertext = excluded.ciphertext, data_key_id = excluded.data_key_id, completed_at = excluded.completed_at
     WHERE r.status = 'pending' AND r.tenant_id = excluded.tenant_id AND r.reactor_id = excluded.reactor_id`,
    params: [
      rows.map((r) => r.id),
      rows.map((r) => r.tenant_id),
      rows.map((r) => r.reactor_id),
      rows.map((r) => r.started_by),
      rows.map((r) => r.status),
      rows.map((r) => r.ciphertext),
      rows.map((r) => r.data_key_id),
    ],
  };
}
