import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, it } from 'node:test';
import { parseRootKeys, type RootKey } from '../../src/google-pay/index.ts';
import { VerifiedIntermediates } from '../../src/google-pay/intermediates.ts';
import { p256KeyPair, paymentPayload, rootKeysJson, signedKeyFor, signIntermediate, signMessage } from '../helpers/google-pay-seal.ts';
import { CRYPTOGRAM, decrypt, fails, HOUR, NOW, PAN, root, seal, T, withSignedKey, world } from './ecv2-setup.ts';

/** ECv2 on tokens our sealer makes: the happy paths, then each way the shape and the signatures refuse one (steps 1 to 5). */

describe('ECv2 happy paths', () => {
  it('PAN_ONLY: the card and the gatewayMerchantId the route checks', async () => {
    const payment = await decrypt(seal());
    assert.deepEqual(payment, {
      test: false,
      gatewayMerchantId: 'tenant-1',
      messageId: 'AH2EjtfkY514K5lmPF4NOP9lMR5tPedsjQR719hIzI-test',
      messageExpiration: String(NOW + HOUR),
      paymentMethod: 'CARD',
      details: { pan: PAN, expirationMonth: 12, expirationYear: 2030, authMethod: 'PAN_ONLY' },
    });
  });

  it('CRYPTOGRAM_3DS with an eciIndicator, and without one', async () => {
    const withEci = await decrypt(seal(paymentPayload({ now: NOW, authMethod: 'CRYPTOGRAM_3DS', eciIndicator: '05' })));
    assert.deepEqual(withEci.details, { pan: PAN, expirationMonth: 12, expirationYear: 2030, authMethod: 'CRYPTOGRAM_3DS', cryptogram: CRYPTOGRAM, eciIndicator: '05' });
    const without = await decrypt(seal(paymentPayload({ now: NOW, authMethod: 'CRYPTOGRAM_3DS' })));
    assert.deepEqual(without.details, { pan: PAN, expirationMonth: 12, expirationYear: 2030, authMethod: 'CRYPTOGRAM_3DS', cryptogram: CRYPTOGRAM });
  });

  it('fields Coffer does not use are ignored; a PAN_ONLY cryptogram is not returned', async () => {
    const payload = paymentPayload({ now: NOW });
    (payload.paymentMethodDetails as Record<string, unknown>).cryptogram = 'unused';
    payload.somethingNew = { nested: true };
    assert.deepEqual(Object.keys((await decrypt(seal(payload))).details), ['pan', 'expirationMonth', 'expirationYear', 'authMethod']);
  });

  it('with several private keys, each is tried: a key rotated in second still opens its tokens', async () => {
    const other = p256KeyPair().privateKey;
    assert.equal((await decrypt(seal(), { privateKeys: [other, world.recipient.privateKey] })).details.pan, PAN);
    assert.equal((await decrypt(seal(), { privateKeys: [world.recipient.privateKey, other] })).details.pan, PAN);
  });

  it('any one of several signatures, under any one of several root keys, is enough', async () => {
    const token = seal();
    const stranger = p256KeyPair().privateKey;
    const signedKey = token.intermediateSigningKey.signedKey;
    const several = { ...token, intermediateSigningKey: { signedKey, signatures: [signIntermediate(stranger, signedKey), ...token.intermediateSigningKey.signatures] } };
    assert.equal((await decrypt(several)).details.pan, PAN);
    const otherRoot: RootKey = { ...root, key: p256KeyPair().publicKey };
    assert.equal((await decrypt(token, { rootKeys: [otherRoot, root] })).details.pan, PAN);
  });

  it('the token may come as JSON text', async () => {
    assert.equal((await decrypt(JSON.stringify(seal()))).details.pan, PAN);
  });
});

