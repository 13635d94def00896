import { Coalescer } from '../../db/coalescer.ts';
import type { Database, Tx } from '../../db/database.ts';
import type { GroupCommit, Item } from '../../db/group-commit.ts';
import { isUniqueViolation } from '../../db/database.ts';
import { uuidv7 } from '../../db/ids.ts';
import type { Logger } from '../../logger.ts';
import { accessTo, reachOf } from '../../access/evaluate.ts';
import type { Principal } from '../../access/principal.ts';
import { isContainer, type Transform } from '../../access/rules.ts';
import { bringsExpiryForward, checkMove, TRANSFORM_RANK, unreachable, vouchedSight, widensAudience } from './moves.ts';
import { evaluate, ExpressionError, MAX_GROWTH, type Scope } from '../../expressions/index.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { childPath } from '../../http/field-path.ts';
import { noteShownData, type ShownData } from '../../http/idempotency.ts';
import { applyMergePatch } from '../../http/merge-patch.ts';
import { cursorPage, decodeCursor, offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import { TokenBuckets } from '../../http/rate-limit.ts';
import { compileValidator } from '../../http/validate.ts';
import { mapTerms, parseSearchQuery, SearchQueryError } from '../../search/query.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import { TOKEN_TYPES } from '../../vault/token-types.ts';
import type { EventService } from '../events/service.ts';
import type { TokenIntentService } from '../token-intents/service.ts';
import type { Actor, AuditEntry, LogService } from '../logs/service.ts';
import { CreateTokenBody, MAX_METADATA_KEYS } from './schema.ts';
import {
  deleteExpiredToken,
  deleteExpiredTokens,
  deleteToken,
  findByFingerprint,
  findToken,
  findTokens,
  findTokensByKeys,
  insertTokensStatement,
  storedInOrder,
  listTokens,
  listTokensAfter,
  lockFingerprint,
  searchCondition,
  updateToken,
  type NewToken,
  type TokenFilter,
  type TokenRow,
} from './store.ts';

export type TokenInput = {
  id?: string;
  type: string;
  data: unknown;
  containers?: string[];
  metadata?: Record<string, string>;
  mask?: unknown;
  fingerprint_expression?: string | null;
  search_indexes?: string[];
  deduplicate_token?: boolean;
  expires_at?: string | null;
  /** Set by Coffer, never by a caller: what a token made from a token intent carries over (tsp_details). */
  extras?: Record<string, unknown>;
};
/** A create request as callers send it: `type` and `data`, or the `token_intent_id` that supplies both. */
export type TokenRequest = Omit<TokenInput, 'type' | 'data' | 'extras'> & { type?: string; data?: unknown; token_intent_id?: string };
export type TokenPatch = Partial<Omit<TokenInput, 'id' | 'type' | 'metadata' | 'search_indexes' | 'extras'>> & {
  metadata?: Record<string, string | null> | null;
  search_indexes?: string[] | null;
};

/**
 * A token as a caller may see it: `data` is present only when the transform allows;
 * `withheld`, shown only as a reference (id, type, containers), not what the token holds;
 * `noFingerprint`, shown without its fingerprint (to keys held by clients, see clientHeld).
 */
export type TokenView = { row: TokenRow; data?: unknown; transform: Transform; withheld?: boolean; noFingerprint?: boolean };
/** Where an API request comes from: its client address, for the rate of public keys' token creation. */
export type Origin = { ip: string };
/** What the ciphertext holds: the data and the mask rendered from it at write time. */
type Secret = { data: unknown; mask?: unknown };

type ListQuery = { id: string[]; type: string[]; container?: string; fingerprint?: string } & Record<string, unknown>;

export type TokenService = ReturnType<typeof createTokenService>;

export function createTokenService(deps: {
  db: Database;
  groupCommit: GroupCommit;
  vault: Vault;
  logs: LogService;
  events: EventService;
  intents: TokenIntentService;
  log: Logger;
  /**
   * The tenant's keys that may reach a token in some of `containers` otherwise than in the
   * rest (its applications, and sessions with rules on those containers): whom a move between
   * them must not show more of the token.
   */
  audience: (tenantId: string, containers: string[]) => Promise<Principal[]>;
  /** Tokens a minute keys held by clients may create: each from one client address, and each in all. 0: no limit. */
  clientCreates: { rate: number; burst: number; keyRate: number; keyBurst: number };
}) {
  const { db, groupCommit, vault, logs, events, log } = deps;
  const createsFromAddress = new TokenBuckets(deps.clientCreates.rate / 60, deps.clientCreates.burst);
  const createsOfKey = new TokenBuckets(deps.clientCreates.keyRate / 60, deps.clientCreates.keyBurst);
  const tokenTable = groupCommit.table<NewToken & { tenant_id: string }, TokenRow>('tokens', { insert: insertTokensStatement, results: storedInOrder });
  // Reads outside a transaction: concurrent lookups of any tenants share one SELECT.
  const loader = new Coalescer<{ tenantId: string; id: string }, TokenRow | undefined>(
    async (keys) => {
      const rows = await findTokensByKeys(db, keys);
      const byKey = new Map(rows.map((r) => [`${r.tenant_id}/${r.id}`, r]));
      return keys.map((k) => byKey.get(`${k.tenantId}/${k.id}`));
    },
    { maxBatch: 256, maxInFlight: 4, isolateFailures: false },
  );

  /** Live tokens by id: in the ambient transaction when there is one, otherwise through the shared lookup. */
  async function load(tenantId: string, ids: string[]): Promise<TokenRow[]> {
    if (db.inTransaction()) return findTokens(db, tenantId, ids);
    const rows = await Promise.all(ids.map((id) => loader.submit({ tenantId, id })));
    return rows.filter((r) => r !== undefined);
  }

  /**
   * Validates and prepares everything a token row needs; `at` prefixes error field paths.
   * `previous` and `previousData`: the token a patch changes, and its data before the patch.
   */
  async function prepare(
    principal: Principal,
    input: TokenInput,
    at: string,
    previous?: TokenRow,
    previousData?: unknown,
  ): Promise<{ row: NewToken; secret: Secret }> {
    const type = TOKEN_TYPES[input.type];
    const errors = new FieldErrorList();
    const data = type.validate(input.data, `${at}.data`, errors, previousData);
    const containers = input.containers ?? previous?.containers ?? [type.container];
    const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now()) errors.add(`${at}.expires_at`, 'must be in the future');
    // An offset can carry 9999-12-31 into year 10000, which the database cannot be sent.
    else if (expiresAt && expiresAt.getUTCFullYear() > 9999) errors.add(`${at}.expires_at`, 'must be no later than 9999-12-31T23:59:59.999Z');
    const metadata = input.metadata ?? previous?.metadata ?? {};
    // The schema bounds a created token's metadata; a merge patch can add keys to what is there.
    if (Object.keys(metadata).length > MAX_METADATA_KEYS) errors.add(`${at}.metadata`, `must have at most ${MAX_METADATA_KEYS} keys`);
    if (input.mask !== undefined) checkMask(input.mask, `${at}.mask`, errors);
    errors.throwIfAny();

    const maskSpec = input.mask === undefined ? (previous ? parseMask(previous.mask) : type.mask) : input.mask;
    const fingerprintExpression = input.fingerprint_expression === undefined ? (previous ? previous.fingerprint_expression : type.fingerprint) : input.fingerprint_expression;
    const searchIndexes = input.search_indexes ?? previous?.search_indexes ?? [];
    const extras = input.extras ?? (previous?.views?._extras as Record<string, unknown> | undefined);
    // One growth budget for the token's mask, fingerprint and search indexes together.
    const scope: Scope = { variables: { data }, hmacKey: await vault.expressionKeys(principal.tenantId), growth: { left: MAX_GROWTH } };

    const mask = maskSpec === null ? undefined : renderMask(maskSpec, scope, `${at}.mask`, { left: MASK_LIMITS.rendered, root: `${at}.mask` });
    const canonical = fingerprintExpression === null ? null : text(expression(fingerprintExpression, scope, `${at}.fingerprint_expression`));
    const fingerprint = canonical ? await vault.hmac(principal.tenantId, `fingerprint:${input.type}`, canonical) : null;
    const hashes: string[] = [];
    for (const [i, source] of searchIndexes.entries()) {
      const value = text(expression(source, scope, childPath(`${at}.search_indexes`, i)));
      if (value) hashes.push(await vault.hmac(principal.tenantId, 'search', value));
    }
    // Time-ordered, so the primary key grows at its right edge (docs/decisions.md, "Tokens").
    const id = previous?.id ?? input.id ?? uuidv7();
    const secret: Secret = mask === undefined ? { data } : { data, mask };
    const { ciphertext, dataKeyId } = await vault.encrypt(principal.tenantId, id, secret);
    return {
      secret,
      row: {
        id,
        type: input.type,
        ciphertext,
        data_key_id: dataKeyId,
        containers,
        metadata,
        mask: maskSpec === null ? null : JSON.stringify(maskSpec),
        fingerprint,
        fingerprint_expression: fingerprintExpression,
        search_indexes: searchIndexes,
        search_hashes: [...new Set(hashes)],
        deduplicate_token: input.deduplicate_token ?? previous?.deduplicate_token ?? false,
        // Beside the views, as what the API shows but never evaluates: not part of the data.
        views: extras && Object.keys(extras).length > 0 ? { ...(type.views?.(data) ?? {}), _extras: extras } : (type.views?.(data) ?? null),
        expires_at: input.expires_at === undefined ? (previous?.expires_at ?? null) : expiresAt,
        created_by: previous ? previous.created_by : principal.actorId,
      },
    };
  }

  function permitted(principal: Principal, permission: string, token: { id: string; containers: string[] }): Transform {
    const transform = accessTo(principal, permission, token);
    if (!transform) throw ApiError.forbidden(`The API key lacks ${permission} on the container of token ${token.id}.`);
    return transform;
  }

  async function open(row: TokenRow): Promise<Secret> {
    return (await vault.decrypt(row.tenant_id, row.id, row.ciphertext, row.data_key_id)) as Secret;
  }

  /** Applies a transform: reveal → data, mask → the rendered mask (or nothing), redact → nothing. */
  function visible(secret: Secret, transform: Transform): unknown {
    if (transform === 'reveal') return secret.data;
    if (transform === 'mask') return secret.mask;
    return undefined;
  }

  /** The token as `principal` sees it through `transform`. */
  async function view(principal: Principal, row: TokenRow, transform: Transform, secret?: Secret): Promise<TokenView> {
    const shown: TokenView = transform === 'redact' ? { row, transform } : { row, transform, data: visible(secret ?? (await open(row)), transform) };
    if (clientHeld(principal)) shown.noFingerprint = true;
    return shown;
  }

  /**
   * Creation by keys held by clients is rate limited per key and per (key, client address),
   * `count` tokens at a time, before any work: a guess costs a token whoever else may see its
   * fingerprint (docs/vault.md). Requests without an origin (reactor code) are not counted.
   */
  function admitCreate(principal: Principal, origin: Origin | undefined, count: number): void {
    if (!origin || !clientHeld(principal)) return;
    const key = `${principal.tenantId}\u0000${principal.keyId ?? principal.actorId}`;
    const fromAddress = `${key}\u0000${origin.ip}`;
    const now = Date.now();
    const wait = Math.max(createsOfKey.wait(key, now, count), createsFromAddress.wait(fromAddress, now, count));
    if (wait > 0) {
      const limited = new ApiError(429, `Too many tokens created with this API key; retry in ${wait} s.`);
      limited.retryAfterSeconds = wait;
      throw limited;
    }
    createsOfKey.take(key, now, count);
    createsFromAddress.take(fromAddress, now, count);
  }

  /**
   * A create request as a token: given `type` and `data`, as it is; given `token_intent_id`,
   * the intent's type and data (a card's CVC dropped: it is for one payment, not to keep), the
   * intent taken in `tx` so that it converts once, and its conversion recorded there too.
   */
  async function createFrom(principal: Principal, request: TokenRequest, at: string, tx?: Tx): Promise<TokenView> {
    const { token_intent_id: intentId, ...rest } = request;
    const errors = new FieldErrorList();
    if (intentId === undefined) {
      if (rest.type === undefined) errors.add(`${at}.type`, 'is required (or token_intent_id)');
      if (rest.data === undefined) errors.add(`${at}.data`, 'is required (or token_intent_id)');
      errors.throwIfAny();
      return createIn(principal, rest as TokenInput, at, tx);
    }
    for (const field of ['type', 'data'] as const) {
      if (rest[field] !== undefined) errors.add(`${at}.${field}`, 'must not be given with token_intent_id: the token takes its type and data from the intent');
    }
    errors.throwIfAny();
    const convert = async (t: Tx) => {
      const { row, data } = await deps.intents.take(principal, intentId, `${at}.token_intent_id`, t);
      const made = await createIn(principal, { ...rest, type: row.type, data: withoutCvc(data), extras: row.extras }, at, t, true);
      await deps.intents.converted(principal, row, made.row.id, t);
      return made;
    };
    return tx ? convert(tx) : db.transaction(convert);
  }

  /**
   * One token: the checks, then its row, its audit entry and token.created as one write. A
   * create that reads first (deduplication, a caller-chosen id) runs in `tx`, as does each
   * token of a tokenize; without `tx` the write is group-committed with other requests'
   * (src/db/group-commit.ts), or joins the ambient transaction.
   */
  async function createIn(principal: Principal, input: TokenInput, at: string, tx?: Tx, fromIntent = false): Promise<TokenView> {
    const inTx = (): Tx => {
      if (!tx) throw new Error('a create that reads first needs a transaction');
      return tx;
    };
    const containers = input.containers ?? [TOKEN_TYPES[input.type].container];
    checkContainers(containers, `${at}.containers`);
    // Each container, not one of them: otherwise a key confined to /browser/ (a public key, in
    // every browser) could put tokens into any container by naming /browser/ as well.
    const denied = unreachable(principal, 'token:create', input.id ?? '', containers);
    if (denied.length) throw ApiError.forbidden(`The API key lacks token:create on ${denied.join(', ')}.`);
    const transform = permitted(principal, 'token:create', { id: input.id ?? '', containers });
    const { row, secret } = await prepare(principal, input, at);
    if (row.deduplicate_token && row.fingerprint) {
      await lockFingerprint(db, principal.tenantId, row.fingerprint, inTx());
      // Only a token in the same containers: one elsewhere is not what the caller asked for, and
      // answering with it (or a 403 for it) would tell a caller confined to one container
      // whether a value exists in another.
      const existing = await findByFingerprint(
        db,
        principal.tenantId,
        { type: row.type, fingerprint: row.fingerprint, fingerprint_expression: row.fingerprint_expression, containers: row.containers },
        inTx(),
      );
      // Found, but not a token the caller may create, it is as good as absent: a 409 naming it,
      // or a 403, would tell a key whose rules reach tokens by id (a session's conditions, which
      // need not name containers) that the value exists in a container it cannot see, and its id.
      // So is one a key held by clients may not read: a public key is in every browser, and the
      // id it would learn is all it needs to update, move or use a token made by someone else.
      const createTransform = existing && accessTo(principal, 'token:create', existing);
      const answerable = createTransform && (!clientHeld(principal) || accessTo(principal, 'token:read', existing));
      if (existing && createTransform && answerable) {
        // The caller named the token it wants: answering with another id would leave it looking up one that does not exist.
        if (input.id !== undefined && existing.id !== input.id) {
          throw ApiError.conflict(`A token with the same fingerprint already exists, with id "${existing.id}"; deduplicate_token returns it only to a create that names that id or none.`);
        }
        // A token intent brings what the token should now hold (a new expiry, a wallet's
        // cryptogram): it is merged into the token found, as an update by the caller.
        if (fromIntent) return updateIn(principal, existing.id, { data: input.data, metadata: input.metadata, expires_at: input.expires_at, extras: input.extras }, inTx());
        return deduplicated(principal, existing, createTransform, inTx());
      }
    }
    // An expired token is gone from its expiry instant, so its id is free: finish that expiry
    // now, as the sweep would, rather than answer 409 for a token no one can see.
    if (input.id !== undefined) await finishExpiry(principal.tenantId, row.id, inTx());
    // No savepoint: a clash aborts the whole request anyway (tokenize is all or nothing).
    const [stored] = (await groupCommit.write([
      tokenTable.of({ ...row, tenant_id: principal.tenantId }),
      logs.item(principal, { entityType: 'token', entityId: row.id, operation: 'create', message: `Token created (${row.type})` }),
      events.item(principal.tenantId, 'token.created', row.id, eventPayload(row)),
    ], tx).catch((err: unknown) => {
      throw isUniqueViolation(err) ? ApiError.conflict(`A token with id "${row.id}" already exists.`) : err;
    })) as [TokenRow];
    return view(principal, stored, transform, secret);
  }

  /**
   * The token a deduplicating create found. It may hold more than the request did (another
   * expiry, a cvc, metadata), which token:create alone does not entitle anyone to read: it is
   * shown as the caller may read it, never more than its create transform, and to a caller
   * without token:read on it only as a reference.
   */
  async function deduplicated(principal: Principal, existing: TokenRow, create: Transform, tx: Tx): Promise<TokenView> {
    const read = accessTo(principal, 'token:read', existing);
    if (!read) return { row: existing, transform: 'redact', withheld: true };
    const shown = await view(principal, existing, TRANSFORM_RANK[read] < TRANSFORM_RANK[create] ? read : create);
    if (shown.data !== undefined) {
      noteShownData({ tokenId: existing.id, access: [{ permission: 'token:create', transform: create }, { permission: 'token:read', transform: read }] });
    }
    // It may show data the request did not send (a cvc, another expiry): a read like any other.
    if (shown.transform === 'reveal') {
      await logs.record(principal, revealEntry(existing.id, 'read'), tx);
    }
    return shown;
  }

  /** Deletes the token if it has expired, with its audit entry and token.expired event. */
  async function finishExpiry(tenantId: string, id: string, tx: Tx): Promise<boolean> {
    const gone = await deleteExpiredToken(db, tenantId, id, tx);
    if (!gone) return false;
    const system: Actor = { kind: 'system', tenantId };
    await logs.record(system, { entityType: 'token', entityId: id, operation: 'expire', message: 'Token expired and was deleted' }, tx);
    await events.emit(tenantId, 'token.expired', id, { id, type: gone.type }, tx);
    return true;
  }

  /**
   * A move may show the tenant's other keys no more of the token than they see where it is,
   * beyond what the caller itself reads of it there: whoever reads the data revealed could
   * hand it on anyway, but a key that cannot (a public key, whatever its rules, or one that
   * sees the mask) must not make the token readable to others by moving it, e.g. from
   * /pci/high/ into a container every application reveals. Judged permission by permission
   * (SHOWING in ./moves.ts) for every application of the tenant and every session with a rule on one of
   * the containers, by the transform alone: none and redact show no data alike.
   */
  async function checkAudience(principal: Principal, token: TokenRow, to: string[]): Promise<void> {
    const from = token.containers;
    if (to.length === from.length && to.every((c) => from.includes(c))) return;
    const vouched = vouchedSight(principal, token);
    if (vouched === TRANSFORM_RANK.reveal) return;
    const others = await deps.audience(principal.tenantId, [...new Set([...from, ...to])]);
    if (widensAudience(others, token, to, vouched)) {
      throw ApiError.forbidden(
        `Moving token ${token.id} to ${to.join(', ')} would let other keys of the tenant see more of its data than they do where it is, ` +
          `and more than this API key itself reads of it: only a key that reads the data so may make such a move.`,
      );
    }
  }

  async function updateIn(principal: Principal, id: string, patch: TokenPatch & { extras?: Record<string, unknown> }, tx: Tx): Promise<TokenView> {
    const current = await findToken(db, principal.tenantId, id, tx, true);
    if (!current) throw ApiError.notFound('token');
    const access = permitted(principal, 'token:update', current);
    // Merge patch all the way down (RFC 7386): an object mask merges into the mask (null
    // removes a member); anything else replaces it. Null search_indexes removes them.
    const mask = patch.mask === undefined ? undefined : applyMergePatch(parseMask(current.mask), patch.mask);
    const changes: TokenPatch = { ...patch, mask, search_indexes: patch.search_indexes === null ? [] : patch.search_indexes };
    // Masks, fingerprints and search values are computed from the plaintext, so whoever
    // redefines them can read it back (a mask of `{{ data }}`, or a digit at a time through
    // fingerprints or search): changing them takes reveal on the token, not just update.
    if (access !== 'reveal' && redefinesExpressions(changes, current)) {
      throw ApiError.forbidden(`Changing the mask, fingerprint_expression or search_indexes of token ${id} needs token:update with the reveal transform.`);
    }
    // Each container guards the token: a key that holds token:update on one of them only
    // may change its metadata, not rewrite the data the others' keys rely on.
    if (changes.data !== undefined) {
      const denied = unreachable(principal, 'token:update', id, current.containers);
      if (denied.length) throw ApiError.forbidden(`Rewriting the data of token ${id} needs token:update on every container it is in; the API key lacks it on ${denied.join(', ')}.`);
    }
    if (changes.containers) {
      checkContainers(changes.containers, 'body.containers');
      checkMove(principal, current, changes.containers);
      await checkAudience(principal, current, changes.containers);
    }
    const transform = permitted(principal, 'token:update', { id, containers: changes.containers ?? current.containers });
    // An expiry deletes the token: bringing it forward (or setting one) is a deletion put off.
    if (bringsExpiryForward(changes.expires_at, current.expires_at)) {
      const scopes = changes.containers ? [current, { id, containers: changes.containers }] : [current];
      if (scopes.some((scope) => !accessTo(principal, 'token:delete', scope))) {
        throw ApiError.forbidden(`Setting or bringing forward the expiry of token ${id} needs token:delete on it: the token is deleted when it expires.`);
      }
    }
    const secret = await open(current);
    const data = changes.data === undefined ? secret.data : applyMergePatch(secret.data, changes.data);
    const metadata = changes.metadata === undefined ? current.metadata : (applyMergePatch(current.metadata, changes.metadata ?? {}) as Record<string, string>);
    const input: TokenInput = {
      type: current.type,
      data,
      containers: changes.containers,
      metadata: changes.metadata === null ? {} : metadata,
      mask: changes.mask,
      fingerprint_expression: changes.fingerprint_expression,
      search_indexes: changes.search_indexes ?? undefined,
      deduplicate_token: changes.deduplicate_token,
      expires_at: changes.expires_at,
    };
    const prepared = await prepare(principal, input, 'body', current, secret.data);
    const updated = await updateToken(db, principal.tenantId, { ...prepared.row, modified_by: principal.actorId }, tx);
    if (!updated) throw ApiError.notFound('token');
    await logs.record(principal, { entityType: 'token', entityId: id, operation: 'update', message: 'Token updated' }, tx);
    await events.emit(principal.tenantId, 'token.updated', id, eventPayload(updated), tx);
    const shown = await view(principal, updated, transform, prepared.secret);
    // The merged data holds more than the patch sent.
    if (shown.data !== undefined) noteShownData({ tokenId: id, access: [{ permission: 'token:update', transform }] });
    return shown;
  }

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

  return {
    /** `origin`: where an API request came from (none for reactor code), for admitCreate. */
    create(principal: Principal, input: TokenRequest, origin?: Origin): Promise<TokenView> {
      admitCreate(principal, origin, 1);
      const readsFirst = input.id !== undefined || input.deduplicate_token === true;
      return readsFirst ? db.transaction((tx) => createFrom(principal, input, 'body', tx)) : createFrom(principal, input, 'body');
    },

    /** Every leaf of the body that looks like a token request becomes a token; all or nothing. */
    tokenize(principal: Principal, body: unknown, present: (v: TokenView) => unknown, origin?: Origin): Promise<unknown> {
      // Counted before anything is made: a document over the limit costs no work, nor a transaction.
      const count = countTokenRequests(body, MAX_TOKENIZE + 1);
      if (count === 0) throw ApiError.field('body', 'contains no token request (objects with "type" and "data")');
      if (count > MAX_TOKENIZE) throw ApiError.field('body', `at most ${MAX_TOKENIZE} tokens per tokenize request`);
      admitCreate(principal, origin, count);
      return db.transaction(async (tx) => {
        const walk = async (node: unknown, at: string): Promise<unknown> => {
          if (isTokenRequest(node)) return present(await createFrom(principal, validTokenRequest(node, at), at, tx));
          if (Array.isArray(node)) {
            const out = [];
            for (const [i, item] of node.entries()) out.push(await walk(item, childPath(at, i)));
            return out;
          }
          if (node !== null && typeof node === 'object') {
            const out: Record<string, unknown> = {};
            for (const [k, v] of Object.entries(node)) out[k] = await walk(v, childPath(at, k));
            return out;
          }
          return node;
        };
        return walk(body, 'body');
      });
    },

    async get(principal: Principal, id: string): Promise<TokenView> {
      const [row] = await load(principal.tenantId, [id]);
      if (!row) throw ApiError.notFound('token');
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

    update(principal: Principal, id: string, patch: TokenPatch): Promise<TokenView> {
      return db.transaction((tx) => updateIn(principal, id, patch, tx));
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

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const current = await findToken(db, principal.tenantId, id, tx, true);
        if (!current) throw ApiError.notFound('token');
        permitted(principal, 'token:delete', current);
        await deleteToken(db, principal.tenantId, id, tx);
        await logs.record(principal, { entityType: 'token', entityId: id, operation: 'delete', message: 'Token deleted' }, tx);
        await events.emit(principal.tenantId, 'token.deleted', id, eventPayload(current), tx);
      });
    },

    /**
     * Loads tokens for detokenization (token:read), reactors and proxies (token:use): every
     * id must exist (400 naming it) and be permitted (403). Each use is audit-logged before
     * this resolves, or, given `deferAudit`, its audit entries are added there for the caller
     * to write before the data leaves Coffer. `pathsOf` names the fields that refer to an id,
     * for the 400 of an unknown one.
     */
    async resolveForUse(
      principal: Principal,
      ids: string[],
      permission: 'token:read' | 'token:use',
      deferAudit?: Item[],
      pathsOf: (id: string) => string[] = () => ['body'],
    ): Promise<Map<string, TokenView>> {
      const unique = [...new Set(ids)];
      const rows = await load(principal.tenantId, unique);
      const found = new Map(rows.map((r) => [r.id, r]));
      const missing = unique.filter((id) => !found.has(id));
      if (missing.length) {
        const errors = new FieldErrorList();
        for (const id of missing) for (const path of pathsOf(id)) errors.add(path, `token "${id}" not found`);
        throw new ApiError(400, `token ${missing.map((m) => `"${m}"`).join(', ')} not found`, errors.errors);
      }
      const out = new Map<string, TokenView>();
      for (const row of rows) out.set(row.id, await view(principal, row, permitted(principal, permission, row)));
      const operation = permission === 'token:use' ? 'use' : 'detokenize';
      const entries = [...out.values()].map((v) => ({ entityType: 'token', entityId: v.row.id, operation, message: `Token detokenized (${v.transform})` }));
      // The caller writes them itself, before any of the data leaves Coffer (reactors).
      if (deferAudit) deferAudit.push(...entries.map((e) => logs.item(principal, e)));
      else await logs.useMany(principal, entries);
      return out;
    },

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

    /**
     * Deletes tokens past expires_at (unreadable since that instant), each with its audit entry
     * and token.expired, a batch per transaction, until none is left or SWEEP.batches have run:
     * a small fixed number per sweep would fall ever further behind a tenant expiring more tokens
     * than that per interval, and the bound keeps the other sweeps, which run after this one,
     * from starving.
     */
    async sweepExpired(): Promise<number> {
      let deleted = 0;
      for (let batch = 0; batch < SWEEP.batches; batch++) {
        const gone = await db.transaction(async (tx) => {
          const rows = await deleteExpiredTokens(db, SWEEP.batchSize, tx);
          const items = rows.flatMap((t) => [
            logs.item({ kind: 'system', tenantId: t.tenant_id }, { entityType: 'token', entityId: t.id, operation: 'expire', message: 'Token expired and was deleted' }),
            events.item(t.tenant_id, 'token.expired', t.id, { id: t.id, type: t.type }),
          ]);
          if (items.length) await groupCommit.write(items, tx);
          return rows.length;
        });
        deleted += gone;
        if (gone < SWEEP.batchSize) break;
      }
      if (deleted) log.info({ deleted }, 'expired tokens deleted');
      return deleted;
    },
  };
}

