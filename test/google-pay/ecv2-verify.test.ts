import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, it } from 'node:test';
import { parseRootKeys, type RootKey } from '../../src/google-pay/index.ts';
import { p256KeyPair, paymentPayload, rootKeysJson, signedKeyFor, signIntermediate, signMessage } from '../helpers/google-pay-seal.ts';
import { CRYPTOGRAM, decrypt, fails, HOUR, NOW, PAN, root, seal, T, withSignedKey, world } from './ecv2-setup.ts';

/** ECv2 on tokens our sealer makes: the happy paths, then each way the shape and the signatures refuse one (steps 1 to 5). */

describe('ECv2 happy paths', () => {
  it('PAN_ONLY: the card and the gatewayMerchantId the route checks', () => {
    const payment = decrypt(seal());
    assert.deepEqual(payment, {
      test: false,
      gatewayMerchantId: 'tenant-1',
      messageId: 'AH2EjtfkY514K5lmPF4NOP9lMR5tPedsjQR719hIzI-test',
      messageExpiration: String(NOW + HOUR),
      paymentMethod: 'CARD',
      details: { pan: PAN, expirationMonth: 12, expirationYear: 2030, authMethod: 'PAN_ONLY' },
    });
  });

  it('CRYPTOGRAM_3DS with an eciIndicator, and without one', () => {
    const withEci = decrypt(seal(paymentPayload({ now: NOW, authMethod: 'CRYPTOGRAM_3DS', eciIndicator: '05' })));
    assert.deepEqual(withEci.details, { pan: PAN, expirationMonth: 12, expirationYear: 2030, authMethod: 'CRYPTOGRAM_3DS', cryptogram: CRYPTOGRAM, eciIndicator: '05' });
    const without = decrypt(seal(paymentPayload({ now: NOW, authMethod: 'CRYPTOGRAM_3DS' })));
    assert.deepEqual(without.details, { pan: PAN, expirationMonth: 12, expirationYear: 2030, authMethod: 'CRYPTOGRAM_3DS', cryptogram: CRYPTOGRAM });
  });

  it('fields Coffer does not use are ignored; a PAN_ONLY cryptogram is not returned', () => {
    const payload = paymentPayload({ now: NOW });
    (payload.paymentMethodDetails as Record<string, unknown>).cryptogram = 'unused';
    payload.somethingNew = { nested: true };
    assert.deepEqual(Object.keys(decrypt(seal(payload)).details), ['pan', 'expirationMonth', 'expirationYear', 'authMethod']);
  });

  it('with several private keys, each is tried: a key rotated in second still opens its tokens', () => {
    const other = p256KeyPair().privateKey;
    assert.equal(decrypt(seal(), { privateKeys: [other, world.recipient.privateKey] }).details.pan, PAN);
    assert.equal(decrypt(seal(), { privateKeys: [world.recipient.privateKey, other] }).details.pan, PAN);
  });

  it('any one of several signatures, under any one of several root keys, is enough', () => {
    const token = seal();
    const stranger = p256KeyPair().privateKey;
    const signedKey = token.intermediateSigningKey.signedKey;
    const several = { ...token, intermediateSigningKey: { signedKey, signatures: [signIntermediate(stranger, signedKey), ...token.intermediateSigningKey.signatures] } };
    assert.equal(decrypt(several).details.pan, PAN);
    const otherRoot: RootKey = { ...root, key: p256KeyPair().publicKey };
    assert.equal(decrypt(token, { rootKeys: [otherRoot, root] }).details.pan, PAN);
  });

  it('the token may come as JSON text', () => {
    assert.equal(decrypt(JSON.stringify(seal())).details.pan, PAN);
  });
});

