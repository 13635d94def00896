import type { Database } from '../../db/database.ts';
import { LiveCache } from '../../live-cache.ts';
import { findTenantSettings } from './store.ts';

/** The quotas a tenant may have set apart from the process defaults, by their setting names. */
export const QUOTA_NAMES = ['detokenize_limit', 'token_intent_ttl_hours'] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];
export type Quotas = Record<QuotaName, number>;

/** The range an operator may set a quota to (the same as its process-wide setting's). */
export const QUOTA_RANGES: Record<QuotaName, { min: number; max: number }> = {
  detokenize_limit: { min: 1, max: 10_000 },
  token_intent_ttl_hours: { min: 1, max: 48 },
};

/**
 * A tenant's quotas: its own where an operator set one (`coffer quota`), the process
 * defaults otherwise. Read on the hot path (every detokenization, every token intent), so kept for `cacheMs`
 * (src/live-cache.ts: read again in the background while in use): a change takes effect
 * within that.
 */
export class TenantQuotas {
  private readonly db: Database;
  private readonly defaults: Quotas;
  private readonly cache: LiveCache<Quotas>;

  constructor(db: Database, defaults: Quotas, cacheMs: number) {
    this.db = db;
    this.defaults = defaults;
    this.cache = new LiveCache(cacheMs);
  }

  /** Never undefined: a tenant without settings of its own has the defaults. */
  of(tenantId: string): Promise<Quotas> {
    // Shared by concurrent requests: never inside one request's transaction.
    return this.cache.get(tenantId, () => this.db.withoutAmbient(() => this.load(tenantId))) as Promise<Quotas>;
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
