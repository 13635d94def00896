/**
 * `stripe`: a connector for Stripe's REST API, charging raw card data through PaymentIntents
 * (the account must be enabled for raw card data — Stripe's PCI requirement for sending PANs).
 *
 *   authorize → POST /v1/payment_intents  confirm=true, capture_method manual (intent authorize) or automatic
 *   capture   → POST /v1/payment_intents/{id}/capture  amount_to_capture
 *   void      → POST /v1/payment_intents/{id}/cancel
 *   refund    → POST /v1/refunds  payment_intent, amount
 *   status    → GET  /v1/payment_intents/{id}      refundStatus → GET /v1/refunds/{id}
 *
 * Every POST carries `Idempotency-Key` (Stripe replays the first answer for 24 h), every call
 * `Stripe-Version` and the secret key as a Bearer token. HTTP goes through the injected function
 * (the guarded outbound client). Tested against a local fake of these endpoints
 * (test/processors/stripe-fake.ts), not against api.stripe.com.
 */
import type { ErrorCode } from '../error-codes.ts';
import type {
  AuthorizeRequest, AuthorizeResult, CaptureRequest, CaptureResult, Processor, ProcessorHttp, RefundRequest, RefundResult,
  RefundStatusRequest, StatusRequest, StatusResult, VoidRequest, VoidResult,
} from '../processor.ts';
import { mapStripeError, mapTransportError, type StripeErrorBody } from './errors.ts';
import { encodeForm, type FormValue } from './form.ts';
import { details, isIntent, isRefund, polled, refundResult, type StripeIntent, type StripeRefund } from './objects.ts';

export const STRIPE = 'stripe';
export const STRIPE_DEFAULT_BASE_URL = 'https://api.stripe.com';
/** The API version every request pins, so Stripe's answers keep the shapes objects.ts reads. */
export const STRIPE_API_VERSION = '2024-06-20';
/** Stripe's metadata values hold at most 500 characters. */
const METADATA_MAX = 500;

export interface StripeOptions {
  /** sk_live_… / sk_test_… (or a restricted rk_… key with PaymentIntents and Refunds write). */
  secretKey: string;
  http: ProcessorHttp;
  baseUrl?: string;
  apiVersion?: string;
  /** Per call; default 30 s. */
  timeoutMs?: number;
}

type Answer<T> = { ok: true; value: T } | { ok: false; status: 'declined' | 'failed' | 'unknown'; error_code: ErrorCode; error?: StripeErrorBody };

export class StripeProcessor implements Processor {
  readonly name = STRIPE;
  readonly #key: string;
  readonly #http: ProcessorHttp;
  readonly #base: string;
  readonly #version: string;
  readonly #timeoutMs: number;

