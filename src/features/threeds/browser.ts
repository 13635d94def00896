import type { Database, Tx } from '../../db/database.ts';
import { type ClaimedJob, enqueue } from '../../db/jobs.ts';
import { ApiError } from '../../http/errors.ts';
import {
  type ChallengeAction, type ChallengePrompt, type ChallengeState, type ChallengeStep, type CReq, creqMatches, decodeCReq, decodeMethodData,
  encodeCRes, encodeMethodCompletion,
} from '../../threeds/index.ts';
import type { ThreeDSCore } from './service.ts';
import { findSession, findSessionById, recordMethodCompletion, type SessionRow, updateChallenge } from './store.ts';

/** The job that completes a decoupled challenge once the simulated issuer is due (payload: { session_id }). */
export const DECOUPLED_JOB = 'threeds.decoupled';

/** The decoupled-completion job, due when the simulated issuer completes (and not before `notBefore`). */
export async function scheduleDecoupled(db: Database, tenantId: string, id: string, challenge: ChallengeState, tx: Tx, notBefore = 0): Promise<void> {
  const due = challenge.complete_at ? Date.parse(challenge.complete_at) : Date.now();
  await enqueue(db, tenantId, DECOUPLED_JOB, { session_id: id }, { runAt: new Date(Math.max(due, notBefore)) }, tx);
}

/** What the ACS challenge page shows next. */
export type ChallengeView =
  | { kind: 'prompt'; creq: string; prompt: ChallengePrompt; problem?: string }
  | { kind: 'decoupled'; creq: string }
  /** Settled: the page posts the CRes to the session's notification page. */
  | { kind: 'completed'; notificationUrl: string; cres: string };

/** What the session's notification page tells its opener or parent (the web SDK). */
export type ChallengeMessage = { type: 'challenge'; id: string; isCompleted: boolean; authenticationStatus: string };

