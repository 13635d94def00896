import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.ts';
import { TOKEN_ID_PATTERN } from '../tokens/schema.ts';
import { SESSION_TYPES } from './codes.ts';
import { Digits, formatted, registerPatternMessage, SdkEncryptionData, TimeZoneOffset } from './formats.ts';

/**
 * The body of POST /3ds/sessions, for the OpenAPI document and the schema half of
 * validateCreateSessionRequest (create-rules.ts). The card is named by exactly one of
 * `token_id`, `token_intent_id` or the deprecated `pan`; which device fields are required
 * depends on `device`, a rule the descriptions state and create-rules.ts checks.
 */

registerPatternMessage(TOKEN_ID_PATTERN, 'must be a token id: letters, digits, _ - . (at most 200)');

const Text = (max: number, description: string) => Type.String({ minLength: 1, maxLength: max, description });

export const DEVICES = ['browser', 'mobile'] as const;
export type Device = (typeof DEVICES)[number];

/**
 * The browser fields EMV 2.2 requires for the browser channel, always; and those it requires only
 * when JavaScript runs (without it, a page cannot read the screen, the time zone or Java).
 */
export const BROWSER_REQUIRED = ['browser_accept_header', 'browser_ip_address', 'browser_javascript_enabled', 'browser_user_agent'] as const;
export const BROWSER_REQUIRED_WITH_JAVASCRIPT = ['browser_java_enabled', 'browser_color_depth', 'browser_screen_height', 'browser_screen_width', 'browser_tz'] as const;
export const BROWSER_FIELDS = [...BROWSER_REQUIRED, ...BROWSER_REQUIRED_WITH_JAVASCRIPT, 'browser_language'] as const;

/** The 3DS SDK fields EMV requires for the app channel (sdk_reference_number stays optional: the spec does not list it). */
export const MOBILE_REQUIRED = ['sdk_transaction_id', 'sdk_application_id', 'sdk_encryption_data', 'sdk_ephemeral_public_key', 'sdk_max_timeout'] as const;
export const MOBILE_FIELDS = [...MOBILE_REQUIRED, 'sdk_reference_number'] as const;

/** EMV browserColorDepth's values; a browser's own (30 on some screens) is taken as the nearest lower one. */
export const COLOR_DEPTHS = [1, 4, 8, 15, 16, 24, 32, 48] as const;

/** EMV sdkMaxTimeout: the SDK gives the cardholder at least 5 minutes. */
export const MIN_SDK_TIMEOUT_MINUTES = 5;

export const DeviceInfo = Type.Object({
  browser_accept_header: Type.Optional(Text(2048, 'browser: the Accept header of the cardholder\'s browser. Required for browser')),
  browser_ip_address: Type.Optional(Type.String({ maxLength: 45, description: 'browser: the browser\'s IP address, IPv4 or IPv6. Required for browser' })),
  browser_javascript_enabled: Type.Optional(Type.Boolean({ description: 'browser: whether the browser runs JavaScript. Required for browser' })),
  browser_java_enabled: Type.Optional(Type.Boolean({ description: 'browser: navigator.javaEnabled(). Required for browser when browser_javascript_enabled is true' })),
  browser_color_depth: Type.Optional(Digits(2, 'browser: screen.colorDepth, as a string; taken as the nearest EMV value at or below it (1, 4, 8, 15, 16, 24, 32, 48). Required for browser when browser_javascript_enabled is true')),
  browser_screen_height: Type.Optional(Digits(6, 'browser: screen.height in pixels, as a string. Required for browser when browser_javascript_enabled is true')),
  browser_screen_width: Type.Optional(Digits(6, 'browser: screen.width in pixels, as a string. Required for browser when browser_javascript_enabled is true')),
  browser_tz: Type.Optional(TimeZoneOffset('browser: ', 'Required for browser when browser_javascript_enabled is true')),
  browser_user_agent: Type.Optional(Text(2048, 'browser: the User-Agent header of the cardholder\'s browser. Required for browser')),
  browser_language: Type.Optional(Text(35, 'browser: navigator.language (IETF BCP 47). Optional')),
  sdk_transaction_id: Type.Optional({ ...Uuid, description: 'mobile: the transaction id the 3DS SDK made. Required for mobile' }),
  sdk_application_id: Type.Optional({ ...Uuid, description: 'mobile: the id of the app installation the 3DS SDK gives. Required for mobile' }),
  sdk_encryption_data: Type.Optional(SdkEncryptionData('mobile: ', 'Required for mobile')),
  sdk_ephemeral_public_key: Type.Optional(Type.Object({
    kty: Type.String({ minLength: 1, description: 'Key type (EC)' }),
  }, { additionalProperties: true, description: 'mobile: the SDK\'s ephemeral public key as a JWK (kty, crv, x, y). Required for mobile' })),
  sdk_max_timeout: Type.Optional(Digits(2, 'mobile: minutes the SDK waits for the challenge, at least 5 (`5` becomes `05`). Required for mobile')),
  sdk_reference_number: Type.Optional(Text(32, 'mobile: the 3DS SDK\'s EMVCo reference number. Optional')),
}, { additionalProperties: false, description: 'The cardholder\'s device: browser_* fields for a browser, sdk_* fields for a mobile app; never both' });

export const CreateSessionBody = Type.Object({
  token_id: Type.Optional(Type.String({ pattern: TOKEN_ID_PATTERN, description: 'The card token (type card or network_token). Exactly one of token_id, token_intent_id or pan' })),
  token_intent_id: Type.Optional({ ...Uuid, description: 'The card token intent (type card or network_token). Exactly one of token_id, token_intent_id or pan' }),
  pan: Type.Optional(formatted('^[0-9]{12,19}$', 'must be a card number: 12 to 19 digits', 'Deprecated: the card number itself, tokenized on the spot. Use token_id or token_intent_id', { deprecated: true })),
  type: Type.Enum(SESSION_TYPES, { description: '`customer` for a customer-initiated authentication, `merchant` for a merchant-initiated one (EMV 3RI)' }),
  device: Type.Optional(Type.Enum(DEVICES, { description: 'The cardholder\'s device: `browser` or `mobile` (a 3DS SDK in an app). Required with device_info' })),
  device_info: Type.Optional(DeviceInfo),
}, { additionalProperties: false });

export type CreateSessionBodyInput = Static<typeof CreateSessionBody>;
export type DeviceInfoInput = Static<typeof DeviceInfo>;

/**
 * A validated create request: exactly one of token_id, token_intent_id and pan is set;
 * browser_color_depth is one of EMV's values and sdk_max_timeout two digits.
 */
export type CreateSessionRequest = CreateSessionBodyInput;
