import assert from 'node:assert/strict';
import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { decryptEcv2, parseRootKeys } from '../../src/google-pay/index.ts';
import { rejectsGooglePay } from './helpers.ts';

/**
 * The static ECv2 vectors published with yoyowallet/google-pay-token-decryption (sealed by
 * Tink's test keys): proof that Coffer reads what Google's own code writes, not only what
 * our sealer writes. `now` is fixed: the vector's intermediate keys expire in July 2029.
 */
const vector = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures/yoyowallet-ecv2.json'), 'utf8'));
const NOW = Date.parse('2026-11-28T12:00:00Z');
const options = {
  rootKeys: parseRootKeys(JSON.stringify(vector.rootKeys), 'the fixture'),
  privateKeys: [createPrivateKey({ key: Buffer.from(vector.recipientPrivateKeyPkcs8, 'base64'), format: 'der', type: 'pkcs8' })],
  recipientId: vector.recipientId as string,
  now: NOW,
};

describe('the static ECv2 vector (yoyowallet/google-pay-token-decryption)', () => {
  it('decrypts to PAN 4111111111111111, 12/2026, PAN_ONLY for recipient someRecipient', async () => {
    assert.equal(options.recipientId, 'someRecipient');
    const payment = await decryptEcv2(vector.tokens.valid, options);
    assert.deepEqual(payment, {
      test: false,
      messageId: vector.decrypted.messageId,
      messageExpiration: '32506264800000',
      paymentMethod: 'CARD',
      details: { pan: '4111111111111111', expirationMonth: 12, expirationYear: 2026, authMethod: 'PAN_ONLY' },
    });
  });

  it('takes the token as its JSON text too', async () => {
    assert.equal((await decryptEcv2(JSON.stringify(vector.tokens.valid), options)).details.pan, '4111111111111111');
  });

  it('is bound to its recipient id', async () => {
    await rejectsGooglePay(() => decryptEcv2(vector.tokens.valid, { ...options, recipientId: 'gateway:coffer' }), 'bad_message_signature', 'google_payment_method_token.signature');
  });

  it('one verifying signature among several is enough; none is bad_intermediate_signature', async () => {
    const valid = vector.tokens.valid;
    const withJunk = { ...valid, intermediateSigningKey: { ...valid.intermediateSigningKey, signatures: ['invalid-signature', ...valid.intermediateSigningKey.signatures] } };
    assert.equal((await decryptEcv2(withJunk, options)).details.pan, '4111111111111111');
    const junkOnly = { ...valid, intermediateSigningKey: { ...valid.intermediateSigningKey, signatures: ['invalid-signature'] } };
    await rejectsGooglePay(() => decryptEcv2(junkOnly, options), 'bad_intermediate_signature', 'google_payment_method_token.intermediateSigningKey.signatures');
  });

  it('after the intermediate key expires (2029-07-22), it is refused', async () => {
    await rejectsGooglePay(() => decryptEcv2(vector.tokens.valid, { ...options, now: Date.parse('2029-07-23T00:00:00Z') }), 'expired_intermediate_key');
  });

  it('its expired-key, expired-message, bad-tag and non-JSON variants fail with their codes', async () => {
    const secrets = ['4111111111111111'];
    await rejectsGooglePay(() => decryptEcv2(vector.tokens.expiredIntermediateKey, options), 'expired_intermediate_key', 'google_payment_method_token.intermediateSigningKey.signedKey');
    await rejectsGooglePay(() => decryptEcv2(vector.tokens.expiredMessage, options), 'expired_message', 'google_payment_method_token.signedMessage', secrets);
    await rejectsGooglePay(() => decryptEcv2(vector.tokens.badTag, options), 'tag_mismatch', 'google_payment_method_token.signedMessage');
    const notJson = await rejectsGooglePay(() => decryptEcv2(vector.tokens.plaintextNotJson, options), 'malformed_payload', 'google_payment_method_token.signedMessage');
    assert.ok(!notJson.message.includes('plaintext'), 'the decrypted text is not repeated');
  });
});
