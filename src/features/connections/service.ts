import { randomUUID } from 'node:crypto';
import type { Principal } from '../../access/principal.ts';
import type { Database } from '../../db/database.ts';
import type { Notifier } from '../../db/notifications.ts';
import { ApiError } from '../../http/errors.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import { LiveCache } from '../../live-cache.ts';
import {
  checkConnectionConfig, ConnectionConfigError, createProcessor, PROCESSOR_SETTINGS, type Processor, type ProcessorDeps, type ProcessorName,
} from '../../processors/index.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { LogService } from '../logs/service.ts';
import type { CreateConnectionInput, PatchConnectionInput } from './schema.ts';
import { type ConnectionRow, deleteConnection, findConnection, insertConnection, listConnections, updateConnection } from './store.ts';

/** A connection ready for a call: its row and the processor built from its settings and credentials. */
export type LiveConnection = { row: ConnectionRow; processor: Processor };

export type ConnectionService = ReturnType<typeof createConnectionService>;

const TOPIC = 'connection';

/**
 * Connections: a tenant's processor accounts (`coffer-test`, `stripe`). Credentials are sealed
 * with the tenant's key, bound to the connection, and never leave Coffer except to the processor.
 * The transactions feature gets a connection's processor through `processorFor`, cached per
 * process for a few seconds (any change notice clears it).
 */
export function createConnectionService(deps: {
  db: Database;
  vault: Vault;
  logs: LogService;
  notifier: Notifier;
  processorDeps: ProcessorDeps;
  cacheSeconds: number;
}) {
  const { db, vault, logs, notifier, processorDeps } = deps;
  const cache = new LiveCache<LiveConnection>(deps.cacheSeconds * 1000);
  notifier.onInvalidate((topic) => {
    if (topic === TOPIC || topic === '*') cache.invalidate();
  });
  const aad = (id: string) => `connection:${id}`;

  function check(processor: string, settings: Record<string, unknown>, credentials: Record<string, string>): void {
    try {
      checkConnectionConfig({ processor, settings, credentials });
    } catch (err) {
      if (err instanceof ConnectionConfigError) throw ApiError.field(`body.${err.field}`, err.message);
      throw err;
    }
  }

  async function open(row: ConnectionRow): Promise<Record<string, string>> {
    return (await vault.decrypt(row.tenant_id, aad(row.id), row.credentials, row.credentials_key_id)) as Record<string, string>;
  }

  async function live(row: ConnectionRow): Promise<LiveConnection> {
    const processor = createProcessor({ processor: row.processor, connection_id: row.id, settings: row.settings, credentials: await open(row) }, processorDeps);
    return { row, processor };
  }

  async function changed(): Promise<void> {
    cache.invalidate();
    await notifier.invalidate(TOPIC).catch(() => {});
  }

  return {
    async create(principal: Principal, input: CreateConnectionInput): Promise<ConnectionRow> {
      const settings = input.settings ?? {};
      const credentials = input.credentials ?? {};
      check(input.processor, settings, credentials);
      const id = randomUUID();
      const sealed = await vault.encrypt(principal.tenantId, aad(id), credentials);
      return db.transaction(async (tx) => {
        const row = await insertConnection(db, {
          tenant_id: principal.tenantId, id, name: input.name, processor: input.processor, settings,
          credentials: sealed.ciphertext, credentials_key_id: sealed.dataKeyId, created_by: principal.actorId,
        }, tx);
        await logs.record(principal, { entityType: 'connection', entityId: id, operation: 'create', message: `Connection "${input.name}" (${input.processor}) created` }, tx);
        return row;
      });
    },

    async get(principal: Principal, id: string): Promise<ConnectionRow> {
      const row = await findConnection(db, principal.tenantId, id);
      if (!row) throw ApiError.notFound('connection');
      return row;
    },

    async list(principal: Principal, q: Offset) {
      const { rows, total } = await listConnections(db, principal.tenantId, offsetOf(q));
      return offsetPage(rows, total, q);
    },

    /** A merge patch: `settings` merged over the current ones (null removes one), `credentials` replaced whole. */
    async update(principal: Principal, id: string, patch: PatchConnectionInput): Promise<ConnectionRow> {
      const row = await db.transaction(async (tx) => {
        const current = await findConnection(db, principal.tenantId, id, { tx, lock: true });
        if (!current) throw ApiError.notFound('connection');
        const settings = { ...current.settings };
        for (const [key, value] of Object.entries(patch.settings ?? {})) {
          if (value === null) delete settings[key];
          else settings[key] = value;
        }
        const credentials = patch.credentials ?? (await open(current));
        check(current.processor, settings, credentials);
        // Bound to the stored id: the path's may be spelt in upper case, which PostgreSQL matches but the AAD would not.
        const sealed = await vault.encrypt(principal.tenantId, aad(current.id), credentials);
        const updated = await updateConnection(db, principal.tenantId, id, {
          name: patch.name ?? current.name, settings, credentials: sealed.ciphertext, credentials_key_id: sealed.dataKeyId, modified_by: principal.actorId,
        }, tx);
        const what = [patch.name !== undefined && 'name', patch.settings && 'settings', patch.credentials && 'credentials'].filter(Boolean).join(', ');
        await logs.record(principal, { entityType: 'connection', entityId: id, operation: 'update', message: `Connection "${updated.name}" updated (${what || 'nothing'})` }, tx);
        return updated;
      });
      await changed();
      return row;
    },

    /** New transactions can no longer use it; its transactions still capture, void and refund through it. */
    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const gone = await deleteConnection(db, principal.tenantId, id, principal.actorId, tx);
        if (!gone) throw ApiError.notFound('connection');
        await logs.record(principal, { entityType: 'connection', entityId: id, operation: 'delete', message: `Connection "${gone.name}" deleted` }, tx);
      });
      await changed();
    },

    /**
     * The connection's processor for a call. A new transaction needs a live connection (`field`
     * names the request field for the 404); a transaction's later calls (`withDeleted`) use its
     * connection even once deleted.
     */
    async processorFor(tenantId: string, id: string, opts: { withDeleted?: boolean; field?: string } = {}): Promise<LiveConnection> {
      const entry = await cache.get(`${tenantId}/${id}`, () =>
        db.withoutAmbient(async () => {
          const row = await findConnection(db, tenantId, id, { withDeleted: true });
          return row ? live(row) : undefined;
        }),
      );
      if (!entry || (entry.row.deleted_at && !opts.withDeleted)) {
        const message = `connection ${id} does not exist`;
        throw new ApiError(404, message, opts.field ? { [opts.field]: [message] } : undefined);
      }
      return entry;
    },
  };
}

/** What the API shows of a connection: every setting with its defaults, the names of its credentials. */
export function presentConnection(row: ConnectionRow) {
  const spec = PROCESSOR_SETTINGS[row.processor as ProcessorName];
  return {
    type: 'connection' as const,
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    processor: row.processor,
    settings: { ...(spec?.settings ?? {}), ...row.settings },
    credentials: [...(spec?.credentials ?? [])],
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    modified_by: row.modified_by,
    modified_at: row.modified_at.toISOString(),
  };
}
