import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { errorCategory } from '../../src/processors/error-codes.ts';
import { TestLedger } from '../../src/processors/coffer-test/ledger.ts';
import { CofferTestProcessor } from '../../src/processors/coffer-test/processor.ts';
import { OUTCOME_TABLE, type OutcomeRow } from '../../src/processors/coffer-test/table.ts';
import { apply, initialState, planCapture, planRefund } from '../../src/processors/transitions.ts';
import { authorizeRequest, refOf, THREE_DS } from './helpers.ts';

const VISA = '4242424242424242';

function processor(clock = { now: Date.parse('2030-06-14T10:00:00Z') }) {
  return { p: new CofferTestProcessor({ ledger: new TestLedger(), settleDelayMs: 2000, now: () => clock.now }), clock };
}

const key = (what: string) => `${randomUUID()}:${what}`;

function amountOf(row: OutcomeRow): number {
  return 'amount' in row.key ? row.key.amount : 'amounts' in row.key ? row.key.amounts[0] : 1000;
}

describe('every row of the outcome table', () => {
  for (const row of OUTCOME_TABLE) {
    const label = 'amount' in row.key ? `amount ${row.key.amount}` : 'card' in row.key ? `card ${row.key.card}` : `amounts ${row.key.amounts.join('–')}`;
    it(`${row.operation} ${label}: ${row.outcome} ${row.error_code ?? ''}`, async () => {
      const { p, clock } = processor();
      const amount = amountOf(row);
      const number = 'card' in row.key ? row.key.card : VISA;
      if (row.operation === 'authorize') {
        const r = await p.authorize(authorizeRequest(number, amount));
        const expected = { approved: 'authorized', declined: 'declined', failed: 'failed', requires_authentication: 'requires_authentication', asynchronous: '' }[row.outcome];
        assert.equal(r.status, expected);
        assert.equal(r.error_code, row.outcome === 'requires_authentication' || row.outcome === 'approved' ? undefined : row.error_code);
        if (row.outcome === 'declined' || row.outcome === 'failed') assert.equal(errorCategory(row.error_code!), row.outcome === 'declined' ? 'decline' : 'failure', 'the status follows the code\'s category');
        if (row.outcome !== 'requires_authentication') assert.equal(r.auth_response_code, row.auth_response_code ?? (row.outcome === 'approved' ? '00' : undefined));
        assert.equal(r.cvv_response_code, row.cvv_response_code ?? 'match');
        assert.equal(r.avs_response_code, row.avs_response_code ?? 'not_provided');
        assert.match(r.connection_transaction_id!, /^ctp_[0-9a-f]{24}$/);
        if (row.outcome === 'approved') assert.match(r.scheme_transaction_id!, /^[1-9]\d{14}$/);
        else assert.equal(r.scheme_transaction_id, undefined);
        return;
      }
      // Follow-ups: the authorization (or, for refunds, the one-call capture) succeeds first.
      const auth = await p.authorize(authorizeRequest(VISA, amount, { intent: row.operation === 'refund' ? 'capture' : 'authorize' }));
      if (row.operation === 'refund' && row.outcome === 'asynchronous') {
        assert.equal(auth.status, 'capture_pending');
        clock.now += 2000;
        assert.equal((await p.status({ transaction: refOf(auth, amount, 'capture_pending') })).status, 'captured');
      } else {
        assert.equal(auth.status, row.operation === 'refund' ? 'captured' : 'authorized');
      }
      const ref = refOf(auth, amount, row.operation === 'refund' ? 'capture_succeeded' : 'authorization_succeeded');
      const r = row.operation === 'capture' ? await p.capture({ transaction: ref, amount, idempotency_key: key('capture') })
        : row.operation === 'void' ? await p.void({ transaction: ref, idempotency_key: key('void') })
        : await p.refund({ transaction: ref, amount, reason: 'test', idempotency_key: key('refund') });
      if (row.outcome === 'asynchronous') {
        assert.equal(r.status, row.operation === 'capture' ? 'capture_pending' : 'processing');
        assert.equal((r as { settles_at?: string }).settles_at, new Date(clock.now + 2000).toISOString());
        return;
      }
      assert.equal(r.status, row.outcome);
      assert.equal(r.error_code, row.error_code);
      assert.equal(r.raw_response_description, row.note);
    });
  }

  it('the amount decides before the card', async () => {
    const { p } = processor();
    assert.equal((await p.authorize(authorizeRequest('4000000000000002', 200011))).error_code, 'insufficient_funds');
    assert.equal((await p.authorize(authorizeRequest('4000000000000002', 1000))).error_code, 'issuer_decline');
  });
});

