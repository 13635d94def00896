import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, type FieldErrors } from '../../src/http/errors.ts';
import { validateAuthenticateRequest } from '../../src/features/threeds/authenticate-rules.ts';
import {
  ACCOUNT_AGE_CODES, ACCOUNT_CHANGE_CODES, ACCOUNT_TYPE_CODES, AUTHENTICATION_METHOD_CODES, AUTHENTICATION_TYPE_SESSIONS,
  CHALLENGE_PREFERENCE_CODES, DELIVERY_TIME_FRAME_CODES, PASSWORD_CHANGE_CODES, PRIOR_AUTHENTICATION_METHOD_CODES,
  SHIPPING_ADDRESS_USAGE_CODES, SHIPPING_METHOD_CODES, TRANSACTION_TYPE_CODES, type SessionType,
} from '../../src/features/threeds/codes.ts';

/**
 * validateAuthenticateRequest on its own: every conditional rule from both sides, every enum and
 * format with a good and a bad value, currency conversion, and every fault of a body in one 400.
 */

type Body = Record<string, any>;

/** The least a customer session's non-payment authentication needs. */
const minimal = (): Body => ({
  authentication_category: 'non-payment',
  authentication_type: 'add-card',
  requestor_info: { id: 'req-1', name: 'Shop', url: 'https://shop.example' },
  cardholder_info: { name: 'Jo Doe', email: 'jo@example.com' },
});

/** A payment: purchase and merchant info complete. */
const payment = (): Body => ({
  ...minimal(),
  authentication_category: 'payment',
  authentication_type: 'payment-transaction',
  purchase_info: { amount: '1050', currency: '840', exponent: '2', date: '20250131174502', transaction_type: 'purchase' },
  merchant_info: { mid: 'MID-1', acquirer_bin: '411111', name: 'Shop', country_code: '840', category_code: '5999' },
});

/** Sets (or with `undefined`, removes) the value at a dotted path, making objects on the way. */
function set(body: Body, path: string, value: unknown): Body {
  const keys = path.split('.');
  let node = body;
  for (const key of keys.slice(0, -1)) node = node[key] ??= {};
  if (value === undefined) delete node[keys.at(-1)!];
  else node[keys.at(-1)!] = value;
  return body;
}

function errorsOf(body: unknown, session: SessionType = 'customer'): FieldErrors {
  try {
    validateAuthenticateRequest(body, session);
    return {};
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    return err.errors ?? {};
  }
}

function rejects(body: unknown, field: string, message?: RegExp, session: SessionType = 'customer'): void {
  const errors = errorsOf(body, session);
  assert.ok(errors[field]?.length, `${field} should be named: ${JSON.stringify(errors)}`);
  if (message) assert.ok(errors[field].some((m) => message.test(m)), `${field}: ${JSON.stringify(errors[field])} should match ${message}`);
}

function accepts(body: unknown, session: SessionType = 'customer') {
  assert.deepEqual(errorsOf(body, session), {});
  return validateAuthenticateRequest(body, session);
}