/**
 * Keys held by clients: public application keys, in every browser or app that uses them, and
 * the session keys public applications hand out. They never get fingerprints (which confirm
 * a guessed value, docs/vault.md), nor an existing token from a deduplicating create they may
 * not read, and their token creation is rate limited.
 */
function clientHeld(principal: Principal): boolean {
  return principal.applicationType === 'public';
}

/** Expired tokens deleted per transaction, and transactions per sweep (50,000 tokens). */
const SWEEP = { batchSize: 1000, batches: 50 };

export const validTokenRequest = compileValidator<TokenRequest>(CreateTokenBody);

const CONTAINER_MESSAGE = 'must be a path of lowercase segments that starts and ends with "/", e.g. /pci/high/';

/** Checked before any permission check, so a malformed container is a 400, never a 403. */
function checkContainers(containers: string[], at: string): void {
  const errors = new FieldErrorList();
  containers.forEach((c, i) => {
    if (!isContainer(c)) errors.add(childPath(at, i), CONTAINER_MESSAGE);
  });
  errors.throwIfAny();
}

function redefinesExpressions(patch: TokenPatch, row: TokenRow): boolean {
  return (
    (patch.mask !== undefined && JSON.stringify(patch.mask) !== (row.mask ?? 'null')) ||
    (patch.fingerprint_expression !== undefined && patch.fingerprint_expression !== row.fingerprint_expression) ||
    (patch.search_indexes !== undefined && JSON.stringify(patch.search_indexes) !== JSON.stringify(row.search_indexes))
  );
}

