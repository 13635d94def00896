import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { call } from '../helpers/http.ts';
import { rememberSecret } from '../helpers/server.ts';
import { alive, killServed, postmasterPid, runCli, serve } from '../helpers/cli.ts';

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-cli-'));
  dirs.push(dir);
  return dir;
}

/** A setting of the running embedded server, read over its own generated login. */
async function serverSetting(dataDir: string, name: string): Promise<string> {
  const { password } = JSON.parse(fs.readFileSync(path.join(dataDir, 'postgres.json'), 'utf8'));
  const port = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[3]);
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await client.connect();
  try {
    return (await client.query<{ setting: string }>('SELECT current_setting($1) AS setting', [name])).rows[0].setting;
  } finally {
    await client.end();
  }
}

async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

after(() => {
  killServed();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the embedded PostgreSQL and the coffer command', () => {
  it('init --json works before any server ran, prints one JSON object and leaves nothing running', async () => {
    const dataDir = tempDir(); // mode 0700 from mkdtemp
    const res = await runCli(['init', '--tenant-name', 'Acme', '--json'], { DATA_DIR: dataDir });
    assert.equal(res.code, 0, res.stderr);
    const lines = res.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const out = JSON.parse(lines[0]);
    rememberSecret(out.api_key);
    assert.deepEqual(Object.keys(out).sort(), ['api_key', 'application_id', 'owner_user_id', 'signin_url', 'tenant_id']);
    assert.match(out.api_key, /^key_/);
    assert.equal(postmasterPid(dataDir), undefined, 'the server init started was stopped again');

    // The tenant it made is there when the service starts; no second tenant is created.
    const served = await serve({ DATA_DIR: dataDir });
    try {
      assert.equal(served.firstKey, undefined);
      const self = await call(served.url, 'GET', '/tenants/self', { key: out.api_key });
      assert.equal(self.status, 200);
      assert.equal(self.body.id, out.tenant_id);
      assert.equal(self.body.name, 'Acme');
    } finally {
      assert.equal(await served.stop(), 0);
    }
  });

  it('first start prints a key; data survives a restart; init works while the server runs', async () => {
    const dataDir = tempDir();
    const first = await serve({ DATA_DIR: dataDir });
    let key: string;
    try {
      assert.ok(first.firstKey, 'first start prints the management key');
      key = first.firstKey!;
      assert.ok(!first.stdout().includes(key), 'the key is not in the log stream');
      const created = await call(first.url, 'POST', '/applications', { key, body: { name: 'kept', type: 'private', permissions: ['token:read'], create_key: false } });
      assert.equal(created.status, 201);

      const init = await runCli(['init', '--json'], { DATA_DIR: dataDir });
      assert.equal(init.code, 0, init.stderr);
      const other = JSON.parse(init.stdout);
      rememberSecret(other.api_key);
      const self = await call(first.url, 'GET', '/tenants/self', { key: other.api_key });
      assert.equal(self.body.id, other.tenant_id, 'the running server sees the tenant init created');
      assert.equal((await call(first.url, 'GET', '/health/ready')).status, 200, 'init left the shared server running');
      assert.equal(await serverSetting(dataDir, 'wal_init_zero'), 'off', 'the embedded server runs with its documented settings');
      assert.doesNotMatch(first.stderr(), /Warning/, 'the process prints no runtime warnings (deprecations and the like)');
    } finally {
      assert.equal(await first.stop(), 0);
    }
    assert.equal(postmasterPid(dataDir), undefined, 'serve stops the embedded server on exit');
    // The server's own log is kept in its data directory, one file a weekday, not thrown away.
    const logDir = path.join(dataDir, 'postgres', 'log');
    const logs = fs.readdirSync(logDir);
    assert.ok(logs.length > 0 && logs.every((f) => /^postgresql-(Mon|Tue|Wed|Thu|Fri|Sat|Sun)\.log$/.test(f)), logs.join(', '));
    const logged = logs.map((f) => fs.readFileSync(path.join(logDir, f), 'utf8')).join('');
    assert.match(logged, /database system is ready to accept connections/);
    assert.match(logged, /database system is shut down/);

    const second = await serve({ DATA_DIR: dataDir });
    try {
      assert.equal(second.firstKey, undefined, 'no new tenant on a restart');
      const list = await call(second.url, 'GET', '/applications', { key: key! });
      assert.ok(list.body.data.some((a: { name: string }) => a.name === 'kept'));
    } finally {
      await second.stop();
    }
  });

  it('recovers after the process is killed: adopts the orphaned server, or starts over a stale lock', async () => {
    const dataDir = tempDir();
    const first = await serve({ DATA_DIR: dataDir });
    const key = first.firstKey!;
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('close', r));
    const orphan = postmasterPid(dataDir)!;
    assert.ok(alive(orphan), 'PostgreSQL outlives a killed Coffer');

    const second = await serve({ DATA_DIR: dataDir });
    assert.equal((await call(second.url, 'GET', '/tenants/self', { key })).status, 200);
    assert.equal(postmasterPid(dataDir), orphan, 'the running server was adopted, not replaced');
    await second.stop();
    await waitFor(() => !alive(orphan));

    // A crash of both leaves postmaster.pid naming a dead process.
    const third = await serve({ DATA_DIR: dataDir });
    const pgPid = postmasterPid(dataDir)!;
    third.child.kill('SIGKILL');
    process.kill(pgPid, 'SIGKILL');
    await waitFor(() => !alive(pgPid));
    assert.ok(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'a stale lock file remains');
    const fourth = await serve({ DATA_DIR: dataDir });
    try {
      assert.equal((await call(fourth.url, 'GET', '/tenants/self', { key })).status, 200);
    } finally {
      await fourth.stop();
    }
  });

  it('a cluster made in place that the postgres OS user can no longer reach fails at once with what to do', async () => {
    const parent = tempDir();
    fs.chmodSync(parent, 0o755);
    const dataDir = path.join(parent, 'data');
    assert.equal((await runCli(['migrate'], { DATA_DIR: dataDir })).code, 0);
    assert.ok(fs.lstatSync(path.join(dataDir, 'postgres')).isDirectory(), 'a reachable DATA_DIR keeps its cluster in place');
    fs.chmodSync(parent, 0o700);
    const res = await runCli(['migrate'], { DATA_DIR: dataDir });
    if (process.getuid?.() === 0) {
      assert.equal(res.code, 1);
      assert.ok(res.stderr.includes(`cannot reach the cluster in ${path.join(dataDir, 'postgres')} because ${parent} has mode 700`), res.stderr);
      assert.match(res.stderr, /chmod o\+x/);
      assert.equal(res.stdout, '');
    } else {
      // Not root: PostgreSQL runs as us, so every directory we own is reachable.
      assert.equal(res.code, 0, res.stderr);
    }
  });

  it('an EMBEDDED_POSTGRES_DIR the postgres OS user cannot reach fails at once with what to do', async () => {
    const parent = tempDir(); // 0700, owned by us
    const dataDir = path.join(parent, 'data');
    const systemDir = path.join(parent, 'system');
    const res = await runCli(['init', '--json'], { DATA_DIR: dataDir, EMBEDDED_POSTGRES_DIR: systemDir });
    if (process.getuid?.() === 0) {
      assert.equal(res.code, 1);
      assert.ok(res.stderr.includes(`cannot reach EMBEDDED_POSTGRES_DIR (${systemDir}) because ${parent} has mode 700`), res.stderr);
      assert.equal(res.stdout, '');
      assert.equal(fs.existsSync(path.join(dataDir, 'postgres')), false, 'no link to a cluster that was never made');
    } else {
      assert.equal(res.code, 0, res.stderr);
      rememberSecret(JSON.parse(res.stdout).api_key);
      assert.equal(fs.existsSync(systemDir), false, 'only root needs EMBEDDED_POSTGRES_DIR');
    }
  });

  it('a server that will not start fails with its own message, not a silent exit', async () => {
    const dataDir = tempDir();
    assert.equal((await runCli(['migrate'], { DATA_DIR: dataDir })).code, 0);
    fs.appendFileSync(path.join(dataDir, 'postgres', 'postgresql.conf'), "\nshared_buffers = 'plenty'\n");
    const res = await runCli(['migrate'], { DATA_DIR: dataDir });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /embedded PostgreSQL exited \(code 1\)/);
    assert.match(res.stderr, /invalid value for parameter "shared_buffers"/);
    assert.equal(postmasterPid(dataDir), undefined);
  });

  it('migrate applies migrations once and then reports the database up to date', async () => {
    const dataDir = tempDir();
    const first = await runCli(['migrate'], { DATA_DIR: dataDir });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /Applied: 001_foundation/);
    const again = await runCli(['migrate'], { DATA_DIR: dataDir });
    assert.match(again.stdout, /up to date/);
  });

  it('invalid configuration and unknown commands fail with a clear message', async () => {
    const bad = await runCli(['serve'], { PORT: 'eighty', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://x' });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /PORT must be a whole number/);
    assert.match(bad.stderr, /LOG_LEVEL must be one of/);
    assert.match(bad.stderr, /DATABASE_URL must be a postgres/);
    const workers = await runCli(['serve'], { WORKERS: '4' });
    assert.equal(workers.code, 1);
    assert.match(workers.stderr, /WORKERS must be one of 0, 1 \(got "4"\): .*coffer serve --workers N/);
    const unknown = await runCli(['frobnicate'], {});
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /Unknown command "frobnicate"/);
  });

  it('help needs no valid settings; commands without options refuse any instead of ignoring them', async () => {
    const help = await runCli(['--help'], { PORT: 'eighty' });
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: coffer <command>/);
    const typo = await runCli(['migrat'], { PORT: 'eighty' });
    assert.equal(typo.code, 1);
    assert.match(typo.stderr, /Unknown command "migrat"/);
    const dataDir = tempDir();
    for (const args of [['migrate', '--dry-run'], ['rotate-keys', 'now']]) {
      const res = await runCli(args, { DATA_DIR: dataDir });
      assert.equal(res.code, 1, args.join(' '));
      assert.match(res.stderr, /^coffer: (Unknown option '--dry-run'|Unexpected argument 'now')/);
    }
    assert.equal(fs.existsSync(path.join(dataDir, 'postgres')), false, 'nothing was started');
  });
});
