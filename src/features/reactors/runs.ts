import type { Item } from '../../db/group-commit.ts';
import { uuidv4 } from '../../db/ids.ts';
import { enqueue, type ClaimedJob } from '../../db/jobs.ts';
import type { Principal } from '../../access/principal.ts';
import { ApiError } from '../../http/errors.ts';
import { noteShownData, type ShownData } from '../../http/idempotency.ts';
import { OutboundError } from '../../outbound/client.ts';
import { storableUrl } from '../../outbound/storable-url.ts';
import { DEFAULT_LIMITS, type RunResult, type SdkHost } from '../../sandbox/index.ts';
import { Disclosure, type DisclosureJson } from '../detokenize/disclosed.ts';
import { presentToken } from '../tokens/present.ts';
import { createTokenSdk } from '../tokens/sdk.ts';
import { Gate } from '../../gate.ts';
import { failed, ReactorProblem, type Outcome } from './outcome.ts';
import { MAX_CALLBACK_URL_LENGTH } from './schema.ts';
import {
  completeResult,
  deleteOldResultsAcrossTenants,
  findReactor,
  findResult,
  insertPendingResult,
  insertResultsStatement,
  type ReactorRow,
  type ReactorResultRow,
  type ResultWrite,
} from './store.ts';
import type { Reactor, ReactorDeps } from './service.ts';


/** The job kind of an asynchronous run. */
export const RUN_JOB = 'reactor.run';

/**
 * Running reactors: react (now, answering with the Reactor Response), react-async and the job
 * that runs it, the kept results, and what a run's code may do through `bt`, all admitted by
 * tenant through the sandbox.
 */
export function createReactorRuns(deps: ReactorDeps, reactors: { live(principal: Principal, id: string): Promise<Reactor>; hydrate(row: ReactorRow): Promise<Reactor> }) {
  const { db, groupCommit, vault, logs, events, sandbox, outbound, applications, tokens, detokenize, limits, log } = deps;
  const { live, hydrate } = reactors;
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
    consoleLines?: string[],
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
    // Whatever the code was handed of token data stays out of what its failure reports, and its lines.
    consoleLines?.push(...result.console.map((line) => disclosure.scrub(line)));
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
    /** Deletes run results (synchronous and asynchronous) older than `days`. */
    sweepResults(days: number): Promise<number> {
      return deleteOldResultsAcrossTenants(db, days);
    },

    /** POST /reactors/{id}/react: runs now and answers with the Reactor Response, or a problem. */
    async react(principal: Principal, id: string, args: unknown): Promise<{ tokens?: unknown; raw?: unknown; console?: string[] }> {
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
      // A member's run shows what the code printed: the console's Run panel is where code is
      // written and tried. Members are handed masks, never plaintext (src/features/members/roles.ts),
      // and what `bt` hands the code is scrubbed; API keys, which may use data they may not see, never get them.
      const lines = principal.kind === 'member' ? [] : undefined;
      let outcome: Outcome;
      try {
        outcome = await execute(reactor, async () => principal, plain, limits.syncTimeoutMs, disclosure, audit.flush, lines);
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
      if (!outcome.ok) throw new ReactorProblem(outcome, lines);
      // A reply kept under an idempotency key is shown again only while these may still be used.
      for (const entry of shown) noteShownData(entry);
      return lines ? { ...outcome.response, console: lines } : outcome.response;
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