function isTokenRequest(node: unknown): boolean {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return false;
  const o = node as Record<string, unknown>;
  // Own keys only: `{"type": "toString"}` names no token type, it is data to pass through.
  if (typeof o.type === 'string' && Object.hasOwn(TOKEN_TYPES, o.type) && Object.hasOwn(o, 'data')) return true;
  return Object.hasOwn(o, 'token_intent_id') && typeof o.token_intent_id === 'string';
}

/** A card's (or network token's) data without its CVC, which is for one payment and never kept from an intent. */
function withoutCvc(data: unknown): unknown {
  if (data === null || typeof data !== 'object' || !('cvc' in data)) return data;
  const { cvc: _dropped, ...rest } = data as Record<string, unknown>;
  return rest;
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

function expression(source: string, scope: Scope, field: string): unknown {
  try {
    return evaluate(source, 'template', scope);
  } catch (err) {
    if (err instanceof ExpressionError) throw ApiError.field(field, `invalid expression "${source.slice(0, 200)}": ${err.message}`);
    throw err;
  }
}

/**
 * A mask is a display value: bounded in nesting, in each expression, in its expressions in all
 * and in what it renders to (a few `pad_left: 100000` tags would otherwise build megabytes).
 */
const MASK_LIMITS = { depth: 32, expression: 2000, source: 20_000, rendered: 100_000 };

/** Adds the first way the mask exceeds MASK_LIMITS to `errors`. */
function checkMask(spec: unknown, field: string, errors: FieldErrorList): void {
  let size = 0;
  const walk = (node: unknown, at: string, depth: number): string | undefined => {
    if (depth > MASK_LIMITS.depth) return `is nested too deeply: at most ${MASK_LIMITS.depth} levels of arrays and objects`;
    if (typeof node === 'string') {
      if (node.length > MASK_LIMITS.expression) return `${at} must be at most ${MASK_LIMITS.expression} characters`;
      size += node.length;
    } else if (node !== null && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        size += k.length;
        const problem = walk(v, childPath(at, Array.isArray(node) ? Number(k) : k), depth + 1);
        if (problem) return problem;
      }
    }
    return size > MASK_LIMITS.source ? `must be at most ${MASK_LIMITS.source} characters of expressions and keys in all` : undefined;
  };
  const problem = walk(spec, field, 0);
  if (problem) errors.add(field, problem);
}

