import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FieldErrorList } from '../../src/http/errors.ts';
import { TOKEN_TYPES, TOKEN_TYPE_NAMES } from '../../src/vault/token-types.ts';

const year = new Date().getUTCFullYear();

type Row = {
  type: string;
  data: unknown;
  /** The canonical data validate returns, when valid (defaults to the input). */
  canonical?: unknown;
  /** Field path → a pattern its message must match; absent when the data is valid. */
  errors?: Record<string, RegExp>;
};

const rows: Row[] = [
  // token: any JSON but null
  { type: 'token', data: { any: ['json', 1, true] } },
  { type: 'token', data: 'a string' },
  { type: 'token', data: 0 },
  { type: 'token', data: false },
  { type: 'token', data: null, errors: { 'body.data': /is required/ } },

  // card
  { type: 'card', data: { number: '4242424242424242' } },
  { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: year + 2, cvc: '123' } },
  { type: 'card', data: { number: '378282246310005', expiration_month: 1, expiration_year: year + 1, cvc: '1234' } },
  { type: 'card', data: { number: '4242424242424241' }, errors: { 'body.data.number': /Luhn/ } },
  { type: 'card', data: { number: '42424242424' }, errors: { 'body.data.number': /12 to 19 digits/ } },
  { type: 'card', data: { number: '42424242424242424242' }, errors: { 'body.data.number': /12 to 19 digits/ } },
  { type: 'card', data: { number: '4242 4242 4242 4242' }, errors: { 'body.data.number': /12 to 19 digits/ } },
  { type: 'card', data: { number: 4242424242424242 }, errors: { 'body.data.number': /string of digits/ } },
  { type: 'card', data: {}, errors: { 'body.data.number': /is required/ } },
  { type: 'card', data: '4242424242424242', errors: { 'body.data': /must be an object/ } },
  { type: 'card', data: ['4242424242424242'], errors: { 'body.data': /must be an object/ } },
  { type: 'card', data: null, errors: { 'body.data': /must be an object/ } },
  { type: 'card', data: { number: '4242424242424242', pin: '1234' }, errors: { 'body.data.pin': /not a field/ } },
  { type: 'card', data: { number: '4242424242424242', expiration_month: 13, expiration_year: year + 1 }, errors: { 'body.data.expiration_month': /1 to 12/ } },
  { type: 'card', data: { number: '4242424242424242', expiration_month: 0, expiration_year: year + 1 }, errors: { 'body.data.expiration_month': /1 to 12/ } },
  { type: 'card', data: { number: '4242424242424242', expiration_month: '12', expiration_year: year + 1 }, errors: { 'body.data.expiration_month': /1 to 12/ } },
  { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 27 }, errors: { 'body.data.expiration_year': /four-digit/ } },
  { type: 'card', data: { number: '4242424242424242', expiration_month: 12 }, errors: { 'body.data.expiration_year': /required with the other/ } },
  { type: 'card', data: { number: '4242424242424242', expiration_year: year + 1 }, errors: { 'body.data.expiration_month': /required with the other/ } },
  { type: 'card', data: { number: '4242424242424242', expiration_month: 1, expiration_year: year - 1 }, errors: { 'body.data.expiration_year': /expired/ } },
  { type: 'card', data: { number: '4242424242424242', cvc: '12' }, errors: { 'body.data.cvc': /3 or 4 digits/ } },
  { type: 'card', data: { number: '4242424242424242', cvc: 123 }, errors: { 'body.data.cvc': /3 or 4 digits/ } },

  // network_token: a card's fields, a cryptogram always, an ECI of 1-2 digits
  { type: 'network_token', data: { number: '4242424242424242', cryptogram: 'AgAAAAAABk4DWZ4C28yUQAAAAAA=' } },
  { type: 'network_token', data: { number: '4242424242424242', expiration_month: 12, expiration_year: year + 2, cryptogram: 'AgAA', eci_indicator: '05' } },
  { type: 'network_token', data: { number: '4242424242424242' }, errors: { 'body.data.cryptogram': /is required/ } },
  { type: 'network_token', data: { number: '4242424242424242', cryptogram: 'not base64!' }, errors: { 'body.data.cryptogram': /base64/ } },
  { type: 'network_token', data: { number: '4242424242424242', cryptogram: 'AgAA', eci_indicator: 5 }, errors: { 'body.data.eci_indicator': /1 or 2 digits/ } },
  { type: 'network_token', data: { number: '4242424242424241', cryptogram: 'AgAA' }, errors: { 'body.data.number': /Luhn/ } },

  // card_number
  { type: 'card_number', data: '4242424242424242' },
  { type: 'card_number', data: '6200000000000005' },
  { type: 'card_number', data: '4242424242424243', errors: { 'body.data': /Luhn/ } },
  { type: 'card_number', data: '1234', errors: { 'body.data': /12 to 19 digits/ } },
  { type: 'card_number', data: { number: '4242424242424242' }, errors: { 'body.data': /string of digits/ } },

  // bank
  { type: 'bank', data: { routing_number: '021000021', account_number: '000123456789' } },
  { type: 'bank', data: { routing_number: '011401533', account_number: '1234' } },
  { type: 'bank', data: { routing_number: '021000022', account_number: '000123456789' }, errors: { 'body.data.routing_number': /checksum/ } },
  { type: 'bank', data: { routing_number: '02100002', account_number: '000123456789' }, errors: { 'body.data.routing_number': /9-digit/ } },
  { type: 'bank', data: { routing_number: '021000021', account_number: '123' }, errors: { 'body.data.account_number': /4 to 17 digits/ } },
  { type: 'bank', data: { routing_number: '021000021', account_number: '123456789012345678' }, errors: { 'body.data.account_number': /4 to 17 digits/ } },
  { type: 'bank', data: { routing_number: '021000021' }, errors: { 'body.data.account_number': /4 to 17 digits/ } },
  { type: 'bank', data: { account_number: '000123456789' }, errors: { 'body.data.routing_number': /9-digit/ } },
  { type: 'bank', data: { routing_number: '021000021', account_number: '000123456789', iban: 'x' }, errors: { 'body.data.iban': /not a field/ } },
  { type: 'bank', data: '021000021', errors: { 'body.data': /must be an object/ } },

  // us_bank_account_number
  { type: 'us_bank_account_number', data: '000123456789' },
  { type: 'us_bank_account_number', data: '12345678901234567' },
  { type: 'us_bank_account_number', data: '123', errors: { 'body.data': /4 to 17 digits/ } },
  { type: 'us_bank_account_number', data: '12345-6789', errors: { 'body.data': /4 to 17 digits/ } },
  { type: 'us_bank_account_number', data: 123456789, errors: { 'body.data': /4 to 17 digits/ } },

  // us_bank_routing_number
  { type: 'us_bank_routing_number', data: '021000021' },
  { type: 'us_bank_routing_number', data: '110000000' },
  { type: 'us_bank_routing_number', data: '110000001', errors: { 'body.data': /checksum/ } },
  { type: 'us_bank_routing_number', data: '21000021', errors: { 'body.data': /9-digit/ } },
  { type: 'us_bank_routing_number', data: 21000021, errors: { 'body.data': /9-digit/ } },

  // social_security_number: stored canonically as 123-45-6789
  { type: 'social_security_number', data: '123-45-6789' },
  { type: 'social_security_number', data: '123456789', canonical: '123-45-6789' },
  { type: 'social_security_number', data: '078-05-1120' },
  { type: 'social_security_number', data: '12-345-6789', errors: { 'body.data': /9 digits/ } },
  { type: 'social_security_number', data: '1234567890', errors: { 'body.data': /9 digits/ } },
  { type: 'social_security_number', data: 123456789, errors: { 'body.data': /9 digits/ } },
  { type: 'social_security_number', data: '000-45-6789', errors: { 'body.data': /not an issuable/ } },
  { type: 'social_security_number', data: '666-45-6789', errors: { 'body.data': /not an issuable/ } },
  { type: 'social_security_number', data: '900-45-6789', errors: { 'body.data': /not an issuable/ } },
  { type: 'social_security_number', data: '123-00-6789', errors: { 'body.data': /not an issuable/ } },
  { type: 'social_security_number', data: '123-45-0000', errors: { 'body.data': /not an issuable/ } },

  // employer_id_number: stored canonically as 12-3456789
  { type: 'employer_id_number', data: '12-3456789' },
  { type: 'employer_id_number', data: '123456789', canonical: '12-3456789' },
  { type: 'employer_id_number', data: '123-456789', errors: { 'body.data': /9 digits/ } },
  { type: 'employer_id_number', data: '12-345678', errors: { 'body.data': /9 digits/ } },
  { type: 'employer_id_number', data: null, errors: { 'body.data': /9 digits/ } },
];

