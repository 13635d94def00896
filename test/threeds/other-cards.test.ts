import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { luhnValid } from '../../src/vault/checksums.ts';
import { SIMULATOR_DS_ID, STATUS_REASON_CODES, TEST_CARDS } from '../../src/threeds/index.ts';
import { ACS_BASE, assertStatus, outcomeOf, run, simulator } from './helpers.ts';

/** The informational card, the rule for every other card, and how challenge preferences bend it. */

describe('the informational test card 4000000000000457', () => {
  it('I: informational, no eci, no authentication value, no reason, no challenge', async () => {
    const { outcome, prepared } = await run(simulator(), '4000000000000457');
    const { result, challenge } = outcomeOf(outcome, 'I');
    assertStatus(result, 'I', 'visa', 'informational');
    assert.equal(result.authentication_status, 'informational');
    assert.equal(result.directory_status_code, 'I');
    assert.equal(challenge, undefined);
    assert.equal(prepared.method_url, `${ACS_BASE}/method`);
  });
});

describe('Coffer\'s own test cards', () => {
  it('are Luhn-valid and appear nowhere else in the table', () => {
    const own = TEST_CARDS.filter((c) => c.name === 'decoupled-challenge' || c.name === 'informational').flatMap((c) => c.cards);
    assert.deepEqual(own, ['4000000000000440', '4000000000000457']);
    for (const pan of own) assert.ok(luhnValid(pan), pan);
    const all = TEST_CARDS.flatMap((c) => c.cards);
    assert.equal(new Set(all).size, all.length);
  });
});

describe('any other card', () => {
  const cases: [string, string, string][] = [
    ['4242424242424242', 'visa', 'A000000003'],
    ['5555555555554444', 'mastercard', 'A000000004'],
    ['378282246310005', 'american-express', 'A000000025'],
    ['3530111333300000', 'jcb', 'A000000065'],
    ['36227206271667', 'diners-club', 'A000000152'],
    ['6200000000000005', 'unionpay', 'A000000333'],
    ['4200000000000001', 'visa', 'A000000003'], // 42000000000000NN outside the table is an ordinary card
    ['9999999999999995', 'unknown', SIMULATOR_DS_ID],
  ];
  for (const [pan, brand, dsId] of cases) {
    it(`${pan} (${brand}): frictionless success, eci by brand`, async () => {
      const { outcome, prepared } = await run(simulator(), pan);
      assert.equal(prepared.card_brand, brand);
      assert.equal(prepared.directory_server_id, dsId);
      assert.equal(prepared.method_url, `${ACS_BASE}/method`);
      assertStatus(outcomeOf(outcome, pan).result, 'Y', brand, pan);
    });
  }

  it('the token\'s brand is reported when the feature passes it', async () => {
    const prepared = await simulator().prepare({ pan: '4242424242424242', brand: 'visa' }, { session_id: crypto.randomUUID(), session_type: 'customer' });
    assert.equal('card_brand' in prepared && prepared.card_brand, 'visa');
  });

  it('challenge-requested: a static challenge that succeeds', async () => {
    const provider = simulator();
    const { outcome } = await run(provider, '4242424242424242', { request: { challenge_preference: 'challenge-requested' } });
    const { result, challenge } = outcomeOf(outcome, 'requested');
    assertStatus(result, 'C', 'visa', 'requested');
    assert.equal(result.acs_challenge_mandated, 'N');
    assert.equal(result.challenge_preference, 'challenge-requested');
    assert.equal(result.challenge_preference_code, '03');
    const step = await provider.challenge(challenge!, { kind: 'code', code: challenge!.code! });
    assert.equal(step.status === 'completed' && step.result.authentication_status, 'successful');
  });

  it('challenge-mandated: a mandated challenge', async () => {
    const { outcome } = await run(simulator(), '5555555555554444', { request: { challenge_preference: 'challenge-mandated' } });
    const { result } = outcomeOf(outcome, 'mandated');
    assert.equal(result.acs_challenge_mandated, 'Y');
    assert.equal(result.challenge_preference_code, '04');
  });

  it('no-challenge and other preferences: frictionless', async () => {
    for (const preference of ['no-challenge', 'no-preference', 'no-challenge-risk-analysis-performed'] as const) {
      const { outcome } = await run(simulator(), '4242424242424242', { request: { challenge_preference: preference } });
      assert.equal(outcomeOf(outcome, preference).result.authentication_status, 'successful', preference);
    }
  });

  it('a test card keeps its row whatever the preference', async () => {
    const { outcome } = await run(simulator(), '5204247750001471', { request: { challenge_preference: 'challenge-mandated' } });
    assertStatus(outcomeOf(outcome, 'frictionless').result, 'Y', 'mastercard', 'test card');
    const { outcome: challenged } = await run(simulator(), '4000020000000000', { request: { challenge_preference: 'no-challenge' } });
    assert.equal(outcomeOf(challenged, 'challenge').result.authentication_status, 'challenge');
  });

  it('challenge_preference defaults to no-preference (01)', async () => {
    const { outcome } = await run(simulator(), '4242424242424242');
    const { result } = outcomeOf(outcome, 'default');
    assert.equal(result.challenge_preference, 'no-preference');
    assert.equal(result.challenge_preference_code, '01');
  });
});

describe('vocabulary', () => {
  it('reason codes are distinct two-digit EMV codes', () => {
    const codes = Object.values(STATUS_REASON_CODES);
    assert.equal(new Set(codes).size, codes.length);
    for (const code of codes) assert.match(code, /^\d{2}$/);
  });
});
