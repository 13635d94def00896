/**
 * The 3DS provider interface: what Coffer's 3DS feature asks of a 3DS Server (and, through it, of
 * the Directory Server and the issuer's ACS). The built-in implementation is the EMV 3DS
 * simulator (simulator.ts); a certified 3DS Server can be plugged in behind the same interface.
 *
 * Stateless by design: the feature keeps every session in PostgreSQL and hands the provider what
 * it needs on each call — the card as arguments (the provider never reads a store), the stored
 * session, and for a challenge the `ChallengeState` the provider returned earlier. Every value
 * here is plain JSON, so the feature can store it as it is (jsonb) and any API process can serve
 * the next step.
 *
 *   POST /3ds/sessions                 → prepare()          version lookup (PReq/PRes)
 *   POST /3ds/sessions/{id}/authenticate → authenticate()   AReq/ARes
 *   ACS challenge page (CReq form)     → challengePrompt(), challenge()   CReq/CRes, RReq
 *   decoupled completion job           → decoupledOutcome()   RReq of a decoupled challenge
 *
 * Expected failures of the 3DS service (a Directory Server or 3DS Server error) are returned as a
 * `ThreeDSServiceError` value, which the feature answers with HTTP 424; anything thrown is a bug.
 */
import type {
  AuthenticationStatus, ChallengeCancelReason, ChallengePreference, ChallengeType, ErrorSource, FinalStatusCode, SessionType,
  StatusCode, StatusReason,
} from './vocabulary.ts';

/** The card, as the vault holds it; the feature detokenizes it for each call that needs it. */
export interface ThreeDSCard {
  pan: string;
  /** The token's brand (src/vault/card-brands.ts); the provider may report another (test aliases are visa). */
  brand?: string;
  expiration_month?: number;
  expiration_year?: number;
}

export interface PrepareContext {
  /** The 3DS session id: it is also the EMV threeDSServerTransID the web SDKs send. */
  session_id: string;
  session_type: SessionType;
}

/** The spec's `version` object of a 3DS session. */
export interface VersionInfo {
  recommended_version: string;
  available_version: string[];
  earliest_acs_supported_version: string;
  earliest_ds_supported_version: string;
  latest_acs_supported_version: string;
  latest_ds_supported_version: string;
  /** EMV acsInfoInd: 01 authentication, 02 attempts, 03 decoupled, 04 whitelisting. */
  acs_information: string[];
}

/** Result of the version lookup, for the Create 3DS Session response and the stored session. */
export interface PreparedSession {
  card_brand: string;
  directory_server_id: string;
  recommended_version: string;
  version: VersionInfo;
  /** The ACS's 3DS Method URL; absent when the card range has none (method_completion_indicator U). */
  method_url?: string;
}

/** What the feature has stored about a session, handed back to authenticate(). */
export interface StoredSession {
  id: string;
  type: SessionType;
  device?: 'browser' | 'mobile';
  card_brand: string;
  directory_server_id: string;
  recommended_version: string;
  /** Y, N or U, sent in the AReq as threeDSCompInd. */
  method_completion_indicator?: 'Y' | 'N' | 'U';
}

/** The validated Authenticate body (SPEC.md's table), as far as a 3DS Server reads it. */
export interface AuthenticateRequest {
  authentication_category: 'payment' | 'non-payment';
  authentication_type: string;
  challenge_preference?: ChallengePreference;
  /** Undefined means the spec's default: true for merchant sessions, false for customer ones. */
  request_decoupled_challenge?: boolean;
  /** Minutes (EMV threeDSRequestorDecMaxTime). */
  decoupled_challenge_max_time?: number;
  purchase_info?: Record<string, unknown>;
  merchant_info?: Record<string, unknown>;
  requestor_info: { id: string; name: string; url: string };
  cardholder_info: { name: string; email: string; [field: string]: unknown };
  broadcast_info?: Record<string, unknown>;
  message_extensions?: unknown[];
}

/**
 * The 3DS Authentication result: the spec's fields plus the reference API's extras. For C and D
 * it is the ARes (challenge fields, no eci or authentication_value); after the challenge it is the
 * final result, with the challenge fields kept.
 */
