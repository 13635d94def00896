import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { startEmbeddedPostgres } from '../../src/db/embedded/start.ts';
import { call } from '../helpers/http.ts';
import { alive, killServed, postmasterPid, runCli, serve } from '../helpers/cli.ts';
import { rememberSecret } from '../helpers/server.ts';

/**
 * Several `coffer serve` processes on one DATA_DIR share its embedded PostgreSQL
 * (docs/operations.md, "The embedded database"): whichever stops first must not take the
 * database away from the others; the last one out stops it.
 */

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-shared-'));
const freshDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-shared-'));
const borrowDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-shared-'));
after(() => {
  killServed();
  for (const dir of [dataDir, freshDir, borrowDir]) fs.rmSync(dir, { recursive: true, force: true });
});

describe('two serve processes on one DATA_DIR', () => {
  it('the one that started the database stops without cutting off the other, which stops it last', async () => {
    const first = await serve({ DATA_DIR: dataDir });
    const key = first.firstKey!;
    const second = await serve({ DATA_DIR: dataDir });
    const postmaster = postmasterPid(dataDir)!;
    try {
      assert.equal((await call(second.url, 'GET', '/tenants/self', { key })).status, 200);
      assert.equal(await first.stop(), 0);
      assert.ok(alive(postmaster), 'the database the second process uses is still running');
      assert.equal((await call(second.url, 'GET', '/health/ready')).status, 200);
      assert.equal((await call(second.url, 'GET', '/tenants/self', { key })).status, 200);
    } finally {
      assert.equal(await second.stop(), 0);
    }
    const end = Date.now() + 10_000;
    while (alive(postmaster) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    assert.equal(alive(postmaster), false, 'the last process out stopped the database');
    assert.equal(postmasterPid(dataDir), undefined);
  });
});

describe('first starts at once on a new DATA_DIR', () => {
  it('create one cluster between them, whose password every later start knows', async () => {
    const results = await Promise.all([1, 2, 3].map(() => runCli(['init', '--json'], { DATA_DIR: freshDir })));
    for (const res of results) {
      assert.equal(res.code, 0, res.stderr);
      rememberSecret(JSON.parse(res.stdout).api_key);
    }
    const later = await runCli(['migrate'], { DATA_DIR: freshDir });
    assert.equal(later.code, 0, later.stderr);
    assert.match(later.stdout, /up to date/);
    assert.deepEqual(fs.readdirSync(freshDir).sort(), ['keys', 'postgres', 'postgres.json'], 'no scratch cluster or lock left behind');
    assert.equal(postmasterPid(freshDir), undefined, 'nothing left running');
  });
});

describe('a process that has found the running database but not connected yet', () => {
  it('is not cut off by the one that started it stopping; the last one out stops it', async () => {
    const log = pino({ level: 'silent' });
    // As two one-shot commands (init, migrate) do: the first starts the server, the second finds it.
    const first = await startEmbeddedPostgres(borrowDir, log, { takeOwnership: false });
    const second = await startEmbeddedPostgres(borrowDir, log, { takeOwnership: false });
    const postmaster = postmasterPid(borrowDir)!;
    // The second has opened no pool yet when the first lets go.
    await first.release();
    assert.ok(alive(postmaster), 'the database the second process found is still running');
    const client = new pg.Client({ connectionString: second.url });
    await client.connect();
    assert.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1);
    await client.end();
    await second.release();
    const end = Date.now() + 10_000;
    while (alive(postmaster) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    assert.equal(alive(postmaster), false, 'the last process out stopped the database, though it had not started it');
  });
});
