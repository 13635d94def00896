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
  if (t.single !== null) return output(t, t.single, scope) ?? null;
  let out = '';
  for (const p of t.parts) out += typeof p === 'string' ? p : stringForm(output(t, p, scope));
  return out;
}

// Parsed templates are immutable, and the same few (each token type's mask and fingerprint,
// a proxy's or token's own) are evaluated on every write: parse each once. Bounded, oldest out.
const parsed = new Map<string, Template>();
const MAX_PARSED = 1000;

export function evaluate(source: string, mode: Mode, scope: Scope): unknown {
  const key = `${mode}:${source}`;
  let template = parsed.get(key);
  if (template === undefined) {
    template = parseTemplate(source, mode);
    if (parsed.size >= MAX_PARSED) parsed.delete(parsed.keys().next().value!);
    parsed.set(key, template);
  }
  return render(template, scope);
}

function output(t: Template, o: Output, scope: Scope): unknown {
  let v = subject(t, o.subject, scope);
  for (const f of o.filters) v = applyFilter(t, f, v, scope);
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

function applyFilter(t: Template, f: FilterCall, v: unknown, scope: Scope): unknown {
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
  try {
    return f.def.apply(v, args, prepared, scope);
  } catch (err) {
    if (err instanceof FilterError) throw new ExpressionError(err.message, t.source, f.pos);
    throw err;
  }
}

function argValue(a: Arg, scope: Scope): unknown {
  return a.kind === 'literal' ? a.value : lookup(a, scope);
}