  constructor(options: StripeOptions) {
    if (typeof options.secretKey !== 'string' || options.secretKey.trim() === '') throw new TypeError('a Stripe secret key is required');
    if (typeof options.http !== 'function') throw new TypeError('an HTTP function is required');
    this.#key = options.secretKey;
    this.#http = options.http;
    this.#base = (options.baseUrl ?? STRIPE_DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.#version = options.apiVersion ?? STRIPE_API_VERSION;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  async authorize(req: AuthorizeRequest): Promise<AuthorizeResult> {
    const { card } = req;
    // Stripe documents no PaymentIntent field for a network token's own cryptogram: refuse before sending.
    if (card.network_token) {
      return { status: 'failed', error_code: 'unsupported_payment_method', raw_response_description: 'network tokens with a cryptogram are not supported by the stripe connector' };
    }
    const mit = req.merchant_initiated;
    const tds = req.three_d_secure;
    const params: Record<string, FormValue> = {
      amount: req.amount,
      currency: req.currency.toLowerCase(),
      confirm: true,
      capture_method: req.intent === 'authorize' ? 'manual' : 'automatic',
      payment_method_types: ['card'],
      payment_method_data: {
        type: 'card',
        card: { number: card.number, exp_month: card.expiration_month, exp_year: card.expiration_year, cvc: card.cvc },
        billing_details: card.billing_address ? { address: { ...card.billing_address } } : undefined,
      },
      payment_method_options: {
        card: {
          three_d_secure: tds
            ? { version: tds.version, electronic_commerce_indicator: tds.eci, cryptogram: tds.authentication_value, transaction_id: tds.ds_transaction_id }
            : undefined,
          // Links a merchant-initiated payment to the cardholder-initiated one it follows.
          mit_exemption: mit && req.previous_scheme_transaction_id ? { network_transaction_id: req.previous_scheme_transaction_id } : undefined,
        },
      },
      off_session: mit ? true : undefined,
      return_url: req.return_url,
      metadata: req.reconciliation_id ? { coffer_reconciliation_id: req.reconciliation_id } : undefined,
      expand: ['latest_charge'],
    };
    const answer = await this.#call<StripeIntent>('POST', '/v1/payment_intents', params, req.idempotency_key, isIntent, req.tenant_id);
    if (!answer.ok) return this.#failedAuthorization(answer, mit);
    const intent = answer.value;
    const common = details(intent);
    switch (intent.status) {
      case 'requires_capture':
        return { ...common, status: 'authorized', authorized_amount: intent.amount_capturable ?? intent.amount };
      case 'succeeded':
        return { ...common, status: 'captured', authorized_amount: intent.amount, captured_amount: intent.amount_received ?? intent.amount };
      case 'requires_action':
        return { ...common, status: 'requires_authentication', approval_url: intent.next_action?.redirect_to_url?.url };
      case 'processing':
        return { ...common, status: req.intent === 'capture' ? 'capture_pending' : 'unknown' };
      default: {
        const p = polled(intent, 'processing');
        return { ...common, status: p.status === 'declined' || p.status === 'failed' ? p.status : 'unknown', error_code: p.error_code };
      }
    }
  }

  async capture(req: CaptureRequest): Promise<CaptureResult> {
    const path = `/v1/payment_intents/${encodeURIComponent(req.transaction.connection_transaction_id)}/capture`;
    const answer = await this.#call<StripeIntent>('POST', path, { amount_to_capture: req.amount, expand: ['latest_charge'] }, req.idempotency_key, isIntent, req.transaction.tenant_id);
    if (!answer.ok) return failure(answer);
    const intent = answer.value;
    const raw = { raw_response_code: intent.status };
    if (intent.status === 'succeeded') return { ...raw, status: 'captured', captured_amount: intent.amount_received ?? req.amount };
    if (intent.status === 'processing') return { ...raw, status: 'capture_pending', captured_amount: req.amount };
    return { ...raw, status: 'unknown', error_code: 'unexpected_state' };
  }

  async void(req: VoidRequest): Promise<VoidResult> {
    const path = `/v1/payment_intents/${encodeURIComponent(req.transaction.connection_transaction_id)}/cancel`;
    const answer = await this.#call<StripeIntent>('POST', path, {}, req.idempotency_key, isIntent, req.transaction.tenant_id);
    if (!answer.ok) return failure(answer);
    const intent = answer.value;
    if (intent.status === 'canceled') return { status: 'voided', raw_response_code: intent.status };
    return { status: 'unknown', error_code: 'unexpected_state', raw_response_code: intent.status };
  }

  async refund(req: RefundRequest): Promise<RefundResult> {
    const params = {
      payment_intent: req.transaction.connection_transaction_id,
      amount: req.amount,
      // Stripe's own `reason` is an enum; the merchant's free text goes to metadata.
      metadata: req.reason ? { coffer_reason: req.reason.slice(0, METADATA_MAX) } : undefined,
    };
    const answer = await this.#call<StripeRefund>('POST', '/v1/refunds', params, req.idempotency_key, isRefund, req.transaction.tenant_id);
    if (!answer.ok) return failure(answer);
    return refundResult(answer.value);
  }

