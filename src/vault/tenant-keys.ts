import { createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { uuidv4 } from '../db/ids.ts';
import type { Logger } from '../logger.ts';
import { open, seal, type KekProvider } from './keyring.ts';
import { SealCounter } from './seal-counter.ts';
import {
  addSeals,
  findActiveKeys,
  findKeyById,
  findKeySamplePerKek,
  findKeysNotWrappedBy,
  insertKeyIfAbsent,
  retireKey,
  rewrapKey,
  type TenantKeyRow,
} from './store.ts';

type Loaded = { dataKeyId: string; dataKey: KeyObject; indexKey: KeyObject };

/**
 * A data key seals with random 96-bit GCM nonces, which NIST bounds at 2³² uses per key: it
 * is replaced after 2³¹, half of that, which leaves room for counts still on their way.
 */
export const MAX_SEALS_PER_DATA_KEY = 2 ** 31;

export type VaultOptions = {
  /** Seals after which a tenant's data key is replaced (default MAX_SEALS_PER_DATA_KEY). */
  maxSealsPerKey?: number;
  /** A process reports its count of a key after this many seals (default 1000), … */
  reportEvery?: number;
  /** … and at least this often (default 60 s). */
  reportIntervalMs?: number;
};

/**
 * Envelope encryption. Each tenant has a data key (encrypts token data) and an index key
 * (keys fingerprint and search HMACs), both random 256-bit keys stored only wrapped by a
 * KEK. Unwrapped keys are cached per process as KeyObjects: rotation re-wraps key rows
 * but never changes key material, so the cache stays valid across it. A data key that has
 * sealed MAX_SEALS_PER_DATA_KEY values is retired for a new one; it still opens what it sealed.
 */
export class Vault {
  private readonly db: Database;
  private readonly kek: KekProvider;
  private readonly loaded = new Map<string, Promise<Loaded>>();
  private readonly byId = new Map<string, KeyObject>();
  private readonly maxSeals: number;
  private readonly seals: SealCounter;

  constructor(db: Database, kek: KekProvider, opts: VaultOptions = {}) {
    this.db = db;
    this.kek = kek;
    this.maxSeals = opts.maxSealsPerKey ?? MAX_SEALS_PER_DATA_KEY;
    this.seals = new SealCounter((tenantId, keyId, n) => this.reportSeals(tenantId, keyId, n), {
      every: opts.reportEvery ?? 1000,
      intervalMs: opts.reportIntervalMs ?? 60_000,
    });
  }

  /** Reports the seals counted so far; call before the database closes. */
  close(): Promise<void> {
    return this.seals.close();
  }

  /** Encrypts a token's secret part, bound to its tenant and id. */
  async encrypt(tenantId: string, tokenId: string, plaintext: unknown): Promise<{ ciphertext: Buffer; dataKeyId: string }> {
    const keys = await this.keys(tenantId);
    const ciphertext = seal(keys.dataKey, Buffer.from(JSON.stringify(plaintext)), tokenAad(tenantId, tokenId));
    this.seals.note(tenantId, keys.dataKeyId);
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
      // Characters (code points), as the docs count them, not UTF-16 units.
      if (name.length === 0 || name.length > 200 || [...name].length > 100) return undefined;
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

  /**
   * Adds a process's count to the key's. Past the budget the key is retired and a new one made
   * (by one process: the others find it retired at their next report); either way this process
   * loads the new active key for what it seals next. Outside any request's transaction.
   */
  private async reportSeals(tenantId: string, keyId: string, n: number): Promise<void> {
    await this.db.withoutAmbient(async () => {
      const usage = await addSeals(this.db, tenantId, keyId, n);
      if (!usage || (usage.active && usage.sealed < this.maxSeals)) return;
      if (usage.active) {
        await this.db.transaction(async (tx) => {
          if (!(await retireKey(this.db, tenantId, keyId, tx))) return;
          const id = uuidv4();
          const { kekId, wrapped } = this.kek.wrap(randomBytes(32), keyAad(tenantId, 'data', id));
          await insertKeyIfAbsent(this.db, tenantId, { id, purpose: 'data', kek_id: kekId, wrapped }, tx);
        });
      }
      const current = await this.loaded.get(tenantId)?.catch(() => undefined);
      if (current?.dataKeyId === keyId) this.loaded.delete(tenantId);
    });
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