describe('3DS authenticate validation: the body as a whole', () => {
  it('accepts the least a customer and a merchant session need, and applies the defaults', () => {
    const customer = accepts(minimal());
    assert.equal(customer.request_decoupled_challenge, false);
    assert.equal(customer.challenge_preference, 'no-preference');
    assert.equal(customer.challenge_preference_code, '01');
    const merchant = accepts(set(minimal(), 'decoupled_challenge_max_time', 30), 'merchant');
    assert.equal(merchant.request_decoupled_challenge, true);
    assert.equal(accepts(set(minimal(), 'request_decoupled_challenge', false)).request_decoupled_challenge, false);
    accepts(payment());
  });

  it('refuses a body that is not an object', () => {
    for (const body of ['x', null, [], 3]) assert.deepEqual(Object.keys(errorsOf(body)), ['body']);
  });

  it('requires the always-required fields, and their own fields', () => {
    for (const path of ['authentication_category', 'authentication_type', 'requestor_info', 'requestor_info.id', 'requestor_info.name', 'requestor_info.url', 'cardholder_info', 'cardholder_info.name', 'cardholder_info.email']) {
      rejects(set(minimal(), path, undefined), `body.${path}`, /is required/);
    }
  });

  it('refuses unknown properties at every level', () => {
    for (const path of ['colour', 'purchase_info.ammount', 'merchant_info.risk_info.gift', 'cardholder_info.nickname', 'cardholder_info.billing_address.zip', 'requestor_info.extra']) {
      rejects(set(payment(), path, 'x'), `body.${path}`, /not a known property/);
    }
  });

  it('reports every fault of a body in one error, each under its own path', () => {
    const body = set(payment(), 'authentication_type', 'top-up');
    set(body, 'purchase_info.amount', '10.50');
    set(body, 'purchase_info.currency', 'XYZ');
    set(body, 'purchase_info.date', '20250230120000');
    set(body, 'merchant_info.country_code', undefined);
    set(body, 'cardholder_info.email', 'nope');
    set(body, 'cardholder_info.billing_address', { state_code: 'CA' });
    set(body, 'challenge_preference', 'please');
    set(body, 'request_decoupled_challenge', true);
    assert.deepEqual(Object.keys(errorsOf(body)).sort(), [
      'body.authentication_type', 'body.cardholder_info.billing_address.country_code', 'body.cardholder_info.email',
      'body.challenge_preference', 'body.decoupled_challenge_max_time', 'body.merchant_info.country_code',
      'body.purchase_info.amount', 'body.purchase_info.currency', 'body.purchase_info.date',
    ]);
  });

  it('leaves the caller\'s body as it was', () => {
    const body = set(payment(), 'purchase_info.currency', 'USD');
    const copy = structuredClone(body);
    assert.equal(accepts(body).purchase_info?.currency, '840');
    assert.deepEqual(body, copy);
  });
});

describe('3DS authenticate validation: authentication types and session types', () => {
  /** A body any type passes with, given the session: every conditional field present. */
  const complete = (type: string): Body => {
    const body = set(payment(), 'authentication_type', type);
    Object.assign(body.purchase_info, { installment_count: '3', recurring_expiration: '20261231', recurring_frequency: '30' });
    return set(body, 'decoupled_challenge_max_time', 60);
  };
  for (const [type, sessions] of Object.entries(AUTHENTICATION_TYPE_SESSIONS)) {
    for (const session of ['customer', 'merchant'] as const) {
      const allowed = (sessions as readonly string[]).includes(session);
      it(`${type} is ${allowed ? 'accepted' : 'refused'} for a ${session} session`, () => {
        if (allowed) accepts(complete(type), session);
        else rejects(complete(type), 'body.authentication_type', new RegExp(`^${type} is for .*this is a ${session} session`), session);
      });
    }
  }
  it('refuses an unknown type and category', () => {
    rejects(set(minimal(), 'authentication_type', 'purchase'), 'body.authentication_type', /must be one of/);
    rejects(set(minimal(), 'authentication_category', 'pay'), 'body.authentication_category', /must be one of: payment, non-payment/);
  });
});

