import type { Coalescer } from '../../db/coalescer.ts';
import type { Database } from '../../db/database.ts';
import type { GroupCommit } from '../../db/group-commit.ts';
import { keyedLookup, type TenantKey } from '../../db/keyed-lookup.ts';
import type { Logger } from '../../logger.ts';
import { accessTo } from '../../access/evaluate.ts';
import type { Principal } from '../../access/principal.ts';
import type { Transform } from '../../access/rules.ts';
import { ApiError } from '../../http/errors.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { EventService } from '../events/service.ts';
import type { TokenIntentService } from '../token-intents/service.ts';
import type { LogService } from '../logs/service.ts';
import { findTokens, findTokensByKeys, findUsedTokensByKeys, insertTokensStatement, storedInOrder, type NewToken, type TokenRow, type UsedTokenRow } from './store.ts';
import { clientHeld } from './requests.ts';
import type { Secret } from './prepare.ts';
import { createTokenReads } from './reads.ts';
import { createTokenWrites } from './writes.ts';

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
export type TokenView<R extends UsedTokenRow = TokenRow> = { row: R; data?: unknown; transform: Transform; withheld?: boolean; noFingerprint?: boolean };
/** A token as a use of its data (detokenize, reactors, proxies) has it: read with only the columns a use needs. */
export type UsedTokenView = TokenView<UsedTokenRow>;
/** Where an API request comes from: its client address, for the rate of public keys' token creation. */
export type Origin = { ip: string };

export type ListQuery = { id: string[]; type: string[]; container?: string; fingerprint?: string } & Record<string, unknown>;

export type TokenService = ReturnType<typeof createTokenService>;

export type TokenDeps = {
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
};

/** What the reading and writing halves share: the database, the vault, and how a token is loaded and shown. */
export type TokenCore = ReturnType<typeof createTokenCore>;

function createTokenCore(deps: TokenDeps) {
  const { db, groupCommit, vault, logs, events, log } = deps;
  const tokenTable = groupCommit.table<NewToken & { tenant_id: string }, TokenRow>('tokens', { insert: insertTokensStatement, results: storedInOrder });
  // Reads outside a transaction: concurrent lookups of any tenants share one SELECT (uses one
  // of their own, which reads fewer columns). Each holds at most 4 pooled connections at once,
  // 8 of the pool's 20 by default when reads and uses peak together.
  const loader = keyedLookup((keys) => findTokensByKeys(db, keys));
  const useLoader = keyedLookup((keys) => findUsedTokensByKeys(db, keys));

  /** Live tokens by id: in the ambient transaction when there is one, otherwise through the shared lookup. */
  function load(tenantId: string, ids: string[]): Promise<TokenRow[]> {
    return loadWith(loader, tenantId, ids);
  }

  /** load, with only what a use reads. */
  function loadForUse(tenantId: string, ids: string[]): Promise<UsedTokenRow[]> {
    return loadWith(useLoader, tenantId, ids);
  }

  /** Inside a transaction the whole rows, read in it; otherwise through `shared`. */
  async function loadWith<R extends UsedTokenRow>(shared: Coalescer<TenantKey, R | undefined>, tenantId: string, ids: string[]): Promise<(R | TokenRow)[]> {
    if (db.inTransaction()) return findTokens(db, tenantId, ids);
    if (ids.length === 1) {
      const row = await shared.submit({ tenantId, id: ids[0] });
      return row ? [row] : [];
    }
    const rows = await Promise.all(ids.map((id) => shared.submit({ tenantId, id })));
    return rows.filter((r) => r !== undefined);
  }

  function permitted(principal: Principal, permission: string, token: { id: string; containers: string[] }): Transform {
    const transform = accessTo(principal, permission, token);
    if (!transform) throw ApiError.forbidden(`The API key lacks ${permission} on the container of token ${token.id}.`);
    return transform;
  }

  async function open(row: UsedTokenRow): Promise<Secret> {
    return (await vault.decrypt(row.tenant_id, row.id, row.ciphertext, row.data_key_id)) as Secret;
  }

  /** Applies a transform: reveal → data, mask → the rendered mask (or nothing), redact → nothing. */
  function visible(secret: Secret, transform: Transform): unknown {
    if (transform === 'reveal') return secret.data;
    if (transform === 'mask') return secret.mask;
    return undefined;
  }

  /** The token as `principal` sees it through `transform`. */
  async function view<R extends UsedTokenRow>(principal: Principal, row: R, transform: Transform, secret?: Secret): Promise<TokenView<R>> {
    const shown: TokenView<R> = transform === 'redact' ? { row, transform } : { row, transform, data: visible(secret ?? (await open(row)), transform) };
    if (clientHeld(principal)) shown.noFingerprint = true;
    return shown;
  }

  return { db, groupCommit, vault, logs, events, log, tokenTable, load, loadForUse, permitted, open, view };
}

/**
 * Tokens: the reading half (reads.ts) and the writing half (writes.ts) over one core; the rules
 * of what a token row is made of are in prepare.ts, of moving one in moves.ts.
 */
export function createTokenService(deps: TokenDeps) {
  const core = createTokenCore(deps);
  return { ...createTokenWrites(core, deps), ...createTokenReads(core) };
}

export { validTokenRequest } from './requests.ts';
