import { wildcardPattern } from '../../db/like.ts';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Database } from '../../db/database.ts';
import { uuidv4 } from '../../db/ids.ts';
import type { Notifier } from '../../db/notifications.ts';
import { hasPermission, type Principal } from '../../access/principal.ts';
import { isTemplate } from '../../expressions/index.ts';
import type { Authenticator } from '../../http/auth.ts';
import { ApiError, FieldErrorList, toApiError } from '../../http/errors.ts';
import { applyMergePatch } from '../../http/merge-patch.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import { compileValidator } from '../../http/validate.ts';
import { LiveCache } from '../../live-cache.ts';
import { OutboundError, type OutboundClient } from '../../outbound/client.ts';
import { storableUrl } from '../../outbound/storable-url.ts';
import { configurationTooLarge, type Sandbox, type SandboxFailure, type SdkHost } from '../../sandbox/index.ts';
import { hashApiKey } from '../../vault/api-keys.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { ApplicationService } from '../applications/service.ts';
import { Disclosure } from '../detokenize/disclosed.ts';
import type { DetokenizeService } from '../detokenize/service.ts';
import type { LogService } from '../logs/service.ts';
import { createTokenSdk } from '../tokens/sdk.ts';
import type { TokenService } from '../tokens/service.ts';
import { maskChaseStratusPan, REGEX_MASK_PROGRAM, regexProblem } from './masks.ts';
import {
  asText,
  bodyKind,
  BUFFERED_RESPONSE_BYTES,
  decodeContent,
  destinationError,
  destinationUrl,
  encodeBody,
  forwardedHeaders,
  header,
  holdsTemplate,
  isEncoded,
  mayHoldExpressions,
  parseJson,
  queryObject,
  readAll,
  splitUrl,
  transformBody,
  transformHeaders,
  utf8,
  withoutHopByHop,
} from './message.ts';
import { TokenBuckets } from '../../http/rate-limit.ts';
import { MAX_URL_LENGTH, ProxyBody, type ProxyInput } from './schema.ts';
import {
  deleteProxy,
  findProxy,
  findProxyByKeyHash,
  insertProxy,
  listProxies,
  updateProxy,
  type ProxyRow,
  type RequestTransform,
  type ResponseTransform,
} from './store.ts';

export type ProxyService = ReturnType<typeof createProxyService>;
/** A proxy as its owner sees it: the row with its key and configuration unsealed. */
export type ProxyView = ProxyRow & { key: string; configuration: Record<string, string> | null };

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

type Sealed = { key: string; configuration: Record<string, string> | null };

/** A proxy as invocations use it, cached per process for a few seconds (any change notice clears it). */
type Live = {
  row: ProxyRow;
  configuration: Record<string, string>;
  /** The configured application's principal, looked up once per cache entry. */
  application?: Promise<Principal | undefined>;
};

const KEY_PREFIX = 'proxy_';
const MASK_TIMEOUT_MS = 2000;
const validProxyBody = compileValidator<ProxyInput>(ProxyBody);

