import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { AuthenticateBody, type AuthenticateRequest } from './authenticate-schema.ts';
import {
  AUTHENTICATION_TYPE_SESSIONS, CHALLENGE_PREFERENCE_CODES, countryNumericOfAlpha3, currencyOf, isCountryNumeric,
  type AuthenticationType, type ChallengePreference, type SessionType,
} from './codes.ts';
import { at, isCalendarDate, isObject, isWebUrl, schemaChecker } from './formats.ts';

/**
 * The rules of an authenticate body that its schema cannot hold: requirements that depend on the
 * category, the authentication type or the session's type, fields that only mean something
 * together, and checks of meaning (a real calendar day, a currency that exists). Every failure,
 * of the schema or of a rule, lands in one FieldErrorList, so a 400 names every field at fault.
 */

type Obj = Record<string, unknown>;

/** When `applies` holds, every field of `fields` (dotted paths under the body) must be present. */
export type Requirement = {
  when: string;
  applies: (body: Obj, sessionType: SessionType) => boolean;
  fields: readonly string[];
};

const PURCHASE = ['purchase_info', 'purchase_info.amount', 'purchase_info.currency', 'purchase_info.exponent', 'purchase_info.date'];

/** SPEC.md's conditional requirements, in its words; docs/3ds.md lists them as a table. */
export const AUTHENTICATE_REQUIREMENTS: readonly Requirement[] = [
  {
    when: 'authentication_category is payment',
    applies: (body) => body.authentication_category === 'payment',
    fields: [
      ...PURCHASE, 'purchase_info.transaction_type',
      'merchant_info', 'merchant_info.mid', 'merchant_info.acquirer_bin', 'merchant_info.name', 'merchant_info.country_code', 'merchant_info.category_code',
    ],
  },
  {
    when: 'authentication_type is recurring-transaction',
    applies: (body) => body.authentication_type === 'recurring-transaction',
    fields: [...PURCHASE, 'purchase_info.recurring_expiration', 'purchase_info.recurring_frequency'],
  },
  {
    when: 'authentication_type is installment-transaction',
    applies: (body) => body.authentication_type === 'installment-transaction',
    fields: [...PURCHASE, 'purchase_info.installment_count'],
  },
  {
    when: 'request_decoupled_challenge is true',
    applies: (body) => body.request_decoupled_challenge === true,
    fields: ['decoupled_challenge_max_time'],
  },
  {
    // Merchant sessions default to a decoupled challenge, and the spec asks for the time even when one is declined.
    when: 'the session is a merchant session',
    applies: (_body, sessionType) => sessionType === 'merchant',
    fields: ['decoupled_challenge_max_time'],
  },
];

/**
 * Fields that only mean something with others beside them, whatever the category: an amount
 * cannot be read without its currency and exponent, nor a gift card amount without its currency;
 * EMV requires the country of an address that names a state.
 */
export const COMPANIONS: readonly { object: string; field: string; needs: readonly string[] }[] = [
  { object: 'purchase_info', field: 'amount', needs: ['currency', 'exponent'] },
  { object: 'purchase_info', field: 'currency', needs: ['amount', 'exponent'] },
  { object: 'purchase_info', field: 'exponent', needs: ['amount', 'currency'] },
  { object: 'merchant_info.risk_info', field: 'gift_card_amount', needs: ['gift_card_currency'] },
  { object: 'cardholder_info.billing_address', field: 'state_code', needs: ['country_code'] },
  { object: 'cardholder_info.shipping_address', field: 'state_code', needs: ['country_code'] },
];

