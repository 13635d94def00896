/**
 * The payment processor interface: what Coffer's transactions feature asks of an acquirer or PSP.
 * Connectors implement it (the built-in test processor, coffer-test/; Stripe, stripe/); the
 * transactions feature picks one per connection and never talks to a processor any other way.
 *
 * Stateless towards Coffer: the feature keeps every transaction in PostgreSQL and hands the
 * connector, on each call, what it needs as arguments — the detokenized card, the amounts, the
 * processor's own ids from earlier answers (`TransactionRef`). A connector never reads a store.
 *
 * Expected outcomes — approvals, declines, failures, a processor that cannot be reached — are
 * returned as values with a `status` and an `error_code` (error-codes.ts); anything thrown is a
 * bug or a malformed call. `unknown` means the call may or may not have taken effect (a timeout,
 * a 5xx): the feature retries with the same idempotency key or polls `status()`, never assumes.
 */
import type { ErrorCode } from './error-codes.ts';

export type Intent = 'authorize' | 'capture';
export type PaymentSource = 'ecommerce' | 'card_on_file' | 'recurring';

/** The card, as the vault holds it, detokenized for this one call. */
export interface ProcessorCard {
  number: string;
  expiration_month: number;
  /** Four digits. */
  expiration_year: number;
  /** Absent for card-on-file and merchant-initiated payments (never stored beyond the first use). */
  cvc?: string;
  /** The vault's brand (src/vault/card-brands.ts); connectors derive it from the number when absent. */
  brand?: string;
  /** Set when `number` is a network token (DPAN): its cryptogram and ECI for this payment. */
  network_token?: { cryptogram: string; eci?: string };
  /** For AVS; the spec's transaction has none, so most calls leave it out. */
  billing_address?: { line1?: string; postal_code?: string; country?: string };
}

/** The completed 3DS authentication that goes with the payment (from a 3DS session). */
export interface ThreeDSData {
  /** Two digits: 05/06/07 (Visa and most), 02/01/00 (Mastercard). */
  eci: string;
  /** CAVV/AAV, 28 base64 characters. */
  authentication_value: string;
  /** 3DS protocol version, e.g. 2.2.0. */
  version: string;
  /** The Directory Server's transaction id (EMV dsTransID). */
  ds_transaction_id: string;
}

export interface AuthorizeRequest {
  /** Minor units (cents), > 0. */
  amount: number;
  /** ISO 4217, upper case. */
  currency: string;
  card: ProcessorCard;
  three_d_secure?: ThreeDSData;
  merchant_initiated: boolean;
  payment_source: PaymentSource;
  is_subsequent_payment: boolean;
  /** The network transaction id of the first payment of a series (MIT, recurring). */
  previous_scheme_transaction_id?: string | null;
  /** Sent to the processor as its idempotency key: the same key never charges twice. */
  idempotency_key: string;
  /** `capture`: authorize and capture in one call. */
  intent: Intent;
  /** Coffer's reconciliation_id, sent where the processor has a field for a merchant reference. */
  reconciliation_id?: string;
  /** Where a processor-hosted approval page (3DS) sends the buyer back to. */
  return_url?: string;
  /** The tenant the call is made for (the outbound client's per-tenant share of connections). */
  tenant_id?: string;
}

/** What Coffer knows of a transaction the processor has seen: enough for any later call. */
export interface TransactionRef {
  /** The processor's id from the authorize answer. */
  connection_transaction_id: string;
  /** The transaction's requested amount (the test processor keys follow-up outcomes on it). */
  amount: number;
  currency: string;
  authorized_amount: number;
  captured_amount: number;
  /** Coffer's status of the transaction (src/processors/transitions.ts). */
  status: string;
  tenant_id?: string;
}

export interface CaptureRequest {
  transaction: TransactionRef;
  /** At most `authorized_amount`; the rest of the authorization is released. */
  amount: number;
  idempotency_key: string;
}

export interface VoidRequest {
  transaction: TransactionRef;
  idempotency_key: string;
}

export interface RefundRequest {
  transaction: TransactionRef;
  amount: number;
  /** Free text from the merchant; connectors pass it where the processor takes one. */
  reason?: string;
  idempotency_key: string;
}

/** The spec's cvv_response_code values. */
export type CvvResponseCode = 'match' | 'no_match' | 'unavailable' | 'not_provided';
/** Gr4vy's avs_response_code values: partial_match_address = the street matched, the postal code did not. */
export type AvsResponseCode = 'match' | 'no_match' | 'partial_match_address' | 'partial_match_postcode' | 'unavailable' | 'not_provided';

