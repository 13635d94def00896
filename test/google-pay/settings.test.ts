import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { decryptEcv2, defaultDecryptThreads, generateRecipientKeyPair, GOOGLE_ROOT_KEYS_URLS, parsePrivateKeys, recipientPublicKey } from '../../src/google-pay/index.ts';
import { runCli } from '../helpers/cli.ts';
import { googlePayWorld, p256KeyPair, paymentPayload, pkcs8Base64, rootKeysJson, sealEcv2 } from '../helpers/google-pay-seal.ts';
import { rememberSecret } from '../helpers/server.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-gpay-settings-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function file(name: string, contents: string | Buffer): string {
  const at = path.join(dir, name);
  fs.writeFileSync(at, contents);
  return at;
}

/** loadConfig with `env` fails, with a problem matching `message` and holding none of `secrets`. */
function refuses(env: Record<string, string>, message: RegExp, secrets: string[] = []): void {
  assert.throws(() => loadConfig(env), (err: unknown) => {
    assert.ok(err instanceof ConfigError, String(err));
    assert.match(err.message, message);
    for (const secret of secrets) assert.ok(!err.message.includes(secret), err.message);
    return true;
  });
}

const pair = p256KeyPair();
const keyBase64 = pkcs8Base64(pair.privateKey);

