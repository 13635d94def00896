import { wildcardPattern } from '../../db/like.ts';
import type { Database, Tx } from '../../db/database.ts';
import type { GroupCommit, Item } from '../../db/group-commit.ts';
import { uuidv4 } from '../../db/ids.ts';
import { enqueue, type ClaimedJob } from '../../db/jobs.ts';
import type { Notifier } from '../../db/notifications.ts';
import type { Logger } from '../../logger.ts';
import type { Principal } from '../../access/principal.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { afterCommit, noteShownData, type ShownData } from '../../http/idempotency.ts';
import { applyMergePatch } from '../../http/merge-patch.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import { OutboundError, type OutboundClient } from '../../outbound/client.ts';
import { storableUrl } from '../../outbound/storable-url.ts';
import { configurationTooLarge, DEFAULT_LIMITS, type RunResult, type Sandbox, type SdkHost } from '../../sandbox/index.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { ApplicationService } from '../applications/service.ts';
import { Disclosure, type DisclosureJson } from '../detokenize/disclosed.ts';
import type { DetokenizeService } from '../detokenize/service.ts';
import type { EventService } from '../events/service.ts';
import type { LogService } from '../logs/service.ts';
import { presentToken } from '../tokens/present.ts';
import { createTokenSdk } from '../tokens/sdk.ts';
import type { TokenService } from '../tokens/service.ts';
import { compileValidator } from '../../http/validate.ts';
import { Gate } from '../../gate.ts';
import { LiveCache } from '../../live-cache.ts';
import { failed, ReactorProblem, type Outcome } from './outcome.ts';
import { MAX_CALLBACK_URL_LENGTH, ReactorBody } from './schema.ts';
import {
  completeResult,
  deleteOldResultsAcrossTenants,
  deleteReactor,
  findReactor,
  findResult,
  insertPendingResult,
  insertReactor,
  insertResultsStatement,
  listReactors,
  updateReactor,
  type ReactorRow,
  type ReactorResultRow,
  type ResultWrite,
} from './store.ts';

export type ReactorInput = { name: string; code: string; configuration: Record<string, string>; application?: { id: string } | null };
export type ReactorPatch = Record<string, unknown>;
/** A reactor with its configuration opened. */
export type Reactor = Omit<ReactorRow, 'configuration_ciphertext' | 'configuration_key_id'> & { configuration: Record<string, string> };
export type ReactorView = Reactor & { application: { id: string; name: string; type: string } | undefined };
/** What a run produces: the spec's Reactor Response, or a problem (`data` is what the code's error class carried). */

export type ReactorLimits = { syncTimeoutMs: number; asyncTimeoutMs: number; memoryMb: number; maxTokens: number };

export const RUN_JOB = 'reactor.run';
/** The change notice topic of reactors (src/db/notifications.ts): an update or delete clears every process's cache. */
export const REACTOR_TOPIC = 'reactor';

export type ReactorService = ReturnType<typeof createReactorService>;

