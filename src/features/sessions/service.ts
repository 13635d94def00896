import type { Database } from '../../db/database.ts';
import type { Notifier } from '../../db/notifications.ts';
import { uuidv4 } from '../../db/ids.ts';
import type { Principal } from '../../access/principal.ts';
import { checkPermissions, checkRules, type AccessRuleInput } from '../../access/rules.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { afterCommit } from '../../http/idempotency.ts';
import { generateApiKey, generateSecret, hashApiKey } from '../../vault/api-keys.ts';
import type { LogService } from '../logs/service.ts';
import { authorizeByNonce, deleteExpiredSessionsAcrossTenants, findPendingByNonce, findSessionByKeyHash, findSessionsScopedTo, insertSession, type Session } from './store.ts';

export type SessionService = ReturnType<typeof createSessionService>;
export type AuthorizeInput = { nonce: string; permissions: string[]; rules: AccessRuleInput[]; expires_at?: string };

/** An authorized session can live at most this long after creation, however far expires_at is set. */
const MAX_LIFETIME_SECONDS = 24 * 3600;

/**
 * Sessions: a public application (a browser or app) gets a key with no access; its
 * private backend grants that key permissions or rules with the one-time nonce.
 */
export function createSessionService(deps: { db: Database; logs: LogService; notifier: Notifier; ttlSeconds: number }) {
  const { db, logs, notifier, ttlSeconds } = deps;
  return {
    async create(principal: Principal) {
      const sessionKey = generateApiKey('session');
      const nonce = generateSecret();
      // A session cannot outlive the public application it belongs to.
      const expiresAt = Math.min(Date.now() + ttlSeconds * 1000, principal.expiresAt?.getTime() ?? Infinity);
      const session = await db.transaction(async (tx) => {
        const s = await insertSession(
          db,
          principal.tenantId,
          {
            id: uuidv4(),
            public_application_id: principal.applicationId,
            key_hash: hashApiKey(sessionKey),
            nonce_hash: hashApiKey(nonce),
            expires_at: new Date(expiresAt),
          },
          tx,
        );
        await logs.record(principal, { entityType: 'session', entityId: s.id, operation: 'create', message: 'Session created' }, tx);
        return s;
      });
      return { session_key: sessionKey, nonce, expires_at: session.expires_at.toISOString() };
    },

    async authorize(principal: Principal, input: AuthorizeInput): Promise<void> {
      const errors = new FieldErrorList();
      if (input.permissions.length === 0 && input.rules.length === 0) errors.add('body.permissions', 'permissions or rules must be non-empty');
      checkPermissions(input.permissions, 'session', 'body.permissions', errors);
      const rules = checkRules(input.rules, 'session', 'body.rules', errors);
      const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
      if (expiresAt && expiresAt.getTime() <= Date.now()) errors.add('body.expires_at', 'must be in the future');
      errors.throwIfAny();

      const nonceHash = hashApiKey(input.nonce);
      await db.transaction(async (tx) => {
        const session = await authorizeByNonce(
          db,
          principal.tenantId,
          { nonce_hash: nonceHash, permissions: input.permissions, rules, authorized_by: principal.actorId, expires_at: expiresAt, max_lifetime_seconds: MAX_LIFETIME_SECONDS },
          tx,
        );
        if (!session) {
          if (expiresAt && (await findPendingByNonce(db, principal.tenantId, nonceHash))) {
            throw ApiError.field('body.expires_at', 'must be at most 24 hours after the session was created');
          }
          throw ApiError.notFound('session for this nonce (nonces are single-use and expire with their session)');
        }
        await logs.record(principal, { entityType: 'session', entityId: session.id, operation: 'authorize', message: 'Session authorized' }, tx);
        await notifier.invalidate('auth', tx);
      });
      // Under an idempotency key the change commits only with the reply: the barrier waits for that.
      await afterCommit(() => notifier.invalidateLocal('auth'));
    },

    /** The principal a session key authenticates as: no permissions until authorized. */
    async resolve(hash: Buffer): Promise<Principal | undefined> {
      const s = await findSessionByKeyHash(db, hash);
      return s && principalOf(s);
    },

    /**
     * The live authorized sessions that may reach a token in some of `containers` otherwise
     * than in the rest (a rule on a container one of them is in): whom a token's move between
     * them must not show more of it (tokens service).
     */
    async tokenGranteesIn(tenantId: string, containers: string[]): Promise<Principal[]> {
      return (await findSessionsScopedTo(db, tenantId, containers)).map(principalOf);
    },

    sweepExpired(): Promise<number> {
      return deleteExpiredSessionsAcrossTenants(db, 1000);
    },
  };
}

function principalOf(s: Session): Principal {
  return {
    kind: 'session',
    tenantId: s.tenant_id,
    actorId: s.id,
    applicationId: s.public_application_id,
    applicationType: 'public',
    keyId: undefined,
    permissions: s.permissions,
    rules: s.rules,
    expiresAt: s.expires_at,
  };
}
