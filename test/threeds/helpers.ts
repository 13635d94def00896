import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  type AuthenticateRequest, type AuthenticationOutcome, type AuthenticationResult, type ChallengeState, createThreeDSSimulator,
  isThreeDSServiceError, type PreparedSession, type SessionType, type StoredSession, type ThreeDSProvider, type ThreeDSServiceError,
  type ThreeDSSimulatorOptions,
} from '../../src/threeds/index.ts';

export const ACS_BASE = 'https://coffer.test/3ds/acs';
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function simulator(options: Partial<ThreeDSSimulatorOptions> = {}): ThreeDSProvider {
  return createThreeDSSimulator({ acsBaseUrl: `${ACS_BASE}/`, ...options });
}

/** A payment-category Authenticate body, as the feature would have validated it. */
export function paymentRequest(more: Partial<AuthenticateRequest> = {}): AuthenticateRequest {
  return {
    authentication_category: 'payment',
    authentication_type: 'payment-transaction',
    purchase_info: { amount: '1000', currency: '840', exponent: '2', date: '20260101120000', transaction_type: 'purchase' },
    merchant_info: { mid: '9876543210001', acquirer_bin: '000000999', name: 'Example Store', country_code: '840', category_code: '5999' },
    requestor_info: { id: 'example3DSRequestorId', name: 'Example 3DS Requestor', url: 'https://www.example.com' },
    cardholder_info: { name: 'Jane Doe', email: 'jane@example.com' },
    ...more,
  };
}

/** The feature's steps: prepare as POST /3ds/sessions, then authenticate with what it stored. */
export async function run(
  provider: ThreeDSProvider,
  pan: string,
  options: { type?: SessionType; request?: Partial<AuthenticateRequest> } = {},
): Promise<{ prepared: PreparedSession; session: StoredSession; outcome: AuthenticationOutcome | ThreeDSServiceError }> {
  const id = randomUUID();
  const type = options.type ?? 'customer';
  const prepared = await provider.prepare({ pan }, { session_id: id, session_type: type });
  assert.ok(!isThreeDSServiceError(prepared), `prepare failed for ${pan}`);
  const session: StoredSession = {
    id,
    type,
    device: 'browser',
    card_brand: prepared.card_brand,
    directory_server_id: prepared.directory_server_id,
    recommended_version: prepared.recommended_version,
    method_completion_indicator: prepared.method_url ? 'Y' : 'U',
  };
  const outcome = await provider.authenticate(session, { pan }, paymentRequest(options.request));
  return { prepared, session, outcome };
}

export function outcomeOf(value: AuthenticationOutcome | ThreeDSServiceError, pan: string): AuthenticationOutcome {
  assert.ok(!isThreeDSServiceError(value), `${pan}: unexpected service error ${JSON.stringify(value)}`);
  return value;
}

export function challengeOf(outcome: AuthenticationOutcome, pan: string): ChallengeState {
  assert.ok(outcome.challenge, `${pan}: expected a challenge`);
  return outcome.challenge;
}

const MASTERCARD_ECI = { Y: '02', A: '01' };
const OTHER_ECI = { Y: '05', A: '06' };
const WORDS: Record<string, string> = {
  Y: 'successful', A: 'attempted', N: 'failed', U: 'unavailable', C: 'challenge', D: 'decoupled_challenge', R: 'rejected', I: 'informational',
};

/** Status word and letter agree; eci (by brand) and a 28-character, 20-byte authentication value exactly for Y and A. */
export function assertStatus(result: AuthenticationResult, letter: string, brand: string, label: string): void {
  assert.equal(result.authentication_status_code, letter, label);
  assert.equal(result.authentication_status, WORDS[letter], label);
  if (letter === 'Y' || letter === 'A') {
    const eci = (brand === 'mastercard' ? MASTERCARD_ECI : OTHER_ECI)[letter];
    assert.equal(result.eci, eci, `${label}: eci`);
    assert.match(result.authentication_value ?? '', /^[A-Za-z0-9+/]{27}=$/, `${label}: authentication_value`);
    assert.equal(Buffer.from(result.authentication_value!, 'base64').length, 20, label);
    assert.equal(result.liability_shifted, true, label);
  } else {
    assert.equal(result.eci, undefined, `${label}: no eci`);
    assert.equal(result.authentication_value, undefined, `${label}: no authentication_value`);
    assert.equal(result.liability_shifted, false, label);
  }
  // EMV requires a reason for N, U and R; the simulator gives none for a success.
  if (letter === 'N' || letter === 'U' || letter === 'R') {
    assert.match(result.authentication_status_reason ?? '', /^[a-z]+(-[a-z]+)*$/, `${label}: reason`);
    assert.match(result.authentication_status_reason_code ?? '', /^\d{2}$/, `${label}: reason code`);
  } else {
    assert.equal(result.authentication_status_reason, undefined, `${label}: no reason`);
  }
  assert.match(result.acs_transaction_id, UUID, label);
  assert.match(result.ds_transaction_id, UUID, label);
  assert.notEqual(result.acs_transaction_id, result.ds_transaction_id, label);
  assert.equal(result.threeds_version, '2.2.0', label);
  assert.match(result.acs_reference_number, /^3DS_LOA_ACS_/, label);
  assert.match(result.ds_reference_number, /^3DS_LOA_DIS_/, label);
  assert.deepEqual(result.message_extensions, [], label);
}
