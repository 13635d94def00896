import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { GooglePayError } from '../../src/google-pay/index.ts';
import { encryptFor, p256KeyPair, paymentPayload } from '../helpers/google-pay-seal.ts';
import { CRYPTOGRAM, decrypt, fails, NOW, otherCurveKeys, PAN, seal, T, withSignedMessage, world } from './ecv2-setup.ts';

/** ECv2 on tokens our sealer makes: each way decryption and the payment refuse one (steps 6 to 8), and nothing but GooglePayErrors. */

describe('ECv2 steps 6 and 7: the keys, the tag, the decryption', () => {
  it('no private key configured', async () => {
    await fails(seal(), 'no_recipient_key', undefined, { privateKeys: [] });
  });

  it('sealed for another public key: tag_mismatch, with one key or several', async () => {
    await fails(seal(), 'tag_mismatch', `${T}.signedMessage`, { privateKeys: [p256KeyPair().privateKey] });
    await fails(seal(), 'tag_mismatch', `${T}.signedMessage`, { privateKeys: [p256KeyPair().privateKey, p256KeyPair().privateKey] });
  });

  it('keys of the wrong kind among the private keys are passed over, not thrown on', async () => {
    const { p384, rsa } = otherCurveKeys();
    const publicOnly = createPublicKey(world.recipient.privateKey);
    await fails(seal(), 'tag_mismatch', undefined, { privateKeys: [p384, rsa, publicOnly] });
    assert.equal((await decrypt(seal(), { privateKeys: [p384, rsa, publicOnly, world.recipient.privateKey] })).details.pan, PAN);
  });

  it('a tampered tag or ciphertext (signed again, so only the tag can tell)', async () => {
    const token = seal();
    const sealed = JSON.parse(token.signedMessage);
    const tag = Buffer.from(sealed.tag, 'base64');
    tag[0] ^= 1;
    await fails(withSignedMessage(token, JSON.stringify({ ...sealed, tag: tag.toString('base64') })), 'tag_mismatch', `${T}.signedMessage`);
    const ciphertext = Buffer.from(sealed.encryptedMessage, 'base64');
    ciphertext[ciphertext.length - 1] ^= 1;
    await fails(withSignedMessage(token, JSON.stringify({ ...sealed, encryptedMessage: ciphertext.toString('base64') })), 'tag_mismatch');
  });

  it('a signedMessage that is not the JSON ECv2 describes', async () => {
    const token = seal();
    const sealed = JSON.parse(token.signedMessage);
    const point = Buffer.from(sealed.ephemeralPublicKey, 'base64');
    const offCurve = Buffer.from(point);
    offCurve[64] ^= 1;
    const compressed = Buffer.concat([Buffer.from([2 + (point[64] & 1)]), point.subarray(1, 33)]);
    for (const message of [
      'not json',
      '[]',
      JSON.stringify({ ...sealed, extra: 1 }),
      JSON.stringify({ encryptedMessage: sealed.encryptedMessage, ephemeralPublicKey: sealed.ephemeralPublicKey }),
      JSON.stringify({ ...sealed, encryptedMessage: 5 }),
      JSON.stringify({ ...sealed, encryptedMessage: '%%%' }),
      JSON.stringify({ ...sealed, ephemeralPublicKey: offCurve.toString('base64') }),
      JSON.stringify({ ...sealed, ephemeralPublicKey: compressed.toString('base64') }),
      JSON.stringify({ ...sealed, ephemeralPublicKey: point.subarray(0, 64).toString('base64') }),
      JSON.stringify({ ...sealed, ephemeralPublicKey: Buffer.alloc(65).toString('base64') }),
      JSON.stringify({ ...sealed, tag: Buffer.alloc(16).toString('base64') }),
      JSON.stringify({ ...sealed, tag: 'not base64!' }),
    ]) {
      await fails(withSignedMessage(token, message), 'malformed_token', `${T}.signedMessage`);
    }
  });
});

