import type { ApplicationType } from './permissions.ts';
import type { AccessRule } from './rules.ts';

/**
 * Who is calling: an application key, a session key (which acts with what it was authorized),
 * or a signed-in tenant member (a session cookie: the permissions of the member's role).
 */
export type Principal = {
  kind: 'application' | 'session' | 'member';
  tenantId: string;
  /** The application id, the session id for session keys, the user id for members: the actor written in the audit log. */
  actorId: string;
  applicationId: string;
  applicationType: ApplicationType;
  keyId: string | undefined;
  permissions: string[];
  rules: AccessRule[];
  expiresAt: Date | undefined;
  /** A member: which one, and its role. */
  member?: { id: string; userId: string; role: string };
};

/** Route-level check: is the permission granted anywhere? Container scope is checked by the service. */
export function hasPermission(principal: Principal, permission: string): boolean {
  return (
    principal.permissions.includes(permission) ||
    principal.rules.some((rule) => rule.permissions.includes(permission))
  );
}

export function actorType(principal: Principal): string {
  return principal.kind === 'session' ? 'session' : principal.kind === 'member' ? 'user' : 'application';
}
