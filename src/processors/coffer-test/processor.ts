/**
 * `coffer-test`: the built-in test processor. It behaves like an acquirer — holds, captures,
 * releases and returns money in its own books, refuses what an acquirer refuses, answers with
 * issuer response codes, CVV/AVS results and network transaction ids — with outcomes chosen by
 * the amount and the card (table.ts). No network: every answer is computed here.
 *
 * Ids are derived from the idempotency key (and the connection), so a replay gets the same ids
 * even where the in-memory ledger (ledger.ts) has no entry for it.
 */
import { createHash } from 'node:crypto';
import { cardBrand } from '../../vault/card-brands.ts';
import type {
  AuthorizeRequest, AuthorizeResult, CaptureRequest, CaptureResult, Processor, RefundRequest, RefundResult, RefundStatusRequest,
  StatusRequest, StatusResult, TransactionRef, VoidRequest, VoidResult,
} from '../processor.ts';
import { type Operation, type PaymentRecord, TestLedger } from './ledger.ts';
import { schemeTransactionId } from './scheme-ids.ts';
import { isAsyncAmount, type OutcomeRow, rowFor } from './table.ts';

export const COFFER_TEST = 'coffer-test';
/** How long an asynchronous capture or refund stays pending, unless the connection says otherwise. */
export const DEFAULT_SETTLE_DELAY_MS = 2_000;

export interface CofferTestOptions {
  /** Keeps each connection's ids and idempotency keys apart in the shared ledger. */
  connectionId?: string;
  settleDelayMs?: number;
  /** Milliseconds since the epoch; tests move it. */
  now?: () => number;
  /** The process's ledger (see ledger.ts); a processor made without one keeps its own books. */
  ledger?: TestLedger;
}

export class CofferTestProcessor implements Processor {
  readonly name = COFFER_TEST;
  readonly local = true;
  readonly ledger: TestLedger;
  readonly #scope: string;
  readonly #delay: number;
  readonly #now: () => number;

  constructor(options: CofferTestOptions = {}) {
    this.ledger = options.ledger ?? new TestLedger();
    this.#scope = options.connectionId ?? '';
    this.#delay = options.settleDelayMs ?? DEFAULT_SETTLE_DELAY_MS;
    this.#now = options.now ?? Date.now;
    if (!Number.isFinite(this.#delay) || this.#delay < 0) throw new TypeError('settleDelayMs must be a non-negative number');
  }

  async authorize(req: AuthorizeRequest): Promise<AuthorizeResult> {
    checkAuthorize(req);
    const { card } = req;
    const fingerprint = [
      req.amount, req.currency, card.number.slice(-4), card.expiration_month, card.expiration_year, card.cvc !== undefined, req.intent,
      req.merchant_initiated, req.payment_source, req.is_subsequent_payment, req.previous_scheme_transaction_id ?? '',
      req.three_d_secure?.authentication_value ?? '', card.network_token?.cryptogram ?? '',
    ].join('|');
    return this.#once<AuthorizeResult>('authorize', req.idempotency_key, fingerprint, (seed) => {
      const result = this.#decideAuthorization(req, seed);
      const held = result.status === 'authorized' || result.status === 'captured' || result.status === 'capture_pending';
      if (held) {
        this.ledger.savePayment({
          id: result.connection_transaction_id!, amount: req.amount, authorized_amount: req.amount, refunded_amount: 0,
          captured_amount: result.status === 'authorized' ? 0 : req.amount,
          state: result.status === 'captured' ? 'captured' : result.status === 'capture_pending' ? 'capture_pending' : 'authorized',
          settles_at: result.settles_at ? Date.parse(result.settles_at) : undefined,
        });
      }
      return [result, held];
    });
  }

