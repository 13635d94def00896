import { FilterError } from './errors.ts';
import { characterCount, characters, hasSurrogates, joinSlice } from './values.ts';

/** Lengths and positions below count characters (code points), so 'é' or '💳' is one. */

export function last(s: string, n: number): string {
  if (!hasSurrogates(s)) return s.length <= n ? s : s.slice(s.length - n);
  const cs = Array.from(s);
  return cs.length <= n ? s : cs.slice(cs.length - n).join('');
}

/** Keeps the first `keep` characters and replaces every other one with `mask`. */
export function revealFirst(s: string, keep: number, mask: string): string {
  const cs = characters(s);
  if (keep >= cs.length) return s;
  return joinSlice(cs, 0, keep) + mask.repeat(cs.length - keep);
}

/** Keeps the last `keep` characters and replaces every other one with `mask`. */
export function revealLast(s: string, keep: number, mask: string): string {
  const cs = characters(s);
  if (keep >= cs.length) return s;
  return mask.repeat(cs.length - keep) + joinSlice(cs, cs.length - keep);
}

export function pad(s: string, length: number, ch: string, left: boolean): string {
  const missing = length - characterCount(s);
  if (missing <= 0) return s;
  return left ? ch.repeat(missing) + s : s + ch.repeat(missing);
}

const NUMERIC = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

export function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const t = v.trim();
    if (NUMERIC.test(t)) {
      const n = Number(t);
      if (Number.isFinite(n)) return n;
      throw new FilterError('to_number: the number is out of range');
    }
  }
  throw new FilterError(`to_number: the value is not numeric (${kindOf(v)})`);
}

export function toBoolean(v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === 0) return v === 1;
  if (typeof v === 'string') {
    switch (v.trim().toLowerCase()) {
      case 'true':
      case '1':
        return true;
      case 'false':
      case '0':
        return false;
    }
  }
  throw new FilterError(`to_boolean: expected true, false, 'true', 'false', 1 or 0 (got ${kindOf(v)})`);
}

/** A value's JSON kind, for messages that must not quote the value itself. */
export function kindOf(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'string':
      return v === '' ? 'an empty string' : 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'an object';
    default:
      return typeof v;
  }
}
