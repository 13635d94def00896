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

const SECRET_QUERY = /([?&]svc-proxy-key=)[^&#]*/gi;

/** Request URLs can carry the proxy key as a query parameter; it never reaches a log line. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, '$1[Redacted]');
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
