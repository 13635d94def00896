import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { planWithoutSeqScan } from '../helpers/plan.ts';
import { suiteDatabase } from '../helpers/server.ts';

/**
 * Every index costs each write to its table an entry, so the schema keeps only indexes that
 * some statement reads (migration 011 dropped three that none did).
 */
describe('db: the indexes', () => {
  const fresh = suiteDatabase(2);

  it('holds no two indexes with the same definition', async () => {
    const rows = await fresh.db.query<{ indexes: string[] }>(
      `SELECT array_agg(i.indexrelid::regclass::text ORDER BY i.indexrelid::regclass::text) AS indexes
       FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public'
       GROUP BY i.indrelid, i.indkey::text, i.indclass::text, i.indoption::text, coalesce(pg_get_expr(i.indexprs, i.indrelid), ''),
         coalesce(pg_get_expr(i.indpred, i.indrelid), ''), i.indisunique
       HAVING count(*) > 1`,
    );
    assert.deepEqual(rows.map((r) => r.indexes), []);
  });

  it('indexes events, jobs and webhook deliveries only as their statements read them', async () => {
    const rows = await fresh.db.query<{ tablename: string; indexname: string }>(
      `SELECT tablename, indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename IN ('events', 'jobs', 'webhook_deliveries') ORDER BY 1, 2`,
    );
    assert.deepEqual(
      rows.map((r) => `${r.tablename}.${r.indexname}`),
      [
        'events.events_pkey',
        'jobs.jobs_due',
        'jobs.jobs_finished',
        'jobs.jobs_leased',
        'jobs.jobs_pkey',
        'webhook_deliveries.webhook_deliveries_created',
        'webhook_deliveries.webhook_deliveries_pkey',
        'webhook_deliveries.webhook_deliveries_webhook',
      ],
    );
  });

  it('still sweeps events and webhook deliveries through an index', async () => {
    const events = await planWithoutSeqScan(fresh.db, `SELECT id FROM events WHERE id < $1 LIMIT 5000`, ['01900000-0000-7000-8000-000000000000']);
    assert.match(events, /Index (Only )?Scan (using|on) events_pkey/);
    const deliveries = await planWithoutSeqScan(fresh.db, `SELECT id FROM webhook_deliveries WHERE created_at < now() - make_interval(days => $1) LIMIT 5000`, [7]);
    assert.match(deliveries, /Index (Only )?Scan (using|on) webhook_deliveries_created/);
  });

  it("keys the audit log by tenant and id, and reads a tenant's log newest first through that key", async () => {
    const [key] = await fresh.db.query<{ def: string }>(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'audit_events_pkey'`);
    assert.equal(key.def, 'PRIMARY KEY (tenant_id, id)');
    const names = (await fresh.db.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'audit_events' ORDER BY 1`)).map((r) => r.indexname);
    assert.deepEqual(names, ['audit_events_entity', 'audit_events_pkey']);
    const listing = await planWithoutSeqScan(fresh.db, `SELECT id FROM audit_events WHERE tenant_id = $1 AND id < $2 ORDER BY id DESC LIMIT 11`, [
      '00000000-0000-4000-8000-000000000001',
      '01900000-0000-7000-8000-000000000000',
    ]);
    assert.match(listing, /Index (Only )?Scan Backward using audit_events_pkey/);
  });

  it('leaves a log of 100,000 entries or more keyed as it was, and says so', async () => {
    const db = fresh.db;
    const client = await db.pool.connect();
    const notices: string[] = [];
    client.on('notice', (n: { message?: string }) => notices.push(n.message ?? ''));
    try {
      await client.query('BEGIN');
      // The layout before migration 012, holding as many entries as the migration leaves alone.
      await client.query(`ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey`);
      await client.query(`ALTER TABLE audit_events ADD CONSTRAINT audit_events_pkey PRIMARY KEY (id)`);
      await client.query(`CREATE INDEX audit_events_tenant ON audit_events (tenant_id, id DESC)`);
      await client.query(
        `INSERT INTO audit_events (id, tenant_id, entity_type, operation, message)
         SELECT gen_random_uuid(), '00000000-0000-4000-8000-000000000001', 'token', 'read', 'Token data read' FROM generate_series(1, 100000)`,
      );
      await client.query(fs.readFileSync(new URL('../../src/db/migrations/012_audit_events_key.sql', import.meta.url), 'utf8'));
      const [key] = (await client.query(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'audit_events_pkey'`)).rows;
      assert.equal(key.def, 'PRIMARY KEY (id)');
      const names = (await client.query(`SELECT indexname FROM pg_indexes WHERE tablename = 'audit_events' ORDER BY 1`)).rows.map((r) => r.indexname);
      assert.deepEqual(names, ['audit_events_entity', 'audit_events_pkey', 'audit_events_tenant']);
      assert.equal(notices.length, 1);
      assert.match(notices[0], /audit_events holds 100,000 rows or more: its indexes were left as they are; see docs\/operations\.md/);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