describe('rules outside the rows', () => {
  it('a card past its expiry month is declined; this month still works', async () => {
    const { p } = processor(); // the clock says June 2030
    const past = await p.authorize(authorizeRequest(VISA, 1000, { card: { number: VISA, expiration_month: 5, expiration_year: 2030 } }));
    assert.deepEqual([past.status, past.error_code, past.auth_response_code], ['declined', 'expired_payment_method', '54']);
    const now = await p.authorize(authorizeRequest(VISA, 1000, { card: { number: VISA, expiration_month: 6, expiration_year: 2030 } }));
    assert.equal(now.status, 'authorized');
  });

  it('CVV and AVS follow what is sent', async () => {
    const { p } = processor();
    const bare = await p.authorize(authorizeRequest(VISA, 1000, { card: { number: VISA, expiration_month: 1, expiration_year: 2031 } }));
    assert.deepEqual([bare.cvv_response_code, bare.avs_response_code], ['not_provided', 'not_provided']);
    const full = await p.authorize(authorizeRequest(VISA, 1000, { card: { number: VISA, expiration_month: 1, expiration_year: 2031, cvc: '1', billing_address: { postal_code: '94107' } } }));
    assert.deepEqual([full.cvv_response_code, full.avs_response_code], ['match', 'match']);
  });

  it('3DS data clears the authentication demands of 4000000000003220 and 200014', async () => {
    const { p } = processor();
    for (const [number, amount] of [['4000000000003220', 1000], [VISA, 200014]] as const) {
      const without = await p.authorize(authorizeRequest(number, amount));
      assert.ok(without.status === 'requires_authentication' || without.error_code === 'requires_buyer_authentication');
      const authenticated = await p.authorize(authorizeRequest(number, amount, { three_d_secure: THREE_DS }));
      assert.equal(authenticated.status, 'authorized', `${number} ${amount}`);
    }
  });

  it('a merchant-initiated payment cannot ask the absent buyer to authenticate: 4000000000003220 fails', async () => {
    const { p } = processor();
    const r = await p.authorize(authorizeRequest('4000000000003220', 1000, { merchant_initiated: true, payment_source: 'recurring', is_subsequent_payment: true, previous_scheme_transaction_id: '483920175563018', card: { number: '4000000000003220', expiration_month: 1, expiration_year: 2031 } }));
    assert.deepEqual([r.status, r.error_code, r.auth_response_code], ['failed', 'requires_buyer_authentication', '1A']);
  });

  it('intent capture captures in the same call', async () => {
    const { p } = processor();
    const r = await p.authorize(authorizeRequest(VISA, 1500, { intent: 'capture' }));
    assert.deepEqual([r.status, r.authorized_amount, r.captured_amount], ['captured', 1500, 1500]);
  });

  it('malformed calls throw: they are bugs in the caller, not outcomes', async () => {
    const { p } = processor();
    await assert.rejects(p.authorize(authorizeRequest(VISA, 0)), TypeError);
    await assert.rejects(p.authorize(authorizeRequest(VISA, 100, { currency: 'usd' })), TypeError);
    await assert.rejects(p.authorize(authorizeRequest('42', 100)), TypeError);
    await assert.rejects(p.authorize(authorizeRequest(VISA, 100, { idempotency_key: '' })), TypeError);
  });
});

describe('scheme transaction ids in the networks\' formats', () => {
  const cases: [string, string, RegExp][] = [
    ['visa', VISA, /^[1-9]\d{14}$/],
    ['mastercard', '5555555555554444', /^MCC[0-9A-Z]{6}0614$/],
    ['american-express', '378282246310005', /^\d{15}$/],
    ['discover', '6011111111111117', /^[0-9A-Z]{15}$/],
    ['jcb (as Visa)', '3566002020360505', /^[1-9]\d{14}$/],
  ];
  for (const [brand, number, pattern] of cases) {
    it(brand, async () => {
      const { p } = processor();
      const r = await p.authorize(authorizeRequest(number, 1000));
      assert.match(r.scheme_transaction_id!, pattern);
    });
  }
});

