-- E-mail sent from the jobs queue (src/mail): one row per message, holding its delivery
-- status only, so a feature can show it (an invitation's email_status) after the job itself
-- is swept. The message (recipient, subject, bodies, any link) travels sealed in the payload
-- of its `mail.send` job and is never stored here.
CREATE TABLE mails (
  tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id           uuid NOT NULL,
  job_id       uuid NOT NULL,
  status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
  attempts     int NOT NULL DEFAULT 0,
  last_error   text,
  -- What to call when the message is given up on: a handler registered by name, and its argument.
  on_failure   text,
  failure_ref  text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  PRIMARY KEY (tenant_id, id)
);
-- The sweep finds messages whose job ended without settling them, and those past retention.
CREATE INDEX mails_pending ON mails (created_at) WHERE status = 'pending';
CREATE INDEX mails_finished ON mails (finished_at) WHERE status IN ('sent', 'failed');