describe('3DS authenticate validation: conditional requirements', () => {
  const PURCHASE = ['amount', 'currency', 'exponent', 'date'];
  const MERCHANT = ['mid', 'acquirer_bin', 'name', 'country_code', 'category_code'];

  it('payment requires purchase_info and merchant_info; non-payment requires neither', () => {
    rejects(set(payment(), 'purchase_info', undefined), 'body.purchase_info', /required when authentication_category is payment \(with amount, currency, exponent, date, transaction_type\)/);
    rejects(set(payment(), 'merchant_info', undefined), 'body.merchant_info', /required when authentication_category is payment/);
    accepts(minimal());
  });

  it('payment requires each purchase field and transaction_type; non-payment requires none of them', () => {
    for (const field of [...PURCHASE, 'transaction_type']) rejects(set(payment(), `purchase_info.${field}`, undefined), `body.purchase_info.${field}`, /required when authentication_category is payment/);
    accepts(set(minimal(), 'purchase_info', { date: '20250131174502' }));
  });

  it('payment requires each merchant field; non-payment takes merchant_info without them', () => {
    for (const field of MERCHANT) rejects(set(payment(), `merchant_info.${field}`, undefined), `body.merchant_info.${field}`, /required when authentication_category is payment/);
    accepts(set(minimal(), 'merchant_info', { name: 'Shop' }));
  });

  it('recurring-transaction requires the purchase, recurring_expiration and recurring_frequency, but not transaction_type', () => {
    const recurring = () => set(set(minimal(), 'authentication_type', 'recurring-transaction'), 'purchase_info', {
      amount: '999', currency: '978', exponent: '2', date: '20250131174502', recurring_expiration: '20261231', recurring_frequency: '30',
    });
    accepts(recurring());
    rejects(set(recurring(), 'purchase_info', undefined), 'body.purchase_info', /required when authentication_type is recurring-transaction/);
    for (const field of [...PURCHASE, 'recurring_expiration', 'recurring_frequency']) {
      rejects(set(recurring(), `purchase_info.${field}`, undefined), `body.purchase_info.${field}`, /required when authentication_type is recurring-transaction/);
    }
    accepts(minimal());
    accepts(payment());
  });

  it('installment-transaction requires the purchase and installment_count; other types do not', () => {
    const installment = () => set(set(minimal(), 'authentication_type', 'installment-transaction'), 'purchase_info', {
      amount: '999', currency: '978', exponent: '2', date: '20250131174502', installment_count: '4',
    });
    accepts(installment());
    rejects(set(installment(), 'purchase_info', undefined), 'body.purchase_info', /required when authentication_type is installment-transaction/);
    for (const field of [...PURCHASE, 'installment_count']) {
      rejects(set(installment(), `purchase_info.${field}`, undefined), `body.purchase_info.${field}`, /required when authentication_type is installment-transaction/);
    }
    accepts(payment());
  });

  it('decoupled_challenge_max_time: required when a decoupled challenge is requested or the session is a merchant one', () => {
    rejects(set(minimal(), 'request_decoupled_challenge', true), 'body.decoupled_challenge_max_time', /required when request_decoupled_challenge is true/);
    accepts(set(set(minimal(), 'request_decoupled_challenge', true), 'decoupled_challenge_max_time', 15));
    accepts(set(minimal(), 'request_decoupled_challenge', false));
    accepts(minimal());
    rejects(minimal(), 'body.decoupled_challenge_max_time', /required when the session is a merchant session/, 'merchant');
    rejects(set(minimal(), 'request_decoupled_challenge', false), 'body.decoupled_challenge_max_time', /merchant session/, 'merchant');
  });

  it('an amount needs its currency and exponent, whatever the category', () => {
    for (const [given, missing] of [['amount', 'currency'], ['amount', 'exponent'], ['currency', 'amount'], ['exponent', 'currency']]) {
      const purchase: Body = { [given]: { amount: '100', currency: '840', exponent: '2' }[given] };
      rejects(set(minimal(), 'purchase_info', purchase), `body.purchase_info.${missing}`, new RegExp(`is required with ${given}`));
    }
    accepts(set(minimal(), 'purchase_info', { amount: '100', currency: '840', exponent: '2' }));
  });

  it('a gift card amount needs its currency; a state needs its country; auth objects need their method; phones need both parts', () => {
    rejects(set(payment(), 'merchant_info.risk_info', { gift_card_amount: '50' }), 'body.merchant_info.risk_info.gift_card_currency', /required with gift_card_amount/);
    accepts(set(payment(), 'merchant_info.risk_info', { gift_card_currency: '840' }));
    for (const address of ['billing_address', 'shipping_address']) {
      rejects(set(minimal(), `cardholder_info.${address}`, { state_code: 'CA' }), `body.cardholder_info.${address}.country_code`, /required with state_code/);
      accepts(set(minimal(), `cardholder_info.${address}`, { country_code: '840' }));
    }
    for (const info of ['authentication_info', 'prior_authentication_info']) {
      rejects(set(minimal(), `cardholder_info.${info}`, { timestamp: '202501311200' }), `body.cardholder_info.${info}.method`, /is required/);
    }
    for (const phone of ['phone_number', 'mobile_phone_number', 'work_phone_number']) {
      rejects(set(minimal(), `cardholder_info.${phone}`, { number: '5551234' }), `body.cardholder_info.${phone}.country_code`, /is required/);
      rejects(set(minimal(), `cardholder_info.${phone}`, { country_code: '1' }), `body.cardholder_info.${phone}.number`, /is required/);
      accepts(set(minimal(), `cardholder_info.${phone}`, { country_code: '1', number: '5551234' }));
    }
  });
});

