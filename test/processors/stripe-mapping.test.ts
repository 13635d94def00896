import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { OutboundClient } from '../../src/outbound/client.ts';
import { errorCategory, isErrorCode } from '../../src/processors/error-codes.ts';
import {
  checkConnectionConfig, CofferTestProcessor, ConnectionConfigError, createProcessor, type ProcessorHttp, StripeProcessor, TestLedger,
} from '../../src/processors/index.ts';
import { mapStripeError, mapTransportError } from '../../src/processors/stripe/errors.ts';
import { encodeForm } from '../../src/processors/stripe/form.ts';
import { avsOf, cvvOf, refundResult } from '../../src/processors/stripe/objects.ts';
import { authorizeRequest } from './helpers.ts';
import { decodeForm } from './stripe-form.ts';

describe('form encoding', () => {
  it('nests with brackets, indexes arrays, skips absent values', () => {
    assert.equal(
      encodeForm({ amount: 100, confirm: true, a: { b: { c: 'd' } }, expand: ['latest_charge', 'customer'], gone: undefined, none: null, empty: {} }),
      'amount=100&confirm=true&a[b][c]=d&expand[0]=latest_charge&expand[1]=customer',
    );
  });

  it('percent-encodes everything but the brackets', () => {
    assert.equal(encodeForm({ 'metadata': { 'a b': 'x&y=z+1 é\n' } }), 'metadata[a%20b]=x%26y%3Dz%2B1%20%C3%A9%0A');
    assert.throws(() => encodeForm({ amount: Number.NaN }), TypeError);
  });

  it('round-trips through the fake\'s decoder for any nested params', () => {
    const keyArb = fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/).filter((k) => k !== '__proto__');
    const leaf = fc.string({ maxLength: 20 });
    const tree = fc.letrec((tie) => ({
      node: fc.dictionary(keyArb, fc.oneof({ depthSize: 'small' }, leaf, tie('node'), fc.array(leaf, { minLength: 1, maxLength: 3 })), { minKeys: 1, maxKeys: 4, noNullPrototype: true }),
    })).node as fc.Arbitrary<Record<string, unknown>>;
    fc.assert(fc.property(tree, (params) => {
      assert.deepEqual(decodeForm(encodeForm(params as never)), params);
    }), { numRuns: 300 });
  });
});

describe('Stripe errors onto error_code', () => {
  const declines: [string, string][] = [
    ['generic_decline', 'issuer_decline'], ['do_not_honor', 'issuer_decline'], ['insufficient_funds', 'insufficient_funds'],
    ['lost_card', 'canceled_payment_method'], ['stolen_card', 'canceled_payment_method'], ['fraudulent', 'suspected_fraud'],
    ['expired_card', 'expired_payment_method'], ['incorrect_cvc', 'incorrect_cvv'], ['incorrect_zip', 'incorrect_billing_address'],
    ['try_again_later', 'other_decline'], ['card_not_supported', 'unsupported_payment_method'], ['currency_not_supported', 'unsupported_currency'],
    ['restricted_card', 'unavailable_payment_method'], ['transaction_not_allowed', 'unsupported_transaction'], ['something_new', 'issuer_decline'],
  ];
  for (const [decline_code, expected] of declines) {
    it(`card_declined/${decline_code} → ${expected}`, () => {
      const m = mapStripeError(402, { type: 'card_error', code: 'card_declined', decline_code });
      assert.equal(m.error_code, expected);
      assert.equal(m.status, errorCategory(m.error_code) === 'decline' ? 'declined' : 'failed');
    });
  }

  it('top-level card_error codes', () => {
    const cases: [string, string, string][] = [
      ['expired_card', 'declined', 'expired_payment_method'], ['incorrect_cvc', 'declined', 'incorrect_cvv'], ['processing_error', 'failed', 'service_error'],
      ['incorrect_number', 'failed', 'unknown_payment_method'], ['invalid_expiry_year', 'declined', 'incorrect_expiry_date'],
      ['authentication_required', 'failed', 'requires_buyer_authentication'], ['card_error_we_never_saw', 'declined', 'other_decline'],
    ];
    for (const [code, status, expected] of cases) assert.deepEqual(mapStripeError(402, { type: 'card_error', code }), { status, error_code: expected }, code);
  });

  it('request and service errors', () => {
    const cases: [number, object | undefined, string, string][] = [
      [400, { type: 'invalid_request_error', code: 'parameter_unknown' }, 'failed', 'invalid_request_parameters'],
      [400, { type: 'invalid_request_error', code: 'amount_too_small' }, 'failed', 'invalid_amount'],
      [400, { type: 'invalid_request_error', code: 'charge_already_refunded' }, 'failed', 'refund_already_satisfied'],
      [400, { type: 'invalid_request_error', code: 'charge_disputed' }, 'failed', 'disputed_transaction'],
      [400, { type: 'invalid_request_error', code: 'charge_expired_for_capture' }, 'failed', 'expired_authorization'],
      [400, { type: 'idempotency_error' }, 'failed', 'service_resource_conflict'],
      [400, undefined, 'unknown', 'invalid_service_response'],
      [401, { type: 'invalid_request_error' }, 'failed', 'invalid_service_credentials'],
      [403, undefined, 'failed', 'insufficient_service_permissions'],
      [404, { type: 'invalid_request_error', code: 'resource_missing' }, 'failed', 'unknown_service_resource'],
      [409, undefined, 'unknown', 'service_resource_conflict'],
      [429, undefined, 'failed', 'service_rate_limit'],
      [500, undefined, 'unknown', 'service_error'],
      [503, { type: 'api_error' }, 'unknown', 'service_error'],
    ];
    for (const [status, error, outcome, code] of cases) assert.deepEqual(mapStripeError(status, error), { status: outcome, error_code: code }, `${status} ${JSON.stringify(error)}`);
  });

  it('transport failures: refused before sending → failed, otherwise unknown', () => {
    assert.deepEqual(mapTransportError({ code: 'blocked_address' }), { status: 'failed', error_code: 'invalid_service_configuration' });
    assert.deepEqual(mapTransportError({ code: 'dns_failed' }), { status: 'failed', error_code: 'service_network_error' });
    assert.deepEqual(mapTransportError({ code: 'timeout' }), { status: 'unknown', error_code: 'service_network_error' });
    assert.deepEqual(mapTransportError(new Error('boom')), { status: 'unknown', error_code: 'service_network_error' });
  });

  it('every code the mappings produce is in the vocabulary', () => {
    for (const code of ['x', 'generic_decline', 'insufficient_funds', 'lost_card', 'processing_error']) {
      assert.ok(isErrorCode(mapStripeError(402, { type: 'card_error', code: 'card_declined', decline_code: code }).error_code));
    }
  });

  it('checks and refunds', () => {
    assert.deepEqual(['pass', 'fail', 'unavailable', 'unchecked', null].map((c) => cvvOf(c as never)), ['match', 'no_match', 'unavailable', 'not_provided', 'not_provided']);
    assert.equal(avsOf('pass', 'pass'), 'match');
    assert.equal(avsOf('fail', 'fail'), 'no_match');
    assert.equal(avsOf('pass', 'fail'), 'partial_match_address');
    assert.equal(avsOf('fail', 'pass'), 'partial_match_postcode');
    assert.equal(avsOf('unavailable', null), 'unavailable');
    assert.equal(avsOf(null, 'pass'), 'match');
    assert.equal(avsOf(null, null), 'not_provided');
    const base = { id: 're_1', object: 'refund' as const, amount: 5 };
    assert.equal(refundResult({ ...base, status: 'pending' }).status, 'processing');
    assert.equal(refundResult({ ...base, status: 'canceled' }).status, 'voided');
    assert.deepEqual(refundResult({ ...base, status: 'failed', failure_reason: 'lost_or_stolen_card' }).error_code, 'canceled_payment_method');
    assert.deepEqual(refundResult({ ...base, status: 'failed', failure_reason: 'declined' }).status, 'declined');
  });
});

