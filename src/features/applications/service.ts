import type { Database, Tx } from '../../db/database.ts';
import type { Notifier } from '../../db/notifications.ts';
import { uuidv4 } from '../../db/ids.ts';
import type { Logger } from '../../logger.ts';
import type { Principal } from '../../access/principal.ts';
import type { ApplicationType } from '../../access/permissions.ts';
import { checkPermissions, checkRules, type AccessRuleInput } from '../../access/rules.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { afterCommit } from '../../http/idempotency.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import type { ApplicationKeyService } from '../application-keys/service.ts';
import type { ApplicationKey } from '../application-keys/store.ts';
import type { Actor, LogService } from '../logs/service.ts';
import {
  deleteApplication,
  deleteExpiredApplication,
  findApplication,
  findExpiredApplicationsAcrossTenants,
  insertApplication,
  listApplications,
  listTokenGrantees,
  updateApplication,
  type Application,
} from './store.ts';

export type ApplicationInput = {
  name: string;
  type: ApplicationType;
  permissions: string[];
  rules: AccessRuleInput[];
  expires_at?: string | null;
  create_key: boolean;
};
export type ApplicationUpdate = { name: string; permissions: string[]; rules: AccessRuleInput[] };
export type ApplicationView = Application & { keys: ApplicationKey[]; key?: string };
export type ApplicationService = ReturnType<typeof createApplicationService>;

