import { isIP } from 'node:net';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { Type, type TSchema } from 'typebox';
import { fieldPath, validationMessage, type AjvError, type FieldErrorList } from '../../http/errors.ts';

/**
 * The string formats of the 3DS request bodies. Each is a TypeBox string with a `pattern`, so the
 * OpenAPI document shows the shape, and a message of its own, so a 400 says "must be a date as
 * YYYYMMDD" rather than quoting a regular expression. What a pattern cannot say (a calendar day,
 * a currency that exists) is checked by the rules, only on values whose shape is right.
 */
const MESSAGES = new Map<string, string>();

export function formatted(pattern: string, message: string, description: string, extra: Record<string, unknown> = {}) {
  MESSAGES.set(pattern, message);
  return Type.String({ pattern, description, ...extra });
}

export const DATE_PATTERN = '^[0-9]{8}$';
export const DATE_MINUTES_PATTERN = '^[0-9]{12}$';
export const DATE_SECONDS_PATTERN = '^[0-9]{14}$';

export const DateYmd = (description: string) => formatted(DATE_PATTERN, 'must be a date as YYYYMMDD', `${description}. YYYYMMDD`, { examples: ['20250131'] });
export const DateMinutes = (description: string) =>
  formatted(DATE_MINUTES_PATTERN, 'must be a UTC date and time as YYYYMMDDhhmm', `${description}. UTC, YYYYMMDDhhmm`, { examples: ['202501311745'] });
export const DateSeconds = (description: string) =>
  formatted(DATE_SECONDS_PATTERN, 'must be a UTC date and time as YYYYMMDDhhmmss', `${description}. UTC, YYYYMMDDhhmmss`, { examples: ['20250131174502'] });

export const CurrencyCode = (description: string) => formatted(
  '^(?:[0-9]{3}|[A-Za-z]{3})$',
  'must be an ISO 4217 currency code: 3 digits as EMV carries it (840) or 3 letters (USD)',
  `${description}. ISO 4217: the 3-digit numeric code EMV carries (\`840\`), or the alphabetic code (\`USD\`, any case), which is converted to the numeric one`,
  { examples: ['840', 'USD'] },
);

export const CountryCode = (description: string) => formatted(
  '^[0-9]{3}$',
  'must be an ISO 3166-1 numeric country code: 3 digits (840 for the United States)',
  `${description}. ISO 3166-1 numeric, three digits (\`840\`, not \`US\` or \`USA\`)`,
  { examples: ['840'] },
);

/** Up to `max` digits: counts and amounts EMV sends as numeric strings. */
export const Digits = (max: number, description: string, min = 1) =>
  formatted(`^[0-9]{${min},${max}}$`, min === max ? `must be ${max} digits` : `must be digits only (at most ${max})`, description);

export const Exponent = formatted('^[0-9]$', 'must be one digit: the currency\'s ISO 4217 minor units', 'ISO 4217 minor units of the currency (`2` for USD, `0` for JPY); must match the currency. Required when amount is, and whenever amount is given');

export const PhoneCountryCode = formatted('^\\+?[0-9]{1,3}$', 'must be a calling code of 1 to 3 digits (a leading + is allowed and dropped)', 'International calling code, 1–3 digits (`1`, `44`); a leading `+` is dropped');

export const SubdivisionCode = formatted(
  '^(?:[A-Za-z]{2}-)?[A-Za-z0-9]{1,3}$',
  'must be an ISO 3166-2 subdivision code (CA, or US-CA)',
  'ISO 3166-2 subdivision: `CA`, or `US-CA` (the country prefix is dropped, as EMV carries only the subdivision)',
);

/** EMV sdkEncData is a JWE (compact serialization); the spec types the field as a UUID, which is also taken. */
export const SdkEncryptionData = (prefix: string, suffix: string) => formatted(
  '^(?:[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}|[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]*\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+)$',
  'must be the 3DS SDK\'s encrypted device data: a JWE in compact serialization (or a UUID)',
  `${prefix}the device data the 3DS SDK encrypted for the directory server (EMV sdkEncData): a JWE in compact serialization; the spec's UUID form is also accepted. ${suffix}`,
  { maxLength: 64000 },
);

