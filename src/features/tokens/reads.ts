import type { Item } from '../../db/group-commit.ts';
import { accessTo, reachOf } from '../../access/evaluate.ts';
import type { Principal } from '../../access/principal.ts';
import { isContainer, type Transform } from '../../access/rules.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { type ShownData } from '../../http/idempotency.ts';
import { cursorPage, decodeCursor, offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import { mapTerms, parseSearchQuery, SearchQueryError } from '../../search/query.ts';
import type { AuditEntry } from '../logs/service.ts';
import { listTokens, listTokensAfter, searchCondition, type TokenFilter, type TokenRow } from './store.ts';
import type { ListQuery, TokenCore, TokenView, UsedTokenView } from './service.ts';
import { CONTAINER_MESSAGE } from './prepare.ts';
import { revealAllowed } from '../members/roles.ts';

/** token:read (POST /detokenize), or token:use (reactors, proxies). */
type UsePermission = 'token:read' | 'token:use';
type UseOptions = { deferAudit?: Item[]; pathsOf?: (id: string) => string[]; whole?: boolean };

/**
 * Reading tokens: one by id, lists and search (each token shown through the transform the
 * caller's rules give it, reveals audited), the checks before data shown once is shown again,
 * and tokens resolved for a use of their data inside Coffer.
 */
export function createTokenReads(core: TokenCore) {
  const { db, vault, logs, load, loadForUse, permitted, view } = core;

  async function listFilter(principal: Principal, q: ListQuery): Promise<TokenFilter> {
    // A path no token can be in would match nothing, silently: say why instead, as a create would.
    if (q.container !== undefined && !isContainer(q.container)) throw ApiError.field('query.container', CONTAINER_MESSAGE);
    // Without a prototype, so `metadata.__proto__` is a key like any other, not a filter silently dropped.
    const metadata: Record<string, string> = Object.create(null);
    for (const [key, value] of Object.entries(q)) if (key.startsWith('metadata.')) metadata[key.slice(9)] = value as string;
    return { ids: q.id, types: q.type, container: q.container, fingerprint: q.fingerprint, metadata, reach: reachOf(principal, 'token:read') };
  }

  /** Rows with the transform the caller reads (or searches) them with; any the permission does not reach drop out. */
  async function readable(principal: Principal, rows: TokenRow[], permission: 'token:read' | 'token:search' = 'token:read'): Promise<TokenView[]> {
    const out: TokenView[] = [];
    for (const row of rows) {
      const transform = accessTo(principal, permission, row);
      if (transform) out.push(await view(principal, row, transform));
    }
    await logReveals(principal, out, permission === 'token:search' ? 'search' : 'read');
    return out;
  }

  async function logReveals(principal: Principal, views: TokenView[], operation: string): Promise<void> {
    const revealed = views.filter((v) => v.transform === 'reveal');
    await logs.useMany(principal, revealed.map((v) => revealEntry(v.row.id, operation)));
  }

  /**
   * One cursor page of the rows matching f (and the search condition), shown per `permission`,
   * the permission f's reach was computed for. `startField` names the cursor
   * in errors: `query.start` for listing, `body.start` for search.
   */
  async function cursorList(
    principal: Principal,
    f: TokenFilter,
    page: { start: string | null | undefined; size: number; startField: string; permission: 'token:read' | 'token:search' },
    extra?: { sql: string; params: unknown[] },
  ) {
    const { start, size, startField, permission } = page;
    const badCursor = () => ApiError.field(startField, 'is not a cursor returned by this endpoint');
    let after: Record<string, string> | undefined;
    try {
      after = start ? decodeCursor(start, ['created_at', 'id']) : undefined;
    } catch {
      throw badCursor();
    }
    if (after && !isCursorPosition(after)) throw badCursor();
    const rows = await listTokensAfter(db, principal.tenantId, f, after as { created_at: string; id: string } | undefined, size + 1, extra);
    const result = cursorPage(rows, size, (last) => ({ created_at: last.created_at.toISOString(), id: last.id }));
    return { pagination: result.pagination, data: await readable(principal, result.data, permission) };
  }

  /**
   * Before token data shown once (a stored reply, a reactor run's kept result) is shown again:
   * every token must still be live, and the caller's access to it as it was, or `refused` is
   * thrown. An entry without access (data another principal read, such as a reactor's `bt`)
   * only needs its token to exist. The showing is audited as the first was: a use again for
   * token:use, a read for data revealed by the other permissions.
   */
  async function checkShown(principal: Principal, shown: ShownData[], refused: (tokenId: string, gone: boolean) => ApiError): Promise<void> {
    const rows = new Map((await load(principal.tenantId, [...new Set(shown.map((s) => s.tokenId))])).map((r) => [r.id, r]));
    for (const { tokenId, access } of shown) {
      const row = rows.get(tokenId);
      if (!row) throw refused(tokenId, true);
      if (access.some((a) => (accessTo(principal, a.permission, row) ?? 'none') !== a.transform)) throw refused(tokenId, false);
    }
    const entries: AuditEntry[] = [];
    for (const { tokenId, access } of shown) {
      const use = access.find((a) => a.permission === 'token:use');
      if (use) entries.push({ entityType: 'token', entityId: tokenId, operation: 'use', message: `Token detokenized (${use.transform}), shown again` });
      else if (access.length > 0 && access.every((a) => a.transform === 'reveal')) entries.push(revealEntry(tokenId, 'read'));
    }
    await logs.useMany(principal, entries);
  }

  /**
   * Loads tokens for detokenization (token:read), reactors and proxies (token:use): every
   * id must exist (400 naming it) and be permitted (403). Each use is audit-logged before
   * this resolves, or, given `deferAudit`, its audit entries are added there for the caller
   * to write before the data leaves Coffer. `pathsOf` names the fields that refer to an id,
   * for the 400 of an unknown one. `whole` reads the whole rows, for the whole-token form;
   * without it, only what a use of the data needs.
   */
  function resolveForUse(principal: Principal, ids: string[], permission: UsePermission, opts: UseOptions & { whole: true }): Promise<Map<string, TokenView>>;
  function resolveForUse(principal: Principal, ids: string[], permission: UsePermission, opts?: UseOptions): Promise<Map<string, UsedTokenView>>;
  async function resolveForUse(principal: Principal, ids: string[], permission: UsePermission, opts: UseOptions = {}): Promise<Map<string, UsedTokenView>> {
    const { deferAudit, pathsOf = () => ['body'] } = opts;
    const unique = ids.length === 1 ? ids : [...new Set(ids)];
    const rows = opts.whole ? await load(principal.tenantId, unique) : await loadForUse(principal.tenantId, unique);
    // Every id found is the common case: which are missing is worked out only when some are.
    if (rows.length < unique.length) {
      const found = new Set(rows.map((r) => r.id));
      const missing = unique.filter((id) => !found.has(id));
      const errors = new FieldErrorList();
      for (const id of missing) for (const path of pathsOf(id)) errors.add(path, `token "${id}" not found`);
      throw new ApiError(400, `token ${missing.map((m) => `"${m}"`).join(', ')} not found`, errors.errors);
    }
    const out = new Map<string, UsedTokenView>();
    for (const row of rows) out.set(row.id, await view(principal, row, permitted(principal, permission, row)));
    const operation = permission === 'token:use' ? 'use' : 'detokenize';
    const entries: AuditEntry[] = [];
    for (const v of out.values()) entries.push({ entityType: 'token', entityId: v.row.id, operation, message: `Token detokenized (${v.transform})` });
    // The caller writes them itself, before any of the data leaves Coffer (reactors).
    if (deferAudit) for (const e of entries) deferAudit.push(logs.item(principal, e));
    else await logs.useMany(principal, entries);
    return out;
  }

  return {

    /**
     * One token as the caller's rules show it, or — `reveal`, for a signed-in OWNER or ADMIN
     * member, whose rules mask — in plaintext, audited as a reveal like any read of plaintext.
     */
    async get(principal: Principal, id: string, opts: { reveal?: boolean } = {}): Promise<TokenView> {
      if (opts.reveal) checkReveal(principal);
      const [row] = await load(principal.tenantId, [id]);
      if (!row) throw ApiError.notFound('token');
      if (opts.reveal && accessTo(principal, 'token:read', row)) {
        const v = await view(principal, row, 'reveal');
        await logReveals(principal, [v], 'reveal');
        return v;
      }
      const [v] = await readable(principal, [row]);
      if (!v) throw ApiError.forbidden(`The API key lacks token:read on the container of token ${id}.`);
      return v;
    },

    async list(principal: Principal, q: ListQuery & Offset) {
      const { rows, total } = await listTokens(db, principal.tenantId, await listFilter(principal, q), offsetOf(q));
      return offsetPage(await readable(principal, rows), total, q);
    },

    async listV2(principal: Principal, q: ListQuery & { start?: string; size: number }) {
      return cursorList(principal, await listFilter(principal, q), { start: q.start, size: q.size, startField: 'query.start', permission: 'token:read' });
    },

    async search(principal: Principal, body: { query: string; start?: string | null; size: number }) {
      let tree;
      try {
        tree = parseSearchQuery(body.query);
      } catch (err) {
        if (err instanceof SearchQueryError) throw ApiError.field('body.query', err.message);
        throw err;
      }
      const hashed = await mapTerms(tree, async (field, value) => (field === 'data' ? vault.hmac(principal.tenantId, 'search', value) : value));
      const filter: TokenFilter = { ids: [], types: [], metadata: {}, reach: reachOf(principal, 'token:search') };
      // Results are shown per token:search, the permission that chose them: a key may search a
      // container it cannot read with token:read.
      return cursorList(principal, filter, { start: body.start, size: body.size, startField: 'body.start', permission: 'token:search' }, searchCondition(hashed));
    },

    /**
     * Before a stored idempotent reply is shown again: every token whose data it shows must
     * still be live, and the caller's access to it as it was (a 409 otherwise). The showing
     * is audited as the first was.
     */
    checkReplay(principal: Principal, shown: ShownData[]): Promise<void> {
      return checkShown(principal, shown, (tokenId, gone) => ApiError.conflict(
        `The reply stored for this SVC-IDEMPOTENCY-KEY shows the data of token ${tokenId}, which ${gone ? 'no longer exists' : 'the API key may no longer see as it did'}: it is not shown again. Send the request with a new key.`,
      ));
    },

    checkShown,

    resolveForUse,

    /**
     * One token named by id for a use of its data inside Coffer (an enrichment), checked as
     * resolveForUse checks token:use, but an unknown id (or another tenant's) is 404 as on every
     * route about one token. `check` sees the token and the transform token:use gives it, before
     * anything is decrypted, and may refuse the use (throw). The use's audit entry (operation
     * `use`, saying `purpose`) is added to `audit`, for the caller to write once the request is
     * certain to use the data and before the data leaves Coffer.
     */
    async useOne(
      principal: Principal,
      id: string,
      use: { purpose: string; audit: Item[]; check?: (row: TokenRow, transform: Transform) => void },
    ): Promise<TokenView> {
      const [row] = await load(principal.tenantId, [id]);
      if (!row) throw ApiError.notFound('token');
      const transform = permitted(principal, 'token:use', row);
      use.check?.(row, transform);
      const v = await view(principal, row, transform);
      use.audit.push(logs.item(principal, { entityType: 'token', entityId: row.id, operation: 'use', message: `Token used for ${use.purpose} (${transform})` }));
      return v;
    },
  };
}

/** The audit entry of token data shown in plaintext (a read, a search, a replay of either). */
/**
 * `?reveal=true` is the console's explicit "show the plaintext": only a member whose role
 * allows it may ask. An application key sees what its rules' transforms give, always.
 */
function checkReveal(principal: Principal): void {
  if (principal.kind !== 'member') throw ApiError.field('query.reveal', 'is for signed-in members: an API key sees token data as its access rules\' transforms give it');
  if (!revealAllowed(principal.member?.role ?? '')) throw ApiError.forbidden(`The member's role (${principal.member?.role}) may not reveal token data: ask an ADMIN or the OWNER.`);
}

export function revealEntry(tokenId: string, operation: string): AuditEntry {
  return { entityType: 'token', entityId: tokenId, operation, message: `Token data revealed (${operation})` };
}

/**
 * A cursor holds what cursorPage wrote: created_at exactly as toISOString prints it and an id
 * of the form TokenId allows. Anything else is a forged cursor, refused before it reaches SQL.
 */
function isCursorPosition(after: Record<string, string>): boolean {
  const at = after.created_at;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(at)) return false;
  const time = Date.parse(at);
  return time >= 0 && new Date(time).toISOString() === at && /^[A-Za-z0-9_.-]{1,200}$/.test(after.id);
}
