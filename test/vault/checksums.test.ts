import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { abaValid, luhnValid } from '../../src/vault/checksums.ts';

describe('luhnValid', () => {
  const rows: [digits: string, valid: boolean][] = [
    // One valid number of every card length, 12 to 19 digits.
    ['412345678905', true],
    ['4123456789011', true],
    ['41234567890120', true],
    ['412345678901233', true],
    ['4123456789012349', true],
    ['41234567890123458', true],
    ['412345678901234561', true],
    ['4123456789012345677', true],
    // Well-known test numbers.
    ['4242424242424242', true],
    ['5555555555554444', true],
    ['378282246310005', true],
    ['6011111111111117', true],
    ['30569309025904', true],
    ['4222222222222', true],
    // Each of the above with the check digit off by one.
    ['412345678906', false],
    ['4123456789012', false],
    ['41234567890121', false],
    ['412345678901234', false],
    ['4123456789012340', false],
    ['41234567890123459', false],
    ['412345678901234562', false],
    ['4123456789012345678', false],
    ['4242424242424241', false],
    ['378282246310006', false],
    // Two adjacent digits swapped: the error Luhn exists to catch.
    ['4242424242424224', false],
    ['5555555555545444', false],
    // Doubled digits above 4 fold (2·5 = 10 → 1): eight folds here, so without folding the sum would be off by 72.
    ['5555555555555557', true],
    ['5555555555555555', false],
  ];
  for (const [digits, valid] of rows) {
    it(`${digits} (${digits.length} digits) → ${valid}`, () => assert.equal(luhnValid(digits), valid));
  }
});

describe('abaValid', () => {
  const rows: [routing: string, valid: boolean][] = [
    ['021000021', true],
    ['011000015', true],
    ['110000000', true],
    ['011401533', true],
    ['121000358', true],
    // Last digit changed.
    ['021000022', false],
    ['011000016', false],
    ['110000001', false],
    ['011401534', false],
    // Two digits swapped (weights 3 and 7 differ, so this is caught).
    ['201000021', false],
    // Not nine digits.
    ['02100002', false],
    ['0210000210', false],
    ['02100002a', false],
    [' 21000021', false],
    ['021-00002', false],
    ['', false],
  ];
  for (const [routing, valid] of rows) it(`${JSON.stringify(routing)} → ${valid}`, () => assert.equal(abaValid(routing), valid));
});