describe('idempotency: one key, one charge', () => {
  it('the same key returns the same answer and moves no money again', async () => {
    const { p } = processor();
    const req = authorizeRequest(VISA, 4200);
    const first = await p.authorize(req);
    const again = await p.authorize({ ...req });
    assert.deepEqual(again, first);
    assert.deepEqual(p.ledger.stats(), { authorizations: 1, captures: 0, voids: 0, refunds: 0, replays: 1 });
    const ref = refOf(first, 4200);
    const capture = { transaction: ref, amount: 4200, idempotency_key: key('capture') };
    assert.equal((await p.capture(capture)).status, 'captured');
    assert.equal((await p.capture(capture)).status, 'captured', 'a retried capture is the same capture, not a refusal');
    const refund = { transaction: { ...ref, status: 'capture_succeeded', captured_amount: 4200 }, amount: 4200, idempotency_key: key('refund') };
    const r1 = await p.refund(refund);
    assert.deepEqual(await p.refund(refund), r1);
    assert.deepEqual(p.ledger.stats(), { authorizations: 1, captures: 1, voids: 0, refunds: 1, replays: 3 });
  });

  it('a key reused for a different request is refused, not replayed', async () => {
    const { p } = processor();
    const req = authorizeRequest(VISA, 1000);
    await p.authorize(req);
    const other = await p.authorize({ ...req, amount: 2000 });
    assert.deepEqual([other.status, other.error_code], ['failed', 'service_resource_conflict']);
    assert.equal(p.ledger.stats().authorizations, 1);
  });

  it('another process (a fresh ledger) answers a replay with the same ids', async () => {
    const req = authorizeRequest('5555555555554444', 1000);
    const a = await processor().p.authorize(req);
    const b = await processor().p.authorize(req);
    assert.equal(b.connection_transaction_id, a.connection_transaction_id);
    assert.equal(b.scheme_transaction_id, a.scheme_transaction_id);
  });

  it('connections keep their keys apart', async () => {
    const ledger = new TestLedger();
    const req = authorizeRequest(VISA, 1000);
    const a = await new CofferTestProcessor({ ledger, connectionId: 'a' }).authorize(req);
    const b = await new CofferTestProcessor({ ledger, connectionId: 'b' }).authorize(req);
    assert.notEqual(a.connection_transaction_id, b.connection_transaction_id);
    assert.equal(ledger.stats().authorizations, 2);
  });

  it('the ledger is bounded', async () => {
    const ledger = new TestLedger(3);
    const p = new CofferTestProcessor({ ledger });
    const first = authorizeRequest(VISA, 1000);
    await p.authorize(first);
    for (let i = 0; i < 3; i++) await p.authorize(authorizeRequest(VISA, 1000));
    await p.authorize(first);
    assert.equal(ledger.stats().replays, 0, 'the oldest answer was let go');
  });
});

describe('refuses what an acquirer refuses', () => {
  it('capturing twice, voiding after capture, capturing a void, more than authorized', async () => {
    const { p } = processor();
    const a = await p.authorize(authorizeRequest(VISA, 1000));
    const ref = refOf(a, 1000);
    assert.deepEqual(await p.capture({ transaction: ref, amount: 1001, idempotency_key: key('c') }).then((r) => [r.status, r.error_code]), ['failed', 'invalid_amount']);
    assert.equal((await p.capture({ transaction: ref, amount: 600, idempotency_key: key('c') })).status, 'captured');
    assert.equal((await p.capture({ transaction: ref, amount: 400, idempotency_key: key('c') })).error_code, 'unexpected_state');
    assert.equal((await p.void({ transaction: ref, idempotency_key: key('v') })).error_code, 'unexpected_state');
    const b = await p.authorize(authorizeRequest(VISA, 1000));
    assert.equal((await p.void({ transaction: refOf(b, 1000), idempotency_key: key('v') })).status, 'voided');
    assert.equal((await p.capture({ transaction: refOf(b, 1000), amount: 1000, idempotency_key: key('c') })).error_code, 'unexpected_state');
    assert.equal((await p.refund({ transaction: refOf(b, 1000), amount: 10, idempotency_key: key('r') })).error_code, 'unexpected_state');
  });

  it('refunds up to what was captured, then refund_already_satisfied', async () => {
    const { p } = processor();
    const a = await p.authorize(authorizeRequest(VISA, 1000, { intent: 'capture' }));
    const ref = refOf(a, 1000, 'capture_succeeded');
    for (const amount of [300, 300, 400]) assert.equal((await p.refund({ transaction: ref, amount, idempotency_key: key('r') })).status, 'succeeded');
    assert.equal((await p.refund({ transaction: ref, amount: 1, idempotency_key: key('r') })).error_code, 'refund_already_satisfied');
    const b = await p.authorize(authorizeRequest(VISA, 1000, { intent: 'capture' }));
    assert.equal((await p.refund({ transaction: refOf(b, 1000, 'capture_succeeded'), amount: 1001, idempotency_key: key('r') })).error_code, 'invalid_amount');
  });
});