/** What every answer may carry besides its status. */
interface Answer {
  /** Set whenever the status is not a success; see error-codes.ts. */
  error_code?: ErrorCode;
  /** The processor's own code and text, untranslated, for support and reconciliation. */
  raw_response_code?: string;
  raw_response_description?: string;
}

export type AuthorizeStatus =
  | 'authorized'              // funds held; capture later
  | 'captured'                // intent capture: authorized and captured
  | 'capture_pending'         // intent capture: the capture settles later (poll at `settles_at`)
  | 'declined'                // the issuer or risk engine said no (error_code is a decline)
  | 'failed'                  // anything else went wrong, definitely without effect
  | 'requires_authentication' // the buyer must authenticate (3DS) first: buyer approval
  | 'unknown';                // no definite answer; retry with the same key or poll

export interface AuthorizeResult extends Answer {
  status: AuthorizeStatus;
  connection_transaction_id?: string;
  /** The network's id for the payment (Visa/Amex TID, Mastercard Banknet reference + date…). */
  scheme_transaction_id?: string;
  /** The issuer's ISO 8583 response code (field 39), e.g. 00, 05, 51. */
  auth_response_code?: string;
  avs_response_code?: AvsResponseCode;
  cvv_response_code?: CvvResponseCode;
  authorized_amount?: number;
  captured_amount?: number;
  /** requires_authentication: a processor-hosted page the buyer must visit, when the processor has one. */
  approval_url?: string;
  /** capture_pending: the earliest time a status() poll can report the settled capture. */
  settles_at?: string;
}

export type CaptureStatus = 'captured' | 'capture_pending' | 'declined' | 'failed' | 'unknown';

export interface CaptureResult extends Answer {
  status: CaptureStatus;
  captured_amount?: number;
  /** capture_pending: when to poll status(). */
  settles_at?: string;
}

export type VoidStatus = 'voided' | 'void_pending' | 'declined' | 'failed' | 'unknown';

export interface VoidResult extends Answer {
  status: VoidStatus;
}

/** `voided`: the processor cancelled the refund before it was paid out. */
export type RefundResultStatus = 'succeeded' | 'processing' | 'declined' | 'failed' | 'voided' | 'unknown';

export interface RefundResult extends Answer {
  status: RefundResultStatus;
  connection_refund_id?: string;
  /** processing: when to poll refundStatus(). */
  settles_at?: string;
}

/** A status poll's answer: where the processor says the transaction is now. */
export type PolledStatus =
  | 'authorized' | 'captured' | 'capture_pending' | 'voided' | 'void_pending'
  | 'declined' | 'failed' | 'requires_authentication' | 'unknown';

export interface StatusResult extends Answer {
  status: PolledStatus;
  authorized_amount?: number;
  captured_amount?: number;
  scheme_transaction_id?: string;
  settles_at?: string;
}

export interface StatusRequest {
  transaction: TransactionRef;
}

export interface RefundStatusRequest {
  transaction: TransactionRef;
  connection_refund_id: string;
  amount: number;
}

export interface Processor {
  /** The connection's `processor` value: `coffer-test`, `stripe`. */
  readonly name: string;
  /**
   * Set by a processor whose calls have no effect outside this process (the test processor):
   * nothing can be charged that Coffer does not record, so a new transaction is written once,
   * with its outcome, instead of before and after its call (docs/orchestration.md, Money safety).
   */
  readonly local?: boolean;
  authorize(request: AuthorizeRequest): Promise<AuthorizeResult>;
  capture(request: CaptureRequest): Promise<CaptureResult>;
  void(request: VoidRequest): Promise<VoidResult>;
  refund(request: RefundRequest): Promise<RefundResult>;
  /** For transactions left processing, capture_pending or authorization_void_pending. */
  status?(request: StatusRequest): Promise<StatusResult>;
  /** For refunds left processing. */
  refundStatus?(request: RefundStatusRequest): Promise<RefundResult>;
}

/**
 * The HTTP a connector may use: the shape of OutboundClient.request (src/outbound/client.ts),
 * which the features layer passes so every processor call gets the guarded client's address
 * checks, deadline, size limit and per-tenant connection share. Tests pass the same client.
 */
export interface ProcessorHttpRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs?: number;
  tenantId?: string;
}

export interface ProcessorHttpResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Uint8Array;
}

export type ProcessorHttp = (request: ProcessorHttpRequest) => Promise<ProcessorHttpResponse>;
