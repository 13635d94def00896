import { Type } from 'typebox';
import { AccessRuleSchema } from '../../access/rules.ts';
import { APPLICATION_TYPES } from '../../access/permissions.ts';
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts';
import { OffsetQuery } from '../../http/pagination.ts';

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Permissions = Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100, default: [] });
const Rules = Type.Array(AccessRuleSchema, { maxItems: 100, default: [] });

export const ApplicationKeySchema = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  key: Type.Optional(Type.String()),
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
});

export const ApplicationSchema = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  name: Type.String(),
  key: Type.Optional(Type.String({ description: 'Only in the create response, when create_key was true' })),
  keys: Type.Array(ApplicationKeySchema),
  type: Type.Enum([...APPLICATION_TYPES]),
  permissions: Type.Array(Type.String()),
  rules: Type.Array(AccessRuleSchema),
  expires_at: Type.Optional(Timestamp),
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
});

// Unknown members are refused, not ignored: a PUT sending `expires_at` or `type` would otherwise
// answer 200 having changed neither, and the caller believe it had.
export const CreateApplicationBody = Type.Object({
  name: Name,
  type: Type.Enum([...APPLICATION_TYPES]),
  permissions: Permissions,
  rules: Rules,
  expires_at: Type.Optional(Nullable(Timestamp)),
  create_key: Type.Boolean({ default: true }),
}, { additionalProperties: false });

/** What an update may change: the type and expiry of an application are fixed at creation. */
export const UpdateApplicationBody = Type.Object({
  name: Name,
  permissions: Permissions,
  rules: Rules,
}, { additionalProperties: false });

export const ListApplicationsQuery = Type.Object({
  id: Type.Array(Uuid, { default: [], maxItems: 100 }),
  ...OffsetQuery(),
});
