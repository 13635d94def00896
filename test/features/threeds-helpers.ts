import assert from 'node:assert/strict';
import { call, createApplication, type Response } from '../helpers/http.ts';
import { rememberSecret, type TestServer } from '../helpers/server.ts';

/**
 * What the 3DS API tests share: keys, request bodies, and the browser's part of a challenge
 * driven over plain HTTP (the CReq form post, the one-time code read off the test ACS's page,
 * the CRes handed to the notification page). test/features/threeds-browser.test.ts drives the
 * same pages in Chromium.
 */

export const YEAR = new Date().getUTCFullYear() + 2;

/** A private key that may do everything 3DS needs: create and use card tokens, and every 3ds permission. */
export async function threedsKey(server: TestServer, key = server.key): Promise<string> {
  const app = await createApplication(server, {
    name: '3ds merchant',
    type: 'private',
    permissions: ['3ds:session:create', '3ds:session:read', '3ds:session:authenticate', 'token-intent:create', 'token-intent:read'],
    rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use', 'token:delete'] }],
  }, key);
  return app.key;
}

export async function cardToken(server: TestServer, key: string, pan: string, type = 'card'): Promise<string> {
  rememberSecret(pan);
  const data: Record<string, unknown> = { number: pan, expiration_month: 12, expiration_year: YEAR };
  if (type === 'network_token') data.cryptogram = 'AgAAAAAABk4DWZ4C28yUQAAAAAA=';
  const res = await call(server, 'POST', '/tokens', { key, body: { type, data } });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

/** A browser device, as a web SDK collects it. */
export const BROWSER = {
  browser_accept_header: 'text/html,application/xhtml+xml',
  browser_ip_address: '203.0.113.7',
  browser_javascript_enabled: true,
  browser_java_enabled: false,
  browser_color_depth: '24',
  browser_screen_height: '1080',
  browser_screen_width: '1920',
  browser_tz: '-60',
  browser_user_agent: 'Mozilla/5.0 (X11; Linux x86_64)',
};

/** A payment authenticate body for a customer session. */
export function paymentBody(more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    authentication_category: 'payment',
    authentication_type: 'payment-transaction',
    purchase_info: { amount: '1999', currency: 'USD', exponent: '2', date: '20250131174502', transaction_type: 'purchase' },
    merchant_info: { mid: 'MID-1', acquirer_bin: '411111', name: 'Example Store', country_code: '840', category_code: '5999' },
    requestor_info: { id: 'requestor-1', name: 'Example Store', url: 'https://store.example' },
    cardholder_info: { name: 'Jane Doe', email: 'jane@example.com' },
    ...more,
  };
}

/** A merchant session's (3RI) body: a recurring payment, with the decoupled time the spec requires. */
export function merchantBody(more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    authentication_category: 'non-payment',
    authentication_type: 'add-card',
    decoupled_challenge_max_time: 10,
    requestor_info: { id: 'requestor-1', name: 'Example Store', url: 'https://store.example' },
    cardholder_info: { name: 'Jane Doe', email: 'jane@example.com' },
    ...more,
  };
}

export async function createSession(server: TestServer, key: string, body: Record<string, unknown>): Promise<any> {
  const res = await call(server, 'POST', '/3ds/sessions', { key, body: { type: 'customer', device: 'browser', device_info: BROWSER, ...body } });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

export async function authenticate(server: TestServer, key: string, id: string, body = paymentBody()): Promise<Response> {
  return call(server, 'POST', `/3ds/sessions/${id}/authenticate`, { key, body });
}

/** A form post, as a browser sends one; the page comes back as text. */
export async function postForm(url: string, fields: Record<string, string>): Promise<{ status: number; html: string; headers: Headers }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
  return { status: res.status, html: await res.text(), headers: res.headers };
}

/** The CReq a web SDK posts for a challenge (base64url JSON, no padding). */
export function creqFor(sessionId: string, acsTransactionId: string, version = '2.2.0'): string {
  return Buffer.from(JSON.stringify({ messageType: 'CReq', messageVersion: version, threeDSServerTransID: sessionId, acsTransID: acsTransactionId, challengeWindowSize: '03' })).toString('base64url');
}

/** The value of a hidden field (or a form's action) in a page. */
export function field(html: string, name: string): string | undefined {
  return new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1];
}

export function testCode(html: string): string {
  const code = /id="test-code">(\d+)</.exec(html)?.[1];
  assert.ok(code, `no test code on the page:\n${html}`);
  return code;
}

/**
 * The cardholder's part of a challenge over HTTP: open the ACS page with the CReq, do `steps`
 * (a code, `right` for the shown one, `approve` or `cancel`), and when the page posts the CRes,
 * post it to the notification page. Returns the last page and the notification page, if reached.
 */
export async function runChallenge(
  ares: { acs_challenge_url: string; acs_transaction_id: string },
  sessionId: string,
  steps: ('right' | 'approve' | 'cancel' | string)[],
): Promise<{ last: string; notification?: string }> {
  const creq = creqFor(sessionId, ares.acs_transaction_id);
  const first = await postForm(ares.acs_challenge_url, { creq });
  assert.equal(first.status, 200, first.html);
  let page = first.html;
  for (const step of steps) {
    const fields: Record<string, string> = { creq };
    if (step === 'approve' || step === 'cancel') fields.action = step;
    else Object.assign(fields, { action: 'submit', code: step === 'right' ? testCode(page) : step });
    const next = await postForm(ares.acs_challenge_url, fields);
    assert.equal(next.status, 200, next.html);
    page = next.html;
  }
  const cres = field(page, 'cres');
  if (!cres) return { last: page };
  const action = /<form method="post" action="([^"]+)" data-autosubmit>/.exec(page)?.[1];
  assert.equal(action, `${new URL(ares.acs_challenge_url).origin}/3ds/sessions/${sessionId}/challenge-notification`);
  const notification = await postForm(action!, { cres });
  assert.equal(notification.status, 200, notification.html);
  return { last: page, notification: notification.html };
}
