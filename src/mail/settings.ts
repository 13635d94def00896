import path from 'node:path';
import addressparser from 'nodemailer/lib/addressparser';

/** Where and how an SMTP server is reached, parsed from SMTP_URL. The password is never logged. */
export type SmtpSettings = {
  host: string;
  /** The URL's port, else 465 for smtps:// and 587 for smtp:// (nodemailer's defaults). */
  port: number;
  /** smtps://: TLS from the first byte. smtp://: STARTTLS whenever the server offers it. */
  secure: boolean;
  auth: { user: string; pass: string } | undefined;
  /** `?requireTLS=true`: fail rather than send without STARTTLS. */
  requireTLS: boolean;
  /** `?tls.rejectUnauthorized=false`: accept a certificate that does not verify (a private CA, say). */
  rejectUnauthorized: boolean;
  /** `?name=host.example`: the name Coffer gives in EHLO (the OS host name unless set). */
  name: string | undefined;
  /** `smtp(s)://host:port`, without credentials or options: what the logs name. */
  display: string;
};

export type MailSettings = {
  /** SMTP_URL, parsed; unset: messages are written to `outboxDir` instead. */
  smtp: SmtpSettings | undefined;
  /** MAIL_FROM: the sender of every message (`Coffer <coffer@example.com>` or a bare address). */
  from: string;
  /** PUBLIC_URL without a trailing slash: the base of every link in a message. */
  publicUrl: string;
  /** DATA_DIR/outbox: where `.eml` files go when SMTP_URL is unset. */
  outboxDir: string;
  /** MAIL_MAX_ATTEMPTS: sending attempts before a message is given up as failed. */
  maxAttempts: number;
  /** MAIL_RETRY_SCHEDULE: waits before the 2nd, 3rd … attempt, in ms; the last repeats. */
  retrySchedule: number[];
};

/** The sender of `.eml` files when MAIL_FROM is unset (with SMTP it must be set). */
export const DEFAULT_OUTBOX_FROM = 'Coffer <coffer@localhost>';

/** Query options SMTP_URL may carry; anything else (nodemailer's `logger`, `debug`, …) is refused. */
const SMTP_OPTIONS = new Set(['requireTLS', 'tls.rejectUnauthorized', 'name']);
const HOST_NAME = /^[A-Za-z0-9.-]{1,253}$/;

/**
 * The SMTP_URL, MAIL_FROM and PUBLIC_URL settings (MAIL_MAX_ATTEMPTS and MAIL_RETRY_SCHEDULE
 * are read with the others in config.ts and passed in). `get` returns a setting's trimmed
 * value, undefined when unset or empty; every problem is added to `problems`. No message
 * quotes SMTP_URL, which may hold a password.
 */
export function readMailSettings(
  get: (name: string) => string | undefined,
  problems: string[],
  base: { host: string; port: number; dataDir: string; maxAttempts: number; retrySchedule: number[] },
): MailSettings {
  const rawSmtp = get('SMTP_URL');
  const smtp = rawSmtp === undefined ? undefined : parseSmtpUrl(rawSmtp, problems);
  const rawFrom = get('MAIL_FROM');
  if (rawSmtp !== undefined && rawFrom === undefined) {
    problems.push('MAIL_FROM must be set when SMTP_URL is: the sender of every message, e.g. "Coffer <coffer@example.com>"');
  }
  const fromProblem = rawFrom === undefined ? undefined : addressProblem(rawFrom);
  if (fromProblem) problems.push(`MAIL_FROM ${fromProblem}, e.g. "Coffer <coffer@example.com>" or coffer@example.com (got "${rawFrom!.slice(0, 200)}")`);
  return {
    smtp,
    from: rawFrom ?? DEFAULT_OUTBOX_FROM,
    publicUrl: readPublicUrl(get('PUBLIC_URL'), base, problems),
    outboxDir: path.join(base.dataDir, 'outbox'),
    maxAttempts: base.maxAttempts,
    retrySchedule: base.retrySchedule,
  };
}