  async status(req: StatusRequest): Promise<StatusResult> {
    const path = `/v1/payment_intents/${encodeURIComponent(req.transaction.connection_transaction_id)}?expand[0]=latest_charge`;
    const answer = await this.#call<StripeIntent>('GET', path, undefined, undefined, isIntent, req.transaction.tenant_id);
    if (!answer.ok) return { status: 'unknown', error_code: answer.error_code, raw_response_code: answer.error?.code, raw_response_description: redact(answer.error?.message) };
    const intent = answer.value;
    const { scheme_transaction_id, raw_response_code, raw_response_description } = details(intent);
    const p = polled(intent, req.transaction.status);
    return {
      ...p, scheme_transaction_id, raw_response_code, raw_response_description,
      authorized_amount: intent.amount,
      captured_amount: p.status === 'captured' ? (intent.amount_received ?? intent.amount) : undefined,
    };
  }

  async refundStatus(req: RefundStatusRequest): Promise<RefundResult> {
    const answer = await this.#call<StripeRefund>('GET', `/v1/refunds/${encodeURIComponent(req.connection_refund_id)}`, undefined, undefined, isRefund, req.transaction.tenant_id);
    if (!answer.ok) return { status: 'unknown', error_code: answer.error_code, connection_refund_id: req.connection_refund_id };
    return refundResult(answer.value);
  }

  #failedAuthorization(answer: Extract<Answer<unknown>, { ok: false }>, mit: boolean): AuthorizeResult {
    const intent = answer.error?.payment_intent;
    const result: AuthorizeResult = { ...failure(answer), connection_transaction_id: typeof intent?.id === 'string' ? intent.id : undefined };
    if (answer.error_code === 'incorrect_cvv') result.cvv_response_code = 'no_match';
    // The issuer wants the cardholder: with a buyer present that is buyer approval, without one a failure.
    if (answer.error_code === 'requires_buyer_authentication' && !mit) result.status = 'requires_authentication';
    return result;
  }

  async #call<T>(method: 'GET' | 'POST', path: string, params: Record<string, FormValue> | undefined, idempotencyKey: string | undefined, valid: (v: unknown) => v is T, tenantId?: string): Promise<Answer<T>> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#key}`,
      'stripe-version': this.#version,
      accept: 'application/json',
      'user-agent': 'Coffer (processor stripe)',
    };
    let body: string | undefined;
    if (method === 'POST') {
      if (typeof idempotencyKey !== 'string' || idempotencyKey === '') throw new TypeError('an idempotency key is required');
      headers['idempotency-key'] = idempotencyKey;
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = encodeForm(params ?? {});
    }
    let response;
    try {
      response = await this.#http({ url: `${this.#base}${path}`, method, headers, body, timeoutMs: this.#timeoutMs, tenantId });
    } catch (err) {
      return { ok: false, ...mapTransportError(err) };
    }
    const parsed = parseJson(response.body);
    if (response.status >= 200 && response.status < 300) {
      // A success we cannot read may still have moved money.
      return valid(parsed) ? { ok: true, value: parsed } : { ok: false, status: 'unknown', error_code: 'invalid_service_response' };
    }
    const error = (parsed as { error?: StripeErrorBody } | undefined)?.error;
    const body4xx = typeof error === 'object' && error !== null ? error : undefined;
    return { ok: false, ...mapStripeError(response.status, body4xx), error: body4xx };
  }
}

function failure(answer: Extract<Answer<unknown>, { ok: false }>): { status: 'declined' | 'failed' | 'unknown'; error_code: ErrorCode; raw_response_code?: string; raw_response_description?: string } {
  const e = answer.error;
  return { status: answer.status, error_code: answer.error_code, raw_response_code: e?.decline_code ?? e?.code, raw_response_description: redact(e?.message) };
}

/** Stripe masks keys in its messages; this makes sure none reaches a stored transaction whatever the answer says. */
function redact(message: string | undefined): string | undefined {
  return message?.replace(/\b(sk|rk|pk)_(live|test)_[0-9A-Za-z]+/g, '[redacted key]');
}

function parseJson(body: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch {
    return undefined;
  }
}
