import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { assertInvalid, assertNotFound } from '../helpers/problems.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { authenticate, BROWSER, cardToken, createSession, merchantBody, paymentBody, postForm, threedsKey, YEAR } from './threeds-helpers.ts';

/**
 * The 3DS session API: create (token, intent, deprecated pan), get, authenticate,
 * challenge-result; the Method notification; what each refuses; who may call what; the card
 * number nowhere in a response.
 */

const FRICTIONLESS = '5204247750001471';
const ATTEMPTED = '4111111111111111';
const NO_METHOD = '4005562231212123';
const CHALLENGE = '4000020000000000';

describe('3DS sessions', () => {
  let server: TestServer;
  let key: string;

  before(async () => {
    server = await startTestServer();
    key = await threedsKey(server);
  });
  after(() => server?.stop());

  it('creates a session for a card token: brand, DS, version, Method URL and Coffer\'s notification URL', async () => {
    const token = await cardToken(server, key, FRICTIONLESS);
    const created = await createSession(server, key, { token_id: token });
    assert.deepEqual(Object.keys(created).sort(), ['card_brand', 'directory_server_id', 'id', 'method_notification_url', 'method_url', 'recommended_version', 'type']);
    assert.equal(created.type, 'customer');
    assert.equal(created.card_brand, 'mastercard');
    assert.equal(created.directory_server_id, 'A000000004');
    assert.equal(created.recommended_version, '2.2.0');
    assert.equal(created.method_url, `${server.url}/3ds/acs/method`);
    assert.equal(created.method_notification_url, `${server.url}/3ds/sessions/${created.id}/method-notification`);

    const got = await call(server, 'GET', `/3ds/sessions/${created.id}`, { key });
    assert.equal(got.status, 200, got.text);
    const s = got.body;
    assert.equal(s.id, created.id);
    assert.equal(s.tenant_id, server.tenantId);
    assert.equal(s.token_id, token);
    assert.equal(s.token_intent_id, undefined);
    assert.equal(s.device, 'browser');
    assert.equal(s.device_info.browser_user_agent, BROWSER.browser_user_agent);
    assert.deepEqual(s.version.available_version, ['2.1.0', '2.2.0']);
    assert.deepEqual(s.method, { method_url: created.method_url });
    assert.equal(s.authentication, undefined);
    const lifetime = Date.parse(s.expiration_date) - Date.parse(s.created_date);
    assert.ok(Math.abs(lifetime - 30 * 60_000) < 2000, `a session lives 30 minutes: ${lifetime} ms`);
    assert.ok(!got.text.includes(FRICTIONLESS), 'no card number in the session');
  });

  it('authenticates frictionlessly: status, code, eci by brand, a 28-character authentication value; the result is kept', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, FRICTIONLESS) });
    const res = await authenticate(server, key, created.id);
    assert.equal(res.status, 200, res.text);
    const r = res.body;
    assert.equal(r.authentication_status, 'successful');
    assert.equal(r.authentication_status_code, 'Y');
    assert.equal(r.eci, '02', 'Mastercard\'s ECI for Y');
    assert.match(r.authentication_value, /^[A-Za-z0-9+/]{27}=$/);
    assert.equal(r.threeds_version, '2.2.0');
    assert.equal(r.liability_shifted, true);
    assert.equal(r.challenge_preference, 'no-preference');
    assert.equal(r.challenge_preference_code, '01');

    const got = (await call(server, 'GET', `/3ds/sessions/${created.id}`, { key })).body;
    assert.deepEqual(got.authentication, r);
    // Authenticate came before any Method notification: N.
    assert.equal(got.method.method_completion_indicator, 'N');
    assert.ok(got.modified_date);

    const again = await authenticate(server, key, created.id);
    assert.equal(again.status, 409, again.text);
    assert.match(again.body.detail, /authenticated already/);

    const result = await call(server, 'GET', `/3ds/sessions/${created.id}/challenge-result`, { key });
    assert.equal(result.status, 200, result.text);
    assert.deepEqual(result.body, r, 'a frictionless session\'s final result is its authentication');
  });

  it('records the 3DS Method: Y when its page reported before authenticate, U for the card without one', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, ATTEMPTED) });
    const completion = Buffer.from(JSON.stringify({ threeDSServerTransID: created.id })).toString('base64url');
    const notified = await postForm(created.method_notification_url, { threeDSMethodData: completion });
    assert.equal(notified.status, 200, notified.html);
    // Twice is once.
    assert.equal((await postForm(created.method_notification_url, { threeDSMethodData: completion })).status, 200);
    const before = (await call(server, 'GET', `/3ds/sessions/${created.id}`, { key })).body;
    assert.equal(before.method.method_completion_indicator, 'Y');
    const res = await authenticate(server, key, created.id);
    assert.equal(res.body.authentication_status, 'attempted');
    assert.equal(res.body.eci, '06');
    assert.equal((await call(server, 'GET', `/3ds/sessions/${created.id}`, { key })).body.method.method_completion_indicator, 'Y');

    const noMethod = await createSession(server, key, { token_id: await cardToken(server, key, NO_METHOD) });
    assert.equal(noMethod.method_url, undefined);
    assert.equal((await call(server, 'GET', `/3ds/sessions/${noMethod.id}`, { key })).body.method.method_completion_indicator, 'U');

    // Data of another session, or none that decodes: refused.
    const other = Buffer.from(JSON.stringify({ threeDSServerTransID: noMethod.id })).toString('base64url');
    assert.equal((await postForm(created.method_notification_url, { threeDSMethodData: other })).status, 400);
    assert.equal((await postForm(created.method_notification_url, { threeDSMethodData: '!!' })).status, 400);
    assert.equal((await postForm(`${server.url}/3ds/sessions/not-a-uuid/method-notification`, { threeDSMethodData: completion })).status, 400);
    const unknown = crypto.randomUUID();
    const forUnknown = Buffer.from(JSON.stringify({ threeDSServerTransID: unknown })).toString('base64url');
    assert.equal((await postForm(`${server.url}/3ds/sessions/${unknown}/method-notification`, { threeDSMethodData: forUnknown })).status, 404);
  });

  it('takes a card token intent (left in place) and a network token; refuses other types', async () => {
    const intent = await call(server, 'POST', '/token-intents', { key, body: { type: 'card', data: { number: FRICTIONLESS, expiration_month: 1, expiration_year: YEAR } } });
    assert.equal(intent.status, 201, intent.text);
    const created = await createSession(server, key, { token_intent_id: intent.body.id });
    assert.equal((await call(server, 'GET', `/3ds/sessions/${created.id}`, { key })).body.token_intent_id, intent.body.id);
    assert.equal((await authenticate(server, key, created.id)).body.authentication_status, 'successful');
    assert.equal((await call(server, 'GET', `/token-intents/${intent.body.id}`, { key })).status, 200, 'the intent is still there');

    const network = await createSession(server, key, { token_id: await cardToken(server, key, FRICTIONLESS, 'network_token') });
    assert.equal((await authenticate(server, key, network.id)).body.authentication_status, 'successful');

    const ssn = await call(server, 'POST', '/tokens', { key, body: { type: 'social_security_number', data: '123-45-6789' } });
    const refused = await call(server, 'POST', '/3ds/sessions', { key, body: { token_id: ssn.body.id, type: 'customer' } });
    assertInvalid(refused, 'body.token_id');
    const bank = await call(server, 'POST', '/token-intents', { key, body: { type: 'bank', data: { routing_number: '021000021', account_number: '00001' } } });
    assertInvalid(await call(server, 'POST', '/3ds/sessions', { key, body: { token_intent_id: bank.body.id, type: 'customer' } }), 'body.token_intent_id');
    assertNotFound(await call(server, 'POST', '/3ds/sessions', { key, body: { token_id: 'no-such-token', type: 'customer' } }));
    const gone = await call(server, 'POST', '/3ds/sessions', { key, body: { token_intent_id: crypto.randomUUID(), type: 'customer' } });
    assert.equal(gone.status, 404);
    assert.ok(gone.body.errors['body.token_intent_id']);
  });

  it('tokenizes the deprecated pan on the spot, as a card token named by pan_token_id', async () => {
    rememberSecret(CHALLENGE);
    const res = await call(server, 'POST', '/3ds/sessions', { key, body: { pan: CHALLENGE, type: 'customer' } });
    assert.equal(res.status, 201, res.text);
    assert.ok(!res.text.includes(CHALLENGE));
    const s = (await call(server, 'GET', `/3ds/sessions/${res.body.id}`, { key })).body;
    assert.ok(s.pan_token_id);
    assert.equal(s.token_id, undefined);
    const token = await call(server, 'GET', `/tokens/${s.pan_token_id}`, { key });
    assert.equal(token.body.type, 'card');
    assert.equal(token.body.data.number, CHALLENGE);
    assert.equal((await authenticate(server, key, res.body.id)).body.authentication_status, 'challenge');
    assertInvalid(await call(server, 'POST', '/3ds/sessions', { key, body: { pan: '4111111111111112', type: 'customer' } }), 'body.pan');
  });

  it('validates create and authenticate bodies whole, and looks the session up first', async () => {
    const res = await call(server, 'POST', '/3ds/sessions', { key, body: { type: 'nobody', device: 'browser', device_info: { browser_ip_address: 'nope' } } });
    assert.equal(res.status, 400, res.text);
    for (const f of ['body.type', 'body.token_id', 'body.device_info.browser_ip_address', 'body.device_info.browser_user_agent']) assert.ok(res.body.errors[f], `${f}: ${res.text}`);

    assertNotFound(await authenticate(server, key, crypto.randomUUID(), { nonsense: true }));
    assertInvalid(await call(server, 'POST', '/3ds/sessions/not-a-uuid/authenticate', { key, body: paymentBody() }), 'params.id');
    const created = await createSession(server, key, { token_id: await cardToken(server, key, FRICTIONLESS) });
    const bad = await authenticate(server, key, created.id, paymentBody({
      authentication_type: 'top-up',
      purchase_info: { amount: '10.00', currency: 'XYZ', exponent: '2', date: '20250230120000', transaction_type: 'purchase' },
      merchant_info: undefined,
    }));
    assert.equal(bad.status, 400, bad.text);
    for (const f of ['body.authentication_type', 'body.purchase_info.amount', 'body.purchase_info.currency', 'body.purchase_info.date', 'body.merchant_info']) {
      assert.ok(bad.body.errors[f], `${f}: ${bad.text}`);
    }
    // Nothing was stored: the session authenticates afterwards.
    assert.equal((await authenticate(server, key, created.id)).status, 200);
  });

  it('answers 409 for a result that is not there yet; expired sessions are 404', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, CHALLENGE) });
    const none = await call(server, 'GET', `/3ds/sessions/${created.id}/challenge-result`, { key });
    assert.equal(none.status, 409);
    assert.match(none.body.detail, /not been authenticated/);
    const ares = await authenticate(server, key, created.id);
    assert.equal(ares.body.authentication_status, 'challenge');
    const pending = await call(server, 'GET', `/3ds/sessions/${created.id}/challenge-result`, { key });
    assert.equal(pending.status, 409);
    assert.match(pending.body.detail, /challenge not completed/);

    const expiring = await createSession(server, key, { token_id: await cardToken(server, key, FRICTIONLESS) });
    await server.running.database.db.query(`UPDATE threeds_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [expiring.id]);
    assertNotFound(await authenticate(server, key, expiring.id));
    assertNotFound(await call(server, 'GET', `/3ds/sessions/${expiring.id}`, { key }));
    assert.equal(await server.running.services.threeds.sweepExpired(), 1);
  });

  it('a merchant session needs decoupled_challenge_max_time; its challenge cards decouple', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, FRICTIONLESS), type: 'merchant', device: undefined, device_info: undefined });
    assertInvalid(await authenticate(server, key, created.id, merchantBody({ decoupled_challenge_max_time: undefined })), 'body.decoupled_challenge_max_time');
    assertInvalid(await authenticate(server, key, created.id, paymentBody({ decoupled_challenge_max_time: 5 })), 'body.authentication_type');
    const res = await authenticate(server, key, created.id, merchantBody());
    assert.equal(res.body.authentication_status, 'successful');
  });

  it('reads the card again at authenticate as a use of its token: token:use (reveal) needed, a token gone is 422', async () => {
    const token = await cardToken(server, key, FRICTIONLESS);
    const created = await createSession(server, key, { token_id: token });
    const only3ds = await createApplication(server, { name: '3ds only', type: 'private', permissions: ['3ds:session:authenticate'] });
    assert.equal((await authenticate(server, only3ds.key, created.id)).status, 403);
    const masked = await createApplication(server, {
      name: 'masked use', type: 'private', permissions: ['3ds:session:authenticate', '3ds:session:create'],
      rules: [{ priority: 1, container: '/', transform: 'mask', permissions: ['token:use'] }],
    });
    assert.equal((await authenticate(server, masked.key, created.id)).status, 403);
    assert.equal((await call(server, 'POST', '/3ds/sessions', { key: masked.key, body: { token_id: token, type: 'customer' } })).status, 403);
    assert.equal((await call(server, 'DELETE', `/tokens/${token}`, { key })).status, 204);
    const gone = await authenticate(server, key, created.id);
    assert.equal(gone.status, 422, gone.text);
  });

  it('lets public keys create sessions from token intents and pans, not from tokens (no token:use)', async () => {
    const pub = await createApplication(server, {
      name: 'browser', type: 'public', permissions: ['3ds:session:create', 'token-intent:create'],
      rules: [{ priority: 1, container: '/pci/', transform: 'redact', permissions: ['token:create'] }],
    });
    const intent = await call(server, 'POST', '/token-intents', { key: pub.key, body: { type: 'card', data: { number: FRICTIONLESS, expiration_month: 1, expiration_year: YEAR } } });
    assert.equal(intent.status, 201, intent.text);
    const s = await call(server, 'POST', '/3ds/sessions', { key: pub.key, body: { token_intent_id: intent.body.id, type: 'customer' } });
    assert.equal(s.status, 201, s.text);
    assert.equal((await authenticate(server, key, s.body.id)).body.authentication_status, 'successful');
    const fromPan = await call(server, 'POST', '/3ds/sessions', { key: pub.key, body: { pan: FRICTIONLESS, type: 'customer' } });
    assert.equal(fromPan.status, 201, fromPan.text);
    const token = await cardToken(server, key, FRICTIONLESS);
    assert.equal((await call(server, 'POST', '/3ds/sessions', { key: pub.key, body: { token_id: token, type: 'customer' } })).status, 403);
  });

  it('audits each use of the card and each change of the session', async () => {
    const token = await cardToken(server, key, FRICTIONLESS);
    const created = await createSession(server, key, { token_id: token });
    await authenticate(server, key, created.id);
    const uses = (await call(server, 'GET', `/logs?entity_type=token&entity_id=${token}`, { key: server.key })).body.data.filter((e: any) => e.operation === 'use');
    assert.equal(uses.length, 2, 'read at create and at authenticate');
    assert.match(uses[0].message, /3DS authentication/);
    const changes = (await call(server, 'GET', `/logs?entity_type=3ds_session&entity_id=${created.id}`, { key: server.key })).body.data;
    assert.deepEqual(changes.map((e: any) => e.operation).sort(), ['authenticate', 'create']);
  });

  it('authenticates a session once when two authenticates come together', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, FRICTIONLESS) });
    const answers = await Promise.all(Array.from({ length: 4 }, () => authenticate(server, key, created.id)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409, 409, 409], answers.map((a) => a.text).join('\n'));
    const stored = (await call(server, 'GET', `/3ds/sessions/${created.id}`, { key })).body.authentication;
    assert.deepEqual(stored, answers.find((a) => a.status === 200)!.body);
    const logged = (await call(server, 'GET', `/logs?entity_type=3ds_session&entity_id=${created.id}`, { key: server.key })).body.data;
    assert.equal(logged.filter((e: any) => e.operation === 'authenticate').length, 1);
  });

  it('needs its permissions, and another tenant\'s sessions do not exist', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, FRICTIONLESS) });
    const body = { token_id: 'x', type: 'customer' };
    await assertAuthCases(server, { method: 'POST', path: '/3ds/sessions', permissions: ['3ds:session:create'], type: 'private', body });
    await assertAuthCases(server, { method: 'GET', path: `/3ds/sessions/${created.id}`, permissions: ['3ds:session:read'], type: 'private' });
    await assertAuthCases(server, { method: 'POST', path: `/3ds/sessions/${created.id}/authenticate`, permissions: ['3ds:session:authenticate'], type: 'private', body: paymentBody() });
    await assertAuthCases(server, { method: 'GET', path: `/3ds/sessions/${created.id}/challenge-result`, permissions: ['3ds:session:authenticate'], type: 'private' });

    const other = await createOtherTenant(server);
    const theirs = await threedsKey(server, other.api_key);
    assertNotFound(await call(server, 'GET', `/3ds/sessions/${created.id}`, { key: theirs }));
    assertNotFound(await authenticate(server, theirs, created.id));
    assertNotFound(await call(server, 'GET', `/3ds/sessions/${created.id}/challenge-result`, { key: theirs }));
    assert.equal((await call(server, 'GET', `/3ds/sessions/${created.id}`, { key })).body.authentication, undefined, 'untouched');
  });
});
