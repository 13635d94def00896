/**
 * What user code asks the host for — fetch, SDK methods, WebCrypto — arrives here as a JSON
 * string and leaves as one. Nothing but copied strings crosses the boundary, so user code
 * never holds a host object, and the host never holds one of user code's objects (whose
 * prototypes it may have polluted): both sides parse fresh plain data.
 */
import { createHash, createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import secureJson from 'secure-json-parse';
import { MAX_BODY_DEPTH, nestsDeeperThan } from '../http/json-body.ts';
import type { FetchBridge, SdkHost } from './types.ts';

export type CallContext = { sdk?: SdkHost; fetch?: FetchBridge; maxIoBytes: number };

/** ok → `json` is the value (undefined for undefined); not ok → `json` is {status?, message, data?}. */
export type CallOutcome = { ok: boolean; json: string | undefined };

/** Thrown by parseUntrusted for a value nested deeper than request bodies may be. */
export class TooDeepError extends Error {
  constructor() {
    super(`nests deeper than ${MAX_BODY_DEPTH} levels of arrays and objects`);
  }
}

/**
 * JSON from user code: `__proto__` keys (and `constructor.prototype`) are dropped, never applied,
 * and the depth is bounded as a request body's is. An isolate serialises depths the host's
 * recursive readers (tokenize, encryption, the error handler) would overflow their stack on.
 */
export function parseUntrusted(json: string): unknown {
  const value: unknown = secureJson.parse(json, undefined, { protoAction: 'remove', constructorAction: 'remove' });
  if (nestsDeeperThan(value, MAX_BODY_DEPTH)) throw new TooDeepError();
  return value;
}

export function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

class CallError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/**
 * An error a host function threw, as user code may see it. Only errors that say they are
 * meant for users — an HTTP `status` (Coffer's ApiError), or `expose: true` (then with
 * `exposedStatus`) — keep their message; anything else may hold internals (SQL, stacks,
 * file names), so it becomes a bare 500 with `fallback` as its message.
 */
function exposeError(err: unknown, fallback: string, exposedStatus: number): CallOutcome {
  const e = err as { status?: unknown; expose?: unknown; detail?: unknown; message?: unknown; errors?: unknown; data?: unknown } | null;
  const own = e && typeof e.status === 'number' && Number.isInteger(e.status) && e.status >= 400 && e.status <= 599 ? e.status : undefined;
  const status = own ?? (e && e.expose === true ? exposedStatus : undefined);
  if (status === undefined) return { ok: false, json: JSON.stringify({ status: 500, message: fallback }) };
  const message = typeof e!.detail === 'string' ? e!.detail : typeof e!.message === 'string' ? e!.message : fallback;
  let data = e!.errors ?? e!.data;
  try {
    if (data !== undefined && JSON.stringify(data) === undefined) data = undefined;
  } catch {
    data = undefined;
  }
  return { ok: false, json: JSON.stringify({ status, message, data }) };
}

function reply(value: unknown, maxIoBytes: number, what: string): CallOutcome {
  const json = value === undefined ? undefined : JSON.stringify(value);
  if (json !== undefined && byteLength(json) > maxIoBytes) {
    return { ok: false, json: JSON.stringify({ status: 422, message: `The ${what} is larger than ${maxIoBytes} bytes.` }) };
  }
  return { ok: true, json };
}

export async function performCall(kind: string, payload: string, ctx: CallContext): Promise<CallOutcome> {
  if (byteLength(payload) > ctx.maxIoBytes) {
    return { ok: false, json: JSON.stringify({ status: 422, message: `The ${kind} request is larger than ${ctx.maxIoBytes} bytes.` }) };
  }
  let body: Record<string, unknown>;
  try {
    const parsed = parseUntrusted(payload);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    body = parsed as Record<string, unknown>;
  } catch (err) {
    const why = err instanceof TooDeepError ? `: it ${err.message}` : '';
    return { ok: false, json: JSON.stringify({ status: 400, message: `The ${kind} request is not valid${why}.` }) };
  }
  try {
    switch (kind) {
      case 'sdk':
        return await callSdk(body, ctx);
      case 'fetch':
        return await callFetch(body, ctx);
      case 'crypto':
        return callCrypto(body);
      default:
        return { ok: false, json: JSON.stringify({ status: 400, message: `Unknown host call: ${kind}` }) };
    }
  } catch (err) {
    return kind === 'fetch' ? exposeError(err, 'the request could not be sent', 502) : exposeError(err, 'The operation failed.', 500);
  }
}

async function callSdk(body: Record<string, unknown>, ctx: CallContext): Promise<CallOutcome> {
  const method = body.method;
  const args = body.args;
  const sdk = ctx.sdk;
  if (!sdk || typeof method !== 'string' || !Object.hasOwn(sdk, method) || typeof sdk[method] !== 'function') {
    throw new CallError(`The SDK method ${String(method)} is not available.`, 400);
  }
  if (!Array.isArray(args)) throw new CallError('The SDK arguments are not valid.', 400);
  const value = await sdk[method](...args);
  try {
    return reply(value, ctx.maxIoBytes, `reply of ${method}`);
  } catch {
    return { ok: false, json: JSON.stringify({ status: 500, message: 'The operation failed.' }) };
  }
}

async function callFetch(body: Record<string, unknown>, ctx: CallContext): Promise<CallOutcome> {
  if (!ctx.fetch) throw new CallError('outbound requests are not available to this code', 403);
  const { url, method, headers, body: reqBody } = body;
  if (typeof url !== 'string' || typeof method !== 'string' || headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
    throw new CallError('the request is not valid', 400);
  }
  if (reqBody !== undefined && typeof reqBody !== 'string') throw new CallError('the request body must be a string', 400);
  const plainHeaders: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) plainHeaders[k] = String(v);
  const res = await ctx.fetch(reqBody === undefined ? { url, method, headers: plainHeaders } : { url, method, headers: plainHeaders, body: reqBody });
  // Copy the reply field by field: the bridge's object never reaches user code.
  const status = Number(res?.status);
  if (!Number.isInteger(status) || status < 200 || status > 599) throw new CallError('the destination sent an invalid status', 502);
  const resHeaders: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers ?? {})) resHeaders[String(k).toLowerCase()] = String(v);
  const text = typeof res.body === 'string' ? res.body : String(res.body ?? '');
  if (byteLength(text) > ctx.maxIoBytes) throw new CallError(`the response body is larger than ${ctx.maxIoBytes} bytes`, 422);
  return reply({ status, headers: resHeaders, body: text }, ctx.maxIoBytes * 2, 'response');
}

