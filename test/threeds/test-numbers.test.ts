import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALIAS_PREFIX, TEST_CARDS } from '../../src/threeds/index.ts';
import { cardNumberChecks, luhnValid, NON_LUHN_TEST_CARDS } from '../../src/vault/checksums.ts';

/** The vault's exception to the Luhn check is exactly the simulator's test numbers that fail it. */
describe('the non-Luhn 3DS test numbers', () => {
  it('are the test cards and aliases that fail Luhn, no more and no fewer', () => {
    const numbers = TEST_CARDS.flatMap((c) => [...c.cards, ...(c.alias ? [ALIAS_PREFIX + c.alias] : [])]);
    assert.deepEqual([...NON_LUHN_TEST_CARDS].sort(), numbers.filter((n) => !luhnValid(n)).sort());
  });

  it('pass the card number check; their neighbours do not', () => {
    for (const n of NON_LUHN_TEST_CARDS) assert.ok(cardNumberChecks(n), n);
    assert.equal(cardNumberChecks('4200000000000001'), false);
    assert.equal(cardNumberChecks('6011601160116012'), false);
    assert.ok(cardNumberChecks('4111111111111111'));
  });
});
