/**
 * Building 3DS Authentication results the way an ACS fills an ARes or RReq: status word and
 * letter together, a reason only where EMV calls for one, and eci + authentication value only
 * for Y and A.
 */
import { randomBytes } from 'node:crypto';
import { eciFor } from './directory.ts';
import type { AuthenticationResult, ChallengeState } from './provider.ts';
import {
  CHALLENGE_CANCEL_CODES, type ChallengeCancelReason, type StatusCode, STATUS_REASON_CODES, STATUS_WORDS, type StatusReason,
} from './vocabulary.ts';

/**
 * The CAVV/AAV: 20 bytes, 28 base64 characters, as real ones are. A real one is a MAC the issuer
 * can verify at authorization; no processor checks the simulator's, so random bytes serve, and
 * they never repeat between transactions.
 */
export function authenticationValue(): string {
  return randomBytes(20).toString('base64');
}

/** The status fields of a result: word, letter, liability shift, eci and value for Y/A, the reason. */
export function statusFields(
  status: StatusCode,
  brand: string,
  reason?: StatusReason,
): Pick<AuthenticationResult, 'authentication_status' | 'authentication_status_code' | 'liability_shifted' | 'eci' | 'authentication_value' | 'authentication_status_reason' | 'authentication_status_reason_code'> {
  const authenticated = status === 'Y' || status === 'A';
  return {
    authentication_status: STATUS_WORDS[status],
    authentication_status_code: status,
    liability_shifted: authenticated,
    ...(authenticated ? { eci: eciFor(brand, status), authentication_value: authenticationValue() } : {}),
    ...(reason ? { authentication_status_reason: reason, authentication_status_reason_code: STATUS_REASON_CODES[reason] } : {}),
  };
}

/**
 * The final result of a challenge (what the RReq carries): the ARes with its status replaced and
 * the challenge fields kept, as the challenge-result endpoint returns them.
 */
export function settle(
  challenge: ChallengeState,
  status: 'Y' | 'A' | 'N' | 'U' | 'R',
  reason: StatusReason | undefined,
  cancel?: ChallengeCancelReason,
): { status: 'completed'; challenge: ChallengeState; result: AuthenticationResult } {
  const { ares } = challenge;
  const result: AuthenticationResult = {
    threeds_version: ares.threeds_version,
    acs_transaction_id: ares.acs_transaction_id,
    ds_transaction_id: ares.ds_transaction_id,
    acs_reference_number: ares.acs_reference_number,
    ds_reference_number: ares.ds_reference_number,
    directory_status_code: ares.directory_status_code,
    ...statusFields(status, challenge.brand, reason),
    challenge_preference: ares.challenge_preference,
    challenge_preference_code: ares.challenge_preference_code,
    ...(ares.acs_challenge_url ? { acs_challenge_url: ares.acs_challenge_url } : {}),
    acs_challenge_mandated: ares.acs_challenge_mandated,
    authentication_challenge_type: ares.authentication_challenge_type,
    challenge_attempts: String(challenge.attempts),
    ...(cancel ? { challenge_cancel_reason: cancel, challenge_cancel_reason_code: CHALLENGE_CANCEL_CODES[cancel] } : {}),
    message_extensions: [],
  };
  return { status: 'completed', challenge: { ...challenge, result }, result };
}
