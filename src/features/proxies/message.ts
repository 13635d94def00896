/**
 * The HTTP messages of a proxy invocation, as data: the caller's URL split into the path
 * suffix, the proxy key and the rest of the query; the headers carried to the destination
 * and back (hop-by-hop and Coffer's own left out); request and response bodies by kind
 * (JSON, form, text, binary), read, decoded and encoded for detokenization and transforms;
 * and the destination's failures as problem details. Nothing here calls out or keeps state.
 */
import type { Readable } from 'node:stream';
import secureJson from 'secure-json-parse';
import { isTemplate } from '../../expressions/index.ts';
import { CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE } from '../../http/cookies.ts';
import { ApiError } from '../../http/errors.ts';
import { assertDepth, MAX_BODY_DEPTH, nestsDeeperThan } from '../../http/json-body.ts';
import { OutboundError } from '../../outbound/client.ts';
import { decompress, DecompressionError } from '../../outbound/decompress.ts';

/** Headers that belong to one connection (RFC 9110 §7.6.1), never carried across the proxy. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate', 'proxy-authorization', 'host', 'content-length']);
/** Coffer's own request headers: credentials and the reserved proxy headers, never forwarded. */
const RESERVED = new Set(['svc-api-key', 'svc-proxy-key', 'svc-proxy-keep-alive', 'svc-proxy-connection']);
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Outside RFC 9110's field-value characters (VCHAR, obs-text, SP, HTAB): Node and undici refuse such a value. */
const BAD_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/** A header's value, the first of a repeated one. */
export function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * `/proxy/v1/x?a=1&svc-proxy-key=…` → path `/v1/x`, the key, and the rest of the query (raw).
 * The router matches paths percent-decoded (`/prox%79/v1/x` is the invoke route too), so the
 * first segment is taken the same way, and the path suffix is what follows it, from its
 * slash on, as sent. Every `svc-*` parameter is Coffer's (the proxy key, or an API key sent
 * where it does not belong) and is never forwarded.
 */
export function splitUrl(url: string): { path: string; query: { key: string | undefined; rest: string } } {
  const q = url.indexOf('?');
  const pathPart = q === -1 ? url : url.slice(0, q);
  const slash = pathPart.indexOf('/', 1);
  const first = slash === -1 ? pathPart.slice(1) : pathPart.slice(1, slash);
  if (!pathPart.startsWith('/') || decodePathSegment(first) !== 'proxy') throw new ApiError(404, 'This is not a proxy invocation path: it must start with /proxy.');
  const path = slash === -1 ? '' : pathPart.slice(slash);
  let key: string | undefined;
  const kept: string[] = [];
  if (q !== -1) {
    for (const part of url.slice(q + 1).split('&')) {
      if (part === '') continue;
      const eq = part.indexOf('=');
      const rawName = eq === -1 ? part : part.slice(0, eq);
      if (decodeQueryPart(rawName).toLowerCase() === 'svc-proxy-key') key ??= decodeQueryPart(eq === -1 ? '' : part.slice(eq + 1));
      if (!isReservedQueryName(rawName)) kept.push(part);
    }
  }
  return { path, query: { key, rest: kept.join('&') } };
}

/**
 * `svc-*`, however spelled: decoded escape by escape (a malformed one elsewhere cannot hide
 * the rest), case-insensitively, and after any stray leading '?' (`/proxy??svc-api-key=…`).
 */
function isReservedQueryName(rawName: string): boolean {
  const name = rawName.replace(/\+/g, ' ').replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return /^\?*svc-/i.test(name);
}

