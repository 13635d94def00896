/**
 * Proxies: their management (create, list, get, update, patch, delete) here, and their
 * invocation (./invoke.ts), which forwards a caller's request to the proxy's destination.
 */
import { wildcardPattern } from '../../db/like.ts';
import { randomBytes } from 'node:crypto';
import type { Database } from '../../db/database.ts';
import { uuidv4 } from '../../db/ids.ts';
import type { Notifier } from '../../db/notifications.ts';
import type { Principal } from '../../access/principal.ts';
import type { Authenticator, MemberAuthenticator } from '../../http/auth.ts';
import { ApiError } from '../../http/errors.ts';
import { applyMergePatch } from '../../http/merge-patch.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import { compileValidator } from '../../http/validate.ts';
import type { OutboundClient } from '../../outbound/client.ts';
import type { Sandbox } from '../../sandbox/index.ts';
import { hashApiKey } from '../../vault/api-keys.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { ApplicationService } from '../applications/service.ts';
import type { DetokenizeService } from '../detokenize/service.ts';
import type { LogService } from '../logs/service.ts';
import type { TokenService } from '../tokens/service.ts';
import { createInvoker } from './invoke.ts';
import { createLiveProxies } from './live.ts';
import { ProxyBody, type ProxyInput } from './schema.ts';
import { seal, unseal, type Sealed } from './sealed.ts';
import { deleteProxy, findProxy, insertProxy, listProxies, updateProxy, type ProxyRow } from './store.ts';
import { createTransforms } from './transforms.ts';
import { createProxyValidator } from './validate.ts';

export type ProxyService = ReturnType<typeof createProxyService>;
/** A proxy as its owner sees it: the row with its key and configuration unsealed. */
export type ProxyView = ProxyRow & { key: string; configuration: Record<string, string> | null };

const KEY_PREFIX = 'proxy_';
const validProxyBody = compileValidator<ProxyInput>(ProxyBody);

export function createProxyService(deps: {
  db: Database;
  vault: Vault;
  logs: LogService;
  notifier: Notifier;
  outbound: OutboundClient;
  sandbox: Sandbox;
  authenticator: Authenticator;
  /** Signed-in members, who may invoke proxies too (the console's "try it"). */
  members?: MemberAuthenticator;
  applications: ApplicationService;
  detokenize: DetokenizeService;
  tokens: TokenService;
  /** Destination deadline (and transform time limit), ms. */
  timeoutMs: number;
  /** Largest request body, and largest destination response a response transform buffers. */
  maxBodyBytes: number;
  /** The most that response may decompress to. */
  maxDecompressedBytes: number;
  /** Anonymous invocations per second per (proxy, client address); 0 turns the limit off. */
  anonymousRate: number;
  anonymousBurst: number;
  cacheSeconds: number;
}) {
  const { db, vault, logs, notifier } = deps;
  const validate = createProxyValidator(deps);
  const live = createLiveProxies(deps);
  const invoker = createInvoker({ ...deps, live, transforms: createTransforms({ ...deps, live }) });

  async function view(row: ProxyRow): Promise<ProxyView> {
    const secret = await unseal(vault, row);
    return { ...row, key: secret.key, configuration: secret.configuration };
  }

  /** The stored proxy as a PUT body: what a merge patch applies to. */
  function asInput(v: ProxyView): Record<string, unknown> {
    return {
      name: v.name,
      destination_url: v.destination_url,
      require_auth: v.require_auth,
      ...(v.request_transform ? { request_transform: v.request_transform } : {}),
      ...(v.response_transform ? { response_transform: v.response_transform } : {}),
      ...(v.application_id ? { application: { id: v.application_id } } : {}),
      ...(v.configuration ? { configuration: v.configuration } : {}),
    };
  }

  /**
   * Replaces the proxy with `input` (a PUT body). The row is read locked in the same
   * transaction as the write, and `change` builds the input from what was read, so concurrent
   * patches each apply to the one before.
   */
  async function replace(principal: Principal, id: string, change: (current: ProxyView) => ProxyInput, operation: 'update' | 'patch'): Promise<ProxyView> {
    const result = await db.transaction(async (tx) => {
      const locked = await findProxy(db, principal.tenantId, id, tx, true);
      if (!locked) throw ApiError.notFound('proxy');
      const current = await view(locked);
      const { configuration, ...fields } = await validate(principal, change(current));
      const sealed = await seal(vault, principal.tenantId, current.id, { key: current.key, configuration } satisfies Sealed);
      const updated = await updateProxy(
        db,
        principal.tenantId,
        current.id,
        { ...fields, secret_ciphertext: sealed.ciphertext, secret_key_id: sealed.dataKeyId, modified_by: principal.actorId },
        tx,
      );
      if (!updated) throw ApiError.notFound('proxy');
      await logs.record(principal, { entityType: 'proxy', entityId: current.id, operation, message: `Proxy "${updated.name}" updated` }, tx);
      await notifier.invalidate('proxy', tx);
      return { ...updated, key: current.key, configuration };
    });
    // A request that raced the change may have re-cached the old proxy before the commit.
    notifier.invalidateLocal('proxy');
    return result;
  }

  return {
    errorOf: invoker.errorOf,
    invoke: invoker.invoke,

    async create(principal: Principal, input: ProxyInput): Promise<ProxyView> {
      const { configuration, ...fields } = await validate(principal, input);
      const id = uuidv4();
      const key = KEY_PREFIX + randomBytes(32).toString('base64url');
      const sealed = await seal(vault, principal.tenantId, id, { key, configuration } satisfies Sealed);
      const row = await db.transaction(async (tx) => {
        const inserted = await insertProxy(
          db,
          principal.tenantId,
          {
            id,
            ...fields,
            key_hash: hashApiKey(key),
            secret_ciphertext: sealed.ciphertext,
            secret_key_id: sealed.dataKeyId,
            created_by: principal.actorId,
          },
          tx,
        );
        await logs.record(principal, { entityType: 'proxy', entityId: id, operation: 'create', message: `Proxy "${inserted.name}" created` }, tx);
        return inserted;
      });
      return { ...row, key, configuration };
    },

    async list(principal: Principal, q: Offset & { id: string[]; name?: string }) {
      const namePattern = q.name === undefined ? undefined : wildcardPattern(q.name);
      const { rows, total } = await listProxies(db, principal.tenantId, { ids: q.id, namePattern, ...offsetOf(q) });
      return offsetPage(await Promise.all(rows.map(view)), total, q);
    },

    async get(principal: Principal, id: string): Promise<ProxyView> {
      const row = await findProxy(db, principal.tenantId, id);
      if (!row) throw ApiError.notFound('proxy');
      return view(row);
    },

    async update(principal: Principal, id: string, input: ProxyInput): Promise<ProxyView> {
      return replace(principal, id, () => input, 'update');
    },

    /** RFC 7386 over the proxy as a PUT body, then the same checks as a PUT. */
    async patch(principal: Principal, id: string, patch: Record<string, unknown>): Promise<void> {
      await replace(principal, id, (current) => validProxyBody(applyMergePatch(asInput(current), patch), 'body'), 'patch');
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const gone = await deleteProxy(db, principal.tenantId, id, tx);
        if (!gone) throw ApiError.notFound('proxy');
        await logs.record(principal, { entityType: 'proxy', entityId: id, operation: 'delete', message: `Proxy "${gone.name}" deleted` }, tx);
        await notifier.invalidate('proxy', tx);
      });
      notifier.invalidateLocal('proxy');
    },
  };
}
