import type { Database, Tx } from '../../db/database.ts';
import type { Statement } from '../../db/group-commit.ts';
import { arrayLiteral } from '../../db/array-literal.ts';
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

export type NewSession = Omit<SessionRow, 'created_at' | 'modified_by' | 'modified_at' | 'authentication' | 'challenge' | 'challenge_key_id' | 'status'>;

/** The INSERT of a group commit's new sessions (src/db/group-commit.ts): one multi-row statement. */
export function insertSessionsStatement(rows: NewSession[]): Statement {
  return {
    sql: `INSERT INTO threeds_sessions (tenant_id, id, type, token_id, token_intent_id, pan_token_id, card_brand, directory_server_id,
       device, device_info, version, method, provider, expires_at, created_by)
     SELECT tenant_id, id, type, token_id, token_intent_id, pan_token_id, card_brand, directory_server_id,
       device, device_info, version, method, provider, expires_at, created_by
     FROM json_to_recordset($1::json) AS t (tenant_id uuid, id uuid, type text, token_id text, token_intent_id uuid, pan_token_id text,
       card_brand text, directory_server_id text, device text, device_info jsonb, version jsonb, method jsonb, provider text,
       expires_at timestamptz, created_by uuid)`,
    params: [JSON.stringify(rows)],
  };
}

/** An authentication as a group commit writes it: the session's new state, and the row that lets it happen once. */
export type Authentication = {
  tenant_id: string;
  id: string;
  status: SessionStatus;
  authentication: AuthenticationResult;
  method: MethodState;
  challenge: Buffer | null;
  challenge_key_id: string | null;
  expires_at: Date;
  modified_by: string;
};

/**
 * The key of threeds_authentications fails the whole statement for a session authenticated
 * before (or twice in one batch), with its audit entry and event: a unique violation of
 * AUTHENTICATED_ONCE, which the service answers 409.
 */
export function insertAuthenticationsStatement(rows: Authentication[]): Statement {
  return {
    sql: `INSERT INTO threeds_authentications (tenant_id, session_id)
     SELECT tenant_id, id FROM json_to_recordset($1::json) AS t (tenant_id uuid, id uuid)`,
    params: [JSON.stringify(rows.map((r) => ({ tenant_id: r.tenant_id, id: r.id })))],
  };
}
export const AUTHENTICATED_ONCE = 'threeds_authentications_pkey';

export function updateAuthenticatedStatement(rows: Authentication[]): Statement {
  return {
    sql: `UPDATE threeds_sessions s SET status = t.status, authentication = t.authentication, method = t.method,
       challenge = decode(t.challenge, 'base64'), challenge_key_id = t.challenge_key_id, expires_at = t.expires_at,
       modified_by = t.modified_by, modified_at = date_trunc('milliseconds', clock_timestamp())
     FROM json_to_recordset($1::json) AS t (tenant_id uuid, id uuid, status text, authentication jsonb, method jsonb, challenge text,
       challenge_key_id uuid, expires_at timestamptz, modified_by uuid)
     WHERE s.tenant_id = t.tenant_id AND s.id = t.id`,
    params: [JSON.stringify(rows.map((r) => ({ ...r, challenge: r.challenge?.toString('base64') ?? null })))],
  };
}

/** A live session of the tenant; `lock` takes it FOR UPDATE, in `tx`, for a change that depends on what it holds. */
export function findSession(db: Database, tenantId: string, id: string, opts: { lock?: boolean } = {}, tx?: Tx): Promise<SessionRow | undefined> {
  return db.one<SessionRow>(
    `SELECT ${COLUMNS} FROM threeds_sessions WHERE tenant_id = $1 AND id = $2 AND ${LIVE}${opts.lock ? ' FOR UPDATE' : ''}`,
    [tenantId, id],
    tx,
  );
}

const QUALIFIED = COLUMNS.replace(/\b(\w+)\b/g, 's.$1');

/** Live sessions by key, in one statement: for the coalesced reads of concurrent requests (any tenants). */
export function findSessionsByKeys(db: Database, keys: { tenantId: string; id: string }[]): Promise<SessionRow[]> {
  return db.query<SessionRow>(
    `SELECT ${QUALIFIED} FROM unnest($1::uuid[], $2::uuid[]) AS k (tenant_id, id)
     JOIN threeds_sessions s ON s.tenant_id = k.tenant_id AND s.id = k.id WHERE s.${LIVE}`,
    [arrayLiteral(keys.map((k) => k.tenantId)), arrayLiteral(keys.map((k) => k.id))],
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
