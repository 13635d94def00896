import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChallengeState, ThreeDSProvider } from '../../src/threeds/index.ts';
import { assertStatus, challengeOf, outcomeOf, run, simulator } from './helpers.ts';

/** The simulated ACS's challenge page logic: codes, attempts, cancel, mandated, out-of-band. */

const STATIC_Y = '4000020000000000';
const STATIC_N = '4055011111111111';
const MANDATED = '5200000000001104';
const OOB = '4000000000000341';

async function challengeFor(provider: ThreeDSProvider, pan: string): Promise<ChallengeState> {
  return challengeOf(outcomeOf((await run(provider, pan)).outcome, pan), pan);
}

/** A code that is not the expected one. */
function wrong(state: ChallengeState): string {
  return state.code === '000000' ? '111111' : '000000';
}

describe('static one-time code', () => {
  it('the page shows the code in test mode, and three tries', async () => {
    const provider = simulator();
    const state = await challengeFor(provider, STATIC_Y);
    const prompt = provider.challengePrompt(state);
    assert.match(prompt.test_code!, /^\d{6}$/);
    assert.equal(prompt.test_code, state.code);
    assert.deepEqual({ ...prompt, test_code: undefined }, {
      type: 'static', mandated: false, can_cancel: true, attempts_remaining: 3, test_code: undefined, completed: false,
    });
  });

  it('a wrong code leaves it pending and counts the attempt, in the state and its ARes', async () => {
    const provider = simulator();
    const state = await challengeFor(provider, STATIC_Y);
    const step = await provider.challenge(state, { kind: 'code', code: wrong(state) });
    assert.equal(step.status, 'pending');
    assert.equal(step.status === 'pending' && step.problem, 'wrong-code');
    assert.equal(step.challenge.attempts, 1);
    assert.equal(step.challenge.ares.challenge_attempts, '1');
    assert.equal(step.challenge.ares.authentication_status, 'challenge');
    assert.equal(provider.challengePrompt(step.challenge).attempts_remaining, 2);
    // The state handed in is not changed: the feature stores the returned one.
    assert.equal(state.attempts, 0);
  });

  it('wrong, then right: the card row\'s verdict, after two attempts', async () => {
    const provider = simulator();
    const state = await challengeFor(provider, STATIC_Y);
    const first = await provider.challenge(state, { kind: 'code', code: wrong(state) });
    const second = await provider.challenge(first.challenge, { kind: 'code', code: ` ${state.code} ` });
    assert.equal(second.status, 'completed');
    if (second.status !== 'completed') return;
    assertStatus(second.result, 'Y', 'visa', 'second try');
    assert.equal(second.result.challenge_attempts, '2');
  });

  it('three wrong codes: failed (N), exceeds-acs-maximum-challenges', async () => {
    const provider = simulator();
    let state = await challengeFor(provider, STATIC_Y);
    for (let i = 1; i <= 2; i++) {
      const step = await provider.challenge(state, { kind: 'code', code: wrong(state) });
      assert.equal(step.status, 'pending', `try ${i}`);
      state = step.challenge;
    }
    const last = await provider.challenge(state, { kind: 'code', code: wrong(state) });
    assert.equal(last.status, 'completed');
    if (last.status !== 'completed') return;
    assertStatus(last.result, 'N', 'visa', 'three wrong');
    assert.equal(last.result.authentication_status_reason, 'exceeds-acs-maximum-challenges');
    assert.equal(last.result.authentication_status_reason_code, '19');
    assert.equal(last.result.challenge_attempts, '3');
    assert.equal(provider.challengePrompt(last.challenge).completed, true);
    assert.equal(provider.challengePrompt(last.challenge).attempts_remaining, 0);
    // Settled: the right code now changes nothing.
    const after = await provider.challenge(last.challenge, { kind: 'code', code: state.code! });
    assert.equal(after.status, 'completed');
    assert.deepEqual(after.status === 'completed' && after.result, last.result);
  });

  it('the right code on a failed-challenge card: the issuer still says N, with its reason', async () => {
    const provider = simulator();
    const state = await challengeFor(provider, STATIC_N);
    const step = await provider.challenge(state, { kind: 'code', code: state.code! });
    assert.equal(step.status, 'completed');
    if (step.status !== 'completed') return;
    assertStatus(step.result, 'N', 'visa', 'failed challenge');
    assert.equal(step.result.authentication_status_reason, 'card-authentication-failed');
    assert.equal(step.result.authentication_status_reason_code, '01');
  });

  it('an out-of-band approval is not an answer to a code challenge', async () => {
    const provider = simulator();
    const state = await challengeFor(provider, STATIC_Y);
    const step = await provider.challenge(state, { kind: 'approve' });
    assert.equal(step.status === 'pending' && step.problem, 'unsupported-action');
    assert.equal(step.challenge.attempts, 0);
  });

  it('every challenge gets its own code and transaction ids', async () => {
    const provider = simulator();
    const states = await Promise.all(Array.from({ length: 20 }, () => challengeFor(provider, STATIC_Y)));
    assert.ok(new Set(states.map((s) => s.code)).size > 1);
    assert.equal(new Set(states.map((s) => s.ares.acs_transaction_id)).size, 20);
  });
});

