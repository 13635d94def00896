import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ApplicationType } from '../access/permissions.ts';
import { hasPermission, type Principal } from '../access/principal.ts';
import { apiKeyDigest, keyKind, type KeyKind } from '../vault/api-keys.ts';
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
const MAX_CACHE_ENTRIES = 10_000;
/** The share of AUTH_CACHE_SECONDS after which a key in use is looked up again in the background. */
const REFRESH_AFTER = 0.8;

type CacheEntry = { principal: Principal; until: number; refreshAt: number };

/**
 * Resolves API keys to principals, caching them for a few seconds. Revocation does not
 * wait for the cache: every change that affects a key clears it in all processes
 * (see Notifier), and expiry times are checked on each request, cached or not.
 */
export class Authenticator {
  private readonly resolve: KeyResolver;
  private readonly ttlMs: number;
  private readonly cache = new Map<string, CacheEntry>();
  /**
   * Lookups under way, by key hash: concurrent requests that miss the cache for the same key
   * (every connection of a client the moment its entry expires) wait for one lookup instead of
   * sending one each. Only requests of the same generation share one: a request that arrives
   * after an invalidation starts a lookup of its own. Not with the cache off.
   */
  private readonly pending = new Map<string, { generation: number; principal: Promise<Principal | undefined> }>();
  private generation = 0;

  constructor(resolve: KeyResolver, cacheSeconds: number) {
    this.resolve = resolve;
    this.ttlMs = cacheSeconds * 1000;
  }

  invalidate(): void {
    this.generation++;
    this.cache.clear();
    this.pending.clear();
  }

  /** A live cached principal for the key, without I/O; undefined sends the caller to authenticate(). */
  cached(value: string | undefined): Principal | undefined {
    const kind = value ? keyKind(value) : undefined;
    if (!value || !kind) return undefined;
    const now = Date.now();
    const principal = this.live(apiKeyDigest(value), kind, now);
    const expires = principal?.expiresAt;
    return expires && expires.getTime() <= now ? undefined : principal;
  }

  async authenticate(value: string | undefined): Promise<Principal> {
    if (!value) throw ApiError.unauthorized();
    const kind = keyKind(value);
    if (!kind) throw ApiError.unauthorized('The API key is not valid.');
    const cacheKey = apiKeyDigest(value);
    const now = Date.now();
    let principal = this.live(cacheKey, kind, now);
    if (!principal) {
      principal = await this.lookup(cacheKey, kind);
      if (!principal) throw ApiError.unauthorized('The API key is not valid.');
    }
    if (principal.expiresAt && principal.expiresAt.getTime() <= now) throw ApiError.unauthorized('The API key has expired.');
    return principal;
  }

  /** The principal of the key's entry while it lasts; an entry near its end is refreshed meanwhile. */
  private live(cacheKey: string, kind: KeyKind, now: number): Principal | undefined {
    const entry = this.cache.get(cacheKey);
    if (!entry || entry.until <= now) return undefined;
    if (entry.refreshAt <= now) this.refresh(cacheKey, kind, entry);
    return entry.principal;
  }

  /**
   * Looks a cached key up again shortly before its entry ends, while requests go on being
   * served from the entry: under steady traffic no request waits for the key's lookup, where
   * every request arriving while an expired key was looked up again used to wait for it. The
   * entry's end, and so how long a revoked key may be honoured, stays what it was. A refresh
   * that no longer finds the key drops the entry at once; one that fails leaves it to expire.
   */
  private refresh(cacheKey: string, kind: KeyKind, entry: CacheEntry): void {
    entry.refreshAt = Infinity;
    this.lookup(cacheKey, kind).then(
      (found) => {
        if (!found && this.cache.get(cacheKey) === entry) this.cache.delete(cacheKey);
      },
      () => {},
    );
  }

  /** The key's principal from the resolver, through the lookup under way for it when there is one. */
  private lookup(cacheKey: string, kind: KeyKind): Promise<Principal | undefined> {
    // The digest as stored, made only for the lookup: a cache hit needs just the string.
    const hash = Buffer.from(cacheKey, 'base64');
    // With the cache off (AUTH_CACHE_SECONDS=0) every request looks its key up itself.
    if (this.ttlMs <= 0) return this.resolve(hash, kind);
    const generation = this.generation;
    const shared = this.pending.get(cacheKey);
    if (shared && shared.generation === generation) return shared.principal;
    const started = Date.now();
    const principal = this.resolve(hash, kind);
    const flight = { generation, principal };
    this.pending.set(cacheKey, flight);
    const done = () => {
      if (this.pending.get(cacheKey) === flight) this.pending.delete(cacheKey);
    };
    principal.then((found) => {
      done();
      // An invalidation that raced the lookup means the row we read may be stale: do not cache it.
      if (found && generation === this.generation) this.remember(cacheKey, found, started);
    }, done);
    return principal;
  }

  private remember(cacheKey: string, principal: Principal, now: number): void {
    if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(cacheKey, { principal, until: now + this.ttlMs, refreshAt: now + REFRESH_AFTER * this.ttlMs });
  }
}

/** Enforces each route's `config.access` before the body is even parsed. */
export function registerAuth(app: FastifyInstance, authenticator: Authenticator): void {
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
      authenticator.authenticate(value).then((principal) => {
        request.principal = principal;
        done(authorize(principal, access));
      }, done);
    };
    route.onRequest = [check, ...[route.onRequest ?? []].flat()];
  });
}

function authorize(principal: Principal, access: Exclude<Access, 'public'>): ApiError | undefined {
  if (principal.kind === 'session' && access.sessions === false) return ApiError.forbidden('Session keys cannot call this operation.');
  if (access.types && (principal.kind === 'session' || !access.types.includes(principal.applicationType))) {
    return ApiError.forbidden(`This operation needs the key of a ${access.types.join(' or ')} application.`);
  }
  const missing = access.permissions.filter((p) => !hasPermission(principal, p));
  if (missing.length > 0) return ApiError.forbidden(`The API key lacks the permission ${missing.join(', ')}.`);
  return undefined;
}

/** The authenticated caller of a route whose access is not public. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw ApiError.unauthorized();
  return request.principal;
}
