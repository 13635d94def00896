import type { Arg, FilterCall, Literal, Mode, Output, Part, Path, Subject, Template, TokenReference } from './ast.ts';
import { ArgError, ExpressionError } from './errors.ts';
import { FILTERS } from './filters.ts';
import { isSpace, Lexer } from './lexer.ts';
import { resolveArgs } from './params.ts';
import { characterCount } from './values.ts';

export const MAX_SOURCE = 100_000;

/**
 * Parses literal text with `{{ … }}` output tags. Grammar of a tag:
 *
 *   tag     = '{{' subject ( '|' filter )* '}}'
 *   subject = path | literal                       (template mode)
 *           | id | 'token' ':' id                  (detokenize mode; id = [A-Za-z0-9_.-]{1,200})
 *   filter  = name ( ':' arg ( ',' arg )* )?
 *   arg     = literal | path                       (paths only in template mode)
 *   path    = ident ( '.' name | '[' ( string | integer ) ']' )*
 *   literal = string | number | 'true' | 'false' | 'null' | 'nil'
 */
export function parseTemplate(source: string, mode: Mode): Template {
  if (typeof source !== 'string') throw new ExpressionError(`an expression must be a string, not ${source === null ? 'null' : typeof source}`, '', 0);
  if (mode !== 'template' && mode !== 'detokenize') throw new ExpressionError(`unknown expression mode "${typeof mode === 'string' ? mode : typeof mode}"`, source, 0);
  // Characters, as documented: counted only when the UTF-16 length could be over the limit.
  const characters = source.length > MAX_SOURCE ? characterCount(source) : source.length;
  if (characters > MAX_SOURCE) throw new ExpressionError(`expression too long: ${characters} characters (at most ${MAX_SOURCE})`, source, 0);
  const parts: Part[] = [];
  const references: TokenReference[] = [];
  const lx = new Lexer(source);
  let outputs = 0;
  let blankText = true;
  let i = 0;
  while (i < source.length) {
    const open = source.indexOf('{{', i);
    const end = open < 0 ? source.length : open;
    if (end > i) {
      const text = source.slice(i, end);
      parts.push(text);
      if (blankText && !isBlank(text)) blankText = false;
    }
    if (open < 0) break;
    lx.pos = open + 2;
    const out = parseOutput(lx, mode, open);
    if (out.subject.kind === 'token') references.push({ id: out.subject.id, form: out.subject.form });
    parts.push(out);
    outputs++;
    i = lx.pos;
  }
  let single: Output | null = null;
  if (outputs === 1 && blankText) for (const p of parts) if (typeof p !== 'string') single = p;
  return { mode, source, parts, single, references };
}

/** `lx.pos` is just past '{{'; on return it is just past '}}'. */
function parseOutput(lx: Lexer, mode: Mode, open: number): Output {
  const subject = mode === 'detokenize' ? parseTokenSubject(lx, open) : parseTemplateSubject(lx, open);
  const filters: FilterCall[] = [];
  for (;;) {
    // The current token is the one after the subject or after the last filter.
    if (lx.is('close')) break;
    if (lx.is('eof')) unterminated(lx, open);
    if (!lx.is('pipe')) lx.fail(`expected '|' or '}}', found ${lx.describe()}`, lx.start);
    filters.push(parseFilter(lx, mode, open));
  }
  return { subject, filters, pos: open };
}

function parseTokenSubject(lx: Lexer, open: number): Subject {
  let id = lx.scanTokenId();
  let pos = lx.start;
  let form: 'data' | 'token' = 'data';
  if (id === 'token') {
    const after = lx.pos;
    lx.skipSpace();
    if (lx.src.charCodeAt(lx.pos) === 58 /* : */) {
      lx.pos++;
      form = 'token';
      id = lx.scanTokenId();
      pos = lx.start;
    } else {
      lx.pos = after;
    }
  }
  if (id === '') {
    lx.next();
    if (lx.is('eof')) unterminated(lx, open);
    lx.fail(`expected a token id, found ${lx.describe()}`, lx.start);
  }
  lx.next();
  return { kind: 'token', id, form, pos };
}

function parseTemplateSubject(lx: Lexer, open: number): Subject {
  lx.next();
  if (lx.is('eof')) unterminated(lx, open);
  const v = parseValue(lx, 'template');
  if (v === null) lx.fail(`expected a variable or a literal, found ${lx.describe()}`, lx.start);
  return v;
}

