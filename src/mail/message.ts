import { addressProblem } from './settings.ts';

/**
 * One e-mail. It may carry secrets (a one-time link): it is sealed in the queue, and no log
 * line, error or status ever quotes any of it, the recipient included.
 */
export type MailMessage = {
  /** One mailbox: `jane@example.com` or `Jane Doe <jane@example.com>`. */
  to: string;
  subject: string;
  /** The plain-text body; every message has one. */
  text: string;
  /** The HTML alternative, if any (see renderMail). */
  html?: string;
  /** Extra header fields (`Reply-To`, `X-…`); the ones Coffer sets itself are refused. */
  headers?: Record<string, string>;
};

/** Sends one message; one implementation per transport (SMTP, the outbox directory). */
export interface Mailer {
  readonly transport: 'smtp' | 'outbox';
  /** Where messages go, for the logs: `smtp://host:port` or the outbox directory. Never credentials. */
  readonly destination: string;
  /**
   * Sends `message` from MAIL_FROM. `id` names it (its Message-ID, its outbox file), so a retry
   * of the same message is recognisably the same. Failures are MailDeliveryErrors, whose
   * messages quote nothing of the message.
   */
  send(message: MailMessage, id: string): Promise<{ messageId: string }>;
  close(): Promise<void>;
}

/** A send that failed; its message says why in terms that quote nothing of the mail (no address, no content). */
export class MailDeliveryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MailDeliveryError';
  }
}

/** A message a caller built wrongly: refused when it is queued, not when it is sent. */
export class MailMessageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MailMessageError';
  }
}

/** A message larger than this (as JSON) is refused: mail is for notices and links, not attachments. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/** Fields Coffer writes itself: a caller's header could otherwise re-address or restructure the message. */
const RESERVED_HEADERS = new Set([
  'from', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'sender', 'return-path', 'mime-version',
  'content-type', 'content-transfer-encoding', 'content-disposition', 'received', 'dkim-signature',
]);
const HEADER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,75}$/;

/** Throws a MailMessageError naming the first thing wrong with `message` (never its values). */
export function checkMessage(message: MailMessage): void {
  const fail = (why: string): never => {
    throw new MailMessageError(why);
  };
  if (typeof message?.to !== 'string') fail('the message has no recipient ("to")');
  const toProblem = addressProblem(message.to);
  if (toProblem) fail(`the recipient ("to") ${toProblem}`);
  if (typeof message.subject !== 'string' || message.subject.trim() === '') fail('the message has no subject');
  if (/[\r\n]/.test(message.subject)) fail('the subject must be on one line');
  if (typeof message.text !== 'string' || message.text === '') fail('the message has no text body');
  if (message.html !== undefined && typeof message.html !== 'string') fail('the html body must be a string');
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    if (!HEADER_NAME.test(name)) fail(`header name "${name.slice(0, 80)}" is not a valid field name`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) fail(`header ${name} is set by Coffer, not by the caller`);
    if (typeof value !== 'string' || /[\r\n]/.test(value)) fail(`header ${name} must be a string on one line`);
  }
  if (Buffer.byteLength(JSON.stringify(message), 'utf8') > MAX_MESSAGE_BYTES) fail(`the message is larger than ${MAX_MESSAGE_BYTES} bytes`);
}

/** Only the fields of a message, copied: nothing else a caller's object holds is sealed or sent. */
export function pickMessage(message: MailMessage): MailMessage {
  return {
    to: message.to,
    subject: message.subject,
    text: message.text,
    ...(message.html !== undefined ? { html: message.html } : {}),
    ...(message.headers ? { headers: { ...message.headers } } : {}),
  };
}

/** An automated notice: auto-responders must not answer it (RFC 3834). */
export const STANDARD_HEADERS: Record<string, string> = { 'Auto-Submitted': 'auto-generated' };
