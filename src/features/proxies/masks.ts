/**
 * The matchers of mask response transforms: `regex` (its check, and the program the service
 * runs in the sandbox) and `chase_stratus_pan` (fixed-width records, masked in-process).
 * See docs/proxies.md, Masks.
 */

/** A problem with the regex, or undefined; compiling does not run it, so this is safe in-process. */
export function regexProblem(expression: string): string | undefined {
  let groups: number;
  try {
    // Matching the empty alternative says how many groups there are, without scanning any text.
    groups = (new RegExp(`${expression}|`).exec('') ?? []).length - 1;
  } catch (err) {
    return `is not a valid regular expression: ${(err as Error).message}`;
  }
  return groups < 1 ? 'must have at least one capture group: the parts of each match to mask' : undefined;
}

/**
 * The regex mask, run in the sandbox. For every match, every occurrence inside the match of
 * every capture group's value is masked; occurrences may overlap one another and other
 * groups' (all are masked). Each masked character, a surrogate pair counting as one, becomes
 * the one replacement character.
 */
export const REGEX_MASK_PROGRAM = `module.exports = async function (req) {
  const { text, expression, replacement } = req.args;
  const re = new RegExp(expression, 'g');
  const marked = new Uint8Array(text.length);
  let m;
  while ((m = re.exec(text)) !== null) {
    const whole = m[0];
    for (let g = 1; g < m.length; g++) {
      const v = m[g];
      if (!v) continue;
      for (let i = whole.indexOf(v); i !== -1; i = whole.indexOf(v, i + 1)) marked.fill(1, m.index + i, m.index + i + v.length);
    }
    if (whole.length === 0) re.lastIndex++;
  }
  const out = [];
  let from = 0;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    const width = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
    if (marked[i] || (width === 2 && marked[i + 1])) {
      out.push(text.slice(from, i), replacement);
      from = i + width;
    }
    i += width;
  }
  out.push(text.slice(from));
  return out.join('');
};
`;

/** Chase Stratus records: the account number field, 1-based positions 29 to 47 (19 bytes). See docs/proxies.md. */
const STRATUS_PAN_START = 28;
const STRATUS_PAN_END = 47;

/**
 * Masks the PAN field of each fixed-width Chase Stratus record (records end with CR, LF or
 * CRLF). Every non-space character in positions 29–47 becomes `replacement`; records
 * shorter than 29 characters carry no account number and are left as they are.
 */
export function maskChaseStratusPan(text: string, replacement: string): string {
  return text.replace(/[^\r\n]+/g, (record) => {
    if (record.length <= STRATUS_PAN_START) return record;
    const field = record.slice(STRATUS_PAN_START, STRATUS_PAN_END).replace(/[^ ]/g, replacement);
    return record.slice(0, STRATUS_PAN_START) + field + record.slice(STRATUS_PAN_END);
  });
}
