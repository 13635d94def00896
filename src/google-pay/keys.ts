import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import { isP256, p256Point, strictBase64 } from './primitives.ts';

/**
 * Coffer's own Google Pay keys: the P-256 private keys tokens are sealed for (GOOGLE_PAY_PRIVATE_KEYS),
 * and new pairs for `coffer google-pay keygen`.
 */

/** A new recipient key pair, each part in base64 as it is configured or registered. */
export type RecipientKeyPair = {
  /** PKCS#8 DER: an entry of GOOGLE_PAY_PRIVATE_KEYS. */
  privateKey: string;
  /** The 65-byte uncompressed point (0x04 ‖ x ‖ y): what Google's Pay & Wallet Console and a DIRECT `publicKey` parameter take. */
  publicKey: string;
  /** The same public key as X.509 SubjectPublicKeyInfo DER, for tools that want that form. */
  publicKeySpki: string;
};

export function generateRecipientKeyPair(): RecipientKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
    publicKey: p256Point(publicKey).toString('base64'),
    publicKeySpki: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  };
}

/** The public key of a configured private key, as Google's console takes it (base64 of the uncompressed point). */
export function recipientPublicKey(privateKey: KeyObject): string {
  return p256Point(createPublicKey(privateKey)).toString('base64');
}

/** A base64 PKCS#8 key is at least this long (a bare P-256 key is 92 characters); anything shorter is taken as a file path. */
const MIN_BASE64_KEY = 64;

/**
 * GOOGLE_PAY_PRIVATE_KEYS: comma-separated entries, each a PKCS#8 key in base64 (or base64url,
 * or PEM pasted whole) or the path of a file holding one (PEM — PKCS#8 or SEC1 — base64, or DER).
 * Every key must be P-256. Problems name the entry by position, and a path by itself, never
 * anything that may be key material.
 */
export function parsePrivateKeys(value: string, name: string): { keys: KeyObject[]; problems: string[] } {
  const keys: KeyObject[] = [];
  const problems: string[] = [];
  const entries = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (entries.length === 0) problems.push(`${name} holds no key`);
  entries.forEach((entry, i) => {
    const label = `${name} entry ${i + 1}${entries.length === 1 ? '' : ` of ${entries.length}`}`;
    const read = readEntry(entry, label);
    if (typeof read === 'string') problems.push(read);
    else if (!isP256(read)) problems.push(`${label} is ${describeKey(read)}, not a P-256 (prime256v1) key as Google Pay uses`);
    else keys.push(read);
  });
  return { keys, problems };
}

/** The key, or the problem with the entry. */
function readEntry(entry: string, label: string): KeyObject | string {
  if (entry.includes('-----BEGIN')) return fromPem(entry) ?? `${label} is PEM but not a private key`;
  // A key's characters only, and long: a key, unless a file of that name exists.
  if (entry.length >= MIN_BASE64_KEY && /^[A-Za-z0-9+/_=-]+$/.test(entry) && !fs.existsSync(entry)) {
    const der = strictBase64(entry) ?? strictBase64(entry.replace(/-/g, '+').replace(/_/g, '/'));
    return (der && pkcs8(der)) ?? `${label} is not a PKCS#8 private key in base64 (\`coffer google-pay keygen\` prints one), nor the path of a file`;
  }
  let contents: Buffer;
  try {
    contents = fs.readFileSync(entry);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return `${label} is neither a base64 PKCS#8 key nor a readable file: ${JSON.stringify(entry.slice(0, 200))} (${code ?? 'unreadable'})`;
  }
  return fromFile(contents) ?? `${label}: the file ${JSON.stringify(entry.slice(0, 200))} holds no private key (PEM, base64 PKCS#8 or DER PKCS#8)`;
}

function fromPem(text: string): KeyObject | undefined {
  try {
    const key = createPrivateKey({ key: text, format: 'pem' });
    return key.type === 'private' ? key : undefined;
  } catch {
    return undefined;
  }
}

function fromFile(contents: Buffer): KeyObject | undefined {
  const text = contents.toString('utf8').trim();
  if (text.includes('-----BEGIN')) return fromPem(text);
  const der = strictBase64(text.replace(/\s+/g, ''));
  return der !== undefined && der.length > 0 ? pkcs8(der) : pkcs8(contents);
}

function pkcs8(der: Buffer): KeyObject | undefined {
  try {
    return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } catch {
    return undefined;
  }
}

function describeKey(key: KeyObject): string {
  const type = key.asymmetricKeyType ?? 'unknown';
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return curve ? `an ${type.toUpperCase()} key on ${curve}` : `an ${type.toUpperCase()} key`;
}
