import type { FieldErrorList } from '../http/errors.ts';
import { childPath } from '../http/field-path.ts';
import { abaValid, cardNumberChecks } from './checksums.ts';
import { cardBrand } from './card-brands.ts';

/**
 * What each token type accepts, where it lives by default, how it is masked and
 * fingerprinted by default, and which non-sensitive views it exposes regardless of the
 * caller's transform. `validate` returns the canonical data to store.
 */
export type TokenTypeDefinition = {
  container: string;
  /** Mask: an expression string, or an object whose leaves are expressions (mirrors the data). */
  mask: unknown;
  fingerprint: string | null;
  /**
   * Checks and canonicalises the data. `previous` is the token's data before a patch: what a
   * patch leaves as it was is not judged again by the clock (a card's expiry).
   */
  validate(data: unknown, field: string, errors: FieldErrorList, previous?: unknown): unknown;
  views?(data: unknown): Record<string, unknown>;
};

export type CardView = { bin: string; last4: string; expiration_month?: number; expiration_year?: number; brand: string };
export type BankView = { routing_number?: string; account_number_last4?: string };

const PCI = '/pci/high/';
const BANK = '/bank/high/';
const GENERAL = '/general/high/';

function cardNumber(value: unknown, field: string, errors: FieldErrorList): string | undefined {
  if (typeof value !== 'string') {
    errors.add(field, 'must be a string of digits');
    return undefined;
  }
  if (!/^\d{12,19}$/.test(value)) errors.add(field, 'must be 12 to 19 digits');
  else if (!cardNumberChecks(value)) errors.add(field, 'is not a valid card number (Luhn check failed)');
  return value;
}

function cardView(number: string, month?: number, year?: number): CardView {
  return {
    bin: number.slice(0, 6),
    last4: number.slice(-4),
    ...(month !== undefined ? { expiration_month: month } : {}),
    ...(year !== undefined ? { expiration_year: year } : {}),
    brand: cardBrand(number),
  };
}

function objectData(data: unknown, field: string, errors: FieldErrorList): Record<string, unknown> | undefined {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    errors.add(field, 'must be an object');
    return undefined;
  }
  return data as Record<string, unknown>;
}

function unknownFields(obj: Record<string, unknown>, allowed: string[], field: string, errors: FieldErrorList): void {
  for (const key of Object.keys(obj)) if (!allowed.includes(key)) errors.add(childPath(field, key), 'is not a field of this token type');
}

function digitsString(value: unknown, pattern: RegExp, what: string, field: string, errors: FieldErrorList): string | undefined {
  if (typeof value !== 'string' || !pattern.test(value)) {
    errors.add(field, `must be ${what}`);
    return undefined;
  }
  return value;
}

/**
 * A card's fields, and the `extra` ones of a type built on it (a network token's cryptogram).
 * `previous` is the data before a patch (see TokenTypeDefinition.validate).
 */
function cardData(data: unknown, field: string, errors: FieldErrorList, previous: unknown, extra: Record<string, (value: unknown, at: string) => void>): unknown {
  const obj = objectData(data, field, errors);
  if (!obj) return data;
  unknownFields(obj, ['number', 'expiration_month', 'expiration_year', 'cvc', ...Object.keys(extra)], field, errors);
  if (obj.number === undefined) errors.add(`${field}.number`, 'is required');
  else cardNumber(obj.number, `${field}.number`, errors);
  const month = obj.expiration_month;
  const year = obj.expiration_year;
  const validMonth = Number.isInteger(month) && (month as number) >= 1 && (month as number) <= 12;
  const validYear = Number.isInteger(year) && (year as number) >= 1000 && (year as number) <= 9999;
  if (month !== undefined && !validMonth) errors.add(`${field}.expiration_month`, 'must be a whole number from 1 to 12');
  if (year !== undefined && !validYear) errors.add(`${field}.expiration_year`, 'must be a four-digit year');
  if ((month === undefined) !== (year === undefined)) {
    errors.add(`${field}.${month === undefined ? 'expiration_month' : 'expiration_year'}`, 'is required with the other expiration field');
  }
  // Only a valid date can be in the past: a two-digit year 30 is one error, not also "expired".
  // A patch that keeps the expiry (a new cvc, new metadata) is not refused for it: the card
  // was accepted with it, and only a new expiry has to be a current one.
  const before = previous !== null && typeof previous === 'object' ? (previous as Record<string, unknown>) : undefined;
  const kept = before !== undefined && before.expiration_month === month && before.expiration_year === year;
  if (validMonth && validYear && !kept) {
    const now = new Date();
    const y = now.getUTCFullYear();
    if ((year as number) < y || ((year as number) === y && (month as number) < now.getUTCMonth() + 1)) {
      errors.add(`${field}.expiration_year`, 'the card has expired (expiration is in the past)');
    }
  }
  if (obj.cvc !== undefined) digitsString(obj.cvc, /^\d{3,4}$/, 'a string of 3 or 4 digits', `${field}.cvc`, errors);
  for (const [name, check] of Object.entries(extra)) check(obj[name], childPath(field, name));
  return obj;
}

const CARD_MASK = {
  number: '{{ data.number | card_mask: true, true }}',
  expiration_month: '{{ data.expiration_month }}',
  expiration_year: '{{ data.expiration_year }}',
};

function cardViews(data: unknown): Record<string, unknown> {
  const d = data as { number: string; expiration_month?: number; expiration_year?: number };
  return { card: cardView(d.number, d.expiration_month, d.expiration_year) };
}

