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

/** On every authenticated request: the one-shot hash, without a Hash object per call. */
export function hashApiKey(value: string): Buffer {
  return hash('sha256', value, 'buffer');
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
