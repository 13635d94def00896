import type { Database, Tx } from '../../db/database.ts';
import { offsetPage } from '../../db/offset-page.ts';

export type RequestTransform = { code: string };
export type ResponseTransform =
  | { type: 'code'; code: string }
  | { type: 'mask'; matcher: 'regex'; replacement: string; expression: string }
  | { type: 'mask'; matcher: 'chase_stratus_pan'; replacement: string };

export type ProxyRow = {
  id: string;
  tenant_id: string;
  name: string;
  destination_url: string;
  require_auth: boolean;
  request_transform: RequestTransform | null;
  response_transform: ResponseTransform | null;
  application_id: string | null;
  /** Sealed {key, configuration}: the invocation key and the secrets map. */
  secret_ciphertext: Buffer;
  secret_key_id: string;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
};

export type ProxyFields = Pick<ProxyRow, 'name' | 'destination_url' | 'require_auth' | 'request_transform' | 'response_transform' | 'application_id' | 'secret_ciphertext' | 'secret_key_id'>;

const COLUMNS = `id, tenant_id, name, destination_url, require_auth, request_transform, response_transform, application_id,
  secret_ciphertext, secret_key_id, created_by, created_at, modified_by, modified_at`;

export async function insertProxy(
  db: Database,
  tenantId: string,
  p: ProxyFields & { id: string; key_hash: Buffer; created_by: string | null },
  tx?: Tx,
): Promise<ProxyRow> {
  const row = await db.one<ProxyRow>(
    `INSERT INTO proxies (id, tenant_id, name, key_hash, secret_ciphertext, secret_key_id, destination_url, require_auth,
       request_transform, response_transform, application_id, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${COLUMNS}`,
    [p.id, tenantId, p.name, p.key_hash, p.secret_ciphertext, p.secret_key_id, p.destination_url, p.require_auth,
      json(p.request_transform), json(p.response_transform), p.application_id, p.created_by],
    tx,
  );
  return row!;
}

/** With `lock`, the row stays locked until tx ends (read-modify-write of a PATCH). */
export async function findProxy(db: Database, tenantId: string, id: string, tx?: Tx, lock = false): Promise<ProxyRow | undefined> {
  return db.one<ProxyRow>(`SELECT ${COLUMNS} FROM proxies WHERE tenant_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [tenantId, id], tx);
}

/** Invocation: the key names the proxy (and so the tenant). */
export async function findProxyByKeyHash(db: Database, keyHash: Buffer): Promise<ProxyRow | undefined> {
  return db.one<ProxyRow>(`SELECT ${COLUMNS} FROM proxies WHERE key_hash = $1`, [keyHash]);
}

/** `namePattern` is a LIKE pattern (already escaped), matched case-insensitively. */
export async function listProxies(
  db: Database,
  tenantId: string,
  f: { ids: string[]; namePattern?: string; limit: number; offset: number },
): Promise<{ rows: ProxyRow[]; total: number }> {
  const where = `tenant_id = $1 AND (cardinality($2::uuid[]) = 0 OR id = ANY($2::uuid[])) AND ($3::text IS NULL OR name ILIKE $3 ESCAPE '\\')`;
  // The count and the page in one statement, so one snapshot: see src/db/offset-page.ts.
  return offsetPage<ProxyRow>(db, { table: 'proxies', columns: COLUMNS, where, params: [tenantId, f.ids, f.namePattern ?? null], orderBy: ['created_at', 'id'], limit: f.limit, offset: f.offset });
}

export async function updateProxy(
  db: Database,
  tenantId: string,
  id: string,
  p: ProxyFields & { modified_by: string },
  tx?: Tx,
): Promise<ProxyRow | undefined> {
  return db.one<ProxyRow>(
    `UPDATE proxies SET name = $3, destination_url = $4, require_auth = $5, request_transform = $6, response_transform = $7,
       application_id = $8, secret_ciphertext = $9, secret_key_id = $10, modified_by = $11, modified_at = now()
     WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, id, p.name, p.destination_url, p.require_auth, json(p.request_transform), json(p.response_transform),
      p.application_id, p.secret_ciphertext, p.secret_key_id, p.modified_by],
    tx,
  );
}

export async function deleteProxy(db: Database, tenantId: string, id: string, tx?: Tx): Promise<ProxyRow | undefined> {
  return db.one<ProxyRow>(`DELETE FROM proxies WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`, [tenantId, id], tx);
}

/** jsonb parameters go as text: pg would send a JS array as a PostgreSQL array. */
function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
