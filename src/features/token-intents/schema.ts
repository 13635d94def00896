import { Type } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts';

/** The token types an intent may hold: what wallets, checkouts and bank forms hand over. */
export const TOKEN_INTENT_TYPES = ['card', 'bank', 'network_token'] as const;
export type TokenIntentType = (typeof TOKEN_INTENT_TYPES)[number];

export const CreateTokenIntentBody = Type.Object({
  type: Type.Enum(TOKEN_INTENT_TYPES),
  data: Type.Unknown({ description: 'The secret data, validated exactly as a token of the same type; never returned' }),
}, { additionalProperties: false });

const CardDetails = Type.Object({
  bin: Type.String(),
  last4: Type.String(),
  expiration_month: Type.Optional(Type.Integer()),
  expiration_year: Type.Optional(Type.Integer()),
  brand: Type.String(),
  funding: Type.String({ description: 'credit, debit, prepaid or unknown (from the built-in BIN table)' }),
  authentication: Type.String({ description: 'sca_required, sca_optional or unknown: whether the issuer is where strong customer authentication applies' }),
});

const BankDetails = Type.Object({ routing_number: Type.String(), last4: Type.String() });

const Authentication = Type.Object({ threeds_cryptogram: Type.String(), eci_indicator: Type.String() });

const TspDetails = Type.Object({
  tsp: Type.String(),
  auth_method: Type.String(),
  message_id: Type.String(),
  eci_indicator: Type.String(),
  assurance_details: Type.Object({ account_verified: Type.Boolean(), card_holder_authenticated: Type.Boolean() }),
});

export const TokenIntentSchema = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  type: Type.Enum(TOKEN_INTENT_TYPES),
  card: Nullable(CardDetails, { description: 'A card or network token intent: what may be shown of the card' }),
  bank: Nullable(BankDetails),
  authentication: Nullable(Authentication, { description: 'A network token intent: its cryptogram and ECI' }),
  fingerprint: Nullable(Type.String(), { description: 'Equal to the fingerprint a token made from it gets by default' }),
  expires_at: Timestamp,
  created_by: Nullable(Uuid),
  created_at: Timestamp,
  _extras: Type.Object({ tsp_details: Type.Optional(TspDetails) }),
});

export const TokenIntentId = Type.Object({ id: Uuid });
