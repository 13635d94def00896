import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, createToken } from '../helpers/http.ts';
import { queryOnce, rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { startStripeFake, type StripeFake } from '../processors/stripe-fake.ts';

const SUCCESS = '4242424242424242';
rememberSecret(SUCCESS);
const year = new Date().getUTCFullYear() + 2;
const TX = '/orchestration/transactions';

/**
 * Money safety with a processor that is not in the process (the stripe connector against a local
 * fake of Stripe's API): a call whose answer is lost — the server stopped between the call and
 * its commit, or the connection dropped — is made again by the sweep with the same idempotency
 * key, and Stripe (the fake) replays its first answer: one PaymentIntent, one capture, one refund.
 */
describe('transactions through a remote processor: crashes and lost answers', () => {
  let server: TestServer;
  let stripe: StripeFake;
  let payer: string;
  let connection: string;
  let crashNext: string | undefined;

  const pay = async () => {
    const token = await createToken(server, payer, { type: 'card', data: { number: SUCCESS, expiration_month: 12, expiration_year: year, cvc: '123' } });
    return call(server, 'POST', TX, { key: payer, body: { amount: 2500, currency: 'USD', connection_id: connection, token } });
  };
  const get = async (id: string) => (await call(server, 'GET', `${TX}/${id}`, { key: payer })).body;
  const posts = (path: RegExp) => stripe.requests.filter((r) => r.method === 'POST' && path.test(r.path));
  /** Lets the sweep's age threshold pass, then resumes what is unanswered. */
  const resume = async () => {
    await new Promise((r) => setTimeout(r, 1100));
    return server.running.services.transactions.recovery.resumeUnanswered();
  };

  before(async () => {
    stripe = await startStripeFake();
    server = await startTestServer({ AUTH_CACHE_SECONDS: '0', TRANSACTION_RESUME_AFTER_SECONDS: '1', OUTBOUND_ALLOWLIST: '127.0.0.1' }, {
      providers: {
        afterProcessorCall: (operation) => {
          if (crashNext !== operation) return;
          crashNext = undefined;
          throw new Error('stopped between the processor call and its commit');
        },
      },
    });
    payer = (await createApplication(server, {
      name: 'payments', type: 'private', permissions: ['orchestration:transaction:capture', 'orchestration:transaction:read'],
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }],
    })).key;
    const res = await call(server, 'POST', '/orchestration/connections', {
      key: server.key, body: { name: 'stripe', processor: 'stripe', settings: { base_url: stripe.url }, credentials: { secret_key: stripe.secretKey } },
    });
    assert.equal(res.status, 201, res.text);
    connection = res.body.id;
  });
  after(async () => {
    await server.stop();
    await stripe.close();
  });

  it('authorizes, captures and refunds through Stripe', async () => {
    const t = await pay();
    assert.equal(t.status, 201, t.text);
    assert.equal(t.body.status, 'authorization_succeeded');
    assert.match(t.body.connection_transaction_id, /^pi_/);
    const captured = await call(server, 'POST', `${TX}/${t.body.id}/capture`, { key: payer, body: { amount: 2000 } });
    assert.equal(captured.body.status, 'capture_succeeded', captured.text);
    assert.equal(captured.body.captured_amount, 2000);
    const refund = await call(server, 'POST', `${TX}/${t.body.id}/refunds`, { key: payer, body: {} });
    assert.equal(refund.status, 201, refund.text);
    assert.equal(refund.body.amount, 2000);
    assert.equal(refund.body.status, 'succeeded');
    assert.match(refund.body.connection_refund_id, /^re_/);
    const sent = stripe.requests.find((r) => r.path === '/v1/payment_intents' && r.method === 'POST')!;
    assert.equal(sent.headers['idempotency-key'], `${t.body.id}:authorize`);
  });

  it('a crash after the authorization, before its commit: resumed with the same key, charged once', async () => {
    const before = posts(/^\/v1\/payment_intents$/).length;
    crashNext = 'authorize';
    const res = await pay();
    assert.equal(res.status, 500, res.text);
    const [row] = await queryOnce<{ id: string; status: string }>(server.config.databaseUrl!, `SELECT id, status FROM transactions WHERE pending IS NOT NULL`);
    assert.equal(row.status, 'processing', 'written down before the call, its outcome never recorded');
    const intentsBefore = stripe.intents.size;
    assert.ok((await resume()) >= 1);
    const t = await get(row.id);
    assert.equal(t.status, 'authorization_succeeded');
    assert.equal(stripe.intents.size, intentsBefore, 'no second PaymentIntent');
    const sent = posts(/^\/v1\/payment_intents$/).slice(before);
    assert.equal(sent.length, 2, 'the call and its repetition');
    assert.equal(sent[0].headers['idempotency-key'], sent[1].headers['idempotency-key']);
    assert.equal(await resume(), 0, 'nothing left to resume');
  });

  it('under an SVC-IDEMPOTENCY-KEY, a crash after the call: the retry with the key carries the call on, charged and refunded once', async () => {
    const token = await createToken(server, payer, { type: 'card', data: { number: SUCCESS, expiration_month: 12, expiration_year: year, cvc: '123' } });
    const body = { amount: 2500, currency: 'USD', connection_id: connection, token, intent: 'capture' };
    const headers = { 'svc-idempotency-key': `crash-${Date.now()}` };
    const intentsBefore = stripe.intents.size;
    crashNext = 'authorize';
    assert.equal((await call(server, 'POST', TX, { key: payer, body, headers })).status, 500);
    const t = await call(server, 'POST', TX, { key: payer, body, headers });
    assert.equal(t.status, 201, t.text);
    assert.equal(t.body.status, 'capture_succeeded');
    assert.equal(stripe.intents.size, intentsBefore + 1, 'one PaymentIntent');
    const sent = posts(/^\/v1\/payment_intents$/).filter((r) => r.headers['idempotency-key'] === `${t.body.id}:authorize`);
    assert.equal(sent.length, 2, 'the call, and its repetition by the retry');
    const again = await call(server, 'POST', TX, { key: payer, body, headers });
    assert.equal(again.headers.get('svc-idempotent-replayed'), 'true');
    assert.equal(again.body.id, t.body.id);

    const refundHeaders = { 'svc-idempotency-key': `crash-refund-${Date.now()}` };
    crashNext = 'refund';
    assert.equal((await call(server, 'POST', `${TX}/${t.body.id}/refunds`, { key: payer, body: { amount: 700 }, headers: refundHeaders })).status, 500);
    const refund = await call(server, 'POST', `${TX}/${t.body.id}/refunds`, { key: payer, body: { amount: 700 }, headers: refundHeaders });
    assert.equal(refund.status, 201, refund.text);
    assert.equal(refund.body.status, 'succeeded');
    const list = await call(server, 'GET', `${TX}/${t.body.id}/refunds`, { key: payer });
    assert.equal(list.body.data.length, 1, 'one refund');
    assert.equal((await get(t.body.id)).refunded_amount, 700);
    assert.equal(stripe.intents.get(t.body.connection_transaction_id)!.amount_refunded, 700, 'refunded once at Stripe');
  });

  it('a lost answer (the connection dropped) leaves the transaction processing until the sweep settles it', async () => {
    stripe.failNext({ destroy: true });
    const res = await pay();
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.status, 'processing');
    assert.ok(await resume() >= 1);
    assert.equal((await get(res.body.id)).status, 'authorization_succeeded');
  });

  it('a crash after a capture and after a refund: each made again once, with its key', async () => {
    const t = (await pay()).body;
    crashNext = 'capture';
    assert.equal((await call(server, 'POST', `${TX}/${t.id}/capture`, { key: payer, body: {} })).status, 500);
    const busy = await call(server, 'POST', `${TX}/${t.id}/void`, { key: payer });
    assert.equal(busy.status, 409, 'the capture is still pending');
    assert.match(busy.body.detail, /capture/);
    await resume();
    const captured = await get(t.id);
    assert.equal(captured.status, 'capture_succeeded');
    const captures = posts(new RegExp(`^/v1/payment_intents/${captured.connection_transaction_id}/capture$`));
    assert.equal(captures.length, 2);
    assert.equal(captures[0].headers['idempotency-key'], captures[1].headers['idempotency-key']);

    crashNext = 'refund';
    assert.equal((await call(server, 'POST', `${TX}/${t.id}/refunds`, { key: payer, body: { amount: 500 } })).status, 500);
    const pending = await call(server, 'GET', `${TX}/${t.id}/refunds`, { key: payer });
    assert.equal(pending.body.data.length, 1);
    assert.equal(pending.body.data[0].status, 'processing');
    assert.equal((await get(t.id)).refunded_amount, 500, 'the amount is held while the refund is unanswered');
    await resume();
    const refunds = await call(server, 'GET', `${TX}/${t.id}/refunds`, { key: payer });
    assert.equal(refunds.body.data[0].status, 'succeeded');
    const sent = posts(/^\/v1\/refunds$/);
    assert.equal(sent.filter((r) => r.headers['idempotency-key'] === `${refunds.body.data[0].id}:refund`).length, 2);
  });
});
