import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ApplicationType } from '../access/permissions.ts';
import { hasPermission, type Principal } from '../access/principal.ts';
import { apiKeyDigest, keyKind, type KeyKind } from '../vault/api-keys.ts';
import { LiveCache } from '../live-cache.ts';
import { CSRF_COOKIE, CSRF_HEADER, parseCookies, SESSION_COOKIE } from './cookies.ts';
import { ApiError } from './errors.ts';

/** What a route requires of its caller; declared in the route's `config.access`. */
export type Access =
  | 'public'
  | {
      /** Every one of these must be granted (somewhere; container scope is the service's job). */
      permissions: string[];
      /** Only keys of these application types may call the route. */
      types?: ApplicationType[];
      /** Whether session keys may call it (default true). */
      sessions?: boolean;
    };

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    principal: Principal | undefined;
  }
}

/** Looks a key up; shared by concurrent requests, so it must not run in any one request's transaction. */
export type KeyResolver = (hash: Buffer, kind: KeyKind) => Promise<Principal | undefined>;

const API_KEY_HEADER = 'svc-api-key';

/**
 * Resolves API keys to principals, caching them for a few seconds (src/live-cache.ts:
 * concurrent misses of a key share one lookup, and a key in use is looked up again before its
 * entry ends). Revocation does not wait for the cache: every change that affects a key clears
 * it in all processes (see Notifier), and expiry times are checked on each request, cached or not.
 */
export class Authenticator {
  private readonly resolve: KeyResolver;
  /** By the key's SHA-256 digest (base64), never the key itself. */
  private readonly cache: LiveCache<Principal>;

  constructor(resolve: KeyResolver, cacheSeconds: number) {
    this.resolve = resolve;
    this.cache = new LiveCache(cacheSeconds * 1000);
  }

  invalidate(): void {
    this.cache.invalidate();
  }

  /** A live cached principal for the key, without I/O; undefined sends the caller to authenticate(). */
  cached(value: string | undefined): Principal | undefined {
    const kind = value ? keyKind(value) : undefined;
    if (!value || !kind) return undefined;
    const now = Date.now();
    const digest = apiKeyDigest(value);
    const principal = this.cache.peek(digest, () => this.lookup(digest, kind));
    const expires = principal?.expiresAt;
    return expires && expires.getTime() <= now ? undefined : principal;
  }

  async authenticate(value: string | undefined): Promise<Principal> {
    if (!value) throw ApiError.unauthorized();
    const kind = keyKind(value);
    if (!kind) throw ApiError.unauthorized('The API key is not valid.');
    const digest = apiKeyDigest(value);
    const principal = await this.cache.get(digest, () => this.lookup(digest, kind));
    if (!principal) throw ApiError.unauthorized('The API key is not valid.');
    if (principal.expiresAt && principal.expiresAt.getTime() <= Date.now()) throw ApiError.unauthorized('The API key has expired.');
    return principal;
  }

  /** The stored form of the digest is made only for a lookup: a cache hit needs just the string. */
  private lookup(digest: string, kind: KeyKind): Promise<Principal | undefined> {
    return this.resolve(Buffer.from(digest, 'base64'), kind);
  }
}

/**
 * Signed-in members (src/features/signin): the principal of a session cookie, given the
 * X-CSRF-Token header and the CSRF cookie it must repeat; throws 401/403 ApiErrors.
 */
export type MemberAuthenticator = (session: string, csrfHeader: string | undefined, csrfCookie: string | undefined) => Promise<Principal>;

/**
 * Enforces each route's `config.access` before the body is even parsed. A request with an
 * SVC-API-KEY is the key's, whatever cookies it carries; one without a key but with a member's
 * session cookie is the member's, when its X-CSRF-Token repeats the CSRF cookie.
 */
export function registerAuth(app: FastifyInstance, authenticator: Authenticator, members?: MemberAuthenticator): void {
  app.decorateRequest('principal', undefined);
  // Each authenticated route gets its own check, bound to its access once at start-up:
  // public routes carry no hook at all, and no request looks its route's options up.
  app.addHook('onRoute', (route) => {
    const access = route.config?.access;
    if (access === undefined || access === 'public') return;
    const check: onRequestHookHandler = (request, _reply, done) => {
      const header = request.headers[API_KEY_HEADER];
      const value = Array.isArray(header) ? header[0] : header;
      // The common case, a cached key, completes synchronously: no promise, no microtask.
      const hit = authenticator.cached(value);
      if (hit) {
        request.principal = hit;
        return done(authorize(hit, access));
      }
      authenticateCaller(request.headers, authenticator, members).then((principal) => {
        request.principal = principal;
        done(authorize(principal, access));
      }, done);
    };
    route.onRequest = [check, ...[route.onRequest ?? []].flat()];
  });
}

/**
 * The caller a request's headers name: its SVC-API-KEY; without one, a signed-in member's
 * session cookie with the X-CSRF-Token that must repeat it; else a 401.
 */
export function authenticateCaller(headers: Record<string, string | string[] | undefined>, authenticator: Authenticator, members: MemberAuthenticator | undefined): Promise<Principal> {
  const header = headers[API_KEY_HEADER];
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined && members && headers.cookie !== undefined) {
    const cookies = parseCookies(headers.cookie);
    const session = cookies.get(SESSION_COOKIE);
    if (session) {
      const csrf = headers[CSRF_HEADER];
      return members(session, Array.isArray(csrf) ? csrf[0] : csrf, cookies.get(CSRF_COOKIE));
    }
  }
  return authenticator.authenticate(value);
}

function authorize(principal: Principal, access: Exclude<Access, 'public'>): ApiError | undefined {
  if (principal.kind === 'session' && access.sessions === false) return ApiError.forbidden('Session keys cannot call this operation.');
  if (access.types && (principal.kind === 'session' || !access.types.includes(principal.applicationType))) {
    return ApiError.forbidden(`This operation needs the key of a ${access.types.join(' or ')} application.`);
  }
  const missing = access.permissions.filter((p) => !hasPermission(principal, p));
  if (missing.length > 0) {
    if (principal.kind === 'member') return ApiError.forbidden(`The member's role (${principal.member?.role}) does not grant ${missing.join(', ')}.`);
    return ApiError.forbidden(`The API key lacks the permission ${missing.join(', ')}.`);
  }
  return undefined;
}

/** The authenticated caller of a route whose access is not public. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw ApiError.unauthorized();
  return request.principal;
}
