/**
 * The built-in EMV 3DS simulator: one object playing 3DS Server, Directory Server and issuer ACS
 * for the test cards of test-cards.ts. It is Coffer's default ThreeDSProvider, so every path of
 * the 3DS API (frictionless, challenge, decoupled, service errors) can be exercised end to end
 * with no network. Its ACS pages are Coffer's own (`acsBaseUrl`), and it is a test ACS: the
 * one-time code of a challenge is handed to the page to show.
 */
import { randomUUID } from 'node:crypto';
import { cardBrand } from '../vault/card-brands.ts';
import { challengePrompt, challengeStep, decoupledStep, MAX_CODE_ATTEMPTS, oneTimeCode } from './acs.ts';
import { directoryServerId, dsReferenceNumber, SIMULATOR_ACS_REFERENCE_NUMBER, THREEDS_VERSION, versionInfo } from './directory.ts';
import type {
  AuthenticateRequest, AuthenticationOutcome, AuthenticationResult, ChallengeState, PreparedSession, StoredSession, ThreeDSCard,
  ThreeDSProvider, ThreeDSServiceError,
} from './provider.ts';
import { statusFields } from './results.ts';
import { DEFAULT_SCENARIO, isAlias, type Scenario, testCardFor } from './test-cards.ts';
import { CHALLENGE_ASKING_PREFERENCES, CHALLENGE_PREFERENCE_CODES } from './vocabulary.ts';

export interface ThreeDSSimulatorOptions {
  /**
   * Absolute URL under which Coffer serves the simulated ACS's pages, e.g.
   * `https://coffer.example/3ds/acs`: method_url is `<base>/method`, acs_challenge_url `<base>/challenge`.
   */
  acsBaseUrl: string;
  /** How long the simulated issuer takes to complete a decoupled challenge (default 5 s), capped by decoupled_challenge_max_time. */
  decoupledDelayMs?: number;
  /** The clock (ms since the epoch), replaceable in tests. */
  now?: () => number;
}

export const DEFAULT_DECOUPLED_DELAY_MS = 5_000;
/** Used only when a decoupled challenge was requested without decoupled_challenge_max_time, which the spec requires. */
export const DEFAULT_DECOUPLED_MAX_MINUTES = 30;

/** The brand the simulated DS reports: the reference API reports its 42000000000000NN aliases as Visa. */
export function simulatedBrand(card: ThreeDSCard): string {
  if (isAlias(card.pan)) return 'visa';
  return card.brand && card.brand !== 'unknown' ? card.brand : cardBrand(card.pan);
}

/** The card's scenario; an ordinary card is challenged (statically) only when the requestor asks for it. */
function scenarioFor(pan: string, request?: AuthenticateRequest): Scenario {
  const testCard = testCardFor(pan);
  if (testCard) return testCard.scenario;
  const preference = request?.challenge_preference;
  if (preference && CHALLENGE_ASKING_PREFERENCES.has(preference)) {
    return { flow: 'challenge', type: 'static', mandated: preference === 'challenge-mandated', outcome: 'Y', method: true };
  }
  return DEFAULT_SCENARIO;
}

/** The 424 errors of the two error rows: the DS answered with an EMV Erro, or the 3DS Server failed. */
function serviceError(source: 'Directory Server' | '3DS Server' | 'ACS'): ThreeDSServiceError {
  return source === 'Directory Server'
    ? {
        kind: 'service-error', service_status: 502, error_source: source, message: 'Directory Server error',
        detail: 'The Directory Server answered the AReq with an Erro message (errorCode 403: transient system failure).',
      }
    : {
        kind: 'service-error', service_status: 500, error_source: source, message: 'Internal 3DS Server error',
        detail: 'The 3DS Server failed while processing the authentication request.',
      };
}

