import type { Database } from '../../src/db/database.ts';

/**
 * PostgreSQL's plan for `sql`, with sequential scans ruled out: a statement no index serves
 * shows a Seq Scan anyway, so a test can tell which index, if any, a statement reads.
 */
export async function planWithoutSeqScan(db: Database, sql: string, params: unknown[]): Promise<string> {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL enable_seqscan = off');
    const rows = (await client.query(`EXPLAIN ${sql}`, params)).rows as { 'QUERY PLAN': string }[];
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}
