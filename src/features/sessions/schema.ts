import { Type } from 'typebox';
import { AccessRuleSchema } from '../../access/rules.ts';
import { Timestamp } from '../../http/schemas.ts';

export const SessionCreated = Type.Object({
  session_key: Type.String({ description: 'The session API key; it has no access until authorized. Never share it.' }),
  nonce: Type.String({ description: 'One-time code the private backend uses to authorize the session' }),
  expires_at: Timestamp,
});

export const AuthorizeSessionBody = Type.Object({
  nonce: Type.String({ minLength: 1, maxLength: 200 }),
  permissions: Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100, default: [] }),
  rules: Type.Array(AccessRuleSchema, { maxItems: 100, default: [] }),
  expires_at: Type.Optional(Timestamp),
}, { additionalProperties: false });