/** Why `value` is not one mailbox (`Name <a@b.example>` or `a@b.example`), or undefined when it is. */
export function addressProblem(value: string): string | undefined {
  if (/[\r\n]/.test(value)) return 'must be on one line';
  const parsed = addressparser(value);
  if (parsed.length !== 1 || parsed[0].group !== undefined) return 'must be exactly one address';
  const address = parsed[0].address ?? '';
  const at = address.lastIndexOf('@');
  if (at < 1 || at === address.length - 1 || /[\s<>]/.test(address)) return 'must be an e-mail address';
  return undefined;
}

function parseSmtpUrl(raw: string, problems: string[]): SmtpSettings | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push('SMTP_URL is not a URL: it must look like smtp://user:pass@mail.example:587 or smtps://mail.example');
    return undefined;
  }
  const secure = url.protocol === 'smtps:';
  const before = problems.length;
  if (!secure && url.protocol !== 'smtp:') problems.push(`SMTP_URL must start with smtp:// or smtps:// (got "${url.protocol.slice(0, 30)}")`);
  if (url.hostname === '') problems.push('SMTP_URL has no host name');
  if (url.pathname !== '' && url.pathname !== '/') problems.push('SMTP_URL must have no path: smtp(s)://[user:pass@]host[:port][?options]');
  if (url.hash !== '') problems.push('SMTP_URL must have no #fragment');
  if (url.password !== '' && url.username === '') problems.push('SMTP_URL has a password but no user name');
  const options = new Map<string, string>();
  for (const [name, value] of url.searchParams) {
    if (!SMTP_OPTIONS.has(name)) problems.push(`SMTP_URL option "${name.slice(0, 50)}" is not one Coffer takes (${[...SMTP_OPTIONS].join(', ')})`);
    else options.set(name, value);
  }
  for (const name of ['requireTLS', 'tls.rejectUnauthorized']) {
    const value = options.get(name);
    if (value !== undefined && value !== 'true' && value !== 'false') problems.push(`SMTP_URL option ${name} must be true or false (got "${value.slice(0, 50)}")`);
  }
  const name = options.get('name');
  if (name !== undefined && !HOST_NAME.test(name)) problems.push('SMTP_URL option name must be a host name');
  let auth: SmtpSettings['auth'];
  try {
    auth = url.username === '' ? undefined : { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) };
  } catch {
    problems.push('SMTP_URL: the user name or password is not validly percent-encoded');
  }
  if (problems.length > before) return undefined;
  const port = url.port === '' ? (secure ? 465 : 587) : Number(url.port);
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port,
    secure,
    auth,
    requireTLS: options.get('requireTLS') === 'true',
    rejectUnauthorized: options.get('tls.rejectUnauthorized') !== 'false',
    name,
    display: `${url.protocol}//${url.hostname}:${port}`,
  };
}

/** PUBLIC_URL: an absolute http(s) URL, no credentials, query or fragment; default http://HOST:PORT. */
function readPublicUrl(raw: string | undefined, base: { host: string; port: number }, problems: string[]): string {
  const host = base.host.includes(':') ? `[${base.host}]` : base.host;
  const fallback = `http://${host}:${base.port}`;
  if (raw === undefined) return fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`PUBLIC_URL must be an absolute http:// or https:// URL, the address people reach Coffer at, e.g. https://coffer.example.com (got "${raw.slice(0, 200)}")`);
    return fallback;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    problems.push(`PUBLIC_URL must be an absolute http:// or https:// URL (got "${raw.slice(0, 200)}")`);
  } else if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '' || raw.includes('?') || raw.includes('#')) {
    problems.push('PUBLIC_URL must have no credentials, ?query or #fragment: links are made by adding paths to it');
  } else {
    return url.href.replace(/\/+$/, '');
  }
  return fallback;
}
