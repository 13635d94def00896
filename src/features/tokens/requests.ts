import type { Principal } from '../../access/principal.ts';
import { compileValidator } from '../../http/validate.ts';
import { TOKEN_TYPES } from '../../vault/token-types.ts';
import { CreateTokenBody } from './schema.ts';
import type { TokenRequest } from './service.ts';

/** What a token request is: which leaves of a tokenize body are token requests, and who sends them. */

/**
 * Keys held by clients: public application keys, in every browser or app that uses them, and
 * the session keys public applications hand out. They never get fingerprints (which confirm
 * a guessed value, docs/vault.md), nor an existing token from a deduplicating create they may
 * not read, and their token creation is rate limited.
 */
export function clientHeld(principal: Principal): boolean {
  return principal.applicationType === 'public';
}

export const validTokenRequest = compileValidator<TokenRequest>(CreateTokenBody);

export function isTokenRequest(node: unknown): boolean {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return false;
  const o = node as Record<string, unknown>;
  // Own keys only: `{"type": "toString"}` names no token type, it is data to pass through.
  if (typeof o.type === 'string' && Object.hasOwn(TOKEN_TYPES, o.type) && Object.hasOwn(o, 'data')) return true;
  return Object.hasOwn(o, 'token_intent_id') && typeof o.token_intent_id === 'string';
}

/** A card's (or network token's) data without its CVC, which is for one payment and never kept from an intent. */
export function withoutCvc(data: unknown): unknown {
  if (data === null || typeof data !== 'object' || !('cvc' in data)) return data;
  const { cvc: _dropped, ...rest } = data as Record<string, unknown>;
  return rest;
}

/** The most token requests one POST /tokenize (or reactor tokenize block) may hold. */
export const MAX_TOKENIZE = 100;

/** How many token requests `node` holds, counting no further than `stop`; iterative, so no depth overflows it. */
export function countTokenRequests(node: unknown, stop: number): number {
  let count = 0;
  const stack: unknown[] = [node];
  while (stack.length > 0 && count < stop) {
    const next = stack.pop();
    if (isTokenRequest(next)) count++;
    // One by one: spreading an array of a few hundred thousand items overflows the call.
    else if (Array.isArray(next)) for (const item of next) stack.push(item);
    else if (next !== null && typeof next === 'object') for (const value of Object.values(next)) stack.push(value);
  }
  return count;
}