describe('ECv2 step 1: the shape', () => {
  it('not an object', async () => {
    for (const token of [null, undefined, 42, [], 'not json', '[1]', true]) await fails(token, 'malformed_token', T);
  });

  it('an extra or missing top-level key', async () => {
    await fails({ ...seal(), extra: 1 }, 'malformed_token', `${T}.extra`);
    for (const key of ['signature', 'intermediateSigningKey', 'signedMessage'] as const) {
      const token: Record<string, unknown> = { ...seal() };
      delete token[key];
      await fails(token, 'malformed_token', `${T}.${key}`);
    }
    const noVersion: Record<string, unknown> = { ...seal() };
    delete noVersion.protocolVersion;
    await fails(noVersion, 'malformed_token', `${T}.protocolVersion`);
  });

  it('a protocolVersion other than ECv2', async () => {
    for (const version of ['ECv1', 'ECv0', 'ecv2', '', 'ECv2 ']) {
      const err = await fails({ ...seal(), protocolVersion: version }, 'unsupported_protocol', `${T}.protocolVersion`);
      assert.match(err.message, /protocolVersion must be ECv2/);
    }
    await fails({ ...seal(), protocolVersion: 2 }, 'malformed_token', `${T}.protocolVersion`);
  });

  it('intermediateSigningKey with a key too many or too few', async () => {
    const token = seal();
    await fails({ ...token, intermediateSigningKey: { ...token.intermediateSigningKey, keyValue: 'x' } }, 'malformed_token', `${T}.intermediateSigningKey.keyValue`);
    await fails({ ...token, intermediateSigningKey: { signedKey: token.intermediateSigningKey.signedKey } }, 'malformed_token', `${T}.intermediateSigningKey.signatures`);
    await fails({ ...token, intermediateSigningKey: 'x' }, 'malformed_token', `${T}.intermediateSigningKey`);
  });

  it('fields of the wrong type', async () => {
    const token = seal();
    const isk = token.intermediateSigningKey;
    await fails({ ...token, signature: 1 }, 'malformed_token', `${T}.signature`);
    await fails({ ...token, signature: 'not base64!' }, 'malformed_token', `${T}.signature`);
    await fails({ ...token, signedMessage: JSON.parse(token.signedMessage) }, 'malformed_token', `${T}.signedMessage`);
    await fails({ ...token, intermediateSigningKey: { ...isk, signedKey: JSON.parse(isk.signedKey) } }, 'malformed_token', `${T}.intermediateSigningKey.signedKey`);
    await fails({ ...token, intermediateSigningKey: { ...isk, signatures: isk.signatures[0] } }, 'malformed_token', `${T}.intermediateSigningKey.signatures`);
    await fails({ ...token, intermediateSigningKey: { ...isk, signatures: [] } }, 'malformed_token', `${T}.intermediateSigningKey.signatures`);
    await fails({ ...token, intermediateSigningKey: { ...isk, signatures: Array(17).fill(isk.signatures[0]) } }, 'malformed_token', `${T}.intermediateSigningKey.signatures`);
    await fails({ ...token, intermediateSigningKey: { ...isk, signatures: [isk.signatures[0], 7] } }, 'malformed_token', `${T}.intermediateSigningKey.signatures[1]`);
  });
});

describe('ECv2 steps 2 and 3: the root keys and the intermediate key\'s signature', () => {
  it('no usable root key: another protocol\'s, expired, or without keyExpiration', async () => {
    for (const bad of [{ ...root, protocolVersion: 'ECv1' }, { ...root, keyExpiration: NOW }, { ...root, keyExpiration: NOW - 1 }, { ...root, keyExpiration: undefined }]) {
      await fails(seal(), 'no_valid_root_key', undefined, { rootKeys: [bad] });
    }
    await fails(seal(), 'no_valid_root_key', undefined, { rootKeys: [] });
  });

  it('the same, read from a keys.json', async () => {
    const json = rootKeysJson([
      { key: world.root.publicKey, protocolVersion: 'ECv1', keyExpiration: NOW + HOUR },
      { key: world.root.publicKey, keyExpiration: NOW - HOUR },
      { key: world.root.publicKey },
    ]);
    await fails(seal(), 'no_valid_root_key', undefined, { rootKeys: parseRootKeys(json, 'test') });
    const good = rootKeysJson([{ key: world.root.publicKey, keyExpiration: NOW + HOUR }]);
    assert.equal((await decrypt(seal(), { rootKeys: parseRootKeys(good, 'test') })).details.pan, PAN);
  });

  it('signed by a key that is not a root key', async () => {
    const token = seal({}, { rootPrivateKey: p256KeyPair().privateKey });
    await fails(token, 'bad_intermediate_signature', `${T}.intermediateSigningKey.signatures`);
  });

  it('a signedKey changed after the root key signed it', async () => {
    const token = seal();
    const changed = signedKeyFor(world.intermediate.privateKey, NOW + 1000 * 24 * HOUR);
    await fails({ ...token, intermediateSigningKey: { ...token.intermediateSigningKey, signedKey: changed } }, 'bad_intermediate_signature');
  });
});

