import type { Database } from '../../db/database.ts';
import { findTenantSettings } from './store.ts';

/** The quotas a tenant may have set apart from the process defaults, by their setting names. */
export const QUOTA_NAMES = ['detokenize_limit'] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];
export type Quotas = Record<QuotaName, number>;

/** The range an operator may set a quota to (the same as its process-wide setting's). */
export const QUOTA_RANGES: Record<QuotaName, { min: number; max: number }> = { detokenize_limit: { min: 1, max: 10_000 } };

/** The share of the cache time after which a tenant's quotas in use are read again in the background. */
const REFRESH_AFTER = 0.8;

/**
 * A tenant's quotas: its own where an operator set one (`coffer quota`), the process
 * defaults otherwise. Read on the hot path (every detokenization), so kept for `cacheMs`: a
 * change takes effect within that.
 */
export class TenantQuotas {
  private readonly db: Database;
  private readonly defaults: Quotas;
  private readonly cacheMs: number;
  private readonly cache = new Map<string, { quotas: Promise<Quotas>; until: number; refreshAt: number }>();

  constructor(db: Database, defaults: Quotas, cacheMs: number) {
    this.db = db;
    this.defaults = defaults;
    this.cacheMs = cacheMs;
  }

  of(tenantId: string): Promise<Quotas> {
    const now = Date.now();
    const hit = this.cache.get(tenantId);
    if (hit && hit.until > now) {
      // Read again shortly before the entry ends, serving it meanwhile: under steady traffic no
      // detokenization waits for the tenant's settings. A failed read leaves the entry to expire.
      if (hit.refreshAt <= now) {
        hit.refreshAt = Infinity;
        const next = this.read(tenantId);
        next.then(
          () => {
            if (this.cache.get(tenantId) === hit) this.remember(tenantId, next, Date.now());
          },
          () => {},
        );
      }
      return hit.quotas;
    }
    const quotas = this.read(tenantId);
    if (this.cacheMs > 0) {
      this.remember(tenantId, quotas, now);
      quotas.catch(() => this.cache.delete(tenantId));
    }
    return quotas;
  }

  /** Shared by concurrent requests: never inside one request's transaction. */
  private read(tenantId: string): Promise<Quotas> {
    return this.db.withoutAmbient(() => this.load(tenantId));
  }

  private remember(tenantId: string, quotas: Promise<Quotas>, now: number): void {
    if (!this.cache.has(tenantId) && this.cache.size >= 10_000) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(tenantId, { quotas, until: now + this.cacheMs, refreshAt: now + REFRESH_AFTER * this.cacheMs });
  }

  private async load(tenantId: string): Promise<Quotas> {
    const settings = (await findTenantSettings(this.db, tenantId)) ?? {};
    const out = { ...this.defaults };
    for (const name of QUOTA_NAMES) {
      const value = settings[name];
      const { min, max } = QUOTA_RANGES[name];
      if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) out[name] = value;
    }
    return out;
  }
}
