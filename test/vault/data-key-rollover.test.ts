import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import type { Database } from '../../src/db/database.ts';
import { LocalKeyring } from '../../src/vault/keyring.ts';
import { MAX_SEALS_PER_DATA_KEY, Vault } from '../../src/vault/tenant-keys.ts';
import { suiteDatabase } from '../helpers/server.ts';

const keyring = () => new LocalKeyring([{ id: 'k1', key: randomBytes(32) }]);

/**
 * A tenant's data key is retired for a new one once it has sealed its budget of values
 * (random GCM nonces); what the old key sealed still opens. Counts are reported in batches,
 * by every process, and survive a restart.
 */
describe('vault: data key rollover', () => {
  const fresh = suiteDatabase(10);
  let db: Database;
  before(() => {
    db = fresh.db;
  });

  const tenant = async () => {
    const id = randomUUID();
    await db.query(`INSERT INTO tenants (id, name) VALUES ($1, 'rollover')`, [id]);
    return id;
  };
  const dataKeys = (tenantId: string) =>
    db.query<{ id: string; active: boolean; sealed: string }>(`SELECT id, active, sealed FROM tenant_keys WHERE tenant_id = $1 AND purpose = 'data' ORDER BY created_at, active`, [tenantId]);

  it('budgets 2^31 seals per data key by default, half of GCM’s 2^32 for random nonces', () => {
    assert.equal(MAX_SEALS_PER_DATA_KEY, 2 ** 31);
  });

  it('retires a data key after its budget; every value still opens', async () => {
    const t = await tenant();
    const ring = keyring();
    const vault = new Vault(db, ring, { maxSealsPerKey: 10, reportEvery: 5 });
    const sealed: { id: string; ciphertext: Buffer; dataKeyId: string }[] = [];
    for (let i = 0; i < 30; i++) {
      const id = `tok-${i}`;
      sealed.push({ id, ...(await vault.encrypt(t, id, { n: i })) });
      // Reports run in the background: let each finish, as they would between requests.
      await new Promise((r) => setImmediate(r));
      await vault.close();
    }
    const keys = await dataKeys(t);
    assert.ok(keys.length >= 3, `30 seals at 10 a key took ${keys.length} keys`);
    assert.equal(keys.filter((k) => k.active).length, 1, 'one active data key');
    for (const k of keys.filter((k) => !k.active)) assert.ok(Number(k.sealed) >= 10, `a retired key sealed its budget (${k.sealed})`);
    assert.equal(keys.reduce((sum, k) => sum + Number(k.sealed), 0), 30, 'every seal counted once');
    assert.ok(new Set(sealed.map((s) => s.dataKeyId)).size >= 3);

    // A fresh process (nothing cached) opens everything, under whichever key sealed it.
    const fresh = new Vault(db, ring);
    for (const [i, s] of sealed.entries()) assert.deepEqual(await fresh.decrypt(t, s.id, s.ciphertext, s.dataKeyId), { n: i });
  });

  it('two processes: one retires the key, the other moves to the new one at its next report', async () => {
    const t = await tenant();
    const ring = keyring();
    const a = new Vault(db, ring, { maxSealsPerKey: 4, reportEvery: 1000 });
    const b = new Vault(db, ring, { maxSealsPerKey: 4, reportEvery: 1000 });
    const first = await a.encrypt(t, 'x', 1);
    assert.equal((await b.encrypt(t, 'y', 2)).dataKeyId, first.dataKeyId, 'both start on the one active key');
    for (let i = 0; i < 4; i++) await a.encrypt(t, `a${i}`, i);
    await a.close(); // 5 seals reported: a retires the key
    assert.notEqual((await a.encrypt(t, 'a-next', 0)).dataKeyId, first.dataKeyId);
    assert.equal((await b.encrypt(t, 'b-still', 0)).dataKeyId, first.dataKeyId, 'b has not reported yet');
    await b.close(); // b finds its key retired
    const next = await b.encrypt(t, 'b-next', 0);
    assert.notEqual(next.dataKeyId, first.dataKeyId);
    const keys = await dataKeys(t);
    assert.equal(keys.length, 2, 'retired once, not once per process');
    assert.deepEqual(keys.find((k) => k.active)!.id, next.dataKeyId);
    assert.equal(Number(keys.find((k) => k.id === first.dataKeyId)!.sealed), 7);
    await a.close();
    await b.close();
  });

  it('a failed report is kept and sent with the next one', async () => {
    const t = await tenant();
    const ring = keyring();
    const vault = new Vault(db, ring, { reportEvery: 1000 });
    const { dataKeyId } = await vault.encrypt(t, 'a', 1);
    await vault.encrypt(t, 'b', 2);
    // The column refuses the update for as long as the check stands.
    await db.query(`ALTER TABLE tenant_keys ADD CONSTRAINT sealed_frozen CHECK (sealed = 0) NOT VALID`);
    try {
      await vault.close();
    } finally {
      await db.query(`ALTER TABLE tenant_keys DROP CONSTRAINT sealed_frozen`);
    }
    await vault.encrypt(t, 'c', 3);
    await vault.close();
    assert.equal(Number((await dataKeys(t)).find((k) => k.id === dataKeyId)!.sealed), 3);
  });
});
