import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { Database, Row, Tx } from '../../src/db/database.ts';
import { call, createApplication, createToken } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Every offset list (GET /tokens, /applications, /applications/{id}/keys, /webhooks,
 * /webhooks/{id}/deliveries, /reactors, /proxies) answers its page and its total_items from
 * one snapshot. To show it without relying on timing, the list's first statement on its table
 * is let through, then a row is deleted (and committed) from another connection, and only then
 * may any further statement of the list on that table start: a count and a page sent as two
 * statements are certain to see different data, a single statement cannot.
 */

/**
 * Until `restore`, the first statement that counts or pages `table` answers, then `between`
 * runs before any further such statement may start. `statements` tells how many there were.
 */
function interleave(db: Database, table: string, between: () => Promise<void>) {
  const listing = (sql: string) => new RegExp(`\\bFROM ${table}\\b`).test(sql) && /\bOFFSET\b|\bcount\(\*\)/.test(sql);
  const query = db.query.bind(db);
  let first: Promise<void> | undefined;
  let seen = 0;
  db.query = (async <T extends Row>(sql: string, params?: unknown[], tx?: Tx): Promise<T[]> => {
    if (!listing(sql)) return query<T>(sql, params, tx);
    seen++;
    if (first) {
      await first;
      return query<T>(sql, params, tx);
    }
    const answer = query<T>(sql, params, tx);
    first = answer.then(between);
    await first;
    return answer;
  }) as Database['query'];
  return {
    statements: () => seen,
    restore: () => void Reflect.deleteProperty(db, 'query'),
  };
}

type Page = { pagination: { total_items: number; page_number: number; page_size: number; total_pages: number }; data: { id: string }[] };

describe('offset lists answer from one snapshot', () => {
  let server: TestServer;
  let sql: pg.Client;
  let tokenKey: string;

  before(async () => {
    server = await startTestServer({ WORKERS: '0' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    tokenKey = (await createApplication(server, { name: 'token writer', type: 'private', permissions: ['token:create', 'token:read'] })).key;
  });
  after(async () => {
    await sql?.end();
    await server?.stop();
  });

  async function list(path: string, query: string, key: string): Promise<Page> {
    const res = await call(server, 'GET', `${path}?${query}`, { key });
    assert.equal(res.status, 200, res.text);
    return res.body;
  }

  /**
   * Checks the list at `path` of `table`, which holds at least three items, `removable` among
   * them: each removal happens between the list's first statement and any other.
   */
  async function assertOneSnapshot(o: { table: string; path: string; removable: string[]; key?: string }) {
    const key = o.key ?? server.key;
    const db = server.running.database.db;
    const remove = async () => {
      const { rowCount } = await sql.query(`DELETE FROM ${o.table} WHERE tenant_id = $1 AND id = $2`, [server.tenantId, o.removable.shift()]);
      assert.equal(rowCount, 1);
    };
    const all = await list(o.path, 'size=100', key);
    const n = all.pagination.total_items;
    assert.ok(n >= 3 && all.data.length === n, JSON.stringify(all.pagination));

    // The whole list on one page: as many rows as the total says.
    let hook = interleave(db, o.table, remove);
    try {
      const page = await list(o.path, 'size=100', key);
      assert.equal(page.data.length, page.pagination.total_items, `${o.path}: a page of ${page.data.length} rows claims ${page.pagination.total_items} items`);
      assert.equal(page.pagination.total_items, n);
      assert.equal(page.pagination.total_pages, 1);
      assert.equal(hook.statements(), 1, 'one statement counts and pages');
    } finally {
      hook.restore();
    }

    // The last page holds the one row past the others, and the total still counts it.
    const m = n - 1;
    hook = interleave(db, o.table, remove);
    try {
      const last = await list(o.path, `page=2&size=${m - 1}`, key);
      assert.deepEqual(last.pagination, { total_items: m, page_number: 2, page_size: m - 1, total_pages: 2 });
      assert.equal(last.data.length, 1);
      assert.equal(hook.statements(), 1, 'one statement counts and pages');
    } finally {
      hook.restore();
    }

    // Past the end: no rows, and the total all the same.
    const past = await list(o.path, `page=2&size=${m - 1}`, key);
    assert.deepEqual(past.pagination, { total_items: m - 1, page_number: 2, page_size: m - 1, total_pages: 1 });
    assert.deepEqual(past.data, []);
    const far = await list(o.path, 'page=7&size=100', key);
    assert.deepEqual(far.pagination, { total_items: m - 1, page_number: 7, page_size: 100, total_pages: 1 });
    assert.deepEqual(far.data, []);
  }

  async function posted(path: string, body: unknown, key = server.key): Promise<string> {
    const res = await call(server, 'POST', path, { key, body });
    assert.equal(res.status, 201, res.text);
    for (const secret of [res.body.key, res.body.secret]) if (typeof secret === 'string') rememberSecret(secret);
    return res.body.id;
  }

  const three = <T>(make: (i: number) => Promise<T>) => Promise.all([0, 1, 2].map(make));

  it('GET /tokens', async () => {
    const ids = await three((i) => createToken(server, tokenKey, { type: 'token', data: `value ${i}` }));
    await assertOneSnapshot({ table: 'tokens', path: '/tokens', removable: ids, key: tokenKey });
  });

  it('GET /applications', async () => {
    const apps = await three((i) => createApplication(server, { name: `listed ${i}`, type: 'private', permissions: ['token:read'] }));
    await assertOneSnapshot({ table: 'applications', path: '/applications', removable: apps.map((a) => a.id) });
  });

  it('GET /applications/{id}/keys', async () => {
    const app = await createApplication(server, { name: 'many keys', type: 'private', permissions: ['token:read'] });
    const more = await Promise.all([0, 1].map(() => posted(`/applications/${app.id}/keys`, undefined)));
    await assertOneSnapshot({ table: 'application_keys', path: `/applications/${app.id}/keys`, removable: more });
  });

  it('GET /webhooks', async () => {
    const ids = await three((i) => posted('/webhooks', { name: `hook ${i}`, url: 'https://hooks.example.com/coffer', events: ['token.created'] }));
    await assertOneSnapshot({ table: 'webhooks', path: '/webhooks', removable: ids });
  });

  it('GET /webhooks/{id}/deliveries', async () => {
    const hook = await posted('/webhooks', { name: 'delivered', url: 'https://hooks.example.com/coffer', events: ['token.created'] });
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of ids) {
      await sql.query(
        `INSERT INTO webhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, attempt, succeeded, status_code, duration_ms)
         VALUES ($1, $2, $3, $4, 'token.created', 1, true, 204, 5)`,
        [id, server.tenantId, hook, randomUUID()],
      );
    }
    await assertOneSnapshot({ table: 'webhook_deliveries', path: `/webhooks/${hook}/deliveries`, removable: ids });
  });

  it('GET /reactors', async () => {
    const code = 'module.exports = async function () { return { raw: {} }; };';
    const ids = await three((i) => posted('/reactors', { name: `listed ${i}`, code, configuration: {} }));
    await assertOneSnapshot({ table: 'reactors', path: '/reactors', removable: ids });
  });

  it('GET /proxies', async () => {
    const ids = await three((i) => posted('/proxies', { name: `listed ${i}`, destination_url: 'https://api.processor.example/v1' }));
    await assertOneSnapshot({ table: 'proxies', path: '/proxies', removable: ids });
  });
});