function decodePathSegment(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

function decodeQueryPart(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

/**
 * destination_url + the path suffix + the query, built by path segments: the suffix (empty,
 * or from a slash on) is joined to the destination's path with exactly one slash, and the
 * result must still begin with every segment of the destination's path, so it stays below
 * it. A suffix with `.` or `..` segments (also percent-encoded or behind backslashes) is
 * refused before that, and the origin never changes.
 */
export function destinationUrl(destination: string, suffix: string, query: string): string {
  // As a destination might read it: percent-decoded dots and slashes, backslashes as slashes.
  const decoded = suffix.replace(/%2e/gi, '.').replace(/%2f/gi, '/').replace(/%5c/gi, '/').replace(/\\/g, '/');
  if (decoded.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw ApiError.field('path', 'must not contain "." or ".." segments (also percent-encoded)');
  }
  if (suffix !== '' && !suffix.startsWith('/')) throw ApiError.field('path', 'must start with a slash below /proxy');
  const base = new URL(destination);
  // `/proxy` alone is destination_url itself, trailing slash and all (`/v1/` and `/v1` may be different
  // resources, and a redirect between them is not followed); a suffix is joined with one slash.
  const basePath = base.pathname.replace(/\/$/, '');
  const target = new URL(base.origin);
  // The setters percent-encode what would end the path or the query (a raw '#' or '?', which
  // HTTP parsers let through) instead of letting it start a fragment that drops the rest.
  target.pathname = suffix === '' ? base.pathname : `${basePath}${suffix}`;
  const search = [base.search.slice(1), query].filter(Boolean).join('&');
  // With its '?': the setter drops one leading '?', which must not be the query's own.
  target.search = search ? `?${search}` : '';
  const under = basePath.split('/');
  const segments = target.pathname.split('/');
  if (target.origin !== base.origin || under.some((segment, i) => segments[i] !== segment)) {
    throw ApiError.field('path', 'does not stay below the destination URL');
  }
  return target.href;
}

export function queryObject(raw: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(raw)) {
    const existing = out[k];
    out[k] = existing === undefined ? v : Array.isArray(existing) ? [...existing, v] : [existing, v];
  }
  return out;
}

/** Names listed in a Connection header are hop-by-hop too. */
function connectionTokens(headers: Record<string, string | string[] | undefined>): Set<string> | undefined {
  const value = headers.connection;
  if (value === undefined) return undefined;
  return new Set([value].flat().join(',').split(',').map((t) => t.trim().toLowerCase()).filter(Boolean));
}

/**
 * The caller's headers minus Coffer's own (credentials, reserved) and hop-by-hop ones. A
 * signed-in member's browser sends Coffer's session cookies with every call to /proxy: they,
 * and the X-CSRF-Token that goes with them, never reach a destination.
 */
export function forwardedHeaders(input: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const listed = connectionTokens(input);
  const out: Record<string, string | string[]> = {};
  let member = false;
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined || RESERVED.has(name) || HOP_BY_HOP.has(name) || listed?.has(name)) continue;
    if (name === 'cookie') {
      const kept = withoutCofferCookies(value);
      member ||= kept !== value;
      if (kept) out.cookie = kept;
      continue;
    }
    out[name] = value;
  }
  if (member) delete out[CSRF_HEADER];
  return out;
}

/** A Cookie header without Coffer's own cookies; undefined when nothing else is left. */
function withoutCofferCookies(value: string | string[]): string | string[] | undefined {
  const joined = [value].flat().join('; ');
  if (!joined.includes(SESSION_COOKIE) && !joined.includes(CSRF_COOKIE)) return value;
  const kept = joined.split(';').filter((pair) => {
    const name = pair.slice(0, pair.indexOf('=')).trim();
    return name !== SESSION_COOKIE && name !== CSRF_COOKIE;
  });
  return kept.length ? kept.map((p) => p.trim()).join('; ') : undefined;
}

/**
 * Response headers for the caller: hop-by-hop ones go. `content-length` stays for a body sent
 * as it came; a body Coffer rebuilt (`rebuilt`: a transform's or a mask's) is framed anew, so
 * a length or transfer-encoding it names would contradict the bytes sent.
 */
export function withoutHopByHop(input: Record<string, string | string[]>, rebuilt = false): Record<string, string | string[]> {
  const listed = connectionTokens(input);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(input)) {
    if ((rebuilt || name !== 'content-length') && (HOP_BY_HOP.has(name) || listed?.has(name))) continue;
    out[name] = value;
  }
  return out;
}

/** What a transform returned as headers: names lower-cased, values strings (or lists of strings). */
export function transformHeaders(value: unknown, which: string): Record<string, string | string[]> {
  const bad = () => new ApiError(422, `The ${which} transform returned invalid headers: an object of header names to strings is expected.`);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw bad();
  const out: Record<string, string | string[]> = {};
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined || v === null) continue;
    const values = (Array.isArray(v) ? v : [v]).map((x) => (typeof x === 'number' || typeof x === 'boolean' ? String(x) : x));
    if (!HEADER_NAME.test(name) || !values.every((x) => typeof x === 'string' && !BAD_HEADER_VALUE.test(x))) throw bad();
    out[name.toLowerCase()] = Array.isArray(v) ? (values as string[]) : (values[0] as string);
  }
  return out;
}

/** A transform's body: strings as they are, other JSON values serialized (content-type JSON if none was set). */
export function encodeBody(body: unknown, headers: Record<string, string | string[]>): Buffer | undefined {
  if (body === null || body === undefined) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  headers['content-type'] ??= 'application/json';
  return Buffer.from(JSON.stringify(body));
}

export type BodyKind = 'json' | 'form' | 'text' | 'binary';

/** Which bodies may hold expressions: JSON, form-encoded and text; anything else passes untouched. */
export function bodyKind(contentType: string | undefined): BodyKind {
  if (contentType === undefined) return 'text';
  const type = contentType.split(';')[0].trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json') || type === 'text/json') return 'json';
  if (type === 'application/x-www-form-urlencoded') return 'form';
  if (type.startsWith('text/') || type === 'application/xml' || type.endsWith('+xml')) return 'text';
  return 'binary';
}

/** Whether a Content-Encoding (gzip, br…) makes the body something else than its Content-Type says. */
export function isEncoded(contentEncoding: string | undefined): boolean {
  const coding = contentEncoding?.trim().toLowerCase();
  return coding !== undefined && coding !== '' && coding !== 'identity';
}

