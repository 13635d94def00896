import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_DECOUPLED_DELAY_MS } from '../../src/threeds/index.ts';
import { assertStatus, challengeOf, outcomeOf, run, simulator } from './helpers.ts';

/** Decoupled challenges (Coffer's card 4000000000000440, and merchant sessions) and their completion job. */

const DECOUPLED = '4000000000000440';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');

function clock(start = T0): { now: () => number; set: (ms: number) => void } {
  let at = start;
  return { now: () => at, set: (ms) => { at = ms; } };
}

describe('the decoupled test card', () => {
  it('prepare: an ACS that decouples (acsInfoInd 03)', async () => {
    const { prepared } = await run(simulator(), DECOUPLED, { request: { request_decoupled_challenge: true, decoupled_challenge_max_time: 10 } });
    assert.deepEqual(prepared.version.acs_information, ['01', '02', '03']);
    assert.equal(prepared.card_brand, 'visa');
  });

  it('ARes D with no challenge page; the issuer completes after the configured delay → Y', async () => {
    const time = clock();
    const provider = simulator({ now: time.now, decoupledDelayMs: 2_000 });
    const { outcome } = await run(provider, DECOUPLED, { request: { request_decoupled_challenge: true, decoupled_challenge_max_time: 10 } });
    const { result, challenge } = outcomeOf(outcome, DECOUPLED);
    assertStatus(result, 'D', 'visa', 'ARes');
    assert.equal(result.authentication_status, 'decoupled_challenge');
    assert.equal(result.directory_status_code, 'D');
    assert.equal(result.authentication_challenge_type, 'decoupled');
    assert.equal(result.acs_challenge_url, undefined);
    assert.equal(result.acs_challenge_mandated, 'N');
    const state = challengeOf({ result, challenge }, DECOUPLED);
    // What the completion job needs: when to run, and the deadline.
    assert.equal(state.complete_at, new Date(T0 + 2_000).toISOString());
    assert.equal(state.expires_at, new Date(T0 + 10 * 60_000).toISOString());
    assert.equal(state.code, undefined);

    time.set(T0 + 1_999);
    const early = await provider.decoupledOutcome(state);
    assert.equal(early.status === 'pending' && early.problem, 'not-due');

    time.set(T0 + 2_000);
    const done = await provider.decoupledOutcome(state);
    assert.equal(done.status, 'completed');
    if (done.status !== 'completed') return;
    assertStatus(done.result, 'Y', 'visa', 'decoupled final');
    assert.equal(done.result.directory_status_code, 'D');
    assert.equal(done.result.acs_transaction_id, result.acs_transaction_id);
    // A job retried after success gets the same result.
    const again = await provider.decoupledOutcome(done.challenge);
    assert.deepEqual(again.status === 'completed' && again.result, done.result);
  });

  it('the delay defaults to 5 s and never passes decoupled_challenge_max_time', async () => {
    const time = clock();
    const byDefault = challengeOf(outcomeOf((await run(simulator({ now: time.now }), DECOUPLED, { request: { request_decoupled_challenge: true, decoupled_challenge_max_time: 5 } })).outcome, DECOUPLED), DECOUPLED);
    assert.equal(Date.parse(byDefault.complete_at!) - T0, DEFAULT_DECOUPLED_DELAY_MS);
    const slow = simulator({ now: time.now, decoupledDelayMs: 2 * 3_600_000 });
    const capped = challengeOf(outcomeOf((await run(slow, DECOUPLED, { request: { request_decoupled_challenge: true, decoupled_challenge_max_time: 1 } })).outcome, DECOUPLED), DECOUPLED);
    assert.equal(capped.complete_at, new Date(T0 + 60_000).toISOString());
    assert.equal(capped.expires_at, capped.complete_at);
    time.set(T0 + 60_000);
    const done = await slow.decoupledOutcome(capped);
    assert.equal(done.status === 'completed' && done.result.authentication_status, 'successful');
  });

  it('a completion job that runs after the deadline finds the challenge timed out', async () => {
    const time = clock();
    const provider = simulator({ now: time.now });
    const state = challengeOf(outcomeOf((await run(provider, DECOUPLED, { request: { request_decoupled_challenge: true, decoupled_challenge_max_time: 1 } })).outcome, DECOUPLED), DECOUPLED);
    time.set(T0 + 60_001);
    const late = await provider.decoupledOutcome(state);
    assert.equal(late.status, 'completed');
    if (late.status !== 'completed') return;
    assertStatus(late.result, 'N', 'visa', 'timed out');
    assert.equal(late.result.authentication_status_reason, 'decoupled-authentication-timeout');
    assert.equal(late.result.authentication_status_reason_code, '24');
    assert.equal(late.result.challenge_cancel_reason, 'decoupled-authentication-timeout');
    assert.equal(late.result.challenge_cancel_reason_code, '03');
  });

  it('the cardholder has no page to act on: codes and approvals are refused, a requestor cancel ends it', async () => {
    const provider = simulator();
    const state = challengeOf(outcomeOf((await run(provider, DECOUPLED, { request: { request_decoupled_challenge: true, decoupled_challenge_max_time: 5 } })).outcome, DECOUPLED), DECOUPLED);
    assert.equal((await provider.challenge(state, { kind: 'approve' })).status, 'pending');
    assert.equal((await provider.challenge(state, { kind: 'code', code: '000000' })).status, 'pending');
    const cancelled = await provider.challenge(state, { kind: 'cancel', reason: 'requestor-cancelled' });
    assert.equal(cancelled.status === 'completed' && cancelled.result.challenge_cancel_reason_code, '02');
  });

  it('without request_decoupled_challenge (a customer session): unavailable, decoupled-authentication-not-requested', async () => {
    const { outcome } = await run(simulator(), DECOUPLED);
    const { result, challenge } = outcomeOf(outcome, DECOUPLED);
    assertStatus(result, 'U', 'visa', 'not requested');
    assert.equal(result.authentication_status_reason, 'decoupled-authentication-not-requested');
    assert.equal(result.authentication_status_reason_code, '23');
    assert.equal(challenge, undefined);
  });

  it('a static challenge is no decoupled one: decoupledOutcome leaves it alone', async () => {
    const provider = simulator();
    const state = challengeOf(outcomeOf((await run(provider, '4000020000000000')).outcome, 'static'), 'static');
    const step = await provider.decoupledOutcome(state);
    assert.equal(step.status === 'pending' && step.problem, 'unsupported-action');
  });
});

