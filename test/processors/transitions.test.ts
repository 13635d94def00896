import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type ActionType, AmountError, apply, IllegalTransitionError, initialState, intentOutcome, LEGAL_FROM, planCapture, planRefund, planVoid,
  REFUND_STATUSES, REFUND_TRANSITIONS, type RefundStatus, remainingBalance, type TransactionAction, type TransactionState,
  type TransactionStatus, TRANSACTION_STATUSES,
} from '../../src/processors/transitions.ts';

/** A plausible transaction in each status: amount 1000, authorized in full where that happened. */
function stateIn(status: TransactionStatus, more: Partial<TransactionState> = {}): TransactionState {
  const authorized = ['authorization_succeeded', 'capture_pending', 'capture_succeeded', 'authorization_void_pending', 'authorization_voided'].includes(status);
  const captured = status === 'capture_pending' || status === 'capture_succeeded';
  return { status, intent: 'authorize', amount: 1000, authorized_amount: authorized ? 1000 : 0, captured_amount: captured ? 1000 : 0, refunded_amount: 0, ...more };
}

/** One representative action of each type, legal wherever LEGAL_FROM says so. */
function sample(type: ActionType, status: TransactionStatus): TransactionAction {
  switch (type) {
    case 'authorize_result': return { type, result: { status: 'authorized' } };
    case 'capture': return { type, amount: 500, result: { status: 'captured' } };
    case 'void': return { type, result: { status: 'voided' } };
    case 'settle': return { type, result: { status: status === 'capture_pending' ? 'captured' : status === 'authorization_void_pending' ? 'voided' : 'authorized' } };
    case 'approval_expire': return { type };
    case 'approval_fail': return { type, reason: 'failed' };
    case 'refund': return { type, amount: 100 };
    case 'refund_update': return { type, amount: 100, from: 'processing', to: 'succeeded' };
  }
}

describe('which action is legal from which status (both sides)', () => {
  for (const type of Object.keys(LEGAL_FROM) as ActionType[]) {
    for (const status of TRANSACTION_STATUSES) {
      const legal = LEGAL_FROM[type].includes(status);
      it(`${type} from ${status}: ${legal ? 'legal' : 'illegal'}`, () => {
        const state = stateIn(status, type === 'refund_update' ? { refunded_amount: 100 } : {});
        if (legal) {
          assert.doesNotThrow(() => apply(state, sample(type, status)));
        } else {
          assert.throws(() => apply(state, sample(type, status)), (err: unknown) => {
            assert.ok(err instanceof IllegalTransitionError);
            assert.equal(err.code, 'illegal_transition');
            assert.equal(err.status, status);
            assert.ok(err.message.includes(status), `the message names the status: ${err.message}`);
            return true;
          });
        }
      });
    }
  }

  it('plan* agree with LEGAL_FROM', () => {
    const plans: [ActionType, (s: TransactionState) => unknown][] = [['capture', (s) => planCapture(s)], ['void', planVoid], ['refund', (s) => planRefund(s)]];
    for (const [type, plan] of plans) {
      for (const status of TRANSACTION_STATUSES) {
        if (LEGAL_FROM[type].includes(status)) assert.doesNotThrow(() => plan(stateIn(status)), `${type} ${status}`);
        else assert.throws(() => plan(stateIn(status)), IllegalTransitionError, `${type} ${status}`);
      }
    }
  });

  it('names the status in plain words', () => {
    assert.throws(() => planVoid(stateIn('capture_succeeded')), { message: 'cannot void a transaction whose status is capture_succeeded' });
    assert.throws(() => planRefund(stateIn('authorization_succeeded')), { message: 'cannot refund a transaction whose status is authorization_succeeded' });
    assert.throws(() => planCapture(stateIn('authorization_voided')), { message: 'cannot capture a transaction whose status is authorization_voided' });
  });
});

type Row = [from: TransactionStatus, action: TransactionAction, to: TransactionStatus, expect: { stamps?: string[]; error?: string; events?: string[]; amounts?: Partial<TransactionState> }, intent?: 'authorize' | 'capture'];

