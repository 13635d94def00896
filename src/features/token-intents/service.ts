import { randomUUID } from 'node:crypto';
import type { Database, Tx } from '../../db/database.ts';
import type { GroupCommit } from '../../db/group-commit.ts';
import type { Logger } from '../../logger.ts';
import type { Principal } from '../../access/principal.ts';
import { evaluate } from '../../expressions/index.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { binDetails } from '../../vault/bin-details.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import { TOKEN_TYPES, type CardView } from '../../vault/token-types.ts';
import type { EventService } from '../events/service.ts';
import type { LogService } from '../logs/service.ts';
import type { TenantQuotas } from '../tenants/quotas.ts';
import type { TokenIntentType } from './schema.ts';
import {
  deleteExpiredTokenIntents,
  findTokenIntent,
  insertTokenIntentsStatement,
  takeTokenIntent,
  type TokenIntentRow,
} from './store.ts';

export type TokenIntentInput = { type: TokenIntentType; data: unknown };
/** Set by whoever made the intent, not by its caller: a wallet's token service details. */
export type TokenIntentExtras = { tsp_details?: Record<string, unknown> };
/** An intent as its caller may see it: without a fingerprint for keys held by clients (as tokens). */
export type TokenIntentView = { row: TokenIntentRow; noFingerprint: boolean };
/** What converting an intent hands the token it becomes. */
export type TakenIntent = { row: TokenIntentRow; data: unknown };

export type TokenIntentService = ReturnType<typeof createTokenIntentService>;

/**
 * Token intents: card, bank or network-token data held for `token_intent_ttl_hours` (a tenant
 * quota, 24 h by default) until it becomes a token (POST /tokens with `token_intent_id`), is
 * deleted, or expires. The data is validated exactly as a token of its type and encrypted
 * like token data; what callers see are the non-sensitive details worked out at creation.
 */
