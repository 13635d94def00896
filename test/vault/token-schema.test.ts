import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { searchCondition } from '../../src/features/tokens/store.ts';
import { createLogger } from '../../src/logger.ts';
import { parseSearchQuery } from '../../src/search/query.ts';
import { LocalKeyring } from '../../src/vault/keyring.ts';
import { Vault } from '../../src/vault/tenant-keys.ts';
import { createTestDatabase } from '../helpers/server.ts';

const log = createLogger('silent');

/**
 * What the tokens table keeps instead of per-row foreign keys (migration 009): no tenant key
 * can be deleted, so every token's data key stays; and the GIN indexes, which hold only rows
 * with search values or metadata, are the ones token search and the metadata filter use.
 */
describe('vault: the tokens table', () => {
  let database: { url: string; drop(): Promise<void> };
  let db: Database;
  let tenantId: string;

  before(async () => {
    database = await createTestDatabase();
    db = new Database(database.url, 4, log);
    await migrate(db.pool, log);
    tenantId = randomUUID();
    await db.query(`INSERT INTO tenants (id, name) VALUES ($1, 'schema')`, [tenantId]);
    // The vault makes the tenant's keys on first use.
    await new Vault(db, new LocalKeyring([{ id: 'k1', key: randomBytes(32) }])).encrypt(tenantId, 'first', { n: 1 });
  });
  after(async () => {
    await db.close();
    await database.drop();
  });

  const refusal = async (sql: string) => {
    const err = await db.query(sql, sql.includes('$1') ? [tenantId] : []).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof pg.DatabaseError, `${sql} was not refused`);
    assert.equal(err.code, '23001');
    assert.match(err.message, /tenant keys are never deleted/);
  };

  it('refuses to delete a tenant key, retired or active, or to truncate them', async () => {
    await db.query(`UPDATE tenant_keys SET active = false WHERE tenant_id = $1 AND purpose = 'data'`, [tenantId]);
    await refusal(`DELETE FROM tenant_keys WHERE tenant_id = $1 AND NOT active`);
    await refusal(`DELETE FROM tenant_keys WHERE tenant_id = $1`);
    await refusal(`TRUNCATE tenant_keys CASCADE`);
    const [{ n }] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM tenant_keys WHERE tenant_id = $1`, [tenantId]);
    assert.equal(n, 2, 'both keys are still there');
  });

  it('searches data and metadata through their GIN indexes', async () => {
    // Enough rows, most without search values or metadata, for the statistics to mean something.
    await db.query(
      `INSERT INTO tokens (tenant_id, id, type, ciphertext, data_key_id, containers, metadata, search_hashes)
       SELECT $1, 'row-' || g, 'token', '\\x00', (SELECT id FROM tenant_keys WHERE tenant_id = $1 AND purpose = 'data'), '{/general/}',
         CASE WHEN g % 50 = 0 THEN jsonb_build_object('order', g::text) ELSE '{}' END,
         CASE WHEN g % 50 = 0 THEN ARRAY['hash-' || g] ELSE '{}' END
       FROM generate_series(1, 5000) g`,
      [tenantId],
    );
    await db.query('ANALYZE tokens');
    const plan = async (query: string) => {
      const c = searchCondition(parseSearchQuery(query));
      const client = await db.pool.connect();
      try {
        await client.query('BEGIN');
        // Without a sequential scan to fall back on, a condition the partial index cannot serve shows as one anyway.
        await client.query('SET LOCAL enable_seqscan = off');
        const rows = (await client.query(`EXPLAIN SELECT id FROM tokens WHERE ${c.sql}`, c.params)).rows as { 'QUERY PLAN': string }[];
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    };
    assert.match(await plan('data:hash-50'), /Bitmap Index Scan on tokens_search/);
    assert.match(await plan('metadata.order:100'), /Bitmap Index Scan on tokens_metadata/);
    const either = await plan('data:hash-50 OR metadata.order:100');
    assert.match(either, /tokens_search/);
    assert.match(either, /tokens_metadata/);
    // And they find what they should: the two rows that have the value, of 5,000.
    const c = searchCondition(parseSearchQuery('data:hash-50 OR metadata.order:100'));
    const found = await db.query<{ id: string }>(
      `SELECT id FROM tokens WHERE tenant_id = $1 AND ${c.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + 1}`)} ORDER BY id`,
      [tenantId, ...c.params],
    );
    assert.deepEqual(found.map((r) => r.id), ['row-100', 'row-50']);
  });
});
