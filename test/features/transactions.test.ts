import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TestLedger } from '../../src/processors/index.ts';
import { call, createApplication, createOtherTenant, createToken } from '../helpers/http.ts';
import { assertInvalid, assertNotFound } from '../helpers/problems.ts';
import { queryOnce, rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

const SUCCESS = '4242424242424242';
const DECLINE = '4000000000000002';
const THREEDS = '4000000000003220';
rememberSecret(SUCCESS, DECLINE, THREEDS);
const year = new Date().getUTCFullYear() + 2;
const TX = '/orchestration/transactions';

describe('transactions', () => {
  let server: TestServer;
  let payer: string;
  let reader: string;
  let connection: string;
  const ledger = new TestLedger();

  const card = (number: string, cvc = '123') => createToken(server, payer, { type: 'card', data: { number, expiration_month: 12, expiration_year: year, cvc } });
  const pay = (body: Record<string, unknown>, key = payer) => call(server, 'POST', TX, { key, body: { amount: 1000, currency: 'USD', connection_id: connection, ...body } });
  const events = (id: string) =>
    queryOnce<{ type: string }>(server.config.databaseUrl!, 'SELECT type FROM events WHERE entity_id = $1 ORDER BY id', [id]).then((rows) => rows.map((r) => r.type));

  before(async () => {
    server = await startTestServer({ AUTH_CACHE_SECONDS: '0' }, { providers: { testLedger: ledger } });
    payer = (await createApplication(server, {
      name: 'payments', type: 'private',
      permissions: ['token:create', 'token:use', 'orchestration:transaction:capture', 'orchestration:transaction:read'],
    })).key;
    reader = (await createApplication(server, { name: 'reader', type: 'private', permissions: ['orchestration:transaction:read'] })).key;
    const res = await call(server, 'POST', '/orchestration/connections', { key: server.key, body: { name: 'test acquirer', processor: 'coffer-test' } });
    assert.equal(res.status, 201, res.text);
    connection = res.body.id;
  });
  after(() => server.stop());

  it('connections: credentials are write-only, settings merge, a deleted one takes no new transactions', async () => {
    const bad = await call(server, 'POST', '/orchestration/connections', { key: server.key, body: { name: 's', processor: 'stripe' } });
    assertInvalid(bad, 'body.credentials.secret_key');
    const secret = 'sk_test_' + 'x'.repeat(24);
    rememberSecret(secret);
    const made = await call(server, 'POST', '/orchestration/connections', { key: server.key, body: { name: 's', processor: 'stripe', credentials: { secret_key: secret } } });
    assert.equal(made.status, 201, made.text);
    assert.ok(!made.text.includes(secret));
    assert.deepEqual(made.body.credentials, ['secret_key']);
    assert.equal(made.body.settings.base_url, 'https://api.stripe.com');
    const patched = await call(server, 'PATCH', `/orchestration/connections/${made.body.id}`, {
      key: server.key, contentType: 'application/merge-patch+json', body: { settings: { base_url: 'http://127.0.0.1:1' } },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.settings.base_url, 'http://127.0.0.1:1');
    const unknownSetting = await call(server, 'PATCH', `/orchestration/connections/${made.body.id}`, {
      key: server.key, contentType: 'application/merge-patch+json', body: { settings: { nope: 1 } },
    });
    assertInvalid(unknownSetting, 'body.settings.nope');
    // The id spelt in upper case names the same connection, and its credentials stay readable.
    const upper = await call(server, 'PATCH', `/orchestration/connections/${made.body.id.toUpperCase()}`, {
      key: server.key, contentType: 'application/merge-patch+json', body: { name: 'renamed' },
    });
    assert.equal(upper.status, 200, upper.text);
    const again = await call(server, 'PATCH', `/orchestration/connections/${made.body.id}`, { key: server.key, contentType: 'application/merge-patch+json', body: {} });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.name, 'renamed');
    const list = await call(server, 'GET', '/orchestration/connections', { key: server.key });
    assert.equal(list.status, 200);
    assert.ok(list.body.data.some((c: { id: string }) => c.id === made.body.id));
    assert.equal((await call(server, 'DELETE', `/orchestration/connections/${made.body.id}`, { key: server.key })).status, 204);
    assertNotFound(await call(server, 'GET', `/orchestration/connections/${made.body.id}`, { key: server.key }));
    const token = await card(SUCCESS);
    const res = await pay({ token, connection_id: made.body.id });
    assertInvalid({ ...res, status: 400 }, 'body.connection_id');
    assert.equal(res.status, 404);
    assert.equal((await call(server, 'POST', '/orchestration/connections', { key: payer, body: { name: 'x', processor: 'coffer-test' } })).status, 403);
  });

  it('authorizes, captures and refunds, filling what an orchestrator fills', async () => {
    const token = await card(SUCCESS);
    const res = await pay({ token, external_identifier: 'order-1', country: 'US', metadata: { order: 1 } });
    assert.equal(res.status, 201, res.text);
    const t = res.body;
    assert.equal(t.status, 'authorization_succeeded');
    assert.equal(t.intent_outcome, 'succeeded');
    assert.equal(t.authorized_amount, 1000);
    assert.equal(t.captured_amount, 0);
    assert.equal(t.auth_response_code, '00');
    assert.match(t.scheme_transaction_id, /\S+/);
    assert.match(t.connection_transaction_id, /\S+/);
    assert.match(t.reconciliation_id, /^[0-9A-Za-z]{22}$/);
    assert.deepEqual(t.payment_method, { type: 'card', token, scheme: null, last4: '4242', expiration_date: `12/${String(year % 100).padStart(2, '0')}` });
    assert.ok(t.authorized_at && !t.captured_at);
    assert.ok(!res.text.includes(SUCCESS));

    const got = await call(server, 'GET', `${TX}/${t.id}`, { key: reader });
    assert.deepEqual(got.body, t);
    const byReconciliation = await call(server, 'GET', `${TX}?reconciliation_id=${t.reconciliation_id}`, { key: reader });
    assert.deepEqual(byReconciliation.body.data.map((x: { id: string }) => x.id), [t.id]);

    const tooMuch = await call(server, 'POST', `${TX}/${t.id}/capture`, { key: payer, body: { amount: 1001 } });
    assertInvalid(tooMuch, 'body.amount');
    const captured = await call(server, 'POST', `${TX}/${t.id}/capture`, { key: payer, body: {} });
    assert.equal(captured.status, 200, captured.text);
    assert.equal(captured.body.status, 'capture_succeeded');
    assert.equal(captured.body.captured_amount, 1000);
    const voided = await call(server, 'POST', `${TX}/${t.id}/void`, { key: payer });
    assert.equal(voided.status, 409);
    assert.match(voided.body.detail, /capture_succeeded/);

    for (const amount of [0, -5]) assertInvalid(await call(server, 'POST', `${TX}/${t.id}/refunds`, { key: payer, body: { amount } }), 'body.amount');
    const part = await call(server, 'POST', `${TX}/${t.id}/refunds`, { key: payer, body: { amount: 300, reason: 'one item\nreturned' } });
    assert.equal(part.status, 201, part.text);
    assert.equal(part.body.status, 'succeeded');
    assert.equal(part.body.amount, 300);
    const over = await call(server, 'POST', `${TX}/${t.id}/refunds`, { key: payer, body: { amount: 701 } });
    assertInvalid(over, 'body.amount');
    assert.match(over.body.detail, /700/);
    const rest = await call(server, 'POST', `${TX}/${t.id}/refunds`, { key: payer, body: {} });
    assert.equal(rest.body.amount, 700);
    const after = await call(server, 'GET', `${TX}/${t.id}`, { key: reader });
    assert.equal(after.body.refunded_amount, 1000);
    assert.equal(after.body.status, 'capture_succeeded');
    const page = await call(server, 'GET', `${TX}/${t.id}/refunds?limit=1`, { key: payer });
    assert.equal(page.body.data[0].id, part.body.id);
    assert.equal(page.body.pagination.previous_cursor, null);
    const next = await call(server, 'GET', `${TX}/${t.id}/refunds?limit=1&cursor=${page.body.pagination.next_cursor}`, { key: payer });
    assert.equal(next.body.data[0].id, rest.body.id);
    const back = await call(server, 'GET', `${TX}/${t.id}/refunds?limit=1&cursor=${next.body.pagination.previous_cursor}`, { key: payer });
    assert.equal(back.body.data[0].id, part.body.id);
    const one = await call(server, 'GET', `${TX}/${t.id}/refunds/${part.body.id}`, { key: payer });
    assert.equal(one.body.reason, 'one item\nreturned');
    assert.deepEqual(await events(t.id), ['transaction.created', 'transaction.authorized', 'transaction.captured']);
    assert.deepEqual(await events(part.body.id), ['refund.created', 'refund.succeeded']);
  });

  it('declines, intent capture, void, and the use-case rules', async () => {
    const declined = await pay({ token: await card(DECLINE) });
    assert.equal(declined.body.status, 'authorization_declined');
    assert.equal(declined.body.error_code, 'issuer_decline');
    assert.equal(declined.body.intent_outcome, 'failed');
    const captureAtOnce = await pay({ token: await card(SUCCESS), intent: 'capture' });
    assert.equal(captureAtOnce.body.status, 'capture_succeeded');
    assert.equal(captureAtOnce.body.captured_amount, 1000);
    const toVoid = await pay({ token: await card(SUCCESS) });
    const voided = await call(server, 'POST', `${TX}/${toVoid.body.id}/void`, { key: payer });
    assert.equal(voided.body.status, 'authorization_voided');
    assert.ok(voided.body.voided_at);
    const amountDecline = await pay({ token: await card(SUCCESS), amount: 200011 });
    assert.equal(amountDecline.body.error_code, 'insufficient_funds');

    const token = await card(SUCCESS);
    assertInvalid(await pay({ token, merchant_initiated: true, payment_source: 'recurring', is_subsequent_payment: true }), 'body.previous_scheme_transaction_id');
    assertInvalid(await pay({ token, merchant_initiated: true, previous_scheme_transaction_id: 'x' }), 'body.payment_source');
    assertInvalid(await pay({ token, merchant_initiated: true, payment_source: 'recurring', previous_scheme_transaction_id: 'x' }), 'body.is_subsequent_payment');
    assertInvalid(await pay({ token, previous_scheme_transaction_id: 'x' }), 'body.previous_scheme_transaction_id');
    assertInvalid(await pay({}), 'body.token');
    assertInvalid(await pay({ token, currency: 'usd' }), 'body.currency');
    assertInvalid(await pay({ token, amount: 0 }), 'body.amount');
    const recurring = await pay({
      token, merchant_initiated: true, payment_source: 'recurring', is_subsequent_payment: true, previous_scheme_transaction_id: captureAtOnce.body.scheme_transaction_id,
    });
    assert.equal(recurring.body.status, 'authorization_succeeded', recurring.text);
    const bank = await createToken(server, payer, { type: 'bank', data: { routing_number: '110000000', account_number: '000123456789' } });
    assertInvalid(await pay({ token: bank }), 'body.token');
    assertNotFound(await pay({ token: 'no-such-token' }));
  });

  it('needs 3DS: buyer_approval_pending with an approval URL; an approval run out fails', async () => {
    const res = await pay({ token: await card(THREEDS) });
    assert.equal(res.body.status, 'buyer_approval_pending', res.text);
    assert.match(res.body.payment_method.approval_url, new RegExp(`/orchestration/approvals/${res.body.id}\\?token=[A-Za-z0-9_-]{43}$`));
    assert.ok(Date.parse(res.body.approval_expires_at) > Date.now());
    await queryOnce(server.config.databaseUrl!, `UPDATE transactions SET approval_expires_at = now() - interval '1 second' WHERE id = $1`, [res.body.id]);
    assert.equal(await server.running.services.transactions.recovery.expireApprovals(), 1);
    const after = await call(server, 'GET', `${TX}/${res.body.id}`, { key: reader });
    assert.equal(after.body.status, 'authorization_failed');
    assert.equal(after.body.error_code, 'incomplete_buyer_approval');
  });

  it('concurrent refunds never add up to more than was captured; concurrent captures run once', async () => {
    const t = (await pay({ token: await card(SUCCESS), intent: 'capture' })).body;
    const captures0 = ledger.stats().refunds;
    const results = await Promise.all(Array.from({ length: 16 }, () => call(server, 'POST', `${TX}/${t.id}/refunds`, { key: payer, body: { amount: 150 } })));
    const made = results.filter((r) => r.status === 201);
    assert.equal(made.length, 6, results.map((r) => r.status).join(','));
    assert.ok(results.every((r) => r.status === 201 || r.status === 400));
    const after = await call(server, 'GET', `${TX}/${t.id}`, { key: reader });
    assert.equal(after.body.refunded_amount, 900);
    assert.equal(ledger.stats().refunds - captures0, 6, 'the processor refunded six times');

    const a = (await pay({ token: await card(SUCCESS) })).body;
    const captures = await Promise.all(Array.from({ length: 8 }, () => call(server, 'POST', `${TX}/${a.id}/capture`, { key: payer, body: {} })));
    assert.equal(captures.filter((r) => r.status === 200).length, 1, captures.map((r) => `${r.status} ${r.body?.detail ?? ''}`).join(' | '));
    assert.ok(captures.every((r) => r.status === 200 || r.status === 409));
  });

  it('is tenant-isolated', async () => {
    const t = (await pay({ token: await card(SUCCESS) })).body;
    const other = await createOtherTenant(server);
    const key = (await createApplication(server, { name: 'o', type: 'private', permissions: ['token:use', 'orchestration:transaction:read', 'orchestration:transaction:capture'] }, other.api_key)).key;
    assertNotFound(await call(server, 'GET', `${TX}/${t.id}`, { key }));
    assertNotFound(await call(server, 'POST', `${TX}/${t.id}/capture`, { key, body: {} }));
    assertNotFound(await call(server, 'POST', `${TX}/${t.id}/refunds`, { key, body: {} }));
    const list = await call(server, 'GET', TX, { key });
    assert.deepEqual(list.body.data, []);
    assert.equal((await call(server, 'POST', TX, { key, body: { amount: 1, currency: 'USD', connection_id: connection, token: 'x' } })).status, 404);
  });
});
