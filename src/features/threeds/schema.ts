import { Type, type Static } from 'typebox';
import { problem, Problem, Timestamp, Uuid } from '../../http/schemas.ts';
import { CHALLENGE_CANCEL_CODES, CHALLENGE_PREFERENCE_CODES, STATUS_REASON_CODES, STATUS_WORDS } from '../../threeds/index.ts';
import { DEVICES, DeviceInfo } from './create-schema.ts';
import { SESSION_TYPES } from './codes.ts';

/**
 * The response schemas of the 3DS endpoints: the Create 3DS Session response, the 3DS Session,
 * the 3DS Authentication result, and the 424 problem of a failing 3DS service. The request
 * bodies are create-schema.ts's and authenticate-schema.ts's.
 */

export const SessionParams = Type.Object({ id: Uuid });

const STATUS_LETTERS = Object.keys(STATUS_WORDS);
const Letter = (description: string) => Type.String({ enum: STATUS_LETTERS, description });
const Optional = Type.Optional;

export const AuthenticationResult = Type.Object({
  threeds_version: Type.String({ description: 'The EMV 3DS version the authentication ran with' }),
  acs_transaction_id: Type.String({ description: 'The issuer ACS\'s transaction id (EMV acsTransID): the web SDK puts it in the CReq' }),
  ds_transaction_id: Type.String({ description: 'The Directory Server\'s transaction id (EMV dsTransID), for the authorization' }),
  acs_reference_number: Type.String(),
  ds_reference_number: Type.String(),
  authentication_status: Type.String({
    enum: Object.values(STATUS_WORDS),
    description: 'successful (Y), attempted (A), failed (N), unavailable (U), challenge (C: run the challenge), decoupled_challenge (D: wait for the issuer), rejected (R), informational (I)',
  }),
  authentication_status_code: Letter('The EMV transStatus letter of authentication_status'),
  authentication_status_reason: Optional(Type.String({ enum: Object.keys(STATUS_REASON_CODES), description: 'Why it did not succeed (EMV transStatusReason), for failed, unavailable and rejected' })),
  authentication_status_reason_code: Optional(Type.String({ description: 'The EMV code of authentication_status_reason' })),
  directory_status_code: Letter('The letter of the Directory Server\'s ARes: stays C or D once a challenge has settled'),
  eci: Optional(Type.String({ description: 'Electronic Commerce Indicator, for successful and attempted only' })),
  authentication_value: Optional(Type.String({ description: 'The CAVV/AAV (28 base64 characters), for successful and attempted only: pass it to the authorization' })),
  liability_shifted: Type.Boolean({ description: 'Whether a successful or attempted authentication moved fraud liability to the issuer' }),
  challenge_preference: Type.String({ enum: Object.keys(CHALLENGE_PREFERENCE_CODES) }),
  challenge_preference_code: Type.String(),
  acs_challenge_url: Optional(Type.String({ description: 'Challenges: where the web SDK posts the CReq (form field creq)' })),
  acs_challenge_mandated: Optional(Type.String({ enum: ['Y', 'N'], description: 'Challenges: Y when regulation requires the challenge (the cardholder cannot cancel it)' })),
  authentication_challenge_type: Optional(Type.String({ enum: ['static', 'dynamic', 'out-of-band', 'decoupled'] })),
  challenge_attempts: Optional(Type.String({ description: 'Challenges: codes submitted (or approvals given) so far' })),
  challenge_cancel_reason: Optional(Type.String({ enum: Object.keys(CHALLENGE_CANCEL_CODES), description: 'Why a challenge ended without the cardholder completing it (EMV challengeCancel)' })),
  challenge_cancel_reason_code: Optional(Type.String()),
  message_extensions: Type.Array(Type.Unknown()),
}, { description: 'The 3DS Authentication result' });

export type AuthenticationResultResponse = Static<typeof AuthenticationResult>;

export const CreateSessionResponse = Type.Object({
  id: Uuid,
  type: Type.Enum(SESSION_TYPES),
  card_brand: Type.String(),
  method_url: Optional(Type.String({ description: 'The 3DS Method page: load it in a hidden iframe, posting threeDSMethodData. Absent when the card range has no 3DS Method' })),
  method_notification_url: Type.String({ description: 'Where the 3DS Method page reports its completion (Coffer\'s own)' }),
  directory_server_id: Type.String(),
  recommended_version: Type.String(),
});

const Version = Type.Object({
  recommended_version: Type.String(),
  available_version: Type.Array(Type.String()),
  earliest_acs_supported_version: Type.String(),
  earliest_ds_supported_version: Type.String(),
  latest_acs_supported_version: Type.String(),
  latest_ds_supported_version: Type.String(),
  acs_information: Type.Array(Type.String(), { description: 'EMV acsInfoInd: 01 authentication, 02 attempts, 03 decoupled, 04 whitelisting' }),
});

const Method = Type.Object({
  method_url: Optional(Type.String()),
  method_completion_indicator: Optional(Type.String({
    enum: ['Y', 'N', 'U'],
    description: 'Y: the 3DS Method completed; N: it had not when authenticate came; U: the card range has none. Absent while it may still complete',
  })),
});

export const SessionResponse = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  type: Type.Enum(SESSION_TYPES),
  pan_token_id: Optional(Type.String({ description: 'Deprecated: the token made of the pan the session was created with' })),
  token_id: Optional(Type.String()),
  token_intent_id: Optional(Uuid),
  card_brand: Type.String(),
  expiration_date: Timestamp,
  created_date: Timestamp,
  created_by: Optional(Uuid),
  modified_date: Optional(Timestamp),
  modified_by: Optional(Uuid),
  device: Optional(Type.Enum(DEVICES)),
  device_info: Optional(DeviceInfo),
  version: Version,
  method: Method,
  authentication: Optional(AuthenticationResult),
}, { description: 'A 3DS Session; never the card number' });

export type SessionResponseBody = Static<typeof SessionResponse>;

/** The 424 of a failing 3DS service: problem details plus what the reference API's 3DS errors carry. */
export const ServiceErrorProblem = Type.Object({
  ...Problem.properties,
  service_status: Type.Integer({ description: 'The failing service\'s status: 502 or 504 means retry with a new session' }),
  session_id: Uuid,
  error_source: Type.String({ enum: ['Directory Server', '3DS Server', 'ACS'] }),
  message: Type.String(),
}, { description: 'A 3DS Server or Directory Server error' });

export const SERVICE_ERROR = { 424: problem(424, ServiceErrorProblem) };