export function createApplicationService(deps: {
  db: Database;
  logs: LogService;
  keys: ApplicationKeyService;
  notifier: Notifier;
  log: Logger;
  cacheSeconds: number;
}) {
  const { db, logs, keys, notifier, log } = deps;
  const cacheMs = deps.cacheSeconds * 1000;
  const own = new Map<string, { view: ApplicationView; until: number }>();
  let ownGeneration = 0;
  notifier.onInvalidate(() => {
    ownGeneration++;
    own.clear();
  });

  /** Spec rules beyond the schema: permissions or rules required, names from the catalogue, rule shapes. */
  function validate(type: ApplicationType, permissions: string[], rules: AccessRuleInput[], errors: FieldErrorList) {
    if (permissions.length === 0 && rules.length === 0) errors.add('body.permissions', 'permissions or rules must be non-empty');
    checkPermissions(permissions, type, 'body.permissions', errors);
    return checkRules(rules, type, 'body.rules', errors);
  }

  async function withKeys(tenantId: string, apps: Application[], tx?: Tx): Promise<ApplicationView[]> {
    const all = await keys.keysOf(tenantId, apps.map((a) => a.id), tx);
    return apps.map((a) => ({ ...a, keys: all.filter((k) => k.application_id === a.id) }));
  }

  async function get(principal: Principal, id: string): Promise<ApplicationView> {
    const app = await findApplication(db, principal.tenantId, id);
    if (!app) throw ApiError.notFound('application');
    return (await withKeys(principal.tenantId, [app]))[0];
  }

  /** Creates an application for an actor; also used by tenant set-up, where the actor is the system. */
  async function createFor(actor: Actor, tenantId: string, input: ApplicationInput, tx?: Tx): Promise<ApplicationView> {
    const errors = new FieldErrorList();
    const rules = validate(input.type, input.permissions, input.rules, errors);
    const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
    // The date-time format admits RFC 3339 leap seconds (23:59:60), which Date cannot hold.
    if (expiresAt && Number.isNaN(expiresAt.getTime())) errors.add('body.expires_at', 'must be a valid date-time');
    else if (expiresAt && expiresAt.getTime() <= Date.now()) errors.add('body.expires_at', 'must be in the future');
    // An offset can carry 9999-12-31 into year 10000, which no ISO 8601 response can show.
    else if (expiresAt && expiresAt.getUTCFullYear() > 9999) errors.add('body.expires_at', 'must be no later than 9999-12-31T23:59:59.999Z');
    errors.throwIfAny();
    return db.transaction(async (t) => {
      const app = await insertApplication(
        db,
        tenantId,
        {
          id: uuidv4(),
          name: input.name,
          type: input.type,
          permissions: input.permissions,
          rules,
          expires_at: expiresAt,
          created_by: actor.kind === 'system' ? null : actor.actorId,
        },
        t,
      );
      await logs.record(actor, { entityType: 'application', entityId: app.id, operation: 'create', message: `Application "${app.name}" (${app.type}) created` }, t);
      if (!input.create_key) return { ...app, keys: [] };
      const issued = await keys.issue(actor, tenantId, app.id, t);
      const { key, ...stored } = issued;
      return { ...app, keys: [stored], key };
    }, tx);
  }

  return {
    get,
    createFor,

    create(principal: Principal, input: ApplicationInput): Promise<ApplicationView> {
      return createFor(principal, principal.tenantId, input);
    },

    async list(principal: Principal, q: Offset & { id: string[] }) {
      const { rows, total } = await listApplications(db, principal.tenantId, { ids: q.id, ...offsetOf(q) });
      return offsetPage(await withKeys(principal.tenantId, rows), total, q);
    },

    /**
     * The application that owns the calling key; session keys belong to no application of
     * their own. This is every client's "who am I" call, so it is served from the same
     * short-lived cache as the key itself, cleared by the same notices.
     */
    async getByKey(principal: Principal): Promise<ApplicationView> {
      // Session keys and signed-in members belong to no application of their own.
      if (principal.kind !== 'application') throw ApiError.notFound('application');
      const cacheKey = `${principal.tenantId}/${principal.applicationId}`;
      const hit = own.get(cacheKey);
      if (hit && hit.until > Date.now()) return hit.view;
      const generation = ownGeneration;
      const view = await get(principal, principal.applicationId);
      if (cacheMs > 0 && generation === ownGeneration) {
        if (own.size >= 10_000) own.clear();
        own.set(cacheKey, { view, until: Date.now() + cacheMs });
      }
      return view;
    },

    async update(principal: Principal, id: string, input: ApplicationUpdate): Promise<ApplicationView> {
      const current = await findApplication(db, principal.tenantId, id);
      if (!current) throw ApiError.notFound('application');
      const errors = new FieldErrorList();
      const rules = validate(current.type, input.permissions, input.rules, errors);
      errors.throwIfAny();
      const updated = await db.transaction(async (tx) => {
        const app = await updateApplication(db, principal.tenantId, id, { name: input.name, permissions: input.permissions, rules, modified_by: principal.actorId }, tx);
        if (!app) throw ApiError.notFound('application');
        await logs.record(principal, { entityType: 'application', entityId: id, operation: 'update', message: `Application "${app.name}" updated` }, tx);
        await notifier.invalidate('auth', tx);
        return (await withKeys(principal.tenantId, [app], tx))[0];
      });
      // Under an idempotency key the change commits only with the reply: the barrier waits for that.
      await afterCommit(() => notifier.invalidateLocal('auth'));
      return updated;
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        if (!(await deleteApplication(db, principal.tenantId, id, tx))) throw ApiError.notFound('application');
        await logs.record(principal, { entityType: 'application', entityId: id, operation: 'delete', message: 'Application deleted' }, tx);
        await notifier.invalidate('auth', tx);
      });
      await notifier.invalidateLocal('auth');
    },

    /**
     * The principal an application acts as when Coffer calls on its behalf (a reactor's or
     * proxy's configured application), or undefined if it is gone or expired.
     */
    async principalFor(tenantId: string, id: string): Promise<Principal | undefined> {
      const app = await findApplication(db, tenantId, id);
      return app ? applicationPrincipal(tenantId, app) : undefined;
    },

    /**
     * The principals of every live application of the tenant that may hold token permissions:
     * whom a token's move must not show more of it (tokens service).
     */
    async tokenGrantees(tenantId: string): Promise<Principal[]> {
      return (await listTokenGrantees(db, tenantId)).map((app) => applicationPrincipal(tenantId, app));
    },

    /** Deletes applications whose expires_at has passed (they stopped authenticating at that instant). */
    async sweepExpired(): Promise<number> {
      let deleted = 0;
      for (const app of await findExpiredApplicationsAcrossTenants(db, 500)) {
        const gone = await db.transaction(async (tx) => {
          if (!(await deleteExpiredApplication(db, app.tenant_id, app.id, tx))) return false;
          await logs.record({ kind: 'system', tenantId: app.tenant_id }, { entityType: 'application', entityId: app.id, operation: 'expire', message: `Application "${app.name}" expired and was deleted` }, tx);
          return true;
        });
        if (gone) deleted++;
      }
      if (deleted > 0) {
        await notifier.invalidate('auth');
        log.info({ deleted }, 'expired applications deleted');
      }
      return deleted;
    },
  };
}

/** An application acting as itself, with no key of its own (reactors, proxies, a move's audience). */
function applicationPrincipal(
  tenantId: string,
  app: { id: string; type: Principal['applicationType']; permissions: Principal['permissions']; rules: Principal['rules']; expires_at: Date | null },
): Principal {
  return {
    kind: 'application',
    tenantId,
    actorId: app.id,
    applicationId: app.id,
    applicationType: app.type,
    keyId: undefined,
    permissions: app.permissions,
    rules: app.rules,
    expiresAt: app.expires_at ?? undefined,
  };
}
