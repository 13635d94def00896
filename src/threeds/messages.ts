/**
 * The EMV 3DS messages that pass through the cardholder's browser, in the base64url JSON form the
 * 3DS web SDKs use (PAYMENTS-FACTS.md §1.3–1.4): the `threeDSMethodData` form field the Method
 * page receives, the `creq` the ACS challenge page receives, and the `cres` it posts back. The
 * pages that carry them are the feature's; reading and writing them is the simulated ACS's.
 */
import type { ChallengeState } from './provider.ts';

const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** CReq and method data are a few hundred bytes; anything far larger is not one. */
const MAX_FIELD = 8192;

function decodeJson(field: string): Record<string, unknown> | undefined {
  if (field.length > MAX_FIELD || !BASE64URL.test(field)) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(field, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** base64url without padding, as the SDKs encode (and as EMV requires for CReq/CRes). */
function encodeJson(value: object): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export interface CReq {
  threeDSServerTransID: string;
  acsTransID: string;
  messageVersion: string;
  /** 01–05; 03 (500×600) when the SDK sends none. */
  challengeWindowSize: string;
}

/** The `creq` form field, or undefined when it is not a CReq (the page answers 400 then). */
export function decodeCReq(creq: string): CReq | undefined {
  const m = decodeJson(creq);
  if (!m || m.messageType !== 'CReq') return undefined;
  const { threeDSServerTransID, acsTransID, messageVersion } = m;
  const size = m.challengeWindowSize ?? '03';
  if (typeof threeDSServerTransID !== 'string' || !UUID.test(threeDSServerTransID)) return undefined;
  if (typeof acsTransID !== 'string' || !UUID.test(acsTransID)) return undefined;
  if (typeof messageVersion !== 'string' || !/^2\.\d+\.\d+$/.test(messageVersion)) return undefined;
  if (typeof size !== 'string' || !/^0[1-5]$/.test(size)) return undefined;
  return { threeDSServerTransID, acsTransID, messageVersion, challengeWindowSize: size };
}

/** A CReq for a challenge, as the web SDK builds it (for tests and for pages that start one themselves). */
export function encodeCReq(sessionId: string, challenge: ChallengeState, challengeWindowSize = '03'): string {
  return encodeJson({
    messageType: 'CReq',
    messageVersion: challenge.ares.threeds_version,
    threeDSServerTransID: sessionId,
    acsTransID: challenge.ares.acs_transaction_id,
    challengeWindowSize,
  });
}

/** Whether a CReq is for this stored challenge: the ACS accepts it only then. */
export function creqMatches(creq: CReq, challenge: ChallengeState): boolean {
  return creq.threeDSServerTransID === challenge.session_id && creq.acsTransID.toLowerCase() === challenge.ares.acs_transaction_id.toLowerCase();
}

/** The final CRes the ACS posts (form field `cres`) to the session's notification page; undefined while the challenge is pending. */
export function encodeCRes(challenge: ChallengeState): string | undefined {
  const result = challenge.result;
  if (!result) return undefined;
  return encodeJson({
    messageType: 'CRes',
    messageVersion: result.threeds_version,
    threeDSServerTransID: challenge.session_id,
    acsTransID: result.acs_transaction_id,
    transStatus: result.authentication_status_code,
    challengeCompletionInd: 'Y',
  });
}

export interface MethodData {
  threeDSServerTransID: string;
  threeDSMethodNotificationURL: string;
}

/** The `threeDSMethodData` form field the Method page receives from the SDK. */
export function decodeMethodData(field: string): MethodData | undefined {
  const m = decodeJson(field);
  if (!m) return undefined;
  const { threeDSServerTransID, threeDSMethodNotificationURL } = m;
  if (typeof threeDSServerTransID !== 'string' || !UUID.test(threeDSServerTransID)) return undefined;
  if (typeof threeDSMethodNotificationURL !== 'string' || !URL.canParse(threeDSMethodNotificationURL)) return undefined;
  return { threeDSServerTransID, threeDSMethodNotificationURL };
}

/** What the ACS posts back (as `threeDSMethodData`) to the notification URL when the Method completes. */
export function encodeMethodCompletion(sessionId: string): string {
  return encodeJson({ threeDSServerTransID: sessionId });
}
