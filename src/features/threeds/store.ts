import type { Database, Tx } from '../../db/database.ts';
import type { AuthenticationResult, VersionInfo } from '../../threeds/index.ts';

export type SessionStatus = 'created' | 'challenge' | 'completed';
export type MethodState = { method_url?: string; method_completion_indicator?: 'Y' | 'N' | 'U' };

export type SessionRow = {
  tenant_id: string;
  id: string;
  type: 'customer' | 'merchant';
  token_id: string | null;
  token_intent_id: string | null;
  pan_token_id: string | null;
  card_brand: string;
  directory_server_id: string;
  device: 'browser' | 'mobile' | null;
  device_info: Record<string, unknown> | null;
  version: VersionInfo;
  method: MethodState;
  authentication: AuthenticationResult | null;
  /** The sealed ChallengeState (never shown); with the data key that sealed it. */
  challenge: Buffer | null;
  challenge_key_id: string | null;
  status: SessionStatus;
  provider: string;
  expires_at: Date;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
};

const COLUMNS = `tenant_id, id, type, token_id, token_intent_id, pan_token_id, card_brand, directory_server_id, device, device_info,
  version, method, authentication, challenge, challenge_key_id, status, provider, expires_at, created_by, created_at, modified_by, modified_at`;
// Unusable from its expiry instant, by the database clock, as tokens and intents.
const LIVE = 'expires_at > statement_timestamp()';

export async function insertSession(db: Database, row: Omit<SessionRow, 'created_at' | 'modified_by' | 'modified_at' | 'authentication' | 'challenge' | 'challenge_key_id' | 'status'>, tx?: Tx): Promise<SessionRow> {
  const [created] = await db.query<SessionRow>(
    `INSERT INTO threeds_sessions (tenant_id, id, type, token_id, token_intent_id, pan_token_id, card_brand, directory_server_id,
       device, device_info, version, method, provider, expires_at, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     RETURNING ${COLUMNS}`,
    [
      row.tenant_id, row.id, row.type, row.token_id, row.token_intent_id, row.pan_token_id, row.card_brand, row.directory_server_id,
      row.device, row.device_info === null ? null : JSON.stringify(row.device_info), JSON.stringify(row.version), JSON.stringify(row.method),
      row.provider, row.expires_at, row.created_by,
    ],
    tx,
  );
  return created;
}

/** A live session of the tenant; `lock` takes it FOR UPDATE, in `tx`, for a change that depends on what it holds. */
export function findSession(db: Database, tenantId: string, id: string, opts: { lock?: boolean } = {}, tx?: Tx): Promise<SessionRow | undefined> {
  return db.one<SessionRow>(
    `SELECT ${COLUMNS} FROM threeds_sessions WHERE tenant_id = $1 AND id = $2 AND ${LIVE}${opts.lock ? ' FOR UPDATE' : ''}`,
    [tenantId, id],
    tx,
  );
}

/**
 * A live session by its id alone, for the pages a browser opens with no API key (the ACS
 * challenge page, the Method and challenge notifications). The id is the session's secret
 * there: a random UUID only the requestor's page and Coffer hold, checked against what the
 * request carries besides (the ACS transaction id of a CReq or CRes). Tenant scoping is the
 * rule everywhere else; the row it returns names its tenant for every later step.
 */
export function findSessionById(db: Database, id: string, opts: { lock?: boolean } = {}, tx?: Tx): Promise<SessionRow | undefined> {
  return db.one<SessionRow>(`SELECT ${COLUMNS} FROM threeds_sessions WHERE id = $1 AND ${LIVE}${opts.lock ? ' FOR UPDATE' : ''}`, [id], tx);
}

/** Records a completed 3DS Method once, while the session awaits it; undefined when it was not awaiting it. */
export function recordMethodCompletion(db: Database, tenantId: string, id: string, tx?: Tx): Promise<SessionRow | undefined> {
  return db.one<SessionRow>(
    `UPDATE threeds_sessions SET method = method || '{"method_completion_indicator":"Y"}'::jsonb
     WHERE tenant_id = $1 AND id = $2 AND ${LIVE} AND status = 'created'
       AND method ? 'method_url' AND NOT method ? 'method_completion_indicator'
     RETURNING ${COLUMNS}`,
    [tenantId, id],
    tx,
  );
}

export type SessionChange = {
  status: SessionStatus;
  authentication: AuthenticationResult;
  method?: MethodState;
  /** The sealed ChallengeState and its data key; null clears them. */
  challenge?: { sealed: Buffer; keyId: string } | null;
  expires_at?: Date;
  /** Null for a change no API key made (the cardholder on the ACS page, the decoupled-completion job). */
  modified_by: string | null;
};

/** Applies an authentication or challenge step to a session locked with findSession(…, { lock: true }). */
export async function updateSession(db: Database, tenantId: string, id: string, change: SessionChange, tx: Tx): Promise<SessionRow> {
  const keep = change.challenge === undefined;
  const [row] = await db.query<SessionRow>(
    `UPDATE threeds_sessions SET status = $3, authentication = $4, method = coalesce($5::jsonb, method),
       challenge = CASE WHEN $6 THEN challenge ELSE $7::bytea END,
       challenge_key_id = CASE WHEN $6 THEN challenge_key_id ELSE $8::uuid END,
       expires_at = coalesce($9::timestamptz, expires_at),
       modified_by = $10, modified_at = date_trunc('milliseconds', clock_timestamp())
     WHERE tenant_id = $1 AND id = $2
     RETURNING ${COLUMNS}`,
    [
      tenantId, id, change.status, JSON.stringify(change.authentication), change.method ? JSON.stringify(change.method) : null,
      keep, change.challenge?.sealed ?? null, change.challenge?.keyId ?? null, change.expires_at ?? null, change.modified_by,
    ],
    tx,
  );
  return row;
}

/** Removes up to `limit` expired sessions; returns how many. */
export async function deleteExpiredSessions(db: Database, limit: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM threeds_sessions WHERE (tenant_id, id) IN (
       SELECT tenant_id, id FROM threeds_sessions WHERE expires_at <= statement_timestamp() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING id`,
    [limit],
  );
  return rows.length;
}