describe('ECv2 step 8: the payment', () => {
  it('an expired message, also at exactly now', async () => {
    await fails(seal(paymentPayload({ now: NOW, messageExpiration: NOW - 1 })), 'expired_message', `${T}.signedMessage`);
    await fails(seal(paymentPayload({ now: NOW, messageExpiration: NOW })), 'expired_message');
    assert.equal((await decrypt(seal(paymentPayload({ now: NOW, messageExpiration: NOW + 1 })))).details.pan, PAN);
  });

  it('a payload that is not a card payment Coffer reads', async () => {
    const base = paymentPayload({ now: NOW });
    const details = base.paymentMethodDetails as Record<string, unknown>;
    const cases: unknown[] = [
      'plaintext',
      '[1,2]',
      { ...base, messageExpiration: undefined },
      { ...base, messageExpiration: 'tomorrow' },
      { ...base, messageId: undefined },
      { ...base, messageId: 7 },
      { ...base, gatewayMerchantId: 7 },
      { ...base, paymentMethod: 'TOKENIZED_CARD' },
      { ...base, paymentMethodDetails: 'card' },
      { ...base, paymentMethodDetails: { ...details, authMethod: 'OTHER' } },
      { ...base, paymentMethodDetails: { ...details, pan: 4111111111111111 } },
      { ...base, paymentMethodDetails: { ...details, pan: '4111-1111-1111-1111' } },
      { ...base, paymentMethodDetails: { ...details, pan: '41111111111' } },
      { ...base, paymentMethodDetails: { ...details, expirationMonth: 13 } },
      { ...base, paymentMethodDetails: { ...details, expirationMonth: 0 } },
      { ...base, paymentMethodDetails: { ...details, expirationYear: 26 } },
      { ...base, paymentMethodDetails: { ...details, expirationYear: 2030.5 } },
      { ...base, paymentMethodDetails: { ...details, authMethod: 'CRYPTOGRAM_3DS' } },
      { ...base, paymentMethodDetails: { ...details, authMethod: 'CRYPTOGRAM_3DS', cryptogram: CRYPTOGRAM, eciIndicator: 5 } },
    ];
    for (const payload of cases) {
      const err = await fails(seal(payload as Record<string, unknown>), 'malformed_payload', `${T}.signedMessage`);
      assert.ok(!err.message.includes('4111'), err.message);
    }
  });
});

describe('ECv2 never throws anything but a GooglePayError', () => {
  it('for any JSON value as the token', async () => {
    await fc.assert(fc.asyncProperty(fc.jsonValue(), async (value) => {
      await assert.rejects(() => decrypt(value), GooglePayError);
    }), { numRuns: 300 });
  });

  it('for any field of a real token replaced by any JSON value', async () => {
    const token = seal();
    const paths = ['protocolVersion', 'signature', 'signedMessage', 'intermediateSigningKey', 'intermediateSigningKey.signedKey', 'intermediateSigningKey.signatures'];
    await fc.assert(fc.asyncProperty(fc.constantFrom(...paths), fc.jsonValue(), async (path, value) => {
      const copy = structuredClone(token) as unknown as Record<string, Record<string, unknown>>;
      const [a, b] = path.split('.');
      if (b === undefined) (copy as Record<string, unknown>)[a] = value;
      else copy[a][b] = value;
      try {
        await decrypt(copy);
      } catch (err) {
        assert.ok(err instanceof GooglePayError, String(err));
      }
    }), { numRuns: 300 });
  });

  it('for a signedMessage made of any bytes, correctly signed', async () => {
    const token = seal();
    await fc.assert(fc.asyncProperty(fc.string(), async (text) => {
      await assert.rejects(() => decrypt(withSignedMessage(token, text)), GooglePayError);
    }), { numRuns: 100 });
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), async (bytes) => {
      const message = encryptFor(world.recipient.publicKey, Buffer.from(bytes));
      await assert.rejects(() => decrypt(withSignedMessage(token, message)), GooglePayError);
    }), { numRuns: 100 });
  });
});
