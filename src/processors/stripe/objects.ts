/**
 * Stripe's PaymentIntent, Charge and Refund objects (the fields this connector reads) and how
 * they read as Coffer's results. Shapes as of the API version the connector pins (processor.ts);
 * `latest_charge` is expanded on every call that returns an intent.
 */
import type { ErrorCode } from '../error-codes.ts';
import type { AuthorizeResult, AvsResponseCode, CvvResponseCode, PolledStatus, RefundResult } from '../processor.ts';
import { mapRefundFailure, mapStripeError, type StripeErrorBody } from './errors.ts';

type Check = 'pass' | 'fail' | 'unavailable' | 'unchecked' | null | undefined;

export interface StripeCharge {
  id: string;
  object?: 'charge';
  outcome?: { network_status?: string; network_decline_code?: string | null; seller_message?: string; type?: string; reason?: string | null } | null;
  payment_method_details?: {
    card?: {
      network_transaction_id?: string | null;
      checks?: { address_line1_check?: Check; address_postal_code_check?: Check; cvc_check?: Check } | null;
    } | null;
  } | null;
}

export interface StripeIntent {
  id: string;
  object: 'payment_intent';
  status: 'requires_payment_method' | 'requires_confirmation' | 'requires_action' | 'processing' | 'requires_capture' | 'canceled' | 'succeeded';
  amount: number;
  amount_capturable?: number;
  amount_received?: number;
  capture_method?: string;
  latest_charge?: string | StripeCharge | null;
  last_payment_error?: StripeErrorBody | null;
  next_action?: { type?: string; redirect_to_url?: { url?: string } } | null;
}

export interface StripeRefund {
  id: string;
  object: 'refund';
  amount: number;
  status: 'pending' | 'requires_action' | 'succeeded' | 'failed' | 'canceled';
  failure_reason?: string | null;
}

export function isIntent(value: unknown): value is StripeIntent {
  const v = value as StripeIntent | null;
  return typeof v === 'object' && v !== null && v.object === 'payment_intent' && typeof v.id === 'string' && typeof v.status === 'string';
}

export function isRefund(value: unknown): value is StripeRefund {
  const v = value as StripeRefund | null;
  return typeof v === 'object' && v !== null && v.object === 'refund' && typeof v.id === 'string' && typeof v.status === 'string';
}

function charge(intent: StripeIntent): StripeCharge | undefined {
  return typeof intent.latest_charge === 'object' && intent.latest_charge !== null ? intent.latest_charge : undefined;
}

export function cvvOf(check: Check): CvvResponseCode {
  return check === 'pass' ? 'match' : check === 'fail' ? 'no_match' : check === 'unavailable' ? 'unavailable' : 'not_provided';
}

export function avsOf(line1: Check, postal: Check): AvsResponseCode {
  if (line1 === 'pass' && postal === 'pass') return 'match';
  if (line1 === 'fail' && postal === 'fail') return 'no_match';
  if (line1 === 'pass' && postal === 'fail') return 'partial_match_address';
  if (line1 === 'fail' && postal === 'pass') return 'partial_match_postcode';
  if (line1 === 'unavailable' || postal === 'unavailable') return 'unavailable';
  // One of them checked and passed, the other not sent: a match on what was given.
  if (line1 === 'pass' || postal === 'pass') return 'match';
  if (line1 === 'fail' || postal === 'fail') return 'no_match';
  return 'not_provided';
}

/** The network and check details every result built from an intent carries. */
export function details(intent: StripeIntent): Partial<AuthorizeResult> {
  const c = charge(intent);
  const card = c?.payment_method_details?.card;
  const checks = card?.checks;
  const approved = c?.outcome?.network_status === 'approved_by_network';
  return {
    connection_transaction_id: intent.id,
    scheme_transaction_id: card?.network_transaction_id ?? undefined,
    // Stripe gives the issuer's code only for declines; an approval by the network is ISO 8583 00.
    auth_response_code: approved ? '00' : (c?.outcome?.network_decline_code ?? undefined),
    cvv_response_code: checks ? cvvOf(checks.cvc_check) : undefined,
    avs_response_code: checks ? avsOf(checks.address_line1_check, checks.address_postal_code_check) : undefined,
    raw_response_code: intent.status,
    raw_response_description: c?.outcome?.seller_message,
  };
}

/** Where an intent stands, as a poll answer. `waiting` is Coffer's status, for what Stripe's alone cannot say. */
export function polled(intent: StripeIntent, waiting: string): { status: PolledStatus; error_code?: ErrorCode } {
  switch (intent.status) {
    case 'requires_capture': return { status: 'authorized' };
    case 'succeeded': return { status: 'captured' };
    case 'requires_action': return { status: 'requires_authentication' };
    // Card intents process briefly; after a capture that is a pending capture, before it an undecided authorization.
    case 'processing': return { status: waiting === 'processing' ? 'unknown' : 'capture_pending' };
    case 'requires_confirmation': return { status: 'unknown' };
    // An intent cancelled before it was authorized is a failed authorization, not a voided one.
    case 'canceled': return waiting === 'processing' ? { status: 'failed', error_code: 'invalid_operation' } : { status: 'voided' };
    case 'requires_payment_method': {
      const mapped = mapStripeError(402, intent.last_payment_error ?? { type: 'card_error', code: 'card_declined' });
      return { status: mapped.status === 'unknown' ? 'failed' : mapped.status, error_code: mapped.error_code };
    }
  }
  return { status: 'unknown', error_code: 'invalid_service_response' };
}

export function refundResult(refund: StripeRefund): RefundResult {
  const base = { connection_refund_id: refund.id, raw_response_code: refund.status, raw_response_description: refund.failure_reason ?? undefined };
  switch (refund.status) {
    case 'succeeded': return { ...base, status: 'succeeded' };
    case 'pending': case 'requires_action': return { ...base, status: 'processing' };
    case 'canceled': return { ...base, status: 'voided' };
    case 'failed': {
      const error_code = mapRefundFailure(refund.failure_reason ?? undefined);
      return { ...base, status: error_code === 'issuer_decline' ? 'declined' : 'failed', error_code };
    }
  }
  return { ...base, status: 'unknown', error_code: 'invalid_service_response' };
}
