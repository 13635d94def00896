import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { LocalKeyring, open, parseKeys } from '../../src/vault/keyring.ts';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

const kek = randomBytes(32).toString('base64');
const PAN_A = '4242424242424242';
const PAN_B = '5555555555554444';
const PAN_C = '378282246310005';
const SSN = '078-05-1120';
rememberSecret(kek, PAN_A, PAN_B, PAN_C, SSN);

const reveal = [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }];

// The AADs Vault binds (tenant-keys.ts); written out here so the test checks the format, not just a round trip.
const keyAad = (tenant: string, purpose: string, id: string) => Buffer.from(`tenant-key\u0000${tenant}\u0000${purpose}\u0000${id}`);
const tokenAad = (tenant: string, id: string) => Buffer.from(`token\u0000${tenant}\u0000${id}`);

describe('vault: envelope encryption at rest', () => {
  let server: TestServer;
  let db: pg.Client;
  let key: string;
  let other: { tenant_id: string; key: string };

  before(async () => {
    server = await startTestServer({ COFFER_KEYS: `kek1:${kek}` });
    db = new pg.Client({ connectionString: server.config.databaseUrl });
    await db.connect();
    key = (await createApplication(server, { name: 'vault reader', type: 'private', rules: reveal })).key;
    const t = await createOtherTenant(server);
    const otherApp = await createApplication(server, { name: 'other reader', type: 'private', rules: reveal }, t.api_key);
    other = { tenant_id: t.tenant_id, key: otherApp.key };

    for (const [id, data] of [['tok-a', PAN_A], ['tok-b', PAN_B], ['tok-flip', PAN_A], ['tok-ssn', SSN]] as const) {
      const type = id === 'tok-ssn' ? 'social_security_number' : 'card_number';
      const res = await call(server, 'POST', '/tokens', { key, body: { id, type, data } });
      assert.equal(res.status, 201, res.text);
    }
    // The other tenant holds a token with the same id as ours, and one of its own.
    for (const id of ['tok-a', 'tok-c']) {
      const res = await call(server, 'POST', '/tokens', { key: other.key, body: { id, type: 'card_number', data: PAN_C } });
      assert.equal(res.status, 201, res.text);
    }
  });
  after(async () => {
    await db?.end();
    await server?.stop();
  });

  const row = async (tenant: string, id: string) =>
    (await db.query('SELECT ciphertext, data_key_id FROM tokens WHERE tenant_id = $1 AND id = $2', [tenant, id])).rows[0] as { ciphertext: Buffer; data_key_id: string };

  /** A failed decryption is a 500 with a request id and nothing about the cause, and the server carries on. */
  async function assertUnreadable(path: string, apiKey: string) {
    const res = await call(server, 'GET', path, { key: apiKey });
    assert.equal(res.status, 500, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(typeof res.body.request_id, 'string');
    assert.ok(res.body.request_id.length > 0);
    assert.equal(res.headers.get('x-request-id'), res.body.request_id);
    assert.match(res.body.detail, /unexpected error/);
    assert.equal(res.body.data, undefined);
    for (const internal of [/authenticate/i, /decipher/i, /stack/i, /\.ts\b/, /ciphertext/i, /kek/i]) assert.doesNotMatch(res.text, internal);
    for (const pan of [PAN_A, PAN_B, PAN_C]) assert.ok(!res.text.includes(pan));
  }

  it('stores no plaintext: token rows hold neither the data nor its digits', async () => {
    const rows = (await db.query('SELECT t::text AS text FROM tokens t')).rows as { text: string }[];
    assert.equal(rows.length, 6);
    for (const { text } of rows) {
      for (const secret of [PAN_A, PAN_B, PAN_C, SSN, '078051120']) assert.ok(!text.includes(secret), 'a token row holds plaintext');
    }
    // The views a card allows are stored in the clear on purpose, and only those.
    const views = (await db.query("SELECT views FROM tokens WHERE tenant_id = $1 AND id = 'tok-a'", [server.tenantId])).rows[0].views;
    assert.deepEqual(views, { card: { bin: '424242', last4: '4242', brand: 'visa' } });
  });

  it('stores tenant keys only wrapped by the KEK, bound to tenant, purpose and id', async () => {
    const ring = new LocalKeyring(parseKeys(`kek1:${kek}`));
    const rows = (await db.query('SELECT id, tenant_id, purpose, kek_id, wrapped, active FROM tenant_keys ORDER BY tenant_id, purpose')).rows as {
      id: string; tenant_id: string; purpose: string; kek_id: string; wrapped: Buffer; active: boolean;
    }[];
    // A data and an index key for each of the two tenants.
    assert.equal(rows.length, 4);
    assert.deepEqual(new Set(rows.map((r) => `${r.tenant_id}/${r.purpose}`)), new Set([server.tenantId, other.tenant_id].flatMap((t) => [`${t}/data`, `${t}/index`])));
    const material = new Set<string>();
    for (const r of rows) {
      assert.equal(r.kek_id, 'kek1');
      assert.equal(r.active, true);
      const raw = ring.unwrap(r.kek_id, r.wrapped, keyAad(r.tenant_id, r.purpose, r.id));
      assert.equal(raw.length, 32);
      assert.ok(!r.wrapped.includes(raw), 'the stored bytes do not contain the key');
      material.add(raw.toString('hex'));
      // Bound to its row: the same bytes under another tenant, purpose or id do not unwrap.
      const otherTenant = r.tenant_id === server.tenantId ? other.tenant_id : server.tenantId;
      assert.throws(() => ring.unwrap(r.kek_id, r.wrapped, keyAad(otherTenant, r.purpose, r.id)));
      assert.throws(() => ring.unwrap(r.kek_id, r.wrapped, keyAad(r.tenant_id, r.purpose === 'data' ? 'index' : 'data', r.id)));
    }
    assert.equal(material.size, 4, 'every tenant key is its own random key');

    // End to end: the unwrapped data key opens a token's ciphertext, with the token's tenant and id as AAD.
    const a = await row(server.tenantId, 'tok-a');
    const dataRow = rows.find((r) => r.id === a.data_key_id)!;
    assert.equal(dataRow.purpose, 'data');
    assert.equal(dataRow.tenant_id, server.tenantId);
    const dataKey = createSecretKey(ring.unwrap('kek1', dataRow.wrapped, keyAad(server.tenantId, 'data', dataRow.id)));
    const secret = JSON.parse(open(dataKey, a.ciphertext, tokenAad(server.tenantId, 'tok-a')).toString('utf8'));
    assert.equal(secret.data, PAN_A);
    assert.throws(() => open(dataKey, a.ciphertext, tokenAad(server.tenantId, 'tok-b')));
    assert.throws(() => open(dataKey, a.ciphertext, tokenAad(other.tenant_id, 'tok-a')));
  });

  it('a ciphertext copied onto another token of the tenant does not decrypt', async () => {
    // Both readable first, so the keys are cached: the failure below is the AAD, not a cold cache.
    assert.equal((await call(server, 'GET', '/tokens/tok-b', { key })).body.data, PAN_B);
    await db.query(
      `UPDATE tokens SET ciphertext = (SELECT ciphertext FROM tokens WHERE tenant_id = $1 AND id = 'tok-a') WHERE tenant_id = $1 AND id = 'tok-b'`,
      [server.tenantId],
    );
    await assertUnreadable('/tokens/tok-b', key);
    // The same through detokenize, which must not hand out token A's data under B's id.
    const det = await call(server, 'POST', '/detokenize', { key, body: { b: '{{ tok-b }}' } });
    assert.equal(det.status, 500);
    assert.ok(!det.text.includes(PAN_A));
    // The server keeps serving, and token A is unharmed.
    const a = await call(server, 'GET', '/tokens/tok-a', { key });
    assert.equal(a.status, 200);
    assert.equal(a.body.data, PAN_A);
  });

  it('a ciphertext with one flipped byte does not decrypt', async () => {
    const { ciphertext } = await row(server.tenantId, 'tok-flip');
    const tampered = Buffer.from(ciphertext);
    tampered[tampered.length - 1] ^= 0x01;
    await db.query(`UPDATE tokens SET ciphertext = $2 WHERE tenant_id = $1 AND id = 'tok-flip'`, [server.tenantId, tampered]);
    await assertUnreadable('/tokens/tok-flip', key);
    assert.equal((await call(server, 'GET', '/tokens/tok-ssn', { key })).body.data, SSN);
  });

  it('a ciphertext moved to another tenant does not decrypt there, whether or not its key id moves with it', async () => {
    const source = await row(server.tenantId, 'tok-a');
    assert.equal((await call(server, 'GET', '/tokens/tok-a', { key: other.key })).body.data, PAN_C);

    // Same token id in the other tenant, ciphertext and data key id copied.
    await db.query(`UPDATE tokens SET ciphertext = $2, data_key_id = $3 WHERE tenant_id = $1 AND id = 'tok-a'`, [other.tenant_id, source.ciphertext, source.data_key_id]);
    await assertUnreadable('/tokens/tok-a', other.key);

    // Ciphertext only, under the other tenant's own data key.
    await db.query(`UPDATE tokens SET ciphertext = $2 WHERE tenant_id = $1 AND id = 'tok-c'`, [other.tenant_id, source.ciphertext]);
    await assertUnreadable('/tokens/tok-c', other.key);
    const det = await call(server, 'POST', '/detokenize', { key: other.key, body: '{{ tok-c }}' });
    assert.equal(det.status, 500);
    assert.ok(!det.text.includes(PAN_A));

    // Both tenants go on working.
    assert.equal((await call(server, 'GET', '/tokens/tok-a', { key })).body.data, PAN_A);
    const fresh = await call(server, 'POST', '/tokens', { key: other.key, body: { type: 'card_number', data: PAN_C } });
    assert.equal(fresh.status, 201);
    assert.equal((await call(server, 'GET', `/tokens/${fresh.body.id}`, { key: other.key })).body.data, PAN_C);
  });

  it('the Vault class refuses another tenant\'s data key id and ciphertext directly', async () => {
    const vault = server.running.services.vault;
    const a = await row(server.tenantId, 'tok-a');
    assert.deepEqual(await vault.decrypt(server.tenantId, 'tok-a', a.ciphertext, a.data_key_id), { data: PAN_A, mask: await maskOf('tok-a') });
    await assert.rejects(vault.decrypt(other.tenant_id, 'tok-a', a.ciphertext, a.data_key_id));
    await assert.rejects(vault.decrypt(server.tenantId, 'tok-ssn', a.ciphertext, a.data_key_id));
  });

  it('a sealed reactor configuration or proxy secret copied onto another reactor or proxy does not open there', async () => {
    const code = 'module.exports = async function (req) { return { raw: {} }; };';
    const reactors: string[] = [];
    const proxies: string[] = [];
    for (const n of [1, 2]) {
      const r = await call(server, 'POST', '/reactors', { key: server.key, body: { name: `r${n}`, code, configuration: { SECRET: `reactor-secret-${n}` } } });
      assert.equal(r.status, 201, r.text);
      reactors.push(r.body.id);
      const p = await call(server, 'POST', '/proxies', {
        key: server.key,
        body: { name: `p${n}`, destination_url: 'https://api.processor.example/v1', configuration: { SECRET: `proxy-secret-${n}` } },
      });
      assert.equal(p.status, 201, p.text);
      rememberSecret(p.body.key);
      proxies.push(p.body.id);
    }
    await db.query(`UPDATE reactors SET configuration_ciphertext = (SELECT configuration_ciphertext FROM reactors WHERE id = $1) WHERE id = $2`, reactors);
    await db.query(`UPDATE proxies SET secret_ciphertext = (SELECT secret_ciphertext FROM proxies WHERE id = $1) WHERE id = $2`, proxies);
    for (const path of [`/reactors/${reactors[1]}`, `/proxies/${proxies[1]}`]) {
      const res = await call(server, 'GET', path, { key: server.key });
      assert.equal(res.status, 500, res.text);
      assert.ok(!res.text.includes('secret-1'), 'the other one\'s secret is not shown');
    }
    // The originals still open.
    assert.deepEqual((await call(server, 'GET', `/reactors/${reactors[0]}`, { key: server.key })).body.configuration, { SECRET: 'reactor-secret-1' });
    assert.deepEqual((await call(server, 'GET', `/proxies/${proxies[0]}`, { key: server.key })).body.configuration, { SECRET: 'proxy-secret-1' });
  });

  async function maskOf(id: string) {
    const masked = await createApplication(server, { name: `masked ${id}`, type: 'private', permissions: ['token:read'] });
    return (await call(server, 'GET', `/tokens/${id}`, { key: masked.key })).body.data;
  }
});