const PROBLEMS: Record<string, string> = {
  'wrong-code': 'That code is not right. Check it and try again.',
  'cancel-refused': 'This authentication is required: it cannot be cancelled.',
  'unsupported-action': 'That is not how this authentication is completed.',
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The half of 3DS a browser drives, with no API key: the 3DS Method page and its notification,
 * the simulated issuer's challenge page and the notification page that hands the CRes to the
 * web SDK; and the job that completes decoupled challenges. Each request names its session by
 * the session's id (the EMV threeDSServerTransID), checked against what else it carries.
 */
export function createBrowserSide(core: ThreeDSCore) {
  const { db, events, logs } = core;

  /** The session and its challenge a CReq is for; 404 for anything else, saying no more. */
  async function challengeFor(creq: CReq, opts: { lock?: boolean } = {}, tx?: Tx): Promise<{ row: SessionRow; state: ChallengeState }> {
    const row = await findSessionById(db, creq.threeDSServerTransID, opts, tx);
    const state = row ? await core.unseal(row) : undefined;
    if (!row || !state || !creqMatches(creq, state)) throw new ApiError(404, 'No challenge is waiting for this CReq (it may have expired).');
    return { row, state };
  }

  function viewOf(row: SessionRow, state: ChallengeState, creq: string, problem?: string): ChallengeView {
    const cres = encodeCRes(state);
    if (cres) return { kind: 'completed', notificationUrl: core.challengeNotificationUrl(row.id), cres };
    if (state.type === 'decoupled') return { kind: 'decoupled', creq };
    return { kind: 'prompt', creq, prompt: core.provider().challengePrompt(state), ...(problem ? { problem: PROBLEMS[problem] ?? problem } : {}) };
  }

  /** Stores a challenge step of a locked session; a completed one becomes the session's final result. */
  async function saveStep(row: SessionRow, step: ChallengeStep, tx: Tx): Promise<void> {
    const completed = step.status === 'completed';
    const authentication = completed ? step.result : step.challenge.ares;
    await updateChallenge(db, row.tenant_id, row.id, {
      status: completed ? 'completed' : 'challenge',
      authentication,
      challenge: await core.seal(row.tenant_id, row.id, step.challenge),
      modified_by: null,
    }, tx);
    if (!completed) return;
    const decoupled = step.challenge.type === 'decoupled';
    const actor = { kind: 'system' as const, tenantId: row.tenant_id };
    await logs.record(actor, {
      entityType: '3ds_session',
      entityId: row.id,
      operation: 'challenge',
      message: `3DS ${decoupled ? 'decoupled ' : ''}challenge completed: ${authentication.authentication_status}`,
    }, tx);
    await events.emit(
      row.tenant_id,
      decoupled ? '3ds.session.decoupled-challenge-notification' : '3ds.session.challenge-completed',
      row.id,
      { id: row.id, authentication_status: authentication.authentication_status },
      tx,
    );
  }

  return {
    /**
     * The Method page's input: `threeDSMethodData` naming a session with a 3DS Method and, as the
     * place to report to, exactly that session's method_notification_url (the page posts nowhere else).
     */
    async methodPage(threeDSMethodData: string): Promise<{ notificationUrl: string; completion: string }> {
      const data = decodeMethodData(threeDSMethodData);
      if (!data) throw ApiError.field('body.threeDSMethodData', 'is not 3DS Method data: base64url JSON with threeDSServerTransID and threeDSMethodNotificationURL');
      const notificationUrl = core.methodNotificationUrl(data.threeDSServerTransID.toLowerCase());
      if (data.threeDSMethodNotificationURL !== notificationUrl) {
        throw ApiError.field('body.threeDSMethodData', 'threeDSMethodNotificationURL must be the session\'s method_notification_url');
      }
      const row = await findSessionById(db, data.threeDSServerTransID);
      if (!row?.method.method_url) throw new ApiError(404, 'No 3DS Method is waiting for this session (it may have expired).');
      return { notificationUrl, completion: encodeMethodCompletion(row.id) };
    },

    /** The Method page reported: Y, once, while the session has not been authenticated. */
    async methodNotification(id: string, threeDSMethodData: string | undefined): Promise<void> {
      const sent = threeDSMethodData === undefined ? undefined : decodeJson(threeDSMethodData);
      if (typeof sent?.threeDSServerTransID !== 'string' || sent.threeDSServerTransID.toLowerCase() !== id.toLowerCase()) {
        throw ApiError.field('body.threeDSMethodData', 'must be the 3DS Method\'s completion for this session (threeDSServerTransID)');
      }
      const row = await findSessionById(db, id);
      if (!row) throw core.notFound(id);
      await db.transaction(async (tx) => {
        if (await recordMethodCompletion(db, row.tenant_id, row.id, tx)) await events.emit(row.tenant_id, '3ds.session.method-completed', row.id, { id: row.id, method_completion_indicator: 'Y' }, tx);
      });
    },

    /**
     * The ACS challenge page: a CReq alone shows the challenge; with an action (a code, an
     * approval, a cancel) it is taken under the session's lock, and the page shows what follows.
     */
    async challengePage(form: { creq?: string; action?: string; code?: string }): Promise<ChallengeView> {
      const creq = form.creq === undefined ? undefined : decodeCReq(form.creq);
      if (!creq) throw ApiError.field('body.creq', 'is not a CReq: base64url JSON with messageType CReq, threeDSServerTransID, acsTransID, messageVersion');
      if (form.action === undefined) {
        const { row, state } = await challengeFor(creq);
        return viewOf(row, state, form.creq!);
      }
      const action = actionOf(form);
      // The provider's step is the simulated ACS's: computed in memory, no network, so it may run under the lock.
      return db.transaction(async (tx) => {
        const { row, state } = await challengeFor(creq, { lock: true }, tx);
        if (state.result || state.type === 'decoupled') return viewOf(row, state, form.creq!);
        const step = await core.provider().challenge(state, action);
        await saveStep(row, step, tx);
        return viewOf(row, step.challenge, form.creq!, step.status === 'pending' ? step.problem : undefined);
      });
    },

    /** The CRes arrives at the session's notification page, which passes the outcome to the web SDK. */
    async challengeNotification(id: string, cres: string | undefined): Promise<ChallengeMessage> {
      const m = cres === undefined ? undefined : decodeJson(cres);
      if (!m || m.messageType !== 'CRes' || typeof m.acsTransID !== 'string' || String(m.threeDSServerTransID).toLowerCase() !== id.toLowerCase()) {
        throw ApiError.field('body.cres', 'is not a CRes for this session');
      }
      const row = await findSessionById(db, id);
      const result = row?.authentication;
      if (!row || !result || row.status !== 'completed' || result.acs_transaction_id.toLowerCase() !== m.acsTransID.toLowerCase()) {
        throw new ApiError(404, 'No completed challenge of this session matches the CRes.');
      }
      return { type: 'challenge', id: row.id, isCompleted: m.challengeCompletionInd === 'Y', authenticationStatus: result.authentication_status };
    },

    /** DECOUPLED_JOB: the simulated issuer completes a decoupled challenge; early (a clock apart), it is looked at again when due. */
    async completeDecoupled(job: ClaimedJob<{ session_id: string }>): Promise<void> {
      const tenantId = job.tenantId;
      const id = job.payload?.session_id;
      if (!tenantId || typeof id !== 'string' || !UUID.test(id)) return;
      await db.transaction(async (tx) => {
        const row = await findSession(db, tenantId, id, { lock: true }, tx);
        const state = row?.status === 'challenge' ? await core.unseal(row) : undefined;
        if (!row || state?.type !== 'decoupled') return;
        const step = await core.provider().decoupledOutcome(state);
        if (step.status === 'pending') {
          if (step.problem === 'not-due') await scheduleDecoupled(db, tenantId, id, state, tx, Date.now() + 1000);
          return;
        }
        await saveStep(row, step, tx);
      });
    },
  };
}

function actionOf(form: { action?: string; code?: string }): ChallengeAction {
  switch (form.action) {
    case 'submit':
      if (typeof form.code !== 'string' || form.code.length === 0) throw ApiError.field('body.code', 'is required to submit a code');
      return { kind: 'code', code: form.code };
    case 'approve':
      return { kind: 'approve' };
    case 'cancel':
      return { kind: 'cancel' };
    default:
      throw ApiError.field('body.action', 'must be submit, approve or cancel');
  }
}

/** A base64url JSON object of a form field (threeDSMethodData, cres), or undefined. */
function decodeJson(field: string): Record<string, unknown> | undefined {
  if (field.length > 8192 || !/^[A-Za-z0-9_-]+={0,2}$/.test(field)) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(field, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
