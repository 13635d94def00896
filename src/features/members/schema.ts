import { Type } from 'typebox';
import { OffsetPage, OffsetQuery } from '../../http/pagination.ts';
import { Timestamp, Uuid } from '../../http/schemas.ts';

export const MEMBER_ROLES = ['OWNER', 'ADMIN', 'READ_ONLY'] as const;
/** Listing members has a smaller page than other lists (the spec's limit). */
export const MAX_MEMBER_PAGE_SIZE = 50;

export const UserSchema = Type.Object({
  id: Uuid,
  email: Type.Optional(Type.String()),
  first_name: Type.Optional(Type.String()),
  last_name: Type.Optional(Type.String()),
  picture: Type.Optional(Type.String({ description: 'A URI' })),
});

export const MemberSchema = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  role: Type.Enum(MEMBER_ROLES, { description: 'OWNER (made with the tenant; cannot be deleted), ADMIN (every management permission) or READ_ONLY (the :read ones)' }),
  user: UserSchema,
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
});

export const ListMembersQuery = Type.Object({
  user_id: Type.Array(Uuid, { default: [], maxItems: 100, description: 'Only the members of these users (repeat the parameter)' }),
  ...OffsetQuery(MAX_MEMBER_PAGE_SIZE),
});

export const MemberPage = OffsetPage(MemberSchema);
export const MemberId = Type.Object({ id: Uuid });
