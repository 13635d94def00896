import { Coalescer } from './coalescer.ts';

/** A row's key in a table of any tenants' rows. */
export type TenantKey = { tenantId: string; id: string };

/**
 * Reads of rows by (tenant, id) outside a transaction: concurrent lookups of any tenants share
 * one statement (`find`, which may leave out keys it finds nothing for, and may return a row
 * once for a key given twice). Each caller gets its own key's row, or undefined.
 */
export function keyedLookup<R extends { tenant_id: string; id: string }>(find: (keys: TenantKey[]) => Promise<R[]>): Coalescer<TenantKey, R | undefined> {
  return new Coalescer<TenantKey, R | undefined>(
    async (keys) => {
      const byKey = new Map((await find(keys)).map((r) => [`${r.tenant_id}/${r.id}`, r]));
      return keys.map((k) => byKey.get(`${k.tenantId}/${k.id}`));
    },
    { maxBatch: 256, maxInFlight: 4, isolateFailures: false },
  );
}