/** `budget.root` is the whole mask's field, where exceeding the rendered limit is reported. */
function renderMask(spec: unknown, scope: Scope, field: string, budget: { left: number; root: string }): unknown {
  if (typeof spec === 'string') {
    const value = expression(spec, scope, field);
    budget.left -= typeof value === 'string' ? value.length : text(value).length;
    if (budget.left < 0) throw ApiError.field(budget.root, `renders to more than ${MASK_LIMITS.rendered} characters in all`);
    return value;
  }
  if (Array.isArray(spec)) return spec.map((s, i) => renderMask(s, scope, childPath(field, i), budget));
  if (spec !== null && typeof spec === 'object') {
    // A member that renders to null (a card stored without an expiry) is left out: the masked
    // view shows what the data holds, not fields it never had.
    const members = Object.entries(spec).map(([k, v]) => [k, renderMask(v, scope, childPath(field, k), budget)] as const);
    return Object.fromEntries(members.filter(([, value]) => value !== null));
  }
  return spec;
}

/** The audit entry of token data shown in plaintext (a read, a search, a replay of either). */
function revealEntry(tokenId: string, operation: string): AuditEntry {
  return { entityType: 'token', entityId: tokenId, operation, message: `Token data revealed (${operation})` };
}

function parseMask(stored: string | null): unknown {
  return stored === null ? null : JSON.parse(stored);
}

function text(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function eventPayload(row: Pick<TokenRow, 'id' | 'type' | 'containers'>): Record<string, unknown> {
  return { id: row.id, type: row.type, containers: row.containers };
}

/** The most token requests one POST /tokenize (or reactor tokenize block) may hold. */
const MAX_TOKENIZE = 100;

/** How many token requests `node` holds, counting no further than `stop`; iterative, so no depth overflows it. */
function countTokenRequests(node: unknown, stop: number): number {
  let count = 0;
  const stack: unknown[] = [node];
  while (stack.length > 0 && count < stop) {
    const next = stack.pop();
    if (isTokenRequest(next)) count++;
    // One by one: spreading an array of a few hundred thousand items overflows the call.
    else if (Array.isArray(next)) for (const item of next) stack.push(item);
    else if (next !== null && typeof next === 'object') for (const value of Object.values(next)) stack.push(value);
  }
  return count;
}