  async capture(req: CaptureRequest): Promise<CaptureResult> {
    checkRef(req.transaction);
    checkAmount(req.amount);
    const ref = req.transaction;
    return this.#once<CaptureResult>('capture', req.idempotency_key, `${ref.connection_transaction_id}|${req.amount}`, () => {
      const payment = this.#paymentOf(ref);
      if (payment.state !== 'authorized') return [refused('unexpected_state', `the authorization is ${payment.state}`), false];
      if (req.amount > payment.authorized_amount) return [refused('invalid_amount', `the authorization holds ${payment.authorized_amount}`), false];
      const row = rowFor('capture', ref.amount);
      if (row && row.outcome !== 'asynchronous') return [rowAnswer(row), false];
      const settles = row ? this.#now() + this.#delay : undefined;
      this.ledger.savePayment({ ...payment, captured_amount: req.amount, state: settles ? 'capture_pending' : 'captured', settles_at: settles });
      if (settles) return [{ status: 'capture_pending', captured_amount: req.amount, settles_at: new Date(settles).toISOString() }, true];
      return [{ status: 'captured', captured_amount: req.amount, raw_response_code: '00', raw_response_description: 'captured' }, true];
    });
  }

  async void(req: VoidRequest): Promise<VoidResult> {
    checkRef(req.transaction);
    const ref = req.transaction;
    return this.#once<VoidResult>('void', req.idempotency_key, ref.connection_transaction_id, () => {
      const payment = this.#paymentOf(ref);
      if (payment.state !== 'authorized') return [refused('unexpected_state', `the authorization is ${payment.state}`), false];
      const row = rowFor('void', ref.amount);
      if (row) return [rowAnswer(row), false];
      this.ledger.savePayment({ ...payment, state: 'voided' });
      return [{ status: 'voided', raw_response_code: '00', raw_response_description: 'authorization released' }, true];
    });
  }

  async refund(req: RefundRequest): Promise<RefundResult> {
    checkRef(req.transaction);
    checkAmount(req.amount);
    const ref = req.transaction;
    return this.#once<RefundResult>('refund', req.idempotency_key, `${ref.connection_transaction_id}|${req.amount}`, (seed) => {
      const payment = this.#paymentOf(ref);
      if (payment.state !== 'captured') return [refused('unexpected_state', `the payment is ${payment.state}`), false];
      const left = payment.captured_amount - payment.refunded_amount;
      if (left === 0) return [refused('refund_already_satisfied', 'the payment is fully refunded'), false];
      if (req.amount > left) return [refused('invalid_amount', `${left} is left to refund`), false];
      const row = rowFor('refund', ref.amount);
      if (row && row.outcome !== 'asynchronous') return [rowAnswer(row), false];
      const id = `ctr_${hex(seed)}`;
      const settles = row ? this.#now() + this.#delay : undefined;
      this.ledger.savePayment({ ...payment, refunded_amount: payment.refunded_amount + req.amount });
      this.ledger.saveRefund({ id, payment_id: payment.id, amount: req.amount, state: settles ? 'processing' : 'succeeded', settles_at: settles });
      if (settles) return [{ status: 'processing', connection_refund_id: id, settles_at: new Date(settles).toISOString() }, true];
      return [{ status: 'succeeded', connection_refund_id: id, raw_response_code: '00', raw_response_description: 'refunded' }, true];
    });
  }

  /**
   * Where a payment stands. One this process never saw (another process's, or before a restart)
   * is answered from Coffer's status: a pending capture or void is reported settled, since a
   * poll comes at or after `settles_at`, and an authorization still processing is `unknown`.
   */
  async status(req: StatusRequest): Promise<StatusResult> {
    checkRef(req.transaction);
    const ref = req.transaction;
    const payment = this.ledger.payment(ref.connection_transaction_id);
    if (!payment) {
      const status = GUESS.get(ref.status) ?? 'unknown';
      return { status, authorized_amount: ref.authorized_amount, captured_amount: status === 'captured' ? ref.captured_amount : undefined };
    }
    if (payment.state === 'capture_pending' && this.#now() >= (payment.settles_at ?? 0)) {
      this.ledger.savePayment({ ...payment, state: 'captured', settles_at: undefined });
      return { status: 'captured', authorized_amount: payment.authorized_amount, captured_amount: payment.captured_amount };
    }
    const status = payment.state === 'authorized' ? 'authorized' : payment.state;
    const settles_at = payment.state === 'capture_pending' ? new Date(payment.settles_at!).toISOString() : undefined;
    const captured = payment.state === 'authorized' || payment.state === 'voided' ? undefined : payment.captured_amount;
    return { status, authorized_amount: payment.authorized_amount, captured_amount: captured, settles_at };
  }

  /** A refund this process never saw is reported succeeded, as status() does for captures. */
  async refundStatus(req: RefundStatusRequest): Promise<RefundResult> {
    const refund = this.ledger.refund(req.connection_refund_id);
    if (!refund) return { status: 'succeeded', connection_refund_id: req.connection_refund_id };
    if (refund.state === 'processing' && this.#now() < (refund.settles_at ?? 0)) {
      return { status: 'processing', connection_refund_id: refund.id, settles_at: new Date(refund.settles_at!).toISOString() };
    }
    if (refund.state === 'processing') this.ledger.saveRefund({ ...refund, state: 'succeeded', settles_at: undefined });
    return { status: 'succeeded', connection_refund_id: refund.id };
  }

  #decideAuthorization(req: AuthorizeRequest, seed: Buffer): AuthorizeResult {
    const { card } = req;
    const row = rowFor('authorize', req.amount, card.number);
    const byAmount = row !== undefined && 'amount' in row.key;
    const common = {
      connection_transaction_id: `ctp_${hex(seed)}`,
      cvv_response_code: row?.cvv_response_code ?? (card.cvc ? 'match' : 'not_provided'),
      avs_response_code: row?.avs_response_code ?? (card.billing_address?.line1 || card.billing_address?.postal_code ? 'match' : 'not_provided'),
    } as const;
    if (!byAmount && expired(card.expiration_month, card.expiration_year, this.#now())) {
      return { ...common, status: 'declined', error_code: 'expired_payment_method', auth_response_code: '54', raw_response_code: '54', raw_response_description: 'expired card' };
    }
    const authenticated = req.three_d_secure !== undefined;
    let outcome = row?.outcome ?? 'approved';
    if (row?.cleared_by_3ds && authenticated) outcome = 'approved';
    if (outcome === 'requires_authentication' && req.merchant_initiated) outcome = 'failed';
    if (outcome === 'requires_authentication') {
      return { ...common, status: 'requires_authentication', raw_response_code: row!.auth_response_code, raw_response_description: row!.note };
    }
    if (outcome === 'declined' || outcome === 'failed') {
      return { ...common, ...rowAnswer(row!), status: outcome, auth_response_code: row!.auth_response_code };
    }
    const now = this.#now();
    const pending = req.intent === 'capture' && isAsyncAmount(req.amount);
    const status = req.intent === 'authorize' ? 'authorized' : pending ? 'capture_pending' : 'captured';
    return {
      ...common,
      status,
      scheme_transaction_id: schemeTransactionId(card.brand ?? cardBrand(card.number), seed, new Date(now)),
      auth_response_code: '00',
      authorized_amount: req.amount,
      captured_amount: status === 'authorized' ? undefined : req.amount,
      settles_at: pending ? new Date(now + this.#delay).toISOString() : undefined,
      raw_response_code: '00',
      raw_response_description: row?.note ?? 'approved',
    };
  }

  /** The ledger's record of a payment, or one made from what Coffer knows when this process never saw it. */
  #paymentOf(ref: TransactionRef): PaymentRecord {
    const known = this.ledger.payment(ref.connection_transaction_id);
    if (known) return known;
    const state = ref.status === 'capture_succeeded' || ref.status === 'capture_pending' ? 'captured' : ref.status === 'authorization_voided' ? 'voided' : 'authorized';
    return {
      id: ref.connection_transaction_id, amount: ref.amount, authorized_amount: ref.authorized_amount,
      captured_amount: ref.captured_amount, refunded_amount: 0, state,
    };
  }

  /** Runs an operation once per idempotency key; later calls with the key get the first answer. */
  #once<T>(operation: Operation, idempotencyKey: string, fingerprint: string, run: (seed: Buffer) => [T, boolean]): T {
    if (typeof idempotencyKey !== 'string' || idempotencyKey === '') throw new TypeError('an idempotency key is required');
    const key = `${this.#scope}\u0000${idempotencyKey}`;
    // Only a digest of the request is kept: it names a 3DS authentication value or a cryptogram.
    const digest = createHash('sha256').update(fingerprint).digest('base64url');
    const earlier = this.ledger.replay<T>(key, operation, digest);
    if (earlier === 'conflict') return refused('service_resource_conflict', 'the idempotency key was used for a different request') as T;
    if (earlier !== undefined) return earlier;
    const [result, moved] = run(createHash('sha256').update(`coffer-test\u0000${key}`).digest());
    this.ledger.remember(key, operation, digest, result, moved);
    return result;
  }
}

