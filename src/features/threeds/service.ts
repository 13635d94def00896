import { randomUUID } from 'node:crypto';
import type { Principal } from '../../access/principal.ts';
import type { Transform } from '../../access/rules.ts';
import { keyedLookup } from '../../db/keyed-lookup.ts';
import { type Database, isUniqueViolation } from '../../db/database.ts';
import type { GroupCommit, Item } from '../../db/group-commit.ts';
import { ApiError, type Problem } from '../../http/errors.ts';
import type { Logger } from '../../logger.ts';
import {
  type AuthenticationResult, type ChallengeState, isThreeDSServiceError, type ThreeDSCard, type ThreeDSProvider, type ThreeDSServiceError,
} from '../../threeds/index.ts';
import { cardNumberChecks } from '../../vault/checksums.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { EventService } from '../events/service.ts';
import type { LogService } from '../logs/service.ts';
import type { TokenIntentService } from '../token-intents/service.ts';
import type { Origin, TokenService } from '../tokens/service.ts';
import type { TokenRow } from '../tokens/store.ts';
import { validateAuthenticateRequest } from './authenticate-rules.ts';
import { validateCreateSessionRequest } from './create-rules.ts';
import { createBrowserSide, scheduleDecoupled } from './browser.ts';
export { DECOUPLED_JOB } from './browser.ts';
import {
  type Authentication, AUTHENTICATED_ONCE, deleteExpiredSessions, extendSession, findSession, findSessionsByKeys, insertAuthenticationsStatement,
  insertSessionsStatement, type MethodState, type NewSession, type SessionRow,
} from './store.ts';

/** The token types (of tokens and of intents) a 3DS session takes: what holds a card number. */
const CARD_TYPES = ['card', 'network_token'];

export type ThreeDSDeps = {
  db: Database;
  groupCommit: GroupCommit;
  vault: Vault;
  logs: LogService;
  events: EventService;
  tokens: Pick<TokenService, 'useOne' | 'create'>;
  intents: Pick<TokenIntentService, 'open'>;
  /** Makes the provider, given where Coffer serves the simulated ACS's pages (PUBLIC_URL + /3ds/acs). */
  provider: (acsBaseUrl: string) => ThreeDSProvider;
  /** PUBLIC_URL, read when a URL is made (a test server learns its port only once listening). */
  publicUrl: () => string;
  ttlMinutes: number;
  log: Logger;
};

export type ThreeDSService = ReturnType<typeof createThreeDSService>;

/** A failure of the 3DS service as problem+json: 424 with what the reference API's 3DS errors carry. */
export class ThreeDSServiceProblem extends ApiError {
  readonly failure: ThreeDSServiceError;
  readonly sessionId: string;

  constructor(failure: ThreeDSServiceError, sessionId: string) {
    super(424, failure.detail);
    this.failure = failure;
    this.sessionId = sessionId;
  }

  override toProblem(requestId: string): Problem & Record<string, unknown> {
    const { service_status, error_source, message } = this.failure;
    return { ...super.toProblem(requestId), title: '3DS Service Error', service_status, session_id: this.sessionId, error_source, message };
  }
}

/** What the browser-side half (browser.ts) shares with the API half. */
export type ThreeDSCore = ReturnType<typeof createCore>;

