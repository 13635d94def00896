import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createToken } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

/**
 * The background sweeper (src/sweeper.ts) deletes expired tokens by itself, with their audit
 * entry and token.expired event. The other expiry tests call sweepExpired() directly; this one
 * never does, so it fails if the server stops sweeping tokens.
 */

const VISA = '4242424242424242';
const YEAR = new Date().getUTCFullYear() + 3;

describe('background sweep of expired tokens', () => {
  let server: TestServer;
  let sql: pg.Client;
  let key: string;

  before(async () => {
    // WORKERS=1 (the default) is what starts the sweeper (src/main.ts); WORKERS=0 would run none.
    server = await startTestServer({ WORKERS: '1', SWEEP_INTERVAL_SECONDS: '1' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    rememberSecret(VISA);
    key = (await createApplication(server, { name: 'sweep', type: 'private', permissions: ['token:create', 'token:read'] })).key;
  });
  after(async () => {
    await sql?.end();
    await server?.stop();
  });

  it('deletes an expired token on its own, with its audit entry and token.expired, and leaves live tokens', async () => {
    const card = { type: 'card', data: { number: VISA, expiration_month: 12, expiration_year: YEAR } };
    // Room for the create and the first read on a loaded machine, and still a short wait.
    const expires = Date.now() + 3000;
    const expiring = await createToken(server, key, { ...card, expires_at: new Date(expires).toISOString() });
    const live = await createToken(server, key, card);
    const read = (id: string) => call(server, 'GET', `/tokens/${id}`, { key });

    assert.equal((await read(expiring)).status, 200, 'readable before it expires');
    await new Promise((r) => setTimeout(r, Math.max(0, expires - Date.now()) + 100));
    assert.equal((await read(expiring)).status, 404, 'unreadable from its expiry instant, swept or not');

    // Only the server's own sweeper (every SWEEP_INTERVAL_SECONDS) can delete the row.
    const rowCount = async (id: string) => (await sql.query('SELECT 1 FROM tokens WHERE id = $1', [id])).rowCount;
    await until(async () => (await rowCount(expiring)) === 0, 'the sweeper to delete the expired token', 10_000);
    assert.equal(await rowCount(expiring), 0);

    assert.equal(await rowCount(live), 1, 'a token without expiry is not swept');
    assert.equal((await read(live)).status, 200);

    const events = await sql.query(`SELECT tenant_id, payload FROM events WHERE type = 'token.expired' AND entity_id = $1`, [expiring]);
    assert.equal(events.rowCount, 1, 'one token.expired event');
    assert.equal(events.rows[0].tenant_id, server.tenantId);
    assert.deepEqual(events.rows[0].payload, { id: expiring, type: 'card' });
    const audit = await sql.query(
      `SELECT actor_type FROM audit_events WHERE tenant_id = $1 AND entity_type = 'token' AND entity_id = $2 AND operation = 'expire'`,
      [server.tenantId, expiring],
    );
    assert.equal(audit.rowCount, 1, 'one expire audit entry');
    assert.equal(audit.rows[0].actor_type, 'system');
    assert.equal((await sql.query(`SELECT 1 FROM events WHERE type = 'token.expired' AND entity_id = $1`, [live])).rowCount, 0);
  });
});
