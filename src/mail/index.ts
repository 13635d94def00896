/**
 * E-mail: a Mailer per transport (SMTP when SMTP_URL is set, `.eml` files under
 * DATA_DIR/outbox otherwise), the mail.send job that sends queued messages after their
 * transaction commits, and renderMail for the bodies. See docs/operations.md#mail.
 *
 * A feature sends with the `mail` service (app.ts), inside the transaction of its change:
 *
 *   const { text, html } = renderMail({ title, paragraphs, action: { label, url: linkTo(config.mail.publicUrl, '/path', { token }) } });
 *   const mailId = await mail.enqueueMail(tx, tenantId, { to, subject, text, html }, { onFailure: { handler: 'invitations', ref: id } });
 *
 * and reads the outcome back with `mail.mailStatus(tenantId, mailId)`. A failure handler is
 * registered once at start with `mail.registerFailureHandler(name, fn)`.
 */
import type { Logger } from '../logger.ts';
import type { Mailer } from './message.ts';

export { MailDeliveryError, MailMessageError, MAX_MESSAGE_BYTES, type Mailer, type MailMessage } from './message.ts';
export { createMailService, MAIL_JOB, type EnqueueMailOptions, type MailFailure, type MailFailureHandler, type MailService, type MailStatus } from './service.ts';
export { readMailSettings, type MailSettings, type SmtpSettings } from './settings.ts';
export { escapeHtml, linkTo, renderMail, type MailContent } from './templates.ts';
export { createMailer, describeSmtpError, OutboxMailer, SmtpMailer } from './transports.ts';

/** The start-up line that says where mail goes: the SMTP server (no credentials) or the outbox directory. */
export function logMailSetup(log: Logger, mailer: Mailer): void {
  if (mailer.transport === 'smtp') log.info({ mail_transport: 'smtp', smtp: mailer.destination }, 'e-mail is sent over SMTP');
  else {
    log.info(
      { mail_transport: 'outbox', outbox_dir: mailer.destination },
      `SMTP_URL is not set: e-mail is not sent but written as .eml files to ${mailer.destination}`,
    );
  }
}
