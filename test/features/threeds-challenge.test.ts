import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../helpers/http.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import {
  authenticate, cardToken, createSession, creqFor, field, merchantBody, paymentBody, postForm, runChallenge, testCode, threedsKey,
} from './threeds-helpers.ts';

/**
 * The challenge paths over HTTP (the test ACS's pages, no browser): wrong codes, cancels, what a
 * mandated challenge refuses, CReqs that match nothing; the decoupled challenge completed by the
 * job; the Method page; and the six 3ds.session.* events, delivered as webhooks.
 */

const CHALLENGE = '4000020000000000';
const MANDATED = '4761369980320253';
const OUT_OF_BAND = '4000000000000341';
const DECOUPLED = '4000000000000440';
const EVENTS = [
  '3ds.session.created', '3ds.session.method-completed', '3ds.session.authenticated', '3ds.session.challenge-completed',
  '3ds.session.decoupled-challenge-notification', '3ds.session.challenge-result-retrieved',
];

describe('3DS challenges', () => {
  let server: TestServer;
  let receiver: Receiver;
  let key: string;

  before(async () => {
    receiver = await startReceiver();
    server = await startTestServer({ OUTBOUND_ALLOWLIST: '127.0.0.1', JOB_POLL_MS: '20', THREEDS_DECOUPLED_DELAY_MS: '300' });
    key = await threedsKey(server);
    const hook = await call(server, 'POST', '/webhooks', { key: server.key, body: { name: '3ds', url: receiver.url('/3ds'), events: EVENTS } });
    assert.equal(hook.status, 201, hook.text);
    rememberSecret(hook.body.secret);
  });
  after(async () => {
    await server?.stop();
    await receiver?.close();
  });

  async function challenged(pan: string, body = paymentBody()) {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, pan) });
    const res = await authenticate(server, key, created.id, body);
    assert.equal(res.status, 200, res.text);
    return { id: created.id as string, ares: res.body };
  }

  const result = async (id: string) => (await call(server, 'GET', `/3ds/sessions/${id}/challenge-result`, { key })).body;

  it('fails the challenge after three wrong codes, counting them on the page and in the session', async () => {
    const { id, ares } = await challenged(CHALLENGE);
    const first = await runChallenge(ares, id, ['000000x']);
    assert.match(first.last, /not right/);
    assert.match(first.last, /2 attempts left/);
    assert.equal((await call(server, 'GET', `/3ds/sessions/${id}`, { key })).body.authentication.challenge_attempts, '1');
    // The page keeps its code across attempts; the next two are wrong too.
    const creq = creqFor(id, ares.acs_transaction_id);
    await postForm(ares.acs_challenge_url, { creq, action: 'submit', code: '11111' });
    const third = await postForm(ares.acs_challenge_url, { creq, action: 'submit', code: '22222' });
    const cres = field(third.html, 'cres');
    assert.ok(cres, third.html);
    const notified = await postForm(`${server.url}/3ds/sessions/${id}/challenge-notification`, { cres: cres! });
    assert.match(notified.html, /data-status="failed"/);
    const r = await result(id);
    assert.equal(r.authentication_status, 'failed');
    assert.equal(r.authentication_status_reason, 'exceeds-acs-maximum-challenges');
    assert.equal(r.challenge_attempts, '3');
    // Settled: the right code now changes nothing.
    const late = await postForm(ares.acs_challenge_url, { creq, action: 'submit', code: '123456' });
    assert.ok(field(late.html, 'cres'), 'the completed page again');
    assert.equal((await result(id)).authentication_status, 'failed');
  });

  it('takes a wrong code and then the right one', async () => {
    const { id, ares } = await challenged(CHALLENGE);
    const { notification } = await runChallenge(ares, id, ['999999x', 'right']);
    assert.match(notification ?? '', /data-status="successful"/);
    const r = await result(id);
    assert.equal(r.authentication_status, 'successful');
    assert.equal(r.challenge_attempts, '2');
  });

  it('records a cancel as challenge_cancel_reason; a mandated challenge offers none and refuses one', async () => {
    const { id, ares } = await challenged(CHALLENGE);
    const { notification } = await runChallenge(ares, id, ['cancel']);
    assert.match(notification ?? '', /data-status="failed"/);
    const r = await result(id);
    assert.equal(r.challenge_cancel_reason, 'cardholder-cancelled');
    assert.equal(r.challenge_cancel_reason_code, '01');
    assert.equal(r.authentication_status_reason, 'authentication-attempted-not-performed');

    const mandated = await challenged(MANDATED);
    assert.equal(mandated.ares.acs_challenge_mandated, 'Y');
    const creq = creqFor(mandated.id, mandated.ares.acs_transaction_id);
    const page = await postForm(mandated.ares.acs_challenge_url, { creq });
    assert.doesNotMatch(page.html, /value="cancel"/);
    const refused = await postForm(mandated.ares.acs_challenge_url, { creq, action: 'cancel' });
    assert.match(refused.html, /cannot be cancelled/);
    assert.equal((await call(server, 'GET', `/3ds/sessions/${mandated.id}/challenge-result`, { key })).status, 409);
    const done = await runChallenge(mandated.ares, mandated.id, ['right']);
    assert.match(done.notification ?? '', /data-status="successful"/);
  });

  it('out of band: an approval completes it, a code does not', async () => {
    const { id, ares } = await challenged(OUT_OF_BAND);
    const creq = creqFor(id, ares.acs_transaction_id);
    const page = await postForm(ares.acs_challenge_url, { creq });
    assert.match(page.html, /banking app/);
    assert.doesNotMatch(page.html, /test-code/);
    const code = await postForm(ares.acs_challenge_url, { creq, action: 'submit', code: '123456' });
    assert.match(code.html, /not how this authentication is completed/);
    const { notification } = await runChallenge(ares, id, ['approve']);
    assert.match(notification ?? '', /data-status="successful"/);
  });

  it('refuses CReqs and CRes that match no challenge', async () => {
    const { id, ares } = await challenged(CHALLENGE);
    const url = ares.acs_challenge_url as string;
    assert.equal((await postForm(url, { creq: 'not a creq' })).status, 400);
    assert.equal((await postForm(url, { creq: creqFor(id, crypto.randomUUID()) })).status, 404, 'another ACS transaction');
    assert.equal((await postForm(url, { creq: creqFor(crypto.randomUUID(), ares.acs_transaction_id) })).status, 404, 'another session');
    assert.equal((await postForm(url, {})).status, 400);
    const creq = creqFor(id, ares.acs_transaction_id);
    assert.equal((await postForm(url, { creq, action: 'explode' })).status, 400);
    assert.equal((await postForm(url, { creq, action: 'submit' })).status, 400, 'a submit without a code');
    const page = await postForm(url, { creq });
    assert.equal(page.headers.get('content-security-policy'), "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; base-uri 'none'");
    assert.doesNotMatch(page.html, /<script>/, 'no inline script');
    assert.match(page.html, new RegExp(`id="test-code">${testCode(page.html)}<`));
    // A CRes before completion, or of another transaction, is no completion.
    const early = Buffer.from(JSON.stringify({ messageType: 'CRes', threeDSServerTransID: id, acsTransID: ares.acs_transaction_id, transStatus: 'Y' })).toString('base64url');
    assert.equal((await postForm(`${server.url}/3ds/sessions/${id}/challenge-notification`, { cres: early })).status, 404);
    assert.equal((await postForm(`${server.url}/3ds/sessions/${id}/challenge-notification`, { cres: '%%%' })).status, 400);
    // A frictionless session has no challenge to open.
    const plain = await createSession(server, key, { token_id: await cardToken(server, key, '4242424242424242') });
    const frictionless = (await authenticate(server, key, plain.id)).body;
    assert.equal((await postForm(url, { creq: creqFor(plain.id, frictionless.acs_transaction_id) })).status, 404);
  });

  it('completes a decoupled challenge with the job, after the configured delay', async () => {
    const { id, ares } = await challenged(DECOUPLED, paymentBody({ request_decoupled_challenge: true, decoupled_challenge_max_time: 5 }));
    assert.equal(ares.authentication_status, 'decoupled_challenge');
    assert.equal(ares.authentication_challenge_type, 'decoupled');
    assert.equal(ares.acs_challenge_url, undefined);
    assert.equal((await call(server, 'GET', `/3ds/sessions/${id}/challenge-result`, { key })).status, 409);
    const r = await until(async () => {
      const res = await call(server, 'GET', `/3ds/sessions/${id}/challenge-result`, { key });
      return res.status === 200 && res.body;
    }, 'the decoupled challenge completed', 10_000);
    assert.equal(r.authentication_status, 'successful');
    assert.equal(r.directory_status_code, 'D');
    assert.match(r.authentication_value, /^[A-Za-z0-9+/]{27}=$/);

    // Without request_decoupled_challenge the issuer may not decouple: unavailable at once.
    const refused = await challenged(DECOUPLED);
    assert.equal(refused.ares.authentication_status, 'unavailable');
    assert.equal(refused.ares.authentication_status_reason, 'decoupled-authentication-not-requested');
  });

  it('decouples a challenge card in a merchant session, with the verdict of its row', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, '4055011111111111'), type: 'merchant', device: undefined, device_info: undefined });
    const res = await authenticate(server, key, created.id, merchantBody());
    assert.equal(res.body.authentication_status, 'decoupled_challenge');
    const r = await until(async () => {
      const got = await call(server, 'GET', `/3ds/sessions/${created.id}/challenge-result`, { key });
      return got.status === 200 && got.body;
    }, 'the merchant session\'s decoupled challenge', 10_000);
    assert.equal(r.authentication_status, 'failed');
  });

  it('serves the Method page, which reports only to the session\'s own notification URL', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, CHALLENGE) });
    const data = (url: string, id = created.id) => Buffer.from(JSON.stringify({ threeDSServerTransID: id, threeDSMethodNotificationURL: url })).toString('base64url');
    const own = data(created.method_notification_url);
    for (const page of [
      await postForm(created.method_url, { threeDSMethodData: own }),
      await (async () => {
        const res = await fetch(`${created.method_url}?threeDSMethodData=${own}`);
        return { status: res.status, html: await res.text(), headers: res.headers };
      })(),
    ]) {
      assert.equal(page.status, 200, page.html);
      assert.match(page.html, new RegExp(`<form method="post" action="${created.method_notification_url}" data-autosubmit>`));
      assert.match(page.html, new RegExp(`<script src="${server.url}/3ds/pages.js"></script>`));
      const completion = JSON.parse(Buffer.from(field(page.html, 'threeDSMethodData')!, 'base64url').toString());
      assert.deepEqual(completion, { threeDSServerTransID: created.id });
    }
    assert.equal((await postForm(created.method_url, { threeDSMethodData: data('https://elsewhere.example/notify') })).status, 400);
    assert.equal((await postForm(created.method_url, { threeDSMethodData: data(created.method_notification_url.replace(created.id, crypto.randomUUID())) })).status, 400);
    assert.equal((await postForm(created.method_url, { threeDSMethodData: 'x' })).status, 400);
    const script = await fetch(`${server.url}/3ds/pages.js`);
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.match(await script.text(), /postMessage/);
  });

  it('sends the six 3ds.session.* events as webhooks', async () => {
    const created = await createSession(server, key, { token_id: await cardToken(server, key, CHALLENGE) });
    await postForm(created.method_notification_url, { threeDSMethodData: Buffer.from(JSON.stringify({ threeDSServerTransID: created.id })).toString('base64url') });
    const ares = (await authenticate(server, key, created.id)).body;
    await runChallenge(ares, created.id, ['right']);
    await call(server, 'GET', `/3ds/sessions/${created.id}/challenge-result`, { key });
    const seen = await until(() => {
      const events = receiver.at('/3ds').map((r) => JSON.parse(r.body)).filter((e) => e.data.id === created.id);
      return events.length >= 5 && events;
    }, 'five events of the session');
    const byType = new Map(seen.map((e) => [e.type, e.data]));
    assert.deepEqual(byType.get('3ds.session.created'), { id: created.id, type: 'customer', card_brand: 'visa' });
    assert.deepEqual(byType.get('3ds.session.method-completed'), { id: created.id, method_completion_indicator: 'Y' });
    assert.deepEqual(byType.get('3ds.session.authenticated'), { id: created.id, authentication_status: 'challenge' });
    assert.deepEqual(byType.get('3ds.session.challenge-completed'), { id: created.id, authentication_status: 'successful' });
    assert.deepEqual(byType.get('3ds.session.challenge-result-retrieved'), { id: created.id, authentication_status: 'successful' });
    const decoupled = await until(() => receiver.at('/3ds').map((r) => JSON.parse(r.body)).find((e) => e.type === '3ds.session.decoupled-challenge-notification'), 'a decoupled notification');
    assert.ok(['successful', 'failed'].includes(decoupled.data.authentication_status));
  });
});
