import { Type, type Static } from 'typebox';
import { MapOf } from '../../http/schemas.ts';
import {
  ACCOUNT_AGE_CODES, ACCOUNT_CHANGE_CODES, ACCOUNT_TYPE_CODES, ADDRESS_MATCH_VALUES, AUTHENTICATION_CATEGORY_CODES,
  AUTHENTICATION_METHOD_CODES, AUTHENTICATION_TYPE_SESSIONS, CHALLENGE_PREFERENCE_CODES, DELIVERY_TIME_FRAME_CODES,
  PASSWORD_CHANGE_CODES, PRIOR_AUTHENTICATION_METHOD_CODES, SHIPPING_ADDRESS_USAGE_CODES, SHIPPING_METHOD_CODES,
  TRANSACTION_TYPE_CODES, wordsOf, type ChallengePreference,
} from './codes.ts';
import {
  CountryCode, CurrencyCode, DateMinutes, DateSeconds, DateYmd, Digits, Exponent, PhoneCountryCode, SubdivisionCode,
} from './formats.ts';

/**
 * The body of POST /3ds/sessions/{id}/authenticate, every field of SPEC.md's table with its type,
 * words and format, for the OpenAPI document and for the schema half of
 * validateAuthenticateRequest (authenticate-rules.ts). `required` here holds only what is always
 * required; what depends on the category, the type or the session type is a rule (the
 * descriptions say which), checked with the rest so one 400 names every field at fault.
 * Unknown properties are refused: a misspelt optional field would otherwise vanish unnoticed.
 * Lengths are EMV 2.2's, so the 3DS Server downstream never refuses what passed here.
 */

const Text = (max: number, description: string, min = 1) => Type.String({ minLength: min, maxLength: max, description });
const Words = <T extends Record<string, string>>(table: T, description: string) => Type.Enum(wordsOf(table), { description });
const Strict = { additionalProperties: false } as const;

const PhoneNumber = (description: string) => Type.Object({
  country_code: PhoneCountryCode,
  number: Digits(15, 'Subscriber number, digits only, at most 15'),
}, { ...Strict, description: `${description}. Both fields are required when the object is given` });

const Address = (description: string) => Type.Object({
  line1: Type.Optional(Text(50, 'First line of the street address')),
  line2: Type.Optional(Text(50, 'Second line of the street address')),
  line3: Type.Optional(Text(50, 'Third line of the street address')),
  postal_code: Type.Optional(Text(16, 'ZIP or other postal code')),
  city: Type.Optional(Text(50, 'City')),
  state_code: Type.Optional(SubdivisionCode),
  country_code: Type.Optional(CountryCode('Country; required when state_code is given')),
}, { ...Strict, description });

export const PurchaseInfo = Type.Object({
  amount: Type.Optional(Digits(48, 'Amount in minor units, digits only without punctuation (`1050` for 10.50 USD). Required when the category is payment or the type is recurring-transaction or installment-transaction')),
  currency: Type.Optional(CurrencyCode('Currency of the amount. Required when amount is, and whenever amount is given')),
  exponent: Type.Optional(Exponent),
  date: Type.Optional(DateSeconds('When the purchase happened. Required when amount is')),
  transaction_type: Type.Optional(Words(TRANSACTION_TYPE_CODES, 'What is being bought (EMV transType). Required when the category is payment')),
  installment_count: Type.Optional(Digits(3, 'Most authorizations permitted for the installment payment, 2–999. Required for installment-transaction')),
  recurring_expiration: Type.Optional(DateYmd('Date after which no further authorizations are made. Required for recurring-transaction')),
  recurring_frequency: Type.Optional(Digits(4, 'Minimum number of days between authorizations, 1–9999. Required for recurring-transaction')),
}, { ...Strict, description: 'The purchase. Required when the category is payment, or the type is recurring-transaction or installment-transaction. amount, currency and exponent go together' });

export const RiskInfo = Type.Object({
  delivery_email: Type.Optional(Type.String({ format: 'email', maxLength: 254, description: 'For electronic delivery, the address the goods were sent to' })),
  delivery_time_frame: Type.Optional(Words(DELIVERY_TIME_FRAME_CODES, 'How soon the goods are delivered (EMV deliveryTimeframe)')),
  gift_card_amount: Type.Optional(Digits(15, 'Total of prepaid or gift cards bought, in major units (an integer as a string); needs gift_card_currency')),
  gift_card_count: Type.Optional(Digits(2, 'Number of prepaid or gift cards bought')),
  gift_card_currency: Type.Optional(CurrencyCode('Currency of gift_card_amount')),
  pre_order_purchase: Type.Optional(Type.Boolean({ description: 'Whether the goods are ordered before they are available' })),
  pre_order_date: Type.Optional(DateYmd('When pre-ordered goods are expected to be available')),
  reordered_purchase: Type.Optional(Type.Boolean({ description: 'Whether the cardholder is reordering goods bought before' })),
  shipping_method: Type.Optional(Words(SHIPPING_METHOD_CODES, 'How the goods are shipped (EMV shipIndicator)')),
}, { ...Strict, description: 'Merchant risk indicators; all optional' });

