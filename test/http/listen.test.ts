import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { start } from '../../src/main.ts';
import { createTestDatabase } from '../helpers/server.ts';

/** A start that cannot listen says which settings to change, not only Node's "listen EADDRINUSE …". */
describe('a start that cannot listen', () => {
  const taken = net.createServer();
  let port: number;
  let database: { url: string; drop(): Promise<void> };
  let dataDir: string;

  before(async () => {
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    port = (taken.address() as net.AddressInfo).port;
    database = await createTestDatabase();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-test-listen-'));
  });
  after(async () => {
    taken.close();
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const env = () => ({ DATABASE_URL: database.url, DATA_DIR: dataDir, DATABASE_POOL_SIZE: '2', WORKERS: '0' });

  it('names HOST and PORT when the API port is taken', async () => {
    const config = loadConfig({ ...env(), PORT: String(port) });
    await assert.rejects(start(config, createLogger('silent')), (err: Error) => {
      assert.match(err.message, new RegExp(`^cannot listen on HOST 127\\.0\\.0\\.1, PORT ${port}: .*EADDRINUSE`));
      return true;
    });
  });

  it('once listening, a failed accept is logged and the server goes on serving', async () => {
    const running = await start(loadConfig({ ...env(), PORT: '0' }), createLogger('silent'));
    try {
      // What Node emits when accepting a connection fails (EMFILE past libuv's reserve, ENOMEM):
      // with no listener, emit() throws, which in the server is an uncaught exception.
      running.app.server.emit('error', Object.assign(new Error('accept ENFILE'), { code: 'ENFILE', syscall: 'accept' }));
      const res = await fetch(`${running.url}/ping`);
      assert.equal(res.status, 200);
    } finally {
      await running.stop();
    }
  });

  it('names HOST and METRICS_PORT when the metrics port is taken', async () => {
    const config = loadConfig({ ...env(), PORT: '0', METRICS_TOKEN: 'a-metrics-token-of-some-length', METRICS_PORT: String(port) });
    await assert.rejects(start(config, createLogger('silent')), (err: Error) => {
      assert.match(err.message, new RegExp(`^cannot serve metrics on HOST 127\\.0\\.0\\.1, METRICS_PORT ${port}: .*EADDRINUSE`));
      return true;
    });
  });
});
