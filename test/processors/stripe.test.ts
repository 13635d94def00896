import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { OutboundClient } from '../../src/outbound/client.ts';
import type { ProcessorHttp, TransactionRef } from '../../src/processors/processor.ts';
import { StripeProcessor } from '../../src/processors/stripe/processor.ts';
import { authorizeRequest, FUTURE_YEAR, refOf, THREE_DS } from './helpers.ts';
import { type StripeFake, startStripeFake } from './stripe-fake.ts';

// Coffer's guarded outbound client is what the features layer passes: the connector is tested through it.
let fake: StripeFake;
let client: OutboundClient;
let http: ProcessorHttp;
let stripe: StripeProcessor;

before(async () => {
  fake = await startStripeFake();
  client = new OutboundClient({ allowlist: ['127.0.0.1'] });
  http = (request) => client.request(request);
  stripe = new StripeProcessor({ secretKey: fake.secretKey, http, baseUrl: fake.url });
});
after(async () => {
  await client.close();
  await fake.close();
});

const key = (what: string) => `${randomUUID()}:${what}`;
const last = () => fake.requests[fake.requests.length - 1];
const ref = (r: { connection_transaction_id?: string }, amount: number, status = 'authorization_succeeded', captured = 0): TransactionRef => ({
  connection_transaction_id: r.connection_transaction_id!, amount, currency: 'USD', authorized_amount: amount, captured_amount: captured, status,
});

