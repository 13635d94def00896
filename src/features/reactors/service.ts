import { wildcardPattern } from '../../db/like.ts';
import type { Database, Tx } from '../../db/database.ts';
import type { GroupCommit } from '../../db/group-commit.ts';
import { uuidv4 } from '../../db/ids.ts';
import type { Notifier } from '../../db/notifications.ts';
import type { Logger } from '../../logger.ts';
import type { Principal } from '../../access/principal.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { afterCommit } from '../../http/idempotency.ts';
import { applyMergePatch } from '../../http/merge-patch.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import { type OutboundClient } from '../../outbound/client.ts';
import { configurationTooLarge, type Sandbox } from '../../sandbox/index.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { ApplicationService } from '../applications/service.ts';
import type { DetokenizeService } from '../detokenize/service.ts';
import type { EventService } from '../events/service.ts';
import type { LogService } from '../logs/service.ts';
import type { TokenService } from '../tokens/service.ts';
import { compileValidator } from '../../http/validate.ts';
import { LiveCache } from '../../live-cache.ts';
import { ReactorBody } from './schema.ts';
import { deleteReactor, findReactor, insertReactor, listReactors, updateReactor, type ReactorRow } from './store.ts';
import { createReactorRuns } from './runs.ts';

export type ReactorInput = { name: string; code: string; configuration: Record<string, string>; application?: { id: string } | null };
export type ReactorPatch = Record<string, unknown>;
/** A reactor with its configuration opened. */
export type Reactor = Omit<ReactorRow, 'configuration_ciphertext' | 'configuration_key_id'> & { configuration: Record<string, string> };
export type ReactorView = Reactor & { application: { id: string; name: string; type: string } | undefined };
/** What a run produces: the spec's Reactor Response, or a problem (`data` is what the code's error class carried). */

export type ReactorLimits = { syncTimeoutMs: number; asyncTimeoutMs: number; memoryMb: number; maxTokens: number };

/** The change notice topic of reactors (src/db/notifications.ts): an update or delete clears every process's cache. */
export const REACTOR_TOPIC = 'reactor';

export type ReactorService = ReturnType<typeof createReactorService>;

export type ReactorDeps = {
  db: Database;
  groupCommit: GroupCommit;
  vault: Vault;
  logs: LogService;
  events: EventService;
  sandbox: Sandbox;
  outbound: OutboundClient;
  applications: ApplicationService;
  tokens: TokenService;
  detokenize: DetokenizeService;
  limits: ReactorLimits;
  log: Logger;
  notifier: Notifier;
  /** How long an invocation may use a reactor it looked up before (0: never); change notices clear it at once. */
  cacheSeconds: number;
};

/**
 * Reactors as stored: create, read, replace, patch and delete, each configuration sealed with
 * the tenant's key. Running them — react, react-async, results, the run job — is in runs.ts.
 */
