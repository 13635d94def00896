import type { Database, Tx } from '../../db/database.ts';
import type { Statement } from '../../db/group-commit.ts';

export type TokenIntentRow = {
  tenant_id: string;
  id: string;
  type: string;
  ciphertext: Buffer;
  data_key_id: string;
  details: Record<string, unknown>;
  fingerprint: string | null;
  extras: Record<string, unknown>;
  expires_at: Date;
  created_by: string | null;
  created_at: Date;
};

const COLUMNS = 'tenant_id, id, type, ciphertext, data_key_id, details, fingerprint, extras, expires_at, created_by, created_at';
// Unusable from its expiry instant, by the database clock (statement time: see tokens/store.ts).
const LIVE = 'expires_at > statement_timestamp()';

/**
 * The INSERT of a group commit's intents (src/db/group-commit.ts), one multi-row statement as
 * for tokens. Their times are the creating process's clock: nothing pages through intents by
 * creation time, and their expiry is computed from the same instant.
 */
export function insertTokenIntentsStatement(rows: (TokenIntentRow & { tenant_id: string })[]): Statement {
  return {
    sql: `INSERT INTO token_intents (tenant_id, id, type, ciphertext, data_key_id, details, fingerprint, extras, expires_at, created_by, created_at)
     SELECT tenant_id, id, type, decode(ciphertext, 'base64'), data_key_id, details, fingerprint, extras, expires_at, created_by, created_at
     FROM json_to_recordset($1::json) AS t (tenant_id uuid, id uuid, type text, ciphertext text, data_key_id uuid, details jsonb,
       fingerprint text, extras jsonb, expires_at timestamptz, created_by uuid, created_at timestamptz)`,
    params: [JSON.stringify(rows.map((r) => ({ ...r, ciphertext: r.ciphertext.toString('base64') })))],
  };
}

export function findTokenIntent(db: Database, tenantId: string, id: string, tx?: Tx): Promise<TokenIntentRow | undefined> {
  return db.one<TokenIntentRow>(`SELECT ${COLUMNS} FROM token_intents WHERE tenant_id = $1 AND id = $2 AND ${LIVE}`, [tenantId, id], tx);
}

/**
 * Deletes a live intent and returns it: the one step of both a deletion and a conversion, so
 * that of two at once only one finds it.
 */
export function takeTokenIntent(db: Database, tenantId: string, id: string, tx?: Tx): Promise<TokenIntentRow | undefined> {
  return db.one<TokenIntentRow>(`DELETE FROM token_intents WHERE tenant_id = $1 AND id = $2 AND ${LIVE} RETURNING ${COLUMNS}`, [tenantId, id], tx);
}

/** Removes up to `limit` expired intents; returns how many. */
export async function deleteExpiredTokenIntents(db: Database, limit: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM token_intents WHERE (tenant_id, id) IN (
       SELECT tenant_id, id FROM token_intents WHERE expires_at <= statement_timestamp() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING id`,
    [limit],
  );
  return rows.length;
}