describe('GOOGLE_PAY_* settings', () => {
  it('default: no private keys, Google\'s TEST keys.json, gateway coffer, test mode on', async () => {
    const gp = loadConfig({}).googlePay;
    assert.deepEqual(gp.privateKeys, []);
    assert.deepEqual(gp.rootKeys, { kind: 'url', url: 'https://payments.developers.google.com/paymentmethodtoken/test/keys.json' });
    assert.equal(gp.environment, 'test');
    assert.equal(gp.gatewayId, 'coffer');
    assert.equal(gp.recipientId, 'gateway:coffer');
    assert.equal(gp.testMode, true);
  });

  it('GOOGLE_PAY_ENVIRONMENT picks Google\'s keys.json', async () => {
    assert.deepEqual(loadConfig({ GOOGLE_PAY_ENVIRONMENT: 'production' }).googlePay.rootKeys, { kind: 'url', url: GOOGLE_ROOT_KEYS_URLS.production });
    assert.equal(GOOGLE_ROOT_KEYS_URLS.production, 'https://payments.developers.google.com/paymentmethodtoken/keys.json');
    refuses({ GOOGLE_PAY_ENVIRONMENT: 'prod' }, /GOOGLE_PAY_ENVIRONMENT must be one of production, test \(got "prod"\)/);
  });

  it('GOOGLE_PAY_GATEWAY_ID makes the recipient id', async () => {
    assert.equal(loadConfig({ GOOGLE_PAY_GATEWAY_ID: 'acme-vault' }).googlePay.recipientId, 'gateway:acme-vault');
    refuses({ GOOGLE_PAY_GATEWAY_ID: 'a b' }, /GOOGLE_PAY_GATEWAY_ID must be 1 to 64/);
    refuses({ GOOGLE_PAY_GATEWAY_ID: 'gateway:x' }, /GOOGLE_PAY_GATEWAY_ID/);
  });

  it('GOOGLE_PAY_TEST_MODE is on or off', async () => {
    for (const off of ['off', 'OFF', '0', 'false']) assert.equal(loadConfig({ GOOGLE_PAY_TEST_MODE: off }).googlePay.testMode, false, off);
    for (const on of ['on', '1', 'true']) assert.equal(loadConfig({ GOOGLE_PAY_TEST_MODE: on }).googlePay.testMode, true, on);
    refuses({ GOOGLE_PAY_TEST_MODE: 'maybe' }, /GOOGLE_PAY_TEST_MODE must be on or off \(got "maybe"\)/);
  });

  it('GOOGLE_PAY_PRIVATE_KEYS: base64 PKCS#8 keys, several, PEM, or files (PEM PKCS#8 or SEC1, base64, DER)', async () => {
    const second = p256KeyPair().privateKey;
    const keys = loadConfig({ GOOGLE_PAY_PRIVATE_KEYS: ` ${keyBase64} , ${pkcs8Base64(second)} ` }).googlePay.privateKeys;
    assert.equal(keys.length, 2);
    assert.ok(keys[0].equals(pair.privateKey) && keys[1].equals(second));

    const files = [
      file('pkcs8.pem', pair.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string),
      file('sec1.pem', pair.privateKey.export({ format: 'pem', type: 'sec1' }) as string),
      file('key.b64', `${keyBase64}\n`),
      file('key.der', pair.privateKey.export({ format: 'der', type: 'pkcs8' })),
    ];
    for (const at of files) {
      const read = loadConfig({ GOOGLE_PAY_PRIVATE_KEYS: at }).googlePay.privateKeys;
      assert.ok(read.length === 1 && read[0].equals(pair.privateKey), at);
    }
    const pem = pair.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    assert.ok(loadConfig({ GOOGLE_PAY_PRIVATE_KEYS: pem }).googlePay.privateKeys[0].equals(pair.privateKey), 'PEM pasted whole');
    const base64url = pair.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64url');
    assert.ok(loadConfig({ GOOGLE_PAY_PRIVATE_KEYS: base64url }).googlePay.privateKeys[0].equals(pair.privateKey), 'base64url');
    const relative = path.relative(process.cwd(), files[0]);
    assert.ok(loadConfig({ GOOGLE_PAY_PRIVATE_KEYS: `${keyBase64},${relative}` }).googlePay.privateKeys[1].equals(pair.privateKey));
  });

  it('GOOGLE_PAY_PRIVATE_KEYS refusals name the entry, never the key', async () => {
    const garbage = Buffer.alloc(100, 7).toString('base64');
    refuses({ GOOGLE_PAY_PRIVATE_KEYS: garbage }, /GOOGLE_PAY_PRIVATE_KEYS entry 1 is not a PKCS#8 private key in base64/, [garbage.slice(0, 20)]);
    const pem = pair.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    const publicPem = pair.publicKey.export({ format: 'pem', type: 'spki' }) as string;
    refuses({ GOOGLE_PAY_PRIVATE_KEYS: publicPem }, /entry 1 is PEM but not a private key/, [publicPem.split('\n')[1]]);
    refuses({ GOOGLE_PAY_PRIVATE_KEYS: pem.replace('MIG', 'MIH') }, /entry 1 is PEM but not a private key/, [pem.split('\n')[1].slice(4)]);
    refuses({ GOOGLE_PAY_PRIVATE_KEYS: `${keyBase64},${keyBase64.slice(0, -8)}` }, /GOOGLE_PAY_PRIVATE_KEYS entry 2 of 2 is/, [keyBase64.slice(0, 40)]);
    refuses({ GOOGLE_PAY_PRIVATE_KEYS: path.join(dir, 'nowhere.pem') }, /entry 1 is neither a base64 PKCS#8 key nor a readable file: ".*nowhere\.pem" \(ENOENT\)/);
    refuses({ GOOGLE_PAY_PRIVATE_KEYS: file('junk.pem', 'hello') }, /the file ".*junk\.pem" holds no private key/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
    const rsaBase64 = pkcs8Base64(rsa);
    refuses({ GOOGLE_PAY_PRIVATE_KEYS: rsaBase64 }, /entry 1 is an RSA key, not a P-256 \(prime256v1\) key/, [rsaBase64.slice(0, 40)]);
    const p384 = pkcs8Base64(generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey);
    refuses({ GOOGLE_PAY_PRIVATE_KEYS: p384 }, /entry 1 is an EC key on secp384r1, not a P-256/);
    refuses({ GOOGLE_PAY_PRIVATE_KEYS: ',' }, /GOOGLE_PAY_PRIVATE_KEYS holds no key/);
  });

  it('GOOGLE_PAY_ROOT_KEYS: a keys.json file, checked at start, or a URL', async () => {
    const now = Date.now();
    const good = file('keys.json', rootKeysJson([{ key: pair.publicKey, keyExpiration: now + 86_400_000 }]));
    assert.deepEqual(loadConfig({ GOOGLE_PAY_ROOT_KEYS: good }).googlePay.rootKeys, { kind: 'file', path: good });
    assert.deepEqual(loadConfig({ GOOGLE_PAY_ROOT_KEYS: 'https://keys.example/keys.json' }).googlePay.rootKeys, { kind: 'url', url: 'https://keys.example/keys.json' });
    refuses({ GOOGLE_PAY_ROOT_KEYS: path.join(dir, 'missing.json') }, /GOOGLE_PAY_ROOT_KEYS: the file .*missing\.json could not be read \(ENOENT\)/);
    refuses({ GOOGLE_PAY_ROOT_KEYS: file('bad.json', 'nope') }, /GOOGLE_PAY_ROOT_KEYS: the root signing keys from .*bad\.json are not JSON/);
    refuses({ GOOGLE_PAY_ROOT_KEYS: file('expired.json', rootKeysJson([{ key: pair.publicKey, keyExpiration: now - 1 }])) }, /holds no ECv2 key with a keyExpiration still to come/);
  });

  it('GOOGLE_PAY_DECRYPT_THREADS: one core left to the event loop by default (1 to 4), 0 to 16 when set', () => {
    const threads = defaultDecryptThreads();
    assert.ok(threads >= 1 && threads <= 4 && threads <= Math.max(1, os.availableParallelism() - 1), String(threads));
    assert.equal(loadConfig({}).googlePay.decryptThreads, threads);
    assert.equal(loadConfig({ GOOGLE_PAY_DECRYPT_THREADS: '0' }).googlePay.decryptThreads, 0);
    assert.equal(loadConfig({ GOOGLE_PAY_DECRYPT_THREADS: '16' }).googlePay.decryptThreads, 16);
    for (const bad of ['17', '-1', '1.5', 'two']) refuses({ GOOGLE_PAY_DECRYPT_THREADS: bad }, /GOOGLE_PAY_DECRYPT_THREADS must be a whole number from 0 to 16/);
  });

  it('every Google Pay problem is reported at once, with the others', async () => {
    refuses({ GOOGLE_PAY_ENVIRONMENT: 'x', GOOGLE_PAY_TEST_MODE: 'x', GOOGLE_PAY_GATEWAY_ID: ' a b', PORT: 'x' }, /PORT[\s\S]*GOOGLE_PAY_ENVIRONMENT[\s\S]*GOOGLE_PAY_GATEWAY_ID[\s\S]*GOOGLE_PAY_TEST_MODE/);
  });
});

describe('recipient keys', () => {
  it('generateRecipientKeyPair: the printed private key opens tokens sealed for the printed public key', async () => {
    const generated = generateRecipientKeyPair();
    const point = Buffer.from(generated.publicKey, 'base64');
    assert.equal(point.length, 65);
    assert.equal(point[0], 0x04);
    const spki = createPublicKey({ key: Buffer.from(generated.publicKeySpki, 'base64'), format: 'der', type: 'spki' });
    assert.ok(spki.export({ format: 'der', type: 'spki' }).subarray(-65).equals(point));

    const { keys, problems } = parsePrivateKeys(generated.privateKey, 'GOOGLE_PAY_PRIVATE_KEYS');
    assert.deepEqual(problems, []);
    const world = googlePayWorld();
    const token = sealEcv2({
      rootPrivateKey: world.root.privateKey, intermediatePrivateKey: world.intermediate.privateKey, recipientPublicKey: spki,
      recipientId: 'gateway:coffer', payload: paymentPayload(),
    });
    const rootKeys = [{ protocolVersion: 'ECv2', keyExpiration: Date.now() + 86_400_000, key: world.root.publicKey }];
    assert.equal((await decryptEcv2(token, { rootKeys, privateKeys: keys, recipientId: 'gateway:coffer', now: Date.now() })).details.pan, '4111111111111111');
  });

  it('recipientPublicKey gives the form Google documents: Tink\'s example merchant key', async () => {
    const tinkMerchant = createPrivateKey({
      key: Buffer.from('MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgCPSuFr4iSIaQprjjchHPyDu2NXFe0vDBoTpPkYaK9dehRANCAATnaFz/vQKuO90pxsINyVNWojabHfbx9qIJ6uD7Q7ZSxmtyo/Ez3/o2kDT8g0pIdyVIYktCsq65VoQIDWSh2Bdm', 'base64'),
      format: 'der', type: 'pkcs8',
    });
    assert.equal(recipientPublicKey(tinkMerchant), 'BOdoXP+9Aq473SnGwg3JU1aiNpsd9vH2ognq4PtDtlLGa3Kj8TPf+jaQNPyDSkh3JUhiS0KyrrlWhAgNZKHYF2Y=');
  });
});

describe('coffer google-pay', () => {
  it('keygen --json prints a pair that round-trips through GOOGLE_PAY_PRIVATE_KEYS; public-keys shows the public half', async () => {
    const res = await runCli(['google-pay', 'keygen', '--json'], {});
    assert.equal(res.code, 0, res.stderr);
    const printed = JSON.parse(res.stdout);
    rememberSecret(printed.private_key);
    const keys = loadConfig({ GOOGLE_PAY_PRIVATE_KEYS: printed.private_key }).googlePay.privateKeys;
    assert.equal(recipientPublicKey(keys[0]), printed.public_key);

    const world = googlePayWorld();
    const recipient = createPublicKey({ key: Buffer.from(printed.public_key_spki, 'base64'), format: 'der', type: 'spki' });
    const token = sealEcv2({ rootPrivateKey: world.root.privateKey, intermediatePrivateKey: world.intermediate.privateKey, recipientPublicKey: recipient, recipientId: 'gateway:coffer', payload: paymentPayload() });
    const rootKeys = [{ protocolVersion: 'ECv2', keyExpiration: Date.now() + 86_400_000, key: world.root.publicKey }];
    assert.equal((await decryptEcv2(token, { rootKeys, privateKeys: keys, recipientId: 'gateway:coffer', now: Date.now() })).details.expirationYear, 2030);

    const shown = await runCli(['google-pay', 'public-keys'], { GOOGLE_PAY_PRIVATE_KEYS: `${printed.private_key},${keyBase64}` });
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(shown.stdout, `1. ${printed.public_key}\n2. ${recipientPublicKey(pair.privateKey)}\n`);
  });

  it('keygen without --json labels each part; mistakes are usage errors', async () => {
    const res = await runCli(['google-pay', 'keygen'], {});
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /GOOGLE_PAY_PRIVATE_KEYS[\s\S]*\n {2}MIG[A-Za-z0-9+/=]+\n[\s\S]*register it with Google[\s\S]*\n {2}B[A-Za-z0-9+/]{86}=\n/);
    rememberSecret(/\n {2}(MIG\S+)\n/.exec(res.stdout)![1]);
    const unknown = await runCli(['google-pay', 'nope'], {});
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /unknown google-pay command "nope"/);
    const none = await runCli(['google-pay', 'public-keys'], {});
    assert.equal(none.code, 1);
    assert.match(none.stderr, /GOOGLE_PAY_PRIVATE_KEYS is not set/);
  });
});
