import { createHmac, type KeyObject } from 'node:crypto';
import { aliasCard, cardBin, cardExp, cardMask, cardNumber, compileExpFormat, type ExpFormat } from './card.ts';
import { ArgError, FilterError } from './errors.ts';
import { compileJsonPath, JsonPathError, queryJsonPath, type JsonPath } from './jsonpath.ts';
import type { FilterDef, Param, Scope } from './params.ts';
import { aliasPreserveFormat, aliasPreserveLength } from './random.ts';
import { kindOf, last, pad, revealFirst, revealLast, toBoolean, toNumber } from './text.ts';
import { characterCount, stringForm } from './values.ts';

/** Longest string pad_left / pad_right may produce: a template must not allocate without bound. */
export const MAX_PAD = 100_000;

const MASK_CHAR: Param = { name: 'mask_char', type: 'char', default: 'X' };
const REVEAL_FIRST: Param = { name: 'reveal_first', type: 'integer', min: 0, default: 0 };
const REVEAL_LAST: Param = { name: 'reveal_last', type: 'integer', min: 0, default: 0 };

/**
 * A filter whose result depends only on the string form of a non-null value: null (and a
 * missing variable) passes through as null, as in Liquid.
 */
function onString(params: readonly Param[], fn: (s: string, args: readonly unknown[], scope: Scope) => unknown, prepare?: FilterDef['prepare']): FilterDef {
  return { params, prepare, apply: (v, args, _p, scope) => (v === null || v === undefined ? null : fn(stringForm(v), args, scope)) };
}

function onCardNumber(name: string, params: readonly Param[], fn: (s: string, args: readonly unknown[]) => unknown): FilterDef {
  return { params, apply: (v, args) => (v === null || v === undefined ? null : fn(cardNumber(v, name), args)) };
}

export const FILTERS: ReadonlyMap<string, FilterDef> = new Map<string, FilterDef>([
  [
    'json',
    {
      params: [{ name: 'path', type: 'string' }],
      prepare: (args) => {
        const path = args[0] as string;
        try {
          return compileJsonPath(path);
        } catch (err) {
          // The offset is a UTF-16 index into the path; the message counts characters, as every position does.
          if (err instanceof JsonPathError) throw new ArgError(0, `invalid JSON path in argument 1 of json: ${err.message} (offset ${characterCount(path.slice(0, err.offset))} of the path)`);
          throw err;
        }
      },
      // Null passes through, as in every filter: a wildcard path would otherwise make it [].
      apply: (v, _args, path) => (v === null || v === undefined ? null : queryJsonPath(path as JsonPath, v)),
    },
  ],
  ['json_stringify', { params: [], apply: (v) => JSON.stringify(v === undefined ? null : v) }],
  ['last4', { params: [], apply: (v) => (v === null || v === undefined ? null : last(primaryString(v), 4)) }],
  [
    'reveal',
    {
      params: [{ name: 'n', type: 'integer', min: 0, optional: true }, MASK_CHAR],
      apply: (v, [n, mask]) => (v === null || v === undefined || n === undefined ? (v ?? null) : revealFirst(stringForm(v), n as number, mask as string)),
    },
  ],
  ['reveal_last', onString([{ name: 'n', type: 'integer', min: 0 }, MASK_CHAR], (s, [n, mask]) => revealLast(s, n as number, mask as string))],
  ['card_bin', onCardNumber('card_bin', [], (s) => cardBin(s))],
  [
    'card_exp',
    {
      params: [{ name: 'format', type: 'string', default: 'MM/YY' }],
      prepare: (args) => compileExpFormat(args[0] as string),
      apply: (v, _args, format) => (v === null || v === undefined ? null : cardExp(v, format as ExpFormat)),
    },
  ],
  [
    'card_mask',
    onCardNumber(
      'card_mask',
      [{ name: 'reveal_last', type: 'boolean', default: true }, { name: 'reveal_first', type: 'boolean', default: false }, MASK_CHAR],
      (s, [keepLast, keepFirst, mask]) => cardMask(s, keepLast as boolean, keepFirst as boolean, mask as string),
    ),
  ],
  ['alias_card', onCardNumber('alias_card', [], (s) => aliasCard(s))],
  ['alias_preserve_format', onString([REVEAL_FIRST, REVEAL_LAST], (s, [first, lastN]) => aliasPreserveFormat(s, first as number, lastN as number))],
  ['alias_preserve_length', onString([REVEAL_FIRST, REVEAL_LAST], (s, [first, lastN]) => aliasPreserveLength(s, first as number, lastN as number))],
  ['pad_left', onString(padParams(), (s, [len, ch]) => pad(s, len as number, ch as string, true))],
  ['pad_right', onString(padParams(), (s, [len, ch]) => pad(s, len as number, ch as string, false))],
  ['to_string', { params: [], apply: (v) => stringForm(v) }],
  ['to_number', { params: [], apply: (v) => (v === null || v === undefined ? null : toNumber(v)) }],
  ['to_boolean', { params: [], apply: (v) => (v === null || v === undefined ? null : toBoolean(v)) }],
  ['to_base64', onString([], (s) => Buffer.from(s, 'utf8').toString('base64'))],
  ['to_base16', onString([], (s) => Buffer.from(s, 'utf8').toString('hex'))],
  [
    'hmac',
    onString(
      [
        { name: 'key_name', type: 'string' },
        { name: 'algorithm', type: 'string', oneOf: ['sha256', 'sha512'], default: 'sha256' },
      ],
      (s, [name, alg], scope) => hmac(s, name as string, alg as string, scope),
    ),
  ],
]);

/**
 * The string a "last 4" is taken of: card data reads as its `number`, bank data as its
 * `account_number`; another object or an array has no meaningful last 4 and is an error.
 */
function primaryString(v: unknown): string {
  if (v === null || typeof v !== 'object') return stringForm(v);
  if (!Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    for (const key of ['number', 'account_number']) {
      const x = Object.hasOwn(o, key) ? o[key] : undefined;
      if (typeof x === 'string' || typeof x === 'number') return String(x);
    }
  }
  throw new FilterError(`last4 expects a string, a number, or card or bank data (got ${kindOf(v)})`);
}

function padParams(): Param[] {
  return [
    { name: 'length', type: 'integer', min: 0, max: MAX_PAD },
    { name: 'char', type: 'char', default: ' ' },
  ];
}

function hmac(s: string, name: string, alg: string, scope: Scope): string {
  if (!scope.hmacKey) throw new FilterError('hmac is not available here (no HMAC keys)');
  // The key provider is the caller's: whatever it throws (an unknown key, say) reaches the caller unchanged.
  const key: KeyObject | undefined = scope.hmacKey(name);
  if (!key) throw new FilterError("hmac: unknown key");
  try {
    return createHmac(alg, key).update(s, 'utf8').digest('hex');
  } catch {
    throw new FilterError("hmac: the key cannot be used for HMAC");
  }
}
