/**
 * Makes real Google Pay ECv2 tokens, as Google's side does (Tink's sealECV2): the root key signs
 * the intermediate key, the payload is encrypted for the recipient's public key with an
 * ephemeral key, and the intermediate key signs the result for a recipient id. Written apart
 * from src/features/google-pay so a mistake there is not repeated here. Used by the library's
 * tests, the route's tests and the benchmark.
 */
import { createCipheriv, createHmac, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, type KeyObject, sign } from 'node:crypto';

export type Ecv2Token = {
  protocolVersion: string;
  signature: string;
  intermediateSigningKey: { signedKey: string; signatures: string[] };
  signedMessage: string;
};

export type KeyPair = { privateKey: KeyObject; publicKey: KeyObject };

export function p256KeyPair(): KeyPair {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

/** base64 X.509 SubjectPublicKeyInfo: keys.json's and signedKey's keyValue. */
export function spkiBase64(key: KeyObject): string {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  return pub.export({ format: 'der', type: 'spki' }).toString('base64');
}

/** base64 PKCS#8 DER: a GOOGLE_PAY_PRIVATE_KEYS entry. */
export function pkcs8Base64(key: KeyObject): string {
  return key.export({ format: 'der', type: 'pkcs8' }).toString('base64');
}

/** The 65-byte uncompressed point, raw. */
export function uncompressedPoint(key: KeyObject): Buffer {
  const spki = (key.type === 'private' ? createPublicKey(key) : key).export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - 65);
}

function lv(...parts: string[]): Buffer {
  return Buffer.concat(parts.flatMap((p) => {
    const bytes = Buffer.from(p, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32LE(bytes.length, 0);
    return [length, bytes];
  }));
}

function ecdsa(key: KeyObject, data: Buffer): string {
  return sign('sha256', data, { key, dsaEncoding: 'der' }).toString('base64');
}

/** A signedKey's JSON text for `intermediate` expiring at `expiration` (ms). */
export function signedKeyFor(intermediate: KeyObject, expiration: number): string {
  return JSON.stringify({ keyValue: spkiBase64(intermediate), keyExpiration: String(expiration) });
}

/** A root key's signature over a signedKey: LV("Google") ‖ LV("ECv2") ‖ LV(signedKey). */
export function signIntermediate(rootPrivateKey: KeyObject, signedKey: string): string {
  return ecdsa(rootPrivateKey, lv('Google', 'ECv2', signedKey));
}

/** The intermediate key's signature over a signedMessage: LV("Google") ‖ LV(recipientId) ‖ LV("ECv2") ‖ LV(signedMessage). */
export function signMessage(intermediatePrivateKey: KeyObject, recipientId: string, signedMessage: string): string {
  return ecdsa(intermediatePrivateKey, lv('Google', recipientId, 'ECv2', signedMessage));
}

/** signedMessage's JSON text: `plaintext` encrypted for `recipientPublicKey` with a fresh ephemeral key. */
export function encryptFor(recipientPublicKey: KeyObject, plaintext: Buffer): string {
  const ephemeral = p256KeyPair();
  const ephemeralPoint = uncompressedPoint(ephemeral.publicKey);
  const shared = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: recipientPublicKey });
  const keys = Buffer.from(hkdfSync('sha256', Buffer.concat([ephemeralPoint, shared]), Buffer.alloc(32), 'Google', 64));
  const cipher = createCipheriv('aes-256-ctr', keys.subarray(0, 32), Buffer.alloc(16));
  const encrypted = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  const tag = createHmac('sha256', keys.subarray(32)).update(encrypted).digest();
  return JSON.stringify({ encryptedMessage: encrypted.toString('base64'), ephemeralPublicKey: ephemeralPoint.toString('base64'), tag: tag.toString('base64') });
}

export type SealOptions = {
  rootPrivateKey: KeyObject;
  intermediatePrivateKey: KeyObject;
  /** When the intermediate key expires (ms); default a day after `now`. */
  intermediateExpiration?: number;
  recipientPublicKey: KeyObject;
  recipientId: string;
  /** An object is sent as JSON; a string or bytes as they are. */
  payload: unknown;
  /** Default Date.now(). */
  now?: number;
  /** The intermediate key as signed before: Google signs one and sends it with every token until it expires. */
  intermediateSigningKey?: { signedKey: string; signatures: string[] };
};

