import type { Tx } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/database.ts';
import { accessTo } from '../../access/evaluate.ts';
import type { Principal } from '../../access/principal.ts';
import type { Transform } from '../../access/rules.ts';
import { bringsExpiryForward, checkMove, TRANSFORM_RANK, unreachable, vouchedSight, widensAudience } from './moves.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { childPath } from '../../http/field-path.ts';
import { noteShownData } from '../../http/idempotency.ts';
import { applyMergePatch } from '../../http/merge-patch.ts';
import { TokenBuckets } from '../../http/rate-limit.ts';
import { TOKEN_TYPES } from '../../vault/token-types.ts';
import type { Actor } from '../logs/service.ts';
import {
  deleteExpiredToken,
  deleteExpiredTokens,
  deleteToken,
  findByFingerprint,
  findToken,
  lockFingerprint,
  updateToken,
  type TokenRow,
} from './store.ts';
import type { Origin, TokenCore, TokenDeps, TokenInput, TokenPatch, TokenRequest, TokenView } from './service.ts';
import { checkContainers, parseMask, prepareToken } from './prepare.ts';
import { clientHeld, countTokenRequests, isTokenRequest, MAX_TOKENIZE, validTokenRequest, withoutCvc } from './requests.ts';
import { revealEntry } from './reads.ts';

/**
 * Writing tokens: create (deduplicated, from a token intent, or in a tokenize), update by merge
 * patch, delete, and the sweep of expired ones; each with its audit entry and event.
 */
export function createTokenWrites(core: TokenCore, deps: Pick<TokenDeps, 'intents' | 'audience' | 'clientCreates'>) {
  const { db, groupCommit, vault, logs, events, log, tokenTable, permitted, view, open } = core;
  const createsFromAddress = new TokenBuckets(deps.clientCreates.rate / 60, deps.clientCreates.burst);
  const createsOfKey = new TokenBuckets(deps.clientCreates.keyRate / 60, deps.clientCreates.keyBurst);

  function prepare(principal: Principal, input: TokenInput, at: string, previous?: TokenRow, previousData?: unknown) {
    return prepareToken(vault, principal, input, at, previous, previousData);
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

    update(principal: Principal, id: string, patch: TokenPatch): Promise<TokenView> {
      return db.transaction((tx) => updateIn(principal, id, patch, tx));
    },

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

/** Expired tokens deleted per transaction, and transactions per sweep (50,000 tokens). */
const SWEEP = { batchSize: 1000, batches: 50 };

function redefinesExpressions(patch: TokenPatch, row: TokenRow): boolean {
  return (
    (patch.mask !== undefined && JSON.stringify(patch.mask) !== (row.mask ?? 'null')) ||
    (patch.fingerprint_expression !== undefined && patch.fingerprint_expression !== row.fingerprint_expression) ||
    (patch.search_indexes !== undefined && JSON.stringify(patch.search_indexes) !== JSON.stringify(row.search_indexes))
  );
}

function eventPayload(row: Pick<TokenRow, 'id' | 'type' | 'containers'>): Record<string, unknown> {
  return { id: row.id, type: row.type, containers: row.containers };
}
