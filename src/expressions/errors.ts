import { characterCount } from './values.ts';

/**
 * Every failure of parsing or rendering an expression is an ExpressionError. Messages name
 * what is wrong and the 0-based offset in the source; they quote source fragments (filter
 * names, token ids) but never a value the expression evaluated, since that is token data.
 */
export class ExpressionError extends Error {
  /** The whole source string the error is about. */
  readonly expression: string;
  /** 0-based offset into `expression` in characters (code points), as in the message. */
  readonly position: number;
  /**
   * The `{{ … }}` tag the error is in, to name it in a message: detokenized strings hold text
   * around their tags, which is the caller's and not the expression. The whole source when
   * the error is in no tag; cut at TAG_SHOWN characters.
   */
  readonly tag: string;

  /** `index` is a UTF-16 index into `expression`, as the lexer and parser keep them. */
  constructor(detail: string, expression: string, index: number) {
    // Converted here, once, so the documented character offset holds for every error: a
    // code-unit index would count each character outside the BMP ('💳') twice.
    const position = characterCount(expression.slice(0, index));
    super(`${detail} at ${position}`);
    this.name = 'ExpressionError';
    this.expression = expression;
    this.position = position;
    this.tag = tagAround(expression, index);
  }
}

const TAG_SHOWN = 200;

function tagAround(source: string, index: number): string {
  const open = source.lastIndexOf('{{', Math.max(0, index));
  const close = open < 0 ? -1 : source.indexOf('}}', open + 2);
  const tag = open < 0 ? source : source.slice(open, close < 0 ? source.length : close + 2);
  // By characters, so a cut never splits one outside the BMP into half a surrogate pair.
  return tag.length <= TAG_SHOWN ? tag : `${[...tag].slice(0, TAG_SHOWN).join('')}…`;
}

/**
 * Thrown by a filter's argument checks; the parser or renderer turns it into an
 * ExpressionError at the offending argument (`index`), or at the filter name when the
 * argument was not written (index -1 or past the written ones).
 */
export class ArgError extends Error {
  readonly index: number;
  constructor(index: number, message: string) {
    super(message);
    this.index = index;
  }
}

/** Thrown by a filter when the value it receives cannot be transformed; located at the filter. */
export class FilterError extends Error {}
