/**
 * The `name` wildcard of list endpoints (reactors, proxies) as an ILIKE pattern: `*` matches
 * any run of characters, a name without `*` matches anywhere in the value (a search box's
 * "stripe" finds "Stripe charges"; `*` anchors it: `stripe*`), and LIKE's own metacharacters
 * (`%`, `_`, `\`) match themselves.
 */
export function wildcardPattern(name: string): string {
  const escaped = name.replace(/[\\%_]/g, (c) => `\\${c}`);
  return escaped.includes('*') ? escaped.replace(/\*/g, '%') : `%${escaped}%`;
}
