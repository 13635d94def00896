import { randomInt } from 'node:crypto';
import { characters } from './values.ts';

const DIGITS = '0123456789';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const ALNUM = DIGITS + LOWER + UPPER;

export function randomDigit(): number {
  return randomInt(10);
}

/**
 * Replaces every character outside the first `first` and last `last` characters: ASCII
 * digits by random digits, a–z by random a–z, A–Z by random A–Z; any other character kept.
 */
export function aliasPreserveFormat(s: string, first: number, last: number): string {
  return alias(s, first, last, (c) => {
    const code = c.charCodeAt(0);
    if (c.length !== 1) return c;
    if (code >= 48 && code <= 57) return DIGITS[randomInt(10)];
    if (code >= 97 && code <= 122) return LOWER[randomInt(26)];
    if (code >= 65 && code <= 90) return UPPER[randomInt(26)];
    return c;
  });
}

/** Replaces every character outside the revealed ends by a random A–Z, a–z or 0–9. */
export function aliasPreserveLength(s: string, first: number, last: number): string {
  return alias(s, first, last, () => ALNUM[randomInt(62)]);
}

function alias(s: string, first: number, last: number, replace: (c: string) => string): string {
  const cs = characters(s);
  const n = cs.length;
  if (first + last >= n) return s;
  let out = '';
  for (let i = 0; i < n; i++) out += i < first || i >= n - last ? cs[i] : replace(cs[i]);
  return out;
}