describe('3DS authenticate validation: enums', () => {
  const ENUMS: [string, Record<string, string> | readonly string[]][] = [
    ['challenge_preference', CHALLENGE_PREFERENCE_CODES],
    ['purchase_info.transaction_type', TRANSACTION_TYPE_CODES],
    ['cardholder_info.account_type', ACCOUNT_TYPE_CODES],
    ['cardholder_info.account_info.account_age', ACCOUNT_AGE_CODES],
    ['cardholder_info.account_info.account_last_changed', ACCOUNT_CHANGE_CODES],
    ['cardholder_info.account_info.account_pwd_last_changed', PASSWORD_CHANGE_CODES],
    ['cardholder_info.account_info.payment_account_created', ACCOUNT_AGE_CODES],
    ['cardholder_info.account_info.shipping_address_first_used', SHIPPING_ADDRESS_USAGE_CODES],
    ['cardholder_info.authentication_info.method', AUTHENTICATION_METHOD_CODES],
    ['cardholder_info.prior_authentication_info.method', PRIOR_AUTHENTICATION_METHOD_CODES],
    ['merchant_info.risk_info.delivery_time_frame', DELIVERY_TIME_FRAME_CODES],
    ['merchant_info.risk_info.shipping_method', SHIPPING_METHOD_CODES],
    ['cardholder_info.billing_shipping_address_match', ['Y', 'N']],
  ];
  for (const [path, values] of ENUMS) {
    it(`${path}: every word accepted, another refused`, () => {
      for (const value of Array.isArray(values) ? values : Object.keys(values)) accepts(set(payment(), path, value));
      rejects(set(payment(), path, 'sometimes'), `body.${path}`, /must be one of/);
    });
  }

  it('gives each challenge preference its EMV code', () => {
    for (const [word, code] of Object.entries(CHALLENGE_PREFERENCE_CODES)) {
      assert.equal(accepts(set(minimal(), 'challenge_preference', word)).challenge_preference_code, code);
    }
    assert.equal(CHALLENGE_PREFERENCE_CODES['cartes-bancaires'], '90');
  });
});

