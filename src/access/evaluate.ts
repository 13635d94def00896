import type { Principal } from './principal.ts';
import type { AccessRule, Condition, Transform } from './rules.ts';

/** What a token permission check needs to know about the token. */
export type TokenScope = { id: string; containers: string[] };

/** Plain permissions (outside rules) reach every container with this transform. */
const IMPLICIT: Record<string, Transform> = {
  'token:create': 'mask',
  'token:update': 'mask',
  'token:read': 'mask',
  'token:search': 'mask',
  'token:delete': 'mask',
  'token:use': 'reveal',
};

/**
 * Decides whether the principal holds `permission` on a token and with which transform.
 * Rules are tried in priority order (1 first); the first rule that matches the token and
 * grants the permission decides. Plain permissions apply when no rule decided.
 * Returns undefined when the permission is not granted for this token.
 */
export function accessTo(principal: Principal, permission: string, token: TokenScope): Transform | undefined {
  for (const rule of principal.rules) {
    if (rule.permissions.includes(permission) && ruleMatches(rule, token)) return restrict(principal, rule.transform);
  }
  if (principal.permissions.includes(permission)) return restrict(principal, IMPLICIT[permission] ?? 'mask');
  return undefined;
}

/** Public application keys may write tokens but never read their data back. */
function restrict(principal: Principal, transform: Transform): Transform {
  return principal.kind === 'application' && principal.applicationType === 'public' ? 'redact' : transform;
}

function ruleMatches(rule: AccessRule, token: TokenScope): boolean {
  if (rule.conditions && rule.conditions.length > 0) return rule.conditions.every((c) => conditionMatches(c, token));
  if (rule.container !== undefined) return token.containers.some((c) => c.startsWith(rule.container!));
  return true;
}

function conditionMatches(c: Condition, token: TokenScope): boolean {
  const values = c.attribute === 'id' ? [token.id] : token.containers;
  return values.some((v) => (c.operator === 'equals' ? v === c.value : v.startsWith(c.value)));
}

/**
 * Where a permission reaches, for listing in SQL: every token, or the tokens any of these
 * rules matches (a rule's container prefix, or all of its conditions). Exactly the tokens
 * accessTo grants, so offset totals and page sizes count only what the caller will see.
 */
export type TokenReach = 'all' | { container?: string; conditions?: Condition[] }[];

export function reachOf(principal: Principal, permission: string): TokenReach {
  if (principal.permissions.includes(permission)) return 'all';
  const reach: { container?: string; conditions?: Condition[] }[] = [];
  for (const rule of principal.rules) {
    if (!rule.permissions.includes(permission)) continue;
    // The same precedence as ruleMatches: conditions, then container, else everything.
    if (rule.conditions && rule.conditions.length > 0) reach.push({ conditions: rule.conditions });
    else if (rule.container !== undefined) reach.push({ container: rule.container });
    else return 'all';
  }
  return reach;
}
