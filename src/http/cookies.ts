/** A signed-in member's cookies (src/features/signin): the session (HttpOnly) and its CSRF token (read by the page's code). */
export const SESSION_COOKIE = 'coffer_session';
export const CSRF_COOKIE = 'coffer_csrf';
/** The header a signed-in member's request repeats the CSRF cookie in (double submit). */
export const CSRF_HEADER = 'x-csrf-token';

/** The cookies of a request's Cookie header, by name (the first of a name wins); malformed pairs are skipped. */
export function parseCookies(header: string | string[] | undefined): Map<string, string> {
  const out = new Map<string, string>();
  const value = Array.isArray(header) ? header.join('; ') : header;
  if (!value || value.length > 16_384) return out;
  for (const part of value.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 1) continue;
    const name = part.slice(0, eq).trim();
    let v = part.slice(eq + 1).trim();
    if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1);
    if (!out.has(name)) out.set(name, v);
  }
  return out;
}

export type CookieOptions = { httpOnly: boolean; secure: boolean; maxAgeSeconds: number };

/** A Set-Cookie value: Path=/, SameSite=Strict always; `value` must be cookie-safe (ours are base64url and dots). */
export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  return [
    `${name}=${value}`,
    'Path=/',
    `Max-Age=${Math.max(0, Math.floor(o.maxAgeSeconds))}`,
    'SameSite=Strict',
    ...(o.httpOnly ? ['HttpOnly'] : []),
    ...(o.secure ? ['Secure'] : []),
  ].join('; ');
}