/** A real ECv2 token. */
export function sealEcv2(o: SealOptions): Ecv2Token {
  const now = o.now ?? Date.now();
  const signedKey = o.intermediateSigningKey?.signedKey ?? signedKeyFor(o.intermediatePrivateKey, o.intermediateExpiration ?? now + 86_400_000);
  const plaintext = Buffer.isBuffer(o.payload) ? o.payload : Buffer.from(typeof o.payload === 'string' ? o.payload : JSON.stringify(o.payload), 'utf8');
  const signedMessage = encryptFor(o.recipientPublicKey, plaintext);
  return {
    protocolVersion: 'ECv2',
    signature: signMessage(o.intermediatePrivateKey, o.recipientId, signedMessage),
    intermediateSigningKey: o.intermediateSigningKey ?? { signedKey, signatures: [signIntermediate(o.rootPrivateKey, signedKey)] },
    signedMessage,
  };
}

export type RootKeyEntry = { key: KeyObject; keyExpiration?: number | string; protocolVersion?: string };

/** A keys.json's text, as Google serves it. */
export function rootKeysJson(entries: RootKeyEntry[]): string {
  return JSON.stringify({
    keys: entries.map((e) => ({
      keyValue: spkiBase64(e.key),
      protocolVersion: e.protocolVersion ?? 'ECv2',
      ...(e.keyExpiration !== undefined ? { keyExpiration: String(e.keyExpiration) } : {}),
    })),
  });
}

export type PayloadOptions = {
  gatewayMerchantId?: string;
  pan?: string;
  expirationMonth?: number;
  expirationYear?: number;
  authMethod?: 'PAN_ONLY' | 'CRYPTOGRAM_3DS';
  cryptogram?: string;
  eciIndicator?: string;
  /** ms; default an hour after `now`. */
  messageExpiration?: number;
  messageId?: string;
  now?: number;
};

/** A decrypted payload as Google writes it; CRYPTOGRAM_3DS gets a cryptogram unless one is given. */
export function paymentPayload(o: PayloadOptions = {}): Record<string, unknown> {
  const authMethod = o.authMethod ?? 'PAN_ONLY';
  const details: Record<string, unknown> = {
    pan: o.pan ?? '4111111111111111',
    expirationMonth: o.expirationMonth ?? 12,
    expirationYear: o.expirationYear ?? 2030,
    authMethod,
  };
  if (authMethod === 'CRYPTOGRAM_3DS') details.cryptogram = o.cryptogram ?? 'AgAAAAAABk4DWZ4C28yUQAAAAAA=';
  if (o.eciIndicator !== undefined) details.eciIndicator = o.eciIndicator;
  return {
    ...(o.gatewayMerchantId !== undefined ? { gatewayMerchantId: o.gatewayMerchantId } : {}),
    messageExpiration: String(o.messageExpiration ?? (o.now ?? Date.now()) + 3_600_000),
    messageId: o.messageId ?? 'AH2EjtfkY514K5lmPF4NOP9lMR5tPedsjQR719hIzI-test',
    paymentMethod: 'CARD',
    paymentMethodDetails: details,
  };
}

/**
 * A whole stand-in for Google and one recipient: a root key, an intermediate key, the
 * recipient's key pair, and `seal` for tokens between them. `rootKeys()` is the keys.json
 * to configure (GOOGLE_PAY_ROOT_KEYS), `privateKey` the GOOGLE_PAY_PRIVATE_KEYS entry.
 */
export function googlePayWorld(recipientId = 'gateway:coffer') {
  const root = p256KeyPair();
  const intermediate = p256KeyPair();
  const recipient = p256KeyPair();
  // As Google does: one intermediate key, signed once, in every token of its (week-long) life.
  const expiration = Date.now() + 7 * 86_400_000;
  const signedKey = signedKeyFor(intermediate.privateKey, expiration);
  const intermediateSigningKey = { signedKey, signatures: [signIntermediate(root.privateKey, signedKey)] };
  return {
    root,
    intermediate,
    recipient,
    recipientId,
    /** The recipient's private key as a GOOGLE_PAY_PRIVATE_KEYS entry. */
    privateKey: pkcs8Base64(recipient.privateKey),
    /** keys.json with the root key, expiring `keyExpiration` (default in year 3000). */
    rootKeys: (keyExpiration: number = 32_503_680_000_000) => rootKeysJson([{ key: root.publicKey, keyExpiration }]),
    /** The world's one signed intermediate key, unless `o` asks for another (its own `now` or expiry). */
    seal: (payload: unknown, o: Partial<SealOptions> = {}): Ecv2Token =>
      sealEcv2({
        rootPrivateKey: root.privateKey,
        intermediatePrivateKey: intermediate.privateKey,
        recipientPublicKey: recipient.publicKey,
        recipientId,
        payload,
        ...(o.now === undefined && o.intermediateExpiration === undefined ? { intermediateSigningKey } : {}),
        ...o,
      }),
  };
}
