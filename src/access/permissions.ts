/** The permission catalogue: every permission Coffer knows and the application types it fits. */
export const APPLICATION_TYPES = ['private', 'public', 'management'] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];

export type PermissionDefinition = {
  type: string;
  description: string;
  application_types: ApplicationType[];
  /** Container-scoped permissions apply per token container and may appear in container rules. */
  scoped: boolean;
};

const MANAGEMENT: ApplicationType[] = ['management'];
const PRIVATE: ApplicationType[] = ['private'];
const PRIVATE_PUBLIC: ApplicationType[] = ['private', 'public'];
const PRIVATE_MANAGEMENT: ApplicationType[] = ['private', 'management'];

function p(type: string, description: string, application_types: ApplicationType[], scoped = false): PermissionDefinition {
  return { type, description, application_types, scoped };
}

export const PERMISSIONS: readonly PermissionDefinition[] = [
  p('application:create', 'Create applications and application keys', MANAGEMENT),
  p('application:read', 'Read applications and application keys', MANAGEMENT),
  p('application:update', 'Update applications', MANAGEMENT),
  p('application:delete', 'Delete applications and application keys', MANAGEMENT),
  p('tenant:read', 'Read the tenant', MANAGEMENT),
  p('tenant:member:read', 'Read tenant members', MANAGEMENT),
  p('tenant:member:delete', 'Remove tenant members', MANAGEMENT),
  p('tenant:invitation:create', 'Invite users to the tenant', MANAGEMENT),
  p('tenant:invitation:read', 'Read tenant invitations', MANAGEMENT),
  p('tenant:invitation:update', 'Resend tenant invitations', MANAGEMENT),
  p('tenant:invitation:delete', 'Delete tenant invitations', MANAGEMENT),
  p('log:read', 'Read the audit log', MANAGEMENT),
  p('proxy:create', 'Create proxies', MANAGEMENT),
  p('proxy:read', 'Read proxies', MANAGEMENT),
  p('proxy:update', 'Update proxies', MANAGEMENT),
  p('proxy:delete', 'Delete proxies', MANAGEMENT),
  p('reactor:create', 'Create reactors', MANAGEMENT),
  p('reactor:read', 'Read reactors', MANAGEMENT),
  p('reactor:update', 'Update reactors', MANAGEMENT),
  p('reactor:delete', 'Delete reactors', MANAGEMENT),
  p('webhook:create', 'Create webhooks', MANAGEMENT),
  p('webhook:read', 'Read webhooks', MANAGEMENT),
  p('webhook:update', 'Update webhooks', MANAGEMENT),
  p('webhook:delete', 'Delete webhooks', MANAGEMENT),
  p('token:create', 'Create tokens in a container', PRIVATE_PUBLIC, true),
  p('token:read', 'Read tokens of a container (data shown per the transform)', PRIVATE, true),
  p('token:update', 'Update tokens of a container', PRIVATE_PUBLIC, true),
  p('token:delete', 'Delete tokens of a container', PRIVATE, true),
  p('token:search', 'Search tokens of a container', PRIVATE, true),
  p('token:use', 'Use token data in proxies, reactors, payments and bank account verification without reading it', PRIVATE, true),
  p('token-intent:create', 'Create token intents, from data or a Google Pay token', PRIVATE_PUBLIC),
  p('token-intent:read', 'Read token intents (never their data)', PRIVATE),
  p('token-intent:delete', 'Delete token intents', PRIVATE),
  p('session:authorize', 'Authorize sessions created by public applications', PRIVATE),
  p('3ds:session:create', 'Create 3DS sessions', PRIVATE_PUBLIC),
  p('3ds:session:read', 'Read 3DS sessions', PRIVATE),
  p('3ds:session:authenticate', 'Authenticate 3DS sessions', PRIVATE),
  p('orchestration:transaction:read', 'Read payment transactions and refunds', PRIVATE_MANAGEMENT),
  p('orchestration:transaction:capture', 'Capture payment transactions', PRIVATE),
  p('connection:create', 'Create processor connections', MANAGEMENT),
  p('connection:read', 'Read processor connections (never their credentials)', MANAGEMENT),
  p('connection:update', 'Update processor connections', MANAGEMENT),
  p('connection:delete', 'Delete processor connections', MANAGEMENT),
];

const BY_NAME = new Map(PERMISSIONS.map((d) => [d.type, d]));

export function permissionDefinition(name: string): PermissionDefinition | undefined {
  return BY_NAME.get(name);
}

export function permissionsFor(type: ApplicationType): PermissionDefinition[] {
  return PERMISSIONS.filter((d) => d.application_types.includes(type));
}