const card: TokenTypeDefinition = {
  container: PCI,
  mask: CARD_MASK,
  fingerprint: '{{ data.number }}',
  validate: (data, field, errors, previous) => cardData(data, field, errors, previous, {}),
  views: cardViews,
};

/**
 * A network token (a wallet's device PAN, say) with the one-time cryptogram that authenticates
 * its payment and the ECI that comes with it: a card in every other way. Both are required: a
 * network token without its cryptogram cannot be charged as one.
 */
const networkToken: TokenTypeDefinition = {
  container: PCI,
  mask: CARD_MASK,
  fingerprint: '{{ data.number }}',
  validate: (data, field, errors, previous) =>
    cardData(data, field, errors, previous, {
      cryptogram: (value, at) => {
        if (value === undefined) errors.add(at, 'is required');
        else if (typeof value !== 'string' || !/^[A-Za-z0-9+/=_-]{1,64}$/.test(value)) errors.add(at, 'must be a string of 1 to 64 base64 characters');
      },
      eci_indicator: (value, at) => {
        if (value !== undefined && (typeof value !== 'string' || !/^\d{1,2}$/.test(value))) errors.add(at, 'must be a string of 1 or 2 digits');
      },
    }),
  views: cardViews,
};

const cardNumberType: TokenTypeDefinition = {
  container: PCI,
  mask: '{{ data | card_mask: true, true }}',
  fingerprint: '{{ data }}',
  validate(data, field, errors) {
    cardNumber(data, field, errors);
    return data;
  },
  views: (data) => ({ card: cardView(data as string) }),
};

const bank: TokenTypeDefinition = {
  container: BANK,
  mask: { routing_number: '{{ data.routing_number }}', account_number: '{{ data.account_number | reveal_last: 4 }}' },
  fingerprint: '{{ data.routing_number }}:{{ data.account_number }}',
  validate(data, field, errors) {
    const obj = objectData(data, field, errors);
    if (!obj) return data;
    unknownFields(obj, ['routing_number', 'account_number'], field, errors);
    const routing = digitsString(obj.routing_number, /^\d{9}$/, 'a 9-digit string', `${field}.routing_number`, errors);
    if (routing && !abaValid(routing)) errors.add(`${field}.routing_number`, 'is not a valid ABA routing number (checksum failed)');
    digitsString(obj.account_number, /^\d{4,17}$/, 'a string of 4 to 17 digits', `${field}.account_number`, errors);
    return obj;
  },
  views(data) {
    const d = data as { routing_number: string; account_number: string };
    return { bank: { routing_number: d.routing_number, account_number_last4: d.account_number.slice(-4) } };
  },
};

const usBankAccountNumber: TokenTypeDefinition = {
  container: BANK,
  mask: '{{ data | reveal_last: 4 }}',
  fingerprint: '{{ data }}',
  validate(data, field, errors) {
    digitsString(data, /^\d{4,17}$/, 'a string of 4 to 17 digits', field, errors);
    return data;
  },
  views: (data) => ({ bank: { account_number_last4: (data as string).slice(-4) } }),
};

const usBankRoutingNumber: TokenTypeDefinition = {
  container: BANK,
  mask: '{{ data }}',
  fingerprint: '{{ data }}',
  validate(data, field, errors) {
    const routing = digitsString(data, /^\d{9}$/, 'a 9-digit string', field, errors);
    if (routing && !abaValid(routing)) errors.add(field, 'is not a valid ABA routing number (checksum failed)');
    return data;
  },
  views: (data) => ({ bank: { routing_number: data as string } }),
};

/** SSNs are stored canonically as 123-45-6789, so fingerprints match however they were typed. */
const socialSecurityNumber: TokenTypeDefinition = {
  container: GENERAL,
  mask: '{{ data | reveal_last: 4 }}',
  fingerprint: '{{ data }}',
  validate(data, field, errors) {
    // Both dashes or neither: 512-347788 is no way of writing an SSN.
    const m = typeof data === 'string' ? /^(\d{3})(-?)(\d{2})\2(\d{4})$/.exec(data) : null;
    if (!m) {
      errors.add(field, 'must be a social security number: 9 digits, as 123-45-6789 or 123456789');
      return data;
    }
    const [, area, , group, serial] = m;
    if (area === '000' || area === '666' || area >= '900' || group === '00' || serial === '0000') {
      errors.add(field, 'is not an issuable social security number');
    }
    return `${area}-${group}-${serial}`;
  },
};

const employerIdNumber: TokenTypeDefinition = {
  container: GENERAL,
  mask: '{{ data | reveal_last: 4 }}',
  fingerprint: '{{ data }}',
  validate(data, field, errors) {
    const m = typeof data === 'string' ? /^(\d{2})-?(\d{7})$/.exec(data) : null;
    if (!m) {
      errors.add(field, 'must be an employer identification number: 9 digits, as 12-3456789 or 123456789');
      return data;
    }
    return `${m[1]}-${m[2]}`;
  },
};

const generic: TokenTypeDefinition = {
  container: GENERAL,
  mask: null,
  fingerprint: '{{ data | json_stringify }}',
  validate(data, field, errors) {
    if (data === null || data === undefined) errors.add(field, 'is required');
    return data;
  },
};

export const TOKEN_TYPES: Record<string, TokenTypeDefinition> = {
  token: generic,
  card,
  card_number: cardNumberType,
  network_token: networkToken,
  bank,
  us_bank_account_number: usBankAccountNumber,
  us_bank_routing_number: usBankRoutingNumber,
  social_security_number: socialSecurityNumber,
  employer_id_number: employerIdNumber,
};

export const TOKEN_TYPE_NAMES = Object.keys(TOKEN_TYPES);
