import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/logger.ts';
import { call } from '../helpers/http.ts';
import { createTestDatabase, startTestServer, type TestServer } from '../helpers/server.ts';

const log = createLogger('silent');

/**
 * DATABASE_STATEMENT_TIMEOUT_MS: no statement, lock wait included, holds a pooled connection
 * past it, except the migrations, which may legitimately run long.
 */
describe('statement timeout', () => {
  it('is set on every pooled connection, and migrations wait past it for another process\'s', async () => {
    const database = await createTestDatabase();
    const db = new Database(database.url, 3, log, { statementTimeoutMs: 200 });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      const shown = await Promise.all([1, 2, 3].map(() => db.transaction(async (tx) => (await tx.query('SHOW statement_timeout')).rows[0].statement_timeout)));
      assert.deepEqual(shown, ['200ms', '200ms', '200ms']);
      await assert.rejects(db.query('SELECT pg_sleep(1)'), (err: { code?: string }) => err.code === '57014');

      // Another process holds the migration lock for longer than the timeout allows a statement.
      await holder.query('SELECT pg_advisory_lock(726411903)');
      const migrating = migrate(db.pool, log);
      await new Promise((r) => setTimeout(r, 600));
      await holder.query('SELECT pg_advisory_unlock(726411903)');
      const applied = await migrating;
      assert.ok(applied.length > 0, 'the migrations ran once the lock was free');
      // The migration's connection, without its limit, did not go back to the pool.
      const after = await Promise.all([1, 2, 3].map(() => db.transaction(async (tx) => (await tx.query('SHOW statement_timeout')).rows[0].statement_timeout)));
      assert.deepEqual(after, ['200ms', '200ms', '200ms']);
    } finally {
      await holder.end();
      await db.close();
      await database.drop();
    }
  });

  describe('a request whose statement runs past it', () => {
    let server: TestServer;
    let sql: pg.Client;
    before(async () => {
      server = await startTestServer({ DATABASE_STATEMENT_TIMEOUT_MS: '300' });
      sql = new pg.Client({ connectionString: server.config.databaseUrl });
      await sql.connect();
    });
    after(async () => {
      await sql?.end();
      await server?.stop();
    });

    it('is a 503 with Retry-After that changed nothing, and the same request succeeds once the database answers', async () => {
      const created = await call(server, 'POST', '/reactors', { key: server.key, body: { name: 'locked', code: 'module.exports = async () => ({ raw: 1 });', configuration: {} } });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id;
      const patch = () => call(server, 'PATCH', `/reactors/${id}`, { key: server.key, body: { name: 'renamed' }, contentType: 'application/merge-patch+json' });

      // Another session holds the reactor's row: the PATCH waits for its lock past the limit.
      await sql.query('BEGIN');
      await sql.query('SELECT 1 FROM reactors WHERE id = $1 FOR UPDATE', [id]);
      const slow = await patch();
      await sql.query('ROLLBACK');
      assert.equal(slow.status, 503, slow.text);
      assert.match(slow.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.match(slow.body.detail, /did not complete the request in time/);
      assert.equal(slow.headers.get('retry-after'), '1');
      assert.equal((await call(server, 'GET', `/reactors/${id}`, { key: server.key })).body.name, 'locked');

      const retried = await patch();
      assert.equal(retried.status, 204, retried.text);
      assert.equal((await call(server, 'GET', `/reactors/${id}`, { key: server.key })).body.name, 'renamed');
    });
  });
});
