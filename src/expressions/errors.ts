/**
 * Every failure of parsing or rendering an expression is an ExpressionError. Messages name
 * what is wrong and the 0-based offset in the source; they quote source fragments (filter
 * names, token ids) but never a value the expression evaluated, since that is token data.
 */
export class ExpressionError extends Error {
  /** The whole source string the error is about. */
  readonly expression: string;
  /** 0-based offset (UTF-16 code units) into `expression`. */
  readonly position: number;

  constructor(detail: string, expression: string, position: number) {
    super(`${detail} at ${position}`);
    this.name = 'ExpressionError';
    this.expression = expression;
    this.position = position;
  }
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