export const MerchantInfo = Type.Object({
  mid: Type.Optional(Text(35, 'Merchant id the acquirer assigned (EMV acquirerMerchantID). Required when the category is payment')),
  acquirer_bin: Type.Optional(Digits(11, 'Acquiring institution identification code, 6–11 digits. Required when the category is payment', 6)),
  name: Type.Optional(Text(40, 'Merchant name as the acquirer knows it. Required when the category is payment')),
  country_code: Type.Optional(CountryCode('Merchant country. Required when the category is payment')),
  category_code: Type.Optional(Digits(4, 'Merchant category code (MCC), 4 digits. Required when the category is payment', 4)),
  risk_info: Type.Optional(RiskInfo),
}, { ...Strict, description: 'The merchant. Required when the category is payment' });

export const RequestorInfo = Type.Object({
  id: Text(35, 'The 3DS Requestor id the card network assigned (how it is built depends on the network)'),
  name: Text(40, 'The 3DS Requestor name the card network assigned'),
  url: Type.String({ maxLength: 2048, description: 'The requestor\'s business website: an absolute http(s) URL' }),
}, { ...Strict, description: 'Who requests the authentication; every field required' });

const AccountInfo = Type.Object({
  account_age: Type.Optional(Words(ACCOUNT_AGE_CODES, 'How long the cardholder has had the account with the merchant')),
  account_last_changed: Type.Optional(Words(ACCOUNT_CHANGE_CODES, 'When the account was last changed')),
  account_change_date: Type.Optional(DateYmd('When the account was last changed')),
  account_created_date: Type.Optional(DateYmd('When the account was opened')),
  account_pwd_last_changed: Type.Optional(Words(PASSWORD_CHANGE_CODES, 'When the account\'s password was last changed')),
  account_pwd_change_date: Type.Optional(DateYmd('When the account\'s password was last changed')),
  purchase_count_half_year: Type.Optional(Digits(4, 'Purchases with the account in the last six months')),
  transaction_count_day: Type.Optional(Digits(3, 'Transactions (successful or not) with the account in the last 24 hours')),
  transaction_count_year: Type.Optional(Digits(3, 'Transactions (successful or not) with the account in the last year')),
  payment_account_age: Type.Optional(DateYmd('When the payment method was added to the account')),
  payment_account_created: Type.Optional(Words(ACCOUNT_AGE_CODES, 'How long the payment method has been on the account')),
  shipping_address_first_used: Type.Optional(Words(SHIPPING_ADDRESS_USAGE_CODES, 'When the shipping address was first used')),
  shipping_address_usage_date: Type.Optional(DateYmd('When the shipping address was first used')),
  shipping_account_name_match: Type.Optional(Type.Boolean({ description: 'Whether the shipping name matches the account name' })),
  suspicious_activity_observed: Type.Optional(Type.Boolean({ description: 'Whether the merchant saw suspicious activity on the account' })),
}, { ...Strict, description: 'The cardholder\'s account with the merchant; all optional' });

const AuthenticationInfo = Type.Object({
  method: Words(AUTHENTICATION_METHOD_CODES, 'How the cardholder logged in to the merchant (EMV threeDSReqAuthMethod)'),
  timestamp: Type.Optional(DateMinutes('When the cardholder logged in')),
  data: Type.Optional(Text(20000, 'Data supporting the login (a FIDO assertion, for instance)')),
}, { ...Strict, description: 'How the cardholder authenticated to the merchant for this purchase; method required when the object is given' });

const PriorAuthenticationInfo = Type.Object({
  method: Words(PRIOR_AUTHENTICATION_METHOD_CODES, 'How the previous 3DS authentication went (EMV threeDSReqPriorAuthMethod)'),
  timestamp: Type.Optional(DateMinutes('When the previous authentication happened')),
  reference_id: Type.Optional(Type.String({ format: 'uuid', description: 'acs_transaction_id of the previous authentication' })),
  data: Type.Optional(Text(2048, 'Data supporting the previous authentication')),
}, { ...Strict, description: 'A previous 3DS authentication of the cardholder with the merchant; method required when the object is given' });

