import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API keys are 32 random bytes with a readable prefix (`key_` for application keys,
 * `session_` for session keys) so that leaked keys are easy to recognise and scan for.
 * Only their SHA-256 hash is stored; the value is shown once.
 */
export type KeyKind = 'application' | 'session';
const PREFIX: Record<KeyKind, string> = { application: 'key_', session: 'session_' };

export function generateApiKey(kind: KeyKind): string {
  return PREFIX[kind] + randomBytes(32).toString('base64url');
}

/** The stored form of a key: its SHA-256. */
export function hashApiKey(value: string): Buffer {
  return Buffer.from(apiKeyDigest(value), 'base64');
}

/**
 * The same hash in base64, for the authentication cache on every request: the one-shot hash
 * without a Hash object, and without the Buffer its 'buffer' output costs (about three times
 * the base64 string's time on Node 24).
 */
export function apiKeyDigest(value: string): string {
  return hash('sha256', value, 'base64');
}

export function keyKind(value: string): KeyKind | undefined {
  if (value.startsWith(PREFIX.application)) return 'application';
  if (value.startsWith(PREFIX.session)) return 'session';
  return undefined;
}

/** A nonce or similar one-time secret: random, URL-safe. */
export function generateSecret(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

/** Constant-time comparison of two stored hashes. */
export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
