import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import type { LogLevel } from './config.ts';

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

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}
