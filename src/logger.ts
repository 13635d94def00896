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

const SECRET_QUERY_NAME = 'svc-proxy-key';

/**
 * Request URLs can carry the proxy key as a query parameter; it never reaches a log line.
 * Names are compared decoded and case-insensitively, as the proxy reads them, so
 * `svc%2Dproxy%2Dkey=…` or `SVC-PROXY-KEY=…` is redacted too.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const parts = url.slice(q + 1).split('&').map((part) => {
    const eq = part.indexOf('=');
    const name = eq === -1 ? part : part.slice(0, eq);
    // `includes`: a name mangled on its way (`??svc-proxy-key`) still carries the key as its value.
    return eq !== -1 && decodedName(name).includes(SECRET_QUERY_NAME) ? `${name}=[Redacted]` : part;
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
