import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.ts';
import { call } from '../helpers/http.ts';
import { freshEmail, linkToken } from '../helpers/people.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { until } from '../helpers/until.ts';

/**
 * The invitation and sign-in links in a real browser (the machine's Chromium), on a phone-sized
 * screen: the link from the e-mail the SMTP server received opens the acceptance page, the
 * form is filled and sent, and the person lands signed in (the session cookie then works
 * with X-CSRF-Token); then the same for a sign-in link. No page runs or needs any script.
 * COFFER_TEST_SCREENSHOTS=<dir> keeps the screenshots (otherwise they are removed).
 */
describe('invitation and sign-in pages in a browser', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;
  let browser: Browser;
  const problems: string[] = [];
  const shots = process.env.COFFER_TEST_SCREENSHOTS ?? fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-people-shots-'));

  before(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer({ SMTP_URL: smtp.url, MAIL_FROM: 'coffer@example.com', JOB_POLL_MS: '20', PEOPLE_RATE_PER_MINUTE: '1000' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.close();
    if (!process.env.COFFER_TEST_SCREENSHOTS) fs.rmSync(shots, { recursive: true, force: true });
  });

  async function phone(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, javaScriptEnabled: false });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    // A page answered 409 or 410 on purpose is logged by the browser too; a refused resource is a problem.
    page.on('console', (m) => {
      if (/Content.Security.Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    return { context, page };
  }

  async function fitsTheScreen(page: Page): Promise<void> {
    // Evaluated by the driver (scripts are off for the page itself).
    const [scroll, client] = (await page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]')) as number[];
    assert.ok(scroll <= client, `no sideways scrolling on a phone (${scroll} > ${client})`);
  }

  async function mailLink(to: string, pathName: '/invitations/accept' | '/signin/link'): Promise<string> {
    const mail = await until(() => smtp.received.find((m) => JSON.stringify(m.to).includes(to) && (m.text ?? '').includes(pathName)), `the e-mail to ${to}`, 20_000);
    const token = linkToken(mail.text ?? '', pathName);
    const url = new RegExp(`https?://\\S+${pathName.replace(/\//g, '\\/')}\\?token=\\S+`).exec(mail.text ?? '')![0];
    rememberSecret(url);
    assert.ok(url.includes(encodeURIComponent(token)) || url.includes(token));
    return url;
  }

  async function signedInCookies(context: BrowserContext) {
    const cookies = await context.cookies(server.url);
    const session = cookies.find((c) => c.name === 'coffer_session');
    const csrf = cookies.find((c) => c.name === 'coffer_csrf');
    assert.ok(session && csrf, JSON.stringify(cookies.map((c) => c.name)));
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    assert.equal(csrf.httpOnly, false);
    rememberSecret(session.value, csrf.value);
    return { session, csrf };
  }

  it('opens the invitation link from the e-mail, fills the form, and lands signed in', async () => {
    const email = freshEmail('browser');
    const created = await call(server, 'POST', '/tenants/self/invitations', { key: server.key, body: { email } });
    assert.equal(created.status, 201, created.text);
    const url = await mailLink(email, '/invitations/accept');

    const { context, page } = await phone();
    const res = await page.goto(url);
    assert.equal(res?.status(), 200);
    await page.getByRole('heading', { name: 'Join Default' }).waitFor();
    assert.match(await page.locator('main').innerText(), /The "Management" application invited you/);
    await fitsTheScreen(page);
    await page.screenshot({ path: path.join(shots, 'invitation-accept.png'), fullPage: true });

    await page.getByLabel('First name').fill('Katherine');
    await page.getByLabel('Last name').fill('Johnson');
    await page.getByRole('button', { name: 'Accept and join' }).click();
    await page.locator('#signed-in').waitFor();
    assert.match(await page.locator('h1').innerText(), /Welcome to Default/);
    await fitsTheScreen(page);
    await page.screenshot({ path: path.join(shots, 'invitation-accepted.png'), fullPage: true });
    assert.ok(fs.statSync(path.join(shots, 'invitation-accepted.png')).size > 5_000);

    // Signed in: the browser's cookie and CSRF token work on the API.
    const { csrf } = await signedInCookies(context);
    const me = await page.request.get(`${server.url}/me`);
    assert.equal(me.status(), 200);
    const body = await me.json();
    assert.equal(body.user.email, email);
    assert.equal(body.user.first_name, 'Katherine');
    assert.equal(body.role, 'ADMIN');
    const members = await page.request.get(`${server.url}/tenants/self/members`, { headers: { 'x-csrf-token': csrf.value } });
    assert.equal(members.status(), 200);
    assert.equal((await page.request.get(`${server.url}/tenants/self/members`)).status(), 403, 'without X-CSRF-Token');

    // The link is used up: opened again, it says so.
    const again = await page.goto(url);
    assert.equal(again?.status(), 409);
    assert.match(await page.locator('main').innerText(), /accepted this invitation already/);
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('shows a withdrawn invitation\'s link as a page saying so, and whom to ask', async () => {
    const email = freshEmail('withdrawn');
    const created = await call(server, 'POST', '/tenants/self/invitations', { key: server.key, body: { email } });
    const url = await mailLink(email, '/invitations/accept');
    assert.equal((await call(server, 'DELETE', `/tenants/self/invitations/${created.body.id}`, { key: server.key })).status, 204);
    const { context, page } = await phone();
    const res = await page.goto(url);
    assert.equal(res?.status(), 410);
    assert.match(await page.locator('main').innerText(), /This invitation was withdrawn[\s\S]*ask the "Management" application to invite you again/);
    await fitsTheScreen(page);
    await page.screenshot({ path: path.join(shots, 'invitation-withdrawn.png'), fullPage: true });
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('signs in with the e-mailed link: the page\'s one button does it, opening the page does not', async () => {
    const email = freshEmail('returning');
    await call(server, 'POST', '/tenants/self/invitations', { key: server.key, body: { email } });
    const accepted = await call(server, 'POST', '/invitations/accept', { body: { token: linkToken((await until(() => smtp.received.find((m) => JSON.stringify(m.to).includes(email)), 'invitation')).text ?? ''), first_name: 'Re', last_name: 'Turning' } });
    assert.equal(accepted.status, 200);
    assert.equal((await call(server, 'POST', '/signin', { body: { email } })).status, 202);
    const url = await mailLink(email, '/signin/link');

    const { context, page } = await phone();
    // A mail scanner's prefetch: a GET, which signs no one in and uses nothing up.
    assert.equal((await call(server.url, 'GET', new URL(url).pathname + new URL(url).search)).status, 200);
    await page.goto(url);
    await page.getByRole('heading', { name: 'Sign in to Default' }).waitFor();
    await fitsTheScreen(page);
    assert.deepEqual((await context.cookies(server.url)).map((c) => c.name), []);
    await page.screenshot({ path: path.join(shots, 'signin-link.png'), fullPage: true });
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#signed-in').waitFor();
    await signedInCookies(context);
    const me = await page.request.get(`${server.url}/me`);
    assert.equal((await me.json()).user.email, email);
    await page.screenshot({ path: path.join(shots, 'signed-in.png'), fullPage: true });
    assert.deepEqual(problems, []);
    await context.close();
  });
});
