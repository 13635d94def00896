import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Running } from '../../src/main.ts';
import { runCli } from '../helpers/cli.ts';
import { call, createApplication } from '../helpers/http.ts';
import { createTestDatabase, queryOnce, rememberSecret, startOnDatabase } from '../helpers/server.ts';

const k1 = randomBytes(32).toString('base64');
const k2 = randomBytes(32).toString('base64');
const PAN = '4000056655665556';
const PAN_OTHER = '6011111111111117';
const SSN = '123-45-6789';
const ACCOUNT = '000123456789';
rememberSecret(k1, k2, PAN, PAN_OTHER, SSN, ACCOUNT);

const reveal = [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }];
const year = new Date().getUTCFullYear() + 3;

/**
 * startTestServer always makes a fresh database (and needs a first-start key), so the
 * restarts here are built with start() on one database kept across them.
 */
const startOn = (databaseUrl: string, cofferKeys: string) => startOnDatabase(databaseUrl, { COFFER_KEYS: cofferKeys });

type KeyRow = { id: string; tenant_id: string; purpose: string; kek_id: string; wrapped: Buffer; rewrapped_at: Date | null };

describe('coffer rotate-keys', () => {
  let database: { url: string; drop(): Promise<void> };
  let running: Running | undefined;
  let key: string;
  let otherKey: string;
  const ids: Record<string, string> = {};

  const keyRows = () => queryOnce<KeyRow>(database.url, 'SELECT id, tenant_id, purpose, kek_id, wrapped, rewrapped_at FROM tenant_keys ORDER BY id');

  before(async () => {
    database = await createTestDatabase();
    // First life: only the old KEK.
    running = await startOn(database.url, `old:${k1}`);
    const management = running.firstKey!.api_key;
    rememberSecret(management);
    const server = { url: running.url, key: management } as Parameters<typeof createApplication>[0];
    key = (await createApplication(server, { name: 'rotation', type: 'private', rules: reveal })).key;
    const t = await running.services.tenants.initialize('Other tenant');
    rememberSecret(t.api_key);
    otherKey = (await createApplication(server, { name: 'other', type: 'private', rules: reveal }, t.api_key)).key;

    const create = async (apiKey: string, body: unknown) => {
      const res = await call(running!.url, 'POST', '/tokens', { key: apiKey, body });
      assert.equal(res.status, 201, res.text);
      return res.body.id as string;
    };
    ids.card = await create(key, { type: 'card', data: { number: PAN, expiration_month: 6, expiration_year: year } });
    ids.ssn = await create(key, { type: 'social_security_number', data: SSN });
    ids.bank = await create(key, { type: 'us_bank_account_number', data: ACCOUNT });
    ids.other = await create(otherKey, { type: 'card_number', data: PAN_OTHER });
    await running.stop();
    running = undefined;
  });

  after(async () => {
    await running?.stop();
    await database?.drop();
  });

  const reveals = async (url: string, apiKey: string, id: string) => {
    const res = await call(url, 'GET', `/tokens/${id}`, { key: apiKey });
    assert.equal(res.status, 200, res.text);
    return res.body.data;
  };

  it('without the old KEK the service does not start, naming the missing key, and changes nothing', async () => {
    await assert.rejects(startOn(database.url, `new:${k2}`), (err: Error) => {
      assert.match(err.message, /KEK "old", which is not in the keyring \(COFFER_KEYS\)/);
      for (const k of [k1, k2]) assert.ok(!err.message.includes(k), 'no key material in the message');
      return true;
    });
    assert.ok((await keyRows()).every((r) => r.kek_id === 'old' && r.rewrapped_at === null));
  });

  it('with a wrong key under the old id the service does not start either', async () => {
    await assert.rejects(startOn(database.url, `old:${k2}`), /"old"/);
  });

  it('rotate-keys without the old KEK fails, naming the missing key, and changes nothing', async () => {
    const before = await keyRows();
    const result = await runCli(['rotate-keys'], { DATABASE_URL: database.url, COFFER_KEYS: `new:${k2}` });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /KEK "old", which is not in the keyring \(COFFER_KEYS\)/);
    assert.equal(result.stdout, '');
    for (const k of [k1, k2]) assert.ok(!result.stderr.includes(k));
    assert.deepEqual(await keyRows(), before);
  });

  it('re-wraps every tenant key under the first key; the old KEK can then be retired', async () => {
    const before = await keyRows();
    assert.equal(before.length, 4, 'a data and an index key for each of two tenants');
    assert.ok(before.every((r) => r.kek_id === 'old'));

    const env = { DATABASE_URL: database.url, COFFER_KEYS: `new:${k2},old:${k1}` };
    const result = await runCli(['rotate-keys'], env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Re-wrapped 4 tenant keys under key "new"\./);
    for (const k of [k1, k2]) assert.ok(!result.stdout.includes(k) && !result.stderr.includes(k), 'the CLI prints no KEK');

    const rotated = await keyRows();
    assert.deepEqual(rotated.map((r) => r.id), before.map((r) => r.id), 'the same keys, not new ones');
    for (const [i, r] of rotated.entries()) {
      assert.equal(r.kek_id, 'new');
      assert.ok(r.rewrapped_at instanceof Date);
      assert.ok(!r.wrapped.equals(before[i].wrapped), 'the wrapped bytes changed');
    }

    // Running it again finds nothing left to do.
    const again = await runCli(['rotate-keys'], env);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^Re-wrapped 0 tenant keys under key "new"\./);
  });

  it('with only the new KEK, old tokens decrypt and new tokens work', async () => {
    running = await startOn(database.url, `new:${k2}`);
    const url = running.url;
    assert.deepEqual(await reveals(url, key, ids.card), { number: PAN, expiration_month: 6, expiration_year: year });
    assert.equal(await reveals(url, key, ids.ssn), SSN);
    assert.equal(await reveals(url, key, ids.bank), ACCOUNT);
    assert.equal(await reveals(url, otherKey, ids.other), PAN_OTHER);

    const det = await call(url, 'POST', '/detokenize', { key, body: { pan: `{{ ${ids.card} | json: '$.number' }}`, ssn: `{{ ${ids.ssn} }}` } });
    assert.equal(det.status, 200, det.text);
    assert.deepEqual(det.body, { pan: PAN, ssn: SSN });

    const created = await call(url, 'POST', '/tokens', { key, body: { type: 'card_number', data: PAN_OTHER } });
    assert.equal(created.status, 201, created.text);
    assert.equal(await reveals(url, key, created.body.id), PAN_OTHER);

    // Fingerprints are keyed by the index key, which rotation must not have changed.
    const again = await call(url, 'POST', '/tokens', { key, body: { type: 'card', data: { number: PAN, expiration_month: 6, expiration_year: year }, deduplicate_token: true } });
    assert.equal(again.status, 201, again.text);
    const original = await call(url, 'GET', `/tokens/${ids.card}`, { key });
    assert.equal(again.body.fingerprint, original.body.fingerprint);

    assert.ok((await keyRows()).every((r) => r.kek_id === 'new'), 'no key was wrapped under anything else meanwhile');
    await running.stop();
    running = undefined;
  });
});