describe('ECv2 step 4: the intermediate key', () => {
  it('expired, also at exactly now', async () => {
    await fails(seal({}, { intermediateExpiration: NOW - 1 }), 'expired_intermediate_key', `${T}.intermediateSigningKey.signedKey`);
    await fails(seal({}, { intermediateExpiration: NOW }), 'expired_intermediate_key');
    assert.equal((await decrypt(seal(undefined, { intermediateExpiration: NOW + 1 }))).details.pan, PAN);
  });

  it('a signedKey that is not JSON, lacks a field, or holds no P-256 key', async () => {
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
      await fails(withSignedKey(token, signedKey), 'malformed_token', field);
    }
  });

  it('extra fields in signedKey are allowed, as Tink allows them', async () => {
    const signedKey = JSON.stringify({ ...JSON.parse(signedKeyFor(world.intermediate.privateKey, NOW + HOUR)), future: 'field' });
    const token = seal();
    assert.equal((await decrypt(withSignedKey(token, signedKey))).details.pan, PAN);
  });
});

describe('ECv2 step 5: the message signature', () => {
  it('signed for another recipient id', async () => {
    const err = await fails(seal({}, { recipientId: 'gateway:someone-else' }), 'bad_message_signature', `${T}.signature`);
    assert.match(err.message, /gateway:coffer/);
    await fails(seal(), 'bad_message_signature', `${T}.signature`, { recipientId: 'merchant:12345' });
  });

  it('signed by another intermediate key than the one signedKey names', async () => {
    const token = seal();
    await fails({ ...token, signature: signMessage(p256KeyPair().privateKey, world.recipientId, token.signedMessage) }, 'bad_message_signature');
  });

  it('a signedMessage changed after it was signed', async () => {
    const token = seal();
    const sealed = JSON.parse(token.signedMessage);
    sealed.tag = Buffer.alloc(32, 1).toString('base64');
    await fails({ ...token, signedMessage: JSON.stringify(sealed) }, 'bad_message_signature');
  });
});


describe('intermediate keys verified before (VerifiedIntermediates)', () => {
  // One signed intermediate key in every token, as Google sends them.
  const signedKey = signedKeyFor(world.intermediate.privateKey, NOW + 2 * HOUR);
  const block = { signedKey, signatures: [signIntermediate(world.root.privateKey, signedKey)] };
  const sealWith = (o: Record<string, unknown> = {}) => seal(paymentPayload({ now: NOW, gatewayMerchantId: 'tenant-1' }), { intermediateSigningKey: block, ...o });

  it('accept later tokens exactly where a full check would', async () => {
    const intermediates = new VerifiedIntermediates();
    assert.equal((await decrypt(sealWith(), { intermediates })).details.pan, PAN);
    assert.equal((await decrypt(sealWith(), { intermediates })).details.pan, PAN, 'the second token, with the key remembered');
    // The same signed key with a signature that never verified: refused, remembered or not.
    const forged = { signedKey, signatures: [signIntermediate(p256KeyPair().privateKey, signedKey)] };
    await fails(sealWith({ intermediateSigningKey: forged }), 'bad_intermediate_signature', `${T}.intermediateSigningKey.signatures`, { intermediates });
    // Its expiry is checked on every token.
    await fails(sealWith(), 'expired_intermediate_key', `${T}.intermediateSigningKey.signedKey`, { intermediates, now: NOW + 3 * HOUR });
    // A root key that is no longer listed (rotated out) vouches for nothing any more.
    const newRoot: RootKey = { protocolVersion: 'ECv2', keyExpiration: NOW + HOUR, key: p256KeyPair().publicKey };
    await fails(sealWith(), 'bad_intermediate_signature', `${T}.intermediateSigningKey.signatures`, { intermediates, rootKeys: [newRoot] });
    // And the message signature is still verified each time.
    const token = sealWith();
    await fails({ ...token, signature: signMessage(p256KeyPair().privateKey, world.recipientId, token.signedMessage) }, 'bad_message_signature', `${T}.signature`, { intermediates });
  });

  it('keep at most the configured number of keys', async () => {
    const intermediates = new VerifiedIntermediates(2);
    for (let i = 0; i < 3; i++) await decrypt(seal(paymentPayload({ now: NOW, gatewayMerchantId: 'tenant-1' }), { intermediateExpiration: NOW + HOUR + i }), { intermediates });
    assert.equal(intermediates.size, 2);
  });
});