/** EMV browserTZ: what JavaScript's Date.prototype.getTimezoneOffset() gives (UTC − local, in minutes). */
export const TimeZoneOffset = (prefix: string, suffix: string) => formatted(
  '^[+-]?[0-9]{1,4}$',
  'must be the UTC offset in minutes as JavaScript\'s getTimezoneOffset() gives it (-60, 300)',
  `${prefix}the UTC offset in minutes as \`new Date().getTimezoneOffset()\` gives it, as a string (\`-60\` for UTC+1, \`300\` for UTC−5). ${suffix}`,
);

/** Messages for patterns defined outside this file (token ids). */
export function registerPatternMessage(pattern: string, message: string): void {
  MESSAGES.set(pattern, message);
}

// ─── Checks a pattern cannot make ────────────────────────────────────────────────────────────

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** YYYYMMDD, YYYYMMDDhhmm or YYYYMMDDhhmmss naming a real instant (no 31 April, no 25:00). */
export function isCalendarDate(value: string): boolean {
  const n = (from: number, to: number) => Number(value.slice(from, to));
  const year = n(0, 4);
  const month = n(4, 6);
  const day = n(6, 8);
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])) return false;
  if (value.length >= 12 && (n(8, 10) > 23 || n(10, 12) > 59)) return false;
  return !(value.length === 14 && n(12, 14) > 59);
}

/** An IPv4 or IPv6 address as browsers' connections carry it. */
export function isIpAddress(value: string): boolean {
  return isIP(value) !== 0;
}

/** The requestor's business URL: an absolute http(s) URL, as EMV threeDSRequestorURL is. */
export function isWebUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '';
}

/** The value at a dotted path of plain names, or undefined where the path leaves the objects. */
export function at(value: unknown, path: string): unknown {
  let node = value;
  for (const key of path.split('.')) {
    if (!isObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ─── The schema half of validation ───────────────────────────────────────────────────────────

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
// Its own instance, not the server's: no defaults are written into the caller's body (the rules
// apply defaults that depend on the session), and every failure is wanted, not the first.
const ajv = addFormats(new Ajv({ allErrors: true, useDefaults: false, removeAdditional: false, coerceTypes: false, strict: false }));

/**
 * A checker adding every schema failure of a value to `errors` under field paths rooted at `at`,
 * so that the rules can add theirs to the same list and one 400 names every field at fault.
 */
export function schemaChecker(schema: TSchema): (value: unknown, at: string, errors: FieldErrorList) => void {
  const check = ajv.compile(schema);
  return (value, at, errors) => {
    if (check(value)) return;
    for (const failure of (check.errors ?? []) as AjvError[]) {
      if (errors.full) return;
      errors.add(fieldPath(at, failure, value), message(failure));
    }
  };
}

function message(failure: AjvError): string {
  const limit = failure.params.limit;
  switch (failure.keyword) {
    case 'pattern':
      return MESSAGES.get(String(failure.params.pattern)) ?? 'is not in the expected format';
    case 'minimum':
      return `must be at least ${limit}`;
    case 'maximum':
      return `must be at most ${limit}`;
    case 'maxItems':
      return `must have at most ${limit} items`;
    case 'minProperties':
      return 'must not be empty';
    default:
      return validationMessage(failure);
  }
}

/**
 * For the routes' `validatorCompiler`: the body schema is declared in full (so OpenAPI shows every
 * field) but not enforced by Fastify, whose 400 would name the schema's failures alone and stop
 * before the rules; the handler calls validateAuthenticateRequest / validateCreateSessionRequest,
 * which report both together.
 */
export const checkedByRules = () => (value: unknown) => ({ value });
