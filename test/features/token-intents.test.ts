import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { assertInvalid, assertNotFound } from '../helpers/problems.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { queryOnce, rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

const PAN = '4111111111111111';
const DEBIT_PAN = '4000056655665556';
const FR_PAN = '4000002500000003';
const ACCOUNT = '000123456789';
const CRYPTOGRAM = 'AgAAAAAABk4DWZ4C28yUQAAAAAA=';
rememberSecret(PAN, DEBIT_PAN, FR_PAN, ACCOUNT, CRYPTOGRAM);

const year = new Date().getUTCFullYear() + 2;
const CARD = { number: PAN, expiration_month: 12, expiration_year: year, cvc: '123' };
const HOUR = 3_600_000;

describe('token intents', () => {
  let server: TestServer;
  let writer: string;
  let reader: string;
  let pub: string;

  const create = (body: unknown, key = writer) => call(server, 'POST', '/token-intents', { key, body });
  const events = (id: string) =>
    queryOnce<{ type: string; payload: Record<string, unknown> }>(server.config.databaseUrl!, 'SELECT type, payload FROM events WHERE entity_id = $1 ORDER BY id', [id]);

  before(async () => {
    // No quota cache: a quota set in the database applies to the next request.
    server = await startTestServer({ AUTH_CACHE_SECONDS: '0' });
    writer = (await createApplication(server, { name: 'intents', type: 'private', permissions: ['token-intent:create', 'token-intent:read', 'token-intent:delete'] })).key;
    reader = (await createApplication(server, { name: 'reader', type: 'private', permissions: ['token-intent:read'] })).key;
    pub = (await createApplication(server, { name: 'checkout', type: 'public', permissions: ['token-intent:create'] })).key;
  });
  after(() => server.stop());

  it('a card intent shows its details and fingerprint, never its data, and lives 24 hours', async () => {
    const before = Date.now();
    const res = await create({ type: 'card', data: CARD });
    assert.equal(res.status, 201, res.text);
    const intent = res.body;
    assert.equal(intent.type, 'card');
    assert.equal(intent.tenant_id, server.tenantId);
    assert.deepEqual(intent.card, { bin: '411111', last4: '1111', expiration_month: 12, expiration_year: year, brand: 'visa', funding: 'credit', authentication: 'sca_optional' });
    assert.equal(intent.bank, null);
    assert.equal(intent.authentication, null);
    assert.match(intent.fingerprint, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(intent._extras, {});
    assert.ok(!res.text.includes(PAN) && !res.text.includes('"cvc"') && !('data' in intent), 'the data is never returned');
    const lives = Date.parse(intent.expires_at) - Date.parse(intent.created_at);
    assert.ok(Math.abs(lives - 24 * HOUR) < 1000, `expires 24 h after creation, not ${lives} ms`);
    assert.ok(Date.parse(intent.created_at) >= before - 1000);

    const got = await call(server, 'GET', `/token-intents/${intent.id}`, { key: reader });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, intent);

    const again = await create({ type: 'card', data: { ...CARD, cvc: '999' } });
    assert.equal(again.body.fingerprint, intent.fingerprint, 'the same card number has the same fingerprint');
    const token = await call(server, 'POST', '/tokens', {
      key: (await createApplication(server, { name: 'tokens', type: 'private', permissions: ['token:create', 'token:read'] })).key,
      body: { type: 'card', data: CARD },
    });
    assert.equal(token.body.fingerprint, intent.fingerprint, "a token of the same card has the intent's fingerprint");
    assert.deepEqual((await events(intent.id)).map((e) => [e.type, e.payload]), [['token-intent.created', { id: intent.id, type: 'card' }]]);
  });

  it('funding and strong-customer-authentication come from the BIN table', async () => {
    const debit = await create({ type: 'card', data: { number: DEBIT_PAN } });
    assert.equal(debit.status, 201, debit.text);
    assert.deepEqual([debit.body.card.funding, debit.body.card.authentication], ['debit', 'sca_optional']);
    assert.equal(debit.body.card.expiration_month, undefined);
    const french = await create({ type: 'card', data: { number: FR_PAN, expiration_month: 1, expiration_year: year } });
    assert.deepEqual([french.body.card.funding, french.body.card.authentication], ['credit', 'sca_required']);
    const unknown = await create({ type: 'card', data: { number: '6011000990139424' } });
    assert.deepEqual([unknown.body.card.brand, unknown.body.card.funding, unknown.body.card.authentication], ['discover', 'unknown', 'unknown']);
  });

  it('bank and network token intents', async () => {
    const bank = await create({ type: 'bank', data: { routing_number: '021000021', account_number: ACCOUNT } });
    assert.equal(bank.status, 201, bank.text);
    assert.deepEqual(bank.body.bank, { routing_number: '021000021', last4: '6789' });
    assert.equal(bank.body.card, null);
    assert.ok(!bank.text.includes(ACCOUNT));

    const nt = await create({ type: 'network_token', data: { number: PAN, expiration_month: 12, expiration_year: year, cryptogram: CRYPTOGRAM, eci_indicator: '05' } });
    assert.equal(nt.status, 201, nt.text);
    assert.equal(nt.body.type, 'network_token');
    assert.equal(nt.body.card.last4, '1111');
    assert.deepEqual(nt.body.authentication, { threeds_cryptogram: CRYPTOGRAM, eci_indicator: '05' });
    const noEci = await create({ type: 'network_token', data: { number: PAN, cryptogram: CRYPTOGRAM } });
    assert.deepEqual(noEci.body.authentication, { threeds_cryptogram: CRYPTOGRAM, eci_indicator: '' });
  });

  it('data is validated exactly as a token of the type, with field paths', async () => {
    assertInvalid(await create({ type: 'card', data: { ...CARD, number: '4111111111111112' } }), 'body.data.number');
    assertInvalid(await create({ type: 'card', data: { ...CARD, expiration_year: 2001 } }), 'body.data.expiration_year');
    assertInvalid(await create({ type: 'card', data: { ...CARD, colour: 'red' } }), 'body.data.colour');
    assertInvalid(await create({ type: 'bank', data: { routing_number: '021000020', account_number: ACCOUNT } }), 'body.data.routing_number');
    assertInvalid(await create({ type: 'network_token', data: { number: PAN } }), 'body.data.cryptogram');
    assertInvalid(await create({ type: 'network_token', data: { number: PAN, cryptogram: CRYPTOGRAM, eci_indicator: 'five' } }), 'body.data.eci_indicator');
    assertInvalid(await create({ type: 'social_security_number', data: '123-45-6789' }), 'body.type');
    assertInvalid(await create({ type: 'card' }), 'body.data');
    assertInvalid(await create({ type: 'card', data: CARD, containers: ['/x/'] }), 'body.containers');
  });

  it('deleted and expired intents are gone; the sweep removes expired ones', async () => {
    const made = (await create({ type: 'card', data: CARD })).body;
    const denied = await call(server, 'DELETE', `/token-intents/${made.id}`, { key: reader });
    assert.equal(denied.status, 403);
    const deleted = await call(server, 'DELETE', `/token-intents/${made.id}`, { key: writer });
    assert.equal(deleted.status, 204, deleted.text);
    assertNotFound(await call(server, 'GET', `/token-intents/${made.id}`, { key: reader }));
    assertNotFound(await call(server, 'DELETE', `/token-intents/${made.id}`, { key: writer }));
    assert.deepEqual((await events(made.id)).map((e) => e.type), ['token-intent.created', 'token-intent.deleted']);

    const old = (await create({ type: 'card', data: CARD })).body;
    await queryOnce(server.config.databaseUrl!, `UPDATE token_intents SET expires_at = now() - interval '1 second' WHERE id = $1`, [old.id]);
    assertNotFound(await call(server, 'GET', `/token-intents/${old.id}`, { key: reader }));
    assertNotFound(await call(server, 'DELETE', `/token-intents/${old.id}`, { key: writer }));
    assert.ok((await server.running.services.tokenIntents.sweepExpired()) >= 1);
    const left = await queryOnce(server.config.databaseUrl!, 'SELECT id FROM token_intents WHERE id = $1', [old.id]);
    assert.equal(left.length, 0);
  });

  it("the tenant's token_intent_ttl_hours quota sets the lifetime, up to 48 hours", async () => {
    await queryOnce(server.config.databaseUrl!, `UPDATE tenants SET settings = jsonb_set(settings, '{token_intent_ttl_hours}', '48') WHERE id = $1`, [server.tenantId]);
    try {
      const intent = (await create({ type: 'card', data: CARD })).body;
      const lives = Date.parse(intent.expires_at) - Date.parse(intent.created_at);
      assert.ok(Math.abs(lives - 48 * HOUR) < 1000, `expires 48 h after creation, not ${lives} ms`);
      const self = await call(server, 'GET', '/tenants/self', { key: server.key });
      assert.equal(self.body.quotas.token_intent_ttl_hours, 48);
    } finally {
      await queryOnce(server.config.databaseUrl!, `UPDATE tenants SET settings = settings - 'token_intent_ttl_hours' WHERE id = $1`, [server.tenantId]);
    }
  });

  it('public keys create intents but see no fingerprint', async () => {
    const res = await create({ type: 'card', data: CARD }, pub);
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.fingerprint, null);
    assert.equal((await call(server, 'GET', `/token-intents/${res.body.id}`, { key: reader })).body.fingerprint.length, 43);
  });

  it("another tenant's intents do not exist for us, and ours not for it", async () => {
    const mine = (await create({ type: 'card', data: CARD })).body;
    const other = await createOtherTenant(server);
    const theirs = await createApplication(server, { name: 'theirs', type: 'private', permissions: ['token-intent:create', 'token-intent:read', 'token-intent:delete'] }, other.api_key);
    assertNotFound(await call(server, 'GET', `/token-intents/${mine.id}`, { key: theirs.key }));
    assertNotFound(await call(server, 'DELETE', `/token-intents/${mine.id}`, { key: theirs.key }));
    assert.equal((await call(server, 'GET', `/token-intents/${mine.id}`, { key: reader })).status, 200, 'still there');
    const made = await create({ type: 'card', data: CARD }, theirs.key);
    assert.equal(made.body.tenant_id, other.tenant_id);
    assertNotFound(await call(server, 'GET', `/token-intents/${made.body.id}`, { key: reader }));
  });

  it('every route needs its own permission', async () => {
    const id = (await create({ type: 'card', data: CARD })).body.id;
    await assertAuthCases(server, { method: 'POST', path: '/token-intents', permissions: ['token-intent:create'], type: 'private', body: { type: 'card', data: CARD } });
    await assertAuthCases(server, { method: 'GET', path: `/token-intents/${id}`, permissions: ['token-intent:read'], type: 'private' });
    await assertAuthCases(server, { method: 'DELETE', path: `/token-intents/${id}`, permissions: ['token-intent:delete'], type: 'private' });
    assertInvalid(await call(server, 'GET', '/token-intents/not-a-uuid', { key: reader }), 'params.id');
  });
});

