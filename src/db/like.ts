/**
 * The `name` wildcard of list endpoints as an ILIKE pattern: `*` matches any run of
 * characters and LIKE's own metacharacters (`%`, `_`, `\`) match themselves. With
 * `substring`, a name without `*` matches anywhere in the value.
 */
export function wildcardPattern(name: string, opts: { substring: boolean }): string {
  const escaped = name.replace(/[\\%_]/g, (c) => `\\${c}`);
  if (escaped.includes('*')) return escaped.replace(/\*/g, '%');
  return opts.substring ? `%${escaped}%` : escaped;
}
