import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger.ts';
import { randomBytesPooled } from '../random.ts';

/**
 * Key-encryption keys (KEKs). They never encrypt token data themselves: they wrap the
 * per-tenant data keys (see tenant-keys.ts). The provider is an interface so that a
 * cloud KMS can replace the local keyring without touching the rest of the vault.
 */
export interface KekProvider {
  /** Id of the KEK new wraps use. */
  readonly currentId: string;
  wrap(plaintext: Buffer, aad: Buffer): { kekId: string; wrapped: Buffer };
  unwrap(kekId: string, wrapped: Buffer, aad: Buffer): Buffer;
  has(kekId: string): boolean;
}

const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;
/** 256 bits in base64 or base64url: what a key looks like where an id was expected. */
const KEY_SHAPED = /^[A-Za-z0-9+/_-]{43}=?$/;

/** A local keyring of AES-256 KEKs held as KeyObjects; the first key wraps, all unwrap. */
export class LocalKeyring implements KekProvider {
  readonly currentId: string;
  private readonly keys: Map<string, KeyObject>;

  constructor(entries: { id: string; key: Buffer }[]) {
    if (entries.length === 0) throw new Error('the keyring needs at least one key');
    this.keys = new Map();
    for (const [i, { id, key }] of entries.entries()) {
      // An entry written the other way round (key:id) puts the key where the id goes: never quoted.
      const which = id.length > 64 || KEY_SHAPED.test(id) ? `of entry ${i + 1}` : `"${id}"`;
      if (!KEY_ID.test(id)) throw new Error(`key id ${which} must be 1-64 characters of letters, digits, _ . - (entries look like id:base64key)`);
      if (key.length !== 32) throw new Error(`key ${which} must be 256 bits (32 bytes, base64-encoded)`);
      if (this.keys.has(id)) throw new Error(`key id "${id}" appears twice`);
      this.keys.set(id, createSecretKey(key));
    }
    this.currentId = entries[0].id;
  }

  has(kekId: string): boolean {
    return this.keys.has(kekId);
  }

  wrap(plaintext: Buffer, aad: Buffer): { kekId: string; wrapped: Buffer } {
    return { kekId: this.currentId, wrapped: seal(this.keys.get(this.currentId)!, plaintext, aad) };
  }

  unwrap(kekId: string, wrapped: Buffer, aad: Buffer): Buffer {
    const kek = this.keys.get(kekId);
    if (!kek) throw new Error(`data key is wrapped by KEK "${kekId}", which is not in the keyring (COFFER_KEYS)`);
    try {
      return open(kek, wrapped, aad);
    } catch {
      // GCM says only "unable to authenticate data": name the key, the likely cause being
      // a COFFER_KEYS entry whose id is right but whose key is not.
      throw new Error(`KEK "${kekId}" does not open a data key wrapped under that id: is the key given for "${kekId}" in COFFER_KEYS the right one?`);
    }
  }
}

/**
 * COFFER_KEYS is `id:base64key[,id:base64key…]`, newest first. Without it a key file is
 * created under DATA_DIR with mode 0600 — fine for one host; several hosts must share
 * COFFER_KEYS. With `create: false` (commands that only work on existing keys) a missing
 * keyring is an error rather than a new key file.
 */
export function loadKeyring(cofferKeys: string | undefined, dataDir: string, log: Logger, opts: { create?: boolean } = {}): LocalKeyring {
  if (cofferKeys) return new LocalKeyring(parseKeys(cofferKeys));
  const file = path.join(dataDir, 'keys');
  if (!fs.existsSync(file)) {
    if (opts.create === false) throw new Error(`no keyring: COFFER_KEYS is not set and there is no key file ${file}`);
    fs.mkdirSync(dataDir, { recursive: true });
    const line = `${new Date().toISOString().slice(0, 10).replace(/-/g, '')}:${randomBytes(32).toString('base64')}\n`;
    // Written aside, then linked into place (which fails if the name exists): a process
    // starting at the same moment sees no file or a whole one, never an empty one.
    const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
    fs.writeFileSync(temp, line, { mode: 0o600, flag: 'wx' });
    try {
      fs.linkSync(temp, file);
      log.warn({ file }, 'COFFER_KEYS is not set: generated a key-encryption key file; back it up, or set COFFER_KEYS');
    } catch (err) {
      // Another process created it first; use theirs.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.rmSync(temp, { force: true });
    }
  }
  restrictKeyFile(file, log);
  return new LocalKeyring(parseKeys(fs.readFileSync(file, 'utf8').trim().split('\n').join(',')));
}

/**
 * The key file must be readable by its owner alone. One found readable by others (copied
 * in, restored from a backup, made by hand) is narrowed to 0600, and the operator told that
 * its keys may have been read: rotating to a new KEK is the remedy for that, not the chmod.
 */
function restrictKeyFile(file: string, log: Logger): void {
  const mode = fs.statSync(file).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  const was = `0${mode.toString(8)}`;
  try {
    fs.chmodSync(file, 0o600);
  } catch (err) {
    throw new Error(`the key file ${file} is readable by others (mode ${was}) and could not be made 0600: ${(err as Error).message}`);
  }
  log.warn({ file, mode: was }, 'the key file was readable by others: made it 0600; its keys may have been read, consider rotating to a new KEK');
}

export function parseKeys(spec: string): { id: string; key: Buffer }[] {
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.indexOf(':');
      if (at <= 0) throw new Error('COFFER_KEYS entries look like id:base64key');
      return { id: entry.slice(0, at), key: Buffer.from(entry.slice(at + 1), 'base64') };
    });
}

const IV = 12;
const TAG = 16;

/** AES-256-GCM: iv ‖ tag ‖ ciphertext, with the caller's additional authenticated data. */
export function seal(key: KeyObject, plaintext: Buffer, aad: Buffer): Buffer {
  const iv = randomBytesPooled(IV);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ct]);
}

export function open(key: KeyObject, sealed: Buffer, aad: Buffer): Buffer {
  // GCM otherwise accepts any tag of 4 to 16 bytes: a value cut short inside the tag would
  // be checked against a few tag bytes only (and an empty plaintext's would pass).
  if (sealed.length < IV + TAG) throw new Error('sealed value is too short');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV), { authTagLength: TAG });
  decipher.setAuthTag(sealed.subarray(IV, IV + TAG));
  decipher.setAAD(aad);
  const plaintext = decipher.update(sealed.subarray(IV + TAG));
  // GCM is a stream mode: update gives every byte, and final (which checks the tag) none, so
  // the plaintext is not copied into a second buffer on every token read.
  const rest = decipher.final();
  return rest.length === 0 ? plaintext : Buffer.concat([plaintext, rest]);
}
