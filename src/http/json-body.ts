import secureJson from 'secure-json-parse';
import { ApiError, FieldErrorList } from './errors.ts';
import { placePath, type Place } from './field-path.ts';

/**
 * Request bodies nested deeper than this are refused when parsed. JSON.parse copes with any
 * depth, but much that reads a body afterwards recurses (the idempotency fingerprint, merge
 * patches, tokenize and detokenize walks, validators): a deeper body would overflow the
 * stack there and answer 500. Detokenization has the same limit.
 */
export const MAX_BODY_DEPTH = 128;

/** The largest request body, in bytes (createServer's default limit). */
export const MAX_BODY_BYTES = 1_048_576;

const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';
const SURROGATE_MESSAGE = 'must be valid Unicode: it holds an unpaired surrogate';

/**
 * JSON request bodies: `__proto__` and `constructor.prototype` refused, depth bounded, and no
 * text PostgreSQL cannot store (see refuseUnstorable). Every failure is a 400 naming the field.
 */
export function parseJsonBody(text: string): unknown {
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    throw ApiError.field('body', unparsable(err));
  }
  assertDepth(value);
  // JSON carries U+0000 and lone surrogates only escaped: without such an escape in the text, no string holds one.
  if (/\\u(?:0000|d[89a-f])/i.test(text)) refuseUnstorable(value, 'body');
  // Only a number of 16 digits or more, or with a three-digit exponent, can be one JSON.parse
  // rounds or overflows. Either must start where a value can (a card number in a string,
  // after a quote, does not count, nor a token id's "…-9e512…", which a quarter of them hold).
  if (/(?:^|[:,[])\s*-?(?:\d{16}|\d+(?:\.\d+)?[eE][+-]?\d{3})/.test(text)) refuseInexactNumbers(text);
  return value;
}

const INEXACT_MESSAGE = 'is a number that cannot be held exactly (an integer beyond ±2^53, or out of range): send it as a string';

/**
 * A number JSON.parse would change is refused, naming its field, rather than stored or echoed
 * changed: 12345678901234567890 would become 12345678901234567000 and 1e400 Infinity (null
 * once written back as JSON). A decimal fraction rounds as JSON's numbers always do.
 */
function refuseInexactNumbers(text: string): void {
  const INEXACT = {};
  const changed = (v: number, source: string) =>
    !Number.isFinite(v) || (!Number.isSafeInteger(v) && /^-?\d+$/.test(source) && BigInt(source) !== BigInt(v));
  const reviver = (_key: string, v: unknown, context?: { source?: string }) =>
    typeof v === 'number' && context?.source !== undefined && changed(v, context.source) ? INEXACT : v;
  const value: unknown = JSON.parse(text, reviver as (key: string, value: unknown) => unknown);
  const errors = new FieldErrorList();
  walk(value, errors, (node, where) => {
    if (node === INEXACT) errors.add(placePath('body', where), INEXACT_MESSAGE);
  });
  errors.throwIfAny();
}

/**
 * Why a body did not parse, with where when the parser says so. Only the position is taken
 * from the parser's message, which may quote the text itself (a card number, say).
 */
function unparsable(err: unknown): string {
  const message = err instanceof Error ? err.message : '';
  if (/forbidden (prototype|constructor) property/.test(message)) {
    return 'The body holds a "__proto__" key, or a "constructor" object with a "prototype" key: Coffer refuses these keys anywhere in a body, since they could change what objects inherit.';
  }
  const where = /\(line (\d+) column (\d+)\)/.exec(message);
  if (where) return `The body is not valid JSON: unexpected text at line ${where[1]}, column ${where[2]}.`;
  if (message.includes('Unexpected end of JSON input')) return 'The body is not valid JSON: it ends before its value is complete.';
  return 'The body is not valid JSON.';
}

/** Also for bodies parsed elsewhere (proxies). */
export function assertDepth(value: unknown): void {
  if (nestsDeeperThan(value, MAX_BODY_DEPTH)) throw ApiError.field('body', `is nested too deeply: at most ${MAX_BODY_DEPTH} levels of arrays and objects`);
}

/** Iterative, so that checking a deep value cannot overflow the stack itself. */
export function nestsDeeperThan(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: [object, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth === levels) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * PostgreSQL text and jsonb cannot hold U+0000, and jsonb refuses unpaired surrogates (\ud800):
 * a value carrying either would fail the query wherever it lands (500). Input from callers
 * (bodies, query strings, path parameters) and from user code (reactor results, SDK calls) is
 * refused with the fields that hold it.
 */
export function refuseUnstorable(value: unknown, at: string): void {
  const errors = new FieldErrorList();
  // Each node knows its parent and key; the path text is built only for a field in error, as
  // nearly every value is storable.
  const checkText = (s: string, where: Place | undefined) => {
    if (s.includes('\u0000')) errors.add(placePath(at, where), NUL_MESSAGE);
    if (!s.isWellFormed()) errors.add(placePath(at, where), SURROGATE_MESSAGE);
  };
  walk(
    value,
    errors,
    (node, where) => {
      if (typeof node === 'string') checkText(node, where);
    },
    checkText,
  );
  errors.throwIfAny();
}

/**
 * Every node of a JSON value, depth first, each with where it sits, and each object key as its
 * parent is reached (`onKey`); until `errors` is full. Iterative, so that a deep value
 * cannot overflow the stack.
 */
function walk(
  value: unknown,
  errors: FieldErrorList,
  onNode: (node: unknown, where: Place | undefined) => void,
  onKey?: (key: string, where: Place) => void,
): void {
  const stack: [unknown, Place | undefined][] = [[value, undefined]];
  while (stack.length > 0 && !errors.full) {
    const [node, where] = stack.pop()!;
    onNode(node, where);
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], { up: where, key: i }]);
    } else if (node !== null && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        const child = { up: where, key: k };
        onKey?.(k, child);
        stack.push([v, child]);
      }
    }
  }
}
