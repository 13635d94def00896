import http from 'node:http';
import pg from 'pg';

/** One request exactly as generated: fetch would normalise paths, refuse some headers and bodies on GET. */
export type RawRequest = {
  method: string;
  /** Path and query, already percent-encoded as they should go on the wire. */
  path: string;
  headers: Record<string, string | string[]>;
  body?: string | Buffer;
};

export type RawResponse = { status: number; headers: http.IncomingHttpHeaders; text: string; ms: number };

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

export function send(base: string, req: RawRequest, timeoutMs = 60_000): Promise<RawResponse> {
  const url = new URL(base);
  const started = performance.now();
  const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, 'utf8');
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: req.method,
        path: req.path,
        agent,
        headers: { ...req.headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }));
        res.on('error', reject);
      },
    );
    r.on('timeout', () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    r.on('error', reject);
    r.end(body);
  });
}

export function closeClient(): void {
  agent.destroy();
}

/**
 * Watches for state changes made by rejected requests, cheaply: a request that wrote
 * anything took a transaction id, so while PostgreSQL's next transaction id stands still
 * nothing changed. When it moved during a refused request, each of those transactions
 * must have rolled back; for any that committed, the tables (row count and newest row
 * version each, read from the catalogue so new tables count too) are compared with the
 * last known state to name what changed.
 */
export async function stateWatch(databaseUrl: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const tables = (
    await client.query(
      `SELECT table_name FROM information_schema.tables
       WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations' ORDER BY 1`,
    )
  ).rows.map((r) => r.table_name as string);
  // A tenant key's seal count is reported by a timer (src/vault/seal-counter.ts), whenever it falls:
  // for tenant_keys only the keys themselves count, not that counter.
  const fingerprint = (t: string) => t === 'tenant_keys'
    ? `count(*)::text || ':' || coalesce(md5(string_agg(id::text || kek_id || active::text, ',' ORDER BY id)), '')`
    : `count(*)::text || ':' || coalesce(max(xmin::text::bigint), 0)::text`;
  const tablesSql = tables
    .map((t) => `SELECT '${t}' AS t, ${fingerprint(t)} AS f FROM "${t}"`)
    .join(' UNION ALL ');
  const nextXid = async () => BigInt((await client.query('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x')).rows[0].x);
  const snapshot = async () => new Map(((await client.query(tablesSql)).rows as { t: string; f: string }[]).map((r) => [r.t, r.f]));

  let xid = await nextXid();
  let known = await snapshot();
  return {
    /** Call right before a request. */
    async before(): Promise<void> {
      const now = await nextXid();
      if (now !== xid) known = await snapshot();
      xid = now;
    },
    /** Call after it; for a refused request, what it changed (nothing, one hopes). */
    async after(refused: boolean): Promise<string[]> {
      const now = await nextXid();
      if (now === xid) return [];
      let problems: string[] = [];
      if (refused) {
        const committed = (
          await client.query(`SELECT x FROM generate_series($1::bigint, $2::bigint - 1) x WHERE pg_xact_status(x::text::xid8) = 'committed'`, [String(xid), String(now)])
        ).rows;
        if (committed.length > 0) {
          const current = await snapshot();
          const diff = changed(known, current);
          // Another database on a shared server may have committed: only a difference here counts.
          if (diff.length) problems = [`a refused request committed ${committed.length} transaction(s) that changed ${diff.join(', ')}`];
        }
      }
      known = await snapshot();
      xid = now;
      return problems;
    },
    close: () => client.end(),
  };
}

function changed(before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [t, f] of after) {
    const was = before.get(t);
    if (was !== f) out.push(`${t} (rows ${was?.split(':')[0] ?? '?'} → ${f.split(':')[0]})`);
  }
  return out;
}