export function createTokenIntentService(deps: {
  db: Database;
  groupCommit: GroupCommit;
  vault: Vault;
  logs: LogService;
  events: EventService;
  quotas: TenantQuotas;
  log: Logger;
}) {
  const { db, groupCommit, vault, logs, events, quotas, log } = deps;
  const table = groupCommit.table<TokenIntentRow>('token_intents', { insert: insertTokenIntentsStatement });

  function present(principal: Principal, row: TokenIntentRow): TokenIntentView {
    return { row, noFingerprint: principal.applicationType === 'public' };
  }

  function notFound(id: string): ApiError {
    return new ApiError(404, `Token intent ${id} was not found (it may have expired or been converted to a token).`);
  }

  return {
    /** `at` prefixes error field paths (`body`, or where a wallet's decrypted data came from). */
    async create(principal: Principal, input: TokenIntentInput, opts: { extras?: TokenIntentExtras; at?: string } = {}): Promise<TokenIntentView> {
      const at = opts.at ?? 'body';
      const errors = new FieldErrorList();
      const data = TOKEN_TYPES[input.type].validate(input.data, `${at}.data`, errors);
      errors.throwIfAny();
      const tenantId = principal.tenantId;
      const id = randomUUID();
      const { token_intent_ttl_hours: ttlHours } = await quotas.of(tenantId);
      const { ciphertext, dataKeyId } = await vault.encrypt(tenantId, intentAad(id), data);
      const createdAt = new Date();
      const row: TokenIntentRow = {
        tenant_id: tenantId,
        id,
        type: input.type,
        ciphertext,
        data_key_id: dataKeyId,
        details: detailsOf(input.type, data),
        fingerprint: await defaultFingerprint(vault, tenantId, input.type, data),
        extras: opts.extras ?? {},
        expires_at: new Date(createdAt.getTime() + ttlHours * 3_600_000),
        created_by: principal.actorId,
        // Milliseconds, as the column keeps them: the reply shows what a later read will.
        created_at: createdAt,
      };
      await groupCommit.write([
        table.of(row),
        logs.item(principal, { entityType: 'token-intent', entityId: id, operation: 'create', message: `Token intent created (${input.type})` }),
        events.item(tenantId, 'token-intent.created', id, { id, type: input.type }),
      ]);
      return present(principal, row);
    },

    async get(principal: Principal, id: string): Promise<TokenIntentView> {
      const row = await findTokenIntent(db, principal.tenantId, id);
      if (!row) throw notFound(id);
      return present(principal, row);
    },

    /**
     * A live intent with its data, left in place: for a use that does not convert it (a 3DS
     * session reads the card of its intent). `field` names the request field that named it.
     */
    async open(principal: Principal, id: string, field: string): Promise<TakenIntent> {
      const row = await findTokenIntent(db, principal.tenantId, id);
      if (!row) {
        const message = `token intent ${id} does not exist: it may have expired or been converted to a token`;
        throw new ApiError(404, message, { [field]: [message] });
      }
      return { row, data: await vault.decrypt(principal.tenantId, intentAad(row.id), row.ciphertext, row.data_key_id) };
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const row = await takeTokenIntent(db, principal.tenantId, id, tx);
        if (!row) throw notFound(id);
        await logs.record(principal, { entityType: 'token-intent', entityId: id, operation: 'delete', message: 'Token intent deleted' }, tx);
        await events.emit(principal.tenantId, 'token-intent.deleted', id, { id, type: row.type }, tx);
      });
    },

    /**
     * Takes the intent for conversion, in the transaction that creates (or updates) its token:
     * of two conversions at once, one finds it. `field` names the request field that named it.
     */
    async take(principal: Principal, id: string, field: string, tx: Tx): Promise<TakenIntent> {
      const row = await takeTokenIntent(db, principal.tenantId, id, tx);
      if (!row) {
        const message = `token intent ${id} does not exist: it may have expired or been converted to a token already`;
        throw new ApiError(404, message, { [field]: [message] });
      }
      return { row, data: await vault.decrypt(principal.tenantId, intentAad(row.id), row.ciphertext, row.data_key_id) };
    },

    /** Records a conversion taken with `take`, once its token is written, in the same transaction. */
    async converted(principal: Principal, intent: TokenIntentRow, tokenId: string, tx: Tx): Promise<void> {
      await logs.record(principal, { entityType: 'token-intent', entityId: intent.id, operation: 'convert', message: `Token intent converted to token ${tokenId}` }, tx);
      await events.emit(principal.tenantId, 'token-intent.converted', intent.id, { token_intent: { id: intent.id, type: intent.type }, token: { id: tokenId } }, tx);
    },

    async sweepExpired(): Promise<number> {
      let deleted = 0;
      for (let batch = 0; batch < 50; batch++) {
        const gone = await deleteExpiredTokenIntents(db, 1000);
        deleted += gone;
        if (gone < 1000) break;
      }
      if (deleted) log.info({ deleted }, 'expired token intents deleted');
      return deleted;
    },
  };
}

/** An intent's ciphertext is bound to this, so it can never be read as a token's (whose ids are caller-chosen). */
function intentAad(id: string): string {
  return `token-intent:${id}`;
}

/** What the API shows of an intent: the card or bank details, and a network token's authentication. */
function detailsOf(type: TokenIntentType, data: unknown): Record<string, unknown> {
  if (type === 'bank') {
    const bank = data as { routing_number: string; account_number: string };
    return { bank: { routing_number: bank.routing_number, last4: bank.account_number.slice(-4) } };
  }
  const card = data as { number: string; cryptogram?: string; eci_indicator?: string };
  const view = TOKEN_TYPES[type].views!(data).card as CardView;
  const details: Record<string, unknown> = { card: { ...view, ...binDetails(card.number) } };
  if (type === 'network_token') details.authentication = { threeds_cryptogram: card.cryptogram, eci_indicator: card.eci_indicator ?? '' };
  return details;
}

/**
 * The fingerprint a token made from the intent gets by default (its type's expression, the
 * tenant's fingerprint HMAC), so an intent can be matched to tokens of the same value.
 */
async function defaultFingerprint(vault: Vault, tenantId: string, type: string, data: unknown): Promise<string | null> {
  const expression = TOKEN_TYPES[type].fingerprint;
  if (expression === null) return null;
  const value = evaluate(expression, 'template', { variables: { data }, hmacKey: await vault.expressionKeys(tenantId) });
  const canonical = typeof value === 'string' ? value : JSON.stringify(value ?? '');
  return canonical ? vault.hmac(tenantId, `fingerprint:${type}`, canonical) : null;
}
