/**
 * What the transactions feature's parts share: the processor call discipline (the outbox entry
 * written before a call, the outcome recorded after it, guarded by the call's key) and how a
 * transaction's card is read for the processor.
 */
import type { Principal } from '../../access/principal.ts';
import type { Transform } from '../../access/rules.ts';
import type { Database, Tx } from '../../db/database.ts';
import type { GroupCommit, Item } from '../../db/group-commit.ts';
import { enqueue } from '../../db/jobs.ts';
import { ApiError } from '../../http/errors.ts';
import type { Logger } from '../../logger.ts';
import {
  AmountError, type AuthorizeRequest, IllegalTransitionError, type ProcessorCard, reconciliationId, type ThreeDSData, type TransactionAction,
  type TransactionRef,
} from '../../processors/index.ts';
import type { ConnectionService } from '../connections/service.ts';
import type { EventService } from '../events/service.ts';
import type { LogService } from '../logs/service.ts';
import type { ThreeDSService } from '../threeds/service.ts';
import type { TokenIntentService } from '../token-intents/service.ts';
import type { TokenService } from '../tokens/service.ts';
import type { TokenRow } from '../tokens/store.ts';
import { type Answer, applyAnswer } from './outcome.ts';
import { insertTransactionsStatement, type PaymentMethod, saveOutcome, saveOutcomesStatement, type TransactionRow } from './store.ts';

export const SETTLE_JOB = 'orchestration.settle';
/** Token types that hold a card number a processor can charge. */
const CARD_TYPES = ['card', 'network_token'];

export type TransactionDeps = {
  db: Database;
  groupCommit: GroupCommit;
  logs: LogService;
  events: EventService;
  tokens: Pick<TokenService, 'useOne'>;
  intents: Pick<TokenIntentService, 'open'>;
  threeds: Pick<ThreeDSService, 'get' | 'create' | 'authenticate'>;
  connections: Pick<ConnectionService, 'processorFor'>;
  /** PUBLIC_URL, read when an approval URL is made. */
  publicUrl: () => string;
  approvalMinutes: number;
  /** A call unanswered this long (a crash between call and commit) is made again by the sweep. */
  resumeAfterMs: number;
  log: Logger;
  /** Tests only: runs once a processor call has answered, before the answer is recorded (where a crash would fall). */
  afterCall?: (operation: string, transactionId: string) => void | Promise<void>;
};

export type Core = ReturnType<typeof createCore>;