describe('authorize', () => {
  it('intent authorize: a manual-capture PaymentIntent, confirmed, with raw card data', async () => {
    const r = await stripe.authorize(authorizeRequest('4242424242424242', 1234, { reconciliation_id: '7EgeeeTX0DS45RBDNt4AEY' }));
    assert.equal(r.status, 'authorized');
    assert.match(r.connection_transaction_id!, /^pi_/);
    assert.match(r.scheme_transaction_id!, /^\d{15}$/);
    assert.deepEqual([r.auth_response_code, r.cvv_response_code, r.avs_response_code, r.authorized_amount], ['00', 'match', 'not_provided', 1234]);
    const req = last();
    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/v1/payment_intents');
    assert.equal(req.headers.authorization, `Bearer ${fake.secretKey}`);
    assert.equal(req.headers['stripe-version'], '2024-06-20');
    assert.equal(req.headers['content-type'], 'application/x-www-form-urlencoded');
    assert.match(String(req.headers['idempotency-key']), /:authorize$/);
    assert.deepEqual(req.params, {
      amount: '1234', currency: 'usd', confirm: 'true', capture_method: 'manual', payment_method_types: ['card'],
      payment_method_data: { type: 'card', card: { number: '4242424242424242', exp_month: '12', exp_year: String(FUTURE_YEAR), cvc: '123' } },
      metadata: { coffer_reconciliation_id: '7EgeeeTX0DS45RBDNt4AEY' }, expand: ['latest_charge'],
    });
    assert.ok(req.body.includes('payment_method_data[card][number]=4242424242424242'), 'nested keys in brackets');
  });

  it('intent capture: automatic capture in the same call', async () => {
    const r = await stripe.authorize(authorizeRequest('4242424242424242', 2500, { intent: 'capture', card: { number: '4242424242424242', expiration_month: 1, expiration_year: FUTURE_YEAR, billing_address: { line1: '1 Main St', postal_code: '94107' } } }));
    assert.deepEqual([r.status, r.authorized_amount, r.captured_amount, r.cvv_response_code, r.avs_response_code], ['captured', 2500, 2500, 'not_provided', 'match']);
    assert.equal(last().params.capture_method, 'automatic');
    assert.deepEqual(last().params.payment_method_data, { type: 'card', card: { number: '4242424242424242', exp_month: '1', exp_year: String(FUTURE_YEAR) }, billing_details: { address: { line1: '1 Main St', postal_code: '94107' } } });
  });

  it('3DS data goes as payment_method_options[card][three_d_secure]', async () => {
    const r = await stripe.authorize(authorizeRequest('4000000000003220', 1000, { three_d_secure: THREE_DS }));
    assert.equal(r.status, 'authorized');
    assert.deepEqual(last().params.payment_method_options, {
      card: { three_d_secure: { version: '2.2.0', electronic_commerce_indicator: '05', cryptogram: THREE_DS.authentication_value, transaction_id: THREE_DS.ds_transaction_id } },
    });
  });

  it('a merchant-initiated payment is off_session and names the first payment\'s network id', async () => {
    const r = await stripe.authorize(authorizeRequest('4242424242424242', 990, {
      merchant_initiated: true, payment_source: 'recurring', is_subsequent_payment: true, previous_scheme_transaction_id: '483920175563018',
      card: { number: '4242424242424242', expiration_month: 1, expiration_year: FUTURE_YEAR },
    }));
    assert.equal(r.status, 'authorized');
    assert.equal(last().params.off_session, 'true');
    assert.deepEqual(last().params.payment_method_options, { card: { mit_exemption: { network_transaction_id: '483920175563018' } } });
  });

  it('needs 3DS: requires_authentication with the buyer present (approval URL when return_url is sent), a failure without', async () => {
    const plain = await stripe.authorize(authorizeRequest('4000000000003220', 1000));
    assert.deepEqual([plain.status, plain.approval_url], ['requires_authentication', undefined]);
    const redirect = await stripe.authorize(authorizeRequest('4000000000003220', 1000, { return_url: 'https://coffer.example/approvals/1' }));
    assert.equal(redirect.status, 'requires_authentication');
    assert.match(redirect.approval_url!, /^https:\/\/hooks\.stripe\.com\/3d_secure_2\//);
    const mit = await stripe.authorize(authorizeRequest('4000000000003220', 1000, { merchant_initiated: true, card: { number: '4000000000003220', expiration_month: 1, expiration_year: FUTURE_YEAR } }));
    assert.deepEqual([mit.status, mit.error_code, mit.raw_response_code], ['failed', 'requires_buyer_authentication', 'authentication_required']);
  });

  it('a network token with its cryptogram is refused before any call', async () => {
    const before = fake.requests.length;
    const r = await stripe.authorize(authorizeRequest('4242424242424242', 1000, { card: { number: '4242424242424242', expiration_month: 1, expiration_year: FUTURE_YEAR, network_token: { cryptogram: 'AgAAAAAABk4DWZ4C28yUQAAAAAA=', eci: '07' } } }));
    assert.deepEqual([r.status, r.error_code], ['failed', 'unsupported_payment_method']);
    assert.equal(fake.requests.length, before);
  });
});

describe('card errors map to error_code', () => {
  const cases: [string, string, string, string][] = [
    ['4000000000000002', 'declined', 'issuer_decline', 'generic_decline'],
    ['4000000000009995', 'declined', 'insufficient_funds', 'insufficient_funds'],
    ['4000000000000069', 'declined', 'expired_payment_method', 'expired_card'],
    ['4000000000000127', 'declined', 'incorrect_cvv', 'incorrect_cvc'],
    ['4000000000000119', 'failed', 'service_error', 'processing_error'],
  ];
  for (const [number, status, code, raw] of cases) {
    it(`${number} → ${status} ${code}`, async () => {
      const r = await stripe.authorize(authorizeRequest(number, 1000));
      assert.deepEqual([r.status, r.error_code, r.raw_response_code], [status, code, raw]);
      assert.match(r.connection_transaction_id!, /^pi_/, 'the declined intent is still referenced');
      if (code === 'incorrect_cvv') assert.equal(r.cvv_response_code, 'no_match');
    });
  }
});

describe('capture, void, refund, status', () => {
  it('partial capture, then a second capture is refused (unexpected_state)', async () => {
    const a = await stripe.authorize(authorizeRequest('4242424242424242', 1000));
    const c = await stripe.capture({ transaction: ref(a, 1000), amount: 600, idempotency_key: key('capture') });
    assert.deepEqual([c.status, c.captured_amount], ['captured', 600]);
    assert.equal(last().path, `/v1/payment_intents/${a.connection_transaction_id}/capture`);
    assert.deepEqual(last().params, { amount_to_capture: '600', expand: ['latest_charge'] });
    const again = await stripe.capture({ transaction: ref(a, 1000), amount: 400, idempotency_key: key('capture') });
    assert.deepEqual([again.status, again.error_code, again.raw_response_code], ['failed', 'unexpected_state', 'payment_intent_unexpected_state']);
    const s = await stripe.status({ transaction: ref(a, 1000, 'capture_succeeded', 600) });
    assert.deepEqual([s.status, s.captured_amount], ['captured', 600]);
  });

  it('void releases the authorization; voiding a capture is refused', async () => {
    const a = await stripe.authorize(authorizeRequest('4242424242424242', 1000));
    assert.equal((await stripe.status({ transaction: ref(a, 1000) })).status, 'authorized');
    const v = await stripe.void({ transaction: ref(a, 1000), idempotency_key: key('void') });
    assert.equal(v.status, 'voided');
    assert.equal(last().path, `/v1/payment_intents/${a.connection_transaction_id}/cancel`);
    assert.equal((await stripe.status({ transaction: ref(a, 1000, 'authorization_void_pending') })).status, 'voided');
    const b = await stripe.authorize(authorizeRequest('4242424242424242', 1000, { intent: 'capture' }));
    assert.equal((await stripe.void({ transaction: ref(b, 1000, 'capture_succeeded', 1000), idempotency_key: key('void') })).error_code, 'unexpected_state');
  });

  it('partial refunds up to the captured amount, the merchant\'s reason in metadata', async () => {
    const a = await stripe.authorize(authorizeRequest('4242424242424242', 1000, { intent: 'capture' }));
    const t = ref(a, 1000, 'capture_succeeded', 1000);
    const r1 = await stripe.refund({ transaction: t, amount: 400, reason: 'damaged\nin transit & more', idempotency_key: key('refund') });
    assert.equal(r1.status, 'succeeded');
    assert.match(r1.connection_refund_id!, /^re_/);
    assert.deepEqual(last().params, { payment_intent: a.connection_transaction_id, amount: '400', metadata: { coffer_reason: 'damaged\nin transit & more' } });
    const long = await stripe.refund({ transaction: t, amount: 100, reason: 'x'.repeat(900), idempotency_key: key('refund') });
    assert.equal(long.status, 'succeeded', 'a reason past Stripe\'s 500-character metadata limit is cut, not refused');
    const over = await stripe.refund({ transaction: t, amount: 501, idempotency_key: key('refund') });
    assert.deepEqual([over.status, over.error_code], ['failed', 'invalid_amount']);
    assert.equal((await stripe.refund({ transaction: t, amount: 500, idempotency_key: key('refund') })).status, 'succeeded');
    const done = await stripe.refund({ transaction: t, amount: 1, idempotency_key: key('refund') });
    assert.deepEqual([done.status, done.error_code], ['failed', 'refund_already_satisfied']);
    const polled = await stripe.refundStatus({ transaction: t, connection_refund_id: r1.connection_refund_id!, amount: 400 });
    assert.deepEqual([polled.status, polled.connection_refund_id], ['succeeded', r1.connection_refund_id]);
  });
});

describe('idempotency', () => {
  it('the same key replays the first answer: one PaymentIntent, not two', async () => {
    const req = authorizeRequest('4242424242424242', 777);
    const count = fake.intents.size;
    const first = await stripe.authorize(req);
    const second = await stripe.authorize(req);
    assert.equal(second.connection_transaction_id, first.connection_transaction_id);
    assert.equal(fake.intents.size, count + 1);
    assert.equal(last().headers['idempotency-key'], req.idempotency_key);
  });

  it('the key with other parameters is refused (service_resource_conflict)', async () => {
    const req = authorizeRequest('4242424242424242', 777);
    await stripe.authorize(req);
    const other = await stripe.authorize({ ...req, amount: 778 });
    assert.deepEqual([other.status, other.error_code], ['failed', 'service_resource_conflict']);
  });

  it('a POST without a key is a bug and throws', async () => {
    await assert.rejects(stripe.capture({ transaction: ref({ connection_transaction_id: 'pi_x' }, 1), amount: 1, idempotency_key: '' }), TypeError);
  });
});

describe('service errors', () => {
  const faults: [string, Parameters<StripeFake['failNext']>[0], string, string][] = [
    ['500', { status: 500 }, 'unknown', 'service_error'],
    ['502 without a body Stripe wrote', { status: 502, body: '<html>bad gateway</html>' }, 'unknown', 'service_error'],
    ['429', { status: 429, body: { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests' } } }, 'failed', 'service_rate_limit'],
    ['403', { status: 403, body: { error: { type: 'invalid_request_error', message: 'The provided key does not have access' } } }, 'failed', 'insufficient_service_permissions'],
    ['409', { status: 409, body: { error: { type: 'idempotency_error', message: 'a request with this key is in progress' } } }, 'unknown', 'service_resource_conflict'],
    ['a 200 that is not JSON', { status: 200, body: 'not json' }, 'unknown', 'invalid_service_response'],
    ['a dropped connection', { destroy: true }, 'unknown', 'service_network_error'],
  ];
  for (const [name, fault, status, code] of faults) {
    it(`${name} → ${status} ${code}`, async () => {
      fake.failNext(fault);
      const r = await stripe.authorize(authorizeRequest('4242424242424242', 1000));
      assert.deepEqual([r.status, r.error_code], [status, code]);
    });
  }

  it('a wrong key → invalid_service_credentials; a wrong version is refused by the fake', async () => {
    const wrongKey = new StripeProcessor({ secretKey: 'sk_test_wrong', http, baseUrl: fake.url });
    assert.deepEqual(await wrongKey.authorize(authorizeRequest('4242424242424242', 1000)).then((r) => [r.status, r.error_code]), ['failed', 'invalid_service_credentials']);
    const oldVersion = new StripeProcessor({ secretKey: fake.secretKey, http, baseUrl: fake.url, apiVersion: '2020-08-27' });
    assert.deepEqual(await oldVersion.authorize(authorizeRequest('4242424242424242', 1000)).then((r) => [r.status, r.error_code]), ['failed', 'invalid_request_parameters']);
  });

  it('an unknown intent → unknown_service_resource; a refused base URL → invalid_service_configuration', async () => {
    const c = await stripe.capture({ transaction: ref({ connection_transaction_id: 'pi_missing' }, 1000), amount: 1000, idempotency_key: key('capture') });
    assert.deepEqual([c.status, c.error_code], ['failed', 'unknown_service_resource']);
    const internal = new StripeProcessor({ secretKey: fake.secretKey, http, baseUrl: 'http://10.0.0.1' });
    assert.deepEqual(await internal.authorize(authorizeRequest('4242424242424242', 1000)).then((r) => [r.status, r.error_code]), ['failed', 'invalid_service_configuration']);
  });

  it('a key in Stripe\'s message never reaches the result', async () => {
    fake.failNext({ status: 401, body: { error: { type: 'invalid_request_error', message: 'Invalid API Key provided: sk_test_51AbCdEf0123456789' } } });
    const r = await stripe.authorize(authorizeRequest('4242424242424242', 1000));
    assert.equal(r.error_code, 'invalid_service_credentials');
    assert.equal(r.raw_response_description, 'Invalid API Key provided: [redacted key]');
  });

  it('a poll that fails says unknown, never a guess', async () => {
    fake.failNext({ status: 500 });
    assert.equal((await stripe.status({ transaction: ref({ connection_transaction_id: 'pi_x' }, 1) })).status, 'unknown');
  });
});

describe('the fake is strict about encoding', () => {
  it('refuses an unknown or mis-nested parameter the way Stripe does', async () => {
    for (const body of ['amount=1&currency=usd&foo=bar', 'amount=1&payment_method_data[card]number]=1', 'amount=1&payment_method_data=x&payment_method_data[type]=card']) {
      const res = await client.request({
        url: `${fake.url}/v1/payment_intents`, method: 'POST', body,
        headers: { authorization: `Bearer ${fake.secretKey}`, 'stripe-version': fake.apiVersion, 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': key('raw') },
      });
      assert.equal(res.status, 400, body);
      assert.match(JSON.parse(res.body.toString()).error.code, /^parameter_(unknown|invalid)/);
    }
  });
});

describe('refOf from the shared helpers fits the connector', () => {
  it('authorize → capture with the helper\'s reference', async () => {
    const a = await stripe.authorize(authorizeRequest('4242424242424242', 300));
    assert.equal((await stripe.capture({ transaction: refOf(a, 300), amount: 300, idempotency_key: key('capture') })).status, 'captured');
  });
});
