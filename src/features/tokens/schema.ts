import { Type } from 'typebox';
import { MapOf, Nullable, StringMap, Timestamp, Uuid } from '../../http/schemas.ts';
import { CursorQuery, OffsetQuery } from '../../http/pagination.ts';
import { TOKEN_TYPE_NAMES } from '../../vault/token-types.ts';

/**
 * Caller-chosen ids: letters, digits, `_ - .`, so they can appear in detokenization expressions;
 * never `.` or `..`, which URL normalisation turns into another path (no /tokens/{id} could reach them).
 * Token search (src/search/query.ts) checks its `id:` terms with the same pattern.
 */
export const TOKEN_ID_PATTERN = '^(?!\\.\\.?$)[A-Za-z0-9_.-]{1,200}$';
export const TokenId = Type.String({ pattern: TOKEN_ID_PATTERN, description: 'Token id (UUID, or caller-chosen)' });
const Container = Type.String({ minLength: 1, maxLength: 500 });
/** The most metadata keys a token holds (also checked after a merge patch adds keys). */
export const MAX_METADATA_KEYS = 50;
const Metadata = StringMap({ minLength: 1, maxLength: 100 }, Type.String({ maxLength: 500 }), { maxProperties: MAX_METADATA_KEYS });
const Expression = Type.String({ maxLength: 2000 });

const tokenFields = {
  data: Type.Unknown({ description: 'The secret data; validated per type' }),
  containers: Type.Array(Container, { minItems: 1, maxItems: 10, uniqueItems: true }),
  metadata: Metadata,
  mask: Type.Unknown({ description: 'Mask expression, or an object of expressions mirroring the data; null for none' }),
  fingerprint_expression: Nullable(Expression),
  search_indexes: Type.Array(Expression, { maxItems: 20 }),
  deduplicate_token: Type.Boolean(),
  expires_at: Nullable(Timestamp),
};

/** `type` and `data`, or `token_intent_id` in their place (the service requires one or the other). */
export const CreateTokenBody = Type.Object({
  id: Type.Optional(TokenId),
  type: Type.Optional(Type.Enum(TOKEN_TYPE_NAMES, { description: 'Required unless token_intent_id is given' })),
  data: Type.Optional(Type.Unknown({ description: 'The secret data; validated per type. Required unless token_intent_id is given' })),
  token_intent_id: Type.Optional(Uuid),
  containers: Type.Optional(tokenFields.containers),
  metadata: Type.Optional(tokenFields.metadata),
  mask: Type.Optional(tokenFields.mask),
  fingerprint_expression: Type.Optional(tokenFields.fingerprint_expression),
  search_indexes: Type.Optional(tokenFields.search_indexes),
  deduplicate_token: Type.Optional(tokenFields.deduplicate_token),
  expires_at: Type.Optional(tokenFields.expires_at),
}, { additionalProperties: false });

/**
 * A merge patch: every field optional; null removes metadata keys, mask (or a mask's member),
 * fingerprint, search indexes or expiry.
 */
export const UpdateTokenBody = Type.Object({
  data: Type.Optional(tokenFields.data),
  containers: Type.Optional(tokenFields.containers),
  metadata: Type.Optional(Nullable(StringMap({ minLength: 1, maxLength: 100 }, Nullable(Type.String({ maxLength: 500 }))), { type: ['object', 'null'] })),
  mask: Type.Optional(tokenFields.mask),
  fingerprint_expression: Type.Optional(tokenFields.fingerprint_expression),
  search_indexes: Type.Optional(Nullable(tokenFields.search_indexes)),
  deduplicate_token: Type.Optional(tokenFields.deduplicate_token),
  expires_at: Type.Optional(tokenFields.expires_at),
}, { additionalProperties: false });

export const TokenSchema = Type.Object({
  id: Type.String(),
  type: Type.String(),
  tenant_id: Uuid,
  data: Type.Optional(Type.Unknown()),
  containers: Type.Array(Type.String()),
  // Absent only when a deduplicating create answers with a token the key may not read: that
  // answer names the token (id, type, containers, fingerprint) and shows nothing it holds.
  metadata: Type.Optional(MapOf(Type.String())),
  mask: Type.Optional(Type.Unknown()),
  // Never shown to keys held by clients (public and session keys): it confirms a guessed value.
  fingerprint: Type.Optional(Type.String({ description: 'Absent for a token without one, and in answers to public and session keys' })),
  fingerprint_expression: Type.Optional(Type.String()),
  search_indexes: Type.Optional(Type.Array(Type.String())),
  deduplicate_token: Type.Boolean(),
  card: Type.Optional(Type.Object({
    bin: Type.String(),
    last4: Type.String(),
    expiration_month: Type.Optional(Type.Integer()),
    expiration_year: Type.Optional(Type.Integer()),
    brand: Type.String(),
  })),
  // A routing-number token has no account number, and an account-number token no routing number.
  bank: Type.Optional(Type.Object({ routing_number: Type.Optional(Type.String()), account_number_last4: Type.Optional(Type.String()) })),
  expires_at: Type.Optional(Timestamp),
  // Shown, never part of the data: not addressable in expressions, proxies or reactors.
  _extras: Type.Optional(Type.Object({ tsp_details: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }, { description: 'What a token made from a token intent carried over: tsp_details of a Google Pay token' })),
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
});

/** Filters shared by both list endpoints; `metadata.<key>=value` filters by metadata. */
const filters = {
  id: Type.Array(TokenId, { default: [], maxItems: 100 }),
  type: Type.Array(Type.Enum(TOKEN_TYPE_NAMES), { default: [], maxItems: 20 }),
  container: Type.Optional(Container),
  // An empty value would otherwise be no filter at all, and list every token.
  fingerprint: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
};
// The key is everything after `metadata.`: metadata keys may hold dots, and line breaks, themselves.
const metadataFilters = { patternProperties: { '^metadata\\.[\\s\\S]{1,100}$': Type.String({ maxLength: 500 }) }, additionalProperties: false };

export const ListTokensQuery = Type.Object({ ...filters, ...OffsetQuery() }, metadataFilters);
export const ListTokensV2Query = Type.Object({ ...filters, ...CursorQuery }, metadataFilters);

export const SearchTokensBody = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 2000 }),
  // null asks for the first page; "" is no cursor this endpoint returns, not the first page again.
  start: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 500 }))),
  size: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
});
