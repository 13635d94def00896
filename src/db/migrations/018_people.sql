-- People (src/features/users, members, invitations, signin): users and tenant members exist
-- since 001; this adds invitations by e-mail with their links, one-time sign-in links, and the
-- signed-in sessions of members. Every secret (a link's, a session's, its CSRF token) is
-- stored only as its SHA-256 hash, under a row id the secret travels with (`<id>.<secret>`),
-- so a lookup is by id and the hash is compared in constant time in Coffer.

ALTER TABLE users ADD COLUMN modified_at timestamptz;
ALTER TABLE tenant_members ADD CONSTRAINT tenant_members_tenant_id_id_key UNIQUE (tenant_id, id);
-- A tenant's members, listed in creation order (GET /tenants/self/members).
CREATE INDEX tenant_members_tenant_created ON tenant_members (tenant_id, created_at, id);
-- The tenants of a user (GET /me, sign-in).
CREATE INDEX tenant_members_user ON tenant_members (user_id);

-- An invitation lives PENDING until accepted (ACCEPTED, kept for the audit trail), past its
-- expiry (EXPIRED: reads show it at once, the sweep writes it), or deleted (DELETED: no API
-- answer shows it again; kept a while so that its links can say why they no longer work).
CREATE TABLE tenant_invitations (
  tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id           uuid NOT NULL,
  email        text NOT NULL,
  role         text NOT NULL CHECK (role IN ('ADMIN', 'READ_ONLY')),
  status       text NOT NULL CHECK (status IN ('PENDING', 'EXPIRED', 'ACCEPTED', 'DELETED')),
  expires_at   timestamptz NOT NULL,
  -- The latest invitation e-mail (mails.id), for email_status.
  mail_id      uuid,
  -- Who invited, as the e-mail and the acceptance page name them ("Jane Doe", "the Management application").
  inviter      text NOT NULL,
  member_id    uuid,
  accepted_at  timestamptz,
  deleted_at   timestamptz,
  created_by   uuid,
  created_at   timestamptz NOT NULL DEFAULT now(),
  modified_by  uuid,
  modified_at  timestamptz,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX tenant_invitations_tenant_created ON tenant_invitations (tenant_id, created_at, id) WHERE status <> 'DELETED';
CREATE INDEX tenant_invitations_email ON tenant_invitations (tenant_id, lower(email)) WHERE status = 'PENDING';
CREATE INDEX tenant_invitations_expiry ON tenant_invitations (expires_at) WHERE status = 'PENDING';
CREATE INDEX tenant_invitations_deleted ON tenant_invitations (deleted_at) WHERE status = 'DELETED';

-- Every link an invitation was sent with: a resend supersedes the earlier ones, which then
-- answer 410 "a newer invitation was sent" rather than nothing.
CREATE TABLE invitation_links (
  id             uuid PRIMARY KEY,
  tenant_id      uuid NOT NULL,
  invitation_id  uuid NOT NULL,
  secret_hash    bytea NOT NULL,
  superseded_at  timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now(),
  -- Checked at commit: an invitation's first link is written before the invitation, which names its e-mail.
  FOREIGN KEY (tenant_id, invitation_id) REFERENCES tenant_invitations (tenant_id, id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX invitation_links_invitation ON invitation_links (tenant_id, invitation_id);

-- One-time sign-in links (POST /signin, `coffer signin-link`): 15 minutes, single use.
CREATE TABLE signin_links (
  id           uuid PRIMARY KEY,
  user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  secret_hash  bytea NOT NULL,
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX signin_links_expiry ON signin_links (expires_at);

-- A signed-in member's session (the cookie): acting in one tenant as one member. Deleting the
-- member deletes its sessions in the same statement.
CREATE TABLE member_sessions (
  id           uuid PRIMARY KEY,
  secret_hash  bytea NOT NULL,
  csrf_hash    bytea NOT NULL,
  tenant_id    uuid NOT NULL,
  member_id    uuid NOT NULL,
  user_id      uuid NOT NULL,
  expires_at   timestamptz NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (tenant_id, member_id) REFERENCES tenant_members (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX member_sessions_member ON member_sessions (tenant_id, member_id);
CREATE INDEX member_sessions_expiry ON member_sessions (expires_at);
