import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, createHmac, createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Database, Tx } from '../db/database.ts';
import { open, seal } from '../vault/keyring.ts';
import { ApiError } from './errors.ts';

const HEADER = 'svc-idempotency-key';
const METHODS = new Set(['POST', 'PUT', 'PATCH']);

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Routes that must never replay (proxy invocations) set this to false. */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    idempotency: { tx: Tx; secrets: KeySecrets; hash: Buffer; done: boolean; committed: AfterCommit[]; shown: ShownData[] } | undefined;
  }
}

type AfterCommit = () => Promise<void>;
const afterCommits = new AsyncLocalStorage<AfterCommit[]>();

/**
 * Token data a reply shows that its request did not send (a merge patch's result, the token a
 * deduplicating create found), with the access it was shown under: `transform` as each
 * `permission` gave it then.
 */
export type ShownData = { tokenId: string; access: { permission: string; transform: string }[] };
/** Throws (an ApiError) when a stored reply may not be shown again; may audit the showing. */
export type ReplayGuard = (principal: NonNullable<FastifyRequest['principal']>, shown: ShownData[]) => Promise<void>;
const shownData = new AsyncLocalStorage<ShownData[]>();

/**
 * Records, for a request under an idempotency key, token data its reply shows that the request
 * did not send; a replay checks it again first (registerIdempotency's replayGuard). Outside
 * such a request it does nothing.
 */
export function noteShownData(entry: ShownData): void {
  shownData.getStore()?.push(entry);
}

/**
 * For a request under an idempotency key, an id of its own for what it creates (`purpose`
 * tells apart two kinds): the same on every retry with the key, so a handler whose effects
 * cannot wait for the request's commit (a processor call, written down before it is made) finds
 * what an earlier attempt left and carries it on rather than starting again. Undefined without a key.
 */
