import { iso } from '../../http/schemas.ts';
import type { BankView, CardView } from '../../vault/token-types.ts';
import type { TokenView } from './service.ts';

/** The response body of a token, field by field; `data` only when the transform shows it. */
export function presentToken(v: TokenView) {
  const t = v.row;
  const fingerprint = v.noFingerprint ? undefined : (t.fingerprint ?? undefined);
  if (v.withheld) {
    return { id: t.id, type: t.type, tenant_id: t.tenant_id, containers: t.containers, fingerprint, deduplicate_token: t.deduplicate_token, created_at: t.created_at.toISOString() };
  }
  const views = (t.views ?? {}) as { card?: CardView; bank?: BankView; _extras?: Record<string, unknown> };
  return {
    id: t.id,
    type: t.type,
    tenant_id: t.tenant_id,
    ...(v.data !== undefined ? { data: v.data } : {}),
    containers: t.containers,
    metadata: t.metadata,
    ...(t.mask !== null ? { mask: JSON.parse(t.mask) } : {}),
    fingerprint,
    fingerprint_expression: t.fingerprint_expression ?? undefined,
    search_indexes: t.search_indexes,
    deduplicate_token: t.deduplicate_token,
    ...(views.card ? { card: views.card } : {}),
    ...(views.bank ? { bank: views.bank } : {}),
    expires_at: iso(t.expires_at),
    ...(views._extras ? { _extras: views._extras } : {}),
    created_by: t.created_by ?? undefined,
    created_at: t.created_at.toISOString(),
    modified_by: t.modified_by ?? undefined,
    modified_at: iso(t.modified_at),
  };
}