export function createProxyService(deps: {
  db: Database;
  vault: Vault;
  logs: LogService;
  notifier: Notifier;
  outbound: OutboundClient;
  sandbox: Sandbox;
  authenticator: Authenticator;
  applications: ApplicationService;
  detokenize: DetokenizeService;
  tokens: TokenService;
  /** Destination deadline (and transform time limit), ms. */
  timeoutMs: number;
  /** Largest request body, and largest destination response a response transform buffers. */
  maxBodyBytes: number;
  /** The most that response may decompress to. */
  maxDecompressedBytes: number;
  /** Anonymous invocations per second per (proxy, client address); 0 turns the limit off. */
  anonymousRate: number;
  anonymousBurst: number;
  cacheSeconds: number;
}) {
  const { db, vault, logs, notifier, outbound, sandbox, applications, detokenize, tokens } = deps;
  // By the proxy key itself (held in memory anyway): a hit costs no hashing.
  const cache = new LiveCache<Live>(deps.cacheSeconds * 1000);
  notifier.onInvalidate(() => cache.invalidate());
  const buckets = new TokenBuckets(deps.anonymousRate, deps.anonymousBurst);
  // JSON of a transform's input or output: the body (a response's decompressed) plus headers and the rest.
  const sandboxIoBytes = Math.max(1_048_576, 2 * Math.max(deps.maxBodyBytes, deps.maxDecompressedBytes) + 65_536);

  // ---- management -------------------------------------------------------------------

  async function unseal(row: ProxyRow): Promise<Sealed> {
    return (await vault.decrypt(row.tenant_id, secretAad(row.id), row.secret_ciphertext, row.secret_key_id)) as Sealed;
  }

  async function view(row: ProxyRow): Promise<ProxyView> {
    const secret = await unseal(row);
    return { ...row, key: secret.key, configuration: secret.configuration };
  }

  /** Rules beyond the schema; returns what the row stores. */
  async function validate(principal: Principal, input: ProxyInput) {
    const errors = new FieldErrorList();
    const destination_url = checkUrl(input.destination_url, errors);
    const tooLarge = configurationTooLarge(input.configuration);
    if (tooLarge) errors.add('body.configuration', tooLarge);
    const request_transform: RequestTransform | null = input.request_transform ? { code: input.request_transform.code } : null;
    if (request_transform) checkCode(request_transform.code, 'body.request_transform.code', errors);
    const response_transform = input.response_transform ? responseTransform(input.response_transform, errors) : null;
    let application_id: string | null = null;
    if (input.application) {
      application_id = input.application.id;
      const app = await applications.get(principal, application_id).catch((err) => {
        if (err instanceof ApiError && err.status === 404) return undefined;
        throw err;
      });
      if (!app) errors.add('body.application.id', 'is not an application of this tenant');
      else if (app.type === 'management') errors.add('body.application.id', 'must be a public or private application');
    }
    errors.throwIfAny();
    return {
      name: input.name,
      destination_url,
      require_auth: input.require_auth,
      request_transform,
      response_transform,
      application_id,
      configuration: input.configuration ?? null,
    };
  }

  function checkUrl(url: string, errors: FieldErrorList): string {
    const checked = storableUrl(outbound, url, MAX_URL_LENGTH);
    if (checked.ok) return checked.href;
    errors.add('body.destination_url', checked.message);
    return url;
  }

  function checkCode(code: string, field: string, errors: FieldErrorList): void {
    const failure = sandbox.check(code);
    if (failure) errors.add(field, failure.detail);
  }

  /** Type defaults to code; each type takes exactly its own fields. */
  function responseTransform(t: NonNullable<ProxyInput['response_transform']>, errors: FieldErrorList): ResponseTransform | null {
    const at = 'body.response_transform';
    const type = t.type ?? 'code';
    const forbid = (field: 'code' | 'matcher' | 'replacement' | 'expression', why: string) => {
      if (t[field] !== undefined) errors.add(`${at}.${field}`, why);
    };
    if (type === 'code') {
      for (const f of ['matcher', 'replacement', 'expression'] as const) forbid(f, 'is only for transforms of type mask');
      if (t.code === undefined) errors.add(`${at}.code`, 'is required when type is code');
      else checkCode(t.code, `${at}.code`, errors);
      return t.code === undefined ? null : { type: 'code', code: t.code };
    }
    forbid('code', 'is only for transforms of type code');
    if (t.matcher === undefined) errors.add(`${at}.matcher`, 'is required when type is mask');
    if (t.replacement === undefined) errors.add(`${at}.replacement`, 'is required when type is mask');
    else if ([...t.replacement].length !== 1) errors.add(`${at}.replacement`, 'must be exactly one character');
    if (t.matcher === 'regex') {
      if (t.expression === undefined) errors.add(`${at}.expression`, 'is required when matcher is regex');
      else {
        const problem = regexProblem(t.expression);
        if (problem) errors.add(`${at}.expression`, problem);
      }
    } else if (t.matcher === 'chase_stratus_pan') forbid('expression', 'is not used by the chase_stratus_pan matcher');
    if (t.matcher === undefined || t.replacement === undefined) return null;
    return t.matcher === 'regex'
      ? { type: 'mask', matcher: 'regex', replacement: t.replacement, expression: t.expression ?? '' }
      : { type: 'mask', matcher: 'chase_stratus_pan', replacement: t.replacement };
  }

  /** The stored proxy as a PUT body: what a merge patch applies to. */
  function asInput(v: ProxyView): Record<string, unknown> {
    return {
      name: v.name,
      destination_url: v.destination_url,
      require_auth: v.require_auth,
      ...(v.request_transform ? { request_transform: v.request_transform } : {}),
      ...(v.response_transform ? { response_transform: v.response_transform } : {}),
      ...(v.application_id ? { application: { id: v.application_id } } : {}),
      ...(v.configuration ? { configuration: v.configuration } : {}),
    };
  }

  /**
   * Replaces the proxy with `input` (a PUT body). The row is read locked in the same
   * transaction as the write, and `change` builds the input from what was read, so concurrent
   * patches each apply to the one before.
   */
  async function replace(principal: Principal, id: string, change: (current: ProxyView) => ProxyInput, operation: 'update' | 'patch'): Promise<ProxyView> {
    const result = await db.transaction(async (tx) => {
      const locked = await findProxy(db, principal.tenantId, id, tx, true);
      if (!locked) throw ApiError.notFound('proxy');
      const current = await view(locked);
      const { configuration, ...fields } = await validate(principal, change(current));
      const sealed = await vault.encrypt(principal.tenantId, secretAad(current.id), { key: current.key, configuration } satisfies Sealed);
      const updated = await updateProxy(
        db,
        principal.tenantId,
        current.id,
        { ...fields, secret_ciphertext: sealed.ciphertext, secret_key_id: sealed.dataKeyId, modified_by: principal.actorId },
        tx,
      );
      if (!updated) throw ApiError.notFound('proxy');
      await logs.record(principal, { entityType: 'proxy', entityId: current.id, operation, message: `Proxy "${updated.name}" updated` }, tx);
      await notifier.invalidate('proxy', tx);
      return { ...updated, key: current.key, configuration };
    });
    // A request that raced the change may have re-cached the old proxy before the commit.
    notifier.invalidateLocal('proxy');
    return result;
  }

  async function getView(principal: Principal, id: string): Promise<ProxyView> {
    const row = await findProxy(db, principal.tenantId, id);
    if (!row) throw ApiError.notFound('proxy');
    return view(row);
  }

  // ---- invocation -------------------------------------------------------------------

  /** The proxy a key invokes, from the cache (src/live-cache.ts) or looked up. */
  function live(key: string): Promise<Live | undefined> {
    // Shared by concurrent invocations, so outside any one request's transaction.
    return cache.get(key, () =>
      db.withoutAmbient(async () => {
        const row = await findProxyByKeyHash(db, hashApiKey(key));
        if (!row) return undefined;
        const secret = await unseal(row);
        return { row, configuration: secret.configuration ?? {} };
      }),
    );
  }

  /** The proxy's application as a principal, or undefined when it has none (or it is gone or expired). */
  async function applicationOf(entry: Live): Promise<Principal | undefined> {
    if (!entry.row.application_id) return undefined;
    entry.application ??= applications.principalFor(entry.row.tenant_id, entry.row.application_id).catch((err) => {
      entry.application = undefined;
      throw err;
    });
    const principal = await entry.application;
    if (principal?.expiresAt && principal.expiresAt.getTime() <= Date.now()) return undefined;
    return principal;
  }

  /** Who detokenizes: the caller, or for anonymous proxies the proxy's application. */
  async function authorize(entry: Live, inv: Invocation): Promise<Principal | undefined> {
    if (entry.row.require_auth) {
      const caller = await deps.authenticator.authenticate(header(inv.headers, 'svc-api-key'));
      // Another tenant's proxy does not exist for this caller.
      if (caller.tenantId !== entry.row.tenant_id) throw noSuchProxy();
      if (!hasPermission(caller, 'token:use')) throw ApiError.forbidden('Invoking this proxy needs an API key with the token:use permission.');
      return caller;
    }
    const wait = buckets.take(`${entry.row.id}\u0000${inv.ip}`);
    if (wait > 0) throw new RateLimited(wait);
    return applicationOf(entry);
  }

  /**
   * Replaces detokenization expressions in JSON, text and form bodies with the
   * /detokenize walk (token:use). Bodies without any '{{' are passed on byte for byte.
   * Returns the bytes to forward and, for JSON, the parsed value (for the transform).
   * A compressed body is bytes: its '{{' would be chance, so it is forwarded as it came.
   * `disclosure` learns what the expressions rendered.
   */
  async function detokenizeBody(
    entry: Live,
    principal: Principal | undefined,
    contentType: string | undefined,
    contentEncoding: string | undefined,
    body: Buffer | undefined,
    disclosure: Disclosure,
  ) {
    const kind = isEncoded(contentEncoding) ? 'binary' : bodyKind(contentType);
    if (!body || body.length === 0 || kind === 'binary' || !mayHoldExpressions(body, kind)) return { body, kind };
    const detokenized = async (value: unknown): Promise<unknown> => {
      if (!principal) throw noDetokenizer(entry);
      return detokenize.detokenize(principal, value, { permission: 'token:use', at: 'body', disclosed: disclosure });
    };
    if (kind === 'json') {
      const parsed = parseJson(body);
      if (!principal && !holdsTemplate(parsed)) return { body, kind, json: parsed };
      const out = await detokenized(parsed);
      return out === parsed ? { body, kind, json: parsed } : { body: Buffer.from(JSON.stringify(out)), kind, json: out };
    }
    const text = utf8(body);
    if (kind === 'form') {
      const pairs = [...new URLSearchParams(text)];
      if (!pairs.some(([, v]) => isTemplate(v))) return { body, kind };
      const values = (await detokenized(pairs.map(([, v]) => v))) as unknown[];
      const form = new URLSearchParams();
      pairs.forEach(([name], i) => form.append(name, asText(values[i])));
      return { body: Buffer.from(form.toString()), kind };
    }
    if (!isTemplate(text)) return { body, kind };
    return { body: Buffer.from(asText(await detokenized(text))), kind };
  }

  /** Runs a code transform; failures become proxy errors carrying the sandbox's status. */
  async function runCode(entry: Live, which: 'request' | 'response', code: string, args: Record<string, unknown>, disclosure: Disclosure) {
    const app = await applicationOf(entry);
    const result = await sandbox.run({
      tenantId: entry.row.tenant_id,
      // Any change to the proxy starts its transforms afresh: module state is per version.
      cacheKey: `${entry.row.tenant_id}:proxy:${entry.row.id}:${(entry.row.modified_at ?? entry.row.created_at).getTime()}:${which}`,
      code,
      req: { args, configuration: entry.configuration },
      sdk: app ? sdkFor(app, disclosure) : undefined,
      limits: { timeoutMs: deps.timeoutMs, maxIoBytes: sandboxIoBytes },
      purpose: 'proxy_transform',
    });
    if (!result.ok) throw transformFailed(`The ${which} transform`, result.error);
    const value = result.value;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new ApiError(422, `The ${which} transform must return an object with body and headers.`);
    }
    const out = value as { body?: unknown; headers?: unknown };
    return { body: out.body, headers: out.headers === undefined ? undefined : transformHeaders(out.headers, which) };
  }

  /** `bt` in transforms: the same methods as a reactor's, as the proxy's application (docs/reactors.md). */
  function sdkFor(principal: Principal, disclosure: Disclosure): SdkHost {
    return createTokenSdk(principal, tokens, detokenize.detokenize, disclosure.onBehalf());
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

  async function respond(entry: Live, res: { status: number; headers: Record<string, string | string[]>; body: Readable | Buffer }, disclosure: Disclosure): Promise<Forwarded> {
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
    let raw = await readAll(res.body, deps.maxBodyBytes, deps.timeoutMs);
    raw = await decodeContent(raw, headers, deps.maxDecompressedBytes);
    delete headers['content-encoding'];
    delete headers['content-length'];
    if (transform.type === 'mask') {
      const text = utf8(raw, 502);
      const masked = transform.matcher === 'regex' ? await maskRegex(entry, text, transform.expression, transform.replacement) : maskChaseStratusPan(text, transform.replacement);
      return { status: res.status, headers, body: Buffer.from(masked) };
    }
    const out = await runCode(entry, 'response', transform.code, { body: transformBody(bodyKind(header(headers, 'content-type')), raw, undefined, 'destination'), headers }, disclosure);
    const finalHeaders = out.headers ? withoutHopByHop(out.headers, true) : headers;
    const encoded = out.body === undefined ? raw : encodeBody(out.body, finalHeaders);
    return { status: res.status, headers: finalHeaders, body: encoded ?? Buffer.alloc(0) };
  }

  /** Regex masks run in the sandbox: a tenant's expression must not stall the process (catastrophic backtracking). */
  async function maskRegex(entry: Live, text: string, expression: string, replacement: string): Promise<string> {
    const result = await sandbox.run({
      tenantId: entry.row.tenant_id,
      cacheKey: `${entry.row.tenant_id}:proxy-mask`,
      code: REGEX_MASK_PROGRAM,
      req: { args: { text, expression, replacement } },
      limits: { timeoutMs: MASK_TIMEOUT_MS, maxIoBytes: sandboxIoBytes },
      purpose: 'proxy_mask',
    });
    if (!result.ok) {
      if (result.error.kind === 'timeout') throw new ApiError(422, `The mask expression did not finish within ${MASK_TIMEOUT_MS} ms on this response.`);
      throw transformFailed('The mask', result.error);
    }
    return result.value as string;
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

    async create(principal: Principal, input: ProxyInput): Promise<ProxyView> {
      const { configuration, ...fields } = await validate(principal, input);
      const id = uuidv4();
      const key = KEY_PREFIX + randomBytes(32).toString('base64url');
      const sealed = await vault.encrypt(principal.tenantId, secretAad(id), { key, configuration } satisfies Sealed);
      const row = await db.transaction(async (tx) => {
        const inserted = await insertProxy(
          db,
          principal.tenantId,
          {
            id,
            ...fields,
            key_hash: hashApiKey(key),
            secret_ciphertext: sealed.ciphertext,
            secret_key_id: sealed.dataKeyId,
            created_by: principal.actorId,
          },
          tx,
        );
        await logs.record(principal, { entityType: 'proxy', entityId: id, operation: 'create', message: `Proxy "${inserted.name}" created` }, tx);
        return inserted;
      });
      return { ...row, key, configuration };
    },

    async list(principal: Principal, q: Offset & { id: string[]; name?: string }) {
      const namePattern = q.name === undefined ? undefined : wildcardPattern(q.name);
      const { rows, total } = await listProxies(db, principal.tenantId, { ids: q.id, namePattern, ...offsetOf(q) });
      return offsetPage(await Promise.all(rows.map(view)), total, q);
    },

    get: getView,

    async update(principal: Principal, id: string, input: ProxyInput): Promise<ProxyView> {
      return replace(principal, id, () => input, 'update');
    },

    /** RFC 7386 over the proxy as a PUT body, then the same checks as a PUT. */
    async patch(principal: Principal, id: string, patch: Record<string, unknown>): Promise<void> {
      await replace(principal, id, (current) => validProxyBody(applyMergePatch(asInput(current), patch), 'body'), 'patch');
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const gone = await deleteProxy(db, principal.tenantId, id, tx);
        if (!gone) throw ApiError.notFound('proxy');
        await logs.record(principal, { entityType: 'proxy', entityId: id, operation: 'delete', message: `Proxy "${gone.name}" deleted` }, tx);
        await notifier.invalidate('proxy', tx);
      });
      notifier.invalidateLocal('proxy');
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
      const entry = await live(key);
      if (!entry) throw noSuchProxy();
      const principal = await authorize(entry, inv);
      const url = destinationUrl(entry.row.destination_url, path, query.rest);

      let headers = forwardedHeaders(inv.headers);
      const connection = header(inv.headers, 'svc-proxy-connection');
      if (connection !== undefined) {
        headers.connection = connectionValue(connection, () => ApiError.field('headers.svc-proxy-connection', 'SVC-PROXY-CONNECTION must be close or keep-alive'));
      }
      const keepAlive = header(inv.headers, 'svc-proxy-keep-alive');
      if (keepAlive !== undefined) {
        headers['keep-alive'] = keepAliveValue(keepAlive, () =>
          ApiError.field('headers.svc-proxy-keep-alive', 'SVC-PROXY-KEEP-ALIVE must be a list of Keep-Alive parameters, such as timeout=5, max=100'),
        );
      }
      const bodyless = inv.method === 'GET';
      // What the body's expressions rendered, and what `bt` hands the transforms, never comes
      // back in an error: a caller with token:use alone may not see it (docs/proxies.md).
      const disclosure = new Disclosure();
      try {
        const prepared = await detokenizeBody(entry, principal, header(inv.headers, 'content-type'), header(inv.headers, 'content-encoding'), bodyless ? undefined : inv.body, disclosure);
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
          const out = await runCode(entry, 'request', requestTransform.code, args, disclosure);
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

// ---- helpers (pure) -----------------------------------------------------------------

/** A Keep-Alive header's value (RFC 2068 §19.7.1): `name[=value]` parameters separated by commas. */
const KEEP_ALIVE_PARAMETERS = (() => {
  const token = String.raw`[!#$%&'*+\-.^_\`|~0-9A-Za-z]+`;
  const parameter = String.raw`${token}(?:=(?:${token}|"[^"\\]*"))?`;
  return new RegExp(String.raw`^${parameter}(?:[ \t]*,[ \t]*${parameter})*$`);
})();

/**
 * The pool manages the socket by `Connection: close` or `keep-alive`; any other token would
 * name a hop-by-hop header of Coffer's own connection. See docs/proxies.md.
 */
function connectionValue(value: string, invalid: () => ApiError): string {
  const v = value.trim().toLowerCase();
  if (v !== 'close' && v !== 'keep-alive') throw invalid();
  return v;
}

function keepAliveValue(value: string, invalid: () => ApiError): string {
  const v = value.trim();
  if (!KEEP_ALIVE_PARAMETERS.test(v)) throw invalid();
  return v;
}

/**
 * A request transform's headers, with `connection` and `keep-alive` held to the rules of
 * SVC-PROXY-CONNECTION and SVC-PROXY-KEEP-ALIVE: the transform may pass on or set what a
 * caller could ask for, nothing else.
 */
function withConnectionChecked(headers: Record<string, string | string[]>): Record<string, string | string[]> {
  const single = (name: string, check: (value: string, invalid: () => ApiError) => string, rule: string) => {
    const value = headers[name];
    if (value === undefined) return;
    const invalid = () => new ApiError(422, `The request transform returned an invalid ${name} header: ${rule}.`);
    if (Array.isArray(value)) throw invalid();
    headers[name] = check(value, invalid);
  };
  single('connection', connectionValue, 'it must be close or keep-alive');
  single('keep-alive', keepAliveValue, 'it must be a list of Keep-Alive parameters, such as timeout=5, max=100');
  return headers;
}

function secretAad(proxyId: string): string {
  return `proxy:${proxyId}`;
}

function noSuchProxy(): ApiError {
  return new ApiError(404, 'No proxy matches this proxy key.');
}

/**
 * Why an anonymous proxy cannot detokenize. An application id that no longer finds a live
 * application is one that expired (a deleted one clears the id; the sweep then deletes the
 * expired one too): the caller did nothing wrong and cannot fix it, so it is a 403 that says so,
 * for the caller to pass on to the proxy's owner.
 */
function noDetokenizer(entry: Live): ApiError {
  if (entry.row.application_id) {
    return ApiError.forbidden('This proxy\'s application has expired, so it cannot detokenize expressions for anonymous callers; the proxy\'s owner must give it another application.');
  }
  return ApiError.field('body', 'holds detokenization expressions, but this proxy has no application to detokenize them with (anonymous proxies use their application\'s permissions)');
}

function transformFailed(what: string, f: SandboxFailure): ApiError {
  if (f.kind === 'busy') {
    const busy = new ApiError(429, `${what} could not run: too many transforms and reactors of this tenant are in progress; retry shortly.`);
    busy.retryAfterSeconds = 1;
    return busy;
  }
  const status = f.status >= 400 && f.status <= 599 ? f.status : 500;
  return new ApiError(status, `${what} failed: ${f.detail}`);
}
