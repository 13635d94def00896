import type { Database, Tx } from '../../db/database.ts';
import type { Statement } from '../../db/group-commit.ts';
import type { TenantKey } from '../../db/keyed-lookup.ts';
import { arrayLiteral } from '../../db/array-literal.ts';
import type { AuthenticationResult, VersionInfo } from '../../threeds/index.ts';

export type SessionStatus = 'created' | 'challenge' | 'completed';
export type MethodState = { method_url?: string; method_completion_indicator?: 'Y' | 'N' | 'U' };

/** A session with its authentication (threeds_authentications), as the service reads it. */
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
  /** Once authenticated, with the method_completion_indicator the AReq carried. */
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

/** The columns of a SessionRow, from `s` (threeds_sessions) and `a` (its authentication, or nulls). */
const COLUMNS = `s.tenant_id, s.id, s.type, s.token_id, s.token_intent_id, s.pan_token_id, s.card_brand, s.directory_server_id, s.device,
  s.device_info, s.version,
  CASE WHEN a.method_completion_indicator IS NULL THEN s.method
       ELSE s.method || jsonb_build_object('method_completion_indicator', a.method_completion_indicator) END AS method,
  a.authentication, a.challenge, a.challenge_key_id, coalesce(a.status, 'created') AS status, s.provider, s.expires_at, s.created_by,
  s.created_at, a.modified_by, a.modified_at`;
// Unusable from its expiry instant, by the database clock, as tokens and intents.
const LIVE = 's.expires_at > statement_timestamp()';
const JOINED = 'threeds_sessions s LEFT JOIN threeds_authentications a ON a.tenant_id = s.tenant_id AND a.session_id = s.id';

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

/** An authentication as a group commit writes it (the session's status, result, challenge). */
export type Authentication = {
  tenant_id: string;
  session_id: string;
  status: 'challenge' | 'completed';
  authentication: AuthenticationResult;
  method_completion_indicator: 'Y' | 'N' | 'U';
  challenge: Buffer | null;
  challenge_key_id: string | null;
  modified_by: string;
};

/**
 * The INSERT of a group commit's authentications. Its key fails the whole statement for a
 * session authenticated before (or twice in one batch), with its audit entry and event: a
 * unique violation of AUTHENTICATED_ONCE, which the service answers 409.
 */
export function insertAuthenticationsStatement(rows: Authentication[]): Statement {
  return {
    sql: `INSERT INTO threeds_authentications (tenant_id, session_id, status, authentication, method_completion_indicator, challenge,
       challenge_key_id, modified_by)
     SELECT tenant_id, session_id, status, authentication, method_completion_indicator, decode(challenge, 'base64'), challenge_key_id, modified_by
     FROM json_to_recordset($1::json) AS t (tenant_id uuid, session_id uuid, status text, authentication jsonb, method_completion_indicator text,
       challenge text, challenge_key_id uuid, modified_by uuid)`,
    params: [JSON.stringify(rows.map((r) => ({ ...r, challenge: r.challenge?.toString('base64') ?? null })))],
  };
}
export const AUTHENTICATED_ONCE = 'threeds_authentications_pkey';

/**
 * Live sessions by key, in one statement: for the coalesced reads of concurrent requests (any
 * tenants). Each key is looked up on its own (LATERAL … OFFSET 0, which the planner may not
 * flatten into a join): a plan made while the table was small would otherwise hash-join the
 * whole table, and keep doing so as it grows.
 */
export function findSessionsByKeys(db: Database, keys: TenantKey[]): Promise<SessionRow[]> {
  return db.query<SessionRow>(
    `SELECT ${COLUMNS} FROM unnest($1::uuid[], $2::uuid[]) AS k (tenant_id, id)
     CROSS JOIN LATERAL (SELECT * FROM threeds_sessions x WHERE x.tenant_id = k.tenant_id AND x.id = k.id OFFSET 0) s
     LEFT JOIN LATERAL (SELECT * FROM threeds_authentications y WHERE y.tenant_id = s.tenant_id AND y.session_id = s.id OFFSET 0) a ON true
     WHERE ${LIVE}`,
    [arrayLiteral(keys.map((k) => k.tenantId)), arrayLiteral(keys.map((k) => k.id))],
  );
}

/**
 * A live session of the tenant. `lock`: an authenticated one only, its authentication taken
 * FOR UPDATE in `tx`, for a step of its challenge.
 */
