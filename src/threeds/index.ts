/** 3DS: the provider interface, the EMV vocabulary, and the built-in EMV 3DS simulator. */
export type {
  AuthenticateRequest, AuthenticationOutcome, AuthenticationResult, ChallengeAction, ChallengeProblem, ChallengePrompt, ChallengeState,
  ChallengeStep, PrepareContext, PreparedSession, StoredSession, ThreeDSCard, ThreeDSProvider, ThreeDSServiceError, VersionInfo,
} from './provider.ts';
export { isThreeDSServiceError } from './provider.ts';
export {
  AUTHENTICATION_TYPES, type AuthenticationStatus, CHALLENGE_ASKING_PREFERENCES, CHALLENGE_CANCEL_CODES, CHALLENGE_PREFERENCE_CODES,
  type ChallengeCancelReason, type ChallengePreference, type ChallengeType, type ErrorSource, type FinalStatusCode, type SessionType,
  STATUS_REASON_CODES, STATUS_WORDS, type StatusCode, type StatusReason,
} from './vocabulary.ts';
export {
  createThreeDSSimulator, DEFAULT_DECOUPLED_DELAY_MS, DEFAULT_DECOUPLED_MAX_MINUTES, simulatedBrand, type ThreeDSSimulatorOptions,
} from './simulator.ts';
export { ALIAS_PREFIX, DEFAULT_SCENARIO, type Scenario, TEST_CARDS, type TestCard, testCardFor } from './test-cards.ts';
export { directoryServerId, SIMULATOR_DS_ID, THREEDS_VERSION } from './directory.ts';
export { MAX_CODE_ATTEMPTS } from './acs.ts';
export {
  type CReq, creqMatches, decodeCReq, decodeMethodData, encodeCReq, encodeCRes, encodeMethodCompletion, type MethodData,
} from './messages.ts';
