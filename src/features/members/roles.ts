import type { Principal } from '../../access/principal.ts';
import type { AccessRule } from '../../access/rules.ts';
import { permissionsFor } from '../../access/permissions.ts';
import type { MemberRole } from './store.ts';

/** What a role may do: management permissions plus one rule over every token. */
export type RoleAccess = { permissions: string[]; rules: AccessRule[] };

/** Token permissions by role: OWNER and ADMIN manage and use tokens, READ_ONLY only finds and reads them. */
const TOKEN_PERMISSIONS: Record<MemberRole, string[]> = {
  OWNER: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'],
  ADMIN: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'],
  READ_ONLY: ['token:read', 'token:search'],
};

/** Payment records members may look up: they hold no card data beyond what their tokens mask. */
const PAYMENT_READS = ['token-intent:read', '3ds:session:read'];

/**
 * What a signed-in member may do, by role: OWNER and ADMIN every management permission of the
 * catalogue, READ_ONLY only its `:read` ones; each role also reads tokens through one rule over
 * every container whose transform is `mask`, so a member is shown token data masked (or not at
 * all, for a token without a mask). Plaintext takes an explicit reveal (`GET /tokens/{id}?reveal=true`),
 * which only OWNER and ADMIN may ask for (see revealAllowed).
 */
export function roleAccess(role: MemberRole): RoleAccess {
  return ROLE_ACCESS[role];
}

function accessOf(role: MemberRole): RoleAccess {
  const all = permissionsFor('management').map((p) => p.type);
  const management = role === 'READ_ONLY' ? all.filter((p) => p.endsWith(':read')) : all;
  return {
    permissions: [...management, ...PAYMENT_READS],
    rules: [{ description: `The ${role} role's view of tokens`, priority: 1, transform: 'mask', permissions: TOKEN_PERMISSIONS[role] }],
  };
}

/** Made once: every signed-in request's principal takes its role's. Nothing changes them after. */
const ROLE_ACCESS: Record<MemberRole, RoleAccess> = { OWNER: accessOf('OWNER'), ADMIN: accessOf('ADMIN'), READ_ONLY: accessOf('READ_ONLY') };

/** Every permission a role holds, management and token ones alike: what GET /me lists. */
export function rolePermissions(role: MemberRole): string[] {
  const access = roleAccess(role);
  return [...access.permissions, ...access.rules.flatMap((r) => r.permissions)];
}

/** Whether a member of this role may see a token's plaintext when it asks to. */
export function revealAllowed(role: string): boolean {
  return role === 'OWNER' || role === 'ADMIN';
}

/** The principal a member acts as: the user is the actor written in the audit log; `member` once it exists. */
export function memberPrincipal(m: { tenantId: string; userId: string; role: MemberRole; memberId?: string; expiresAt?: Date }): Principal {
  return {
    kind: 'member', tenantId: m.tenantId, actorId: m.userId, applicationId: '', applicationType: 'management', keyId: undefined,
    ...roleAccess(m.role),
    expiresAt: m.expiresAt,
    ...(m.memberId ? { member: { id: m.memberId, userId: m.userId, role: m.role } } : {}),
  };
}
