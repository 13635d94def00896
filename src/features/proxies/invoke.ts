/**
 * A proxy's invocation: the caller authenticated (or rate limited, when anonymous), the body
 * detokenized and transformed, the request forwarded to the destination, and its answer
 * passed back, streamed, or transformed when the proxy has a response transform.
 */
import type { Readable } from 'node:stream';
import { hasPermission, type Principal } from '../../access/principal.ts';
import { authenticateCaller, type Authenticator, type MemberAuthenticator } from '../../http/auth.ts';
import { ApiError, toApiError } from '../../http/errors.ts';
import { TokenBuckets } from '../../http/rate-limit.ts';
import { OutboundError, type OutboundClient } from '../../outbound/client.ts';
import { Disclosure } from '../detokenize/disclosed.ts';
import type { DetokenizeService } from '../detokenize/service.ts';
import { withCallerConnection, withConnectionChecked } from './connection.ts';
import { detokenizeBody } from './detokenize-body.ts';
import type { Live, LiveProxies } from './live.ts';
import { BUFFERED_RESPONSE_BYTES, destinationError, destinationUrl, encodeBody, forwardedHeaders, header, queryObject, splitUrl, transformBody, withoutHopByHop } from './message.ts';
import type { Transforms } from './transforms.ts';

/** What the invoke route hands over: the caller's request as received. */
export type Invocation = {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer | undefined;
  ip: string;
};

/** The destination's answer: streamed as it arrives when no response transform runs, else buffered. */
export type Forwarded = { status: number; headers: Record<string, string | string[]>; body: Readable | Buffer };

/** An anonymous caller over its rate; the route adds Retry-After. */
export class RateLimited extends ApiError {
  constructor(seconds: number) {
    super(429, 'Too many requests for this proxy from this address; slow down.');
    this.retryAfterSeconds = seconds;
  }
}

