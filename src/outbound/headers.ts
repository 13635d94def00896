import { OutboundError } from './errors.ts';

export type HeaderMap = Record<string, string | string[]>;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\0\r\n]/;

/**
 * Request headers a caller may not choose. Hop-by-hop headers describe one connection,
 * which the pool owns; `host` comes from the URL (a forged one would route the request
 * on a shared front end somewhere the address check never saw); `content-length` is
 * computed from the body; `expect` is unsupported by undici.
 */
const DROPPED = new Set(['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect']);

/** The caller's wishes for the connection a streaming call (a proxy's) is sent on. */
const PASSED_CONNECTION_HEADERS = new Set(['connection', 'keep-alive']);

/** Headers describing a request body, removed when a redirect turns the request into a GET. */
export const BODY_HEADERS = ['content-type', 'content-encoding', 'content-language', 'content-location'];

/** Sent to the origin that set them only; removed when a redirect crosses origins. */
export const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

/**
 * Lower-cases names, merges duplicates, validates, and drops what the caller may not set.
 * `passConnection` (streaming proxies) keeps explicit `connection` and `keep-alive` headers:
 * `close` keeps the socket out of the pool afterwards, and a request with `keep-alive` is
 * sent by Node's client, since undici refuses that header (see node-http.ts).
 */
export function prepareHeaders(input: HeaderMap | undefined, passConnection: boolean): HeaderMap {
  const out: HeaderMap = {};
  if (input === undefined || input === null) return out;
  if (typeof input !== 'object') throw new OutboundError('invalid_request', 'headers must be an object');
  for (const [rawName, rawValue] of Object.entries(input)) {
    if (!TOKEN.test(rawName)) throw new OutboundError('invalid_request', 'a header name is not a valid HTTP token');
    if (rawValue === undefined) continue;
    const name = rawName.toLowerCase();
    const values = Array.isArray(rawValue) ? rawValue : [rawValue];
    for (const value of values) {
      // The value itself never appears in the message.
      if (typeof value !== 'string' || BAD_VALUE.test(value)) {
        throw new OutboundError('invalid_request', `header "${name}" has an invalid value`);
      }
    }
    if (name.startsWith('proxy-')) continue;
    if (DROPPED.has(name) && !(passConnection && PASSED_CONNECTION_HEADERS.has(name))) continue;
    const existing = Object.hasOwn(out, name) ? out[name] : undefined;
    if (existing === undefined) put(out, name, Array.isArray(rawValue) ? [...rawValue] : rawValue);
    else put(out, name, [...(Array.isArray(existing) ? existing : [existing]), ...values]);
  }
  return out;
}

/**
 * Sets a header as an own property. Header names are chosen by callers and destinations:
 * `constructor` must not be found already "set" (to Object) and merged with it, and
 * `__proto__` must be a header, not replace the map's prototype and vanish.
 */
function put(map: HeaderMap, name: string, value: string | string[]): void {
  if (name === '__proto__') Object.defineProperty(map, name, { value, enumerable: true, writable: true, configurable: true });
  else map[name] = value;
}

export function withoutHeaders(headers: HeaderMap, names: readonly string[]): HeaderMap {
  const out: HeaderMap = { ...headers };
  for (const name of names) delete out[name];
  return out;
}

const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);
const NORMALIZED_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT']);

/** As fetch does: the common methods are upper-cased, CONNECT/TRACE/TRACK refused, others kept verbatim. */
export function prepareMethod(method: string | undefined): string {
  if (method === undefined) return 'GET';
  if (typeof method !== 'string' || !TOKEN.test(method)) throw new OutboundError('invalid_request', 'the method is not a valid HTTP token');
  const upper = method.toUpperCase();
  if (FORBIDDEN_METHODS.has(upper)) throw new OutboundError('invalid_request', `method ${upper} is not allowed`);
  return NORMALIZED_METHODS.has(upper) ? upper : method;
}

/** Response headers as plain data: lower-case names, `set-cookie` and repeats as arrays. */
export function responseHeaders(raw: Record<string, string | string[] | undefined>): HeaderMap {
  const out: HeaderMap = {};
  for (const [name, value] of Object.entries(raw)) if (value !== undefined) put(out, name, value);
  return out;
}
