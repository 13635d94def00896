/**
 * A PostgreSQL array literal of text values (NULL for null), sent as a `$n::type[]`
 * parameter. pg makes the same from a JS array, but runs two regular-expression replaces
 * over every element whether it needs them or not, and the group-commit INSERTs send one
 * array per column for every batch of writes; here only an element holding a quote or a
 * backslash is escaped.
 */
export function arrayLiteral(values: readonly (string | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    // Always quoted: an unquoted element would be read as NULL, trimmed, or split on commas and braces.
    out += v === null ? 'NULL' : `"${NEEDS_ESCAPE.test(v) ? v.replace(ESCAPED, '\\$&') : v}"`;
  }
  return `${out}}`;
}

const NEEDS_ESCAPE = /["\\]/;
const ESCAPED = /["\\]/g;