const ar = (status: string, error_code?: string): TransactionAction => ({ type: 'authorize_result', result: { status, error_code } as never });
const st = (status: string, extra: object = {}): TransactionAction => ({ type: 'settle', result: { status, ...extra } as never });
const cap = (amount: number, status: string, error_code?: string): TransactionAction => ({ type: 'capture', amount, result: { status, error_code } as never });
const vd = (status: string, error_code?: string): TransactionAction => ({ type: 'void', result: { status, error_code } as never });

const A = 'transaction.authorized', C = 'transaction.captured', V = 'transaction.voided', D = 'transaction.declined', F = 'transaction.failed';
const none = { authorized_amount: 0, captured_amount: 0 };

/** Every legal transition with its effects. */
const TRANSITIONS: Row[] = [
  ...(['processing', 'buyer_approval_pending'] as const).flatMap((from): Row[] => [
    [from, ar('authorized'), 'authorization_succeeded', { stamps: ['authorized_at'], events: [A], amounts: { authorized_amount: 1000, captured_amount: 0 } }],
    [from, ar('captured'), 'capture_succeeded', { stamps: ['authorized_at', 'captured_at'], events: [A, C], amounts: { authorized_amount: 1000, captured_amount: 1000 } }],
    [from, ar('capture_pending'), 'capture_pending', { stamps: ['authorized_at'], events: [A], amounts: { authorized_amount: 1000, captured_amount: 1000 } }],
    [from, ar('declined', 'insufficient_funds'), 'authorization_declined', { error: 'insufficient_funds', events: [D], amounts: none }],
    [from, ar('declined'), 'authorization_declined', { error: 'issuer_decline', events: [D] }],
    [from, ar('failed', 'service_error'), 'authorization_failed', { error: 'service_error', events: [F], amounts: none }],
    [from, ar('failed'), 'authorization_failed', { error: 'unknown_error', events: [F] }],
    [from, ar('unknown', 'service_network_error'), 'processing', { error: 'service_network_error', events: [] }],
  ]),
  ['processing', ar('requires_authentication'), 'buyer_approval_pending', { events: [] }],
  ['buyer_approval_pending', ar('requires_authentication'), 'authorization_failed', { error: 'failed_buyer_approval', events: [F] }],
  ['buyer_approval_pending', { type: 'approval_expire' }, 'authorization_failed', { error: 'incomplete_buyer_approval', events: [F] }],
  ['buyer_approval_pending', { type: 'approval_fail', reason: 'failed' }, 'authorization_failed', { error: 'failed_buyer_approval', events: [F] }],
  ['buyer_approval_pending', { type: 'approval_fail', reason: 'cancelled' }, 'authorization_failed', { error: 'cancelled_buyer_approval', events: [F] }],
  ['authorization_succeeded', cap(1000, 'captured'), 'capture_succeeded', { stamps: ['captured_at'], events: [C], amounts: { captured_amount: 1000 } }],
  ['authorization_succeeded', cap(400, 'captured'), 'capture_succeeded', { stamps: ['captured_at'], events: [C], amounts: { authorized_amount: 1000, captured_amount: 400 } }],
  ['authorization_succeeded', cap(1000, 'capture_pending'), 'capture_pending', { stamps: [], events: [], amounts: { captured_amount: 1000 } }],
  ['authorization_succeeded', cap(1000, 'unknown', 'service_network_error'), 'capture_pending', { error: 'service_network_error', events: [] }],
  ['authorization_succeeded', cap(1000, 'declined', 'refused_transaction'), 'authorization_succeeded', { error: 'refused_transaction', events: [], amounts: { captured_amount: 0 } }],
  ['authorization_succeeded', cap(1000, 'failed', 'service_network_error'), 'authorization_succeeded', { error: 'service_network_error', events: [] }],
  ['authorization_succeeded', vd('voided'), 'authorization_voided', { stamps: ['voided_at'], events: [V], amounts: { authorized_amount: 1000 } }],
  ['authorization_succeeded', vd('void_pending'), 'authorization_void_pending', { events: [] }],
  ['authorization_succeeded', vd('unknown'), 'authorization_void_pending', { events: [] }],
  ['authorization_succeeded', vd('declined', 'issuer_decline'), 'authorization_succeeded', { error: 'issuer_decline', events: [] }],
  ['authorization_succeeded', vd('failed', 'service_network_error'), 'authorization_succeeded', { error: 'service_network_error', events: [] }],
  ['processing', st('authorized'), 'authorization_succeeded', { stamps: ['authorized_at'], events: [A] }],
  ['processing', st('captured'), 'capture_succeeded', { stamps: ['authorized_at', 'captured_at'], events: [A, C] }],
  ['processing', st('capture_pending'), 'capture_pending', { stamps: ['authorized_at'], events: [A] }],
  ['processing', st('declined', { error_code: 'suspected_fraud' }), 'authorization_declined', { error: 'suspected_fraud', events: [D] }],
  ['processing', st('failed'), 'authorization_failed', { error: 'unknown_error', events: [F] }],
  ['processing', st('requires_authentication'), 'buyer_approval_pending', { events: [] }],
  ['processing', st('unknown'), 'processing', { events: [] }],
  ['capture_pending', st('captured'), 'capture_succeeded', { stamps: ['captured_at'], events: [C], amounts: { captured_amount: 1000 } }],
  ['capture_pending', st('captured', { captured_amount: 900 }), 'capture_succeeded', { stamps: ['captured_at'], events: [C], amounts: { captured_amount: 900 } }],
  ['capture_pending', st('capture_pending'), 'capture_pending', { events: [], amounts: { captured_amount: 1000 } }],
  ['capture_pending', st('unknown'), 'capture_pending', { events: [] }],
  ['capture_pending', st('authorized'), 'authorization_succeeded', { events: [], amounts: { authorized_amount: 1000, captured_amount: 0 } }],
  ['capture_pending', st('declined'), 'authorization_succeeded', { error: 'issuer_decline', events: [], amounts: { captured_amount: 0 } }],
  ['capture_pending', st('failed', { error_code: 'service_error' }), 'authorization_succeeded', { error: 'service_error', events: [] }],
  ['capture_pending', st('declined', { error_code: 'insufficient_funds' }), 'authorization_declined', { error: 'insufficient_funds', events: [D], amounts: none }, 'capture'],
  ['capture_pending', st('failed'), 'authorization_failed', { error: 'unknown_error', events: [F], amounts: none }, 'capture'],
  ['capture_pending', st('voided'), 'authorization_voided', { stamps: ['voided_at'], events: [V], amounts: { captured_amount: 0 } }],
  ['authorization_void_pending', st('voided'), 'authorization_voided', { stamps: ['voided_at'], events: [V] }],
  ['authorization_void_pending', st('void_pending'), 'authorization_void_pending', { events: [] }],
  ['authorization_void_pending', st('unknown'), 'authorization_void_pending', { events: [] }],
  ['authorization_void_pending', st('authorized'), 'authorization_succeeded', { events: [] }],
  ['authorization_void_pending', st('declined', { error_code: 'issuer_decline' }), 'authorization_succeeded', { error: 'issuer_decline', events: [] }],
  ['authorization_void_pending', st('failed'), 'authorization_succeeded', { error: 'unknown_error', events: [] }],
  ['capture_succeeded', { type: 'refund', amount: 300 }, 'capture_succeeded', { events: [], amounts: { captured_amount: 1000, refunded_amount: 300 } }],
];

