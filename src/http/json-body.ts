import secureJson from 'secure-json-parse';
import { ApiError, FieldErrorList } from './errors.ts';

/**
 * Request bodies nested deeper than this are refused when parsed. JSON.parse copes with any
 * depth, but much that reads a body afterwards recurses (the idempotency fingerprint, merge
 * patches, tokenize and detokenize walks, validators): a deeper body would overflow the
 * stack there and answer 500. Detokenization has the same limit.
 */
export const MAX_BODY_DEPTH = 128;

const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';

/**
 * JSON request bodies: `__proto__` and `constructor.prototype` refused, depth bounded, and no
 * U+0000 in any string or key (see refuseNul). Every failure is a 400 naming the field.
 */
export function parseJsonBody(text: string): unknown {
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch {
    throw ApiError.field('body', 'The body is not valid JSON.');
  }
  assertDepth(value);
  // JSON carries U+0000 only escaped: without the escape in the text, no string holds one.
  if (text.includes('\\u0000')) refuseNul(value, 'body');
  return value;
}

/** Iterative, so that checking a deep value cannot overflow the stack itself. */
function assertDepth(value: unknown): void {
  if (value === null || typeof value !== 'object') return;
  const stack: [object, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth === MAX_BODY_DEPTH) throw ApiError.field('body', `is nested too deeply: at most ${MAX_BODY_DEPTH} levels of arrays and objects`);
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
}

/**
 * PostgreSQL text and jsonb cannot hold U+0000: a value carrying one would fail the query
 * wherever it lands (500). Input from callers (bodies, query strings, path parameters) and
 * from user code (reactor and transform results) is refused with the fields that hold it.
 */
export function refuseNul(value: unknown, at: string): void {
  const errors = new FieldErrorList();
  const stack: [unknown, string][] = [[value, at]];
  while (stack.length > 0 && !errors.full) {
    const [node, path] = stack.pop()!;
    if (typeof node === 'string') {
      if (node.includes('\u0000')) errors.add(path, NUL_MESSAGE);
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], `${path}[${i}]`]);
    } else if (node !== null && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        if (k.includes('\u0000')) errors.add(`${path}.${k}`, NUL_MESSAGE);
        stack.push([v, `${path}.${k}`]);
      }
    }
  }
  errors.throwIfAny();
}