describe('ECv2 step 1: the shape', () => {
  it('not an object', () => {
    for (const token of [null, undefined, 42, [], 'not json', '[1]', true]) fails(token, 'malformed_token', T);
  });

  it('an extra or missing top-level key', () => {
    fails({ ...seal(), extra: 1 }, 'malformed_token', `${T}.extra`);
    for (const key of ['signature', 'intermediateSigningKey', 'signedMessage'] as const) {
      const token: Record<string, unknown> = { ...seal() };
      delete token[key];
      fails(token, 'malformed_token', `${T}.${key}`);
    }
    const noVersion: Record<string, unknown> = { ...seal() };
    delete noVersion.protocolVersion;
    fails(noVersion, 'malformed_token', `${T}.protocolVersion`);
  });

  it('a protocolVersion other than ECv2', () => {
    for (const version of ['ECv1', 'ECv0', 'ecv2', '', 'ECv2 ']) {
      const err = fails({ ...seal(), protocolVersion: version }, 'unsupported_protocol', `${T}.protocolVersion`);
      assert.match(err.message, /protocolVersion must be ECv2/);
    }
    fails({ ...seal(), protocolVersion: 2 }, 'malformed_token', `${T}.protocolVersion`);
  });

  it('intermediateSigningKey with a key too many or too few', () => {
    const token = seal();
    fails({ ...token, intermediateSigningKey: { ...token.intermediateSigningKey, keyValue: 'x' } }, 'malformed_token', `${T}.intermediateSigningKey.keyValue`);
    fails({ ...token, intermediateSigningKey: { signedKey: token.intermediateSigningKey.signedKey } }, 'malformed_token', `${T}.intermediateSigningKey.signatures`);
    fails({ ...token, intermediateSigningKey: 'x' }, 'malformed_token', `${T}.intermediateSigningKey`);
  });

  it('fields of the wrong type', () => {
    const token = seal();
    const isk = token.intermediateSigningKey;
    fails({ ...token, signature: 1 }, 'malformed_token', `${T}.signature`);
    fails({ ...token, signature: 'not base64!' }, 'malformed_token', `${T}.signature`);
    fails({ ...token, signedMessage: JSON.parse(token.signedMessage) }, 'malformed_token', `${T}.signedMessage`);
    fails({ ...token, intermediateSigningKey: { ...isk, signedKey: JSON.parse(isk.signedKey) } }, 'malformed_token', `${T}.intermediateSigningKey.signedKey`);
    fails({ ...token, intermediateSigningKey: { ...isk, signatures: isk.signatures[0] } }, 'malformed_token', `${T}.intermediateSigningKey.signatures`);
    fails({ ...token, intermediateSigningKey: { ...isk, signatures: [] } }, 'malformed_token', `${T}.intermediateSigningKey.signatures`);
    fails({ ...token, intermediateSigningKey: { ...isk, signatures: Array(17).fill(isk.signatures[0]) } }, 'malformed_token', `${T}.intermediateSigningKey.signatures`);
    fails({ ...token, intermediateSigningKey: { ...isk, signatures: [isk.signatures[0], 7] } }, 'malformed_token', `${T}.intermediateSigningKey.signatures[1]`);
  });
});

describe('ECv2 steps 2 and 3: the root keys and the intermediate key\'s signature', () => {
  it('no usable root key: another protocol\'s, expired, or without keyExpiration', () => {
    for (const bad of [{ ...root, protocolVersion: 'ECv1' }, { ...root, keyExpiration: NOW }, { ...root, keyExpiration: NOW - 1 }, { ...root, keyExpiration: undefined }]) {
      fails(seal(), 'no_valid_root_key', undefined, { rootKeys: [bad] });
    }
    fails(seal(), 'no_valid_root_key', undefined, { rootKeys: [] });
  });

  it('the same, read from a keys.json', () => {
    const json = rootKeysJson([
      { key: world.root.publicKey, protocolVersion: 'ECv1', keyExpiration: NOW + HOUR },
      { key: world.root.publicKey, keyExpiration: NOW - HOUR },
      { key: world.root.publicKey },
    ]);
    fails(seal(), 'no_valid_root_key', undefined, { rootKeys: parseRootKeys(json, 'test') });
    const good = rootKeysJson([{ key: world.root.publicKey, keyExpiration: NOW + HOUR }]);
    assert.equal(decrypt(seal(), { rootKeys: parseRootKeys(good, 'test') }).details.pan, PAN);
  });

  it('signed by a key that is not a root key', () => {
    const token = seal({}, { rootPrivateKey: p256KeyPair().privateKey });
    fails(token, 'bad_intermediate_signature', `${T}.intermediateSigningKey.signatures`);
  });

  it('a signedKey changed after the root key signed it', () => {
    const token = seal();
    const changed = signedKeyFor(world.intermediate.privateKey, NOW + 1000 * 24 * HOUR);
    fails({ ...token, intermediateSigningKey: { ...token.intermediateSigningKey, signedKey: changed } }, 'bad_intermediate_signature');
  });
});