describe('token type validation', () => {
  for (const row of rows) {
    const label = `${row.type} ${JSON.stringify(row.data)} → ${row.errors ? Object.keys(row.errors).join(', ') : 'valid'}`;
    it(label, () => {
      const errors = new FieldErrorList();
      const out = TOKEN_TYPES[row.type].validate(row.data, 'body.data', errors);
      if (!row.errors) {
        assert.deepEqual(errors.errors, {});
        assert.deepEqual(out, row.canonical ?? row.data);
        return;
      }
      assert.deepEqual(Object.keys(errors.errors).sort(), Object.keys(row.errors).sort());
      for (const [field, pattern] of Object.entries(row.errors)) {
        assert.ok(errors.errors[field].some((m) => pattern.test(m)), `${field}: ${JSON.stringify(errors.errors[field])} should match ${pattern}`);
      }
      assert.throws(() => errors.throwIfAny(), (err: Error & { status?: number }) => err.status === 400);
    });
  }

  it('every type is covered by the table', () => {
    for (const name of TOKEN_TYPE_NAMES) {
      assert.ok(rows.some((r) => r.type === name && !r.errors), `${name} has a valid row`);
      assert.ok(rows.some((r) => r.type === name && r.errors), `${name} has an invalid row`);
    }
  });

  it('the card expiry check uses the current month: this month is valid, last month has expired', () => {
    const now = new Date();
    const thisMonth = { month: now.getUTCMonth() + 1, year: now.getUTCFullYear() };
    const last = now.getUTCMonth() === 0 ? { month: 12, year: thisMonth.year - 1 } : { month: thisMonth.month - 1, year: thisMonth.year };
    const ok = new FieldErrorList();
    TOKEN_TYPES.card.validate({ number: '4242424242424242', expiration_month: thisMonth.month, expiration_year: thisMonth.year }, 'd', ok);
    assert.deepEqual(ok.errors, {});
    const expired = new FieldErrorList();
    TOKEN_TYPES.card.validate({ number: '4242424242424242', expiration_month: last.month, expiration_year: last.year }, 'd', expired);
    assert.deepEqual(Object.keys(expired.errors), ['d.expiration_year']);
  });
});

describe('token type views (non-sensitive, stored in the clear)', () => {
  it('card: bin, last4, expiry, brand — never the full number or the cvc', () => {
    const views = TOKEN_TYPES.card.views!({ number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' });
    assert.deepEqual(views, { card: { bin: '424242', last4: '4242', expiration_month: 12, expiration_year: 2031, brand: 'visa' } });
  });

  it('card_number: bin, last4, brand', () => {
    assert.deepEqual(TOKEN_TYPES.card_number.views!('378282246310005'), { card: { bin: '378282', last4: '0005', brand: 'american-express' } });
  });

  it('bank: routing number and the last four of the account', () => {
    assert.deepEqual(TOKEN_TYPES.bank.views!({ routing_number: '021000021', account_number: '000123456789' }), { bank: { routing_number: '021000021', account_number_last4: '6789' } });
    assert.deepEqual(TOKEN_TYPES.us_bank_account_number.views!('000123456789'), { bank: { account_number_last4: '6789' } });
  });

  it('types holding a secret in full have no views', () => {
    for (const name of ['token', 'social_security_number', 'employer_id_number']) assert.equal(TOKEN_TYPES[name].views, undefined, name);
  });
});
