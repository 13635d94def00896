import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cardBrand } from '../../src/vault/card-brands.ts';
import { luhnValid } from '../../src/vault/checksums.ts';

describe('cardBrand', () => {
  // The networks' published test numbers, plus numbers at the edges of ranges.
  const rows: [number: string, brand: string][] = [
    ['4242424242424242', 'visa'],
    ['4000056655665556', 'visa'],
    ['4222222222222', 'visa'],
    ['4111111111111111', 'visa'],
    ['5555555555554444', 'mastercard'],
    ['5105105105105100', 'mastercard'],
    ['2223003122003222', 'mastercard'],
    ['2221000000000009', 'mastercard'],
    ['2720990000000007', 'mastercard'],
    ['378282246310005', 'american-express'],
    ['371449635398431', 'american-express'],
    ['6011111111111117', 'discover'],
    ['6011000990139424', 'discover'],
    ['3056930009020004', 'diners-club'],
    ['30569309025904', 'diners-club'],
    ['3566002020360505', 'jcb'],
    ['6200000000000005', 'unionpay'],
    // A six-digit range beats a shorter one that also matches: 6221 26 is Discover, not UnionPay's 62.
    ['6221260000000000', 'discover'],
    // Elo's 4011 78 is inside Visa's 4 and must win over it.
    ['4011780000000000', 'elo'],
    ['5018000000000009', 'maestro'],
    ['2200000000000004', 'mir'],
    // Right prefix, wrong length for the brand.
    ['42424242424242', 'unknown'],
    ['37828224631000', 'unknown'],
    // No network's range.
    ['9999999999999995', 'unknown'],
    ['1234567890123452', 'unknown'],
    ['', 'unknown'],
  ];
  for (const [number, brand] of rows) it(`${number || '(empty)'} → ${brand}`, () => assert.equal(cardBrand(number), brand));

  it('the famous test numbers above are Luhn-valid (so they are realistic inputs)', () => {
    for (const n of ['4242424242424242', '4000056655665556', '5555555555554444', '2223003122003222', '378282246310005', '6011111111111117', '3056930009020004', '3566002020360505', '6200000000000005']) {
      assert.ok(luhnValid(n), n);
    }
  });
});