describe('3DS authenticate validation: formats', () => {
  /** path, values accepted, values refused (each on a payment body). */
  const FORMATS: [string, unknown[], unknown[]][] = [
    ['purchase_info.date', ['20250131235959', '20240229000000'], ['2025013123595', '20250132000000', '20250131240000', '20250131236000', '20230229000000', '2025-01-31T00:00:00Z', 20250131235959]],
    ['purchase_info.recurring_expiration', ['20261231'], ['2026-12-31', '20261301', '20260431', '202612']],
    ['merchant_info.risk_info.pre_order_date', ['20250701'], ['20250700', 'tomorrow']],
    ['cardholder_info.account_info.account_change_date', ['20200101'], ['20201301']],
    ['cardholder_info.account_info.account_created_date', ['20200101'], ['2020011']],
    ['cardholder_info.account_info.account_pwd_change_date', ['20200101'], ['20200132']],
    ['cardholder_info.account_info.payment_account_age', ['20200101'], ['20200001']],
    ['cardholder_info.account_info.shipping_address_usage_date', ['20200101'], ['202001011200']],
    ['cardholder_info.authentication_info', [{ method: 'fido', timestamp: '202501311200' }], [{ method: 'fido', timestamp: '20250131120' }]],
    ['cardholder_info.prior_authentication_info', [{ method: 'challenge', timestamp: '202501312359', reference_id: '8b6f1c1e-7d4a-4b8a-9f3c-2a1b3c4d5e6f' }], [{ method: 'challenge', timestamp: '202501312400' }, { method: 'challenge', reference_id: 'acs-1' }]],
    ['purchase_info.amount', ['1050', '0', '000123'], ['10.50', '-1', '1,050', '', 1050, '1'.repeat(49)]],
    ['purchase_info.exponent', ['2'], ['02', '', 2, '0', '3']],
    ['purchase_info.currency', ['840', 'USD', 'usd'], ['XYZ', '000', '123', 'US', 'USDD', 840, '']],
    ['merchant_info.risk_info.gift_card_currency', ['978', 'EUR'], ['EURO', 'ABC']],
    ['merchant_info.country_code', ['840', '250', '004'], ['999', '000', 'US', 'USA', 840, '84']],
    ['cardholder_info.billing_address.country_code', ['826'], ['GBR', '900']],
    ['cardholder_info.shipping_address.country_code', ['826'], ['123']],
    ['merchant_info.category_code', ['5999'], ['599', '59999', 'abcd']],
    ['merchant_info.acquirer_bin', ['411111', '41111122223'], ['41111', '411111222233', 'abcdef']],
    ['merchant_info.mid', ['M'.repeat(35)], ['', 'M'.repeat(36), 12]],
    ['purchase_info.installment_count', ['2', '999'], ['1', '0', '1000', 3]],
    ['purchase_info.recurring_frequency', ['1', '9999'], ['0', '10000', '7d']],
    ['decoupled_challenge_max_time', [1, 10080], [0, 10081, 1.5, '60', -5]],
    ['request_decoupled_challenge', [true, false], ['true', 1]],
    ['requestor_info.url', ['https://shop.example/path', 'http://shop.example'], ['ftp://shop.example', 'shop.example', 'not a url', '']],
    ['requestor_info.id', ['r'.repeat(35)], ['r'.repeat(36), '']],
    ['cardholder_info.email', ['jo@example.com'], ['jo', 'jo@', 'a'.repeat(250) + '@example.com']],
    ['cardholder_info.name', ['Jo', 'J'.repeat(45)], ['J', 'J'.repeat(46), 7]],
    ['cardholder_info.phone_number', [{ country_code: '+44', number: '2079460000' }, { country_code: '1', number: '5551234' }], [{ country_code: '44a', number: '1' }, { country_code: '1', number: '555-1234' }, { country_code: '1', number: '1'.repeat(16) }]],
    ['cardholder_info.billing_address.state_code', ['CA', 'US-CA', 'ca', '01'], ['California', 'US-', 'USA-CA']],
    ['cardholder_info.account_info.purchase_count_half_year', ['12', '9999'], ['12345', '1.5']],
    ['cardholder_info.account_info.transaction_count_day', ['3'], ['1000']],
    ['cardholder_info.account_info.transaction_count_year', ['300'], ['x']],
    ['cardholder_info.account_info.shipping_account_name_match', [true], ['Y']],
    ['merchant_info.risk_info.gift_card_count', ['2', '99'], ['100', 'two']],
    ['merchant_info.risk_info.delivery_email', ['box@example.com'], ['box']],
    ['merchant_info.risk_info.pre_order_purchase', [false], ['no']],
    ['broadcast_info', [{}, { any: { thing: [1] } }], ['x', []]],
    ['message_extensions', [[], [{ name: 'ext', id: 'A1', criticalityIndicator: false, data: {} }]], [[1], {}, Array.from({ length: 11 }, () => ({}))]],
  ];
  for (const [path, good, bad] of FORMATS) {
    it(`${path}: accepts ${good.length} and refuses ${bad.length} values`, () => {
      // The fields other rules ask for beside these are there, so only the value under test can fail.
      const withValue = (value: unknown) => {
        const body = set(set(payment(), 'decoupled_challenge_max_time', 30), 'cardholder_info.billing_address', { country_code: '840' });
        return set(body, path, value);
      };
      for (const value of good) accepts(withValue(value));
      for (const value of bad) {
        const errors = errorsOf(withValue(value));
        assert.ok(Object.keys(errors).some((f) => f === `body.${path}` || f.startsWith(`body.${path}.`) || f.startsWith(`body.${path}[`)), `${JSON.stringify(value)} at ${path}: ${JSON.stringify(errors)}`);
      }
    });
  }

  it('says what a format wants, in words', () => {
    rejects(set(payment(), 'purchase_info.date', '2025-01-31'), 'body.purchase_info.date', /^must be a UTC date and time as YYYYMMDDhhmmss$/);
    rejects(set(payment(), 'purchase_info.date', '20250231000000'), 'body.purchase_info.date', /is not a real date and time: 20250231000000/);
    rejects(set(payment(), 'purchase_info.recurring_expiration', '31122026'), 'body.purchase_info.recurring_expiration', /is not a real date: 31122026/);
    rejects(set(payment(), 'purchase_info.amount', '10.50'), 'body.purchase_info.amount', /^must be digits only/);
    rejects(set(payment(), 'merchant_info.country_code', 'USA'), 'body.merchant_info.country_code', /USA is 840 in ISO 3166-1 numeric/);
    rejects(set(payment(), 'merchant_info.country_code', '999'), 'body.merchant_info.country_code', /is not an ISO 3166-1 numeric country code: 999/);
    rejects(set(payment(), 'decoupled_challenge_max_time', 10081), 'body.decoupled_challenge_max_time', /^must be at most 10080$/);
  });
});

