import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Database } from '../../src/db/database.ts';
import { registerHealthRoutes } from '../../src/features/health/routes.ts';
import { createServer } from '../../src/http/server.ts';
import { createLogger } from '../../src/logger.ts';

/**
 * GET /health/ready answers 503 whenever the database cannot be used: refused, and also
 * hung — a server that accepts the connection and never says anything, as a database
 * does when it is frozen or cut off without a reset. (The ready case: test/features/smoke.test.ts.)
 */

const log = createLogger('silent');

describe('GET /health/ready without a usable database', () => {
  const sockets: net.Socket[] = [];
  const silent = net.createServer((s) => sockets.push(s)); // accepts, never answers
  let refusedPort: number;

  before(async () => {
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    refusedPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
  });
  after(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });

  async function ready(port: number) {
    const db = new Database(`postgres://coffer:secret@127.0.0.1:${port}/coffer`, 2, log);
    const app = createServer(log);
    registerHealthRoutes(app, db);
    try {
      const began = Date.now();
      const res = await Promise.race([
        app.inject({ method: 'GET', url: '/health/ready' }),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer within 10 s')), 10_000)),
      ]);
      return { status: res.statusCode, body: res.json(), ms: Date.now() - began, ping: (await app.inject({ method: 'GET', url: '/ping' })).statusCode };
    } finally {
      await app.close();
      for (const s of sockets) s.destroy();
      await db.close().catch(() => {});
    }
  }

  it('503 when the database refuses connections', async () => {
    const res = await ready(refusedPort);
    assert.equal(res.status, 503);
    assert.match(res.body.detail, /not reachable/);
    assert.equal(res.ping, 200, 'liveness does not depend on the database');
  });

  it('503 within its time limit when the database does not answer', async () => {
    const res = await ready((silent.address() as net.AddressInfo).port);
    assert.equal(res.status, 503);
    assert.match(res.body.detail, /did not answer within 2 s/);
    assert.ok(res.ms >= 1950 && res.ms < 4000, `answered after ${res.ms} ms`);
  });
});
