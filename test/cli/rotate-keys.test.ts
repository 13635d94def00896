import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Running } from '../../src/main.ts';
import { runCli } from '../helpers/cli.ts';
import { call, createApplication } from '../helpers/http.ts';
import { createTestDatabase, queryOnce, rememberSecret, startOnDatabase } from '../helpers/server.ts';

/**
 * `coffer rotate-keys` on a database whose tenant keys are wrapped by more than one KEK
 * (a tenant created after an earlier rotation began), and what retiring the old KEKs
 * leaves readable: every kind of sealed value, not only tokens.
 */

const kOld = randomBytes(32).toString('base64');
const kMid = randomBytes(32).toString('base64');
const kNew = randomBytes(32).toString('base64');
const PAN = '4111111111111111';
const SSN = '219-09-9999';
const PROXY_SECRET = 'proxy-configuration-secret-5a1f';
const REACTOR_SECRET = 'reactor-configuration-secret-77c2';
rememberSecret(kOld, kMid, kNew, PAN, SSN, PROXY_SECRET, REACTOR_SECRET);

const reveal = [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
const REACTOR_CODE = 'module.exports = async function (req) { return { raw: { ok: true } }; };';

const startOn = (databaseUrl: string, cofferKeys: string, dataDir: string) =>
  startOnDatabase(databaseUrl, { DATA_DIR: dataDir, WORKERS: '0', COFFER_KEYS: cofferKeys });

type KeyRow = { id: string; tenant_id: string; kek_id: string; wrapped: Buffer };

describe('coffer rotate-keys across several KEKs and tenants', () => {
  let database: { url: string; drop(): Promise<void> };
  let dataDir: string;
  let running: Running | undefined;
  const a = { tenant: '', key: '', admin: '', token: '', proxy: '', reactor: '', webhook: '' };
  const b = { tenant: '', key: '', token: '' };

  const keyRows = () => queryOnce<KeyRow>(database.url, 'SELECT id, tenant_id, kek_id, wrapped FROM tenant_keys ORDER BY id');

  before(async () => {
    database = await createTestDatabase();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-rotate-'));

    // Tenant A lives under "old": a token, and each other kind of sealed value.
    running = await startOn(database.url, `old:${kOld}`, dataDir);
    a.tenant = running.firstKey!.tenant_id;
    a.admin = running.firstKey!.api_key;
    rememberSecret(a.admin);
    const server = { url: running.url, key: a.admin } as Parameters<typeof createApplication>[0];
    a.key = (await createApplication(server, { name: 'a', type: 'private', rules: reveal })).key;
    const token = await call(running.url, 'POST', '/tokens', { key: a.key, body: { type: 'card_number', data: PAN } });
    assert.equal(token.status, 201, token.text);
    a.token = token.body.id;
    const proxy = await call(running.url, 'POST', '/proxies', {
      key: a.admin,
      body: { name: 'p', destination_url: 'https://api.processor.example/v1', configuration: { SECRET: PROXY_SECRET } },
    });
    assert.equal(proxy.status, 201, proxy.text);
    rememberSecret(proxy.body.key);
    a.proxy = proxy.body.id;
    const reactor = await call(running.url, 'POST', '/reactors', { key: a.admin, body: { name: 'r', code: REACTOR_CODE, configuration: { SECRET: REACTOR_SECRET } } });
    assert.equal(reactor.status, 201, reactor.text);
    a.reactor = reactor.body.id;
    const webhook = await call(running.url, 'POST', '/webhooks', { key: a.admin, body: { name: 'w', url: 'https://hooks.example.com/coffer', events: ['token.created'] } });
    assert.equal(webhook.status, 201, webhook.text);
    rememberSecret(webhook.body.secret);
    a.webhook = webhook.body.id;
    await running.stop();

    // A rotation to "mid" was begun (the key put first) but not run: tenant B's keys are under "mid".
    running = await startOn(database.url, `mid:${kMid},old:${kOld}`, dataDir);
    const t = await running.services.tenants.initialize('B');
    rememberSecret(t.api_key);
    b.tenant = t.tenant_id;
    b.key = (await createApplication({ url: running.url, key: t.api_key } as Parameters<typeof createApplication>[0], { name: 'b', type: 'private', rules: reveal })).key;
    const bt = await call(running.url, 'POST', '/tokens', { key: b.key, body: { type: 'social_security_number', data: SSN } });
    assert.equal(bt.status, 201, bt.text);
    b.token = bt.body.id;
    await running.stop();
    running = undefined;

    const rows = await keyRows();
    assert.deepEqual(rows.map((r) => r.kek_id).sort(), ['mid', 'mid', 'old', 'old']);
  });

  after(async () => {
    await running?.stop();
    await database?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('without one of the KEKs in use, it names every missing one with its count and changes nothing', async () => {
    const before = await keyRows();
    const result = await runCli(['rotate-keys'], { DATABASE_URL: database.url, DATA_DIR: dataDir, COFFER_KEYS: `new:${kNew},old:${kOld}` });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /2 tenant keys are wrapped by KEK "mid", which is not in the keyring \(COFFER_KEYS\)/);
    assert.equal(result.stdout, '');
    for (const k of [kOld, kMid, kNew]) assert.ok(!result.stderr.includes(k));
    assert.deepEqual(await keyRows(), before, 'not one key was re-wrapped');

    const neither = await runCli(['rotate-keys'], { DATABASE_URL: database.url, DATA_DIR: dataDir, COFFER_KEYS: `new:${kNew}` });
    assert.equal(neither.code, 1);
    assert.match(neither.stderr, /2 tenant keys are wrapped by KEK "mid"; 2 tenant keys are wrapped by KEK "old", which is not in the keyring/);
    assert.deepEqual(await keyRows(), before);
  });

  it('without COFFER_KEYS or a key file it stops, and makes no key file', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-rotate-nokeys-'));
    try {
      const before = await keyRows();
      const result = await runCli(['rotate-keys'], { DATABASE_URL: database.url, DATA_DIR: empty, COFFER_KEYS: '' });
      assert.equal(result.code, 1);
      assert.match(result.stderr, /no keyring: COFFER_KEYS is not set and there is no key file/);
      assert.equal(fs.existsSync(path.join(empty, 'keys')), false);
      assert.deepEqual(await keyRows(), before);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  it('without COFFER_KEYS or a key file it stops before it starts or creates an embedded database', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-rotate-nokeys-'));
    try {
      const result = await runCli(['rotate-keys'], { DATA_DIR: empty, COFFER_KEYS: '' });
      assert.equal(result.code, 1);
      assert.match(result.stderr, /no keyring: COFFER_KEYS is not set and there is no key file/);
      assert.deepEqual(fs.readdirSync(empty), []);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  it('with a wrong key under a right id, it names that id and changes nothing', async () => {
    const before = await keyRows();
    const result = await runCli(['rotate-keys'], { DATABASE_URL: database.url, DATA_DIR: dataDir, COFFER_KEYS: `new:${kNew},old:${kOld},mid:${kOld}` });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /KEK "mid" does not open/);
    assert.deepEqual(await keyRows(), before, 'not one key was re-wrapped');
  });

  it('re-wraps the keys of every tenant; with only the new KEK every sealed value still opens', async () => {
    const result = await runCli(['rotate-keys'], { DATABASE_URL: database.url, DATA_DIR: dataDir, COFFER_KEYS: `new:${kNew},mid:${kMid},old:${kOld}` });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Re-wrapped 4 tenant keys under key "new"\. Keys no longer first in COFFER_KEYS can now be retired\./);
    assert.ok((await keyRows()).every((r) => r.kek_id === 'new'));

    running = await startOn(database.url, `new:${kNew}`, dataDir);
    await running.services.vault.checkKeyring();
    const url = running.url;
    assert.equal((await call(url, 'GET', `/tokens/${a.token}`, { key: a.key })).body.data, PAN);
    assert.equal((await call(url, 'GET', `/tokens/${b.token}`, { key: b.key })).body.data, SSN);
    const proxy = await call(url, 'GET', `/proxies/${a.proxy}`, { key: a.admin });
    assert.equal(proxy.status, 200, proxy.text);
    assert.deepEqual(proxy.body.configuration, { SECRET: PROXY_SECRET });
    const reactor = await call(url, 'GET', `/reactors/${a.reactor}`, { key: a.admin });
    assert.equal(reactor.status, 200, reactor.text);
    assert.deepEqual(reactor.body.configuration, { SECRET: REACTOR_SECRET });
    // A webhook's signing secret is never shown again; it opens as its deliveries open it.
    const [row] = await queryOnce(database.url, 'SELECT secret_ciphertext, secret_key_id FROM webhooks WHERE id = $1', [a.webhook]);
    const secret = await running.services.vault.decrypt(a.tenant, `webhook:${a.webhook}`, row.secret_ciphertext, row.secret_key_id);
    assert.equal(typeof secret, 'string');
  });

  it('with the key file of DATA_DIR as the keyring, it says so', async () => {
    const keyed = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-rotate-keyfile-'));
    try {
      fs.writeFileSync(path.join(keyed, 'keys'), `new:${kNew}\n`, { mode: 0o600 });
      const result = await runCli(['rotate-keys'], { DATABASE_URL: database.url, DATA_DIR: keyed, COFFER_KEYS: '' });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, `Re-wrapped 0 tenant keys under key "new". Keys no longer first in the key file ${path.join(keyed, 'keys')} can now be retired.\n`);
    } finally {
      fs.rmSync(keyed, { recursive: true, force: true });
    }
  });

  it('the service does not start with a keyring that lacks a KEK in use, naming it', async () => {
    await running!.stop();
    running = undefined;
    await assert.rejects(startOn(database.url, `other:${kOld}`, dataDir), /4 tenant keys are wrapped by KEK "new", which is not in the keyring/);
  });
});