export function idempotentId(request: FastifyRequest, purpose: string): string | undefined {
  const idem = request.idempotency;
  if (!idem) return undefined;
  const h = createHash('sha256').update(idem.secrets.id).update(`\u0000${purpose}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Runs `fn` once the calling request's changes are committed: at once, unless the request runs
 * under an idempotency key, whose whole transaction commits only as its reply is sent; then
 * just after that commit and before the reply goes out (and never if it rolls back). For work
 * that must follow the commit, such as the invalidation barrier that makes a revoked key stop
 * working in every process before the caller hears the change is done.
 */
export function afterCommit(fn: AfterCommit): Promise<void> {
  const pending = afterCommits.getStore();
  if (!pending) return fn();
  pending.push(fn);
  return Promise.resolve();
}

/**
 * SVC-IDEMPOTENCY-KEY, scoped to the tenant and the calling application or session.
 *
 * A request under a key runs whole inside one database transaction that first takes a
 * transaction-level advisory lock on the key: a second request with the key while the
 * first holds it gets 409, and a process that dies mid-request releases it with its
 * connection. On success the response is stored in that same transaction, so the
 * effects and the stored reply commit together or not at all; on failure everything
 * rolls back and the key is free again. Stored replies live `ttlHours`.
 *
 * Replies carry secrets (a new application's API key, a session key and nonce, later token
 * data) and request bodies may too, so nothing readable rests: the row is found by a hash of
 * the key, the reply is encrypted and the request fingerprinted under keys derived from the
 * idempotency key itself, which is never stored. Only a caller presenting it can use the row.
 *
 * A reply showing token data its request did not send (noteShownData) is replayed only once
 * `replayGuard` has found the caller may still see that data as it was shown: a replay must not
 * outlive a deleted token or a revoked rule.
 */
export function registerIdempotency(app: FastifyInstance, db: Database, ttlHours: number, keyMaterial: KeyMaterial, replayGuard: ReplayGuard): void {
  app.decorateRequest('idempotency', undefined);

  // Only POST, PUT and PATCH routes carry the hooks: GET and DELETE pay nothing for idempotency.
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    if (!methods.some((m) => METHODS.has(m)) || route.config?.idempotent === false) return;
    const handler = route.handler;
    // Handlers of idempotent requests run with the request's transaction as the ambient one.
    route.handler = function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const idem = request.idempotency;
      return idem
        ? afterCommits.run(idem.committed, () => shownData.run(idem.shown, () => db.withAmbient(idem.tx, () => handler.call(this, request, reply))))
        : handler.call(this, request, reply);
    };
    route.preHandler = [...[route.preHandler ?? []].flat(), claimHook];
    route.onSend = [...[route.onSend ?? []].flat(), settleHook];
    route.onResponse = [...[route.onResponse ?? []].flat(), releaseHook];
  });

  // Callback-style hooks: a request without an idempotency key (most of them) passes each at
  // once, without a promise to settle.
  function claimHook(request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void {
    if (request.headers[HEADER] === undefined || !request.principal) return done();
    // A replay has been sent from the hook: the handler must not run, so done is not called.
    claim(request, reply).then(() => (reply.sent ? undefined : done()), done);
  }

  function settleHook(request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void): void {
    if (!request.idempotency || request.idempotency.done) return done(null, payload);
    settle(request, reply, payload).then((p) => done(null, p), done);
  }

  function releaseHook(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
    if (!request.idempotency || request.idempotency.done) return done();
    release(request).then(done, done);
  }

  async function claim(request: FastifyRequest, reply: FastifyReply) {
    const raw = request.headers[HEADER];
    if (raw === undefined || !request.principal) return;
    const key = Array.isArray(raw) ? raw[0] : raw;
    if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw ApiError.field('headers.svc-idempotency-key', 'must be 1 to 255 visible ASCII characters (a UUID is recommended)');
    }
    const { tenantId, actorId } = request.principal;
    const secrets = keySecrets(await keyMaterial(tenantId, actorId, key));
    const hash = requestHash(secrets.mac, request, canonicalJson(request.body));

    const tx = await db.pool.connect();
    let keep = false;
    let replay: { status: number; type: string | null; body: string; shown: ShownData[] } | undefined;
    try {
      await tx.query('BEGIN');
      const lock = await tx.query('SELECT pg_try_advisory_xact_lock($1::bigint) AS ok', [secrets.id.readBigInt64BE(0).toString()]);
      if (!lock.rows[0].ok) throw ApiError.conflict('A request with this SVC-IDEMPOTENCY-KEY is still being processed.');
      const stored = await tx.query(
        `SELECT request_hash, response_status, response_type, response_body, response_shows FROM idempotency_keys
         WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND expires_at > now()`,
        [tenantId, actorId, secrets.id.toString('hex')],
      );
      const row = stored.rows[0];
      if (row) {
        if (!(row.request_hash as Buffer).equals(hash)) {
          throw ApiError.unprocessable('This SVC-IDEMPOTENCY-KEY was already used for a different request.');
        }
        replay = {
          status: row.response_status as number,
          type: row.response_type as string | null,
          body: openReply(secrets.enc, row.response_body as string),
          shown: row.response_shows === null ? [] : (JSON.parse(openReply(secrets.enc, row.response_shows as string, SHOWN_AAD)) as ShownData[]),
        };
      } else {
        request.idempotency = { tx, secrets, hash, done: false, committed: [], shown: [] };
        keep = true;
      }
    } finally {
      if (!keep) {
        await tx.query('ROLLBACK').catch(() => {});
        tx.release();
      }
    }
    // Replayed only once the key's lock is released: a client retrying the moment it has
    // this reply (on this process or another) must not meet the lock and get a 409.
    if (replay) {
      if (replay.shown.length > 0) await replayGuard(request.principal, replay.shown);
      reply.header('svc-idempotent-replayed', 'true').code(replay.status);
      if (replay.type) reply.type(replay.type);
      return reply.send(replay.body === '' ? undefined : replay.body);
    }
  }

  async function settle(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const idem = request.idempotency;
    if (!idem || idem.done) return payload;
    idem.done = true;
    const { tenantId, actorId } = request.principal!;
    let committed = false;
    try {
      if (reply.statusCode >= 200 && reply.statusCode < 300) {
        await idem.tx.query(
          `INSERT INTO idempotency_keys (tenant_id, actor_id, key, request_hash, response_status, response_type, response_body, response_shows, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(hours => $9))
           ON CONFLICT (tenant_id, actor_id, key) DO UPDATE SET request_hash = EXCLUDED.request_hash,
             response_status = EXCLUDED.response_status, response_type = EXCLUDED.response_type,
             response_body = EXCLUDED.response_body, response_shows = EXCLUDED.response_shows, expires_at = EXCLUDED.expires_at`,
          [
            tenantId,
            actorId,
            idem.secrets.id.toString('hex'),
            idem.hash,
            reply.statusCode,
            reply.getHeader('content-type') ?? null,
            sealReply(idem.secrets.enc, payloadText(payload)),
            idem.shown.length > 0 ? sealReply(idem.secrets.enc, JSON.stringify(idem.shown), SHOWN_AAD) : null,
            ttlHours,
          ],
        );
        await idem.tx.query('COMMIT');
        committed = true;
      } else {
        await idem.tx.query('ROLLBACK');
      }
    } catch (err) {
      await idem.tx.query('ROLLBACK').catch(() => {});
      request.log.error({ err: (err as Error).message }, 'could not commit an idempotent request');
      const problem = new ApiError(500, 'The outcome of the request is not known (the database connection failed while committing). Retry with the same SVC-IDEMPOTENCY-KEY: it replays the result if the request took effect, and runs it otherwise.');
      reply.code(500).type('application/problem+json');
      return JSON.stringify(problem.toProblem(request.id));
    } finally {
      idem.tx.release();
    }
    if (committed) await runAfterCommit(request, idem.committed);
    return payload;
  }

  // Committed already: a failure here is logged, never turned into an error reply. Outside the
  // request's transaction, which the ambient store of this hook may still name.
  async function runAfterCommit(request: FastifyRequest, pending: AfterCommit[]) {
    for (const fn of pending.splice(0)) {
      await db.withoutAmbient(fn).catch((err: unknown) => request.log.warn({ err: (err as Error).message }, 'work after an idempotent commit failed'));
    }
  }

  // A request that ends without a reply being sent (client gone mid-way) still frees its connection.
  async function release(request: FastifyRequest) {
    const idem = request.idempotency;
    if (!idem || idem.done) return;
    idem.done = true;
    await idem.tx.query('ROLLBACK').catch(() => {});
    idem.tx.release();
  }
}

type KeySecrets = { id: Buffer; enc: KeyObject; mac: KeyObject };

/** What tells one request from another under a key: method, path with query, and body. */
function requestHash(mac: KeyObject, request: FastifyRequest, body: string): Buffer {
  return createHmac('sha256', mac).update(`${request.method} ${request.url}\n${body}`).digest();
}

/**
 * The body with every object's keys sorted. JSON objects are unordered (RFC 8259), so a client
 * that re-serialises its request for a retry, or spells out a default, sends the same request
 * and must get the replay, not a 422. Array order is kept: it is part of the value. Bodies are
 * at most 128 levels deep (json-body.ts), so the recursion of JSON.stringify is bounded.
 */
function canonicalJson(body: unknown): string {
  return JSON.stringify(body ?? null, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}

/**
 * Server-held material for a key: a tenant-keyed HMAC of (caller, idempotency key), so that
 * reading the table is not enough to test guesses of a weak key against stored rows.
 */
export type KeyMaterial = (tenantId: string, actorId: string, key: string) => Promise<string>;

/** What a key stands for in storage (`id`, also the advisory lock), and the keys for its reply and request. */
function keySecrets(material: string): KeySecrets {
  const id = createHash('sha256').update(`id\u0000${material}`).digest();
  const derived = Buffer.from(hkdfSync('sha256', material, 'coffer', 'coffer idempotency reply', 64));
  // Both as KeyObjects: given raw bytes, Node spends ~12 µs more on each HMAC or cipher made with them.
  return { id, enc: createSecretKey(derived.subarray(0, 32)), mac: createSecretKey(derived.subarray(32)) };
}

const REPLY_AAD = Buffer.from('coffer idempotent reply');
/** Its own, so neither sealed column opens as the other. */
const SHOWN_AAD = Buffer.from('coffer idempotent reply: shown data');

function sealReply(key: KeyObject, text: string, aad = REPLY_AAD): string {
  return seal(key, Buffer.from(text, 'utf8'), aad).toString('base64');
}

function openReply(key: KeyObject, sealed: string, aad = REPLY_AAD): string {
  return open(key, Buffer.from(sealed, 'base64'), aad).toString('utf8');
}

function payloadText(payload: unknown): string {
  if (payload === undefined || payload === null) return '';
  if (typeof payload === 'string') return payload;
  if (Buffer.isBuffer(payload)) return payload.toString('utf8');
  return JSON.stringify(payload);
}

/** Stored replies older than the retention are deleted; reusing their key afterwards is a new request. */
export async function sweepIdempotencyKeys(db: Database): Promise<number> {
  const rows = await db.query(
    `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at <= now() LIMIT 5000) RETURNING 1`,
  );
  return rows.length;
}
