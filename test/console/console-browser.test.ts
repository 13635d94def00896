import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.ts';
import { call, createOtherTenant } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { until } from '../helpers/until.ts';

/**
 * The Console in a real browser (the machine's Chromium) against a real Coffer, a real
 * database and a real SMTP server: the owner signs in through the e-mailed link, creates an
 * application and its keys, a token (shown masked, then revealed), a reactor it runs, a proxy
 * to a local echo server it tries, invites a READ_ONLY member and reads the logs; the
 * READ_ONLY member, on a phone, sees no buttons to change things and is refused a reveal.
 * No console error and no CSP violation may happen on the way.
 * COFFER_TEST_SCREENSHOTS=<dir> keeps a screenshot of each page (otherwise they are removed).
 */
describe('the console in a browser', () => {
  const OWNER = 'owner@example.com';
  let smtp: TestSmtpServer;
  let server: TestServer;
  let browser: Browser;
  let echo: http.Server;
  let echoUrl: string;
  const echoed: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const problems: string[] = [];
  const shots = process.env.COFFER_TEST_SCREENSHOTS ?? fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-console-shots-'));
  // Shared by the steps, in order.
  let owner: { context: BrowserContext; page: Page };
  let tokenId = '';

  before(async () => {
    echo = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        echoed.push({ headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json', 'x-echo': 'yes' });
        res.end(JSON.stringify({ method: req.method, url: req.url, body, cookie: req.headers.cookie ?? null, csrf: req.headers['x-csrf-token'] ?? null }));
      });
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
    smtp = await startSmtpServer();
    server = await startTestServer({
      SMTP_URL: smtp.url, MAIL_FROM: 'coffer@example.com', JOB_POLL_MS: '20', PEOPLE_RATE_PER_MINUTE: '1000',
      COFFER_OWNER_EMAIL: OWNER, OUTBOUND_ALLOWLIST: '127.0.0.1',
    });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.close();
    await new Promise((resolve) => echo?.close(resolve));
    if (!process.env.COFFER_TEST_SCREENSHOTS) fs.rmSync(shots, { recursive: true, force: true });
  });

  async function open(viewport: { width: number; height: number }, mobile = false): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport, isMobile: mobile, hasTouch: mobile });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      // A refused request the page expects (a 400 to show on a form, a 404 looked up, the reactor's 422, the READ_ONLY member's 403)
      // is reported by the browser too; anything else, a CSP refusal first of all, is a problem.
      if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of (400|403|404|422)/.test(m.text())) problems.push(`console: ${m.text()}`);
      if (/Content.Security.Policy|Refused to/i.test(m.text())) problems.push(`csp: ${m.text()}`);
    });
    return { context, page };
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });

  async function fitsTheScreen(page: Page): Promise<void> {
    const [scroll, client] = (await page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]')) as number[];
    assert.ok(scroll <= client, `no sideways scrolling (${scroll} > ${client})`);
  }

  async function mailLink(to: string, pathName: string, after = 0): Promise<string> {
    const mail = await until(() => smtp.received.slice(after).find((m) => JSON.stringify(m.to).includes(to) && (m.text ?? '').includes(pathName)), `the e-mail to ${to}`, 20_000);
    const url = new RegExp(`https?://\\S+${pathName.replace(/\//g, '\\/')}\\?token=\\S+`).exec(mail.text ?? '')![0];
    rememberSecret(url, decodeURIComponent(new URL(url).searchParams.get('token') ?? ''));
    return url;
  }

  const go = async (page: Page, hash: string) => {
    await page.goto(`${server.url}/console/#/${hash}`);
  };

  it('signs the owner in through the e-mailed link', async () => {
    owner = await open({ width: 1280, height: 800 });
    const { page } = owner;
    const res = await page.goto(`${server.url}/console`);
    assert.equal(res?.status(), 200);
    assert.ok(page.url().endsWith('/console/'), page.url());
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await shot(page, 'signin');
    const before = smtp.received.length;
    await page.getByLabel('E-mail address').fill(OWNER);
    await page.getByRole('button', { name: 'E-mail me a sign-in link' }).click();
    await page.getByRole('heading', { name: 'Check your e-mail' }).waitFor();
    await shot(page, 'signin-sent');

    await page.goto(await mailLink(OWNER, '/signin/link', before));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#open-console').click();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    assert.match(await page.locator('.topbar').innerText(), /OWNER/);
    await shot(page, 'overview');
  });

  it('creates an application, shows the API\'s message on the name field, and shows each key once', async () => {
    const { page } = owner;
    await page.getByRole('link', { name: 'Applications', exact: true }).click();
    await page.getByRole('heading', { name: 'Applications' }).waitFor();
    await page.getByRole('link', { name: 'New application' }).click();
    await page.getByLabel('token:create').waitFor();
    // Sent empty: the API's 400 names body.name, and the console puts it under the Name input.
    await page.getByRole('button', { name: 'Create application' }).click();
    const nameField = page.locator('.field', { has: page.getByLabel('Name', { exact: true }) });
    await nameField.locator('.field-errors').waitFor();
    assert.match(await nameField.locator('.field-errors').innerText(), /fewer than 1 character|required|empty/i);
    await shot(page, 'application-invalid');

    await page.getByLabel('Name', { exact: true }).fill('Checkout back end');
    await page.getByLabel('token:create').check();
    await page.getByLabel('token:read').check();
    await page.getByRole('button', { name: 'Add a rule' }).click();
    await page.locator('#rule-0-container').fill('/pci/');
    await page.locator('#rule-0-perm-token-read').check();
    await page.getByRole('button', { name: 'Create application' }).click();
    const key = await page.getByTestId('secret-value').innerText();
    assert.ok(key.length > 20);
    rememberSecret(key);
    await shot(page, 'application-created');
    await page.getByRole('link', { name: 'Open the application' }).click();
    await page.getByRole('heading', { name: 'Checkout back end' }).waitFor();
    await page.getByRole('button', { name: 'Create a key' }).click();
    const second = await page.getByTestId('secret-value').innerText();
    rememberSecret(second);
    assert.notEqual(second, key);
    await page.getByRole('button', { name: 'Revoke' }).nth(1).waitFor();
    await shot(page, 'application-detail');
  });

  it('adds a webhook: its signing secret is shown once', async () => {
    const { page } = owner;
    await go(page, 'webhooks');
    await page.getByText('No webhooks yet').waitFor();
    await page.getByRole('link', { name: 'New webhook' }).click();
    await page.getByLabel('token.created').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Events');
    await page.getByLabel('URL', { exact: true }).fill(`${echoUrl}/events`);
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const secret = await page.getByTestId('secret-value').innerText();
    rememberSecret(secret);
    assert.match(secret, /^whsec_/);
    await shot(page, 'webhook-created');
  });

  it('creates a token, shows it masked, and reveals it on request', async () => {
    const { page } = owner;
    await go(page, 'tokens/new');
    await page.getByLabel('Type').selectOption('card_number');
    await page.getByLabel('Data (JSON)').fill('"4111111111111111"');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('heading', { name: /^Token / }).waitFor();
    tokenId = (await page.getByRole('heading', { name: /^Token / }).innerText()).replace(/^Token /, '');
    const masked = await page.getByTestId('token-data').innerText();
    assert.doesNotMatch(masked, /4111111111111111/);
    assert.match(masked, /1111/);
    await shot(page, 'token-masked');
    await page.getByRole('button', { name: 'Reveal data' }).click();
    await page.getByText('Data (revealed)').waitFor();
    assert.match(await page.getByTestId('token-data').innerText(), /4111111111111111/);
    await shot(page, 'token-revealed');
    await go(page, 'tokens');
    await page.getByRole('link', { name: tokenId }).waitFor();
    await shot(page, 'tokens');
  });

  it('writes a reactor in the editor and runs it', async () => {
    const { page } = owner;
    await go(page, 'reactors/new');
    await page.getByLabel('Name', { exact: true }).fill('Greeter');
    const editor = page.getByTestId('editor-reactor-code').locator('.cm-content');
    await editor.click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.insertText("module.exports = async function ({ args }) { console.log('card is', args.card); return { raw: { greeting: 'Hello, ' + args.name, card: args.card } }; };");
    await page.getByRole('button', { name: 'Create reactor' }).click();
    await page.getByRole('heading', { name: 'Greeter' }).waitFor();
    await page.getByLabel('args (JSON)').fill(JSON.stringify({ name: 'Ada', card: `{{ ${tokenId} }}` }));
    await page.getByRole('button', { name: 'Run' }).click();
    const result = await page.getByTestId('run-result').innerText();
    assert.match(result, /Result: 200/);
    assert.match(result, /Hello, Ada/);
    // A member's run detokenizes to the mask, never the plaintext; what the code printed shows apart.
    assert.doesNotMatch(result, /4111111111111111/);
    const printed = await page.getByTestId('run-console').innerText();
    assert.match(printed, /card is/, printed);
    assert.doesNotMatch(printed, /4111111111111111/);
    await shot(page, 'reactor-result');
    // Code that throws: the run's problem shows.
    const editor2 = page.getByTestId('editor-reactor-code').locator('.cm-content');
    await editor2.click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.insertText("module.exports = async function () { throw new Error('no card'); };");
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    await page.getByRole('button', { name: 'Run' }).click();
    await page.getByText(/Error: 422/).waitFor();
    assert.match(await page.getByTestId('run-result').innerText(), /no card/);
    await shot(page, 'reactor-run');
  });

  it('creates a proxy to a local echo server and tries it', async () => {
    const { page } = owner;
    await go(page, 'proxies/new');
    await page.getByLabel('Name', { exact: true }).fill('Echo');
    await page.getByLabel('Destination URL').fill(`${echoUrl}/v1`);
    await page.getByRole('button', { name: 'Create proxy' }).click();
    await page.getByRole('heading', { name: 'Echo' }).waitFor();
    await page.getByLabel('Path').fill('/charges');
    await page.getByLabel('Body').fill(JSON.stringify({ card: `{{ ${tokenId} }}` }));
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByTestId('try-result').waitFor();
    assert.match(await page.getByTestId('try-result').locator('.status-line').innerText(), /Status: 200/);
    const body = JSON.parse(await page.getByTestId('try-body').innerText());
    assert.equal(body.url, '/v1/charges');
    assert.equal(body.method, 'POST');
    assert.doesNotMatch(body.body, /4111111111111111/);
    // Coffer's own cookies and CSRF token never reach the destination.
    assert.equal(body.cookie, null);
    assert.equal(body.csrf, null);
    assert.ok(echoed.every((e) => !JSON.stringify(e.headers).includes('coffer_')));
    await shot(page, 'proxy-try');
  });

  it('shows the webhook\'s deliveries, and the payments pages', async () => {
    const { page } = owner;
    await go(page, 'webhooks');
    await page.getByRole('link', { name: 'Events' }).click();
    // The token made above was delivered to the echo server.
    await until(async () => {
      await page.reload();
      return (await page.getByRole('cell', { name: 'token.created' }).count()) > 0;
    }, 'a delivery of token.created', 20_000);
    await shot(page, 'webhook-deliveries');
    await go(page, 'transactions');
    await page.getByText('No transactions').waitFor();
    await shot(page, 'transactions');
    await go(page, 'lookup');
    await page.getByLabel('Token intent ID').fill('0194b1e2-0000-7000-8000-000000000000');
    await page.getByRole('button', { name: 'Look up' }).nth(1).click();
    await page.getByText(/Not Found \(404\)/).waitFor();
    await shot(page, 'lookup');
  });

  it('invites a READ_ONLY member and reads the logs', async () => {
    const { page } = owner;
    await go(page, 'members');
    await page.getByLabel('E-mail address').fill('reader@example.com');
    await page.getByLabel('Role').selectOption('READ_ONLY');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText('Invitation sent to reader@example.com.').waitFor();
    await page.getByRole('cell', { name: 'reader@example.com' }).waitFor();
    await shot(page, 'members');

    await go(page, 'logs');
    await page.getByLabel('Entity type').selectOption('token');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('cell', { name: 'reveal', exact: true }).waitFor();
    await shot(page, 'logs');
    await fitsTheScreen(page);

    // The owner's forms on a phone's width too.
    await page.setViewportSize({ width: 390, height: 844 });
    await go(page, 'applications/new');
    await page.getByRole('button', { name: 'Add a rule' }).click();
    await page.getByRole('button', { name: 'Add a condition' }).click();
    await fitsTheScreen(page);
    await shot(page, 'phone-application-form');
    await go(page, 'proxies');
    await page.getByRole('link', { name: 'Echo' }).click();
    await page.getByRole('button', { name: 'Send' }).waitFor();
    await fitsTheScreen(page);
    await shot(page, 'phone-proxy');
    await page.setViewportSize({ width: 1280, height: 800 });
    assert.deepEqual(problems, []);
  });

  it('switches tenants for an owner who is a member of another one too', async () => {
    const { page } = owner;
    const other = await createOtherTenant(server);
    const before = smtp.received.length;
    const invited = await call(server, 'POST', '/tenants/self/invitations', { key: other.api_key, body: { email: OWNER } });
    assert.equal(invited.status, 201, invited.text);
    await page.goto(await mailLink(OWNER, '/invitations/accept', before));
    await page.getByLabel('First name').fill('Olive');
    await page.getByLabel('Last name').fill('Owner');
    await page.getByRole('button', { name: 'Accept and join' }).click();
    await page.locator('#open-console').click();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    // Accepting signed the owner in to the other tenant, as ADMIN there.
    assert.match(await page.locator('.topbar').innerText(), /ADMIN/);
    await page.getByLabel('Tenant').selectOption({ label: 'Default (OWNER)' });
    await page.locator('.topbar .role', { hasText: 'OWNER' }).waitFor();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    assert.match(await page.locator('main').innerText(), /signed in to Default as OWNER/);
    // Nothing loaded for the other tenant stays on the page: its one application was the "start here" case.
    assert.equal(await page.getByText('Start here').count(), 0);
    await shot(page, 'tenant-switched');
    await go(page, 'tokens');
    await page.getByRole('link', { name: tokenId }).waitFor();
    assert.deepEqual(problems, []);
  });

  it('shows a READ_ONLY member, on a phone, nothing to change and refuses a reveal', async () => {
    const reader = await open({ width: 390, height: 844 }, true);
    const { page } = reader;
    await page.goto(await mailLink('reader@example.com', '/invitations/accept'));
    await page.getByLabel('First name').fill('Rea');
    await page.getByLabel('Last name').fill('Der');
    await page.getByRole('button', { name: 'Accept and join' }).click();
    await page.locator('#open-console').click();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    await fitsTheScreen(page);
    await shot(page, 'phone-overview');
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('link', { name: 'Applications', exact: true }).waitFor();
    await shot(page, 'phone-menu');
    await page.getByRole('link', { name: 'Applications', exact: true }).click();
    await page.getByRole('link', { name: 'Checkout back end' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'New application' }).count(), 0);
    await fitsTheScreen(page);
    await shot(page, 'phone-applications');

    await go(page, `tokens/${tokenId}`);
    await page.getByText('Data (masked)').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Reveal data' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Delete' }).count(), 0);
    assert.doesNotMatch(await page.getByTestId('token-data').innerText(), /4111111111111111/);
    await fitsTheScreen(page);
    await shot(page, 'phone-token');
    // Asked anyway, with the member's session: the API refuses it.
    // Evaluated in the page (a string: the test's own code has no DOM types).
    const status = (await page.evaluate(`(async () => {
      const csrf = decodeURIComponent(/coffer_csrf=([^;]*)/.exec(document.cookie)?.[1] ?? '');
      return (await fetch('../tokens/${tokenId}?reveal=true', { headers: { 'x-csrf-token': csrf } })).status;
    })()`)) as number;
    assert.equal(status, 403);

    await go(page, 'reactors');
    await page.getByRole('link', { name: 'Greeter' }).click();
    await page.getByTestId('editor-reactor-code').locator('.cm-content').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Save' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Run' }).count(), 0);
    await fitsTheScreen(page);
    await shot(page, 'phone-reactor');

    await go(page, 'members');
    await page.getByRole('cell', { name: OWNER }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Send invitation' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Remove' }).count(), 0);
    await shot(page, 'phone-members');
    await fitsTheScreen(page);

    // Signing out ends the session: the sign-in page again.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await reader.context.close();
    await owner.context.close();
    assert.deepEqual(problems, []);
  });
});