describe('3DS authenticate validation: currencies as EMV carries them', () => {
  const currencyOf = (currency: string, exponent = '2') =>
    accepts(set(set(payment(), 'purchase_info.currency', currency), 'purchase_info.exponent', exponent)).purchase_info?.currency;

  it('converts alphabetic codes to numeric ones and keeps numeric codes', () => {
    assert.equal(currencyOf('USD'), '840');
    assert.equal(currencyOf('usd'), '840');
    assert.equal(currencyOf('840'), '840');
    assert.equal(currencyOf('EUR'), '978');
    assert.equal(currencyOf('JPY', '0'), '392');
    assert.equal(currencyOf('KWD', '3'), '414');
    assert.equal(currencyOf('ALL'), '008');
    const gift = accepts(set(payment(), 'merchant_info.risk_info', { gift_card_amount: '25', gift_card_currency: 'GBP' }));
    assert.equal(gift.merchant_info?.risk_info?.gift_card_currency, '826');
  });

  it('refuses unknown codes, alphabetic or numeric', () => {
    rejects(set(payment(), 'purchase_info.currency', 'ABC'), 'body.purchase_info.currency', /is not an ISO 4217 currency code: ABC/);
    rejects(set(payment(), 'purchase_info.currency', '001'), 'body.purchase_info.currency', /is not an ISO 4217 currency code: 001/);
    rejects(set(payment(), 'purchase_info.currency', 'HRK'), 'body.purchase_info.currency', /not an ISO 4217/);
  });

  it('requires the exponent to be the currency\'s minor units, except for currencies without any', () => {
    rejects(set(payment(), 'purchase_info.exponent', '0'), 'body.purchase_info.exponent', /must be 2: the ISO 4217 minor units of USD \(840\)/);
    rejects(set(set(payment(), 'purchase_info.currency', 'JPY'), 'purchase_info.exponent', '2'), 'body.purchase_info.exponent', /must be 0/);
    assert.equal(currencyOf('XAU', '4'), '959');
  });

  it('normalizes the rest: calling codes without +, subdivisions without their country', () => {
    const body = set(minimal(), 'cardholder_info.mobile_phone_number', { country_code: '+44', number: '7700900123' });
    set(body, 'cardholder_info.shipping_address', { state_code: 'gb-lnd', country_code: '826' });
    const request = accepts(body);
    assert.equal(request.cardholder_info.mobile_phone_number?.country_code, '44');
    assert.equal(request.cardholder_info.shipping_address?.state_code, 'LND');
  });
});