/** A literal or (template mode) a path starting at the current token; on success moves past it. Null when the token starts neither. */
function parseValue(lx: Lexer, mode: Mode): Arg | null {
  const pos = lx.start;
  switch (lx.kind) {
    case 'string': {
      const value = lx.text;
      lx.next();
      return literal(value, pos);
    }
    case 'number': {
      const value = lx.num;
      lx.next();
      return literal(value, pos);
    }
    case 'ident': {
      const name = lx.text;
      if (name === 'true' || name === 'false' || name === 'null' || name === 'nil') {
        lx.next();
        return literal(name === 'true' ? true : name === 'false' ? false : null, pos);
      }
      if (mode !== 'template') return null;
      return parsePath(lx, name, pos);
    }
    default:
      return null;
  }
}

/** `lx.pos` is just past the root identifier. Segments follow without whitespace before them. */
function parsePath(lx: Lexer, root: string, pos: number): Path {
  const segments: (string | number)[] = [];
  const s = lx.src;
  for (;;) {
    const c = s.charCodeAt(lx.pos);
    if (c === 46 /* . */) {
      lx.pos++;
      const name = lx.scanName();
      if (name === '') lx.fail("expected a property name after '.'", lx.pos);
      segments.push(name);
    } else if (c === 91 /* [ */) {
      lx.pos++;
      lx.next();
      if (lx.is('string')) segments.push(lx.text);
      else if (lx.is('number') && Number.isSafeInteger(lx.num)) segments.push(lx.num);
      else if (lx.is('eof')) lx.fail("expected ']'", lx.start);
      else lx.fail(`expected an integer or a quoted name inside '[ ]', found ${lx.describe()}`, lx.start);
      lx.next();
      if (!lx.is('rbracket')) lx.fail(`expected ']', found ${lx.describe()}`, lx.start);
    } else {
      break;
    }
  }
  lx.next();
  return { kind: 'path', root, segments, pos };
}

/** The current token is '|'. Leaves the lexer on the token after the filter. */
function parseFilter(lx: Lexer, mode: Mode, open: number): FilterCall {
  lx.next();
  if (lx.is('eof')) unterminated(lx, open);
  if (!lx.is('ident')) lx.fail(`expected a filter name after '|', found ${lx.describe()}`, lx.start);
  const name = lx.text;
  const pos = lx.start;
  const def = FILTERS.get(name);
  if (!def) lx.fail(`unknown filter "${name.length > 40 ? `${name.slice(0, 40)}…` : name}"`, pos);
  lx.next();
  if (!lx.is('colon') && !lx.is('pipe') && !lx.is('close') && !lx.is('eof')) {
    lx.fail(`expected ':', '|' or '}}' after ${name}, found ${lx.describe()}`, lx.start);
  }
  const args: Arg[] = [];
  if (lx.is('colon')) {
    for (;;) {
      lx.next();
      if (lx.is('eof')) unterminated(lx, open);
      const arg = parseValue(lx, mode);
      if (arg === null) {
        const what = mode === 'template' ? 'a literal or a variable' : "a literal (a quoted string, a number, true, false or null)";
        lx.fail(`expected ${what} as argument ${args.length + 1} of ${name}, found ${lx.describe()}`, lx.start);
      }
      args.push(arg);
      if (!lx.is('comma')) break;
    }
  }
  let resolved: unknown[] | null = null;
  let prepared: unknown;
  if (args.every((a) => a.kind === 'literal')) {
    try {
      resolved = resolveArgs(name, def.params, args.map((a) => (a as Literal).value));
      prepared = def.prepare ? def.prepare(resolved) : undefined;
    } catch (err) {
      if (err instanceof ArgError) throw argError(lx.src, err, args, pos);
      throw err;
    }
  }
  return { name, def, args, resolved, prepared, pos };
}

export function argError(source: string, err: ArgError, args: readonly Arg[], filterPos: number): ExpressionError {
  const at = err.index >= 0 && err.index < args.length ? args[err.index].pos : filterPos;
  return new ExpressionError(err.message, source, at);
}

/**
 * Whether text around the tags is only whitespace, so a lone tag keeps its value's type. Only
 * the language's own whitespace counts: with `trim()`, a no-break space or BOM around a tag
 * would be dropped from the result along with the text's string type.
 */
function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (!isSpace(text.charCodeAt(i))) return false;
  return true;
}

function literal(value: unknown, pos: number): Literal {
  return { kind: 'literal', value, pos };
}

function unterminated(lx: Lexer, open: number): never {
  lx.fail("unterminated '{{'", open);
}