/** Date fields and the length of their form: YYYYMMDD 8, YYYYMMDDhhmm 12, YYYYMMDDhhmmss 14. */
const DATES: readonly [string, number][] = [
  ['purchase_info.date', 14],
  ['purchase_info.recurring_expiration', 8],
  ['merchant_info.risk_info.pre_order_date', 8],
  ['cardholder_info.account_info.account_change_date', 8],
  ['cardholder_info.account_info.account_created_date', 8],
  ['cardholder_info.account_info.account_pwd_change_date', 8],
  ['cardholder_info.account_info.payment_account_age', 8],
  ['cardholder_info.account_info.shipping_address_usage_date', 8],
  ['cardholder_info.authentication_info.timestamp', 12],
  ['cardholder_info.prior_authentication_info.timestamp', 12],
];

const CURRENCIES = ['purchase_info.currency', 'merchant_info.risk_info.gift_card_currency'];
const COUNTRIES = ['merchant_info.country_code', 'cardholder_info.billing_address.country_code', 'cardholder_info.shipping_address.country_code'];
const PHONES = ['phone_number', 'mobile_phone_number', 'work_phone_number'];
const ADDRESSES = ['billing_address', 'shipping_address'];

const checkSchema = schemaChecker(AuthenticateBody);

/**
 * Validates a whole authenticate body for a session of `sessionType` and returns it normalized
 * (see AuthenticateRequest), or throws ApiError.validation naming every field at fault under
 * `body.<path>`.
 */
export function validateAuthenticateRequest(body: unknown, sessionType: SessionType): AuthenticateRequest {
  const errors = new FieldErrorList();
  checkSchema(body, 'body', errors);
  if (isObject(body)) checkRules(body, sessionType, errors);
  errors.throwIfAny();
  return normalize(body as Obj, sessionType);
}

function checkRules(body: Obj, sessionType: SessionType, errors: FieldErrorList): void {
  const type = body.authentication_type;
  if (typeof type === 'string' && Object.hasOwn(AUTHENTICATION_TYPE_SESSIONS, type)) {
    const allowed: readonly SessionType[] = AUTHENTICATION_TYPE_SESSIONS[type as AuthenticationType];
    if (!allowed.includes(sessionType)) {
      const theirs = Object.entries(AUTHENTICATION_TYPE_SESSIONS).filter(([, s]) => (s as readonly string[]).includes(sessionType)).map(([t]) => t);
      errors.add('body.authentication_type', `${type} is for ${allowed.join(' and ')} sessions; this is a ${sessionType} session, which takes: ${theirs.join(', ')}`);
    }
  }
  const reported = checkRequirements(body, sessionType, errors);
  for (const { object, field, needs } of COMPANIONS) {
    const holder = at(body, object);
    if (!isObject(holder) || holder[field] === undefined) continue;
    for (const need of needs) {
      const path = `${object}.${need}`;
      if (holder[need] !== undefined || reported.has(path)) continue;
      reported.add(path);
      errors.add(`body.${path}`, `is required with ${field}`);
    }
  }
  checkMeaning(body, errors);
}

/** Each missing field once, with the first reason that requires it; a missing object stands for its fields. Returns the paths reported. */
function checkRequirements(body: Obj, sessionType: SessionType, errors: FieldErrorList): Set<string> {
  const reported = new Set<string>();
  for (const requirement of AUTHENTICATE_REQUIREMENTS) {
    if (!requirement.applies(body, sessionType)) continue;
    for (const path of requirement.fields) {
      if (reported.has(path)) continue;
      const dot = path.lastIndexOf('.');
      // A parent that is missing is reported itself; one of the wrong type, by the schema.
      const holder = dot < 0 ? body : at(body, path.slice(0, dot));
      if (!isObject(holder) || holder[path.slice(dot + 1)] !== undefined) continue;
      reported.add(path);
      const inside = requirement.fields.filter((f) => f.startsWith(`${path}.`)).map((f) => f.slice(path.length + 1));
      errors.add(`body.${path}`, `is required when ${requirement.when}${inside.length ? ` (with ${inside.join(', ')})` : ''}`);
    }
  }
  return reported;
}

