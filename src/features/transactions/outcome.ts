/**
 * A processor's answer applied to a transaction row: the state machine (src/processors/
 * transitions.ts) decides the status, amounts, stamps and events; this fills in what the answer
 * carries besides (response codes, the processor's ids). Pure, given the time.
 */
import {
  apply, type AuthorizeResult, type CaptureResult, type StatusResult, type TransactionAction, type TransactionState, type Transition, type VoidResult,
} from '../../processors/index.ts';
import type { TransactionRow } from './store.ts';

export type Answer = Partial<Omit<AuthorizeResult, 'status'> & Omit<CaptureResult, 'status'> & Omit<StatusResult, 'status'> & Omit<VoidResult, 'status'>> & { status: string };

export function stateOf(row: TransactionRow): TransactionState {
  return {
    status: row.status,
    intent: row.intent,
    amount: row.amount,
    authorized_amount: row.authorized_amount,
    captured_amount: row.captured_amount,
    refunded_amount: row.refunded_amount,
  };
}

/** The row after `action`, answered by `answer`, at `now`; with the transition (its events). */
export function applyAnswer(row: TransactionRow, action: TransactionAction, answer: Answer | undefined, now: Date): { row: TransactionRow; transition: Transition } {
  const transition = apply(stateOf(row), action);
  const next: TransactionRow = { ...row, ...transition.state, updated_at: now };
  for (const stamp of transition.stamps) next[stamp] = now;
  if (transition.error_code !== undefined) next.error_code = transition.error_code;
  else if (['authorization_succeeded', 'capture_succeeded', 'authorization_voided', 'capture_pending'].includes(next.status) && next.status !== row.status) {
    // A success after a failed attempt (a capture retried) no longer carries the old error.
    next.error_code = null;
  }
  if (answer) {
    next.auth_response_code = answer.auth_response_code ?? next.auth_response_code;
    next.cvv_response_code = answer.cvv_response_code ?? next.cvv_response_code;
    next.avs_response_code = answer.avs_response_code ?? next.avs_response_code;
    next.raw_response_code = answer.raw_response_code ?? next.raw_response_code;
    next.raw_response_description = answer.raw_response_description ?? next.raw_response_description;
    next.connection_transaction_id = answer.connection_transaction_id ?? next.connection_transaction_id;
    next.scheme_transaction_id = answer.scheme_transaction_id ?? next.scheme_transaction_id;
  }
  return { row: next, transition };
}

/** When a transaction waiting on the processor (capture or void pending) should be polled. */
export function pollAt(answer: Answer | undefined, now: Date): Date {
  const at = answer?.settles_at ? Date.parse(answer.settles_at) : NaN;
  return new Date(Number.isFinite(at) ? Math.max(at, now.getTime()) : now.getTime() + 5_000);
}
