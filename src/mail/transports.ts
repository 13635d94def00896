import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { SendMailOptions } from 'nodemailer';
import { MailDeliveryError, STANDARD_HEADERS, type Mailer, type MailMessage } from './message.ts';
import type { MailSettings, SmtpSettings } from './settings.ts';

/** SMTP_URL set: SMTP through nodemailer; otherwise `.eml` files under DATA_DIR/outbox. */
export function createMailer(settings: MailSettings): Mailer {
  return settings.smtp ? new SmtpMailer(settings.smtp, settings.from) : new OutboxMailer(settings.outboxDir, settings.from);
}

/** The nodemailer message of `message`, with its Message-ID made from `id`. Never reads files or URLs. */
function composed(message: MailMessage, from: string, id: string): SendMailOptions {
  const domain = /@([^>\s]+)>?\s*$/.exec(from)?.[1] ?? 'coffer.invalid';
  return {
    from,
    to: message.to,
    subject: message.subject,
    text: message.text,
    ...(message.html !== undefined ? { html: message.html } : {}),
    headers: { ...STANDARD_HEADERS, ...message.headers },
    messageId: `<${id}@${domain}>`,
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/**
 * nodemailer over SMTP, a connection per message. With smtp:// STARTTLS is used whenever the
 * server offers it (and required with `?requireTLS=true`); smtps:// is TLS from the start.
 * nodemailer's own logging stays off: with it on, it would log the SMTP dialogue.
 */
export class SmtpMailer implements Mailer {
  readonly transport = 'smtp' as const;
  readonly destination: string;
  private readonly transporter: ReturnType<typeof nodemailer.createTransport>;
  private readonly from: string;

  constructor(smtp: SmtpSettings, from: string) {
    this.destination = smtp.display;
    this.from = from;
    this.transporter = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      requireTLS: smtp.requireTLS,
      ...(smtp.auth ? { auth: smtp.auth } : {}),
      ...(smtp.name ? { name: smtp.name } : {}),
      tls: { rejectUnauthorized: smtp.rejectUnauthorized },
      connectionTimeout: 30_000,
      greetingTimeout: 30_000,
      socketTimeout: 60_000,
      logger: false,
      debug: false,
      transactionLog: false,
    });
  }

  async send(message: MailMessage, id: string): Promise<{ messageId: string }> {
    try {
      const info = await this.transporter.sendMail(composed(message, this.from, id));
      return { messageId: info.messageId };
    } catch (err) {
      throw new MailDeliveryError(describeSmtpError(err));
    }
  }

  async close(): Promise<void> {
    this.transporter.close();
  }
}

/**
 * Without SMTP: each message is one `.eml` file (RFC 5322, as it would have been sent) in the
 * outbox directory, named `<UTC time>-<id>.eml`, mode 0600 in a 0700 directory. Written aside
 * then renamed into place, so a reader of the directory sees whole files only.
 */
export class OutboxMailer implements Mailer {
  readonly transport = 'outbox' as const;
  readonly destination: string;
  private readonly from: string;
  private readonly composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });

  constructor(dir: string, from: string) {
    this.destination = dir;
    this.from = from;
  }

  async send(message: MailMessage, id: string): Promise<{ messageId: string }> {
    const info = await this.composer.sendMail(composed(message, this.from, id)).catch((err: Error) => {
      throw new MailDeliveryError(`the message could not be composed (${(err as NodeJS.ErrnoException).code ?? err.name})`);
    });
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('.', '');
    const name = `${stamp}-${id.replace(/[^A-Za-z0-9-]/g, '')}.eml`;
    const temp = path.join(this.destination, `.${name}.tmp`);
    try {
      await fs.mkdir(this.destination, { recursive: true, mode: 0o700 });
      const file = await fs.open(temp, 'wx', 0o600);
      try {
        await file.writeFile(info.message as Buffer);
        await file.sync();
      } finally {
        await file.close();
      }
      await fs.rename(temp, path.join(this.destination, name));
    } catch (err) {
      await fs.rm(temp, { force: true }).catch(() => {});
      const e = err as NodeJS.ErrnoException;
      throw new MailDeliveryError(`the message could not be written to the outbox directory ${this.destination} (${e.code ?? e.name})`);
    }
    return { messageId: info.messageId };
  }

  async close(): Promise<void> {}
}

const NETWORK_CODES = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ETLS', 'EPROTOCOL', 'EAUTH', 'ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND']);

/**
 * Why an SMTP send failed, quoting nothing of the message: the server's reply code and
 * enhanced status (`550 5.1.1`) and the command it answered, never the reply's text (servers
 * echo addresses in it); for network failures, the code and nodemailer's message with
 * anything address-shaped taken out.
 */
export function describeSmtpError(err: unknown): string {
  const e = (err ?? {}) as { code?: unknown; responseCode?: unknown; command?: unknown; response?: unknown; message?: unknown };
  const code = typeof e.code === 'string' && /^[A-Z0-9_]{1,30}$/.test(e.code) ? e.code : undefined;
  const command = typeof e.command === 'string' ? /^(?:MAIL FROM|RCPT TO|AUTH [A-Z0-9-]{1,20}|[A-Z]{3,8})\b/.exec(e.command)?.[0] : undefined;
  if (typeof e.responseCode === 'number') {
    const enhanced = typeof e.response === 'string' ? /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/.exec(e.response)?.[1] : undefined;
    return `the SMTP server answered ${e.responseCode}${enhanced ? ` ${enhanced}` : ''}${command && command !== 'API' ? ` to ${command}` : ''}${code ? ` (${code})` : ''}`;
  }
  if (code && NETWORK_CODES.has(code) && typeof e.message === 'string') {
    return `${code}: ${e.message.replace(/\S*@\S*/g, '<address>').replace(/"[^"]*"/g, '"…"').slice(0, 300)}`;
  }
  return `sending failed (${code ?? 'error'})`;
}
