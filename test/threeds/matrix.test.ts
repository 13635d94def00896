import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isThreeDSServiceError, TEST_CARDS } from '../../src/threeds/index.ts';
import { cardBrand } from '../../src/vault/card-brands.ts';
import { ACS_BASE, assertStatus, challengeOf, outcomeOf, run, simulator } from './helpers.ts';

/**
 * PAYMENTS-FACTS.md §1.1, written out again here rather than read from TEST_CARDS, so the table
 * in the source is checked against the documented one: every Luhn-valid card and its
 * 42000000000000NN alias, through prepare → authenticate → (challenge) → final result.
 */
type Expect =
  | { ares: 'Y' | 'A' | 'N' | 'U' | 'R' | 'I' }
  | { ares: 'C'; final: 'Y' | 'A' | 'N' | 'U' | 'R'; type?: 'static' | 'out-of-band'; mandated?: true; noMethod?: true }
  | { ares: 'error'; source: 'Directory Server' | '3DS Server' };

const MATRIX: [string, string[], string, Expect][] = [
  ['frictionless-success', ['5204247750001471', '6011601160116011', '340000000004001'], '02', { ares: 'Y' }],
  ['challenge-success', ['4000020000000000', '370000000000002', '3566002020360505', '3566006663297692'], '04', { ares: 'C', final: 'Y' }],
  ['challenge-success-no-method', ['4005562231212123'], '14', { ares: 'C', final: 'Y', noMethod: true }],
  ['mandated-challenge-success', ['4761369980320253', '5200000000001104'], '15', { ares: 'C', final: 'Y', mandated: true }],
  ['out-of-band-challenge-success', ['4000000000000341'], '16', { ares: 'C', final: 'Y', type: 'out-of-band' }],
  ['attempted-challenge', ['4005571701111111'], '08', { ares: 'C', final: 'A' }],
  ['attempted', ['4111111111111111', '5424180011113336'], '03', { ares: 'A' }],
  ['failed', ['4264281511112228', '5424180000000171'], '05', { ares: 'N' }],
  ['unavailable', ['5405001111111165'], '06', { ares: 'U' }],
  ['rejected', ['5405001111111116'], '07', { ares: 'R' }],
  ['failed-challenge', ['4055011111111111', '5427660064241339'], '09', { ares: 'C', final: 'N' }],
  ['failed-out-of-band-challenge', ['6011361011110004'], '17', { ares: 'C', final: 'N', type: 'out-of-band' }],
  ['unavailable-challenge', ['6011361000008888'], '10', { ares: 'C', final: 'U' }],
  ['rejected-challenge', ['6011361000001115'], '11', { ares: 'C', final: 'R' }],
  ['directory-server-error', ['4264281500003339', '5424180011110001'], '12', { ares: 'error', source: 'Directory Server' }],
  ['threeds-server-error', ['4264281500001119'], '13', { ares: 'error', source: '3DS Server' }],
];

const DS_IDS: Record<string, string> = {
  'visa': 'A000000003', 'mastercard': 'A000000004', 'american-express': 'A000000025', 'discover': 'A000000152', 'jcb': 'A000000065',
};

async function check(pan: string, brand: string, expect: Expect): Promise<void> {
  const provider = simulator();
  const { prepared, outcome } = await run(provider, pan);
  assert.equal(prepared.card_brand, brand, pan);
  assert.equal(prepared.directory_server_id, DS_IDS[brand], pan);
  assert.equal(prepared.recommended_version, '2.2.0', pan);
  assert.ok(prepared.version.available_version.includes(prepared.recommended_version), pan);
  if (expect.ares === 'C' && expect.noMethod) assert.equal(prepared.method_url, undefined, `${pan}: no method_url`);
  else assert.equal(prepared.method_url, `${ACS_BASE}/method`, pan);

  if (expect.ares === 'error') {
    assert.ok(isThreeDSServiceError(outcome), `${pan}: a service error`);
    assert.equal(outcome.error_source, expect.source, pan);
    assert.equal(outcome.service_status, expect.source === 'Directory Server' ? 502 : 500, pan);
    assert.ok(outcome.message && outcome.detail, pan);
    return;
  }
  const { result, challenge } = outcomeOf(outcome, pan);
  assert.equal(result.directory_status_code, expect.ares, pan);
  if (expect.ares !== 'C') {
    assertStatus(result, expect.ares, brand, pan);
    assert.equal(challenge, undefined, pan);
    assert.equal(result.acs_challenge_url, undefined, pan);
    return;
  }
  // The ARes of a challenge: the fields to run it, no eci and no authentication value yet.
  assertStatus(result, 'C', brand, pan);
  assert.equal(result.acs_challenge_url, `${ACS_BASE}/challenge`, pan);
  assert.equal(result.acs_challenge_mandated, expect.mandated ? 'Y' : 'N', pan);
  assert.equal(result.authentication_challenge_type, expect.type ?? 'static', pan);
  assert.equal(result.challenge_attempts, '0', pan);

  const state = challengeOf({ result, challenge }, pan);
  const prompt = provider.challengePrompt(state);
  assert.equal(prompt.can_cancel, !expect.mandated, pan);
  const step = expect.type === 'out-of-band'
    ? await provider.challenge(state, { kind: 'approve' })
    : await provider.challenge(state, { kind: 'code', code: prompt.test_code! });
  assert.equal(step.status, 'completed', pan);
  if (step.status !== 'completed') return;
  assertStatus(step.result, expect.final, brand, `${pan} final`);
  // The final result is the same transaction, with the challenge fields kept.
  assert.equal(step.result.acs_transaction_id, result.acs_transaction_id, pan);
  assert.equal(step.result.ds_transaction_id, result.ds_transaction_id, pan);
  assert.equal(step.result.directory_status_code, 'C', pan);
  assert.equal(step.result.acs_challenge_mandated, result.acs_challenge_mandated, pan);
  assert.equal(step.result.authentication_challenge_type, result.authentication_challenge_type, pan);
  assert.equal(step.result.challenge_attempts, '1', pan);
  assert.equal(step.result.challenge_cancel_reason, undefined, pan);
}

describe('the 3DS test-card matrix (PAYMENTS-FACTS.md §1.1)', () => {
  it('the source table has exactly these rows, and Coffer\'s decoupled and informational cards', () => {
    const documented = MATRIX.map(([name, cards, alias]) => ({ name, cards, alias }));
    const own = new Set(['decoupled-challenge', 'informational']);
    assert.deepEqual(TEST_CARDS.filter((c) => !own.has(c.name)).map(({ name, cards, alias }) => ({ name, cards, alias })), documented);
    assert.deepEqual(TEST_CARDS.filter((c) => own.has(c.name)).map((c) => c.name), [...own]);
  });

  for (const [name, cards, alias, expect] of MATRIX) {
    describe(name, () => {
      for (const pan of cards) it(`${pan} (${cardBrand(pan)})`, () => check(pan, cardBrand(pan), expect));
      // The reference API does not reflect an alias's brand in 3DS: every alias is Visa.
      it(`alias 42000000000000${alias} (visa)`, () => check(`42000000000000${alias}`, 'visa', expect));
    });
  }
});