/** Cheap byte scan before any parsing: JSON may escape braces, forms percent-encode them. */
export function mayHoldExpressions(body: Buffer, kind: BodyKind): boolean {
  if (body.includes('{{')) return true;
  if (kind === 'json') return body.includes('\\u007b') || body.includes('\\u007B');
  if (kind === 'form') return body.includes('%7B') || body.includes('%7b');
  return false;
}

export function parseJson(body: Buffer): unknown {
  let value: unknown;
  try {
    value = secureJson.parse(body.toString('utf8'), undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch {
    throw ApiError.field('body', 'is not valid JSON (its Content-Type says it is)');
  }
  // The detokenize walk and the transform's arguments must not meet a body deeper than any other route accepts.
  assertDepth(value);
  return value;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

export function utf8(body: Buffer, status = 400): string {
  try {
    return decoder.decode(body);
  } catch {
    throw status === 400 ? ApiError.field('body', 'is not valid UTF-8 text') : new ApiError(status, 'The destination\'s response is not valid UTF-8 text, which the mask needs.');
  }
}

/** Iterative (a deeply nested body must not overflow the stack): does any string hold '{{'? */
export function holdsTemplate(root: unknown): boolean {
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node === 'string') {
      if (isTemplate(node)) return true;
    } else if (node !== null && typeof node === 'object') {
      stack.push(...(Array.isArray(node) ? node : Object.values(node)));
    }
  }
  return false;
}

/**
 * A body as transform code sees it: parsed when it is JSON (and parses), else text; null when
 * there is none. `from` says whose body it is, and so whose fault one nested too deeply is.
 */
export function transformBody(kind: BodyKind, body: Buffer | undefined, parsed?: unknown, from: 'caller' | 'destination' = 'caller'): unknown {
  if (parsed !== undefined) return parsed;
  if (!body || body.length === 0) return null;
  const text = body.toString('utf8');
  if (kind !== 'json') return text;
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' });
  } catch {
    return text;
  }
  // Handed to the sandbox as JSON: a body nested deeper than JSON bodies may be is the caller's error (400), or
  // the destination's (502): not a 500, and never the caller's for what the destination sent.
  if (from === 'destination' && nestsDeeperThan(value, MAX_BODY_DEPTH)) {
    throw new ApiError(502, `The destination's JSON response is nested deeper than ${MAX_BODY_DEPTH} levels, more than a response transform takes.`);
  }
  assertDepth(value);
  return value;
}

/** How an expression's value is written into text or a form field (objects as JSON, null as nothing). */
export function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function tooLargeForTransform(limit: number): ApiError {
  return new ApiError(502, `The destination's response is larger than ${limit} bytes, the most a response transform takes.`);
}

/** Responses up to this declared length are read whole rather than streamed (see forward). */
export const BUFFERED_RESPONSE_BYTES = 64 * 1024;

export async function readAll(body: Readable | Buffer, limit: number, timeoutMs: number): Promise<Buffer> {
  if (Buffer.isBuffer(body)) {
    if (body.length > limit) throw tooLargeForTransform(limit);
    return body;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) {
        body.destroy();
        throw tooLargeForTransform(limit);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof OutboundError) throw destinationError(err, timeoutMs);
    throw err;
  }
  return Buffer.concat(chunks, size);
}

/**
 * The destination's body as a response transform reads it: decompressed (gzip, deflate, br)
 * to at most `maxBytes`, stopping as soon as it passes them (src/outbound/decompress.ts).
 */
export async function decodeContent(raw: Buffer, headers: Record<string, string | string[]>, maxBytes: number): Promise<Buffer> {
  try {
    return await decompress(raw, header(headers, 'content-encoding'), maxBytes);
  } catch (err) {
    if (!(err instanceof DecompressionError)) throw err;
    switch (err.code) {
      case 'too_large':
        throw new ApiError(
          502,
          `The destination's ${err.coding} response decompresses to more than ${maxBytes} bytes (PROXY_MAX_DECOMPRESSED_BYTES), the most a response transform takes.`,
        );
      case 'invalid':
        throw new ApiError(502, `The destination's ${err.coding} response body could not be decoded.`);
      default:
        throw new ApiError(502, `The destination's response uses the content encoding "${err.coding}", which a response transform cannot read.`);
    }
  }
}

export function destinationError(err: OutboundError, timeoutMs: number): ApiError {
  switch (err.code) {
    case 'timeout':
      return new ApiError(504, `The destination did not answer within ${timeoutMs} ms.`);
    case 'blocked_address':
      // OUTBOUND_ALLOWLIST lifts the refusal of internal addresses, never that of other protocols' ports.
      return new ApiError(
        403,
        err.port !== undefined
          ? `The destination may not be called: ${err.message}.`
          : `The destination may not be called: ${err.message}. Internal addresses are refused unless OUTBOUND_ALLOWLIST names them.`,
      );
    case 'invalid_request':
    case 'invalid_url':
      return ApiError.field('headers', `The request cannot be forwarded: ${err.message}`);
    default:
      return new ApiError(502, `The destination could not be reached: ${err.message}`);
  }
}
