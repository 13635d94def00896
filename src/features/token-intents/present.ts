import type { Static } from 'typebox';
import type { TokenIntentSchema } from './schema.ts';
import type { TokenIntentView } from './service.ts';

type TokenIntentResponse = Static<typeof TokenIntentSchema>;

/** The response object of a token intent, field by field; its data is never part of it. */
export function presentTokenIntent({ row, noFingerprint }: TokenIntentView): TokenIntentResponse {
  const details = row.details as Pick<Partial<TokenIntentResponse>, 'card' | 'bank' | 'authentication'>;
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    type: row.type as TokenIntentResponse['type'],
    card: details.card ?? null,
    bank: details.bank ?? null,
    authentication: details.authentication ?? null,
    fingerprint: noFingerprint ? null : row.fingerprint,
    expires_at: row.expires_at.toISOString(),
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    _extras: row.extras,
  };
}
