import type { TokenReach } from '../../access/evaluate.ts';
import { arrayLiteral } from '../../db/array-literal.ts';
import type { Database, Tx } from '../../db/database.ts';
import type { TenantKey } from '../../db/keyed-lookup.ts';
import type { Statement } from '../../db/group-commit.ts';
import { offsetPage } from '../../db/offset-page.ts';

export type TokenRow = {
  tenant_id: string;
  id: string;
  type: string;
  ciphertext: Buffer;
  data_key_id: string;
  containers: string[];
  metadata: Record<string, string>;
  mask: string | null;
  fingerprint: string | null;
  fingerprint_expression: string | null;
  search_indexes: string[];
  search_hashes: string[];
  deduplicate_token: boolean;
  views: Record<string, unknown> | null;
  expires_at: Date | null;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
};

const COLUMNS = `tenant_id, id, type, ciphertext, data_key_id, containers, metadata, mask, fingerprint, fingerprint_expression,
  search_indexes, search_hashes, deduplicate_token, views, expires_at, created_by, created_at, modified_by, modified_at`;

/**
 * What a use of a token's data reads (detokenize, reactors, proxies): its access check and its
 * data. The other columns (search values, views, fingerprints, and the metadata, author and
 * dates only the whole-token form `{{ token: <id> }}` shows, which reads the whole row
 * instead) are neither sent nor parsed on the hottest path.
 */
export type UsedTokenRow = Pick<TokenRow, 'tenant_id' | 'id' | 'type' | 'ciphertext' | 'data_key_id' | 'containers'>;
const USE_COLUMNS = 'tenant_id, id, type, ciphertext, data_key_id, containers';
// An expired token is unreadable from its expiry instant; the sweep deletes it later. The
// instant is the statement's, by the database clock (one clock for every process): now()
// would be the start of the transaction, and a request under an idempotency key (reactor or
// proxy code included) runs whole in one, reading tokens that expired since it began.
const LIVE = '(expires_at IS NULL OR expires_at > statement_timestamp())';
const EXPIRED = 'expires_at <= statement_timestamp()';

// The GIN indexes on search values and metadata hold only the rows that have some (migration
// 009): a condition on either states that as well, which it implies, so the planner uses them.
const INDEXED_SEARCH = `search_hashes <> '{}'`;
const metadataContains = (param: string) => `(metadata @> ${param}::jsonb AND metadata <> '{}'::jsonb)`;

export type NewToken = Omit<TokenRow, 'tenant_id' | 'created_at' | 'modified_by' | 'modified_at'>;

/**
 * The INSERT of many tokens (any tenants), for a group commit. The rows travel as one JSON
 * document, since their array columns (containers, search values) differ in length. It is
 * sent as `json`, not `jsonb`: read once into records, it need not be built into jsonb first
 * (whose key sorting and copying cost PostgreSQL ~6% of a created token's time). Only what
 * the database adds comes back (created_at): the rest is what was sent.
 */
export function insertTokensStatement(rows: (NewToken & { tenant_id: string })[]): Statement {
  return {
    sql: `INSERT INTO tokens (tenant_id, id, type, ciphertext, data_key_id, containers, metadata, mask, fingerprint, fingerprint_expression,
       search_indexes, search_hashes, deduplicate_token, views, expires_at, created_by)
     SELECT tenant_id, id, type, decode(ciphertext, 'base64'), data_key_id, containers, metadata, mask, fingerprint, fingerprint_expression,
       search_indexes, search_hashes, deduplicate_token, views, expires_at, created_by
     FROM json_to_recordset($1::json) AS t (tenant_id uuid, id text, type text, ciphertext text, data_key_id uuid, containers text[],
       metadata jsonb, mask text, fingerprint text, fingerprint_expression text, search_indexes text[], search_hashes text[],
       deduplicate_token boolean, views jsonb, expires_at timestamptz, created_by uuid)
     RETURNING tenant_id, id, created_at`,
    params: [JSON.stringify(rows.map((r) => ({ ...r, ciphertext: r.ciphertext.toString('base64') })))],
  };
}

/** The stored tokens, in the order of `rows`: each row as sent with its created_at from what insertTokensStatement returned. */
export function storedInOrder(rows: (NewToken & { tenant_id: string })[], returned: Record<string, unknown>[]): TokenRow[] {
  const createdAt = new Map(returned.map((r) => [`${r.tenant_id}/${r.id}`, r.created_at as Date]));
  return rows.map((r) => {
    const created_at = createdAt.get(`${r.tenant_id}/${r.id}`);
    if (!created_at) throw new Error(`token ${r.id} was not returned by its INSERT`);
    return { ...r, created_at, modified_by: null, modified_at: null };
  });
}

/**
 * Live tokens by (tenant, id) pairs of any tenants, in one statement; missing ones are simply
 * absent, and each token comes once however often its pair is given (concurrent uses of one
 * token share a batch: a proxy's credentials token may be in every call).
 */
