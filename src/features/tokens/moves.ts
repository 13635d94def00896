/**
 * The rules of changing where a token is and when it ends, as pure functions of the keys
 * involved (docs/decisions.md, "A move may not widen who reads a token"): the tokens service
 * applies them in its update.
 */
import { accessTo } from '../../access/evaluate.ts';
import type { Principal } from '../../access/principal.ts';
import type { Transform } from '../../access/rules.ts';
import { ApiError } from '../../http/errors.ts';
import type { TokenRow } from './store.ts';

/** From the least shown to the most. */
export const TRANSFORM_RANK: Record<Transform, number> = { redact: 0, mask: 1, reveal: 2 };

/**
 * Containers decide who reaches a token, so a move needs token:update on each container it
 * adds or removes (one of the token's is not enough: that would let a key hand the token to,
 * or take it from, containers it holds nothing on). And, as for redefining a mask, a move may
 * not show the key more of the token than it sees where the token is: masked PCI data moved
 * into a container whose rule reveals would otherwise be read in the clear.
 */
export function checkMove(principal: Principal, token: TokenRow, to: string[]): void {
  const from = token.containers;
  const changed = [...to.filter((c) => !from.includes(c)), ...from.filter((c) => !to.includes(c))];
  const denied = unreachable(principal, 'token:update', token.id, changed);
  if (denied.length) {
    throw ApiError.forbidden(`The API key lacks token:update on ${denied.join(', ')}: moving token ${token.id} into or out of a container needs it there.`);
  }
  // Permission by permission: data a key may only use (through reactors and proxies) must not
  // become data it reads, because it already reveals through token:use.
  const more = SHOWING.filter((p) => sight(principal, p, token.id, to) > sight(principal, p, token.id, from));
  if (more.length) {
    throw ApiError.forbidden(`Moving token ${token.id} to ${to.join(', ')} would show the API key more of its data (through ${more.join(', ')}) than it sees where the token is.`);
  }
}

/** The containers among `containers` on which the principal lacks `permission`. */
export function unreachable(principal: Principal, permission: string, id: string, containers: string[]): string[] {
  return [...new Set(containers)].filter((c) => !accessTo(principal, permission, { id, containers: [c] }));
}

/** The permissions whose transform decides what a key sees of a token's data (token:use: through reactors and proxies). */
const SHOWING = ['token:read', 'token:update', 'token:search', 'token:use'];
/** Those whose answers show the caller itself the data: what it reads of a token. */
const READING = ['token:read', 'token:update', 'token:search'];

/** How much a key sees of a token in these containers through one permission: -1 for nothing at all. */
function sight(principal: Principal, permission: string, id: string, containers: string[]): number {
  const t = accessTo(principal, permission, { id, containers });
  return t ? TRANSFORM_RANK[t] : -1;
}

/** Whether a patch's expires_at sets an expiry on a token without one, or an earlier one. */
export function bringsExpiryForward(patched: string | null | undefined, current: Date | null): boolean {
  if (patched === undefined || patched === null) return false;
  return current === null || Date.parse(patched) < current.getTime();
}

/** The most the key reads of the token where it is now (as `redact` when nothing): how far it may widen others' view. */
export function vouchedSight(principal: Principal, token: Pick<TokenRow, 'id' | 'containers'>): number {
  return Math.max(0, ...READING.map((p) => sight(principal, p, token.id, token.containers)));
}

/** Whether one of `others` would see more of the token in `to` than now, beyond what the mover vouches for. */
export function widensAudience(others: Principal[], token: Pick<TokenRow, 'id' | 'containers'>, to: string[], vouched: number): boolean {
  return others.some((other) => SHOWING.some((p) => sight(other, p, token.id, to) > Math.max(vouched, sight(other, p, token.id, token.containers))));
}