describe('asynchronous captures and refunds (600000–600999)', () => {
  it('capture_pending until the delay has passed, then captured; the refund likewise', async () => {
    const { p, clock } = processor();
    const a = await p.authorize(authorizeRequest(VISA, 600_500));
    const c = await p.capture({ transaction: refOf(a, 600_500), amount: 600_000, idempotency_key: key('c') });
    assert.deepEqual([c.status, c.captured_amount, c.settles_at], ['capture_pending', 600_000, new Date(clock.now + 2000).toISOString()]);
    const ref = refOf(a, 600_500, 'capture_pending');
    assert.equal((await p.status({ transaction: ref })).status, 'capture_pending');
    clock.now += 1999;
    assert.equal((await p.status({ transaction: ref })).status, 'capture_pending');
    clock.now += 1;
    assert.deepEqual(await p.status({ transaction: ref }).then((s) => [s.status, s.captured_amount]), ['captured', 600_000]);
    const refunded = { ...ref, status: 'capture_succeeded', captured_amount: 600_000 };
    const r = await p.refund({ transaction: refunded, amount: 100, idempotency_key: key('r') });
    assert.equal(r.status, 'processing');
    const poll = { transaction: refunded, connection_refund_id: r.connection_refund_id!, amount: 100 };
    assert.equal((await p.refundStatus(poll)).status, 'processing');
    clock.now += 2000;
    assert.equal((await p.refundStatus(poll)).status, 'succeeded');
  });

  it('a process that never saw the capture reports it settled (the job polls at settles_at)', async () => {
    const { p } = processor();
    const a = await p.authorize(authorizeRequest(VISA, 600_001, { intent: 'capture' }));
    assert.equal(a.status, 'capture_pending');
    const other = processor().p;
    const s = await other.status({ transaction: refOf(a, 600_001, 'capture_pending') });
    assert.deepEqual([s.status, s.captured_amount], ['captured', 600_001]);
    assert.equal((await other.status({ transaction: refOf(a, 600_001, 'processing') })).status, 'unknown');
    assert.equal((await other.refundStatus({ transaction: refOf(a, 600_001), connection_refund_id: 'ctr_x', amount: 1 })).status, 'succeeded');
  });
});

describe('driven through the state machine, as the transactions feature will', () => {
  it('authorize, partial capture, two partial refunds, balance respected', async () => {
    const { p } = processor();
    let state = initialState(5000, 'authorize');
    const a = await p.authorize(authorizeRequest(VISA, 5000));
    state = apply(state, { type: 'authorize_result', result: a }).state;
    const amount = planCapture(state, 3000);
    const ref = () => ({ ...refOf(a, 5000, state.status), captured_amount: state.captured_amount });
    state = apply(state, { type: 'capture', amount, result: await p.capture({ transaction: ref(), amount, idempotency_key: key('c') }) }).state;
    assert.deepEqual([state.status, state.captured_amount], ['capture_succeeded', 3000]);
    for (const want of [1000, undefined]) {
      const refund = planRefund(state, want);
      state = apply(state, { type: 'refund', amount: refund }).state;
      const r = await p.refund({ transaction: ref(), amount: refund, idempotency_key: key('r') });
      assert.equal(r.status, 'succeeded');
      state = apply(state, { type: 'refund_update', amount: refund, from: 'processing', to: 'succeeded' }).state;
    }
    assert.deepEqual([state.refunded_amount, state.captured_amount], [3000, 3000]);
  });
});