export function findTokensByKeys(db: Database, keys: TenantKey[]): Promise<TokenRow[]> {
  return findByKeys<TokenRow>(db, COLUMNS, keys);
}

/** findTokensByKeys with only what a use reads. */
export function findUsedTokensByKeys(db: Database, keys: TenantKey[]): Promise<UsedTokenRow[]> {
  return findByKeys<UsedTokenRow>(db, USE_COLUMNS, keys);
}

function findByKeys<R extends UsedTokenRow>(db: Database, columns: string, keys: TenantKey[]): Promise<R[]> {
  const distinct = [...new Map(keys.map((k) => [`${k.tenantId}/${k.id}`, k])).values()];
  return db.query<R>(
    `SELECT ${columns} FROM unnest($1::uuid[], $2::text[]) AS k (tenant_id, id) JOIN tokens USING (tenant_id, id) WHERE ${LIVE}`,
    [arrayLiteral(distinct.map((k) => k.tenantId)), arrayLiteral(distinct.map((k) => k.id))],
  );
}

export async function updateToken(db: Database, tenantId: string, t: NewToken & { modified_by: string }, tx?: Tx): Promise<TokenRow | undefined> {
  return db.one<TokenRow>(
    `UPDATE tokens SET ciphertext = $3, data_key_id = $4, containers = $5, metadata = $6, mask = $7, fingerprint = $8,
       fingerprint_expression = $9, search_indexes = $10, search_hashes = $11, deduplicate_token = $12, views = $13,
       expires_at = $14, modified_by = $15, modified_at = now()
     WHERE tenant_id = $1 AND id = $2 AND ${LIVE} RETURNING ${COLUMNS}`,
    [tenantId, t.id, t.ciphertext, t.data_key_id, t.containers, JSON.stringify(t.metadata), t.mask, t.fingerprint,
      t.fingerprint_expression, t.search_indexes, t.search_hashes, t.deduplicate_token, t.views && JSON.stringify(t.views), t.expires_at, t.modified_by],
    tx,
  );
}

export async function findToken(db: Database, tenantId: string, id: string, tx?: Tx, lock = false): Promise<TokenRow | undefined> {
  return db.one<TokenRow>(`SELECT ${COLUMNS} FROM tokens WHERE tenant_id = $1 AND id = $2 AND ${LIVE}${lock ? ' FOR UPDATE' : ''}`, [tenantId, id], tx);
}

export async function findTokens(db: Database, tenantId: string, ids: string[]): Promise<TokenRow[]> {
  // One id (the common case) gets the primary-key plan; ANY() plans for many rows.
  if (ids.length === 1) return db.query<TokenRow>(`SELECT ${COLUMNS} FROM tokens WHERE tenant_id = $1 AND id = $2 AND ${LIVE}`, [tenantId, ids[0]]);
  return db.query<TokenRow>(`SELECT ${COLUMNS} FROM tokens WHERE tenant_id = $1 AND id = ANY($2::text[]) AND ${LIVE}`, [tenantId, ids]);
}

/**
 * The oldest live token of this type and fingerprint, made by the same fingerprint expression,
 * in exactly these containers (in any order). Equal fingerprints from different expressions
 * mean nothing: any expression can be written to render another token's canonical value.
 */
export async function findByFingerprint(
  db: Database,
  tenantId: string,
  t: { type: string; fingerprint: string; fingerprint_expression: string | null; containers: string[] },
  tx?: Tx,
): Promise<TokenRow | undefined> {
  return db.one<TokenRow>(
    `SELECT ${COLUMNS} FROM tokens WHERE tenant_id = $1 AND type = $2 AND fingerprint = $3 AND fingerprint_expression IS NOT DISTINCT FROM $5
       AND containers @> $4::text[] AND containers <@ $4::text[] AND ${LIVE} ORDER BY created_at LIMIT 1`,
    [tenantId, t.type, t.fingerprint, t.containers, t.fingerprint_expression],
    tx,
  );
}

/** Serialises deduplicating creates of one fingerprint until the transaction ends. */
export async function lockFingerprint(db: Database, tenantId: string, fingerprint: string, tx: Tx): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`${tenantId}/${fingerprint}`], tx);
}

export async function deleteToken(db: Database, tenantId: string, id: string, tx?: Tx): Promise<boolean> {
  return (await db.query(`DELETE FROM tokens WHERE tenant_id = $1 AND id = $2 AND ${LIVE} RETURNING id`, [tenantId, id], tx)).length > 0;
}

export type TokenFilter = {
  ids: string[];
  types: string[];
  container?: string;
  fingerprint?: string;
  metadata: Record<string, string>;
  /** The tokens the caller's permission reaches. */
  reach: TokenReach;
};