export function createThreeDSSimulator(options: ThreeDSSimulatorOptions): ThreeDSProvider {
  const base = options.acsBaseUrl.replace(/\/+$/, '');
  const now = options.now ?? Date.now;
  const delayMs = Math.max(0, options.decoupledDelayMs ?? DEFAULT_DECOUPLED_DELAY_MS);

  async function prepare(card: ThreeDSCard): Promise<PreparedSession> {
    const scenario = scenarioFor(card.pan);
    const brand = simulatedBrand(card);
    const version = versionInfo(scenario.flow === 'decoupled');
    return {
      card_brand: brand,
      directory_server_id: directoryServerId(brand),
      recommended_version: version.recommended_version,
      version,
      ...(scenario.method ? { method_url: `${base}/method` } : {}),
    };
  }

  async function authenticate(session: StoredSession, card: ThreeDSCard, request: AuthenticateRequest): Promise<AuthenticationOutcome | ThreeDSServiceError> {
    let scenario = scenarioFor(card.pan, request);
    if (scenario.flow === 'error') return serviceError(scenario.source);
    const decoupledRequested = request.request_decoupled_challenge ?? session.type === 'merchant';
    // A merchant-initiated (3RI) session has no cardholder at a browser: the issuer can only
    // challenge out of band, so a challenge card decouples, keeping the verdict of its row.
    if (scenario.flow === 'challenge' && session.type === 'merchant') {
      scenario = { flow: 'decoupled', outcome: scenario.outcome, reason: scenario.reason, method: scenario.method };
    }

    const brand = session.card_brand;
    const preference = request.challenge_preference ?? 'no-preference';
    const common = {
      threeds_version: session.recommended_version || THREEDS_VERSION,
      acs_transaction_id: randomUUID(),
      ds_transaction_id: randomUUID(),
      acs_reference_number: SIMULATOR_ACS_REFERENCE_NUMBER,
      ds_reference_number: dsReferenceNumber(session.directory_server_id),
      challenge_preference: preference,
      challenge_preference_code: CHALLENGE_PREFERENCE_CODES[preference],
      message_extensions: [],
    };

    if (scenario.flow === 'decoupled' && !decoupledRequested) {
      return { result: { ...common, directory_status_code: 'U', ...statusFields('U', brand, 'decoupled-authentication-not-requested') } };
    }
    if (scenario.flow === 'frictionless') {
      return { result: { ...common, directory_status_code: scenario.status, ...statusFields(scenario.status, brand, scenario.reason) } };
    }

    const letter = scenario.flow === 'decoupled' ? 'D' : 'C';
    const ares: AuthenticationResult = {
      ...common,
      directory_status_code: letter,
      ...statusFields(letter, brand),
      ...(scenario.flow === 'challenge' ? { acs_challenge_url: `${base}/challenge` } : {}),
      acs_challenge_mandated: scenario.flow === 'challenge' && scenario.mandated ? 'Y' : 'N',
      authentication_challenge_type: scenario.flow === 'challenge' ? scenario.type : 'decoupled',
      challenge_attempts: '0',
    };
    const challenge: ChallengeState = {
      session_id: session.id,
      ares,
      type: scenario.flow === 'challenge' ? scenario.type : 'decoupled',
      mandated: scenario.flow === 'challenge' && scenario.mandated,
      brand,
      attempts: 0,
      max_attempts: MAX_CODE_ATTEMPTS,
      outcome: scenario.outcome,
      ...(scenario.reason ? { outcome_reason: scenario.reason } : {}),
    };
    if (challenge.type === 'static') challenge.code = oneTimeCode();
    if (scenario.flow === 'decoupled') {
      // EMV threeDSRequestorDecMaxTime runs from 1 minute to 10080 (a week).
      const minutes = Math.min(10_080, Math.max(1, request.decoupled_challenge_max_time ?? DEFAULT_DECOUPLED_MAX_MINUTES));
      const maxMs = minutes * 60_000;
      const start = now();
      challenge.complete_at = new Date(start + Math.min(delayMs, maxMs)).toISOString();
      challenge.expires_at = new Date(start + maxMs).toISOString();
    }
    return { result: ares, challenge };
  }

  return {
    name: 'simulator',
    local: true,
    prepare,
    authenticate,
    challengePrompt,
    challenge: async (challenge, action) => challengeStep(challenge, action),
    decoupledOutcome: async (challenge) => decoupledStep(challenge, now()),
  };
}
