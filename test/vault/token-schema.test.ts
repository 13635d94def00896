import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import pg from 'pg';
import { Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { searchCondition } from '../../src/features/tokens/store.ts';
import { createLogger } from '../../src/logger.ts';
import { parseSearchQuery } from '../../src/search/query.ts';
import { LocalKeyring } from '../../src/vault/keyring.ts';
import { Vault } from '../../src/vault/tenant-keys.ts';
import { planWithoutSeqScan } from '../helpers/plan.ts';
import { createTestDatabase, suiteDatabase } from '../helpers/server.ts';

const log = createLogger('silent');

/** The plan of a token search, with no sequential scan to fall back on: a condition no index serves shows as one anyway. */
async function searchPlan(db: Database, query: string): Promise<string> {
  const c = searchCondition(parseSearchQuery(query));
  return planWithoutSeqScan(db, `SELECT id FROM tokens WHERE ${c.sql}`, c.params);
}

/** The definitions of the tokens table's indexes, by name. */
async function indexDefinitions(db: Database): Promise<Record<string, string>> {
  const rows = await db.query<{ indexname: string; indexdef: string }>(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'tokens'`);
  return Object.fromEntries(rows.map((r) => [r.indexname, r.indexdef]));
}

/**
 * What the tokens table keeps instead of per-row foreign keys (migration 009): no tenant key
 * can be deleted, so every token's data key stays; and the GIN indexes, which hold only rows
 * with search values or metadata, are the ones token search and the metadata filter use.
 */
describe('vault: the tokens table', () => {
  const fresh = suiteDatabase(4);
  let db: Database;
  let tenantId: string;

  before(async () => {
    db = fresh.db;
    tenantId = randomUUID();
    await db.query(`INSERT INTO tenants (id, name) VALUES ($1, 'schema')`, [tenantId]);
    // The vault makes the tenant's keys on first use.
    await new Vault(db, new LocalKeyring([{ id: 'k1', key: randomBytes(32) }])).encrypt(tenantId, 'first', { n: 1 });
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
    const plan = (query: string) => searchPlan(db, query);
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

/**
 * Migration 009 rebuilds the GIN indexes only while that is quick: a tokens table of 100,000
 * rows or more keeps its indexes (the rebuild would block token writes), for an operator to
 * rebuild concurrently. Searches work either way.
 */
describe('vault: migration 009 on a large tokens table', () => {
  const fresh = suiteDatabase(2, { migrated: false });
  const dir = path.join(import.meta.dirname, '../../src/db/migrations');

  it('leaves the indexes of 100,000 tokens as they are, and still refuses to delete a key', async () => {
    const db = fresh.db;
    // The schema as it was before 009, as migrate() itself records it.
    await db.query(`CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    for (const file of fs.readdirSync(dir).filter((f) => f < '009').sort()) {
      // A file of many statements: the simple protocol, as migrate() sends it.
      await db.pool.query(fs.readFileSync(path.join(dir, file), 'utf8'));
      await db.query(`INSERT INTO schema_migrations (version) VALUES ($1)`, [file.replace(/\.sql$/, '')]);
    }
    const tenantId = randomUUID();
    const keyId = randomUUID();
    await db.query(`INSERT INTO tenants (id, name) VALUES ($1, 'large')`, [tenantId]);
    await db.query(`INSERT INTO tenant_keys (id, tenant_id, purpose, kek_id, wrapped) VALUES ($1, $2, 'data', 'k1', '\\x00')`, [keyId, tenantId]);
    await db.query(
      `INSERT INTO tokens (tenant_id, id, type, ciphertext, data_key_id, containers)
       SELECT $1, 'row-' || g, 'token', '\\x00', $2, '{/general/}' FROM generate_series(1, 100000) g`,
      [tenantId, keyId],
    );
    const lines: string[] = [];
    const recorded = createLogger('info', { write: (line: string) => void lines.push(line) });
    assert.ok((await migrate(db.pool, recorded)).includes('009_token_write_cost'));
    // The operator hears of the step left to them.
    const notice = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'migration notice');
    assert.equal(notice?.migration, '009_token_write_cost');
    assert.match(notice?.notice, /GIN indexes were left as they are/);
    const defs = await indexDefinitions(db);
    assert.doesNotMatch(defs.tokens_search, /WHERE/);
    assert.doesNotMatch(defs.tokens_metadata, /WHERE/);
    const keys = await db.query<{ conname: string }>(`SELECT conname FROM pg_constraint WHERE conrelid = 'tokens'::regclass AND contype = 'f'`);
    assert.deepEqual(keys, [], 'the foreign keys go whatever the size');
    await assert.rejects(db.query(`DELETE FROM tenant_keys WHERE id = $1`, [keyId]), /tenant keys are never deleted/);
    // The searches' added condition does not keep them off a full index.
    assert.match(await searchPlan(db, 'data:hash-1'), /Bitmap Index Scan on tokens_search/);
  });

  it('makes them partial on a table under 100,000 tokens (a fresh one here)', async () => {
    const fresh = await createTestDatabase();
    const other = new Database(fresh.url, 2, log);
    try {
      await migrate(other.pool, log);
      const defs = await indexDefinitions(other);
      assert.match(defs.tokens_search, /WHERE \(search_hashes <> '\{\}'::text\[\]\)/);
      assert.match(defs.tokens_metadata, /WHERE \(metadata <> '\{\}'::jsonb\)/);
    } finally {
      await other.close();
      await fresh.drop();
    }
  });
});