describe('every legal transition and its effects', () => {
  for (const [from, action, next, expect, intent] of TRANSITIONS) {
    it(`${from} --${action.type}${'result' in action ? `:${action.result.status}` : ''}${intent ? ` (intent ${intent})` : ''}--> ${next}`, () => {
      const t = apply(stateIn(from, { intent: intent ?? 'authorize' }), action);
      assert.equal(t.state.status, next);
      assert.deepEqual(t.stamps, expect.stamps ?? t.stamps);
      assert.equal(t.error_code, expect.error);
      if (expect.events) assert.deepEqual(t.events, expect.events);
      for (const [field, value] of Object.entries(expect.amounts ?? {})) assert.equal(t.state[field as keyof TransactionState], value, field);
    });
  }

  it('a processor answer the waiting status cannot take is an illegal transition, not a guess', () => {
    const cases: [TransactionStatus, string][] = [
      ['processing', 'voided'], ['processing', 'void_pending'], ['capture_pending', 'requires_authentication'], ['capture_pending', 'void_pending'],
      ['authorization_void_pending', 'captured'], ['authorization_void_pending', 'capture_pending'], ['authorization_void_pending', 'requires_authentication'],
    ];
    for (const [from, status] of cases) {
      assert.throws(() => apply(stateIn(from), st(status)), (err: unknown) => err instanceof IllegalTransitionError && err.message.includes(status) && err.message.includes(from));
    }
  });

  it('every legal (action, status) pair is covered by the table above', () => {
    for (const type of Object.keys(LEGAL_FROM) as ActionType[]) {
      if (type === 'refund_update') continue; // the refund table below
      for (const status of LEGAL_FROM[type]) assert.ok(TRANSITIONS.some(([from, a]) => from === status && a.type === type), `${type} from ${status}`);
    }
  });
});

