import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { killServed, serve } from '../helpers/cli.ts';
import { createTestDatabase } from '../helpers/server.ts';

/**
 * SIGTERM to `coffer serve`: requests in flight finish, but a client that never completes
 * its request cannot hold the process past SHUTDOWN_GRACE_SECONDS.
 */

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-shutdown-'));
const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  killServed();
  for (const fn of cleanup) await fn();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A POST whose body arrives only when `finish` is called (or never). */
function partialPost(url: string, key: string) {
  const { hostname, port } = new URL(url);
  const body = JSON.stringify({ name: 'late', type: 'private', permissions: ['token:read'], create_key: false });
  const socket = net.connect(Number(port), hostname);
  let received = '';
  socket.on('data', (d) => {
    received += d;
    if (/\r\n\r\n/.test(received)) socket.end(); // one answer is all we wait for
  });
  socket.on('error', () => {});
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  socket.write(
    `POST /applications HTTP/1.1\r\nHost: ${hostname}\r\nSVC-API-KEY: ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
  );
  return {
    closed,
    response: () => received,
    finish: () => socket.write(body.slice(10)),
  };
}

describe('coffer serve on SIGTERM', () => {
  it('lets a request in flight finish, and cuts off one that never completes after the grace period', async () => {
    const database = await createTestDatabase();
    cleanup.push(database.drop);
    const served = await serve({ DATABASE_URL: database.url, DATA_DIR: dataDir, SHUTDOWN_GRACE_SECONDS: '2' });
    const key = served.firstKey!;
    const finishing = partialPost(served.url, key);
    const stalled = partialPost(served.url, key);
    await new Promise((r) => setTimeout(r, 300)); // both requests have reached the server
    const began = Date.now();
    const code = served.stop();
    await new Promise((r) => setTimeout(r, 300));
    finishing.finish();
    const answer = await finishing.closed;
    assert.match(answer, /^HTTP\/1\.1 201 /, answer);
    const exited = await Promise.race([code, new Promise((r) => setTimeout(() => r('still running after 15 s'), 15_000))]);
    assert.equal(exited, 0);
    assert.ok(Date.now() - began < 10_000, `stopped after ${Date.now() - began} ms`);
    await stalled.closed;
    assert.equal(stalled.response(), '', 'the stalled request got no answer; its connection was closed');
    assert.match(served.stdout(), /requests still in flight after SHUTDOWN_GRACE_SECONDS/);
  });
});