const HASHES: Record<string, string> = { 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' };

function callCrypto(body: Record<string, unknown>): CallOutcome {
  const hash = HASHES[String(body.alg)];
  if (!hash) throw new CallError('Unsupported hash algorithm.', 400);
  const bytes = (v: unknown) => {
    if (typeof v !== 'string') throw new CallError('The crypto request is not valid.', 400);
    return Buffer.from(v, 'base64');
  };
  // As a KeyObject: given raw bytes, Node spends ~12 µs more on each HMAC finding out that they
  // are neither a KeyObject nor a CryptoKey; making the KeyObject costs ~0.7 µs.
  const key = (v: unknown) => createSecretKey(bytes(v));
  switch (body.op) {
    case 'digest':
      return { ok: true, json: JSON.stringify(createHash(hash).update(bytes(body.data)).digest('base64')) };
    case 'hmac':
      return { ok: true, json: JSON.stringify(createHmac(hash, key(body.key)).update(bytes(body.data)).digest('base64')) };
    case 'verify': {
      const mac = createHmac(hash, key(body.key)).update(bytes(body.data)).digest();
      const sig = bytes(body.signature);
      return { ok: true, json: JSON.stringify(sig.length === mac.length && timingSafeEqual(sig, mac)) };
    }
    default:
      throw new CallError('Unsupported crypto operation.', 400);
  }
}
