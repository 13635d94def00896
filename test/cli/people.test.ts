import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { call } from '../helpers/http.ts';
import { memberCookies } from '../helpers/people.ts';
import { createTestDatabase, rememberSecret, startOnDatabase } from '../helpers/server.ts';

/** `coffer init --owner-email`, `coffer signin-link`, and the owner signing in with the link they print. */
describe('coffer init --owner-email and coffer signin-link', () => {
  let database: { url: string; drop(): Promise<void> };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-cli-people-'));
  const env = () => ({ DATABASE_URL: database.url, DATA_DIR: dataDir, PUBLIC_URL: 'http://127.0.0.1:9' });

  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await database?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('makes the OWNER with the address, prints links that sign the owner in once', async () => {
    const bad = await runCli(['init', '--owner-email', 'not an address'], env());
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--owner-email must/);

    const init = await runCli(['init', '--tenant-name', 'Acme', '--owner-email', 'Owner@Example.com', '--json'], env());
    assert.equal(init.code, 0, init.stderr);
    const made = JSON.parse(init.stdout);
    rememberSecret(made.api_key);
    assert.match(made.signin_url, /^http:\/\/127\.0\.0\.1:9\/signin\/link\?token=/);

    const link = await runCli(['signin-link', '--email', 'owner@example.com'], env());
    assert.equal(link.code, 0, link.stderr);
    assert.match(link.stdout, /Sign-in link for owner@example\.com to tenant Acme/);
    const url = /http:\/\/\S+\/signin\/link\?token=(\S+)/.exec(link.stdout)!;
    const token = decodeURIComponent(url[1]);
    rememberSecret(token);

    const nobody = await runCli(['signin-link', '--email', 'nobody@example.com'], env());
    assert.equal(nobody.code, 1);
    assert.match(nobody.stderr, /is not a member/);
    assert.equal((await runCli(['signin-link'], env())).code, 1);

    const running = await startOnDatabase(database.url, { DATA_DIR: dataDir, WORKERS: '0' });
    try {
      assert.equal(running.firstKey, undefined, 'the tenant init made is the first one');
      const res = await call(running.url, 'POST', '/signin/link', { body: { token } });
      assert.equal(res.status, 204, res.text);
      const m = memberCookies(res);
      const me = await call(running.url, 'GET', '/me', { headers: { cookie: m.cookie } });
      assert.equal(me.body.role, 'OWNER');
      assert.equal(me.body.user.email, 'Owner@Example.com');
      assert.equal(me.body.tenant_id, made.tenant_id);
      assert.equal((await call(running.url, 'POST', '/signin/link', { body: { token } })).status, 409);
      // The link init printed works too (once).
      const first = decodeURIComponent(new URL(made.signin_url).searchParams.get('token')!);
      rememberSecret(first);
      assert.equal((await call(running.url, 'POST', '/signin/link', { body: { token: first } })).status, 204);
    } finally {
      await running.stop();
    }
  });
});
