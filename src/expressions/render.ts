import type { Arg, FilterCall, Mode, Output, Path, Subject, Template } from './ast.ts';
import { ArgError, ExpressionError, FilterError } from './errors.ts';
import { type Scope, resolveArgs } from './params.ts';
import { argError, parseTemplate } from './parser.ts';
import { child, stringForm } from './values.ts';

/**
 * A template that is exactly one tag (ignoring surrounding whitespace) renders to the raw
 * value, keeping its JSON type; anything else to a string with every tag's value
 * interpolated (null → '', objects and arrays as JSON). Values from the scope are returned
 * as they are, not copied.
 */
export function render(t: Template, scope: Scope): unknown {
  const growth = scope.growth ?? { left: MAX_GROWTH };
  if (t.single !== null) return output(t, t.single, scope, growth) ?? null;
  let out = '';
  for (const p of t.parts) out += typeof p === 'string' ? p : stringForm(output(t, p, scope, growth));
  return out;
}

/**
 * The most characters filters may add to the text they are given, over a render (or every
 * render sharing `scope.growth`). Encoding, escaping, padding and multi-unit mask characters
 * lengthen text, and chained they multiply it: twenty-odd `| to_base16` would build gigabytes
 * from one character. A filter that shortens text or turns an object into text adds nothing:
 * what is linear in the data the request already holds is not limited here.
 */
export const MAX_GROWTH = 4_194_304;

// Parsed templates are immutable, and the same few come back again and again: each token
// type's mask and fingerprint on every write, the expressions of the tokens a caller
// detokenizes repeatedly. Parse each once. Bounded, oldest out; a source longer than
// MAX_CACHED_SOURCE is parsed every time, so the two caches (one per mode) hold at most
// 2 × MAX_PARSED × MAX_CACHED_SOURCE characters. Keyed by the source itself: a key made of
// mode and source would be a new string to build and hash on every lookup.
const parsed: Record<Mode, Map<string, Template>> = { template: new Map(), detokenize: new Map() };
const MAX_PARSED = 500;
const MAX_CACHED_SOURCE = 2000;

/** parseTemplate, from the cache when the same source was parsed in the same mode before. */
export function parsedTemplate(source: string, mode: Mode): Template {
  const cache = parsed[mode];
  if (typeof source !== 'string' || source.length > MAX_CACHED_SOURCE || cache === undefined) return parseTemplate(source, mode);
  let template = cache.get(source);
  if (template === undefined) {
    template = parseTemplate(source, mode);
    if (cache.size >= MAX_PARSED) cache.delete(cache.keys().next().value!);
    cache.set(source, template);
  }
  return template;
}

export function evaluate(source: string, mode: Mode, scope: Scope): unknown {
  return render(parsedTemplate(source, mode), scope);
}

function output(t: Template, o: Output, scope: Scope, growth: { left: number }): unknown {
  let v = subject(t, o.subject, scope);
  for (const f of o.filters) v = applyFilter(t, f, v, scope, growth);
  scope.onOutput?.(v);
  return v;
}

function subject(t: Template, s: Subject, scope: Scope): unknown {
  switch (s.kind) {
    case 'literal':
      return s.value;
    case 'path':
      return lookup(s, scope);
    case 'token': {
      const entry = scope.tokens?.get(s.id);
      if (entry === undefined) throw new ExpressionError(`unknown token "${s.id}"`, t.source, s.pos);
      return s.form === 'data' ? entry.data : entry.token;
    }
  }
}

/** Unknown variables and missing properties are null, as in Liquid. */
function lookup(p: Path, scope: Scope): unknown {
  const vars = scope.variables;
  if (vars === undefined || !Object.hasOwn(vars, p.root)) return null;
  let v: unknown = vars[p.root] ?? null;
  for (const seg of p.segments) {
    v = child(v, seg);
    if (v === null) return null;
  }
  return v;
}

function applyFilter(t: Template, f: FilterCall, v: unknown, scope: Scope, growth: { left: number }): unknown {
  let args = f.resolved;
  let prepared = f.prepared;
  if (args === null) {
    try {
      args = resolveArgs(f.name, f.def.params, f.args.map((a) => argValue(a, scope)));
      prepared = f.def.prepare ? f.def.prepare(args) : undefined;
    } catch (err) {
      if (err instanceof ArgError) throw argError(t.source, err, f.args, f.pos);
      throw err;
    }
  }
  let out: unknown;
  try {
    out = f.def.apply(v, args, prepared, scope);
  } catch (err) {
    if (err instanceof FilterError) throw new ExpressionError(err.message, t.source, f.pos);
    throw err;
  }
  if (typeof out === 'string' && !textAtLeast(v, out.length)) {
    const added = out.length - textLength(v);
    if (added > 0 && (growth.left -= added) < 0) {
      throw new ExpressionError(`${f.name} makes the value too long: filters may add at most ${MAX_GROWTH} characters in all`, t.source, f.pos);
    }
  }
  return out;
}

/**
 * The length of the text a filter starts from: an object or array reads as its JSON, so
 * making text of one adds nothing, while padding or encoding that text adds what it adds.
 */
function textLength(v: unknown): number {
  return typeof v === 'string' ? v.length : stringForm(v).length;
}

/**
 * Whether textLength(v) is at least `n`, found without writing v's JSON when a part of it is
 * long enough: a filter that takes one field of a token's data would otherwise have the whole
 * data stringified, at every expression, only to learn that it added nothing.
 */
function textAtLeast(v: unknown, n: number): boolean {
  if (typeof v === 'string') return v.length >= n;
  if (v === null || typeof v !== 'object') return false;
  const budget = { left: n };
  return jsonAtLeast(v, budget, 0);
}

/**
 * Counts down `budget.left` by a lower bound of the characters v's JSON takes (each string's
 * quotes and characters, each key's quotes and colon, brackets) and answers true once it is
 * used up; false when v's JSON may be shorter, or when v is not plain JSON data (a value
 * with toJSON, one JSON leaves out) or too deep to look into, to be measured exactly.
 */
function jsonAtLeast(v: unknown, budget: { left: number }, depth: number): boolean {
  switch (typeof v) {
    case 'string':
      return (budget.left -= v.length + 2) <= 0;
    case 'number':
    case 'boolean':
      return (budget.left -= 1) <= 0;
    case 'object': {
      if (v === null) return (budget.left -= 4) <= 0;
      if (depth > 32 || typeof (v as { toJSON?: unknown }).toJSON === 'function') return false;
      if ((budget.left -= 2) <= 0) return true;
      if (Array.isArray(v)) {
        for (const item of v) if (item !== undefined && jsonAtLeast(item, budget, depth + 1)) return true;
        return false;
      }
      for (const key of Object.keys(v)) {
        const value = (v as Record<string, unknown>)[key];
        if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return false;
        if ((budget.left -= key.length + 3) <= 0 || jsonAtLeast(value, budget, depth + 1)) return true;
      }
      return false;
    }
    default:
      return false;
  }
}

function argValue(a: Arg, scope: Scope): unknown {
  return a.kind === 'literal' ? a.value : lookup(a, scope);
}
