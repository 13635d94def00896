import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Frame, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.ts';
import { call } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import { authenticate, cardToken, createSession, creqFor, threedsKey } from './threeds-helpers.ts';

/**
 * The 3DS pages in a real browser (the machine's Chromium), as a web SDK uses them: the
 * merchant's page posts threeDSMethodData into a hidden iframe, and later the CReq into a
 * challenge iframe (or a popup); the cardholder types the code shown by the test ACS, gets it
 * wrong three times, cancels, or approves out of band; the notification page's postMessage
 * reaches the merchant's page. No page may break its Content-Security-Policy or throw.
 */

const CHALLENGE = '4000020000000000';
const OUT_OF_BAND = '4000000000000341';

/** The merchant's page: a form posting one field into the `threeds` iframe (or a popup), and every message it receives kept. */
function merchantPage(action: string, name: string, value: string, target = 'threeds'): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  return `<!doctype html><html><body>
<iframe name="threeds" width="500" height="600" style="${name === 'threeDSMethodData' ? 'display:none' : ''}"></iframe>
<form id="start" method="post" target="${target}" action="${esc(action)}"><input type="hidden" name="${esc(name)}" value="${esc(value)}"></form>
<script>window.messages = []; window.addEventListener('message', (e) => window.messages.push(e.data));</script>
</body></html>`;
}

describe('3DS pages in a browser', () => {
  let server: TestServer;
  let key: string;
  let browser: Browser;
  const problems: string[] = [];

  before(async () => {
    server = await startTestServer();
    key = await threedsKey(server);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function openPage(): Promise<Page> {
    const page = await browser.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    // In every frame: violations are reported in the page, those of requests never made too. (Source text: no DOM types here.)
    await page.addInitScript("document.addEventListener('securitypolicyviolation', (e) => console.error(`Content-Security-Policy violation: ${e.violatedDirective} ${e.blockedURI}`))");
    return page;
  }

  async function challenged(pan: string) {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, pan) });
    const ares = (await authenticate(server, key, created.id)).body;
    assert.equal(ares.authentication_status, 'challenge');
    return { id: created.id as string, ares, creq: creqFor(created.id, ares.acs_transaction_id) };
  }

  /** Posts the CReq into the challenge iframe and waits for the ACS page in it. */
  async function startChallenge(page: Page, ares: any, creq: string): Promise<Frame> {
    await page.setContent(merchantPage(ares.acs_challenge_url, 'creq', creq));
    await page.evaluate("document.getElementById('start').submit()");
    const frame = await until(() => page.frame({ name: 'threeds' }) ?? undefined, 'the challenge frame');
    await frame.waitForSelector('h1');
    return frame;
  }

  async function message(page: Page): Promise<any> {
    await page.waitForFunction('window.messages.length > 0', undefined, { timeout: 10_000 });
    const messages = (await page.evaluate('window.messages')) as unknown[];
    assert.equal(messages.length, 1, JSON.stringify(messages));
    return messages[0];
  }

  const result = async (id: string) => (await call(server, 'GET', `/3ds/sessions/${id}/challenge-result`, { key })).body;

  it('runs the 3DS Method in a hidden iframe, which reports completion to the session', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, CHALLENGE) });
    const data = Buffer.from(JSON.stringify({ threeDSServerTransID: created.id, threeDSMethodNotificationURL: created.method_notification_url })).toString('base64url');
    const page = await openPage();
    await page.setContent(merchantPage(created.method_url, 'threeDSMethodData', data));
    await page.evaluate("document.getElementById('start').submit()");
    const indicator = await until(async () => {
      const s = (await call(server, 'GET', `/3ds/sessions/${created.id}`, { key })).body;
      return s.method.method_completion_indicator;
    }, 'the method notification', 10_000);
    assert.equal(indicator, 'Y');
    const frame = page.frame({ name: 'threeds' })!;
    await frame.waitForURL(created.method_notification_url);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('completes a static challenge by typing the code shown, and posts the outcome to the merchant\'s page', async () => {
    const { id, ares, creq } = await challenged(CHALLENGE);
    const page = await openPage();
    const frame = await startChallenge(page, ares, creq);
    const code = await frame.locator('#test-code').textContent();
    assert.match(code ?? '', /^\d{6}$/);
    await frame.getByLabel('One-time code').fill(code!);
    await frame.getByRole('button', { name: 'Submit' }).click();
    assert.deepEqual(await message(page), { type: 'challenge', id, isCompleted: true, authenticationStatus: 'successful' });
    const r = await result(id);
    assert.equal(r.authentication_status, 'successful');
    assert.equal(r.eci, '05');
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('fails a challenge after three wrong codes', async () => {
    const { id, ares, creq } = await challenged(CHALLENGE);
    const page = await openPage();
    let frame = await startChallenge(page, ares, creq);
    for (const [i, wrong] of ['111111x', '222222x', '333333x'].entries()) {
      await frame.getByLabel('One-time code').fill(wrong);
      await frame.getByRole('button', { name: 'Submit' }).click();
      if (i < 2) {
        frame = page.frame({ name: 'threeds' })!;
        await frame.getByText(`${2 - i} attempt`).waitFor();
      }
    }
    assert.deepEqual(await message(page), { type: 'challenge', id, isCompleted: true, authenticationStatus: 'failed' });
    assert.equal((await result(id)).authentication_status_reason, 'exceeds-acs-maximum-challenges');
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('cancels a challenge', async () => {
    const { id, ares, creq } = await challenged(CHALLENGE);
    const page = await openPage();
    const frame = await startChallenge(page, ares, creq);
    await frame.getByRole('button', { name: 'Cancel' }).click();
    assert.deepEqual(await message(page), { type: 'challenge', id, isCompleted: true, authenticationStatus: 'failed' });
    assert.equal((await result(id)).challenge_cancel_reason, 'cardholder-cancelled');
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('approves an out-of-band challenge in a popup, which tells its opener', async () => {
    const { id, ares, creq } = await challenged(OUT_OF_BAND);
    const page = await openPage();
    // As the web SDKs open one: a named window first (a form's own target=_blank would cut the opener), then the form into it.
    await page.setContent(merchantPage(ares.acs_challenge_url, 'creq', creq, 'threeds-popup'));
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.evaluate("window.open('about:blank', 'threeds-popup'); document.getElementById('start').submit()")]);
    popup.on('pageerror', (e) => problems.push(`popup error: ${e.message}`));
    await popup.getByRole('button', { name: 'I approved it in my banking app' }).click();
    assert.deepEqual(await message(page), { type: 'challenge', id, isCompleted: true, authenticationStatus: 'successful' });
    assert.equal((await result(id)).authentication_status, 'successful');
    assert.deepEqual(problems, []);
    await page.close();
  });
});
