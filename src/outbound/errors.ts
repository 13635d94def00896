export type OutboundCode =
  | 'invalid_url'
  | 'invalid_request'
  | 'blocked_address'
  | 'dns_failed'
  | 'connect_failed'
  | 'timeout'
  | 'too_large'
  | 'too_many_redirects';

/**
 * Every failure of an outbound call. Messages name at most the destination's host
 * and port and an error code — never the path or query (they may carry secrets),
 * request bodies or header values — so they are safe to log and to show a caller.
 */
export class OutboundError extends Error {
  readonly code: OutboundCode;
  /** Set on a `blocked_address` refused for its port (another protocol's), not its address. */
  readonly port: number | undefined;

  constructor(code: OutboundCode, message: string, opts: { port?: number } = {}) {
    super(message);
    this.name = 'OutboundError';
    this.code = code;
    this.port = opts.port;
  }
}

/** How a write-time check names a refused URL: an internal address, or another protocol's port. */
export function refusalMessage(err: OutboundError): string {
  if (err.code !== 'blocked_address') return err.message;
  return err.port === undefined
    ? `must not point to an internal address: ${err.message}`
    : `must not use port ${err.port}, which belongs to another protocol: outbound HTTP to it is refused`;
}

/** `host:port` of a URL — the most of a destination an error message may repeat. */
export function describeTarget(url: URL | undefined): string {
  if (!url) return 'destination';
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.hostname}:${port}`;
}

const SYSTEM_CODE = /^[A-Z][A-Z0-9_]{1,40}$/;

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME', 'ENODATA', 'ESERVFAIL', 'ENOTIMP', 'EREFUSED']);
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const TOO_LARGE_CODES = new Set(['UND_ERR_HEADERS_OVERFLOW', 'UND_ERR_RES_EXCEEDED_MAX_SIZE', 'HPE_HEADER_OVERFLOW']);
const CONNECT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EHOSTDOWN', 'ENETDOWN']);
const TLS_CODES = /CERT|SELF_SIGNED|UNABLE_TO_|DEPTH_ZERO|HOSTNAME_MISMATCH/;
// The ERR_ ones are Node's HTTP client's (the Keep-Alive path) refusing a header it cannot send.
const INVALID_REQUEST_CODES = new Set([
  'UND_ERR_INVALID_ARG',
  'UND_ERR_NOT_SUPPORTED',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
  'ERR_INVALID_CHAR',
  'ERR_INVALID_HTTP_TOKEN',
  'ERR_HTTP_INVALID_HEADER_VALUE',
]);

/**
 * Maps whatever undici, net, tls or dns threw onto an OutboundError. Only the error's
 * code is kept, never its message: undici and Node messages are not ours to vet.
 */
export function toOutboundError(err: unknown, target: URL | undefined, deadlinePassed: boolean): OutboundError {
  if (err instanceof OutboundError) return err;
  const where = describeTarget(target);
  if (deadlinePassed) return new OutboundError('timeout', `request to ${where} timed out`);
  const raw = (err as { code?: unknown } | null)?.code;
  const code = typeof raw === 'string' && SYSTEM_CODE.test(raw) ? raw : undefined;
  if (code && TIMEOUT_CODES.has(code)) return new OutboundError('timeout', `request to ${where} timed out (${code})`);
  if (code && DNS_CODES.has(code)) return new OutboundError('dns_failed', `could not resolve ${target?.hostname ?? 'host'} (${code})`);
  if (code && INVALID_REQUEST_CODES.has(code)) return new OutboundError('invalid_request', `request to ${where} was refused by the HTTP client (${code})`);
  if (code && TOO_LARGE_CODES.has(code)) return new OutboundError('too_large', `response headers from ${where} are too large (${code})`);
  if (code && CONNECT_CODES.has(code)) return new OutboundError('connect_failed', `could not connect to ${where} (${code})`);
  if (code && (code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || TLS_CODES.test(code))) {
    return new OutboundError('connect_failed', `TLS with ${where} failed (${code})`);
  }
  return new OutboundError('connect_failed', `the exchange with ${where} failed${code ? ` (${code})` : ''}`);
}
