import { createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { uuidv4 } from '../db/ids.ts';
import type { Logger } from '../logger.ts';
import { open, seal, type KekProvider } from './keyring.ts';
import { findActiveKeys, findKeyById, findKeySamplePerKek, findKeysNotWrappedBy, insertKeyIfAbsent, rewrapKey, type TenantKeyRow } from './store.ts';

type Loaded = { dataKeyId: string; dataKey: KeyObject; indexKey: KeyObject };

/**
 * Envelope encryption. Each tenant has a data key (encrypts token data) and an index key
 * (keys fingerprint and search HMACs), both random 256-bit keys stored only wrapped by a
 * KEK. Unwrapped keys are cached per process as KeyObjects: rotation re-wraps key rows
 * but never changes key material, so the cache stays valid across it.
 */
export class Vault {
  private readonly db: Database;
  private readonly kek: KekProvider;
  private readonly loaded = new Map<string, Promise<Loaded>>();
  private readonly byId = new Map<string, KeyObject>();

  constructor(db: Database, kek: KekProvider) {
    this.db = db;
    this.kek = kek;
  }

  /** Encrypts a token's secret part, bound to its tenant and id. */
  async encrypt(tenantId: string, tokenId: string, plaintext: unknown): Promise<{ ciphertext: Buffer; dataKeyId: string }> {
    const keys = await this.keys(tenantId);
    const ciphertext = seal(keys.dataKey, Buffer.from(JSON.stringify(plaintext)), tokenAad(tenantId, tokenId));
    return { ciphertext, dataKeyId: keys.dataKeyId };
  }

  /** Fails (throws) when the ciphertext was made for another token or tenant, or was altered. */
  async decrypt(tenantId: string, tokenId: string, ciphertext: Buffer, dataKeyId: string): Promise<unknown> {
    const key = this.byId.get(`${tenantId}/${dataKeyId}`) ?? (await this.db.withoutAmbient(() => this.dataKeyById(tenantId, dataKeyId)));
    return JSON.parse(open(key, ciphertext, tokenAad(tenantId, tokenId)).toString('utf8'));
  }

  /** A keyed HMAC of a canonical value; `domain` separates fingerprints from search values. */
  async hmac(tenantId: string, domain: string, value: string): Promise<string> {
    const keys = await this.keys(tenantId);
    return createHmac('sha256', keys.indexKey).update(`${domain}\u0000${value}`).digest('base64url');
  }

  /**
   * The keys of the expression filter `hmac: name`: each name (1–100 characters) is its own
   * tenant key, derived with HKDF-SHA256 from the index key. Derived, they never reproduce a
   * fingerprint or search hash; per tenant, equal names give equal HMACs of equal values.
   */
  async expressionKeys(tenantId: string): Promise<(name: string) => KeyObject | undefined> {
    const { indexKey } = await this.keys(tenantId);
    return (name) => {
      if (name.length === 0 || name.length > 100) return undefined;
      return createSecretKey(Buffer.from(hkdfSync('sha256', indexKey, Buffer.alloc(0), `expression-hmac\u0000${name}`, 32)));
    };
  }

  /**
   * Throws unless the keyring opens every tenant key stored: each KEK id they are wrapped
   * under must be in it (all missing ones are named at once) and must open one of its keys
   * (a right id with a wrong key). Cheap: one key per KEK id is unwrapped.
   */
  async checkKeyring(): Promise<void> {
    const samples = await findKeySamplePerKek(this.db);
    const missing = samples.filter((s) => !this.kek.has(s.kek_id));
    if (missing.length) {
      const which = missing.map((s) => `${s.keys} tenant keys are wrapped by KEK "${s.kek_id}"`).join('; ');
      throw new Error(`${which}, which is not in the keyring (COFFER_KEYS): add it back, after the current key`);
    }
    for (const sample of samples) this.unwrap(sample);
  }

  /**
   * Re-wraps every tenant key under the keyring's current KEK; safe while the service runs.
   * The keyring is checked first, so a missing or wrong KEK changes nothing.
   */
  async rotate(log: Logger): Promise<number> {
    await this.checkKeyring();
    let count = 0;
    for (;;) {
      const rows = await findKeysNotWrappedBy(this.db, this.kek.currentId, 500);
      if (rows.length === 0) return count;
      for (const row of rows) {
        const material = this.unwrap(row);
        const { kekId, wrapped } = this.kek.wrap(material, keyAad(row.tenant_id, row.purpose, row.id));
        if (await rewrapKey(this.db, row.tenant_id, row.id, row.kek_id, { kek_id: kekId, wrapped })) count++;
      }
      log.info({ rewrapped: count }, 'tenant keys re-wrapped');
    }
  }

  private keys(tenantId: string): Promise<Loaded> {
    let pending = this.loaded.get(tenantId);
    if (!pending) {
      // Shared by concurrent requests, so it must not run inside any one request's transaction.
      pending = this.db.withoutAmbient(() => this.load(tenantId));
      this.loaded.set(tenantId, pending);
      pending.catch(() => this.loaded.delete(tenantId));
    }
    return pending;
  }

  private async load(tenantId: string): Promise<Loaded> {
    let rows = await findActiveKeys(this.db, tenantId);
    for (const purpose of ['data', 'index'] as const) {
      if (rows.some((r) => r.purpose === purpose)) continue;
      const id = uuidv4();
      const { kekId, wrapped } = this.kek.wrap(randomBytes(32), keyAad(tenantId, purpose, id));
      await insertKeyIfAbsent(this.db, tenantId, { id, purpose, kek_id: kekId, wrapped });
    }
    if (rows.length < 2) rows = await findActiveKeys(this.db, tenantId);
    const data = rows.find((r) => r.purpose === 'data')!;
    const index = rows.find((r) => r.purpose === 'index')!;
    const dataKey = createSecretKey(this.unwrap(data));
    this.byId.set(`${tenantId}/${data.id}`, dataKey);
    return { dataKeyId: data.id, dataKey, indexKey: createSecretKey(this.unwrap(index)) };
  }

  private async dataKeyById(tenantId: string, id: string): Promise<KeyObject> {
    const row = await findKeyById(this.db, tenantId, id);
    if (!row) throw new Error(`data key ${id} not found for tenant`);
    const key = createSecretKey(this.unwrap(row));
    this.byId.set(`${tenantId}/${id}`, key);
    return key;
  }

  private unwrap(row: TenantKeyRow): Buffer {
    return this.kek.unwrap(row.kek_id, row.wrapped, keyAad(row.tenant_id, row.purpose, row.id));
  }
}

function tokenAad(tenantId: string, tokenId: string): Buffer {
  return Buffer.from(`token\u0000${tenantId}\u0000${tokenId}`);
}

function keyAad(tenantId: string, purpose: string, id: string): Buffer {
  return Buffer.from(`tenant-key\u0000${tenantId}\u0000${purpose}\u0000${id}`);
}