export function createInvoker(deps: {
  live: LiveProxies;
  transforms: Transforms;
  outbound: OutboundClient;
  authenticator: Authenticator;
  /** Signed-in members (src/features/signin), who may call proxies that require authentication. */
  members?: MemberAuthenticator;
  detokenize: DetokenizeService;
  /** Destination deadline, ms. */
  timeoutMs: number;
  /** Anonymous invocations per second per (proxy, client address); 0 turns the limit off. */
  anonymousRate: number;
  anonymousBurst: number;
}) {
  const { live, transforms, outbound, detokenize } = deps;
  const buckets = new TokenBuckets(deps.anonymousRate, deps.anonymousBurst);

  /** Who detokenizes: the caller, or for anonymous proxies the proxy's application. */
  async function authorize(entry: Live, inv: Invocation): Promise<Principal | undefined> {
    if (entry.row.require_auth) {
      // An API key, or a signed-in member's session (the console's "try it").
      const caller = await authenticateCaller(inv.headers, deps.authenticator, deps.members);
      // Another tenant's proxy does not exist for this caller.
      if (caller.tenantId !== entry.row.tenant_id) throw noSuchProxy();
      if (!hasPermission(caller, 'token:use')) {
        throw ApiError.forbidden(caller.kind === 'member'
          ? `Invoking this proxy needs the token:use permission, which the member's role (${caller.member?.role}) does not grant.`
          : 'Invoking this proxy needs an API key with the token:use permission.');
      }
      return caller;
    }
    const wait = buckets.take(`${entry.row.id}\u0000${inv.ip}`);
    if (wait > 0) throw new RateLimited(wait);
    return live.applicationOf(entry);
  }

  async function forward(tenantId: string, url: string, method: string, headers: Record<string, string | string[]>, body: Buffer | undefined) {
    try {
      // A small answer of known length comes back read whole: the reply is then written with its
      // headers in one write, and no stream is set up for it. The call takes one of the tenant's
      // share of the destination's connections (docs/outbound.md).
      return await outbound.streamOrBuffer({ url, method, headers, body, timeoutMs: deps.timeoutMs, tenantId }, BUFFERED_RESPONSE_BYTES);
    } catch (err) {
      if (err instanceof OutboundError) throw destinationError(err, deps.timeoutMs);
      throw err;
    }
  }

  async function respond(entry: Live, res: Forwarded, disclosure: Disclosure): Promise<Forwarded> {
    // HTTP parsers take any three digits, but a final answer's status is 200–599: past 599 it is no
    // status at all, and a 1xx is interim (Node's client, which sends SVC-PROXY-KEEP-ALIVE, hands
    // over 000–099, and a 101 that switches protocols nobody asked to switch). Passed on, such an
    // answer breaks the caller's connection: it is malformed. Its body is dropped now: left to the
    // deadline, its error would find no listener.
    if (res.status < 200 || res.status > 599) {
      if (!Buffer.isBuffer(res.body)) res.body.on('error', () => {}).destroy();
      throw new ApiError(502, `The destination answered with status ${res.status}, which is not the status of a final HTTP answer (200–599).`);
    }
    const headers = withoutHopByHop(res.headers);
    const transform = entry.row.response_transform;
    if (!transform) {
      // A 204 or 304 comes from the outbound client with an empty body already, whatever its
      // Content-Length said (src/outbound/client.ts, skipBody).
      return { status: res.status, headers, body: res.body };
    }
    return { status: res.status, ...(await transforms.response(entry, transform, headers, res.body, disclosure)) };
  }

  return {
    /**
     * An error as an invocation reports it: outbound failures (also those of a streamed body
     * that fails before its first byte) get their proxy status; undefined for a bug.
     */
    errorOf(err: unknown): ApiError | undefined {
      if (err instanceof OutboundError) return destinationError(err, deps.timeoutMs);
      return toApiError(err);
    },

    /**
     * One invocation: authenticate, detokenize, transform, forward, transform back. Every
     * failure on Coffer's side is thrown as an ApiError (the route wraps it in proxy_error);
     * a destination that answered, whatever its status, is a result.
     */
    async invoke(inv: Invocation): Promise<Forwarded> {
      const { path, query } = splitUrl(inv.url);
      const key = header(inv.headers, 'svc-proxy-key') ?? query.key;
      if (!key) throw ApiError.unauthorized('A proxy key is required: send it in the SVC-PROXY-KEY header or the svc-proxy-key query parameter.');
      const entry = await live.byKey(key);
      if (!entry) throw noSuchProxy();
      const principal = await authorize(entry, inv);
      const url = destinationUrl(entry.row.destination_url, path, query.rest);

      let headers = withCallerConnection(inv.headers, forwardedHeaders(inv.headers));
      const bodyless = inv.method === 'GET';
      // What the body's expressions rendered, and what `bt` hands the transforms, never comes
      // back in an error: a caller with token:use alone may not see it (docs/proxies.md).
      const disclosure = new Disclosure();
      try {
        const contentType = header(inv.headers, 'content-type');
        const contentEncoding = header(inv.headers, 'content-encoding');
        const prepared = await detokenizeBody(detokenize, entry, principal, contentType, contentEncoding, bodyless ? undefined : inv.body, disclosure);
        let body = prepared.body;

        const requestTransform = entry.row.request_transform;
        if (requestTransform) {
          const args = {
            body: transformBody(prepared.kind, body, prepared.json),
            headers,
            method: inv.method,
            path,
            query: queryObject(query.rest),
          };
          const out = await transforms.request(entry, requestTransform.code, args, disclosure);
          if (out.headers) headers = withConnectionChecked(out.headers);
          if (out.body !== undefined) body = encodeBody(out.body, headers);
        }
        // A transformed response is read whole; ask for it unencoded (undici does not decompress).
        if (entry.row.response_transform) delete headers['accept-encoding'];
        const res = await forward(entry.row.tenant_id, url, inv.method, headers, bodyless ? undefined : body);
        return await respond(entry, res, disclosure);
      } catch (err) {
        throw disclosure.scrubError(err);
      }
    },
  };
}

function noSuchProxy(): ApiError {
  return new ApiError(404, 'No proxy matches this proxy key.');
}