describe('merchant-initiated (3RI) sessions', () => {
  it('request_decoupled_challenge defaults to true there', async () => {
    const { outcome } = await run(simulator(), DECOUPLED, { type: 'merchant', request: { authentication_type: 'recurring-transaction', decoupled_challenge_max_time: 10 } });
    assert.equal(outcomeOf(outcome, DECOUPLED).result.authentication_status, 'decoupled_challenge');
  });

  it('a challenge card decouples (no cardholder at a browser) and keeps its row\'s verdict', async () => {
    const time = clock();
    const provider = simulator({ now: time.now, decoupledDelayMs: 0 });
    for (const [pan, letter] of [['4000020000000000', 'Y'], ['4055011111111111', 'N'], ['5200000000001104', 'Y']] as const) {
      const { outcome, session } = await run(provider, pan, { type: 'merchant', request: { authentication_type: 'recurring-transaction', decoupled_challenge_max_time: 10 } });
      const { result, challenge } = outcomeOf(outcome, pan);
      assertStatus(result, 'D', session.card_brand, pan);
      assert.equal(result.acs_challenge_url, undefined, pan);
      const done = await provider.decoupledOutcome(challengeOf({ result, challenge }, pan));
      assert.equal(done.status, 'completed', pan);
      if (done.status === 'completed') assertStatus(done.result, letter, session.card_brand, `${pan} final`);
    }
  });

  it('one that opts out of decoupling: unavailable, decoupled-authentication-not-requested', async () => {
    const { outcome } = await run(simulator(), '4000020000000000', { type: 'merchant', request: { request_decoupled_challenge: false } });
    const { result } = outcomeOf(outcome, 'merchant');
    assert.equal(result.authentication_status, 'unavailable');
    assert.equal(result.authentication_status_reason_code, '23');
  });

  it('frictionless cards answer as in a customer session', async () => {
    const { outcome } = await run(simulator(), '5204247750001471', { type: 'merchant', request: { decoupled_challenge_max_time: 10 } });
    assertStatus(outcomeOf(outcome, 'merchant').result, 'Y', 'mastercard', 'merchant frictionless');
  });
});
