/**
 * A local fake of the parts of Stripe's HTTP API the stripe connector uses, written from Stripe's
 * API reference (PaymentIntents create/retrieve/capture/cancel, Refunds create/retrieve, errors,
 * idempotent requests, versioning). It is strict where Stripe is, so the connector is tested for
 * what it sends: Bearer key, Stripe-Version (must be the pinned one here), form encoding with
 * bracketed keys (unknown or malformed parameters → 400), Idempotency-Key on every POST (the
 * first answer replayed with `Idempotent-Replayed: true`; the key with other parameters →
 * 400 idempotency_error). Cards behave as Stripe's test cards. Never exercised against the
 * internet: this fake is what the connector's tests prove it against.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkParams, decodeForm, FormError, type Params, SCHEMAS } from './stripe-form.ts';

export interface Recorded { method: string; path: string; headers: http.IncomingHttpHeaders; body: string; params: Params }
type Reply = { status: number; body: unknown };
type Fault = { status: number; body?: unknown } | { destroy: true };
type Intent = Record<string, any>;

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
const fail = (status: number, type: string, message: string, more: object = {}): Reply => ({ status, body: { error: { type, message, ...more } } });

export async function startStripeFake(options: { secretKey?: string; apiVersion?: string } = {}) {
  const secretKey = options.secretKey ?? 'sk_test_fake';
  const apiVersion = options.apiVersion ?? '2024-06-20';
  const requests: Recorded[] = [];
  const intents = new Map<string, Intent>();
  const refunds = new Map<string, Record<string, unknown>>();
  const keys = new Map<string, { fingerprint: string; reply: Reply }>();
  const faults: Fault[] = [];

  function charge(pi: Intent, p: Params): Record<string, unknown> {
    const card = (p.payment_method_data as Params).card as Params;
    const address = ((p.payment_method_data as Params).billing_details as Params | undefined)?.address as Params | undefined;
    return {
      id: id('ch'), object: 'charge', amount: pi.amount, captured: pi.status === 'succeeded',
      outcome: { network_status: 'approved_by_network', type: 'authorized', reason: null, risk_level: 'normal', seller_message: 'Payment complete.' },
      payment_method_details: {
        type: 'card',
        card: {
          brand: 'visa', last4: String(card.number).slice(-4), exp_month: Number(card.exp_month), exp_year: Number(card.exp_year),
          network_transaction_id: String(randomBytes(8).readBigUInt64BE() % 10n ** 15n).padStart(15, '1'),
          checks: { cvc_check: card.cvc ? 'pass' : null, address_line1_check: address?.line1 ? 'pass' : null, address_postal_code_check: address?.postal_code ? 'pass' : null },
        },
      },
    };
  }

  function view(pi: Intent, expand: unknown): Intent {
    const expanded = Array.isArray(expand) && expand.includes('latest_charge');
    return { ...pi, latest_charge: pi.latest_charge ? (expanded ? pi.latest_charge : pi.latest_charge.id) : null, _params: undefined };
  }

  function declined(pi: Intent, code: string, decline_code?: string): Reply {
    pi.status = 'requires_payment_method';
    pi.last_payment_error = { type: 'card_error', code, decline_code, message: `Your card was declined (${decline_code ?? code}).` };
    intents.set(pi.id, pi);
    return fail(402, 'card_error', pi.last_payment_error.message, { code, decline_code, charge: id('ch'), payment_intent: view(pi, []) });
  }

  function createIntent(p: Params): Reply {
    if (!/^[1-9]\d*$/.test(String(p.amount))) return fail(400, 'invalid_request_error', 'Invalid integer: amount', { code: 'parameter_invalid_integer', param: 'amount' });
    if (!/^[a-z]{3}$/.test(String(p.currency))) return fail(400, 'invalid_request_error', 'Invalid currency', { code: 'parameter_invalid', param: 'currency' });
    if (p.confirm !== 'true' || (p.payment_method_data as Params)?.type !== 'card') return fail(400, 'invalid_request_error', 'This fake supports confirm=true with card payment_method_data', { code: 'parameter_missing' });
    if (!['manual', 'automatic'].includes(String(p.capture_method))) return fail(400, 'invalid_request_error', 'Invalid capture_method', { code: 'parameter_invalid', param: 'capture_method' });
    const tds = ((p.payment_method_options as Params | undefined)?.card as Params | undefined)?.three_d_secure as Params | undefined;
    if (tds && !['01', '02', '05', '06', '07'].includes(String(tds.electronic_commerce_indicator))) return fail(400, 'invalid_request_error', 'Invalid electronic_commerce_indicator', { code: 'parameter_invalid' });
    const number = String(((p.payment_method_data as Params).card as Params).number);
    const pi: Intent = {
      id: id('pi'), object: 'payment_intent', amount: Number(p.amount), currency: p.currency, capture_method: p.capture_method,
      amount_capturable: 0, amount_received: 0, status: 'processing', latest_charge: null, last_payment_error: null, next_action: null,
      metadata: p.metadata ?? {}, _params: p,
    };
    const outcomes: Record<string, [string, string?]> = {
      '4000000000000002': ['card_declined', 'generic_decline'], '4000000000009995': ['card_declined', 'insufficient_funds'],
      '4000000000000127': ['incorrect_cvc'], '4000000000000069': ['expired_card'], '4000000000000119': ['processing_error'],
    };
    if (outcomes[number]) return declined(pi, ...outcomes[number]);
    if (number === '4000000000003220' && !tds) {
      if (p.off_session === 'true') return declined(pi, 'card_declined', 'authentication_required');
      pi.status = 'requires_action';
      pi.next_action = p.return_url
        ? { type: 'redirect_to_url', redirect_to_url: { url: `https://hooks.stripe.com/3d_secure_2/hosted?payment_intent=${pi.id}`, return_url: p.return_url } }
        : { type: 'use_stripe_sdk', use_stripe_sdk: { type: 'three_d_secure_redirect' } };
      intents.set(pi.id, pi);
      return { status: 200, body: view(pi, p.expand) };
    }
    pi.status = p.capture_method === 'manual' ? 'requires_capture' : 'succeeded';
    pi.amount_capturable = pi.status === 'requires_capture' ? pi.amount : 0;
    pi.amount_received = pi.status === 'succeeded' ? pi.amount : 0;
    pi.latest_charge = charge(pi, p);
    intents.set(pi.id, pi);
    return { status: 200, body: view(pi, p.expand) };
  }

  function unexpected(pi: Intent, action: string): Reply {
    return fail(400, 'invalid_request_error', `This PaymentIntent could not be ${action} because it has a status of ${pi.status}.`, { code: 'payment_intent_unexpected_state', payment_intent: view(pi, []) });
  }

  function route(method: string, path: string, p: Params): Reply {
    const [, , resource, rid, action] = path.split('/');
    const pi = rid ? intents.get(rid) : undefined;
    const missing = () => fail(404, 'invalid_request_error', `No such ${resource === 'refunds' ? 'refund' : 'payment_intent'}: '${rid}'`, { code: 'resource_missing', param: 'id' });
    if (resource === 'payment_intents' && method === 'POST' && !rid) return createIntent(p);
    if (resource === 'payment_intents' && rid) {
      if (!pi) return missing();
      if (method === 'GET') return { status: 200, body: view(pi, p.expand) };
      if (action === 'capture') {
        if (pi.status !== 'requires_capture') return unexpected(pi, 'captured');
        const amount = p.amount_to_capture === undefined ? pi.amount_capturable : Number(p.amount_to_capture);
        if (amount > pi.amount_capturable) return fail(400, 'invalid_request_error', 'amount_to_capture is greater than amount_capturable', { code: 'amount_too_large', param: 'amount_to_capture' });
        Object.assign(pi, { status: 'succeeded', amount_received: amount, amount_capturable: 0 });
        pi.latest_charge.captured = true;
        return { status: 200, body: view(pi, p.expand) };
      }
      if (action === 'cancel') {
        if (pi.status === 'succeeded' || pi.status === 'canceled') return unexpected(pi, 'canceled');
        Object.assign(pi, { status: 'canceled', amount_capturable: 0, cancellation_reason: p.cancellation_reason ?? null });
        return { status: 200, body: view(pi, p.expand) };
      }
    }
    if (resource === 'refunds' && method === 'GET') return refunds.has(rid) ? { status: 200, body: refunds.get(rid) } : missing();
    if (resource === 'refunds' && method === 'POST' && !rid) {
      const target = intents.get(String(p.payment_intent));
      if (!target) return fail(404, 'invalid_request_error', `No such payment_intent: '${p.payment_intent}'`, { code: 'resource_missing', param: 'payment_intent' });
      if (target.status !== 'succeeded') return fail(400, 'invalid_request_error', 'This PaymentIntent does not have a successful charge to refund.', { code: 'charge_not_refundable' });
      const left = target.amount_received - (target.amount_refunded ?? 0);
      if (left === 0) return fail(400, 'invalid_request_error', `Charge ${target.latest_charge.id} has already been refunded.`, { code: 'charge_already_refunded' });
      const amount = p.amount === undefined ? left : Number(p.amount);
      if (amount > left) return fail(400, 'invalid_request_error', `Refund amount is greater than unrefunded amount on charge (${left})`, { code: 'amount_too_large', param: 'amount' });
      target.amount_refunded = (target.amount_refunded ?? 0) + amount;
      const refund = { id: id('re'), object: 'refund', amount, currency: target.currency, status: 'succeeded', payment_intent: target.id, charge: target.latest_charge.id, reason: p.reason ?? null, metadata: p.metadata ?? {}, failure_reason: null };
      refunds.set(refund.id, refund);
      return { status: 200, body: refund };
    }
    return fail(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path}).`);
  }

  function handle(req: http.IncomingMessage, raw: string): Reply & { replayed?: boolean } {
    const url = new URL(req.url!, 'http://fake');
    const method = req.method!;
    const body = method === 'GET' ? url.search.slice(1) : raw;
    let params: Params = {};
    let formError: FormError | undefined;
    try {
      params = decodeForm(body);
      const schema = SCHEMAS[`${method} ${url.pathname.replace(/^\/v1\/(payment_intents|refunds)\/[^/]+/, '/v1/$1/:id')}`];
      if (schema) checkParams(params, schema);
    } catch (err) {
      if (!(err instanceof FormError)) throw err;
      formError = err;
    }
    requests.push({ method, path: url.pathname, headers: req.headers, body, params });
    if (req.headers.authorization !== `Bearer ${secretKey}`) return fail(401, 'invalid_request_error', 'Invalid API Key provided.');
    if (req.headers['stripe-version'] !== apiVersion) return fail(400, 'invalid_request_error', `Invalid Stripe API version: ${req.headers['stripe-version']}`);
    if (formError) return fail(400, 'invalid_request_error', formError.message, { code: formError.code, param: formError.param });
    if (method === 'GET') return route(method, url.pathname, params);
    if (req.headers['content-type'] !== 'application/x-www-form-urlencoded') return fail(400, 'invalid_request_error', 'Invalid content type');
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '' || key.length > 255) return fail(400, 'invalid_request_error', 'This fake wants an Idempotency-Key on every POST');
    const fingerprint = `${method} ${url.pathname} ${JSON.stringify(params)}`;
    const earlier = keys.get(key);
    if (earlier && earlier.fingerprint !== fingerprint) {
      return fail(400, 'idempotency_error', `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`);
    }
    if (earlier) return { ...earlier.reply, replayed: true };
    const reply = route(method, url.pathname, params);
    keys.set(key, { fingerprint, reply: structuredClone(reply) });
    return reply;
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const fault = faults.shift();
      if (fault && 'destroy' in fault) return void res.socket?.destroy();
      const reply = fault ? { status: fault.status, body: fault.body ?? { error: { type: 'api_error', message: 'fault' } } } : handle(req, Buffer.concat(chunks).toString('utf8'));
      const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', 'request-id': id('req'), 'stripe-version': apiVersion };
      if ((reply as { replayed?: boolean }).replayed) headers['idempotent-replayed'] = 'true';
      res.writeHead(reply.status, headers).end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    secretKey,
    apiVersion,
    requests,
    intents,
    /** The next request gets this answer (or a dropped connection) instead of the fake's own. */
    failNext(fault: Fault): void { faults.push(fault); },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

export type StripeFake = Awaited<ReturnType<typeof startStripeFake>>;
