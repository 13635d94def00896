import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

/**
 * The secrets people carry in links and cookies (an invitation link, a sign-in link, a member
 * session): `<row id>.<32 random bytes, base64url>`. Only the SHA-256 of the random part is
 * stored, under the row id; a presented secret is looked up by its id and its hash compared in
 * constant time, so neither the lookup nor the comparison depends on the secret's value.
 */
export type LinkSecret = { id: string; token: string; hash: Buffer };

const TOKEN = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([A-Za-z0-9_-]{43})$/;

export function newLinkSecret(id: string = randomUUID()): LinkSecret {
  const secret = randomBytes(32).toString('base64url');
  return { id, token: `${id}.${secret}`, hash: digest(secret) };
}

/** The id and the secret's hash of a well-formed token; undefined for anything else. */
export function parseLinkSecret(token: unknown): { id: string; hash: Buffer } | undefined {
  if (typeof token !== 'string' || token.length > 100) return undefined;
  const m = TOKEN.exec(token);
  return m ? { id: m[1], hash: digest(m[2]) } : undefined;
}

/** Whether a presented secret's hash is the stored one, in constant time. */
export function secretMatches(presented: Buffer, stored: Buffer): boolean {
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

function digest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}
