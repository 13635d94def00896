import { FilterError } from './errors.ts';
import { randomDigit } from './random.ts';
import { kindOf } from './text.ts';

/** A card number from a string, a number, or card data (`{ number, … }`). */
export function cardNumber(v: unknown, filter: string): string {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.hasOwn(v, 'number')) {
    v = (v as { number: unknown }).number;
  }
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  throw new FilterError(`${filter} expects a card number or card data with a number (got ${kindOf(v)})`);
}

export function cardBin(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isDigit(c)) {
      if (out.length < 6) out += s[i];
    }
    else if (c !== 32 && c !== 45) throw new FilterError('card_bin expects a card number (digits, spaces and dashes)');
  }
  if (out.length < 6) throw new FilterError('card_bin expects a card number of at least 6 digits');
  return out;
}

/**
 * Masks the digits of a card number; with `keepLast` the last 4 digits stay, with
 * `keepFirst` the first 6. Spaces and dashes are kept in place. Any other character is an
 * error, as in card_bin and alias_card: kept in place it would show through the mask (a
 * number written in other digits, '٤٢٤٢…' or '４２４２…', or text around it).
 */
export function cardMask(s: string, keepLast: boolean, keepFirst: boolean, mask: string): string {
  let digits = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isDigit(c)) digits++;
    else if (c !== 32 && c !== 45) throw new FilterError('card_mask expects a card number (digits, spaces and dashes)');
  }
  let out = '';
  let d = 0;
  for (let i = 0; i < s.length; i++) {
    if (!isDigit(s.charCodeAt(i))) {
      out += s[i];
      continue;
    }
    out += (keepFirst && d < 6) || (keepLast && d >= digits - 4) ? s[i] : mask;
    d++;
  }
  return out;
}

/**
 * A random card number with the same first 6 and last 4 digits and the same length (and
 * separators in place), Luhn-valid and different from the original.
 */
export function aliasCard(s: string): string {
  const positions: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isDigit(c)) positions.push(i);
    else if (c !== 32 && c !== 45) throw new FilterError('alias_card expects a card number (digits, spaces and dashes)');
  }
  const n = positions.length;
  if (n < 12 || n > 19) throw new FilterError('alias_card expects a card number of 12 to 19 digits');
  const original = positions.map((p) => s.charCodeAt(p) - 48);
  const digits = original.slice();
  // The check digit (last) is kept, so one middle digit is solved for instead. The last
  // middle digit sits 4 places from the right: Luhn does not double it, which makes the solve a subtraction.
  const fix = n - 5;
  for (let attempt = 0; attempt < 64; attempt++) {
    for (let i = 6; i < fix; i++) digits[i] = randomDigit();
    digits[fix] = 0;
    digits[fix] = (10 - (luhnSum(digits) % 10)) % 10;
    if (!sameDigits(digits, original)) break;
  }
  const chars = s.split('');
  for (let i = 0; i < n; i++) chars[positions[i]] = String.fromCharCode(48 + digits[i]);
  return chars.join('');
}

export function luhnSum(digits: readonly number[]): number {
  let sum = 0;
  for (let i = digits.length - 1, double = false; i >= 0; i--, double = !double) {
    let d = digits[i];
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum;
}

export function luhnValid(s: string): boolean {
  const digits: number[] = [];
  for (let i = 0; i < s.length; i++) if (isDigit(s.charCodeAt(i))) digits.push(s.charCodeAt(i) - 48);
  return digits.length > 0 && luhnSum(digits) % 10 === 0;
}

function sameDigits(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

type Piece = 'MM' | 'M' | 'YYYY' | 'YY' | { readonly text: string };

export type ExpFormat = readonly Piece[];

/** 'MM/YY' → MM, '/', YY. Longest token first; any other character is literal. */
export function compileExpFormat(format: string): ExpFormat {
  const pieces: Piece[] = [];
  let text = '';
  for (let i = 0; i < format.length; ) {
    let token: Piece | null = null;
    if (format.startsWith('YYYY', i)) token = 'YYYY';
    else if (format.startsWith('YY', i)) token = 'YY';
    else if (format.startsWith('MM', i)) token = 'MM';
    else if (format[i] === 'M') token = 'M';
    if (token === null) {
      text += format[i];
      i++;
      continue;
    }
    if (text) pieces.push({ text });
    text = '';
    pieces.push(token);
    i += token.length;
  }
  if (text) pieces.push({ text });
  return pieces;
}

export function cardExp(v: unknown, format: ExpFormat): string {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new FilterError(`card_exp expects card data with expiration_month and expiration_year (got ${kindOf(v)})`);
  }
  const card = v as Record<string, unknown>;
  const month = whole(Object.hasOwn(card, 'expiration_month') ? card.expiration_month : undefined);
  const year = expYear(Object.hasOwn(card, 'expiration_year') ? card.expiration_year : undefined);
  if (month === null || month < 1 || month > 12) throw new FilterError('card_exp: expiration_month must be an integer from 1 to 12');
  if (year === null) throw new FilterError('card_exp: expiration_year must be a 4-digit (or 2-digit) year');
  let out = '';
  for (const p of format) {
    switch (p) {
      case 'MM':
        out += month < 10 ? `0${month}` : String(month);
        break;
      case 'M':
        out += String(month);
        break;
      case 'YYYY':
        out += String(year);
        break;
      case 'YY': {
        const yy = year % 100;
        out += yy < 10 ? `0${yy}` : String(yy);
        break;
      }
      default:
        out += p.text;
    }
  }
  return out;
}

/**
 * A year of 4 digits (1000–9999), or of 2 meaning 20YY; anything else null. A number is
 * read as its digits: it cannot carry a leading zero, so 7 is neither form (nor is 0), while
 * the string '07' is 2007. '007' and '0027' are neither either, not 2007 and 2027.
 */
function expYear(v: unknown): number | null {
  const t = typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim() : '';
  const n = whole(t);
  if (n === null) return null;
  if (t.length === 2) return 2000 + n;
  return t.length === 4 && n >= 1000 ? n : null;
}

/** An integer from a number or a string of 1–4 digits; anything else null. */
function whole(v: unknown): number | null {
  if (typeof v === 'number') return Number.isInteger(v) ? v : null;
  if (typeof v !== 'string') return null;
  const t = v.trim();
  if (t.length === 0 || t.length > 4) return null;
  let n = 0;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (!isDigit(c)) return null;
    n = n * 10 + c - 48;
  }
  return n;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