describe('ECv2 step 4: the intermediate key', () => {
  it('expired, also at exactly now', () => {
    fails(seal({}, { intermediateExpiration: NOW - 1 }), 'expired_intermediate_key', `${T}.intermediateSigningKey.signedKey`);
    fails(seal({}, { intermediateExpiration: NOW }), 'expired_intermediate_key');
    assert.equal(decrypt(seal(undefined, { intermediateExpiration: NOW + 1 })).details.pan, PAN);
  });

  it('a signedKey that is not JSON, lacks a field, or holds no P-256 key', () => {
    const token = seal();
    const field = `${T}.intermediateSigningKey.signedKey`;
    const spki = (key: KeyObject) => key.export({ format: 'der', type: 'spki' }).toString('base64');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey;
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    const exp = String(NOW + HOUR);
    for (const signedKey of [
      'not json',
      '"a string"',
      JSON.stringify({ keyValue: spki(world.intermediate.publicKey) }),
      JSON.stringify({ keyExpiration: exp }),
      JSON.stringify({ keyValue: spki(world.intermediate.publicKey), keyExpiration: 'soon' }),
      JSON.stringify({ keyValue: 'not base64!', keyExpiration: exp }),
      JSON.stringify({ keyValue: 42, keyExpiration: exp }),
      JSON.stringify({ keyValue: spki(p384), keyExpiration: exp }),
      JSON.stringify({ keyValue: spki(rsa), keyExpiration: exp }),
      JSON.stringify({ keyValue: Buffer.from('junk').toString('base64'), keyExpiration: exp }),
    ]) {
      fails(withSignedKey(token, signedKey), 'malformed_token', field);
    }
  });

  it('extra fields in signedKey are allowed, as Tink allows them', () => {
    const signedKey = JSON.stringify({ ...JSON.parse(signedKeyFor(world.intermediate.privateKey, NOW + HOUR)), future: 'field' });
    const token = seal();
    assert.equal(decrypt(withSignedKey(token, signedKey)).details.pan, PAN);
  });
});

describe('ECv2 step 5: the message signature', () => {
  it('signed for another recipient id', () => {
    const err = fails(seal({}, { recipientId: 'gateway:someone-else' }), 'bad_message_signature', `${T}.signature`);
    assert.match(err.message, /gateway:coffer/);
    fails(seal(), 'bad_message_signature', `${T}.signature`, { recipientId: 'merchant:12345' });
  });

  it('signed by another intermediate key than the one signedKey names', () => {
    const token = seal();
    fails({ ...token, signature: signMessage(p256KeyPair().privateKey, world.recipientId, token.signedMessage) }, 'bad_message_signature');
  });

  it('a signedMessage changed after it was signed', () => {
    const token = seal();
    const sealed = JSON.parse(token.signedMessage);
    sealed.tag = Buffer.alloc(32, 1).toString('base64');
    fails({ ...token, signedMessage: JSON.stringify(sealed) }, 'bad_message_signature');
  });
});