describe('converting a token intent to a token', () => {
  let server: TestServer;
  let intents: string;
  /** token:create and token:read (reveal) everywhere, and token:update for the deduplicated merge. */
  let tokens: { id: string; key: string };
  const reveal = [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update'] }];

  const intent = async (body: unknown) => {
    const res = await call(server, 'POST', '/token-intents', { key: intents, body });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string; fingerprint: string };
  };
  const convert = (body: unknown, key = tokens.key) => call(server, 'POST', '/tokens', { key, body });
  const eventsOf = (id: string) =>
    queryOnce<{ type: string; payload: Record<string, unknown> }>(server.config.databaseUrl!, 'SELECT type, payload FROM events WHERE entity_id = $1 ORDER BY id', [id]);

  before(async () => {
    server = await startTestServer();
    intents = (await createApplication(server, { name: 'intents', type: 'private', permissions: ['token-intent:create', 'token-intent:read'] })).key;
    tokens = await createApplication(server, { name: 'tokens', type: 'private', rules: reveal });
  });
  after(() => server.stop());

  it('an intent named by its id in upper case converts as well (its data is bound to the id as stored)', async () => {
    const made = await intent({ type: 'card', data: CARD });
    const res = await convert({ token_intent_id: made.id.toUpperCase() });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.data.number, PAN);
  });

  it('POST /tokens with token_intent_id makes the token once, without the CVC, and consumes the intent', async () => {
    const made = await intent({ type: 'card', data: CARD });
    const res = await convert({ token_intent_id: made.id, metadata: { order: '42' }, containers: ['/pci/low/'] });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.type, 'card');
    assert.deepEqual(res.body.data, { number: PAN, expiration_month: 12, expiration_year: year }, 'the CVC is dropped');
    assert.deepEqual(res.body.metadata, { order: '42' });
    assert.deepEqual(res.body.containers, ['/pci/low/']);
    assert.equal(res.body.fingerprint, made.fingerprint);
    assert.equal(res.body._extras, undefined);
    assert.equal(res.body.created_by, tokens.id);

    assertNotFound(await call(server, 'GET', `/token-intents/${made.id}`, { key: intents }));
    const again = await convert({ token_intent_id: made.id });
    assertNotFound(again);
    assert.ok(again.body.errors['body.token_intent_id'], again.text);
    const converted = (await eventsOf(made.id)).find((e) => e.type === 'token-intent.converted');
    assert.deepEqual(converted?.payload, { token_intent: { id: made.id, type: 'card' }, token: { id: res.body.id } });
  });

  it('type and data come from the intent alone; without an intent both are required', async () => {
    const made = await intent({ type: 'card', data: CARD });
    const both = await convert({ token_intent_id: made.id, type: 'card', data: CARD });
    assertInvalid(both, 'body.type');
    assertInvalid(both, 'body.data');
    const neither = await convert({ metadata: { a: 'b' } });
    assertInvalid(neither, 'body.type');
    assertInvalid(neither, 'body.data');
    assertInvalid(await convert({ token_intent_id: 'not-a-uuid' }), 'body.token_intent_id');
    assert.equal((await call(server, 'GET', `/token-intents/${made.id}`, { key: intents })).status, 200, 'a refused conversion leaves the intent');
  });

  it('of two conversions at once, one makes the token and the other is a 404', async () => {
    const made = await intent({ type: 'bank', data: { routing_number: '021000021', account_number: ACCOUNT } });
    const results = await Promise.all([convert({ token_intent_id: made.id }), convert({ token_intent_id: made.id })]);
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 404], results.map((r) => r.text).join('\n'));
    const made201 = results.find((r) => r.status === 201)!;
    assert.deepEqual(made201.body.data, { routing_number: '021000021', account_number: ACCOUNT });
    const count = await queryOnce<{ n: number }>(server.config.databaseUrl!, `SELECT count(*)::int AS n FROM tokens WHERE fingerprint = $1`, [made.fingerprint]);
    assert.equal(count[0].n, 1);
  });

  it('an expired intent converts to nothing', async () => {
    const made = await intent({ type: 'card', data: CARD });
    await queryOnce(server.config.databaseUrl!, `UPDATE token_intents SET expires_at = now() - interval '1 second' WHERE id = $1`, [made.id]);
    assertNotFound(await convert({ token_intent_id: made.id }));
  });

  it('with deduplicate_token, the existing token of the same card is merge-patched instead', async () => {
    const existing = await convert({ type: 'card', data: { number: DEBIT_PAN, expiration_month: 1, expiration_year: year }, deduplicate_token: true, metadata: { kept: 'yes' } });
    assert.equal(existing.status, 201, existing.text);
    const made = await intent({ type: 'card', data: { number: DEBIT_PAN, expiration_month: 6, expiration_year: year + 1, cvc: '321' } });
    const res = await convert({ token_intent_id: made.id, deduplicate_token: true, metadata: { renewed: 'yes' } });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.id, existing.body.id, 'the token found is answered');
    assert.deepEqual(res.body.data, { number: DEBIT_PAN, expiration_month: 6, expiration_year: year + 1 });
    assert.deepEqual(res.body.metadata, { kept: 'yes', renewed: 'yes' });
    assertNotFound(await call(server, 'GET', `/token-intents/${made.id}`, { key: intents }));
    assert.ok((await eventsOf(existing.body.id)).some((e) => e.type === 'token.updated'));
  });

  it('a /tokenize leaf with token_intent_id converts with the rest, all or nothing', async () => {
    const a = await intent({ type: 'card', data: CARD });
    const res = await call(server, 'POST', '/tokenize', { key: tokens.key, body: { card: { token_intent_id: a.id }, note: { type: 'token', data: 'x' } } });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.card.type, 'card');
    assert.equal(res.body.card.data.number, PAN);
    const b = await intent({ type: 'card', data: CARD });
    const failed = await call(server, 'POST', '/tokenize', { key: tokens.key, body: { card: { token_intent_id: b.id }, bad: { type: 'card', data: { number: '12' } } } });
    assertInvalid(failed, 'body.bad.data.number');
    assert.equal((await call(server, 'GET', `/token-intents/${b.id}`, { key: intents })).status, 200, 'the intent is still there when the tokenize fails');
  });

  it('bt.tokens.create in a reactor converts an intent too', async () => {
    const made = await intent({ type: 'card', data: CARD });
    const reactor = await call(server, 'POST', '/reactors', {
      key: server.key,
      body: { name: 'convert', code: `module.exports = async ({ bt, args }) => ({ raw: await bt.tokens.create({ token_intent_id: args.intent }) });`, configuration: {}, application: { id: tokens.id } },
    });
    assert.equal(reactor.status, 201, reactor.text);
    const invoker = (await createApplication(server, { name: 'invoker', type: 'private', permissions: ['token:use'] })).key;
    const res = await call(server, 'POST', `/reactors/${reactor.body.id}/react`, { key: invoker, body: { args: { intent: made.id } } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.raw.type, 'card');
    assert.equal(res.body.raw.created_by, tokens.id);
    assertNotFound(await call(server, 'GET', `/token-intents/${made.id}`, { key: intents }));
  });
});