export function createCore(deps: TransactionDeps) {
  const { db, groupCommit, events } = deps;
  const transactionTable = groupCommit.table<TransactionRow>('transactions', { insert: insertTransactionsStatement });
  // Not an insert: an UPDATE of answered calls, group-committed the same way (see store.ts).
  const outcomeTable = groupCommit.table<TransactionRow & { answered_key: string | null }>('transaction_outcomes', { insert: saveOutcomesStatement });

  return {
    ...deps,
    transactionTable,
    outcomeTable,

    notFound: (id: string) => new ApiError(404, `Transaction ${id} was not found.`),

    /** The state machine's refusals as the API's: an illegal transition is a 409 naming the status, a bad amount a 400. */
    translate(err: unknown): never {
      if (err instanceof IllegalTransitionError) throw ApiError.conflict(err.message);
      if (err instanceof AmountError) throw ApiError.field('body.amount', err.message);
      throw err;
    },

    /** What the processor knows of the transaction, for any call after the authorization. */
    refOf(row: TransactionRow): TransactionRef {
      return {
        connection_transaction_id: row.connection_transaction_id ?? '',
        amount: row.amount,
        currency: row.currency,
        authorized_amount: row.authorized_amount,
        captured_amount: row.captured_amount,
        status: row.status,
        tenant_id: row.tenant_id,
      };
    },

    /** The transaction's events, with what a listener needs to act without reading it back. */
    eventItems(row: TransactionRow, types: readonly string[]): Item[] {
      const payload = {
        id: row.id, status: row.status, amount: row.amount, currency: row.currency, authorized_amount: row.authorized_amount,
        captured_amount: row.captured_amount, refunded_amount: row.refunded_amount, error_code: row.error_code, external_identifier: row.external_identifier,
      };
      return types.map((type) => events.item(row.tenant_id, type, row.id, payload));
    },

    /** Calls the processor; a thrown error (a connector's bug, not an outcome) counts as no definite answer. */
    async call<T extends { status: string }>(operation: string, row: TransactionRow, fn: () => Promise<T>): Promise<T | { status: 'unknown'; error_code: 'unknown_error' }> {
      let answer: T | { status: 'unknown'; error_code: 'unknown_error' };
      try {
        answer = await fn();
      } catch (err) {
        deps.log.error({ err: (err as Error).message, transaction_id: row.id, operation, processor: row.processor }, 'processor call failed; it will be made again');
        answer = { status: 'unknown', error_code: 'unknown_error' };
      }
      await deps.afterCall?.(operation, row.id);
      return answer;
    },

    /**
     * A change of a row waiting on no call (a poll's answer, an approval failed or run out),
     * on the row locked by the caller in `tx`: saved with its events; returns the new row.
     */
    async applyChange(current: TransactionRow, action: TransactionAction, answer: Answer | undefined, tx: Tx): Promise<TransactionRow> {
      const { row: next, transition } = applyAnswer(current, action, answer, new Date());
      const saved = { ...next, pending: null, pending_since: null };
      await saveOutcome(db, saved, null, tx);
      await groupCommit.write(this.eventItems(saved, transition.events), tx);
      return saved;
    },

    async scheduleSettle(tenantId: string, payload: { transaction_id: string; refund_id?: string; polls?: number }, at: Date, tx: Tx): Promise<void> {
      await enqueue(db, tenantId, SETTLE_JOB, payload, { runAt: at }, tx);
    },
  };
}

/**
 * The authorization call of a transaction, built from its row alone (and the card and 3DS data),
 * so a call made again after a crash is the same request. Card-on-file and merchant-initiated
 * payments never send a CVC, even where the token keeps one.
 */
export function authorizeRequestOf(row: TransactionRow, card: ProcessorCard, threeDS?: ThreeDSData): AuthorizeRequest {
  const withCvc = row.payment_source === 'ecommerce' && !row.merchant_initiated;
  return {
    amount: row.amount, currency: row.currency, card: withCvc ? card : { ...card, cvc: undefined }, ...(threeDS ? { three_d_secure: threeDS } : {}),
    merchant_initiated: row.merchant_initiated, payment_source: row.payment_source, is_subsequent_payment: row.is_subsequent_payment,
    previous_scheme_transaction_id: row.previous_scheme_transaction_id, idempotency_key: row.pending!.key, intent: row.intent,
    reconciliation_id: reconciliationId(row.id), tenant_id: row.tenant_id,
  };
}

/** What a transaction was paid with, as readCard takes it. */
export function cardSourceOf(row: TransactionRow): { token?: string; token_intent_id?: string } {
  return row.payment_method.token !== undefined ? { token: row.payment_method.token } : { token_intent_id: row.payment_method.token_intent_id };
}

/** A system principal to read a transaction's card again when its call is resumed: token:use as the creator had it. */
export function resumingPrincipal(row: TransactionRow): Principal {
  return {
    kind: 'application', tenantId: row.tenant_id, actorId: row.created_by ?? row.tenant_id, applicationId: row.created_by ?? row.tenant_id,
    applicationType: 'private', keyId: undefined, permissions: [], rules: [{ priority: 0, permissions: ['token:use'], transform: 'reveal' }], expiresAt: undefined,
  } as Principal;
}

/** Refuses a token that holds no card, or whose data token:use would not reveal, before anything is decrypted. */
function checkCardToken(field: string) {
  return (row: TokenRow, transform: Transform) => {
    if (!CARD_TYPES.includes(row.type)) {
      throw ApiError.field(field, `token "${row.id}" is of type ${row.type}: a transaction takes a token of type ${CARD_TYPES.join(' or ')}`);
    }
    if (transform !== 'reveal') {
      throw ApiError.forbidden(
        `The API key's token:use on token ${row.id} ${transform === 'mask' ? 'masks' : 'redacts'} its data: a payment needs the card number itself (transform reveal).`,
      );
    }
  };
}

