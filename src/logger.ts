import tty from 'node:tty';
import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { prettyFactory, type PrettyOptions } from 'pino-pretty';
import type { LogFormat, LogLevel } from './config.ts';

export type { Logger };

/** Secrets that may appear in headers; pino replaces their values before a line is written. */
const REDACT_PATHS = [
  'req.headers["svc-api-key"]',
  'req.headers["svc-proxy-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["svc-api-key"]',
  'headers["svc-proxy-key"]',
  'apiKey',
  'api_key',
  'key',
  'password',
];

/**
 * Query parameter names that carry credentials: a name holding any of these (decoded,
 * case-insensitive) has its value redacted. `svc-` covers Coffer's own (`svc-proxy-key`, and
 * `svc-api-key` sent where it does not belong); the rest are how other services name theirs
 * (`api_key`, `access_token`, `client_secret`, `X-Amz-Signature`, `X-Amz-Credential`, …).
 */
const SECRET_NAME_PARTS = ['svc-', 'key', 'token', 'secret', 'passw', 'pwd', 'auth', 'signature', 'credential', 'session', 'cookie', 'jwt', 'bearer'];
/** Too short to look for inside names (`design`, `passage`): secret only as a whole word of one (`sig`, `hmac_sig`). */
const SECRET_NAME_WORDS = new Set(['sig', 'pass']);

/** Whether a query parameter of this (raw) name is a credential, and so never logged. */
export function isSecretQueryName(rawName: string): boolean {
  const name = decodedName(rawName);
  return SECRET_NAME_PARTS.some((part) => name.includes(part)) || name.split(/[^a-z0-9]+/).some((word) => SECRET_NAME_WORDS.has(word));
}

/**
 * Request URLs can carry credentials as query parameters (the proxy key, keys meant for
 * a destination); their values never reach a log line. Names are compared decoded and
 * case-insensitively, as the proxy reads them, so `svc%2Dproxy%2Dkey=…` or `SVC-PROXY-KEY=…`
 * is redacted too, and by substring, so a name mangled on its way (`??svc-proxy-key`) is as well.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const parts = url.slice(q + 1).split('&').map((part) => {
    const eq = part.indexOf('=');
    const name = eq === -1 ? part : part.slice(0, eq);
    return eq !== -1 && isSecretQueryName(name) ? `${name}=[Redacted]` : part;
  });
  return `${url.slice(0, q + 1)}${parts.join('&')}`;
}

/** Byte by byte, so a malformed escape elsewhere in the name cannot hide the rest of it. */
function decodedName(name: string): string {
  return name.replace(/\+/g, ' ').replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))).toLowerCase();
}

export function loggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[Redacted]' },
    serializers: {
      // Only these request fields are logged: never headers or bodies.
      req: (req: { method: string; url: string; id?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        request_id: req.id,
      }),
      res: (res: { statusCode: number }) => ({ status: res.statusCode }),
    },
  };
}

/**
 * A logger writing JSON lines to `destination` (stdout when none), or, with `format` pretty,
 * one readable line per entry (see prettyOptions). Redaction and serializers are the same
 * in both: the pretty printer reads the JSON line pino made, secrets already replaced.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream, format: LogFormat = 'json'): Logger {
  if (format === 'pretty') return pino(loggerOptions(level), prettyDestination(destination ?? pino.destination({ dest: 1, sync: true }), false));
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}

/** LOG_FORMAT when set; unset, readable lines for a person at a terminal, JSON lines for everything else (a pipe, a file, a log collector). */
export function logFormatFor(setting: LogFormat | undefined, terminal: boolean): LogFormat {
  return setting ?? (terminal ? 'pretty' : 'json');
}

/**
 * A process's own logger on file descriptor `fd`: stdout for `serve`, stderr for one-shot
 * commands (their stdout is their result). Its format is LOG_FORMAT's, or decided by whether
 * that descriptor is a terminal; returned too, so a cluster's primary can hand it to its
 * workers. Pretty lines are coloured on a terminal unless NO_COLOR is set.
 */
export function processLogger(level: LogLevel, setting: LogFormat | undefined, fd: 1 | 2, env: Record<string, string | undefined> = process.env): { log: Logger; format: LogFormat } {
  const terminal = tty.isatty(fd);
  const format = logFormatFor(setting, terminal);
  if (format === 'pretty') {
    const colorize = terminal && !env.NO_COLOR && env.TERM !== 'dumb';
    return { log: pino(loggerOptions(level), prettyDestination(pino.destination({ dest: fd, sync: true }), colorize)), format };
  }
  // JSON as it always was: pino's own stdout, or stderr.
  return { log: fd === 1 ? pino(loggerOptions(level)) : pino(loggerOptions(level), pino.destination(2)), format };
}

/**
 * pino-pretty's printer in this process, in front of `destination`: each JSON line pino
 * writes is turned into its readable line and written on at once. Not pino-pretty's stream
 * or a transport (a worker thread): with a synchronous destination, a line logged just
 * before the process exits or crashes is never lost, and any destination will do.
 */
function prettyDestination(destination: DestinationStream, colorize: boolean): DestinationStream {
  const prettify = prettyFactory(prettyOptions(colorize));
  return {
    write(line: string) {
      destination.write(prettify(line));
    },
  };
}

/**
 * One line per entry: `[time] LEVEL: message`, then what matters of a request (method and
 * URL, status and response time, its id), an error's message, and the other fields as
 * compact JSON. The process id and host name are left out; an error that carries a stack
 * (an unexpected one) has it on the lines after.
 */
export function prettyOptions(colorize: boolean): PrettyOptions {
  return {
    colorize,
    translateTime: 'SYS:HH:MM:ss.l',
    singleLine: true,
    ignore: 'pid,hostname,reqId,req,res,responseTime',
    errorLikeObjectKeys: ['err'],
    messageFormat: prettyMessage,
    // Printed after the line, only when there is a stack (undefined leaves it out): the message is already in the line.
    customPrettifiers: { err: (err) => (isObject(err) && typeof err.stack === 'string' && err.stack !== '' ? printable(err.stack, true) : (undefined as unknown as string)) },
  };
}

function prettyMessage(log: Record<string, unknown>, messageKey: string): string {
  let line = typeof log[messageKey] === 'string' || typeof log[messageKey] === 'number' ? String(log[messageKey]) : '';
  const { req, res, responseTime, err, reqId } = log;
  if (isObject(req)) line += ` ${req.method} ${req.url}`;
  if (isObject(res) && res.status !== undefined) line += ` ${res.status}`;
  if (typeof responseTime === 'number') line += ` in ${responseTime.toFixed(1)} ms`;
  const error = typeof err === 'string' ? err : isObject(err) ? `${err.message}${err.code ? ` (${err.code})` : ''}` : undefined;
  if (error !== undefined) line += `: ${error}`;
  // A generated id (a UUID) is told apart by its start; one the client sent is shown whole.
  if (typeof reqId === 'string') line += ` (req ${/^[0-9a-f]{8}-[0-9a-f-]{27}$/.test(reqId) ? reqId.slice(0, 8) : reqId})`;
  return printable(line, false);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** Control characters (terminal escapes, line breaks) from logged data are shown escaped, as JSON would, so one entry cannot fake another or drive the terminal. */
function printable(text: string, keepLineBreaks: boolean): string {
  return text.replace(keepLineBreaks ? /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g : /[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    const escaped = JSON.stringify(c).slice(1, -1);
    return escaped.length > 1 ? escaped : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}