export interface AuthenticationResult {
  threeds_version: string;
  acs_transaction_id: string;
  ds_transaction_id: string;
  acs_reference_number: string;
  ds_reference_number: string;
  authentication_status: AuthenticationStatus;
  authentication_status_code: StatusCode;
  /** The letter of the DS's ARes: stays C (or D) after the challenge settles. */
  directory_status_code: StatusCode;
  authentication_status_reason?: StatusReason;
  authentication_status_reason_code?: string;
  /** Y and A only. */
  eci?: string;
  /** CAVV/AAV, 28 base64 characters; Y and A only. */
  authentication_value?: string;
  liability_shifted: boolean;
  challenge_preference: ChallengePreference;
  challenge_preference_code: string;
  acs_challenge_url?: string;
  acs_challenge_mandated?: 'Y' | 'N';
  authentication_challenge_type?: ChallengeType;
  /** Codes submitted (or approvals given) so far, as a string like the spec's other fields. */
  challenge_attempts?: string;
  challenge_cancel_reason?: ChallengeCancelReason;
  challenge_cancel_reason_code?: string;
  message_extensions: unknown[];
}

/**
 * The ACS's side of a pending challenge. The feature stores it beside the session and never shows
 * it: `code` is the expected one-time code and `outcome` the issuer's verdict.
 */
export interface ChallengeState {
  session_id: string;
  /** The ARes that started the challenge (status C or D); the final result is built from it. */
  ares: AuthenticationResult;
  type: 'static' | 'out-of-band' | 'decoupled';
  mandated: boolean;
  /** The brand ECI is chosen by. */
  brand: string;
  attempts: number;
  max_attempts: number;
  /** static: the one-time code the cardholder must type (test mode shows it on the page). */
  code?: string;
  /** The status the issuer gives once the cardholder completes the challenge. */
  outcome: FinalStatusCode;
  outcome_reason?: StatusReason;
  /** decoupled: when the issuer completes (run the completion job then) and when it gives up. */
  complete_at?: string;
  expires_at?: string;
  /** Set once the challenge has settled: further actions return it again. */
  result?: AuthenticationResult;
}

export interface AuthenticationOutcome {
  result: AuthenticationResult;
  /** Present for C and D: store it for challenge() / decoupledOutcome(). */
  challenge?: ChallengeState;
}

/** What the cardholder submitted on the ACS challenge page. */
export type ChallengeAction =
  | { kind: 'code'; code: string }
  /** out-of-band: "I approved it in my banking app". */
  | { kind: 'approve' }
  /** Default reason: cardholder-cancelled, which a mandated challenge refuses. */
  | { kind: 'cancel'; reason?: ChallengeCancelReason };

/** Why an action left the challenge pending. */
export type ChallengeProblem = 'wrong-code' | 'cancel-refused' | 'unsupported-action' | 'not-due';

export type ChallengeStep =
  | { status: 'pending'; challenge: ChallengeState; problem?: ChallengeProblem }
  | { status: 'completed'; challenge: ChallengeState; result: AuthenticationResult };

/** What the ACS page shows. */
export interface ChallengePrompt {
  type: ChallengeState['type'];
  mandated: boolean;
  can_cancel: boolean;
  attempts_remaining: number;
  /** The one-time code, shown to the cardholder because the simulator is a test ACS. */
  test_code?: string;
  completed: boolean;
}

/** A failure of the 3DS service itself: the feature answers HTTP 424 with these fields and the session id. */
export interface ThreeDSServiceError {
  kind: 'service-error';
  /** The upstream status; 502 and 504 mean "retry with a new session". */
  service_status: number;
  error_source: ErrorSource;
  message: string;
  detail: string;
}

export function isThreeDSServiceError(value: unknown): value is ThreeDSServiceError {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'service-error';
}

export interface ThreeDSProvider {
  readonly name: string;
  /**
   * True when the provider runs in this process and sends the card nowhere (the simulator): the
   * feature then audits the card's use in the same write as what the call produced. Otherwise
   * the use is audited before each call, since the card leaves Coffer with it.
   */
  readonly local?: boolean;
  /** Version lookup at session creation: card range → versions, DS id, Method URL. */
  prepare(card: ThreeDSCard, ctx: PrepareContext): Promise<PreparedSession | ThreeDSServiceError>;
  /** AReq/ARes: frictionless Y/A/N/U/R/I, or C/D with the challenge state to store. */
  authenticate(session: StoredSession, card: ThreeDSCard, request: AuthenticateRequest): Promise<AuthenticationOutcome | ThreeDSServiceError>;
  /** What the ACS page shows for a stored challenge. */
  challengePrompt(challenge: ChallengeState): ChallengePrompt;
  /** A cardholder's submission on the ACS page → the next state, or the final result (the RReq). */
  challenge(challenge: ChallengeState, action: ChallengeAction): Promise<ChallengeStep>;
  /** The decoupled completion: pending (`not-due`) before `complete_at`, then the final result. */
  decoupledOutcome(challenge: ChallengeState): Promise<ChallengeStep>;
}