describe('cancel', () => {
  it('the cardholder cancels: failed (N), challenge_cancel_reason cardholder-cancelled (01)', async () => {
    const provider = simulator();
    const state = await challengeFor(provider, STATIC_Y);
    const step = await provider.challenge(state, { kind: 'cancel' });
    assert.equal(step.status, 'completed');
    if (step.status !== 'completed') return;
    assertStatus(step.result, 'N', 'visa', 'cancelled');
    assert.equal(step.result.challenge_cancel_reason, 'cardholder-cancelled');
    assert.equal(step.result.challenge_cancel_reason_code, '01');
    assert.equal(step.result.authentication_status_reason, 'authentication-attempted-not-performed');
    assert.equal(step.result.challenge_attempts, '0');
  });

  it('timeouts fail the challenge, technical faults leave it unavailable', async () => {
    const provider = simulator();
    const cases = [['acs-timeout', '04', 'N'], ['first-creq-not-received', '05', 'N'], ['sdk-timeout', '08', 'N'], ['transaction-error', '06', 'U']] as const;
    for (const [reason, code, letter] of cases) {
      const step = await provider.challenge(await challengeFor(provider, STATIC_Y), { kind: 'cancel', reason });
      assert.equal(step.status, 'completed', reason);
      if (step.status !== 'completed') continue;
      assertStatus(step.result, letter, 'visa', reason);
      assert.equal(step.result.challenge_cancel_reason_code, code, reason);
    }
  });

  it('a mandated challenge refuses the cardholder\'s cancel, and still completes', async () => {
    const provider = simulator();
    const state = await challengeFor(provider, MANDATED);
    assert.equal(state.ares.acs_challenge_mandated, 'Y');
    assert.equal(provider.challengePrompt(state).can_cancel, false);
    const refused = await provider.challenge(state, { kind: 'cancel' });
    assert.equal(refused.status === 'pending' && refused.problem, 'cancel-refused');
    const step = await provider.challenge(refused.challenge, { kind: 'code', code: state.code! });
    assert.equal(step.status, 'completed');
    if (step.status === 'completed') assertStatus(step.result, 'Y', 'mastercard', 'mandated');
  });

  it('a mandated challenge still ends when it times out', async () => {
    const provider = simulator();
    const step = await provider.challenge(await challengeFor(provider, MANDATED), { kind: 'cancel', reason: 'acs-timeout' });
    assert.equal(step.status, 'completed');
    assert.equal(step.status === 'completed' && step.result.challenge_cancel_reason, 'acs-timeout');
  });
});

describe('out-of-band', () => {
  it('no code to show; approving in the banking app completes it', async () => {
    const provider = simulator();
    const state = await challengeFor(provider, OOB);
    const prompt = provider.challengePrompt(state);
    assert.equal(prompt.type, 'out-of-band');
    assert.equal(prompt.test_code, undefined);
    assert.equal(state.code, undefined);
    const step = await provider.challenge(state, { kind: 'approve' });
    assert.equal(step.status, 'completed');
    if (step.status === 'completed') assertStatus(step.result, 'Y', 'visa', 'oob');
  });

  it('a typed code is not an answer to an out-of-band challenge', async () => {
    const provider = simulator();
    const step = await provider.challenge(await challengeFor(provider, OOB), { kind: 'code', code: '123456' });
    assert.equal(step.status === 'pending' && step.problem, 'unsupported-action');
  });

  it('the failed out-of-band card: approved, and still N', async () => {
    const provider = simulator();
    const step = await provider.challenge(await challengeFor(provider, '6011361011110004'), { kind: 'approve' });
    assert.equal(step.status, 'completed');
    if (step.status === 'completed') assertStatus(step.result, 'N', 'discover', 'failed oob');
  });

  it('cancelled', async () => {
    const provider = simulator();
    const step = await provider.challenge(await challengeFor(provider, OOB), { kind: 'cancel' });
    assert.equal(step.status === 'completed' && step.result.authentication_status, 'failed');
  });
});
