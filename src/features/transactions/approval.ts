/**
 * The buyer's approval of a transaction the issuer wants authenticated (buyer_approval_pending):
 * the page at `payment_method.approval_url` runs a 3DS challenge for the transaction's card (a
 * 3DS session Coffer makes for it, challenge requested), then authorizes again with the
 * authentication (key `<id>:authorize:approved`). No API key: the URL's secret is the buyer's
 * capability, compared in constant time.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Principal } from '../../access/principal.ts';
import { ApiError } from '../../http/errors.ts';
import type { AuthenticationResult } from '../../threeds/index.ts';
import { type Core, authorizeRequestOf, cardSourceOf, readCard, readThreeDS, resumingPrincipal } from './core.ts';
import type { Answer } from './outcome.ts';
import { findAwaitingApproval, findTransaction, markPending, setApprovalSession, type TransactionRow } from './store.ts';

/** Why an approval link does not open: shown to the buyer on the page. */
export class ApprovalUnavailable extends Error {}
/** The challenge is not finished yet: the page offers to continue again. */
export class ApprovalNotFinished extends Error {}

/** What the page shows next. */
export type ApprovalStep =
  | { kind: 'confirm'; transaction: TransactionRow; problem?: string }
  | { kind: 'challenge'; transaction: TransactionRow; acsUrl: string; creq: string }
  | { kind: 'done'; transaction: TransactionRow };

type Finish = (row: TransactionRow, key: string, answer: Answer) => Promise<TransactionRow>;

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function createApprovals(core: Core, finishAuthorization: Finish) {
  const { db, threeds } = core;

  /** The transaction a link is for, while it awaits approval and the link's secret matches. */
  async function open(id: string, token: string): Promise<TransactionRow> {
    const row = await findAwaitingApproval(db, id);
    const url = row?.payment_method.approval_url;
    const secret = url ? new URL(url).searchParams.get('token') ?? '' : '';
    if (!row || !sameSecret(secret, token)) throw new ApprovalUnavailable('This approval link is not valid: the payment is no longer waiting for your approval. Ask the merchant to start the payment again.');
    if (row.approval_expires_at && row.approval_expires_at.getTime() <= Date.now()) {
      throw new ApprovalUnavailable('This approval link has expired. Ask the merchant to start the payment again.');
    }
    return row;
  }

  /** Fails an approval whose authentication did not succeed (authorization_failed, failed_buyer_approval). */
  async function fail(row: TransactionRow, reason: 'failed' | 'cancelled'): Promise<TransactionRow> {
    return db.transaction(async (tx) => {
      const current = await findTransaction(db, row.tenant_id, row.id, { tx, lock: true });
      if (!current || current.status !== 'buyer_approval_pending' || current.pending) return current ?? row;
      return core.applyChange(current, { type: 'approval_fail', reason }, undefined, tx);
    });
  }

  /** The authorization again, with the 3DS session's authentication, under the call discipline. */
  async function authorizeApproved(row: TransactionRow, principal: Principal): Promise<TransactionRow> {
    const key = `${row.id}:authorize:approved`;
    const source = cardSourceOf(row);
    const audit: Parameters<typeof readCard>[3] = [];
    const { card } = await readCard(core, principal, source, audit);
    const threeDS = await readThreeDS(core, principal, row.three_d_session_id!, source);
    const pending = await db.transaction(async (tx) => {
      const current = await findTransaction(db, row.tenant_id, row.id, { tx, lock: true });
      if (!current || current.status !== 'buyer_approval_pending' || current.pending) return undefined;
      const marked = { ...current, pending: { operation: 'authorize' as const, key }, three_d_secure: threeDS.shown };
      await markPending(db, row.tenant_id, row.id, marked.pending, tx, threeDS.shown);
      await core.groupCommit.write(audit, tx);
      return marked;
    });
    if (!pending) return (await findTransaction(db, row.tenant_id, row.id)) ?? row;
    const { processor } = await core.connections.processorFor(row.tenant_id, row.connection_id, { withDeleted: true });
    const answer = await core.call('authorize', pending, () => processor.authorize(authorizeRequestOf(pending, card, threeDS.data)));
    return finishAuthorization(pending, key, answer as Answer);
  }

  /** Settles the approval from its 3DS result: authorized again when authenticated, failed otherwise. */
  async function conclude(row: TransactionRow, principal: Principal, result: AuthenticationResult): Promise<ApprovalStep> {
    if (result.authentication_value && result.eci) return { kind: 'done', transaction: await authorizeApproved(row, principal) };
    const cancelled = result.challenge_cancel_reason !== undefined;
    return { kind: 'done', transaction: await fail(row, cancelled ? 'cancelled' : 'failed') };
  }

  return {
    async show(id: string, token: string): Promise<ApprovalStep> {
      return { kind: 'confirm', transaction: await open(id, token) };
    },

    /**
     * The buyer confirmed, with the name and e-mail address the issuer's authentication needs
     * (EMV 3DS 2.2): a 3DS session for the card, authenticated as this payment, a challenge requested.
     */
    async start(id: string, token: string, cardholder: { name: string; email: string }): Promise<ApprovalStep> {
      const row = await open(id, token);
      const principal = resumingPrincipal(row);
      const card = cardSourceOf(row);
      const session = await threeds.create(principal, { type: 'customer', ...(card.token !== undefined ? { token_id: card.token } : { token_intent_id: card.token_intent_id }) });
      await setApprovalSession(db, row.tenant_id, row.id, session.id);
      const withSession = { ...row, three_d_session_id: session.id };
      const now = new Date();
      const stamp = now.toISOString().replace(/[-:T]/g, '').slice(0, 14);
      const result = await threeds.authenticate(principal, session.id, {
        authentication_category: 'payment',
        authentication_type: 'payment-transaction',
        challenge_preference: 'challenge-requested',
        purchase_info: { amount: String(row.amount), currency: row.currency, exponent: '2', date: stamp, transaction_type: 'purchase' },
        merchant_info: { mid: row.connection_id.slice(0, 15), acquirer_bin: '000000', name: 'Coffer payment', country_code: '840', category_code: '5999' },
        requestor_info: { id: row.tenant_id.slice(0, 35), name: 'Coffer payment', url: new URL(core.publicUrl()).origin },
        cardholder_info: cardholder,
      });
      if (result.acs_challenge_url && !result.authentication_value) {
        const creq = Buffer.from(JSON.stringify({
          messageType: 'CReq', messageVersion: result.threeds_version, threeDSServerTransID: session.id, acsTransID: result.acs_transaction_id, challengeWindowSize: '05',
        })).toString('base64url');
        return { kind: 'challenge', transaction: withSession, acsUrl: result.acs_challenge_url, creq };
      }
      return conclude(withSession, principal, result);
    },

    /** After the challenge: its final result decides. A challenge not finished yet shows the page again. */
    async complete(id: string, token: string): Promise<ApprovalStep> {
      const row = await open(id, token);
      if (!row.three_d_session_id) return { kind: 'confirm', transaction: row };
      const principal = resumingPrincipal(row);
      let session;
      try {
        session = await threeds.get(principal, row.three_d_session_id);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return { kind: 'done', transaction: await fail(row, 'failed') };
        throw err;
      }
      if (session.status !== 'completed' || !session.authentication) throw new ApprovalNotFinished('Your bank has not finished confirming this payment yet: complete the step in the frame above, then continue.');
      return conclude(row, principal, session.authentication);
    },
  };
}
