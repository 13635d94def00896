import type { Database } from '../../db/database.ts';
import { uuidv4 } from '../../db/ids.ts';
import type { Principal } from '../../access/principal.ts';
import { permissionsFor } from '../../access/permissions.ts';
import { ApiError } from '../../http/errors.ts';
import type { ApplicationService } from '../applications/service.ts';
import type { LogService } from '../logs/service.ts';
import type { UserService } from '../users/service.ts';
import { countTenants, findTenant, insertOwner, insertTenant, lockTenantCreation, type Tenant } from './store.ts';

export type TenantService = ReturnType<typeof createTenantService>;
export type InitializedTenant = { tenant_id: string; application_id: string; api_key: string; owner_user_id: string };
export type TenantOptions = {
  /** The OWNER's e-mail address (COFFER_OWNER_EMAIL, `--owner-email`); an address another user has already is a 409. */
  ownerEmail?: string;
};

export function createTenantService(deps: { db: Database; logs: LogService; applications: ApplicationService; users: UserService }) {
  const { db, logs, applications, users } = deps;
  async function initialize(name: string, opts: TenantOptions = {}): Promise<InitializedTenant> {
    return db.transaction(async (tx) => {
      const tenantId = uuidv4();
      let ownerId = uuidv4();
      const existing = opts.ownerEmail ? await users.byEmail(opts.ownerEmail, tx) : undefined;
      // An owner who is a user already (of another tenant) owns this one as that user.
      if (existing) ownerId = existing.id;
      await insertTenant(db, { id: tenantId, name, owner_id: ownerId }, tx);
      await insertOwner(db, tenantId, { user_id: ownerId, member_id: uuidv4(), email: opts.ownerEmail ?? null, existing: existing !== undefined }, tx);
      const system = { kind: 'system' as const, tenantId };
      await logs.record(system, { entityType: 'tenant', entityId: tenantId, operation: 'create', message: `Tenant "${name}" created` }, tx);
      const app = await applications.createFor(
        system,
        tenantId,
        {
          name: 'Management',
          type: 'management',
          permissions: permissionsFor('management').map((p) => p.type),
          rules: [],
          create_key: true,
        },
        tx,
      );
      return { tenant_id: tenantId, application_id: app.id, api_key: app.key!, owner_user_id: ownerId };
    });
  }

  return {
    /**
     * A tenant, its OWNER member and a management application holding every management
     * permission, all in one transaction. There is no public endpoint for this: the CLI
     * (`coffer init`) and the first start on an empty database call it.
     */
    initialize,

    /** The first start on an empty database creates one tenant; the lock makes that true with many processes. */
    async initializeIfEmpty(name: string, announce: (created: InitializedTenant) => void | Promise<void> = () => {}, opts: TenantOptions = {}): Promise<InitializedTenant | undefined> {
      return db.transaction(async (tx) => {
        await lockTenantCreation(db, tx);
        if ((await countTenants(db, tx)) > 0) return undefined;
        const created = await initialize(name, opts);
        // Shown before the commit: a crash right after it must not leave a tenant whose key
        // nobody ever saw. If the commit fails instead, the next start makes a new one.
        await announce(created);
        return created;
      });
    },

    /** A tenant by id (the pages people open name theirs); undefined when there is none. */
    byId: (tenantId: string) => findTenant(db, tenantId),

    async getSelf(principal: Principal): Promise<Tenant> {
      const tenant = await findTenant(db, principal.tenantId);
      if (!tenant) throw ApiError.notFound('tenant');
      return tenant;
    },
  };
}
