import { Type } from 'typebox';
import { OffsetPage, OffsetQuery } from '../../http/pagination.ts';
import { Timestamp, Uuid } from '../../http/schemas.ts';

export const INVITATION_ROLES = ['ADMIN', 'READ_ONLY'] as const;
export const INVITATION_STATUSES = ['PENDING', 'EXPIRED', 'ACCEPTED'] as const;

export const CreateInvitationBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 254, description: 'The invitee\'s address, well-formed per RFC 5322 (an addr-spec, no display name)' }),
  role: Type.Enum(INVITATION_ROLES, { default: 'ADMIN', description: 'The role the member gets on acceptance' }),
}, { additionalProperties: false });

export const InvitationSchema = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  email: Type.String(),
  role: Type.Enum(INVITATION_ROLES),
  status: Type.Enum(INVITATION_STATUSES, { description: 'PENDING; EXPIRED once expires_at passes (until resent); ACCEPTED once a member was made from it' }),
  expires_at: Timestamp,
  email_status: Type.Enum(['pending', 'sent', 'failed'], { description: 'The latest invitation e-mail: pending until sent (retried with backoff), failed once given up on' }),
  accepted_at: Type.Optional(Timestamp),
  member_id: Type.Optional(Uuid),
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
});

export const ListInvitationsQuery = Type.Object({ ...OffsetQuery() });
export const InvitationPage = OffsetPage(InvitationSchema);
export const InvitationId = Type.Object({ id: Uuid });

/** A name people typed: something visible, no control characters (line breaks included). */
const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f\\u007f]*[^\\s\\u0000-\\u001f\\u007f][^\\u0000-\\u001f\\u007f]*$' });

/** POST /invitations/accept, as JSON or from the acceptance page's form. */
export const AcceptBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200, description: 'The `token` of the link in the invitation e-mail' }),
  first_name: Name,
  last_name: Name,
}, { additionalProperties: false });

export const AcceptQuery = Type.Object({ token: Type.String({ maxLength: 200 }) });