function createCore(deps: ThreeDSDeps) {
  const { db, vault, publicUrl, groupCommit } = deps;
  let provider: ThreeDSProvider | undefined;
  const loader = keyedLookup((keys) => findSessionsByKeys(db, keys));
  const aad = (id: string) => `3ds-session:${id}`;
  const core = {
    ...deps,
    // Sessions are created, and authenticated, each in one group-committed statement with their audit entry and event.
    sessionTable: groupCommit.table<NewSession>('threeds_sessions', { insert: insertSessionsStatement }),
    authenticationTable: groupCommit.table<Authentication>('threeds_authentications', { insert: insertAuthenticationsStatement }),
    /** Made on first use, when PUBLIC_URL is known for certain. */
    provider: (): ThreeDSProvider => (provider ??= deps.provider(`${publicUrl()}/3ds/acs`)),
    methodNotificationUrl: (id: string) => `${publicUrl()}/3ds/sessions/${id}/method-notification`,
    challengeNotificationUrl: (id: string) => `${publicUrl()}/3ds/sessions/${id}/challenge-notification`,
    /** The ACS's state, sealed like token data and bound to the session, so it opens for no other row. */
    async seal(tenantId: string, id: string, state: ChallengeState): Promise<{ sealed: Buffer; keyId: string }> {
      const { ciphertext, dataKeyId } = await vault.encrypt(tenantId, aad(id), state);
      return { sealed: ciphertext, keyId: dataKeyId };
    },
    async unseal(row: SessionRow): Promise<ChallengeState | undefined> {
      if (!row.challenge || !row.challenge_key_id) return undefined;
      return (await vault.decrypt(row.tenant_id, aad(row.id), row.challenge, row.challenge_key_id)) as ChallengeState;
    },
    notFound: (id: string) => new ApiError(404, `3DS session ${id} was not found (it may have expired).`),
    /** A live session of the tenant, or a 404. */
    async load(tenantId: string, id: string): Promise<SessionRow> {
      const row = db.inTransaction() ? await findSession(db, tenantId, id) : await loader.submit({ tenantId, id });
      if (!row) throw new ApiError(404, `3DS session ${id} was not found (it may have expired).`);
      return row;
    },
    /**
     * Writes a card's use before it goes to a provider that sends it out; for a local provider
     * (the simulator), returns it to be written with what the call produced.
     */
    async auditUse(audit: Item[]): Promise<Item[]> {
      if (core.provider().local) return audit;
      await deps.logs.writeItems(audit);
      return [];
    },
  };
  return core;
}

/**
 * 3DS sessions: created for a card token, a token intent or (deprecated) a card number; then
 * authenticated through the provider (src/threeds), frictionlessly or with a challenge the
 * browser-side half (browser.ts) runs on Coffer's pages. A session lives THREEDS_SESSION_TTL_MINUTES.
 */