/** What a payment this process never saw is taken to be, by Coffer's status (see status()). */
const GUESS = new Map<string, StatusResult['status']>([
  ['capture_pending', 'captured'], ['capture_succeeded', 'captured'], ['authorization_succeeded', 'authorized'],
  ['authorization_void_pending', 'voided'], ['authorization_voided', 'voided'],
]);

function rowAnswer(row: OutcomeRow): { status: 'declined' | 'failed'; error_code?: OutcomeRow['error_code']; raw_response_code?: string; raw_response_description: string } {
  return { status: row.outcome === 'declined' ? 'declined' : 'failed', error_code: row.error_code, raw_response_code: row.auth_response_code ?? row.error_code, raw_response_description: row.note };
}

function refused(error_code: 'unexpected_state' | 'invalid_amount' | 'refund_already_satisfied' | 'service_resource_conflict', description: string) {
  return { status: 'failed' as const, error_code, raw_response_code: error_code, raw_response_description: description };
}

function hex(seed: Buffer): string {
  return seed.subarray(0, 12).toString('hex');
}

function expired(month: number, year: number, now: number): boolean {
  const today = new Date(now);
  return year < today.getUTCFullYear() || (year === today.getUTCFullYear() && month < today.getUTCMonth() + 1);
}

function checkAmount(amount: unknown): void {
  if (!Number.isSafeInteger(amount) || (amount as number) <= 0) throw new TypeError('amount must be a positive integer');
}

function checkRef(ref: TransactionRef): void {
  if (!ref || typeof ref.connection_transaction_id !== 'string' || ref.connection_transaction_id === '') {
    throw new TypeError('the transaction\'s connection_transaction_id is required');
  }
}

function checkAuthorize(req: AuthorizeRequest): void {
  checkAmount(req.amount);
  if (typeof req.currency !== 'string' || !/^[A-Z]{3}$/.test(req.currency)) throw new TypeError('currency must be an ISO 4217 code');
  const card = req.card;
  if (!card || typeof card.number !== 'string' || !/^\d{12,19}$/.test(card.number)) throw new TypeError('card.number must be 12 to 19 digits');
  if (!Number.isInteger(card.expiration_month) || card.expiration_month < 1 || card.expiration_month > 12) throw new TypeError('card.expiration_month must be 1–12');
  if (!Number.isInteger(card.expiration_year) || card.expiration_year < 1000) throw new TypeError('card.expiration_year must have four digits');
  if (req.intent !== 'authorize' && req.intent !== 'capture') throw new TypeError('intent must be authorize or capture');
}
