/**
 * Field paths name where in a request a problem lies: `body.rules[0].priority`, `query.start`.
 * They are written in JavaScript's own notation so that every path reads back to one place:
 * an array index is `[0]`, a key that is a plain name is `.name`, and any other key is a JSON
 * string in brackets: `body["a.b"]` (one key holding a dot, not `a` → `b`), `body[""]`,
 * `body["123"]` (a key made of digits, not an index). Every path built from keys or indexes
 * goes through childPath; a fixed plain name may be written on directly (`${at}.data`).
 */

/**
 * Keys printed as `.name`: ASCII letters, digits, `_`, `$` and `-`, not starting with a digit
 * or `-`. The `-` goes beyond JavaScript's identifiers so that header names stay as they read
 * (`headers.svc-idempotency-key`); it cannot be taken for `.` or `[`.
 */
const PLAIN_NAME = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/**
 * Keys longer than this (in characters) are cut and end in `…` inside the quotes: a request
 * may hold a key of nearly a megabyte, and a problem must not echo it back several times. Every
 * key a token's metadata may hold (up to 100 characters) is still shown whole.
 */
export const MAX_KEY_CHARACTERS = 100;

/** The path of what `key` names inside the field at `path`: a number is an array index, a string an object key. */
export function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  const shown = truncated(key, MAX_KEY_CHARACTERS);
  return shown === key && PLAIN_NAME.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(shown)}]`;
}

/**
 * Where a node of a JSON value sits, for walks that name a field only when it is in error:
 * its parent's place and its key there (undefined: the root). Cheaper to keep per node than
 * the path's text, which placePath builds when it is needed.
 */
export type Place = { up: Place | undefined; key: string | number };

/** The field path of `place` under `root`: `root.key[0].other`. */
export function placePath(root: string, place: Place | undefined): string {
  const keys: (string | number)[] = [];
  for (let p = place; p; p = p.up) keys.push(p.key);
  let path = root;
  for (let i = keys.length - 1; i >= 0; i--) path = childPath(path, keys[i]);
  return path;
}

/** `text` cut to `max` characters (code points, so never half an emoji) and `…`, or as it is when short enough. */
export function truncated(text: string, max: number): string {
  // Most keys are short: only a string of more UTF-16 units than `max` can have more characters.
  if (text.length <= max) return text;
  let kept = 0;
  let end = 0;
  for (const character of text) {
    if (kept === max) return `${text.slice(0, end)}…`;
    kept++;
    end += character.length;
  }
  return text;
}

/**
 * The field path of a JSON pointer (RFC 6901: `/rules/0/priority`, as Ajv's instancePath) into
 * `data`, the value it points into. A pointer alone cannot tell an array index from an object
 * key made of digits (`/items/0` and `/metadata/0` look alike), so the data is walked along:
 * a segment is an index where the value there is an array. Where the data is not at hand, or
 * stops short of the pointer, a segment of digits is taken for an index, which names a key
 * made of digits wrongly: callers pass the data whenever they have it (Ajv's own errors carry
 * no data unless it runs `verbose`, and then only the failing value, not what holds it).
 */
export function pointerPath(root: string, pointer: string, data?: unknown): string {
  if (pointer === '') return root;
  let path = root;
  let node = data;
  for (const escaped of pointer.slice(1).split('/')) {
    const key = escaped.replace(/~1/g, '/').replace(/~0/g, '~');
    const index = Array.isArray(node) ? /^\d+$/.test(key) : !isObject(node) && ARRAY_INDEX.test(key);
    path = childPath(path, index ? Number(key) : key);
    node = node !== null && typeof node === 'object' ? ownMember(node, key) : undefined;
  }
  return path;
}

/** An index as a pointer writes it: no leading zeros, and short of any array's length limit. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,8})$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Own members only: a key such as `constructor` must not lead the walk into a prototype. */
function ownMember(node: object, key: string): unknown {
  return Object.hasOwn(node, key) ? (node as Record<string, unknown>)[key] : undefined;
}
