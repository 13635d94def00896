import type { ApplicationType } from './permissions.ts';
import type { AccessRule } from './rules.ts';

/** Who is calling: an application key, or a session key (which acts with what it was authorized). */
export type Principal = {
  kind: 'application' | 'session';
  tenantId: string;
  /** The application id, or the session id for session keys: the actor written in the audit log. */
  actorId: string;
  applicationId: string;
  applicationType: ApplicationType;
  keyId: string | undefined;
  permissions: string[];
  rules: AccessRule[];
  expiresAt: Date | undefined;
};

/** Route-level check: is the permission granted anywhere? Container scope is checked by the service. */
export function hasPermission(principal: Principal, permission: string): boolean {
  return (
    principal.permissions.includes(permission) ||
    principal.rules.some((rule) => rule.permissions.includes(permission))
  );
}

export function actorType(principal: Principal): string {
  return principal.kind === 'session' ? 'session' : 'application';
}
