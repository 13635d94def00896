import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page, Request } from 'playwright-core';
import pkg from '../../package.json' with { type: 'json' };
import { launchChromium } from '../helpers/browser.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * /docs in a real browser (the machine's Chromium): it shows Coffer's name and version, asks
 * nothing of any origin but the server's, breaks no rule of its Content-Security-Policy, and a
 * key typed into its Authentication panel is sent as SVC-API-KEY by "Test Request".
 * COFFER_TEST_SCREENSHOTS=<dir> keeps the screenshots it takes (otherwise they are removed).
 */
describe('the API reference page in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let origin: string;
  const requests: Request[] = [];
  const problems: string[] = [];
  const shots = process.env.COFFER_TEST_SCREENSHOTS ?? fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-docs-shots-'));

  before(async () => {
    server = await startTestServer();
    origin = new URL(server.url).origin;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on('request', (r) => requests.push(r));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      // The one violation allowed is an evaluation of code, blocked: the bundled zod tries
      // `Function('')` once to learn whether it may compile validators, and does without.
      if (/Content.Security.Policy/i.test(m.text()) && !/violation: script-src eval$/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    // Violations are reported in the page too, also those of requests never made.
    // (Source text: this project's types know no DOM.)
    await page.addInitScript(
      "document.addEventListener('securitypolicyviolation', (e) => console.error(`Content-Security-Policy violation: ${e.violatedDirective} ${e.blockedURI}`))",
    );
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    if (!process.env.COFFER_TEST_SCREENSHOTS) fs.rmSync(shots, { recursive: true, force: true });
  });

  /** Every request the page made went to the server under test (data: and blob: URLs are the page's own). */
  function assertOnlyOwnOrigin() {
    const elsewhere = requests.map((r) => r.url()).filter((u) => !/^(data|blob):/.test(u) && new URL(u).origin !== origin);
    assert.deepEqual(elsewhere, [], 'requests to another origin');
    assert.deepEqual(problems, []);
  }

  it('shows Coffer, its version and how to authenticate, loading everything from the server', async () => {
    await page.goto(`${server.url}/docs`);
    assert.equal(new URL(page.url()).pathname, '/docs/');
    assert.equal(await page.title(), `Coffer ${pkg.version} · API reference`);
    const heading = page.getByRole('heading', { name: 'Coffer', exact: true });
    await heading.waitFor({ state: 'visible' });
    assert.ok(await page.getByText(`v${pkg.version}`, { exact: true }).first().isVisible(), 'the version is shown');
    assert.ok(await page.getByRole('heading', { name: 'Authentication', exact: true }).first().isVisible());
    // The Authentication panel presets the header: its name is there before any key is typed.
    await page.getByText('SVC-API-KEY', { exact: true }).first().waitFor({ state: 'visible' });
    assert.equal(await page.getByText(/Powered by/i).filter({ visible: true }).count(), 0, 'no "Powered by" line');
    await page.screenshot({ path: path.join(shots, 'docs.png') });
    assert.ok(fs.statSync(path.join(shots, 'docs.png')).size > 20_000, 'the screenshot shows a page, not a blank');
    assert.ok(requests.some((r) => r.url() === `${origin}/openapi.json`), 'the page reads /openapi.json');
    assertOnlyOwnOrigin();
  });

  it('sends the key typed in Authentication as SVC-API-KEY with Test Request', async () => {
    await page.getByLabel('Value', { exact: true }).first().fill(server.key);
    // Operations are drawn as they come into view: go there through the sidebar.
    const sidebar = page.locator('nav, aside');
    await sidebar.getByText('applications', { exact: true }).first().click();
    await sidebar.getByText('Get the application that owns the calling API key').first().click();
    await page.getByRole('button', { name: /Test Request.*\(get \/applications\/key\)/ }).click();
    const sent = page.waitForRequest((r) => r.url() === `${origin}/applications/key`);
    await page.getByRole('button', { name: /^Send/ }).first().click();
    const request = await sent;
    assert.equal(request.headers()['svc-api-key'], server.key);
    assert.equal((await request.response())?.status(), 200);
    // The answer is shown: it names the caller's tenant.
    await page.getByText(server.tenantId).first().waitFor({ state: 'visible' });
    await page.screenshot({ path: path.join(shots, 'docs-test-request.png') });
    assertOnlyOwnOrigin();
  });

  it('links to the guides, served by the same server', async () => {
    await page.goto(`${server.url}/docs/`);
    const link = page.getByRole('link', { name: 'Tokens, encryption at rest, key rotation' }).first();
    await link.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(shots, 'docs-guides.png') });
    await link.click();
    await page.waitForURL(`${origin}/docs/guides/vault`);
    await page.getByRole('heading', { name: 'Tokens and the vault', level: 1 }).waitFor({ state: 'visible' });
    await page.screenshot({ path: path.join(shots, 'guide.png') });
    // A link to another guide leads to where that guide is served, at its heading.
    await page.locator('a[href="expressions#limits"]').first().click();
    await page.waitForURL(`${origin}/docs/guides/expressions#limits`);
    assert.ok(await page.locator('h2#limits, h3#limits').first().isVisible(), 'the heading linked to is there');
    assertOnlyOwnOrigin();
  });
});