function where(tenantId: string, f: TokenFilter): { sql: string; params: unknown[] } {
  const params: unknown[] = [tenantId];
  const parts = ['tenant_id = $1', LIVE];
  const p = (v: unknown) => `$${params.push(v)}`;
  if (f.ids.length) parts.push(`id = ANY(${p(f.ids)}::text[])`);
  if (f.types.length) parts.push(`type = ANY(${p(f.types)}::text[])`);
  if (f.container) parts.push(`${p(f.container)} = ANY(containers)`);
  if (f.fingerprint) parts.push(`fingerprint = ${p(f.fingerprint)}`);
  if (Object.keys(f.metadata).length) parts.push(metadataContains(p(JSON.stringify(f.metadata))));
  if (f.reach !== 'all') {
    const underContainer = (prefix: string) => `EXISTS (SELECT 1 FROM unnest(containers) c WHERE starts_with(c, ${p(prefix)}))`;
    const rules = f.reach.map((r) => {
      if (!r.conditions) return underContainer(r.container!);
      return r.conditions
        .map((c) => {
          if (c.attribute === 'id') return c.operator === 'equals' ? `id = ${p(c.value)}` : `starts_with(id, ${p(c.value)})`;
          return c.operator === 'equals' ? `${p(c.value)} = ANY(containers)` : underContainer(c.value);
        })
        .join(' AND ');
    });
    parts.push(rules.length ? `((${rules.join(') OR (')}))` : 'false');
  }
  return { sql: parts.join(' AND '), params };
}

export async function listTokens(db: Database, tenantId: string, f: TokenFilter, page: { limit: number; offset: number }): Promise<{ rows: TokenRow[]; total: number }> {
  const w = where(tenantId, f);
  // The count and the page in one statement, so one snapshot: see src/db/offset-page.ts.
  return offsetPage<TokenRow>(db, { table: 'tokens', columns: COLUMNS, where: w.sql, params: w.params, orderBy: ['created_at', 'id'], ...page });
}

/** Cursor listing in (created_at, id) order; `after` is the position the previous page ended on. */
export async function listTokensAfter(
  db: Database,
  tenantId: string,
  f: TokenFilter,
  after: { created_at: string; id: string } | undefined,
  limit: number,
  extra?: { sql: string; params: unknown[] },
): Promise<TokenRow[]> {
  const w = where(tenantId, f);
  const params = [...w.params];
  let sql = w.sql;
  if (extra) {
    // The search compiler numbers its parameters from 1; shift them after ours.
    const shift = params.length;
    sql += ` AND (${extra.sql.replace(/\$(\d+)/g, (_, i) => `$${Number(i) + shift}`)})`;
    params.push(...extra.params);
  }
  if (after) {
    sql += ` AND (created_at, id) > ($${params.length + 1}::timestamptz, $${params.length + 2})`;
    params.push(after.created_at, after.id);
  }
  return db.query<TokenRow>(`SELECT ${COLUMNS} FROM tokens WHERE ${sql} ORDER BY created_at, id LIMIT $${params.length + 1}`, [...params, limit]);
}

/**
 * The expiry sweep works across tenants: deletes up to `limit` expired tokens, oldest expiry
 * first, passing over rows another process's sweep (or a create reusing the id) holds.
 */
export async function deleteExpiredTokens(db: Database, limit: number, tx: Tx): Promise<{ tenant_id: string; id: string; type: string }[]> {
  return db.query(
    `DELETE FROM tokens WHERE (tenant_id, id) IN (
       SELECT tenant_id, id FROM tokens WHERE ${EXPIRED} ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING tenant_id, id, type`,
    [limit],
    tx,
  );
}

/** Deletes the token only if it has expired; returns what it deleted. */
export async function deleteExpiredToken(db: Database, tenantId: string, id: string, tx?: Tx): Promise<{ id: string; type: string } | undefined> {
  return db.one(`DELETE FROM tokens WHERE tenant_id = $1 AND id = $2 AND ${EXPIRED} RETURNING id, type`, [tenantId, id], tx);
}

/** Compiles a parsed search (data values already hashed) to a parameterised condition. */
export function searchCondition(node: import('../../search/query.ts').SearchNode): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const p = (v: unknown) => `$${params.push(v)}`;
  const walk = (n: import('../../search/query.ts').SearchNode): string => {
    if (n.kind !== 'term') return `(${walk(n.left)} ${n.kind === 'and' ? 'AND' : 'OR'} ${walk(n.right)})`;
    switch (n.field) {
      case 'id':
        return `id = ${p(n.value)}`;
      case 'type':
        return `type = ${p(n.value)}`;
      case 'container':
        return `${p(n.value)} = ANY(containers)`;
      case 'fingerprint':
        return `fingerprint = ${p(n.value)}`;
      case 'data':
        return `(search_hashes @> ARRAY[${p(n.value)}]::text[] AND ${INDEXED_SEARCH})`;
      default:
        return metadataContains(p(JSON.stringify({ [n.field.slice('metadata.'.length)]: n.value })));
    }
  };
  return { sql: walk(node), params };
}
