import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  assertGatewayMerchant, createGooglePayDecryptor, decodeTestToken, googlePayApiError, type GooglePaySettings, isTestToken, readGooglePaySettings,
} from '../../src/google-pay/index.ts';
import { googlePayWorld, paymentPayload } from '../helpers/google-pay-seal.ts';
import { rejectsGooglePay, throwsGooglePay } from './helpers.ts';

const NOW = Date.parse('2026-11-28T12:00:00Z');
const T = 'google_payment_method_token';
const PAN = '4242424242424242';

function testToken(signature: string, message: unknown) {
  return { protocolVersion: 'Coffer', signature, intermediateSigningKey: { signedKey: 'placeholder', signatures: ['placeholder'] }, signedMessage: typeof message === 'string' ? message : JSON.stringify(message) };
}

describe('test-mode tokens (protocolVersion Coffer)', () => {
  it('card: a PAN_ONLY payment, with numbers or numeric strings', () => {
    for (const message of [{ number: PAN, expiration_month: 12, expiration_year: 2030 }, { number: PAN, expiration_month: '12', expiration_year: '2030' }]) {
      const payment = decodeTestToken(testToken('card', message), NOW);
      assert.equal(payment.test, true);
      assert.equal(payment.gatewayMerchantId, undefined);
      assert.match(payment.messageId, /^test-[0-9a-f-]{36}$/);
      assert.equal(payment.messageExpiration, String(NOW + 3_600_000));
      assert.equal(payment.paymentMethod, 'CARD');
      assert.deepEqual(payment.details, { pan: PAN, expirationMonth: 12, expirationYear: 2030, authMethod: 'PAN_ONLY' });
    }
  });

  it('network_token: CRYPTOGRAM_3DS with its cryptogram and eci_indicator (which may be left out)', () => {
    const payment = decodeTestToken(testToken('network_token', { number: PAN, expiration_month: 1, expiration_year: 2031, cryptogram: 'crypto==', eci_indicator: '07' }), NOW);
    assert.deepEqual(payment.details, { pan: PAN, expirationMonth: 1, expirationYear: 2031, authMethod: 'CRYPTOGRAM_3DS', cryptogram: 'crypto==', eciIndicator: '07' });
    const noEci = decodeTestToken(testToken('network_token', { number: PAN, expiration_month: 1, expiration_year: 2031, cryptogram: 'crypto==' }), NOW);
    assert.equal(noEci.details.eciIndicator, undefined);
  });

  it('placeholders in intermediateSigningKey are anything; the token may be JSON text', () => {
    const token = { ...testToken('card', { number: PAN, expiration_month: 3, expiration_year: 2030 }), intermediateSigningKey: 42 };
    assert.equal(decodeTestToken(JSON.stringify(token), NOW).details.pan, PAN);
    assert.equal(isTestToken(JSON.stringify(token)), true);
    assert.equal(isTestToken(token), true);
    assert.equal(isTestToken({ protocolVersion: 'ECv2' }), false);
    assert.equal(isTestToken('nope'), false);
  });

  it('refuses what is not a test-mode card, naming the field but never the number', () => {
    const good = { number: PAN, expiration_month: 12, expiration_year: 2030 };
    throwsGooglePay(() => decodeTestToken(testToken('apple', good), NOW), 'malformed_token', `${T}.signature`);
    throwsGooglePay(() => decodeTestToken({ ...testToken('card', good), extra: 1 }, NOW), 'malformed_token', `${T}.extra`);
    for (const message of [
      'not json',
      [],
      { ...good, number: '4242' },
      { ...good, number: 4242424242424242 },
      { ...good, expiration_month: 13 },
      { ...good, expiration_month: 'December' },
      { ...good, expiration_year: 30 },
    ]) {
      throwsGooglePay(() => decodeTestToken(testToken('card', message), NOW), 'malformed_token', `${T}.signedMessage`, [PAN]);
    }
    throwsGooglePay(() => decodeTestToken(testToken('network_token', good), NOW), 'malformed_token', `${T}.signedMessage`, [PAN]);
    throwsGooglePay(() => decodeTestToken(testToken('network_token', { ...good, cryptogram: 'c', eci_indicator: 7 }), NOW), 'malformed_token', `${T}.signedMessage`);
  });
});

