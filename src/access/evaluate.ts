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

/** SQL-side prefilter for listing: the container prefixes through which a permission can apply. */
export function containerPrefixes(principal: Principal, permission: string): string[] | 'all' {
  if (principal.permissions.includes(permission)) return 'all';
  const prefixes: string[] = [];
  for (const rule of principal.rules) {
    if (!rule.permissions.includes(permission)) continue;
    if (rule.conditions?.length) {
      // Conditions on ids are checked per row; container conditions narrow like containers.
      const containerConds = rule.conditions.filter((c) => c.attribute === 'container');
      if (containerConds.length === 0) return 'all';
      prefixes.push(containerConds[0].value);
    } else if (rule.container !== undefined) prefixes.push(rule.container);
    else return 'all';
  }
  return prefixes;
}