describe('refund statuses (both sides)', () => {
  for (const from of REFUND_STATUSES) {
    for (const to of REFUND_STATUSES) {
      const legal = from === to || REFUND_TRANSITIONS[from].includes(to);
      it(`${from} → ${to}: ${legal ? 'legal' : 'illegal'}`, () => {
        const held = ['processing', 'succeeded'].includes(from) ? 300 : 0;
        const state = stateIn('capture_succeeded', { refunded_amount: held });
        const action: TransactionAction = { type: 'refund_update', amount: 300, from, to };
        if (!legal) {
          assert.throws(() => apply(state, action), (err: unknown) => err instanceof IllegalTransitionError && err.message.includes(from) && err.message.includes(to));
          return;
        }
        const t = apply(state, action);
        const releases = ['declined', 'failed', 'voided'].includes(to) && held > 0;
        assert.equal(t.state.refunded_amount, releases ? 0 : held, 'a refund that ends unpaid gives its amount back');
        assert.equal(t.state.status, 'capture_succeeded', 'the transaction stays capture_succeeded');
        const expected = from === to || to === 'voided' ? [] : to === 'succeeded' ? ['refund.succeeded'] : ['refund.failed'];
        assert.deepEqual(t.events, expected);
      });
    }
  }
});

describe('amounts', () => {
  it('capture defaults to the authorized amount and may be partial, never more', () => {
    const s = stateIn('authorization_succeeded', { authorized_amount: 800 }); // a partial authorization of 1000
    assert.equal(planCapture(s), 800);
    assert.equal(planCapture(s, 300), 300);
    assert.throws(() => planCapture(s, 801), (e: unknown) => e instanceof AmountError && e.limit === 800 && /authorized amount, 800/.test(e.message));
    for (const bad of [0, -1, 1.5, Number.NaN]) assert.throws(() => planCapture(s, bad), AmountError);
    assert.throws(() => apply(s, cap(900, 'captured')), AmountError);
  });

  it('multiple partial refunds up to the balance, then none', () => {
    let s = apply(stateIn('authorization_succeeded'), cap(700, 'captured')).state;
    assert.equal(remainingBalance(s), 700);
    for (const [amount, left] of [[200, 500], [250, 250], [249, 1]]) {
      s = apply(s, { type: 'refund', amount }).state;
      assert.equal(remainingBalance(s), left);
    }
    assert.throws(() => planRefund(s, 2), (e: unknown) => e instanceof AmountError && e.limit === 1 && e.message === 'amount must be at most the remaining balance, 1');
    assert.equal(planRefund(s), 1, 'no amount means the remaining balance');
    s = apply(s, { type: 'refund', amount: 1 }).state;
    assert.equal(s.refunded_amount, 700);
    assert.throws(() => planRefund(s), (e: unknown) => e instanceof AmountError && e.limit === 0 && /remaining balance is 0/.test(e.message));
    for (const bad of [0, -5, 0.5]) assert.throws(() => planRefund(stateIn('capture_succeeded'), bad), AmountError);
  });

  it('a processing refund holds its share until it fails; a late failure gives it back', () => {
    let s = stateIn('capture_succeeded');
    s = apply(s, { type: 'refund', amount: 600 }).state;
    assert.throws(() => planRefund(s, 500), AmountError);
    s = apply(s, { type: 'refund_update', amount: 600, from: 'processing', to: 'failed' }).state;
    assert.equal(remainingBalance(s), 1000);
    s = apply(s, { type: 'refund', amount: 1000 }).state;
    s = apply(s, { type: 'refund_update', amount: 1000, from: 'processing', to: 'succeeded' }).state;
    assert.equal(remainingBalance(s), 0);
    s = apply(s, { type: 'refund_update', amount: 1000, from: 'succeeded', to: 'failed' }).state;
    assert.equal(remainingBalance(s), 1000);
  });

  it('no sequence of refunds and refund updates takes refunded_amount outside 0..captured', () => {
    type Step = { kind: 'refund'; amount: number | undefined } | { kind: 'update'; index: number; to: RefundStatus };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ kind: fc.constant('refund' as const), amount: fc.option(fc.integer({ min: -5, max: 1200 }), { nil: undefined }) }),
      fc.record({ kind: fc.constant('update' as const), index: fc.nat(20), to: fc.constantFrom(...REFUND_STATUSES) }),
    );
    fc.assert(fc.property(fc.integer({ min: 1, max: 1000 }), fc.array(step, { maxLength: 40 }), (captured, steps) => {
      let s = stateIn('capture_succeeded', { captured_amount: captured });
      const refunds: { amount: number; status: RefundStatus }[] = [];
      for (const x of steps) {
        try {
          if (x.kind === 'refund') {
            const amount = planRefund(s, x.amount);
            s = apply(s, { type: 'refund', amount }).state;
            refunds.push({ amount, status: 'processing' });
          } else if (refunds.length > 0) {
            const r = refunds[x.index % refunds.length];
            s = apply(s, { type: 'refund_update', amount: r.amount, from: r.status, to: x.to }).state;
            r.status = x.to;
          }
        } catch (err) {
          if (!(err instanceof AmountError || err instanceof IllegalTransitionError)) throw err;
        }
        const held = refunds.filter((r) => r.status === 'processing' || r.status === 'succeeded').reduce((sum, r) => sum + r.amount, 0);
        assert.equal(s.refunded_amount, held);
        assert.ok(s.refunded_amount >= 0 && s.refunded_amount <= captured);
      }
    }), { numRuns: 300 });
  });

  it('a transaction starts processing with nothing authorized', () => {
    assert.deepEqual(initialState(1234, 'capture'), { status: 'processing', intent: 'capture', amount: 1234, authorized_amount: 0, captured_amount: 0, refunded_amount: 0 });
    assert.throws(() => initialState(0, 'authorize'), AmountError);
  });
});

describe('intent_outcome', () => {
  const table: [TransactionStatus, string, string][] = [
    ['processing', 'pending', 'pending'], ['buyer_approval_pending', 'pending', 'pending'],
    ['authorization_succeeded', 'succeeded', 'pending'], ['capture_pending', 'succeeded', 'pending'], ['capture_succeeded', 'succeeded', 'succeeded'],
    ['authorization_declined', 'failed', 'failed'], ['authorization_failed', 'failed', 'failed'],
    ['authorization_void_pending', 'succeeded', 'failed'], ['authorization_voided', 'succeeded', 'failed'],
  ];
  it('for every status and both intents', () => {
    assert.equal(table.length, TRANSACTION_STATUSES.length);
    for (const [status, authorize, capture] of table) {
      assert.equal(intentOutcome(status, 'authorize'), authorize, status);
      assert.equal(intentOutcome(status, 'capture'), capture, status);
    }
  });
});
