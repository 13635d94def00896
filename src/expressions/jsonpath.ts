import { child } from './values.ts';

/** One step of a compiled path: a property name, an array index (negative counts from the end), or `*`. */
type Step = string | number | typeof WILD;

const WILD: unique symbol = Symbol('*');

export type JsonPath = { readonly steps: readonly Step[]; readonly multiple: boolean };

export class JsonPathError extends Error {
  /** UTF-16 index into the path. */
  readonly offset: number;
  constructor(message: string, offset: number) {
    super(message);
    this.offset = offset;
  }
}

/**
 * Compiles the JSONPath subset `$`, `.name`, `.*`, `['name']`, `["name"]`, `[n]`, `[*]`.
 * Throws JsonPathError naming the offset within the path.
 */
export function compileJsonPath(path: string): JsonPath {
  if (path.charCodeAt(0) !== 36 /* $ */) throw new JsonPathError("a JSON path starts with '$'", 0);
  const steps: Step[] = [];
  let multiple = false;
  let i = 1;
  const n = path.length;
  while (i < n) {
    const c = path.charCodeAt(i);
    if (c === 46 /* . */) {
      i++;
      if (path.charCodeAt(i) === 46) throw new JsonPathError("recursive descent '..' is not supported", i - 1);
      if (path.charCodeAt(i) === 42 /* * */) {
        steps.push(WILD);
        multiple = true;
        i++;
        continue;
      }
      const start = i;
      while (i < n && isNameChar(path.charCodeAt(i))) i++;
      if (i === start) throw new JsonPathError("expected a property name after '.'", start);
      steps.push(path.slice(start, i));
    } else if (c === 91 /* [ */) {
      i = skipSpace(path, i + 1);
      const d = path.charCodeAt(i);
      if (d === 42) {
        steps.push(WILD);
        multiple = true;
        i++;
      } else if (d === 39 || d === 34) {
        const start = i;
        let name = '';
        i++;
        for (;;) {
          if (i >= n) throw new JsonPathError('unterminated quoted name', start);
          const e = path.charCodeAt(i);
          if (e === d) break;
          if (e === 92 /* \ */ && i + 1 < n) {
            name += path[i + 1];
            i += 2;
          } else {
            name += path[i];
            i++;
          }
        }
        i++;
        steps.push(name);
      } else if ((d >= 48 && d <= 57) || d === 45) {
        const start = i;
        if (d === 45) i++;
        const digits = i;
        while (i < n && path.charCodeAt(i) >= 48 && path.charCodeAt(i) <= 57) i++;
        if (i === digits || i - digits > 15) throw new JsonPathError('expected an array index', start);
        steps.push(Number(path.slice(start, i)));
      } else {
        throw new JsonPathError("expected an index, '*' or a quoted name after '['", i);
      }
      i = skipSpace(path, i);
      if (path.charCodeAt(i) !== 93 /* ] */) throw new JsonPathError("expected ']'", i);
      i++;
    } else {
      throw new JsonPathError("expected '.' or '['", i);
    }
  }
  return { steps, multiple };
}

/** The value at the path, null when absent; an array of every match when the path has a `*`. */
export function queryJsonPath(p: JsonPath, root: unknown): unknown {
  if (!p.multiple) {
    let v: unknown = root ?? null;
    for (const s of p.steps) {
      v = child(v, s as string | number);
      if (v === null) return null;
    }
    return v;
  }
  let current: unknown[] = [root ?? null];
  for (const s of p.steps) {
    const nextValues: unknown[] = [];
    for (const v of current) {
      if (s === WILD) {
        if (Array.isArray(v)) {
          for (const x of v) nextValues.push(x ?? null);
        } else if (v !== null && typeof v === 'object') {
          for (const k of Object.keys(v)) nextValues.push((v as Record<string, unknown>)[k] ?? null);
        }
      } else if (v !== null && typeof v === 'object') {
        const key = s as string | number;
        if (has(v, key)) nextValues.push(child(v, key));
      }
    }
    current = nextValues;
  }
  return current;
}

/** Whether the step finds something, so `[*].b` skips elements without `b` (but keeps a present null). */
function has(v: object, key: string | number): boolean {
  if (Array.isArray(v)) {
    if (typeof key === 'number') return key < 0 ? -key <= v.length : key < v.length;
    const i = Number(key);
    return key !== '' && String(i) === key && Number.isInteger(i) && i >= 0 && i < v.length;
  }
  return Object.hasOwn(v, typeof key === 'number' ? String(key) : key);
}

function isNameChar(c: number): boolean {
  return c !== 46 && c !== 91 && c !== 93 && c !== 32 && c !== 9 && c !== 10 && c !== 13 && c !== 39 && c !== 34 && c !== 42;
}

function skipSpace(s: string, i: number): number {
  while (s.charCodeAt(i) === 32) i++;
  return i;
}
