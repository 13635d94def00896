/**
 * The simulated issuer ACS after an ARes of C or D: it judges what the cardholder submits on the
 * challenge page and settles decoupled challenges. Pure functions of the stored ChallengeState
 * and the clock, so any process can take the next step.
 */
import { randomInt, timingSafeEqual } from 'node:crypto';
import type { ChallengeAction, ChallengePrompt, ChallengeState, ChallengeStep } from './provider.ts';
import { settle } from './results.ts';
import type { ChallengeCancelReason, FinalStatusCode, StatusReason } from './vocabulary.ts';

/** EMV leaves the number of tries to the ACS; three wrong codes is what issuers commonly allow. */
export const MAX_CODE_ATTEMPTS = 3;

/** A 6-digit one-time code, stored in the challenge state (the simulated "SMS"). */
export function oneTimeCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}

export function challengePrompt(challenge: ChallengeState): ChallengePrompt {
  return {
    type: challenge.type,
    mandated: challenge.mandated,
    can_cancel: !challenge.mandated,
    attempts_remaining: Math.max(0, challenge.max_attempts - challenge.attempts),
    ...(challenge.code ? { test_code: challenge.code } : {}),
    completed: challenge.result !== undefined,
  };
}

/**
 * How each cancel reason settles (the RReq's transStatus and transStatusReason): a challenge the
 * cardholder or requestor walked away from, or one that timed out, failed; a technical fault at
 * the ACS leaves authentication unavailable.
 */
const CANCELLED: Readonly<Record<ChallengeCancelReason, [FinalStatusCode, StatusReason]>> = {
  'cardholder-cancelled': ['N', 'authentication-attempted-not-performed'],
  'requestor-cancelled': ['N', 'authentication-attempted-not-performed'],
  'decoupled-authentication-timeout': ['N', 'decoupled-authentication-timeout'],
  'acs-timeout': ['N', 'transaction-timed-out-at-acs'],
  'first-creq-not-received': ['N', 'transaction-timed-out-at-acs'],
  'sdk-timeout': ['N', 'transaction-timed-out-at-acs'],
  'transaction-error': ['U', 'acs-technical-issue'],
  'unknown': ['U', 'acs-technical-issue'],
};

function sameCode(given: string, expected: string): boolean {
  const a = Buffer.from(given.trim());
  const b = Buffer.from(expected);
  // Compared in constant time even though the code is shown in test mode: a real ACS would have to.
  return a.length === b.length && timingSafeEqual(a, b);
}

/** One more attempt, counted in the state and in its ARes, so a pending session's `authentication` (the ARes) shows it too. */
function counted(challenge: ChallengeState): ChallengeState {
  const attempts = challenge.attempts + 1;
  return { ...challenge, attempts, ares: { ...challenge.ares, challenge_attempts: String(attempts) } };
}

export function challengeStep(challenge: ChallengeState, action: ChallengeAction): ChallengeStep {
  if (challenge.result) return { status: 'completed', challenge, result: challenge.result };
  if (action.kind === 'cancel') {
    const reason = action.reason ?? 'cardholder-cancelled';
    // A mandated challenge (acs_challenge_mandated=Y) offers the cardholder no way out; timeouts still end it.
    if (challenge.mandated && reason === 'cardholder-cancelled') return { status: 'pending', challenge, problem: 'cancel-refused' };
    const [status, statusReason] = CANCELLED[reason];
    return settle(challenge, status, statusReason, reason);
  }
  if (action.kind === 'code' && challenge.type === 'static' && challenge.code) {
    const next = counted(challenge);
    if (sameCode(action.code, challenge.code)) return settle(next, challenge.outcome, challenge.outcome_reason);
    if (next.attempts >= next.max_attempts) return settle(next, 'N', 'exceeds-acs-maximum-challenges');
    return { status: 'pending', challenge: next, problem: 'wrong-code' };
  }
  if (action.kind === 'approve' && challenge.type === 'out-of-band') {
    return settle(counted(challenge), challenge.outcome, challenge.outcome_reason);
  }
  // A code for an out-of-band challenge, an approval of a static one, anything for a decoupled one.
  return { status: 'pending', challenge, problem: 'unsupported-action' };
}

/**
 * A decoupled challenge settles when the issuer's out-of-band authentication completes
 * (`complete_at`, never after `expires_at`). A completion job that only runs after `expires_at`
 * finds the requestor's deadline passed: the ACS reports the timeout instead.
 */
export function decoupledStep(challenge: ChallengeState, now: number): ChallengeStep {
  if (challenge.result) return { status: 'completed', challenge, result: challenge.result };
  if (challenge.type !== 'decoupled' || !challenge.complete_at || !challenge.expires_at) {
    return { status: 'pending', challenge, problem: 'unsupported-action' };
  }
  if (now < Date.parse(challenge.complete_at)) return { status: 'pending', challenge, problem: 'not-due' };
  if (now > Date.parse(challenge.expires_at)) {
    return settle(challenge, 'N', 'decoupled-authentication-timeout', 'decoupled-authentication-timeout');
  }
  return settle(counted(challenge), challenge.outcome, challenge.outcome_reason);
}