export function findSession(db: Database, tenantId: string, id: string, opts: { lock?: boolean } = {}, tx?: Tx): Promise<SessionRow | undefined> {
  return db.one<SessionRow>(
    opts.lock
      ? `SELECT ${COLUMNS} FROM ${JOINED.replace('LEFT JOIN', 'JOIN')} WHERE s.tenant_id = $1 AND s.id = $2 AND ${LIVE} FOR UPDATE OF a`
      : `SELECT ${COLUMNS} FROM ${JOINED} WHERE s.tenant_id = $1 AND s.id = $2 AND ${LIVE}`,
    [tenantId, id],
    tx,
  );
}

/**
 * A live session by its id alone, for the pages a browser opens with no API key (the ACS
 * challenge page, the Method and challenge notifications). The id is the session's secret
 * there: a random UUID only the requestor's page and Coffer hold, checked against what the
 * request carries besides (the ACS transaction id of a CReq or CRes). Tenant scoping is the
 * rule everywhere else; the row it returns names its tenant for every later step. `lock` as
 * for findSession.
 */
export function findSessionById(db: Database, id: string, opts: { lock?: boolean } = {}, tx?: Tx): Promise<SessionRow | undefined> {
  return db.one<SessionRow>(
    opts.lock
      ? `SELECT ${COLUMNS} FROM ${JOINED.replace('LEFT JOIN', 'JOIN')} WHERE s.id = $1 AND ${LIVE} FOR UPDATE OF a`
      : `SELECT ${COLUMNS} FROM ${JOINED} WHERE s.id = $1 AND ${LIVE}`,
    [id],
    tx,
  );
}

/** Records a completed 3DS Method once, while the session awaits it; false when it was not awaiting it (or not authenticated). */
export async function recordMethodCompletion(db: Database, tenantId: string, id: string, tx?: Tx): Promise<boolean> {
  const rows = await db.query(
    `UPDATE threeds_sessions s SET method = method || '{"method_completion_indicator":"Y"}'::jsonb
     WHERE s.tenant_id = $1 AND s.id = $2 AND ${LIVE} AND s.method ? 'method_url' AND NOT s.method ? 'method_completion_indicator'
       AND NOT EXISTS (SELECT 1 FROM threeds_authentications a WHERE a.tenant_id = $1 AND a.session_id = $2)
     RETURNING s.id`,
    [tenantId, id],
    tx,
  );
  return rows.length > 0;
}

export type ChallengeChange = {
  status: 'challenge' | 'completed';
  authentication: AuthenticationResult;
  challenge: { sealed: Buffer; keyId: string };
  /** Null: no API key made it (the cardholder on the ACS page, the decoupled-completion job). */
  modified_by: string | null;
};

/** A step of a session's challenge, on an authentication locked with findSession(…, { lock: true }). */
export async function updateChallenge(db: Database, tenantId: string, id: string, change: ChallengeChange, tx: Tx): Promise<void> {
  await db.query(
    `UPDATE threeds_authentications SET status = $3, authentication = $4, challenge = $5, challenge_key_id = $6, modified_by = $7,
       modified_at = date_trunc('milliseconds', clock_timestamp())
     WHERE tenant_id = $1 AND session_id = $2`,
    [tenantId, id, change.status, JSON.stringify(change.authentication), change.challenge.sealed, change.challenge.keyId, change.modified_by],
    tx,
  );
}

/** Moves a session's expiry later (a decoupled challenge's deadline), never earlier. */
export async function extendSession(db: Database, tenantId: string, id: string, until: Date, tx: Tx): Promise<void> {
  await db.query('UPDATE threeds_sessions SET expires_at = greatest(expires_at, $3) WHERE tenant_id = $1 AND id = $2', [tenantId, id, until], tx);
}

/** Removes up to `limit` expired sessions, with their authentications; returns how many. */
export async function deleteExpiredSessions(db: Database, limit: number): Promise<number> {
  const [{ n }] = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM threeds_sessions WHERE (tenant_id, id) IN (
         SELECT tenant_id, id FROM threeds_sessions WHERE expires_at <= statement_timestamp() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING tenant_id, id),
     authentications AS (
       DELETE FROM threeds_authentications a USING gone WHERE a.tenant_id = gone.tenant_id AND a.session_id = gone.id)
     SELECT count(*)::int AS n FROM gone`,
    [limit],
  );
  return n;
}
