/**
 * The transaction and refund state machines (SPEC.md "States and transitions", PAYMENTS-FACTS.md
 * §6), in one place and pure: no clock, no I/O. The transactions feature holds the row lock,
 * asks plan*() before calling the processor (so an illegal request never reaches it), then
 * apply()s what the processor answered and stores the result. docs/orchestration.md draws it.
 *
 * Bookkeeping, decided here:
 * - `captured_amount` is set when a capture is sent and stays while it is `capture_pending`;
 *   a capture that then fails puts it back to 0. Refunds need `capture_succeeded`, so a pending
 *   capture is never refundable.
 * - `refunded_amount` counts refunds that succeeded or are still processing: a processing refund
 *   may well succeed, so it holds its share of the balance until it is declined, fails or is
 *   voided. Hence refunded_amount ≤ captured_amount under any interleaving of serialized calls.
 */
import type { ErrorCode } from './error-codes.ts';
import type { AuthorizeResult, CaptureResult, Intent, PolledStatus, RefundResultStatus, VoidResult } from './processor.ts';
import { AmountError, IllegalTransitionError } from './transition-errors.ts';

export { AmountError, IllegalTransitionError } from './transition-errors.ts';

export const TRANSACTION_STATUSES = [
  'processing', 'buyer_approval_pending', 'authorization_succeeded', 'authorization_failed', 'authorization_declined',
  'capture_pending', 'capture_succeeded', 'authorization_void_pending', 'authorization_voided',
] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