type CardData = { number: string; expiration_month?: number; expiration_year?: number; cvc?: string; cryptogram?: string; eci_indicator?: string };

/**
 * The card of a payment, read for the processor: a token through token:use (reveal) on its
 * container, a token intent as any key of the tenant may. The use's audit entry goes to `audit`.
 */
export async function readCard(
  core: Core,
  principal: Principal,
  source: { token?: string; token_intent_id?: string },
  audit: Item[],
): Promise<{ card: ProcessorCard; method: PaymentMethod; type: string }> {
  let data: CardData;
  let type: string;
  let method: Pick<PaymentMethod, 'token' | 'token_intent_id'>;
  if (source.token !== undefined) {
    const v = await core.tokens.useOne(principal, source.token, { purpose: 'a payment', audit, check: checkCardToken('body.token') });
    data = v.data as CardData;
    type = v.row.type;
    method = { token: source.token };
  } else {
    const intent = await core.intents.open(principal, source.token_intent_id!, 'body.token_intent_id');
    if (!CARD_TYPES.includes(intent.row.type)) {
      throw ApiError.field('body.token_intent_id', `token intent ${intent.row.id} is of type ${intent.row.type}: a transaction takes a token intent of type ${CARD_TYPES.join(' or ')}`);
    }
    audit.push(core.logs.item(principal, { entityType: 'token-intent', entityId: intent.row.id, operation: 'use', message: 'Token intent used for a payment' }));
    data = intent.data as CardData;
    type = intent.row.type;
    method = { token_intent_id: intent.row.id };
  }
  const card: ProcessorCard = {
    number: data.number,
    expiration_month: data.expiration_month ?? 0,
    expiration_year: data.expiration_year ?? 0,
    ...(data.cvc !== undefined ? { cvc: data.cvc } : {}),
    ...(type === 'network_token' && data.cryptogram ? { network_token: { cryptogram: data.cryptogram, ...(data.eci_indicator ? { eci: data.eci_indicator } : {}) } } : {}),
  };
  const expiry = data.expiration_month && data.expiration_year
    ? `${String(data.expiration_month).padStart(2, '0')}/${String(data.expiration_year % 100).padStart(2, '0')}`
    : null;
  return { card, type, method: { type: 'card', ...method, scheme: null, last4: data.number.slice(-4), expiration_date: expiry } };
}

/** A completed 3DS session's authentication, for the processor and the transaction's three_d_secure. */
export async function readThreeDS(core: Core, principal: Principal, sessionId: string, source: { token?: string; token_intent_id?: string }): Promise<{ data: ThreeDSData; shown: Record<string, unknown> }> {
  const field = 'body.three_d_session_id';
  let session;
  try {
    session = await core.threeds.get(principal, sessionId);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) throw new ApiError(404, err.detail, { [field]: [err.detail] });
    throw err;
  }
  const sameCard = source.token !== undefined
    ? session.token_id === source.token || session.pan_token_id === source.token
    : session.token_intent_id === source.token_intent_id;
  if (!sameCard) throw ApiError.field(field, `3DS session ${sessionId} authenticated another card than the transaction's ${source.token !== undefined ? 'token' : 'token intent'}`);
  const result = session.authentication;
  if (session.status !== 'completed' || !result) {
    throw ApiError.field(field, `3DS session ${sessionId} has not completed its authentication${session.status === 'challenge' ? ' (its challenge is still pending)' : ''}`);
  }
  if (!result.authentication_value || !result.eci) {
    throw ApiError.field(field, `3DS session ${sessionId} did not authenticate the cardholder (${result.authentication_status}): it carries no authentication value`);
  }
  return {
    data: { eci: result.eci, authentication_value: result.authentication_value, version: result.threeds_version, ds_transaction_id: result.ds_transaction_id },
    shown: {
      version: result.threeds_version,
      status: 'complete',
      method: result.authentication_challenge_type ? 'challenge' : 'frictionless',
      eci: result.eci,
      session_id: sessionId,
    },
  };
}