export function createReactorService(deps: ReactorDeps) {
  const { db, vault, logs, sandbox, applications, notifier } = deps;

  // The reactors that react and react-async invoke, by tenant and id, with the configuration
  // decrypted: held in memory only (never logged), for a few seconds, and cleared by any change
  // notice (an update or delete of a reactor sends one; so does a reconnect of the listener).
  const cache = new LiveCache<Reactor>(deps.cacheSeconds * 1000);
  notifier.onInvalidate(() => cache.invalidate());

  /** The reactor to invoke: from the cache (src/live-cache.ts), or loaded. */
  async function live(principal: Principal, id: string): Promise<Reactor> {
    // Shared by concurrent invocations, so outside any one request's transaction.
    const reactor = await cache.get(`${principal.tenantId}/${id}`, () =>
      db.withoutAmbient(async () => {
        const found = await find(principal.tenantId, id);
        // Shared by concurrent invocations: nothing may change it.
        if (found) Object.freeze(found.configuration);
        return found && Object.freeze(found);
      }),
    );
    if (!reactor) throw ApiError.notFound('reactor');
    return reactor;
  }

  async function validate(principal: Principal, input: ReactorInput, errors: FieldErrorList): Promise<{ id: string; name: string; type: string } | undefined> {
    const failure = sandbox.check(input.code);
    if (failure) errors.add('body.code', failure.detail);
    const tooLarge = configurationTooLarge(input.configuration);
    if (tooLarge) errors.add('body.configuration', tooLarge);
    if (!input.application) return undefined;
    const app = await applications.principalFor(principal.tenantId, input.application.id);
    if (!app) errors.add('body.application.id', 'no such application in this tenant');
    else if (app.applicationType === 'management') errors.add('body.application.id', 'must be a public or private application');
    else return { id: app.applicationId, name: (await applications.get(principal, app.applicationId)).name, type: app.applicationType };
    return undefined;
  }

  async function present(principal: Principal, r: Reactor): Promise<ReactorView> {
    if (!r.application_id) return { ...r, application: undefined };
    const app = await applications.get(principal, r.application_id).catch(() => undefined);
    return { ...r, application: app ? { id: app.id, name: app.name, type: app.type } : undefined };
  }

  /**
   * After a change: an invocation that raced it may have cached the old reactor before the
   * commit; once this resolves, no process serves it any more. Under an idempotency key the
   * change commits only with the reply, so this waits for that commit (it would otherwise clear
   * the cache before it, and wait for no other process).
   */
  function clearedEverywhere(): Promise<void> {
    return afterCommit(() => notifier.invalidateLocal(REACTOR_TOPIC));
  }

  /** The reactor's row, locked until tx ends; the stored id, not the path's spelling, is what later writes use. */
  async function locked(principal: Principal, id: string, tx: Tx): Promise<ReactorRow> {
    const row = await findReactor(db, principal.tenantId, id, tx, true);
    if (!row) throw ApiError.notFound('reactor');
    return row;
  }

  /** Replaces the locked reactor `row` with `input` (a PUT body), in tx. */
  async function write(principal: Principal, row: ReactorRow, input: ReactorInput, tx: Tx): Promise<ReactorView> {
    const errors = new FieldErrorList();
    const app = await validate(principal, input, errors);
    errors.throwIfAny();
    // The configuration is sealed to the stored id (a UUID may come in upper case in the path).
    const sealed = await sealConfiguration(principal.tenantId, row.id, input.configuration);
    const r = await updateReactor(db, principal.tenantId, {
      id: row.id,
      name: input.name,
      code: input.code,
      ...sealed,
      application_id: app?.id ?? null,
      modified_by: principal.actorId,
    }, tx);
    if (!r) throw ApiError.notFound('reactor');
    await logs.record(principal, { entityType: 'reactor', entityId: row.id, operation: 'update', message: `Reactor "${r.name}" updated` }, tx);
    await notifier.invalidate(REACTOR_TOPIC, tx);
    return { ...(await hydrate(r)), application: app };
  }

  async function load(principal: Principal, id: string): Promise<Reactor> {
    const reactor = await find(principal.tenantId, id);
    if (!reactor) throw ApiError.notFound('reactor');
    return reactor;
  }

  async function find(tenantId: string, id: string): Promise<Reactor | undefined> {
    const row = await findReactor(db, tenantId, id);
    return row && hydrate(row);
  }

  async function hydrate(row: ReactorRow): Promise<Reactor> {
    const { configuration_ciphertext, configuration_key_id, ...rest } = row;
    const configuration = (await vault.decrypt(row.tenant_id, configAad(row.id), configuration_ciphertext, configuration_key_id)) as Record<string, string>;
    return { ...rest, configuration };
  }

  async function sealConfiguration(tenantId: string, id: string, configuration: Record<string, string>) {
    const { ciphertext, dataKeyId } = await vault.encrypt(tenantId, configAad(id), configuration);
    return { configuration_ciphertext: ciphertext, configuration_key_id: dataKeyId };
  }

  return {
    async create(principal: Principal, input: ReactorInput): Promise<ReactorView> {
      const errors = new FieldErrorList();
      const app = await validate(principal, input, errors);
      errors.throwIfAny();
      const id = uuidv4();
      const sealed = await sealConfiguration(principal.tenantId, id, input.configuration);
      return db.transaction(async (tx) => {
        const r = await insertReactor(db, principal.tenantId, {
          id,
          name: input.name,
          code: input.code,
          ...sealed,
          application_id: app?.id ?? null,
          created_by: principal.actorId,
        }, tx);
        await logs.record(principal, { entityType: 'reactor', entityId: r.id, operation: 'create', message: `Reactor "${r.name}" created` }, tx);
        return { ...(await hydrate(r)), application: app };
      });
    },

    async list(principal: Principal, q: Offset & { id: string[]; name?: string }) {
      const { rows, total } = await listReactors(db, principal.tenantId, { ids: q.id, namePattern: q.name ? wildcardPattern(q.name) : undefined, ...offsetOf(q) });
      const views = [];
      for (const r of rows) views.push(await present(principal, await hydrate(r)));
      return offsetPage(views, total, q);
    },

    async get(principal: Principal, id: string): Promise<ReactorView> {
      return present(principal, await load(principal, id));
    },

    async update(principal: Principal, requested: string, input: ReactorInput): Promise<ReactorView> {
      const view = await db.transaction(async (tx) => write(principal, await locked(principal, requested, tx), input, tx));
      await clearedEverywhere();
      return view;
    },

    /**
     * RFC 7386 over the stored reactor as a PUT body, then the same checks as a PUT. The row is
     * locked from read to write, so concurrent patches each apply to the one before.
     */
    async patch(principal: Principal, id: string, patch: ReactorPatch): Promise<void> {
      await db.transaction(async (tx) => {
        const row = await locked(principal, id, tx);
        const current = await hydrate(row);
        const base = {
          name: current.name,
          code: current.code,
          configuration: current.configuration,
          ...(current.application_id ? { application: { id: current.application_id } } : {}),
        };
        await write(principal, row, validReactorBody(applyMergePatch(base, patch), 'body'), tx);
      });
      await clearedEverywhere();
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const deleted = await deleteReactor(db, principal.tenantId, id, tx);
        if (!deleted) throw ApiError.notFound('reactor');
        await logs.record(principal, { entityType: 'reactor', entityId: deleted, operation: 'delete', message: 'Reactor deleted' }, tx);
        await notifier.invalidate(REACTOR_TOPIC, tx);
      });
      await clearedEverywhere();
    },

    ...createReactorRuns(deps, { live, hydrate }),
  };
}

const validReactorBody = compileValidator<ReactorInput>(ReactorBody);

function configAad(reactorId: string): string {
  return `reactor-configuration:${reactorId}`;
}

export { RUN_JOB } from './runs.ts';