describe('connections: which processor, which settings', () => {
  const client = new OutboundClient({ allowlist: [] });
  const http: ProcessorHttp = (request) => client.request(request);

  it('builds each processor from a connection; test processors share the process\'s ledger', async () => {
    const testLedger = new TestLedger();
    const deps = { http, testLedger };
    const config = { processor: 'coffer-test', connection_id: 'c1', settings: { settle_delay_ms: 0 }, credentials: {} };
    const first = createProcessor(config, deps);
    assert.ok(first instanceof CofferTestProcessor);
    const req = authorizeRequest('4242424242424242', 100);
    const a = await first.authorize(req);
    assert.deepEqual(await createProcessor(config, deps).authorize(req), a, 'a processor built for the next call replays it');
    assert.deepEqual(testLedger.stats(), { authorizations: 1, captures: 0, voids: 0, refunds: 0, replays: 1 });
    const stripe = createProcessor({ processor: 'stripe', settings: { base_url: 'https://api.stripe.com' }, credentials: { secret_key: 'sk_test_1' } }, deps);
    assert.ok(stripe instanceof StripeProcessor);
    assert.equal(stripe.name, 'stripe');
  });

  it('refuses what cannot work, naming the field', () => {
    const bad: [object, string][] = [
      [{ processor: 'adyen', settings: {}, credentials: {} }, 'processor'],
      [{ processor: 'stripe', settings: {}, credentials: {} }, 'credentials.secret_key'],
      [{ processor: 'stripe', settings: {}, credentials: { secret_key: 'sk', password: 'x' } }, 'credentials.password'],
      [{ processor: 'stripe', settings: { base_url: 'https://user:pw@api.stripe.com' }, credentials: { secret_key: 'sk' } }, 'settings.base_url'],
      [{ processor: 'stripe', settings: { base_url: 'ftp://api.stripe.com' }, credentials: { secret_key: 'sk' } }, 'settings.base_url'],
      [{ processor: 'stripe', settings: { api_version: 'latest' }, credentials: { secret_key: 'sk' } }, 'settings.api_version'],
      [{ processor: 'coffer-test', settings: { settle_delay_ms: -1 }, credentials: {} }, 'settings.settle_delay_ms'],
      [{ processor: 'coffer-test', settings: { base_url: 'https://x' }, credentials: {} }, 'settings.base_url'],
    ];
    for (const [config, field] of bad) {
      assert.throws(() => checkConnectionConfig(config as never), (e: unknown) => e instanceof ConnectionConfigError && e.field === field, field);
    }
  });
});