export const REFUND_STATUSES = ['processing', 'succeeded', 'declined', 'failed', 'voided'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export interface TransactionState {
  status: TransactionStatus;
  intent: Intent;
  /** Requested at create. */
  amount: number;
  authorized_amount: number;
  captured_amount: number;
  refunded_amount: number;
}

export type Stamp = 'authorized_at' | 'captured_at' | 'voided_at';
export type TransactionEvent =
  | 'transaction.authorized' | 'transaction.captured' | 'transaction.voided' | 'transaction.declined' | 'transaction.failed';
export type RefundEvent = 'refund.succeeded' | 'refund.failed';

/** What an applied action gives: the next state, the timestamps to set now, the code to record, the events to emit. */
export interface Transition {
  state: TransactionState;
  stamps: Stamp[];
  /** Recorded as the transaction's error_code when set; undefined leaves the current one. */
  error_code?: ErrorCode;
  events: (TransactionEvent | RefundEvent)[];
}

type Outcome = { status: string; error_code?: ErrorCode; authorized_amount?: number; captured_amount?: number };

export type TransactionAction =
  | { type: 'authorize_result'; result: Pick<AuthorizeResult, 'status' | 'error_code' | 'authorized_amount' | 'captured_amount'> }
  | { type: 'capture'; amount: number; result: Pick<CaptureResult, 'status' | 'error_code' | 'captured_amount'> }
  | { type: 'void'; result: Pick<VoidResult, 'status' | 'error_code'> }
  | { type: 'settle'; result: { status: PolledStatus; error_code?: ErrorCode; authorized_amount?: number; captured_amount?: number } }
  | { type: 'approval_expire' }
  | { type: 'approval_fail'; reason: 'failed' | 'cancelled' }
  | { type: 'refund'; amount: number }
  | { type: 'refund_update'; amount: number; from: RefundStatus; to: RefundStatus };
export type ActionType = TransactionAction['type'];

/** The statuses each action may start from; every other pair is an IllegalTransitionError. */
export const LEGAL_FROM: Readonly<Record<ActionType, readonly TransactionStatus[]>> = {
  authorize_result: ['processing', 'buyer_approval_pending'],
  capture: ['authorization_succeeded'],
  void: ['authorization_succeeded'],
  settle: ['processing', 'capture_pending', 'authorization_void_pending'],
  approval_expire: ['buyer_approval_pending'],
  approval_fail: ['buyer_approval_pending'],
  refund: ['capture_succeeded'],
  refund_update: ['capture_succeeded'],
};

export function initialState(amount: number, intent: Intent): TransactionState {
  positiveInteger(amount);
  return { status: 'processing', intent, amount, authorized_amount: 0, captured_amount: 0, refunded_amount: 0 };
}

/** What is left to refund: captured minus refunded (succeeded or processing). */
export function remainingBalance(state: TransactionState): number {
  return state.status === 'capture_succeeded' ? state.captured_amount - state.refunded_amount : 0;
}

/** Checks a capture before the processor is called; returns the amount to capture (default: all authorized). */
export function planCapture(state: TransactionState, amount?: number): number {
  legal('capture', state.status);
  if (amount === undefined) return state.authorized_amount;
  positiveInteger(amount);
  if (amount > state.authorized_amount) throw new AmountError(`amount must be at most the authorized amount, ${state.authorized_amount}`, state.authorized_amount);
  return amount;
}

/** Checks a void before the processor is called: only an authorization not yet captured can be voided. */
export function planVoid(state: TransactionState): void {
  legal('void', state.status);
}

/** Checks a refund before the processor is called; returns the amount to refund (default: the remaining balance). */
export function planRefund(state: TransactionState, amount?: number): number {
  legal('refund', state.status);
  const balance = remainingBalance(state);
  if (amount === undefined) {
    if (balance === 0) throw new AmountError('the transaction is fully refunded: the remaining balance is 0', 0);
    return balance;
  }
  positiveInteger(amount);
  if (amount > balance) throw new AmountError(`amount must be at most the remaining balance, ${balance}`, balance);
  return amount;
}

export function apply(state: TransactionState, action: TransactionAction): Transition {
  legal(action.type, state.status);
  switch (action.type) {
    case 'authorize_result':
      return authorizeOutcome(state, action.result, 'authorize_result');
    case 'capture': {
      planCapture(state, action.amount);
      const { status, error_code } = action.result;
      const captured = action.result.captured_amount ?? action.amount;
      if (status === 'captured') return to(state, 'capture_succeeded', { captured_amount: captured }, ['captured_at'], error_code);
      if (status === 'capture_pending' || status === 'unknown') return to(state, 'capture_pending', { captured_amount: captured }, [], error_code);
      return to(state, 'authorization_succeeded', {}, [], error_code ?? 'unknown_error');
    }
    case 'void': {
      const { status, error_code } = action.result;
      if (status === 'voided') return to(state, 'authorization_voided', {}, ['voided_at'], error_code);
      if (status === 'void_pending' || status === 'unknown') return to(state, 'authorization_void_pending', {}, [], error_code);
      return to(state, 'authorization_succeeded', {}, [], error_code ?? 'unknown_error');
    }
    case 'settle':
      return settle(state, action.result);
    case 'approval_expire':
      return to(state, 'authorization_failed', {}, [], 'incomplete_buyer_approval');
    case 'approval_fail':
      return to(state, 'authorization_failed', {}, [], action.reason === 'failed' ? 'failed_buyer_approval' : 'cancelled_buyer_approval');
    case 'refund': {
      const amount = planRefund(state, action.amount);
      return { state: { ...state, refunded_amount: state.refunded_amount + amount }, stamps: [], events: [] };
    }
    case 'refund_update':
      return refundUpdate(state, action.amount, action.from, action.to);
  }
}

/** The refund state machine: processing → succeeded | declined | failed | voided; a late failure after success. */
export const REFUND_TRANSITIONS: Readonly<Record<RefundStatus, readonly RefundStatus[]>> = {
  processing: ['succeeded', 'declined', 'failed', 'voided'],
  // Card refunds can fail after reporting success (the issuer sends the money back); the balance returns.
  succeeded: ['failed'],
  declined: [],
  failed: [],
  voided: [],
};

/** The refund statuses in which a refund no longer holds its share of the balance. */
const RELEASED: ReadonlySet<RefundStatus> = new Set(['declined', 'failed', 'voided']);

/** Whether a refund may move from one status to another; the same status again is a harmless repeat. */
export function canRefundMove(from: RefundStatus, to: RefundStatus): boolean {
  return from === to || REFUND_TRANSITIONS[from].includes(to);
}

/** A processor's refund answer as a refund status: an unknown outcome stays processing until polled. */
export function refundStatusOf(status: RefundResultStatus): RefundStatus {
  return status === 'unknown' ? 'processing' : status;
}

/** Gr4vy's intent_outcome: whether what the transaction was created for (authorize or capture) has happened. */
export function intentOutcome(status: TransactionStatus, intent: Intent): 'pending' | 'succeeded' | 'failed' {
  switch (status) {
    case 'processing': case 'buyer_approval_pending': return 'pending';
    case 'authorization_declined': case 'authorization_failed': return 'failed';
    case 'capture_succeeded': return 'succeeded';
    case 'authorization_succeeded': case 'capture_pending': return intent === 'authorize' ? 'succeeded' : 'pending';
    case 'authorization_void_pending': case 'authorization_voided': return intent === 'authorize' ? 'succeeded' : 'failed';
  }
}

function refundUpdate(state: TransactionState, amount: number, from: RefundStatus, next: RefundStatus): Transition {
  if (!canRefundMove(from, next)) throw new IllegalTransitionError('refund_update', from, `a refund whose status is ${from} cannot become ${next}`);
  positiveInteger(amount);
  const release = RELEASED.has(next) && !RELEASED.has(from);
  const refunded = release ? state.refunded_amount - amount : state.refunded_amount;
  if (refunded < 0) throw new AmountError(`releasing ${amount} would make refunded_amount negative`);
  const events: RefundEvent[] = from === next ? [] : next === 'succeeded' ? ['refund.succeeded'] : next === 'voided' ? [] : ['refund.failed'];
  return { state: { ...state, refunded_amount: refunded }, stamps: [], events };
}

/** An authorization's outcome, from an authorize call or a poll of a transaction still processing. */
function authorizeOutcome(state: TransactionState, result: Outcome, action: ActionType): Transition {
  const authorized = result.authorized_amount ?? state.amount;
  switch (result.status) {
    case 'authorized':
      return to(state, 'authorization_succeeded', { authorized_amount: authorized, captured_amount: 0 }, ['authorized_at'], result.error_code);
    case 'captured': case 'capture_pending': {
      const amounts = { authorized_amount: authorized, captured_amount: result.captured_amount ?? authorized };
      const stamps: Stamp[] = result.status === 'captured' ? ['authorized_at', 'captured_at'] : ['authorized_at'];
      return to(state, result.status === 'captured' ? 'capture_succeeded' : 'capture_pending', amounts, stamps, result.error_code);
    }
    case 'declined':
      return to(state, 'authorization_declined', cleared, [], result.error_code ?? 'issuer_decline');
    case 'failed':
      return to(state, 'authorization_failed', cleared, [], result.error_code ?? 'unknown_error');
    case 'requires_authentication':
      // A second demand after the buyer's approval means the approval did not satisfy the issuer.
      if (state.status === 'buyer_approval_pending') return to(state, 'authorization_failed', cleared, [], 'failed_buyer_approval');
      return to(state, 'buyer_approval_pending', {}, [], result.error_code);
    case 'unknown':
      return to(state, 'processing', {}, [], result.error_code);
  }
  throw new IllegalTransitionError(action, state.status, `the processor reported ${result.status} for a transaction whose status is ${state.status}`);
}

/** A status poll's answer applied to a transaction waiting on the processor. */
function settle(state: TransactionState, result: Outcome): Transition {
  const { status, error_code } = result;
  const unexpected = () => new IllegalTransitionError('settle', state.status, `the processor reported ${status} for a transaction whose status is ${state.status}`);
  if (state.status === 'processing') {
    if (status === 'voided' || status === 'void_pending') throw unexpected();
    return authorizeOutcome(state, result, 'settle');
  }
  if (state.status === 'capture_pending') {
    switch (status) {
      case 'captured':
        return to(state, 'capture_succeeded', { captured_amount: result.captured_amount ?? state.captured_amount }, ['captured_at'], error_code);
      case 'capture_pending': case 'unknown': return to(state, 'capture_pending', {}, [], error_code);
      case 'authorized': return to(state, 'authorization_succeeded', { captured_amount: 0 }, [], error_code);
      case 'voided': return to(state, 'authorization_voided', { captured_amount: 0 }, ['voided_at'], error_code);
      case 'declined': case 'failed': {
        const code = error_code ?? (status === 'declined' ? 'issuer_decline' : 'unknown_error');
        // A one-call authorize-and-capture that fails was never authorized; a separate capture that fails leaves the authorization.
        if (state.intent === 'authorize') return to(state, 'authorization_succeeded', { captured_amount: 0 }, [], code);
        return to(state, status === 'declined' ? 'authorization_declined' : 'authorization_failed', cleared, [], code);
      }
      default: throw unexpected();
    }
  }
  // authorization_void_pending
  switch (status) {
    case 'voided': return to(state, 'authorization_voided', {}, ['voided_at'], error_code);
    case 'void_pending': case 'unknown': return to(state, 'authorization_void_pending', {}, [], error_code);
    case 'authorized': return to(state, 'authorization_succeeded', {}, [], error_code);
    case 'declined': case 'failed': return to(state, 'authorization_succeeded', {}, [], error_code ?? 'unknown_error');
    default: throw unexpected();
  }
}

const cleared = { authorized_amount: 0, captured_amount: 0 };

const ENTER_EVENTS: Partial<Record<TransactionStatus, TransactionEvent>> = {
  authorization_succeeded: 'transaction.authorized',
  capture_succeeded: 'transaction.captured',
  authorization_voided: 'transaction.voided',
  authorization_declined: 'transaction.declined',
  authorization_failed: 'transaction.failed',
};

function to(state: TransactionState, status: TransactionStatus, amounts: Partial<TransactionState>, stamps: Stamp[], error_code: ErrorCode | undefined): Transition {
  const events: TransactionEvent[] = [];
  const firstAuthorization = state.status === 'processing' || state.status === 'buyer_approval_pending';
  // Going straight to a capture still tells listeners the money was authorized first.
  if (firstAuthorization && (status === 'capture_succeeded' || status === 'capture_pending')) events.push('transaction.authorized');
  // Falling back to authorization_succeeded (a capture or void that did not happen) is not a new authorization.
  const enter = ENTER_EVENTS[status];
  if (enter && status !== state.status && !(status === 'authorization_succeeded' && !firstAuthorization)) events.push(enter);
  return { state: { ...state, ...amounts, status }, stamps, error_code, events };
}

function legal(action: ActionType, status: TransactionStatus): void {
  if (!LEGAL_FROM[action]?.includes(status)) throw new IllegalTransitionError(action, status);
}

function positiveInteger(amount: number): void {
  if (!Number.isSafeInteger(amount) || amount <= 0) throw new AmountError('amount must be a positive integer (minor units); zero and negative amounts are not supported');
}