/** What a value's shape allows but its meaning does not; values of the wrong shape were reported by the schema. */
function checkMeaning(body: Obj, errors: FieldErrorList): void {
  for (const [path, length] of DATES) {
    const value = at(body, path);
    if (typeof value === 'string' && value.length === length && /^[0-9]+$/.test(value) && !isCalendarDate(value)) {
      errors.add(`body.${path}`, `is not a real ${length === 8 ? 'date' : 'date and time'}: ${value}`);
    }
  }
  for (const path of CURRENCIES) {
    const value = at(body, path);
    if (typeof value === 'string' && /^(?:[0-9]{3}|[A-Za-z]{3})$/.test(value) && !currencyOf(value)) {
      errors.add(`body.${path}`, `is not an ISO 4217 currency code: ${value}`);
    }
  }
  for (const path of COUNTRIES) {
    const value = at(body, path);
    if (typeof value !== 'string') continue;
    if (/^[0-9]{3}$/.test(value) && !isCountryNumeric(value)) errors.add(`body.${path}`, `is not an ISO 3166-1 numeric country code: ${value}`);
    const meant = countryNumericOfAlpha3(value);
    if (meant) errors.add(`body.${path}`, `${value.toUpperCase()} is ${meant} in ISO 3166-1 numeric`);
  }
  const purchase = at(body, 'purchase_info');
  if (isObject(purchase)) {
    const currency = typeof purchase.currency === 'string' ? currencyOf(purchase.currency) : undefined;
    const exponent = purchase.exponent;
    if (currency?.minorUnits !== undefined && typeof exponent === 'string' && /^[0-9]$/.test(exponent) && Number(exponent) !== currency.minorUnits) {
      errors.add('body.purchase_info.exponent', `must be ${currency.minorUnits}: the ISO 4217 minor units of ${currency.alpha} (${currency.numeric})`);
    }
    atLeast(purchase.installment_count, 2, 'body.purchase_info.installment_count', 'EMV counts installments only when there are more than one', errors);
    atLeast(purchase.recurring_frequency, 1, 'body.purchase_info.recurring_frequency', 'the frequency is in days', errors);
  }
  const url = at(body, 'requestor_info.url');
  if (typeof url === 'string' && !isWebUrl(url)) errors.add('body.requestor_info.url', 'must be an absolute http or https URL');
}

function atLeast(value: unknown, min: number, path: string, why: string, errors: FieldErrorList): void {
  if (typeof value === 'string' && /^[0-9]+$/.test(value) && Number(value) < min) errors.add(path, `must be at least ${min}: ${why}`);
}

/** The valid body as the flow reads it: codes in the forms EMV carries, defaults applied. */
function normalize(body: Obj, sessionType: SessionType): AuthenticateRequest {
  const request = structuredClone(body) as AuthenticateRequest;
  const preference: ChallengePreference = request.challenge_preference ?? 'no-preference';
  request.challenge_preference = preference;
  request.challenge_preference_code = CHALLENGE_PREFERENCE_CODES[preference];
  request.request_decoupled_challenge ??= sessionType === 'merchant';
  if (request.purchase_info?.currency !== undefined) request.purchase_info.currency = currencyOf(request.purchase_info.currency)!.numeric;
  const risk = request.merchant_info?.risk_info;
  if (risk?.gift_card_currency !== undefined) risk.gift_card_currency = currencyOf(risk.gift_card_currency)!.numeric;
  const cardholder = request.cardholder_info as Obj;
  for (const name of PHONES) {
    const phone = cardholder[name] as { country_code: string } | undefined;
    if (phone) phone.country_code = phone.country_code.replace(/^\+/, '');
  }
  for (const name of ADDRESSES) {
    const address = cardholder[name] as { state_code?: string } | undefined;
    if (address?.state_code !== undefined) address.state_code = address.state_code.replace(/^[A-Za-z]{2}-/, '').toUpperCase();
  }
  return request;
}
