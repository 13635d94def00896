/**
 * The proxies invocations use, cached per process for a few seconds (src/live-cache.ts): an
 * invocation then costs no database read and no unsealing. Any change notice clears the cache.
 */
import type { Database } from '../../db/database.ts';
import type { Notifier } from '../../db/notifications.ts';
import type { Principal } from '../../access/principal.ts';
import { LiveCache } from '../../live-cache.ts';
import { hashApiKey } from '../../vault/api-keys.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { ApplicationService } from '../applications/service.ts';
import { unseal } from './sealed.ts';
import { findProxyByKeyHash, type ProxyRow } from './store.ts';

/** A proxy as invocations use it. */
export type Live = {
  row: ProxyRow;
  configuration: Record<string, string>;
  /** The configured application's principal, looked up once per cache entry. */
  application?: Promise<Principal | undefined>;
};

export type LiveProxies = ReturnType<typeof createLiveProxies>;

export function createLiveProxies(deps: { db: Database; vault: Vault; notifier: Notifier; applications: ApplicationService; cacheSeconds: number }) {
  const { db, vault, applications } = deps;
  // By the proxy key itself (held in memory anyway): a hit costs no hashing.
  const cache = new LiveCache<Live>(deps.cacheSeconds * 1000);
  deps.notifier.onInvalidate(() => cache.invalidate());

  return {
    /** The proxy a key invokes, from the cache or looked up; undefined when no proxy has that key. */
    byKey(key: string): Promise<Live | undefined> {
      // Shared by concurrent invocations, so outside any one request's transaction.
      return cache.get(key, () =>
        db.withoutAmbient(async () => {
          const row = await findProxyByKeyHash(db, hashApiKey(key));
          if (!row) return undefined;
          const secret = await unseal(vault, row);
          return { row, configuration: secret.configuration ?? {} };
        }),
      );
    },

    /** The proxy's application as a principal, or undefined when it has none (or it is gone or expired). */
    async applicationOf(entry: Live): Promise<Principal | undefined> {
      if (!entry.row.application_id) return undefined;
      entry.application ??= applications.principalFor(entry.row.tenant_id, entry.row.application_id).catch((err) => {
        entry.application = undefined;
        throw err;
      });
      const principal = await entry.application;
      if (principal?.expiresAt && principal.expiresAt.getTime() <= Date.now()) return undefined;
      return principal;
    },
  };
}