export function createThreeDSService(deps: ThreeDSDeps) {
  const core = createCore(deps);
  const { db, groupCommit, logs, events, tokens, intents, ttlMinutes } = core;
  const ttlMs = ttlMinutes * 60_000;

  /** Refuses a token that holds no card, or whose data token:use would not show, before anything is decrypted. */
  function checkCardToken(field: string) {
    return (row: TokenRow, transform: Transform) => {
      if (!CARD_TYPES.includes(row.type)) {
        throw ApiError.field(field, `token "${row.id}" is of type ${row.type}: a 3DS session takes a token of type ${CARD_TYPES.join(' or ')}`);
      }
      if (transform !== 'reveal') {
        throw ApiError.forbidden(
          `The API key's token:use on token ${row.id} ${transform === 'mask' ? 'masks' : 'redacts'} its data: 3DS needs the card number itself (transform reveal).`,
        );
      }
    };
  }

  function cardOf(data: unknown): ThreeDSCard {
    const d = data as { number: string; expiration_month?: number; expiration_year?: number };
    return { pan: d.number, expiration_month: d.expiration_month, expiration_year: d.expiration_year };
  }

  /**
   * The card a session is for, read for a use: a token through token:use (reveal) on its
   * container, an intent as any key of the tenant may (intents have no containers). The use's
   * audit entry is added to `audit`, to be written before the card goes to the provider.
   */
  async function readCard(principal: Principal, source: { tokenId?: string; intentId?: string }, field: string, audit: Item[]): Promise<ThreeDSCard> {
    if (source.tokenId !== undefined) {
      const v = await tokens.useOne(principal, source.tokenId, { purpose: '3DS authentication', audit, check: checkCardToken(field) });
      return cardOf(v.data);
    }
    const intent = await intents.open(principal, source.intentId!, field);
    if (!CARD_TYPES.includes(intent.row.type)) {
      throw ApiError.field(field, `token intent ${intent.row.id} is of type ${intent.row.type}: a 3DS session takes a token intent of type ${CARD_TYPES.join(' or ')}`);
    }
    audit.push(logs.item(principal, { entityType: 'token-intent', entityId: intent.row.id, operation: 'use', message: 'Token intent used for 3DS authentication' }));
    return cardOf(intent.data);
  }

  /** The session's card again at authenticate; one gone since creation makes the session unusable (422), not unknown (404). */
  async function readSessionCard(principal: Principal, row: SessionRow, audit: Item[]): Promise<ThreeDSCard> {
    const tokenId = row.token_id ?? row.pan_token_id ?? undefined;
    try {
      return await readCard(principal, tokenId !== undefined ? { tokenId } : { intentId: row.token_intent_id! }, 'params.id', audit);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        throw ApiError.unprocessable(
          `The card of 3DS session ${row.id} (${tokenId !== undefined ? `token ${tokenId}` : `token intent ${row.token_intent_id}`}) no longer exists: create a new session.`,
        );
      }
      throw err;
    }
  }

  /** threeDSCompInd for the AReq: Y once the Method page reported, U without a Method, N when authenticate came first. */
  function methodAtAuthentication(method: MethodState): MethodState {
    return { ...method, method_completion_indicator: method.method_completion_indicator ?? 'N' };
  }

  return {
    ...createBrowserSide(core),

    async create(principal: Principal, body: unknown, origin?: Origin) {
      const request = validateCreateSessionRequest(body);
      const id = randomUUID();
      const audit: Item[] = [];
      let card: ThreeDSCard;
      if (request.pan !== undefined) {
        if (!cardNumberChecks(request.pan)) throw ApiError.field('body.pan', 'is not a valid card number (Luhn check failed)');
        card = { pan: request.pan };
      } else {
        const field = request.token_id !== undefined ? 'body.token_id' : 'body.token_intent_id';
        card = await readCard(principal, { tokenId: request.token_id, intentId: request.token_intent_id }, field, audit);
      }
      // Written before the card goes anywhere (or with the session, for a local provider): a use the provider then fails on was a use.
      const unwritten = await core.auditUse(audit);
      const prepared = await core.provider().prepare(card, { session_id: id, session_type: request.type });
      if (isThreeDSServiceError(prepared)) {
        await logs.writeItems(unwritten);
        throw new ThreeDSServiceProblem(prepared, id);
      }
      const row: NewSession = {
        tenant_id: principal.tenantId,
        id,
        type: request.type,
        token_id: request.token_id ?? null,
        token_intent_id: request.token_intent_id ?? null,
        pan_token_id: null,
        card_brand: prepared.card_brand,
        directory_server_id: prepared.directory_server_id,
        device: request.device ?? null,
        device_info: (request.device_info as Record<string, unknown> | undefined) ?? null,
        version: prepared.version,
        method: prepared.method_url ? { method_url: prepared.method_url } : { method_completion_indicator: 'U' },
        provider: core.provider().name,
        expires_at: new Date(Date.now() + ttlMs),
        created_by: principal.actorId,
      };
      const items = () => [
        ...unwritten,
        core.sessionTable.of(row),
        logs.item(principal, { entityType: '3ds_session', entityId: id, operation: 'create', message: `3DS session created (${request.type})` }),
        events.item(principal.tenantId, '3ds.session.created', id, { id, type: request.type, card_brand: prepared.card_brand }),
      ];
      if (request.pan === undefined) await groupCommit.write(items());
      else {
        // The deprecated pan becomes a card token first, as POST /tokens would make it (token:create on its container).
        await db.transaction(async (tx) => {
          row.pan_token_id = (await tokens.create(principal, { type: 'card', data: { number: request.pan } }, origin)).row.id;
          await groupCommit.write(items(), tx);
        });
      }
      return {
        id,
        type: request.type,
        card_brand: prepared.card_brand,
        ...(prepared.method_url ? { method_url: prepared.method_url } : {}),
        method_notification_url: core.methodNotificationUrl(id),
        directory_server_id: prepared.directory_server_id,
        recommended_version: prepared.recommended_version,
      };
    },

    get(principal: Principal, id: string): Promise<SessionRow> {
      return core.load(principal.tenantId, id);
    },

    /**
     * Checked in this order: the session (404: unknown, another tenant's, expired), the body
     * against its type (400, every field), not authenticated before (409), its card (403/422).
     * The provider is called outside any transaction; its outcome is stored with a row whose key
     * lets a session authenticate once, so of two authenticates at once one is stored and the
     * other is a 409.
     */
    async authenticate(principal: Principal, id: string, body: unknown): Promise<AuthenticationResult> {
      const tenantId = principal.tenantId;
      const session = await core.load(tenantId, id);
      const request = validateAuthenticateRequest(body, session.type);
      if (session.status !== 'created') throw authenticatedAlready(session);
      const audit: Item[] = [];
      const card = await readSessionCard(principal, session, audit);
      const unwritten = await core.auditUse(audit);
      const method = methodAtAuthentication(session.method);
      const outcome = await core.provider().authenticate(
        {
          id,
          type: session.type,
          device: session.device ?? undefined,
          card_brand: session.card_brand,
          directory_server_id: session.directory_server_id,
          recommended_version: session.version.recommended_version,
          method_completion_indicator: method.method_completion_indicator,
        },
        card,
        request,
      );
      if (isThreeDSServiceError(outcome)) {
        await logs.writeItems(unwritten);
        throw new ThreeDSServiceProblem(outcome, id);
      }
      const { result, challenge } = outcome;
      // A decoupled challenge may take longer than the session lives: its result stays readable a session lifetime past its deadline.
      const until = challenge?.expires_at ? Math.max(session.expires_at.getTime(), Date.parse(challenge.expires_at) + ttlMs) : undefined;
      const sealed = challenge ? await core.seal(tenantId, session.id, challenge) : undefined;
      const authenticated: Authentication = {
        tenant_id: tenantId,
        session_id: id,
        status: challenge ? 'challenge' : 'completed',
        authentication: result,
        method_completion_indicator: method.method_completion_indicator!,
        challenge: sealed?.sealed ?? null,
        challenge_key_id: sealed?.keyId ?? null,
        modified_by: principal.actorId,
      };
      const items = [
        ...unwritten,
        core.authenticationTable.of(authenticated),
        logs.item(principal, { entityType: '3ds_session', entityId: id, operation: 'authenticate', message: `3DS session authenticated: ${result.authentication_status}` }),
        events.item(tenantId, '3ds.session.authenticated', id, { id, authentication_status: result.authentication_status }),
      ];
      try {
        // The decoupled-completion job (and a later expiry) is written with it, in a transaction; everything else, in one group-committed statement.
        if (challenge?.type === 'decoupled') {
          await db.transaction(async (tx) => {
            await groupCommit.write(items, tx);
            if (until !== undefined) await extendSession(db, tenantId, id, new Date(until), tx);
            await scheduleDecoupled(db, tenantId, id, challenge, tx);
          });
        } else await groupCommit.write(items);
      } catch (err) {
        // Another authenticate of the session came first.
        if (isUniqueViolation(err, AUTHENTICATED_ONCE)) throw authenticatedAlready(session);
        throw err;
      }
      return result;
    },

    /** The final result: 409 while there is none (not authenticated yet, or a challenge still pending). */
    async challengeResult(principal: Principal, id: string): Promise<AuthenticationResult> {
      const row = await core.load(principal.tenantId, id);
      if (row.status === 'created' || !row.authentication) {
        throw ApiError.conflict(`3DS session ${id} has not been authenticated yet: there is no result to read.`);
      }
      if (row.status === 'challenge') {
        throw ApiError.conflict(`The challenge of 3DS session ${id} is not completed yet (challenge not completed): read the result once the cardholder has finished it.`);
      }
      await events.emit(principal.tenantId, '3ds.session.challenge-result-retrieved', id, { id, authentication_status: row.authentication.authentication_status });
      return row.authentication;
    },

    async sweepExpired(): Promise<number> {
      let deleted = 0;
      for (let batch = 0; batch < 50; batch++) {
        const gone = await deleteExpiredSessions(db, 1000);
        deleted += gone;
        if (gone < 1000) break;
      }
      if (deleted) deps.log.info({ deleted }, 'expired 3DS sessions deleted');
      return deleted;
    },
  };
}

function authenticatedAlready(row: SessionRow): ApiError {
  const status = row.status === 'created' ? undefined : row.authentication?.authentication_status;
  return ApiError.conflict(`3DS session ${row.id} has been authenticated already${status ? ` (${status})` : ''}: a session authenticates once; create a new one.`);
}
