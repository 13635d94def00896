import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/browser.ts';
import { call, createApplication, createToken } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { field, postForm, testCode } from './threeds-helpers.ts';

const NEEDS_3DS = '4000000000003220';
rememberSecret(NEEDS_3DS);
const year = new Date().getUTCFullYear() + 2;
const TX = '/orchestration/transactions';

/**
 * The buyer's approval: a payment the issuer wants authenticated (test card 4000 0000 0000 3220)
 * answers buyer_approval_pending with an approval URL; the page there runs a 3DS challenge for the
 * card and then authorizes again with the authentication. Driven over HTTP and in Chromium.
 * COFFER_TEST_SCREENSHOTS=<dir> keeps the screenshots.
 */
describe('transactions: buyer approval', () => {
  let server: TestServer;
  let browser: Browser;
  let payer: string;
  let connection: string;
  const shots = process.env.COFFER_TEST_SCREENSHOTS ?? fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-approval-shots-'));

  const pending = async () => {
    const token = await createToken(server, payer, { type: 'card', data: { number: NEEDS_3DS, expiration_month: 12, expiration_year: year, cvc: '123' } });
    const res = await call(server, 'POST', TX, { key: payer, body: { amount: 4200, currency: 'EUR', connection_id: connection, token } });
    assert.equal(res.body.status, 'buyer_approval_pending', res.text);
    return res.body;
  };
  const get = async (id: string) => (await call(server, 'GET', `${TX}/${id}`, { key: payer })).body;

  before(async () => {
    server = await startTestServer();
    browser = await launchChromium();
    payer = (await createApplication(server, {
      name: 'payments', type: 'private', permissions: ['orchestration:transaction:read'],
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }],
    })).key;
    connection = (await call(server, 'POST', '/orchestration/connections', { key: server.key, body: { name: 'test', processor: 'coffer-test' } })).body.id;
  });
  after(async () => {
    await browser?.close();
    await server.stop();
    if (!process.env.COFFER_TEST_SCREENSHOTS) fs.rmSync(shots, { recursive: true, force: true });
  });

  it('over HTTP: the link opens only with its secret; the challenge passed, the payment is authorized with the 3DS data', async () => {
    const t = await pending();
    const url = new URL(t.payment_method.approval_url);
    assert.match(url.searchParams.get('token')!, /^[A-Za-z0-9_-]{43}$/);
    const wrong = await fetch(`${url.origin}${url.pathname}?token=${'x'.repeat(43)}`);
    assert.equal(wrong.status, 410);
    const confirm = await fetch(url);
    assert.equal(confirm.status, 200);
    const html = await confirm.text();
    assert.match(html, /Approve your payment/);
    assert.match(html, /EUR 42\.00/);
    assert.ok(!html.includes(NEEDS_3DS));
    const token = url.searchParams.get('token')!;
    const noEmail = await postForm(`${url.origin}${url.pathname}/start`, { token, name: 'Jane Doe', email: 'jane' });
    assert.equal(noEmail.status, 400);
    assert.match(noEmail.html, /valid e-mail address/);
    const start = await postForm(`${url.origin}${url.pathname}/start`, { token, name: 'Jane Doe', email: 'jane@example.com' });
    assert.equal(start.status, 200, start.html);
    const creq = field(start.html, 'creq')!;
    const acs = /action="([^"]+)" target="acs"/.exec(start.html)![1];
    const prompt = await postForm(acs, { creq });
    const done = await postForm(acs, { creq, action: 'submit', code: testCode(prompt.html) });
    const notify = /<form method="post" action="([^"]+)" data-autosubmit>/.exec(done.html)![1];
    await postForm(notify, { cres: field(done.html, 'cres')! });
    const early = await postForm(`${url.origin}${url.pathname}/complete`, { token: 'nope' });
    assert.equal(early.status, 410);
    const complete = await postForm(`${url.origin}${url.pathname}/complete`, { token });
    assert.equal(complete.status, 200, complete.html);
    assert.match(complete.html, /Payment approved/);
    const after = await get(t.id);
    assert.equal(after.status, 'authorization_succeeded');
    assert.equal(after.three_d_secure.status, 'complete');
    assert.equal(after.three_d_secure.method, 'challenge');
    assert.equal(after.authorized_amount, 4200);
    assert.equal((await fetch(url)).status, 410, 'a used link no longer opens');
  });

  it('in Chromium: the buyer opens the link, types the code shown in the bank\'s frame, and lands on "Payment approved"', async () => {
    const t = await pending();
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    const problems: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    await page.goto(t.payment_method.approval_url);
    await page.fill('#name', 'Jane Doe');
    await page.fill('#email', 'jane@example.com');
    await page.screenshot({ path: path.join(shots, 'approval-confirm.png') });
    await page.click('button:has-text("Continue to your bank")');
    const frame = await (async () => {
      for (let i = 0; i < 100; i++) {
        const f = page.frame({ name: 'acs' });
        // The frame navigates while it loads the bank's page: a look during a navigation finds nothing yet.
        if (f && (await f.$('#test-code').catch(() => null))) return f;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('the bank\'s frame never showed its code');
    })();
    const code = await frame.textContent('#test-code');
    await frame.fill('#code', code!);
    await page.screenshot({ path: path.join(shots, 'approval-challenge.png') });
    await frame.click('button[value="submit"]');
    await page.waitForSelector('h1:has-text("Payment approved")', { timeout: 15_000 });
    await page.screenshot({ path: path.join(shots, 'approval-done.png') });
    assert.ok(fs.statSync(path.join(shots, 'approval-done.png')).size > 5_000);
    assert.deepEqual(problems, []);
    assert.equal((await get(t.id)).status, 'authorization_succeeded');
    await page.close();
  });

  it('a cancelled challenge fails the payment: authorization_failed, cancelled_buyer_approval', async () => {
    const t = await pending();
    const url = new URL(t.payment_method.approval_url);
    const token = url.searchParams.get('token')!;
    const start = await postForm(`${url.origin}${url.pathname}/start`, { token, name: 'Jane Doe', email: 'jane@example.com' });
    const creq = field(start.html, 'creq')!;
    const acs = /action="([^"]+)" target="acs"/.exec(start.html)![1];
    await postForm(acs, { creq });
    const done = await postForm(acs, { creq, action: 'cancel' });
    const notify = /<form method="post" action="([^"]+)" data-autosubmit>/.exec(done.html)![1];
    await postForm(notify, { cres: field(done.html, 'cres')! });
    const complete = await postForm(`${url.origin}${url.pathname}/complete`, { token });
    assert.match(complete.html, /Payment not approved/);
    const after = await get(t.id);
    assert.equal(after.status, 'authorization_failed');
    assert.equal(after.error_code, 'cancelled_buyer_approval');
  });
});
