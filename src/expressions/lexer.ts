import { ExpressionError } from './errors.ts';

export type Kind = 'ident' | 'string' | 'number' | 'pipe' | 'colon' | 'comma' | 'lbracket' | 'rbracket' | 'close' | 'eof';

export const MAX_TOKEN_ID = 200;

/**
 * Tokenizer for the inside of one `{{ … }}` tag. It holds only the current token (in
 * mutable fields, so lexing allocates nothing but the strings it must produce); the parser
 * pulls tokens with `next()`, and in the two places the grammar is not a token stream
 * (a detokenize token id, a property name right after '.') reads characters directly.
 */
export class Lexer {
  readonly src: string;
  /** Just past the current token. */
  pos = 0;
  kind: Kind = 'eof';
  /** Where the current token starts. */
  start = 0;
  /** An identifier's name or a string's decoded content. */
  text = '';
  num = 0;

  constructor(src: string) {
    this.src = src;
  }

  /** A method, not a field read, so TypeScript does not carry a narrowed `kind` across `next()`. */
  is(kind: Kind): boolean {
    return this.kind === kind;
  }

  fail(detail: string, at: number): never {
    throw new ExpressionError(detail, this.src, at);
  }

  skipSpace(): void {
    const s = this.src;
    let i = this.pos;
    while (i < s.length && isSpace(s.charCodeAt(i))) i++;
    this.pos = i;
  }

  next(): void {
    this.skipSpace();
    const s = this.src;
    const i = this.pos;
    this.start = i;
    if (i >= s.length) {
      this.kind = 'eof';
      return;
    }
    const c = s.charCodeAt(i);
    switch (c) {
      case 124 /* | */:
        return this.punct('pipe');
      case 58 /* : */:
        return this.punct('colon');
      case 44 /* , */:
        return this.punct('comma');
      case 91 /* [ */:
        return this.punct('lbracket');
      case 93 /* ] */:
        return this.punct('rbracket');
      case 125 /* } */:
        if (s.charCodeAt(i + 1) === 125) {
          this.kind = 'close';
          this.pos = i + 2;
          return;
        }
        break;
      case 39 /* ' */:
      case 34 /* " */:
        return this.string(c);
      case 45 /* - */:
        if (isDigit(s.charCodeAt(i + 1))) return this.number();
        break;
      default:
        if (isDigit(c)) return this.number();
        if (isIdentStart(c)) {
          let j = i + 1;
          while (j < s.length && isIdentPart(s.charCodeAt(j))) j++;
          this.kind = 'ident';
          this.text = s.slice(i, j);
          this.pos = j;
          return;
        }
    }
    this.fail(`unexpected character ${showChar(s, i)}`, i);
  }

  /** Detokenize mode: `[A-Za-z0-9_.-]{1,200}` after optional whitespace; '' when there is none. */
  scanTokenId(): string {
    this.skipSpace();
    const s = this.src;
    const i = this.pos;
    let j = i;
    while (j < s.length && isTokenIdPart(s.charCodeAt(j))) j++;
    if (j - i > MAX_TOKEN_ID) this.fail(`token id longer than ${MAX_TOKEN_ID} characters`, i);
    this.start = i;
    this.pos = j;
    return s.slice(i, j);
  }

  /** A property name directly at `pos` (after a '.'): `[A-Za-z0-9_-]+`; '' when there is none. */
  scanName(): string {
    const s = this.src;
    const i = this.pos;
    let j = i;
    while (j < s.length && isIdentPart(s.charCodeAt(j))) j++;
    this.pos = j;
    return s.slice(i, j);
  }

  /** What the current token is, for "expected X, found Y" messages. */
  describe(): string {
    switch (this.kind) {
      case 'ident':
        return `"${this.text.length > 40 ? `${this.text.slice(0, 40)}…` : this.text}"`;
      case 'string':
        return 'a string';
      case 'number':
        return 'a number';
      case 'pipe':
        return "'|'";
      case 'colon':
        return "':'";
      case 'comma':
        return "','";
      case 'lbracket':
        return "'['";
      case 'rbracket':
        return "']'";
      case 'close':
        return "'}}'";
      case 'eof':
        return 'the end';
    }
  }

  private punct(kind: Kind): void {
    this.kind = kind;
    this.pos = this.start + 1;
  }

  private string(quote: number): void {
    const s = this.src;
    const start = this.start;
    let i = start + 1;
    let out = '';
    let run = i;
    for (;;) {
      if (i >= s.length) this.fail('unterminated string', start);
      const c = s.charCodeAt(i);
      if (c === quote) break;
      if (c !== 92 /* \ */) {
        i++;
        continue;
      }
      out += s.slice(run, i);
      const e = s.charCodeAt(i + 1);
      switch (e) {
        case 92:
        case 39:
        case 34:
        case 47:
          out += String.fromCharCode(e);
          break;
        case 110 /* n */:
          out += '\n';
          break;
        case 116 /* t */:
          out += '\t';
          break;
        case 114 /* r */:
          out += '\r';
          break;
        case 98 /* b */:
          out += '\b';
          break;
        case 102 /* f */:
          out += '\f';
          break;
        case 117 /* u */: {
          let code = 0;
          for (let k = 2; k < 6; k++) {
            const h = hexValue(s.charCodeAt(i + k));
            if (h < 0) this.fail("expected 4 hex digits after '\\u'", i);
            code = code * 16 + h;
          }
          out += String.fromCharCode(code);
          i += 4;
          break;
        }
        default:
          if (i + 1 >= s.length) this.fail('unterminated string', start);
          this.fail(`unknown escape '\\${s[i + 1]}' in string`, i);
      }
      i += 2;
      run = i;
    }
    this.kind = 'string';
    this.text = out + s.slice(run, i);
    this.pos = i + 1;
  }

  private number(): void {
    const s = this.src;
    let i = this.start;
    if (s.charCodeAt(i) === 45) i++;
    while (isDigit(s.charCodeAt(i))) i++;
    if (s.charCodeAt(i) === 46 /* . */ && isDigit(s.charCodeAt(i + 1))) {
      i += 2;
      while (isDigit(s.charCodeAt(i))) i++;
    }
    const e = s.charCodeAt(i);
    if (e === 101 || e === 69) {
      let j = i + 1;
      const sign = s.charCodeAt(j);
      if (sign === 43 || sign === 45) j++;
      if (isDigit(s.charCodeAt(j))) {
        while (isDigit(s.charCodeAt(j))) j++;
        i = j;
      }
    }
    if (i < s.length && (isIdentPart(s.charCodeAt(i)) || s.charCodeAt(i) === 46)) {
      this.fail(`unexpected character ${showChar(s, i)} in number`, i);
    }
    const n = Number(s.slice(this.start, i));
    if (!Number.isFinite(n)) this.fail('number out of range', this.start);
    this.kind = 'number';
    this.num = n;
    this.pos = i;
  }
}

/**
 * The language's whitespace: space, tab, LF and CR. Not Unicode's wider set (what
 * `String.prototype.trim` strips: no-break space, BOM, U+2028…), which is text.
 */
export function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isIdentStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
}

function isIdentPart(c: number): boolean {
  return isIdentStart(c) || isDigit(c) || c === 45;
}

function isTokenIdPart(c: number): boolean {
  return isIdentPart(c) || c === 46;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** A character of the source for a message: printable ASCII quoted, anything else as U+XXXX. */
export function showChar(s: string, i: number): string {
  const c = s.codePointAt(i) ?? 0;
  return c > 32 && c < 127 ? `'${String.fromCharCode(c)}'` : `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}