export function createReactorService(deps: {
  db: Database;
  groupCommit: GroupCommit;
  vault: Vault;
  logs: LogService;
  events: EventService;
  sandbox: Sandbox;
  outbound: OutboundClient;
  applications: ApplicationService;
  tokens: TokenService;
  detokenize: DetokenizeService;
  limits: ReactorLimits;
  log: Logger;
  notifier: Notifier;
  /** How long an invocation may use a reactor it looked up before (0: never); change notices clear it at once. */
  cacheSeconds: number;
}) {
  const { db, groupCommit, vault, logs, events, sandbox, outbound, applications, tokens, detokenize, limits, log, notifier } = deps;
  const resultTable = groupCommit.table<ResultWrite>('reactor_results', { insert: insertResultsStatement });
  // The sandbox admits runs by tenant (its share of the runs at once, and of the queue); past
  // it, a run ends in a `busy` failure, answered with 429.
  // A run under an idempotency key is inside its request's transaction, so it holds one of the
  // pool's connections from before it is admitted until its reply is sent. Such runs never
  // wait for a slot, and at most half the pool is theirs: slow code run with idempotency keys
  // cannot take every connection the other requests of every tenant need.
  const holding = () => new BusyError(HOLDING);
  const heldRuns = new Gate(Math.max(1, Math.floor((db.pool.options.max ?? 10) / 2)), { refuse: holding });
  const admit = (run: (wait: boolean) => Promise<RunResult>): Promise<RunResult> =>
    db.inTransaction()
      ? heldRuns.tryRun(async () => refuseBusy(await run(false), HOLDING))
      : run(true).then((r) => refuseBusy(r));

  // The reactors that react and react-async invoke, by tenant and id, with the configuration
  // decrypted: held in memory only (never logged), for a few seconds, and cleared by any change
  // notice (an update or delete of a reactor sends one; so does a reconnect of the listener).
  const cache = new LiveCache<Reactor>(deps.cacheSeconds * 1000);
  notifier.onInvalidate(() => cache.invalidate());

  /** The reactor to invoke: from the cache (src/live-cache.ts), or loaded. */
  async function live(principal: Principal, id: string): Promise<Reactor> {
    // Shared by concurrent invocations, so outside any one request's transaction.
    const reactor = await cache.get(`${principal.tenantId}/${id}`, () =>
      db.withoutAmbient(async () => {
        const found = await find(principal.tenantId, id);
        // Shared by concurrent invocations: nothing may change it.
        if (found) Object.freeze(found.configuration);
        return found && Object.freeze(found);
      }),
    );
    if (!reactor) throw ApiError.notFound('reactor');
    return reactor;
  }

  async function validate(principal: Principal, input: ReactorInput, errors: FieldErrorList): Promise<{ id: string; name: string; type: string } | undefined> {
    const failure = sandbox.check(input.code);
    if (failure) errors.add('body.code', failure.detail);
    const tooLarge = configurationTooLarge(input.configuration);
    if (tooLarge) errors.add('body.configuration', tooLarge);
    if (!input.application) return undefined;
    const app = await applications.principalFor(principal.tenantId, input.application.id);
    if (!app) errors.add('body.application.id', 'no such application in this tenant');
    else if (app.applicationType === 'management') errors.add('body.application.id', 'must be a public or private application');
    else return { id: app.applicationId, name: (await applications.get(principal, app.applicationId)).name, type: app.applicationType };
    return undefined;
  }

  async function present(principal: Principal, r: Reactor): Promise<ReactorView> {
    if (!r.application_id) return { ...r, application: undefined };
    const app = await applications.get(principal, r.application_id).catch(() => undefined);
    return { ...r, application: app ? { id: app.id, name: app.name, type: app.type } : undefined };
  }

  /**
   * After a change: an invocation that raced it may have cached the old reactor before the
   * commit; once this resolves, no process serves it any more. Under an idempotency key the
   * change commits only with the reply, so this waits for that commit (it would otherwise clear
   * the cache before it, and wait for no other process).
   */
  function clearedEverywhere(): Promise<void> {
    return afterCommit(() => notifier.invalidateLocal(REACTOR_TOPIC));
  }

  /** The reactor's row, locked until tx ends; the stored id, not the path's spelling, is what later writes use. */
  async function locked(principal: Principal, id: string, tx: Tx): Promise<ReactorRow> {
    const row = await findReactor(db, principal.tenantId, id, tx, true);
    if (!row) throw ApiError.notFound('reactor');
    return row;
  }

  /** Replaces the locked reactor `row` with `input` (a PUT body), in tx. */
  async function write(principal: Principal, row: ReactorRow, input: ReactorInput, tx: Tx): Promise<ReactorView> {
    const errors = new FieldErrorList();
    const app = await validate(principal, input, errors);
    errors.throwIfAny();
    // The configuration is sealed to the stored id (a UUID may come in upper case in the path).
    const sealed = await sealConfiguration(principal.tenantId, row.id, input.configuration);
    const r = await updateReactor(db, principal.tenantId, {
      id: row.id,
      name: input.name,
      code: input.code,
      ...sealed,
      application_id: app?.id ?? null,
      modified_by: principal.actorId,
    }, tx);
    if (!r) throw ApiError.notFound('reactor');
    await logs.record(principal, { entityType: 'reactor', entityId: row.id, operation: 'update', message: `Reactor "${r.name}" updated` }, tx);
    await notifier.invalidate(REACTOR_TOPIC, tx);
    return { ...(await hydrate(r)), application: app };
  }

  async function load(principal: Principal, id: string): Promise<Reactor> {
    const reactor = await find(principal.tenantId, id);
    if (!reactor) throw ApiError.notFound('reactor');
    return reactor;
  }

  async function find(tenantId: string, id: string): Promise<Reactor | undefined> {
    const row = await findReactor(db, tenantId, id);
    return row && hydrate(row);
  }

  async function hydrate(row: ReactorRow): Promise<Reactor> {
    const { configuration_ciphertext, configuration_key_id, ...rest } = row;
    const configuration = (await vault.decrypt(row.tenant_id, configAad(row.id), configuration_ciphertext, configuration_key_id)) as Record<string, string>;
    return { ...rest, configuration };
  }

  async function sealConfiguration(tenantId: string, id: string, configuration: Record<string, string>) {
    const { ciphertext, dataKeyId } = await vault.encrypt(tenantId, configAad(id), configuration);
    return { configuration_ciphertext: ciphertext, configuration_key_id: dataKeyId };
  }

  /** The reactor's configured application, as the principal `bt` and the tokenize block act with. */
  async function appPrincipal(reactor: Reactor): Promise<Principal | undefined> {
    return reactor.application_id ? applications.principalFor(reactor.tenant_id, reactor.application_id) : undefined;
  }

  /**
   * Runs user code on already-detokenized args and tokenizes what it asks to; never throws for
   * user faults. Events are the callers' business: a sync run and an async one record them at
   * different moments (see react and accept).
   */
  async function execute(
    reactor: Reactor,
    caller: () => Promise<Principal>,
    args: unknown,
    timeoutMs: number,
    disclosure: Disclosure,
    beforeEgress?: () => Promise<void>,
  ): Promise<Outcome> {
    const app = await appPrincipal(reactor);
    const tokenSdk: SdkHost | undefined = app ? createTokenSdk(app, tokens, detokenize.detokenize, disclosure.onBehalf()) : undefined;
    const sdk = tokenSdk && beforeEgress ? gated(tokenSdk, beforeEgress) : tokenSdk;
    const result = await admit((wait) => sandbox.run({
      wait,
      tenantId: reactor.tenant_id,
      cacheKey: `${reactor.tenant_id}:${reactor.id}:${reactor.version}`,
      code: reactor.code,
      req: { args: args ?? null, configuration: reactor.configuration },
      sdk,
      fetch: async (r) => {
        await beforeEgress?.();
        try {
          const res = await outbound.request({ url: r.url, method: r.method, headers: r.headers, body: r.body, followRedirects: true, tenantId: reactor.tenant_id });
          return { status: res.status, headers: flatten(res.headers), body: res.body.toString('utf8') };
        } catch (err) {
          // The runtime puts "fetch failed: " before the message itself (the bridge's contract).
          if (err instanceof OutboundError) throw new ApiError(err.code === 'blocked_address' || err.code === 'invalid_url' ? 400 : 502, err.message);
          throw err;
        }
      },
      limits: { timeoutMs, memoryMb: limits.memoryMb },
      purpose: 'reactor',
    }));
    const outcome = result.ok ? await finish(reactor, app ? async () => app : caller, result.value, beforeEgress) : failed(result.error);
    // Whatever the code was handed of token data stays out of what its failure reports.
    return outcome.ok ? outcome : disclosure.scrubFailure(outcome);
  }

  /** reactor.completed or reactor.failed, with the request id Retrieve result takes. */
  function settledEvent(reactor: { id: string; tenant_id: string }, requestId: string, outcome: Pick<Outcome, 'ok'> & { status?: number }): Item {
    return events.item(reactor.tenant_id, outcome.ok ? 'reactor.completed' : 'reactor.failed', reactor.id, {
      reactor_id: reactor.id,
      request_id: requestId,
      ...(outcome.ok ? {} : { status: outcome.status }),
    });
  }

  async function finish(reactor: Reactor, tokenizer: () => Promise<Principal>, value: unknown, beforeEgress?: () => Promise<void>): Promise<Outcome> {
    if (value === undefined || value === null) return { ok: true, response: {} };
    if (typeof value !== 'object' || Array.isArray(value)) {
      return { ok: false, status: 422, detail: 'The reactor must return an object with optional "raw" and "tokenize".' };
    }
    const { raw, tokenize } = value as { raw?: unknown; tokenize?: unknown };
    if (tokenize === undefined || tokenize === null) return { ok: true, response: raw === undefined ? {} : { raw } };
    // Tokens made from what the code returns are written after the invocation's audit.
    await beforeEgress?.();
    try {
      // The point of tokenizing is that the caller gets tokens instead of data: none is shown.
      const created = await tokens.tokenize(await tokenizer(), tokenize, (v) => presentToken({ ...v, data: undefined, transform: 'redact' }));
      return { ok: true, response: { tokens: created, ...(raw === undefined ? {} : { raw }) } };
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) {
        const status = err.status === 400 ? 422 : err.status;
        return { ok: false, status, detail: `The reactor's tokenize block was rejected: ${err.detail}`, errors: err.errors };
      }
      throw err;
    }
  }

  /**
   * Detokenizes the caller's args with token:use, at most `maxTokens` tokens; `deferAudit` as in
   * TokenService.resolveForUse; `disclosure` learns what the run is handed.
   */
  function detokenizeArgs(principal: Principal, args: unknown, deferAudit: Item[], disclosure: Disclosure): Promise<unknown> {
    return detokenize.detokenize(principal, args ?? null, { permission: 'token:use', at: 'body.args', maxTokens: limits.maxTokens, deferAudit, disclosed: disclosure });
  }

  /**
   * A sync invocation's audit entries and reactor.invoked, written before anything leaves
   * Coffer: when the code first calls out (fetch, a token operation, a tokenize block), or
   * else in one write with reactor.completed before the reply. Until then the data is only
   * in the isolate, which can reach nothing but through those calls. `atEgress` is written
   * only in the first case: the run's pending result, so that the request id reactor.invoked
   * has made known answers 202 while the run goes on (in the second case the settled result
   * is written with it).
   */
  function auditBeforeEgress(items: Item[], atEgress: Item[]) {
    let written: Promise<unknown> | undefined;
    // Never in the request's transaction (one under an idempotency key commits only with the
    // reply, and rolls back when the run fails): what the run did is on record whatever its answer.
    // Then on a connection of its own rather than the shared group commit, whose next batch could
    // be waiting on a row that transaction holds (a token id of the tokenize block).
    const write = (batch: Item[]) =>
      db.inTransaction()
        ? db.withoutAmbient(() => db.transaction((tx) => groupCommit.write(batch, tx)))
        : groupCommit.write(batch);
    return {
      flush: async (): Promise<void> => {
        await (written ??= write([...items, ...atEgress]));
      },
      /** Writes `last`, with the items if they are not written yet. */
      async finish(last: Item[]): Promise<void> {
        if (!written) {
          written = write([...items, ...last]);
          await written;
          return;
        }
        await written;
        await write(last);
      },
    };
  }

  async function accept(principal: Principal, reactor: Reactor, args: unknown, callbackUrl: string | undefined): Promise<string> {
    // The uses are audited with the job that carries the data, not before: a call refused
    // below (413) or failing to queue used nothing.
    const uses: Item[] = [];
    const disclosure = new Disclosure();
    const plain = await detokenizeArgs(principal, args, uses, disclosure);
    // Refused now, as a synchronous run would be, not when the job runs.
    if (Buffer.byteLength(JSON.stringify(plain ?? null), 'utf8') > DEFAULT_LIMITS.maxIoBytes) {
      throw new ApiError(413, `The arguments are larger than ${DEFAULT_LIMITS.maxIoBytes} bytes as JSON.`);
    }
    const requestId = uuidv4();
    // What was detokenized travels with the arguments: the run scrubs its errors of it, and the
    // result is shown only while the caller may still use those tokens.
    const sealed = await vault.encrypt(principal.tenantId, argsAad(requestId), { args: plain, disclosed: disclosure.toJSON() } satisfies SealedArgs);
    await db.transaction(async (tx) => {
      await groupCommit.write(uses, tx);
      await insertPendingResult(db, principal.tenantId, { id: requestId, reactor_id: reactor.id, started_by: principal.actorId }, tx);
      await enqueue(db, principal.tenantId, RUN_JOB, {
        reactor_id: reactor.id,
        request_id: requestId,
        args: sealed.ciphertext.toString('base64'),
        data_key_id: sealed.dataKeyId,
        caller: serializePrincipal(principal),
        ...(callbackUrl ? { callback_url: callbackUrl } : {}),
      }, { maxAttempts: 5 }, tx);
      await logs.record(principal, { entityType: 'reactor', entityId: reactor.id, operation: 'react', message: `Reactor invoked asynchronously (request ${requestId})` }, tx);
      // Invoked means accepted: recorded with the job, so a webhook subscriber learns the request id at once.
      await events.emit(principal.tenantId, 'reactor.invoked', reactor.id, { reactor_id: reactor.id, request_id: requestId }, tx);
    });
    return requestId;
  }

  /**
   * Stores the outcome of a pending run and records its event in one transaction, so a retried
   * job never reports one run twice. False when the result was no longer pending.
   */
  async function storeOutcome(reactor: { id: string; tenant_id: string }, requestId: string, outcome: Outcome, shown: ShownData[]): Promise<boolean> {
    const sealed = await sealOutcome(reactor.tenant_id, requestId, outcome, shown);
    return db.transaction(async (tx) => {
      const stored = await completeResult(db, reactor.tenant_id, { id: requestId, ...sealed }, tx);
      if (stored) await groupCommit.write([settledEvent(reactor, requestId, outcome)], tx);
      return stored;
    });
  }

  /**
   * A synchronous run's outcome, kept as an async run's is: its events' request id then works
   * with Retrieve result too. Written with reactor.completed or reactor.failed.
   */
  async function settled(reactor: { id: string; tenant_id: string }, requestId: string, startedBy: string, outcome: Outcome, shown: ShownData[]): Promise<Item[]> {
    const sealed = await sealOutcome(reactor.tenant_id, requestId, outcome, shown);
    return [settledEvent(reactor, requestId, outcome), resultTable.of({ id: requestId, tenant_id: reactor.tenant_id, reactor_id: reactor.id, started_by: startedBy, ...sealed })];
  }

  /**
   * A finished run's stored form: its status, and the outcome sealed to the request id with the
   * tokens whose data the run was handed (`shown`, see Disclosure.shown).
   */
  async function sealOutcome(tenantId: string, requestId: string, outcome: Outcome, shown: ShownData[]) {
    const { ciphertext, dataKeyId } = await vault.encrypt(tenantId, resultAad(requestId), { ...outcome, shown } satisfies StoredOutcome);
    return { status: outcome.ok ? ('completed' as const) : ('failed' as const), ciphertext, data_key_id: dataKeyId };
  }

  /**
   * Sealed to the stored request id, never to a path's spelling of it (a UUID may come in upper
   * case). A result stored before `shown` was kept has none.
   */
  async function readOutcome(tenantId: string, row: ReactorResultRow): Promise<{ outcome: Outcome; shown: ShownData[] }> {
    const { shown = [], ...outcome } = (await vault.decrypt(tenantId, resultAad(row.id), row.ciphertext!, row.data_key_id!)) as StoredOutcome;
    return { outcome: outcome as Outcome, shown };
  }

  return {
    async create(principal: Principal, input: ReactorInput): Promise<ReactorView> {
      const errors = new FieldErrorList();
      const app = await validate(principal, input, errors);
      errors.throwIfAny();
      const id = uuidv4();
      const sealed = await sealConfiguration(principal.tenantId, id, input.configuration);
      return db.transaction(async (tx) => {
        const r = await insertReactor(db, principal.tenantId, {
          id,
          name: input.name,
          code: input.code,
          ...sealed,
          application_id: app?.id ?? null,
          created_by: principal.actorId,
        }, tx);
        await logs.record(principal, { entityType: 'reactor', entityId: r.id, operation: 'create', message: `Reactor "${r.name}" created` }, tx);
        return { ...(await hydrate(r)), application: app };
      });
    },

    async list(principal: Principal, q: Offset & { id: string[]; name?: string }) {
      const { rows, total } = await listReactors(db, principal.tenantId, { ids: q.id, namePattern: q.name ? wildcardPattern(q.name) : undefined, ...offsetOf(q) });
      const views = [];
      for (const r of rows) views.push(await present(principal, await hydrate(r)));
      return offsetPage(views, total, q);
    },

    async get(principal: Principal, id: string): Promise<ReactorView> {
      return present(principal, await load(principal, id));
    },

    async update(principal: Principal, requested: string, input: ReactorInput): Promise<ReactorView> {
      const view = await db.transaction(async (tx) => write(principal, await locked(principal, requested, tx), input, tx));
      await clearedEverywhere();
      return view;
    },

    /**
     * RFC 7386 over the stored reactor as a PUT body, then the same checks as a PUT. The row is
     * locked from read to write, so concurrent patches each apply to the one before.
     */
    async patch(principal: Principal, id: string, patch: ReactorPatch): Promise<void> {
      await db.transaction(async (tx) => {
        const row = await locked(principal, id, tx);
        const current = await hydrate(row);
        const base = {
          name: current.name,
          code: current.code,
          configuration: current.configuration,
          ...(current.application_id ? { application: { id: current.application_id } } : {}),
        };
        await write(principal, row, validReactorBody(applyMergePatch(base, patch), 'body'), tx);
      });
      await clearedEverywhere();
    },

    /** Deletes run results (synchronous and asynchronous) older than `days`. */
    sweepResults(days: number): Promise<number> {
      return deleteOldResultsAcrossTenants(db, days);
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const deleted = await deleteReactor(db, principal.tenantId, id, tx);
        if (!deleted) throw ApiError.notFound('reactor');
        await logs.record(principal, { entityType: 'reactor', entityId: deleted, operation: 'delete', message: 'Reactor deleted' }, tx);
        await notifier.invalidate(REACTOR_TOPIC, tx);
      });
      await clearedEverywhere();
    },

    /** POST /reactors/{id}/react: runs now and answers with the Reactor Response, or a problem. */
    async react(principal: Principal, id: string, args: unknown): Promise<{ tokens?: unknown; raw?: unknown }> {
      const reactor = await live(principal, id);
      // Nothing is recorded, and no code runs, unless every token may be used.
      const uses: Item[] = [];
      const disclosure = new Disclosure();
      const plain = await detokenizeArgs(principal, args, uses, disclosure);
      const requestId = uuidv4();
      const startedBy = principal.actorId;
      const audit = auditBeforeEgress([
        ...uses,
        // The stored id: the path may spell the UUID in upper case.
        logs.item(principal, { entityType: 'reactor', entityId: reactor.id, operation: 'react', message: `Reactor invoked (request ${requestId})` }),
        events.item(principal.tenantId, 'reactor.invoked', reactor.id, { reactor_id: reactor.id, request_id: requestId }),
      ], [resultTable.of({ id: requestId, tenant_id: reactor.tenant_id, reactor_id: reactor.id, started_by: startedBy, status: 'pending', ciphertext: null, data_key_id: null })]);
      let outcome: Outcome;
      try {
        outcome = await execute(reactor, async () => principal, plain, limits.syncTimeoutMs, disclosure, audit.flush);
      } catch (err) {
        // Turned away before anything ran: there was no invocation to record.
        if (err instanceof BusyError) throw err;
        // Not the code's fault (Coffer failed): the invocation still ends in reactor.failed.
        const failure: Outcome = err instanceof ApiError
          ? disclosure.scrubFailure({ ok: false as const, status: err.status, detail: err.detail, errors: err.errors })
          : { ok: false, status: 500, detail: 'The reactor could not be run. Quote the request id when reporting it.' };
        await settled(reactor, requestId, startedBy, failure, disclosure.shown()).then((items) => audit.finish(items)).catch(() => undefined);
        throw disclosure.scrubError(err);
      }
      const shown = disclosure.shown();
      await audit.finish(await settled(reactor, requestId, startedBy, outcome, shown));
      if (!outcome.ok) throw new ReactorProblem(outcome);
      // A reply kept under an idempotency key is shown again only while these may still be used.
      for (const entry of shown) noteShownData(entry);
      return outcome.response;
    },

    /** react-async, and react with the deprecated callback_url: a job runs it; the result is kept. */
    async reactAsync(principal: Principal, id: string, args: unknown, callbackUrl?: string): Promise<string> {
      const reactor = await live(principal, id);
      let target: string | undefined;
      if (callbackUrl) {
        const checked = storableUrl(outbound, callbackUrl, MAX_CALLBACK_URL_LENGTH);
        if (!checked.ok) throw ApiError.field('body.callback_url', checked.message);
        target = checked.href;
      }
      return accept(principal, reactor, args, target);
    },

    /**
     * pending → undefined; completed → the Reactor Response; failed → the translated problem
     * (thrown). Only the application or session that started the run reads it: to anyone else
     * (and for a result kept before its starter was, see migration 013) it does not exist. A
     * finished run's answer is shown again only while the tokens it was handed still exist and
     * the caller may still use them as it could, and each showing is audited as a use.
     */
    async result(principal: Principal, id: string, requestId: string): Promise<{ tokens?: unknown; raw?: unknown } | undefined> {
      const row = await findResult(db, principal.tenantId, id, requestId);
      if (!row || row.started_by !== principal.actorId) throw ApiError.notFound('reactor result');
      if (row.status === 'pending') return undefined;
      const { outcome, shown } = await readOutcome(principal.tenantId, row);
      if (shown.length > 0) {
        await tokens.checkShown(principal, shown, (tokenId, gone) => ApiError.conflict(
          `The result of this run shows what the reactor made of token ${tokenId}, which ${gone ? 'no longer exists' : 'the API key may no longer use as it did'}: it is not shown again.`,
        ));
      }
      if (!outcome.ok) throw new ReactorProblem(outcome);
      return outcome.response;
    },

    /** The job handler of RUN_JOB. A retry after the run finished only re-delivers the callback. */
    async runJob(job: ClaimedJob<RunPayload>): Promise<void> {
      const p = job.payload;
      const tenantId = job.tenantId!;
      const ref = { id: p.reactor_id, tenant_id: tenantId };
      let stored = await findResult(db, tenantId, p.reactor_id, p.request_id);
      if (!stored) return;
      if (stored.status === 'pending') {
        let outcome: Outcome;
        let disclosure = new Disclosure();
        try {
          const row = await findReactor(db, tenantId, p.reactor_id);
          const reactor = row && (await hydrate(row));
          if (!reactor) outcome = { ok: false, status: 404, detail: 'The reactor was deleted before it ran.' };
          else {
            const sealed = (await vault.decrypt(tenantId, argsAad(p.request_id), Buffer.from(p.args, 'base64'), p.data_key_id)) as SealedArgs;
            // A run queued before the arguments carried their disclosure: every value in them is scrubbed.
            disclosure = sealed.disclosed ? Disclosure.fromJSON(sealed.disclosed) : Disclosure.ofValues(sealed.args);
            outcome = await execute(reactor, () => currentCaller(p.caller), sealed.args, limits.asyncTimeoutMs, disclosure);
          }
        } catch (err) {
          // Retried while attempts remain; the last one settles the result, or it would stay pending forever.
          if (job.attempt < job.maxAttempts) throw err;
          log.error({ request_id: p.request_id, err: disclosure.scrub(String((err as Error)?.message)) }, 'reactor run failed on its last attempt');
          outcome = err instanceof ApiError && err.status < 500
            ? disclosure.scrubFailure({ ok: false as const, status: err.status, detail: err.detail, errors: err.errors })
            : { ok: false, status: 500, detail: 'The reactor could not be run. Quote the request id when reporting it.' };
        }
        try {
          await storeOutcome(ref, p.request_id, outcome, disclosure.shown());
        } catch (err) {
          // The outcome could not be kept: retried while attempts remain, then a small failure
          // stands in for it, or the result would stay pending forever.
          if (job.attempt < job.maxAttempts) throw err;
          log.error({ request_id: p.request_id, err: (err as Error)?.message }, 'reactor result could not be stored on its last attempt');
          await storeOutcome(ref, p.request_id, { ok: false, status: 500, detail: 'The reactor ran, but its result could not be stored. Quote the request id when reporting it.' }, disclosure.shown());
        }
        // Whatever is stored now is the result, whichever run stored it: the callback sends that.
        stored = (await findResult(db, tenantId, p.reactor_id, p.request_id))!;
      }
      if (p.callback_url) await deliverCallback(tenantId, p.callback_url, p.request_id, (await readOutcome(tenantId, stored)).outcome);
    },
  };

  /**
   * The caller of an asynchronous run as it is when the run tokenizes, which may be long after
   * it was accepted: an application deleted, expired or narrowed since, or a session that has
   * expired, must not create tokens as it could when it called.
   */
  async function currentCaller(snapshot: SerializedPrincipal): Promise<Principal> {
    const then = deserializePrincipal(snapshot);
    const app = await applications.principalFor(then.tenantId, then.applicationId);
    const expired = then.expiresAt !== undefined && then.expiresAt.getTime() <= Date.now();
    if (!app || expired) throw ApiError.forbidden('The key that invoked the reactor is no longer valid, so nothing can be tokenized for it.');
    // A session acts with what it was authorized (fixed when it was); an application with what it may do now.
    return then.kind === 'session' ? then : { ...app, keyId: then.keyId };
  }

  async function deliverCallback(tenantId: string, url: string, requestId: string, outcome: Outcome): Promise<void> {
    const body = JSON.stringify(
      outcome.ok
        ? { asyncReactorRequestId: requestId, status: 'completed', ...outcome.response }
        : { asyncReactorRequestId: requestId, status: 'failed', error: { status: outcome.status, detail: outcome.detail, errors: outcome.errors, data: outcome.data } },
    );
    // Within the tenant's share of the callback host's connections, as its other calls (docs/outbound.md).
    const res = await outbound.request({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body, timeoutMs: 10_000, tenantId });
    if (res.status < 200 || res.status >= 300) throw new Error(`callback answered ${res.status}`);
    log.debug({ request_id: requestId }, 'reactor callback delivered');
  }
}