describe('the decryptor a route uses', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-gpay-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const world = googlePayWorld('gateway:coffer');
  const keysFile = path.join(dir, 'keys.json');
  fs.writeFileSync(keysFile, world.rootKeys());
  const noFetch = { request: () => Promise.reject(new Error('no network in this test')) };

  function settings(env: Record<string, string>): GooglePaySettings {
    const problems: string[] = [];
    const read = readGooglePaySettings((name) => env[name], problems);
    assert.deepEqual(problems, []);
    return read;
  }

  it('reads real tokens with the configured keys and test-mode tokens, then leaves the merchant check to the caller', async () => {
    const decryptor = createGooglePayDecryptor({ settings: settings({ GOOGLE_PAY_PRIVATE_KEYS: world.privateKey, GOOGLE_PAY_ROOT_KEYS: keysFile }), outbound: noFetch });
    assert.equal(decryptor.recipientId, 'gateway:coffer');
    const tenantId = '0194d3b2-7c1e-7000-8000-000000000001';
    const real = await decryptor.decrypt(world.seal(paymentPayload({ gatewayMerchantId: tenantId })));
    assert.equal(real.details.pan, '4111111111111111');
    assertGatewayMerchant(real, tenantId);
    assertGatewayMerchant(real, tenantId.toUpperCase());
    const wrong = throwsGooglePay(() => assertGatewayMerchant(real, '0194d3b2-7c1e-7000-8000-000000000002'), 'wrong_merchant', `${T}.signedMessage`);
    assert.equal(googlePayApiError(wrong).status, 400);
    const anonymous = await decryptor.decrypt(world.seal(paymentPayload()));
    throwsGooglePay(() => assertGatewayMerchant(anonymous, tenantId), 'wrong_merchant');

    const fake = await decryptor.decrypt(testToken('card', { number: PAN, expiration_month: 12, expiration_year: 2030 }));
    assert.equal(fake.test, true);
    assertGatewayMerchant(fake, tenantId);
  });

  it('with GOOGLE_PAY_DECRYPT_THREADS=0 there are no threads: the same payment, read on the event loop; close is harmless', async () => {
    const inline = createGooglePayDecryptor({ settings: settings({ GOOGLE_PAY_PRIVATE_KEYS: world.privateKey, GOOGLE_PAY_ROOT_KEYS: keysFile, GOOGLE_PAY_DECRYPT_THREADS: '0' }), outbound: noFetch });
    const threaded = createGooglePayDecryptor({ settings: settings({ GOOGLE_PAY_PRIVATE_KEYS: world.privateKey, GOOGLE_PAY_ROOT_KEYS: keysFile, GOOGLE_PAY_DECRYPT_THREADS: '1' }), outbound: noFetch });
    try {
      assert.equal(inline.pool, undefined);
      assert.equal(threaded.pool?.size, 1);
      const token = world.seal(paymentPayload({ messageId: 'same' }));
      const now = Date.now();
      assert.deepEqual(await inline.decrypt(token, now), await threaded.decrypt(token, now));
      assert.equal(threaded.pool?.threads, 1);
    } finally {
      await inline.close();
      await threaded.close();
    }
    // Without a private key no real token can be read, so no thread is ever started.
    assert.equal(createGooglePayDecryptor({ settings: settings({ GOOGLE_PAY_DECRYPT_THREADS: '2' }), outbound: noFetch }).pool, undefined);
  });

  it('with test mode off, a test-mode token is refused', async () => {
    const decryptor = createGooglePayDecryptor({ settings: settings({ GOOGLE_PAY_TEST_MODE: 'off', GOOGLE_PAY_ROOT_KEYS: keysFile }), outbound: noFetch });
    const err = await rejectsGooglePay(() => decryptor.decrypt(testToken('card', { number: PAN, expiration_month: 12, expiration_year: 2030 })), 'test_mode_disabled', `${T}.protocolVersion`);
    assert.equal(googlePayApiError(err).status, 400);
  });

  it('without private keys, a real token is no_recipient_key (422) before any root key is fetched; a malformed one is still a 400', async () => {
    let fetches = 0;
    const counting = { request: () => { fetches++; return Promise.reject(new Error('unreachable')); } };
    const decryptor = createGooglePayDecryptor({ settings: settings({}), outbound: counting });
    const err = await rejectsGooglePay(() => decryptor.decrypt(world.seal(paymentPayload())), 'no_recipient_key');
    assert.equal(googlePayApiError(err).status, 422);
    await rejectsGooglePay(() => decryptor.decrypt({ protocolVersion: 'ECv1' }), 'unsupported_protocol');
    assert.equal(fetches, 0);
  });

  it('root keys that cannot be fetched answer 503 with Retry-After', async () => {
    const decryptor = createGooglePayDecryptor({ settings: settings({ GOOGLE_PAY_PRIVATE_KEYS: world.privateKey }), outbound: noFetch });
    const err = await rejectsGooglePay(() => decryptor.decrypt(world.seal(paymentPayload())), 'root_keys_unavailable');
    assert.match(err.message, /payments\.developers\.google\.com\/paymentmethodtoken\/test\/keys\.json/);
    const problem = googlePayApiError(err);
    assert.equal(problem.status, 503);
    assert.equal(problem.retryAfterSeconds, 60);
  });

  it('a problem names the field and leads with the code', async () => {
    const decryptor = createGooglePayDecryptor({ settings: settings({ GOOGLE_PAY_PRIVATE_KEYS: world.privateKey, GOOGLE_PAY_ROOT_KEYS: keysFile }), outbound: noFetch });
    const err = await rejectsGooglePay(() => decryptor.decrypt({ ...world.seal(paymentPayload()), protocolVersion: 'ECv1' }), 'unsupported_protocol');
    const problem = googlePayApiError(err);
    assert.equal(problem.status, 400);
    assert.match(problem.detail, /^unsupported_protocol: /);
    assert.deepEqual(Object.keys(problem.errors!), [`body.${T}.protocolVersion`]);
  });
});
