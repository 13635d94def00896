/**
 * The words Coffer's 3DS API speaks and the EMV codes behind them. The API gives each value as a
 * kebab-case word plus its EMV code (`authentication_status` + `authentication_status_code`,
 * `..._reason` + `..._reason_code`, …), as the reference API does, so a client can branch on
 * either. Kept apart from the simulator: a real 3DS Server provider maps onto the same words.
 */

/** EMV transStatus letters (ARes/RReq). */
export type StatusCode = 'Y' | 'A' | 'N' | 'U' | 'C' | 'D' | 'R' | 'I';
/** The letters a finished authentication can end in (a challenge never ends in C or D). */
export type FinalStatusCode = 'Y' | 'A' | 'N' | 'U' | 'R';

export type AuthenticationStatus =
  | 'successful' | 'attempted' | 'failed' | 'unavailable' | 'challenge' | 'decoupled_challenge' | 'rejected' | 'informational';

export const STATUS_WORDS: Readonly<Record<StatusCode, AuthenticationStatus>> = {
  Y: 'successful',
  A: 'attempted',
  N: 'failed',
  U: 'unavailable',
  C: 'challenge',
  D: 'decoupled_challenge',
  R: 'rejected',
  I: 'informational',
};

/**
 * transStatusReason: the subset of EMV's codes the simulator gives, enough for every path it
 * has. A real provider may pass on others; they keep EMV's numbering (01–99).
 */
export type StatusReason =
  | 'card-authentication-failed'
  | 'suspected-fraud'
  | 'transaction-not-permitted'
  | 'transaction-timed-out-at-acs'
  | 'exceeds-acs-maximum-challenges'
  | 'acs-technical-issue'
  | 'decoupled-authentication-not-requested'
  | 'decoupled-authentication-timeout'
  | 'authentication-attempted-not-performed';

export const STATUS_REASON_CODES: Readonly<Record<StatusReason, string>> = {
  'card-authentication-failed': '01',
  'suspected-fraud': '11',
  'transaction-not-permitted': '12',
  'transaction-timed-out-at-acs': '14',
  'exceeds-acs-maximum-challenges': '19',
  'acs-technical-issue': '22',
  // EMV 23: "Decoupled Authentication required by ACS but not requested by 3DS Requestor".
  'decoupled-authentication-not-requested': '23',
  // EMV 24: "3DS Requestor Decoupled Max Expiry Time exceeded".
  'decoupled-authentication-timeout': '24',
  // EMV 26: the ACS offered a challenge and the cardholder did not complete it.
  'authentication-attempted-not-performed': '26',
};

/** EMV challengeCancel (RReq): why a challenge ended without the cardholder finishing it. */
export type ChallengeCancelReason =
  | 'cardholder-cancelled'
  | 'requestor-cancelled'
  | 'decoupled-authentication-timeout'
  | 'acs-timeout'
  | 'first-creq-not-received'
  | 'transaction-error'
  | 'unknown'
  | 'sdk-timeout';

export const CHALLENGE_CANCEL_CODES: Readonly<Record<ChallengeCancelReason, string>> = {
  'cardholder-cancelled': '01',
  'requestor-cancelled': '02',
  'decoupled-authentication-timeout': '03',
  'acs-timeout': '04',
  'first-creq-not-received': '05',
  'transaction-error': '06',
  'unknown': '07',
  'sdk-timeout': '08',
};


/** The spec's challenge preferences and their EMV threeDSRequestorChallengeInd codes. */
export const CHALLENGE_PREFERENCE_CODES = {
  'no-preference': '01',
  'no-challenge': '02',
  'challenge-requested': '03',
  'challenge-mandated': '04',
  'no-challenge-risk-analysis-performed': '05',
  'no-challenge-data-sharing-only': '06',
  'no-challenge-strong-consumer-auth': '07',
  'no-challenge-whitelist-exemption': '08',
  'challenge-requested-whitelist-prompt': '09',
  'cartes-bancaires': '90',
} as const;
export type ChallengePreference = keyof typeof CHALLENGE_PREFERENCE_CODES;

/** The preferences under which an ordinary card (not a test card) is challenged. */
export const CHALLENGE_ASKING_PREFERENCES: ReadonlySet<ChallengePreference> = new Set([
  'challenge-requested', 'challenge-mandated', 'challenge-requested-whitelist-prompt',
]);

export type SessionType = 'customer' | 'merchant';

/** The spec's authentication types and the session types each is allowed for. */
export const AUTHENTICATION_TYPES = {
  'payment-transaction': ['customer'],
  'cardholder-emv-verification': ['customer'],
  'split-or-delayed-shipment': ['merchant'],
  'top-up': ['merchant'],
  'mail-order': ['merchant'],
  'telephone-order': ['merchant'],
  'whitelist-status-check': ['merchant'],
  'other-payment': ['merchant'],
  'billing-agreement': ['merchant'],
  'recurring-transaction': ['customer', 'merchant'],
  'installment-transaction': ['customer', 'merchant'],
  'add-card': ['customer', 'merchant'],
  'maintain-card': ['customer', 'merchant'],
  'account-verification': ['customer', 'merchant'],
} as const satisfies Record<string, readonly SessionType[]>;

/**
 * The reference API's `authentication_challenge_type`. The simulator uses `static` (a one-time
 * code typed into the ACS page), `out-of-band` (approved in the banking app) and `decoupled`.
 */
export type ChallengeType = 'static' | 'dynamic' | 'out-of-band' | 'decoupled';

/** Where a 3DS service error came from, in the words of the reference API's 424 body. */
export type ErrorSource = 'Directory Server' | '3DS Server' | 'ACS';