type RunPayload = { reactor_id: string; request_id: string; args: string; data_key_id: string; caller: SerializedPrincipal; callback_url?: string };
/** What a queued run's `args` open to: its detokenized arguments, and what was detokenized (none in runs queued before it was kept). */
type SealedArgs = { args: unknown; disclosed?: DisclosureJson };
/** A finished run as sealed: its outcome, and the tokens whose data it was handed (none in results kept before they were). */
type StoredOutcome = Outcome & { shown?: ShownData[] };
type SerializedPrincipal = Omit<Principal, 'expiresAt'> & { expiresAt: string | null };

function serializePrincipal(p: Principal): SerializedPrincipal {
  return { ...p, expiresAt: p.expiresAt ? p.expiresAt.toISOString() : null };
}

function deserializePrincipal(p: SerializedPrincipal): Principal {
  return { ...p, expiresAt: p.expiresAt ? new Date(p.expiresAt) : undefined };
}

function flatten(headers: Record<string, string | string[]>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]));
}

const validReactorBody = compileValidator<ReactorInput>(ReactorBody);

/** The gate's refusal: the run never started. */
class BusyError extends ApiError {
  constructor(why = '') {
    super(429, `Too many reactor runs of this tenant are in progress${why}; retry shortly.`);
    this.retryAfterSeconds = 1;
  }
}

/** A run the sandbox refused for its tenant's share being full, as the 429 reactor callers get. */
function refuseBusy(result: RunResult, why = ''): RunResult {
  if (!result.ok && result.error.kind === 'busy') throw new BusyError(why);
  return result;
}

const HOLDING = ', and a run under SVC-IDEMPOTENCY-KEY does not wait for one to finish (it holds a database connection while it waits)';

function configAad(reactorId: string): string {
  return `reactor-configuration:${reactorId}`;
}

/** A run's outcome and its arguments are sealed to its request id. */
function resultAad(requestId: string): string {
  return `reactor-result:${requestId}`;
}

function argsAad(requestId: string): string {
  return `reactor-args:${requestId}`;
}

/** The SDK with `before` awaited ahead of every call: token operations happen only after it. */
function gated(sdk: SdkHost, before: () => Promise<void>): SdkHost {
  return Object.fromEntries(Object.entries(sdk).map(([name, call]) => [name, async (...a: unknown[]) => {
    await before();
    return (call as (...b: unknown[]) => Promise<unknown>)(...a);
  }])) as SdkHost;
}
