import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { googlePayWorld, paymentPayload } from '../helpers/google-pay-seal.ts';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { assertInvalid } from '../helpers/problems.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

const PAN = '4111111111111111';
const NT_PAN = '4242424242424242';
const CRYPTOGRAM = 'AgAAAAAABk4DWZ4C28yUQAAAAAA=';
rememberSecret(PAN, NT_PAN, CRYPTOGRAM);
const year = new Date().getUTCFullYear() + 3;
const T = 'body.google_payment_method_token';

/** A test-mode token, as the spec describes: protocolVersion `Coffer`, placeholders for the keys. */
function testToken(signature: string, message: unknown) {
  return { protocolVersion: 'Coffer', signature, intermediateSigningKey: { signedKey: 'x', signatures: ['x'] }, signedMessage: JSON.stringify(message) };
}

describe('POST /connections/google-pay/tokenize', () => {
  const world = googlePayWorld();
  rememberSecret(world.privateKey);
  let dir: string;
  let server: TestServer;
  let key: string;
  let reader: string;
  let tokens: string;

  const tokenize = (token: unknown, k = key) => call(server, 'POST', '/connections/google-pay/tokenize', { key: k, body: { google_payment_method_token: token } });
  const sealed = (o: Parameters<typeof paymentPayload>[0] = {}) => world.seal(paymentPayload({ gatewayMerchantId: server.tenantId, expirationYear: year, ...o }));
  const assertRefused = (res: Awaited<ReturnType<typeof tokenize>>, code: string, field: string) => {
    assertInvalid(res, field);
    assert.match(res.body.detail, new RegExp(`^${code}: `), res.text);
    for (const secret of [PAN, NT_PAN, CRYPTOGRAM]) assert.ok(!res.text.includes(secret), 'no plaintext in a refusal');
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-gpay-'));
    const keysFile = path.join(dir, 'keys.json');
    fs.writeFileSync(keysFile, world.rootKeys());
    server = await startTestServer({ GOOGLE_PAY_PRIVATE_KEYS: world.privateKey, GOOGLE_PAY_ROOT_KEYS: keysFile });
    key = (await createApplication(server, { name: 'checkout', type: 'public', permissions: ['token-intent:create'] })).key;
    reader = (await createApplication(server, { name: 'reader', type: 'private', permissions: ['token-intent:read'] })).key;
    tokens = (await createApplication(server, { name: 'tokens', type: 'private', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }] })).key;
  });
  after(async () => {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a PAN_ONLY token becomes a card intent with the TSP details, and then a token carrying them', async () => {
    const res = await tokenize(sealed({ pan: PAN, expirationMonth: 11 }));
    assert.equal(res.status, 201, res.text);
    const intent = res.body.token_intent;
    assert.equal(intent.type, 'card');
    assert.equal(intent.tenant_id, server.tenantId);
    assert.deepEqual(intent.card, { bin: '411111', last4: '1111', expiration_month: 11, expiration_year: year, brand: 'visa', funding: 'credit', authentication: 'sca_optional' });
    assert.equal(intent.authentication, null);
    assert.deepEqual(intent._extras, {
      tsp_details: {
        tsp: 'Google',
        auth_method: 'PAN_ONLY',
        message_id: 'AH2EjtfkY514K5lmPF4NOP9lMR5tPedsjQR719hIzI-test',
        eci_indicator: '',
        assurance_details: { account_verified: true, card_holder_authenticated: false },
      },
    });
    assert.ok(!res.text.includes(PAN));
    assert.equal((await call(server, 'GET', `/token-intents/${intent.id}`, { key: reader })).status, 200);

    const token = await call(server, 'POST', '/tokens', { key: tokens, body: { token_intent_id: intent.id } });
    assert.equal(token.status, 201, token.text);
    assert.deepEqual(token.body.data, { number: PAN, expiration_month: 11, expiration_year: year });
    assert.deepEqual(token.body._extras, intent._extras, 'the token carries tsp_details');
    const read = await call(server, 'GET', `/tokens/${token.body.id}`, { key: tokens });
    assert.deepEqual(read.body._extras, intent._extras);
  });

  it('a CRYPTOGRAM_3DS token becomes a network_token intent with its authentication', async () => {
    const res = await tokenize(sealed({ pan: NT_PAN, authMethod: 'CRYPTOGRAM_3DS', cryptogram: CRYPTOGRAM, eciIndicator: '05' }));
    assert.equal(res.status, 201, res.text);
    const intent = res.body.token_intent;
    assert.equal(intent.type, 'network_token');
    assert.equal(intent.card.last4, '4242');
    assert.deepEqual(intent.authentication, { threeds_cryptogram: CRYPTOGRAM, eci_indicator: '05' });
    assert.equal(intent._extras.tsp_details.auth_method, 'CRYPTOGRAM_3DS');
    assert.equal(intent._extras.tsp_details.eci_indicator, '05');
    assert.equal(intent._extras.tsp_details.assurance_details.card_holder_authenticated, true);
    const token = await call(server, 'POST', '/tokens', { key: tokens, body: { token_intent_id: intent.id } });
    assert.equal(token.body.type, 'network_token');
    assert.equal(token.body.data.cryptogram, CRYPTOGRAM);
  });

  it('the token may be sent as its JSON text', async () => {
    const res = await tokenize(JSON.stringify(sealed()));
    assert.equal(res.status, 201, res.text);
  });

  it('each failed check is a 400 that names it, never a 500', async () => {
    const good = sealed();
    assertRefused(await tokenize({ ...good, extra: 1 }), 'malformed_token', `${T}.extra`);
    assertRefused(await tokenize({ ...good, protocolVersion: 'ECv1' }), 'unsupported_protocol', `${T}.protocolVersion`);
    const stranger = googlePayWorld();
    const foreign = stranger.seal(paymentPayload({ gatewayMerchantId: server.tenantId }), { recipientPublicKey: world.recipient.publicKey });
    const bad = await tokenize(foreign);
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.body.detail, /^bad_intermediate_signature: /);
    assertRefused(await tokenize(world.seal(paymentPayload({ gatewayMerchantId: server.tenantId }), { intermediateExpiration: Date.now() - 1000 })), 'expired_intermediate_key', `${T}.intermediateSigningKey.signedKey`);
    const otherRecipient = googlePayWorld('gateway:someone-else');
    const forOther = world.seal(paymentPayload({ gatewayMerchantId: server.tenantId }), { recipientId: otherRecipient.recipientId });
    assert.match((await tokenize(forOther)).body.detail, /^bad_message_signature: /);
    const tampered = { ...good, signedMessage: good.signedMessage.replace(/"tag":"./, (m) => m.slice(0, -1) + (m.endsWith('A') ? 'B' : 'A')) };
    const tamperedRes = await tokenize(tampered);
    assert.equal(tamperedRes.status, 400, tamperedRes.text);
    assert.match(tamperedRes.body.detail, /^(bad_message_signature|tag_mismatch): /, 'a changed message fails its signature before its tag');
    assertRefused(await tokenize(sealed({ messageExpiration: Date.now() - 1000 })), 'expired_message', `${T}.signedMessage`);
    assertRefused(await tokenize(world.seal(paymentPayload({ gatewayMerchantId: '00000000-0000-4000-8000-000000000000' }))), 'wrong_merchant', `${T}.signedMessage`);
    assertRefused(await tokenize(world.seal(paymentPayload({}))), 'wrong_merchant', `${T}.signedMessage`);
    assertInvalid(await tokenize(sealed({ pan: '4111111111111112' })), `${T}.signedMessage.data.number`);
    assertInvalid(await call(server, 'POST', '/connections/google-pay/tokenize', { key, body: {} }), 'body.google_payment_method_token');
  });

  it('test mode: protocolVersion Coffer with a card or network_token message', async () => {
    const card = await tokenize(testToken('card', { number: PAN, expiration_month: '12', expiration_year: String(year) }));
    assert.equal(card.status, 201, card.text);
    assert.equal(card.body.token_intent.type, 'card');
    assert.equal(card.body.token_intent.card.expiration_year, year);
    assert.match(card.body.token_intent._extras.tsp_details.message_id, /^test-/);
    const nt = await tokenize(testToken('network_token', { number: NT_PAN, expiration_month: 1, expiration_year: year, cryptogram: CRYPTOGRAM, eci_indicator: '07' }));
    assert.equal(nt.status, 201, nt.text);
    assert.deepEqual(nt.body.token_intent.authentication, { threeds_cryptogram: CRYPTOGRAM, eci_indicator: '07' });
    assertRefused(await tokenize(testToken('wallet', { number: PAN })), 'malformed_token', `${T}.signature`);
  });

  it("a token for another tenant's merchant id is refused; each tenant's intents are its own", async () => {
    const other = await createOtherTenant(server);
    const theirKey = (await createApplication(server, { name: 'theirs', type: 'private', permissions: ['token-intent:create'] }, other.api_key)).key;
    assertRefused(await tokenize(sealed(), theirKey), 'wrong_merchant', `${T}.signedMessage`);
    const theirs = await tokenize(world.seal(paymentPayload({ gatewayMerchantId: other.tenant_id, expirationYear: year })), theirKey);
    assert.equal(theirs.status, 201, theirs.text);
    assert.equal(theirs.body.token_intent.tenant_id, other.tenant_id);
    assert.equal((await call(server, 'GET', `/token-intents/${theirs.body.token_intent.id}`, { key: reader })).status, 404);
  });

  it('needs token-intent:create', async () => {
    await assertAuthCases(server, { method: 'POST', path: '/connections/google-pay/tokenize', permissions: ['token-intent:create'], type: 'private', body: { google_payment_method_token: sealed() } });
  });
});

describe('Google Pay without a recipient key, and with test mode off', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer({ GOOGLE_PAY_TEST_MODE: 'off' });
    key = (await createApplication(server, { name: 'checkout', type: 'private', permissions: ['token-intent:create'] })).key;
  });
  after(() => server.stop());

  it('a real token is a 422 naming the missing setting; a test-mode token is refused', async () => {
    const world = googlePayWorld();
    const res = await call(server, 'POST', '/connections/google-pay/tokenize', { key, body: { google_payment_method_token: world.seal(paymentPayload({ gatewayMerchantId: server.tenantId })) } });
    assert.equal(res.status, 422, res.text);
    assert.match(res.body.detail, /^no_recipient_key: .*GOOGLE_PAY_PRIVATE_KEYS/);
    const test = await call(server, 'POST', '/connections/google-pay/tokenize', { key, body: { google_payment_method_token: testToken('card', { number: PAN, expiration_month: 12, expiration_year: year }) } });
    assertInvalid(test, `${T}.protocolVersion`);
    assert.match(test.body.detail, /^test_mode_disabled: /);
  });
});
