import { isForeignKeyViolation, type Database, type Tx } from '../../db/database.ts';
import type { Notifier } from '../../db/notifications.ts';
import { uuidv4 } from '../../db/ids.ts';
import type { Principal } from '../../access/principal.ts';
import { ApiError } from '../../http/errors.ts';
import { afterCommit } from '../../http/idempotency.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import { generateApiKey, hashApiKey } from '../../vault/api-keys.ts';
import type { Actor, LogService } from '../logs/service.ts';
import { deleteKey, findKey, findKeyOwnerByHash, insertKey, keysOfApplications, listKeys, type ApplicationKey } from './store.ts';

export type ApplicationKeyService = ReturnType<typeof createApplicationKeyService>;
export type IssuedKey = ApplicationKey & { key: string };

/** Application keys: created with a value shown once, stored as a hash, revoked at once on delete. */
export function createApplicationKeyService(deps: {
  db: Database;
  logs: LogService;
  notifier: Notifier;
  /** Throws 404 unless the application exists in the caller's tenant. */
  requireApplication: (principal: Principal, applicationId: string) => Promise<unknown>;
}) {
  const { db, logs, notifier, requireApplication } = deps;

  async function issue(actor: Actor, tenantId: string, applicationId: string, tx?: Tx): Promise<IssuedKey> {
    const key = generateApiKey('application');
    const row = await insertKey(
      db,
      tenantId,
      { id: uuidv4(), application_id: applicationId, key_hash: hashApiKey(key), created_by: actor.kind === 'system' ? null : actor.actorId },
      tx,
    );
    await logs.record(actor, { entityType: 'application_key', entityId: row.id, operation: 'create', message: `Key created for application ${applicationId}` }, tx);
    return { ...row, key };
  }

  return {
    issue,

    keysOf(tenantId: string, applicationIds: string[], tx?: Tx): Promise<ApplicationKey[]> {
      return keysOfApplications(db, tenantId, applicationIds, tx);
    },

    async create(principal: Principal, applicationId: string): Promise<IssuedKey> {
      await requireApplication(principal, applicationId);
      const issued = await db
        .transaction(async (tx) => {
          const k = await issue(principal, principal.tenantId, applicationId, tx);
          // Cached views of the application list its keys.
          await notifier.invalidate('auth', tx);
          return k;
        })
        .catch((err: unknown) => {
          // The application was deleted between the check above and the insert.
          throw isForeignKeyViolation(err) ? ApiError.notFound('application') : err;
        });
      // Under an idempotency key the change commits only with the reply: the barrier waits for that.
      await afterCommit(() => notifier.invalidateLocal('auth'));
      return issued;
    },

    async list(principal: Principal, applicationId: string, q: Offset) {
      await requireApplication(principal, applicationId);
      const { rows, total } = await listKeys(db, principal.tenantId, applicationId, offsetOf(q));
      return offsetPage(rows, total, q);
    },

    async get(principal: Principal, applicationId: string, keyId: string): Promise<ApplicationKey> {
      await requireApplication(principal, applicationId);
      const row = await findKey(db, principal.tenantId, applicationId, keyId);
      if (!row) throw ApiError.notFound('application key');
      return row;
    },

    async remove(principal: Principal, applicationId: string, keyId: string): Promise<void> {
      await requireApplication(principal, applicationId);
      await db.transaction(async (tx) => {
        if (!(await deleteKey(db, principal.tenantId, applicationId, keyId, tx))) throw ApiError.notFound('application key');
        await logs.record(principal, { entityType: 'application_key', entityId: keyId, operation: 'delete', message: `Key deleted from application ${applicationId}` }, tx);
        await notifier.invalidate('auth', tx);
      });
      await notifier.invalidateLocal('auth');
    },

    /** The principal an application key authenticates as, or undefined for an unknown key. */
    async resolve(hash: Buffer): Promise<Principal | undefined> {
      const owner = await findKeyOwnerByHash(db, hash);
      if (!owner) return undefined;
      return {
        kind: 'application',
        tenantId: owner.tenant_id,
        actorId: owner.application_id,
        applicationId: owner.application_id,
        applicationType: owner.type,
        keyId: owner.key_id,
        permissions: owner.permissions,
        rules: owner.rules,
        expiresAt: owner.expires_at ?? undefined,
      };
    },
  };
}
