import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Cross-origin calls from browsers (docs/cors.md). Coffer authenticates every call by a key in a
 * header, never by cookies, so CORS guards nothing here: it exists so that web pages holding a
 * public key (or calling a proxy with require_auth: false) can reach Coffer at all.
 */

/** `'*'`: any origin; a list: exactly these origins, normalised by parseOrigin; an empty list: CORS off. */
export type CorsOrigins = '*' | readonly string[];

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE';
/** What a browser may read beyond the safelisted response headers: every header Coffer itself sets. */
const EXPOSE_HEADERS = 'SVC-IDEMPOTENT-REPLAYED, SVC-PROXY-DESTINATION-STATUS, SVC-PROXY-DESTINATION-REQUEST-ID, Retry-After, X-Request-Id';
/** Two hours: the most Chromium caches a preflight for. */
const MAX_AGE = '7200';
/** Requested header names are echoed, so they must be plain field names (RFC 9110 tokens), and not a flood of them. */
const MAX_REQUEST_HEADERS = 2000;
const REQUEST_HEADERS = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:[ \t]*,[ \t]*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;

type Headers = Record<string, string>;

/** The headers put on each answered request, kept so a proxied answer can have them back (reapplyCors). */
const applied = new WeakMap<FastifyReply, Headers>();
/** Each server's headers by request Origin, for the answers no hook sees (addCorsHeaders). */
const policies = new WeakMap<FastifyInstance, (origin: string) => Headers | undefined>();

/**
 * `https://Shop.example:443/` → `https://shop.example`: the form browsers send in `Origin`, so an
 * allowed origin is a plain string comparison. Undefined for anything that is not an http(s)
 * origin: a path, query, fragment, credentials or wildcard are refused rather than ignored.
 */
export function parseOrigin(entry: string): string | undefined {
  if (!/^https?:\/\/[^/?#@\\\s*]+\/?$/i.test(entry)) return undefined;
  try {
    return new URL(entry).origin;
  } catch {
    return undefined;
  }
}

/** Adds the hook that answers preflights and marks answers for allowed origins; nothing at all when CORS is off. */
export function registerCors(app: FastifyInstance, origins: CorsOrigins): void {
  if (origins !== '*' && origins.length === 0) return;
  // Per allowed origin, built once: a request pays a lookup, not string building.
  const any: Headers = { 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSE_HEADERS };
  const listed = new Map<string, Headers>(
    origins === '*' ? [] : origins.map((o) => [o, { 'access-control-allow-origin': o, vary: 'Origin', 'access-control-expose-headers': EXPOSE_HEADERS }]),
  );

  const headersFor = origins === '*' ? () => any : (origin: string) => listed.get(origin);
  policies.set(app, headersFor);

  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    // The one cost of a request from anything but a browser on another origin.
    if (origin === undefined) return done();
    const headers = headersFor(origin);
    if (headers === undefined) {
      // With a list the answer depends on Origin either way: a shared cache must not hand this
      // one (without CORS headers) to a listed origin.
      if (origins !== '*') reply.header('vary', 'Origin');
      return done();
    }
    if (request.method === 'OPTIONS') {
      // An OPTIONS that is no valid preflight gets what it got before CORS: a 404 with no CORS headers.
      const preflight = preflightHeaders(headers, request.headers['access-control-request-method'], request.headers['access-control-request-headers']);
      if (preflight === undefined) return done();
      // Answered here, before authentication, routing to a handler and body parsing: a preflight carries no key.
      reply.code(204).headers(preflight).send();
      return;
    }
    applied.set(reply, headers);
    reply.headers(headers);
    done();
  });
}

/**
 * For answers made before any hook runs (a malformed URL, a path segment too long: Fastify's
 * frameworkErrors): a browser can read those problems too.
 */
export function addCorsHeaders(request: FastifyRequest, reply: FastifyReply): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  const headers = policies.get(request.server)?.(origin);
  if (headers !== undefined) reply.headers(headers);
}

function preflightHeaders(base: Headers, method: string | undefined, requested: string | undefined): Headers | undefined {
  if (method === undefined) return undefined;
  const out: Headers = { 'access-control-allow-origin': base['access-control-allow-origin'], 'access-control-allow-methods': ALLOW_METHODS, 'access-control-max-age': MAX_AGE };
  let vary = base.vary;
  if (requested !== undefined && requested !== '') {
    if (requested.length > MAX_REQUEST_HEADERS || !REQUEST_HEADERS.test(requested)) return undefined;
    out['access-control-allow-headers'] = requested;
    // The answer depends on the request's header list: a shared cache must not hand it to another.
    vary = vary === undefined ? 'Access-Control-Request-Headers' : `${vary}, Access-Control-Request-Headers`;
  }
  if (vary !== undefined) out.vary = vary;
  return out;
}

/**
 * For a proxied answer (an onSend hook of the invocation routes): the destination's, or a
 * transform's, Access-Control-* headers go and Coffer's are put back, with Origin kept in Vary.
 * Only when this request got CORS headers; otherwise the destination's pass untouched.
 */
export function reapplyCors(reply: FastifyReply): void {
  const ours = applied.get(reply);
  if (ours === undefined) return;
  for (const name of Object.keys(reply.getHeaders())) if (name.startsWith('access-control-')) reply.removeHeader(name);
  const vary = reply.getHeader('vary');
  reply.headers(ours);
  if (ours.vary !== undefined && vary !== undefined) reply.header('vary', withOrigin(String(vary)));
}

function withOrigin(vary: string): string {
  const names = vary.split(',').map((s) => s.trim().toLowerCase());
  return names.includes('*') || names.includes('origin') ? vary : `${vary}, Origin`;
}