export const CardholderInfo = Type.Object({
  name: Text(45, 'Name on the card', 2),
  email: Type.String({ format: 'email', maxLength: 254, description: 'The cardholder\'s e-mail address' }),
  account_id: Type.Optional(Text(64, 'The cardholder\'s account id with the merchant')),
  account_type: Type.Optional(Words(ACCOUNT_TYPE_CODES, 'The card\'s account type (EMV acctType)')),
  account_info: Type.Optional(AccountInfo),
  authentication_info: Type.Optional(AuthenticationInfo),
  prior_authentication_info: Type.Optional(PriorAuthenticationInfo),
  phone_number: Type.Optional(PhoneNumber('Home phone')),
  mobile_phone_number: Type.Optional(PhoneNumber('Mobile phone')),
  work_phone_number: Type.Optional(PhoneNumber('Work phone')),
  billing_shipping_address_match: Type.Optional(Type.Enum(ADDRESS_MATCH_VALUES, { description: 'Whether the billing and shipping addresses are the same' })),
  billing_address: Type.Optional(Address('Billing address')),
  shipping_address: Type.Optional(Address('Shipping address')),
}, { ...Strict, description: 'The cardholder; name and email required' });

/** EMV threeDSRequestorDecMaxTime: minutes, at most 10080 (seven days). */
export const MAX_DECOUPLED_MINUTES = 10080;

export const AuthenticateBody = Type.Object({
  authentication_category: Words(AUTHENTICATION_CATEGORY_CODES, '`payment` (ends in a purchase) or `non-payment` (adding a card to an account, verifying it)'),
  authentication_type: Type.Enum(wordsOf(AUTHENTICATION_TYPE_SESSIONS), {
    description: 'Why the authentication is made. Customer sessions: payment-transaction, cardholder-emv-verification. Merchant sessions: split-or-delayed-shipment, top-up, mail-order, telephone-order, whitelist-status-check, other-payment, billing-agreement. Both: recurring-transaction, installment-transaction, add-card, maintain-card, account-verification',
  }),
  request_decoupled_challenge: Type.Optional(Type.Boolean({ description: 'Whether the issuer may challenge the cardholder out of band (decoupled). Defaults to true for merchant sessions, false for customer sessions' })),
  decoupled_challenge_max_time: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DECOUPLED_MINUTES, description: 'Minutes the issuer has to complete a decoupled challenge (1–10080). Required when request_decoupled_challenge is true or the session is a merchant session' })),
  challenge_preference: Type.Optional(Type.Enum(wordsOf(CHALLENGE_PREFERENCE_CODES), {
    default: 'no-preference',
    description: 'Whether the requestor wants a challenge (EMV threeDSRequestorChallengeInd): no-preference=01, no-challenge=02, challenge-requested=03, challenge-mandated=04, no-challenge-risk-analysis-performed=05, no-challenge-data-sharing-only=06, no-challenge-strong-consumer-auth=07, no-challenge-whitelist-exemption=08, challenge-requested-whitelist-prompt=09, cartes-bancaires=90',
  })),
  purchase_info: Type.Optional(PurchaseInfo),
  merchant_info: Type.Optional(MerchantInfo),
  requestor_info: RequestorInfo,
  cardholder_info: CardholderInfo,
  broadcast_info: Type.Optional(MapOf(Type.Unknown(), { description: 'Free-form data sent to the 3DS Server, the directory server and the ACS' })),
  message_extensions: Type.Optional(Type.Array(MapOf(Type.Unknown()), { maxItems: 10, description: 'EMV message extensions (at most 10 objects): data for requirements outside the standard 3DS format' })),
}, Strict);

export type AuthenticateBodyInput = Static<typeof AuthenticateBody>;

/**
 * A validated authenticate request: the body as sent, with the currencies converted to their
 * numeric ISO 4217 codes, phone calling codes without `+`, subdivision codes without their
 * country prefix, and the defaults applied (request_decoupled_challenge by session type,
 * challenge_preference no-preference) with the preference's EMV code beside it.
 */
export type AuthenticateRequest = Omit<AuthenticateBodyInput, 'request_decoupled_challenge' | 'challenge_preference'> & {
  request_decoupled_challenge: boolean;
  challenge_preference: ChallengePreference;
  challenge_preference_code: (typeof CHALLENGE_PREFERENCE_CODES)[ChallengePreference];
};
