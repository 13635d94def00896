/**
 * Whether a string is one e-mail address as RFC 5322 writes an addr-spec (§3.4.1), without a
 * display name or comments: a dot-atom or quoted-string local part, `@`, and a dot-atom domain
 * or a domain literal. Lengths as RFC 5321 allows them (64 for the local part, 254 in all).
 */
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
const DOT_ATOM = new RegExp(`^${ATEXT}+(?:\\.${ATEXT}+)*$`);
// qtext (printable ASCII but \ and ") or a quoted-pair (\ and a printable character or space).
const QUOTED = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$/;
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const LITERAL = /^\[[\x21-\x5a\x5e-\x7e]+\]$/;

/** Why `value` is not one well-formed address, or undefined when it is. */
export function emailProblem(value: string): string | undefined {
  if (value.length > 254) return 'must be at most 254 characters';
  const at = value.lastIndexOf('@');
  if (at < 1 || at === value.length - 1) return 'must be an e-mail address (local-part@domain)';
  const local = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (local.length > 64) return 'must have a local part (before @) of at most 64 characters';
  if (!DOT_ATOM.test(local) && !QUOTED.test(local)) return 'must have a well-formed local part (RFC 5322)';
  if (LITERAL.test(domain)) return undefined;
  if (!domain.split('.').every((label) => LABEL.test(label))) return 'must have a well-formed domain (RFC 5322)';
  return undefined;
}
