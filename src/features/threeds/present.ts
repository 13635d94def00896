import { iso } from '../../http/schemas.ts';
import type { AuthenticationResult } from '../../threeds/index.ts';
import type { AuthenticationResultResponse, SessionResponseBody } from './schema.ts';
import type { SessionRow } from './store.ts';

/** The 3DS Session, field by field, in the spec's names; the stored challenge state is never part of it. */
export function presentSession(row: SessionRow): SessionResponseBody {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    type: row.type,
    ...(row.pan_token_id !== null ? { pan_token_id: row.pan_token_id } : {}),
    ...(row.token_id !== null ? { token_id: row.token_id } : {}),
    ...(row.token_intent_id !== null ? { token_intent_id: row.token_intent_id } : {}),
    card_brand: row.card_brand,
    expiration_date: row.expires_at.toISOString(),
    created_date: row.created_at.toISOString(),
    created_by: row.created_by ?? undefined,
    modified_date: iso(row.modified_at),
    modified_by: row.modified_by ?? undefined,
    ...(row.device !== null ? { device: row.device } : {}),
    ...(row.device_info !== null ? { device_info: row.device_info } : {}),
    version: row.version,
    method: {
      ...(row.method.method_url ? { method_url: row.method.method_url } : {}),
      ...(row.method.method_completion_indicator ? { method_completion_indicator: row.method.method_completion_indicator } : {}),
    },
    ...(row.authentication ? { authentication: presentAuthentication(row.authentication) } : {}),
  };
}

/** The 3DS Authentication result as the API shows it: what the provider gave, field by field. */
export function presentAuthentication(r: AuthenticationResult): AuthenticationResultResponse {
  return {
    threeds_version: r.threeds_version,
    acs_transaction_id: r.acs_transaction_id,
    ds_transaction_id: r.ds_transaction_id,
    acs_reference_number: r.acs_reference_number,
    ds_reference_number: r.ds_reference_number,
    authentication_status: r.authentication_status,
    authentication_status_code: r.authentication_status_code,
    authentication_status_reason: r.authentication_status_reason,
    authentication_status_reason_code: r.authentication_status_reason_code,
    directory_status_code: r.directory_status_code,
    eci: r.eci,
    authentication_value: r.authentication_value,
    liability_shifted: r.liability_shifted,
    challenge_preference: r.challenge_preference,
    challenge_preference_code: r.challenge_preference_code,
    acs_challenge_url: r.acs_challenge_url,
    acs_challenge_mandated: r.acs_challenge_mandated,
    authentication_challenge_type: r.authentication_challenge_type,
    challenge_attempts: r.challenge_attempts,
    challenge_cancel_reason: r.challenge_cancel_reason,
    challenge_cancel_reason_code: r.challenge_cancel_reason_code,
    message_extensions: r.message_extensions ?? [],
  };
}
