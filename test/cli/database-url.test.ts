import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';

/**
 * A DATABASE_URL Coffer cannot use stops the start at once, saying where it tried to
 * connect (never the password) — also when the server there accepts the connection and
 * then says nothing, which used to leave the start waiting silently for ever.
 */

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-dburl-'));
const sockets: net.Socket[] = [];
const silent = net.createServer((s) => sockets.push(s));
after(() => {
  for (const s of sockets) s.destroy();
  silent.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

describe('coffer with a DATABASE_URL it cannot use', () => {
  it('refused: fails naming DATABASE_URL and where it points, without the password', async () => {
    const port = await freePort();
    const res = await runCli(['serve'], { DATABASE_URL: `postgres://coffer:pw-refused-123@127.0.0.1:${port}/vault`, DATA_DIR: dataDir, PORT: '0' });
    assert.equal(res.code, 1);
    assert.ok(res.stderr.includes(`cannot connect to the database in DATABASE_URL (coffer@127.0.0.1:${port}/vault): connect ECONNREFUSED`), res.stderr);
    assert.ok(!res.stderr.includes('pw-refused-123'));
  });

  it('through a socket directory (a host parameter): names that directory, not the host in the address', async () => {
    const socketDir = path.join(dataDir, 'no-server-here');
    const res = await runCli(['migrate'], { DATABASE_URL: `postgres://coffer:pw-socket-123@localhost:5433/vault?host=${encodeURIComponent(socketDir)}`, DATA_DIR: dataDir });
    assert.equal(res.code, 1);
    assert.ok(res.stderr.includes(`cannot connect to the database in DATABASE_URL (coffer@${socketDir}:5433/vault): connect ENOENT`), res.stderr);
    assert.ok(!res.stderr.includes('pw-socket-123'));
  });

  it('silent: gives up after 10 s instead of waiting for ever', async () => {
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const { port } = silent.address() as net.AddressInfo;
    const began = Date.now();
    const res = await Promise.race([
      runCli(['migrate'], { DATABASE_URL: `postgres://coffer:pw-silent-123@127.0.0.1:${port}/vault`, DATA_DIR: dataDir }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('still waiting after 30 s')), 30_000)),
    ]);
    assert.equal(res.code, 1);
    assert.ok(res.stderr.includes(`cannot connect to the database in DATABASE_URL (coffer@127.0.0.1:${port}/vault): no answer within 10 s`), res.stderr);
    assert.ok(!res.stderr.includes('pw-silent-123'));
    assert.ok(Date.now() - began >= 9_500, 'it did wait the full 10 s');
  });
});
