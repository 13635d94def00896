import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Principal } from '../../src/access/principal.ts';
import type { BankAccount, BankAccountVerifier } from '../../src/bank-verification/verifier.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import type { Item } from '../../src/db/group-commit.ts';
import { createEnrichmentService } from '../../src/features/enrichments/service.ts';
import type { TokenView } from '../../src/features/tokens/service.ts';
import type { TokenRow } from '../../src/features/tokens/store.ts';
import { createLogger } from '../../src/logger.ts';
import { call, createApplication, createOtherTenant, createToken, type Response } from '../helpers/http.ts';
import { assertInvalid, assertNotFound } from '../helpers/problems.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

const PATH = '/enrichments/bank-account-verify';
/** Account numbers that are no test account: long enough for the log scan to look for. */
const ACCOUNT = '000123456789';
const ACCOUNT_OTHER = '987654321000';
rememberSecret(ACCOUNT, ACCOUNT_OTHER);

const rule = (transform: string, permissions: string[], container = '/', priority = 1) => ({ priority, container, transform, permissions });

function problem(res: Response, status: number): void {
  assert.equal(res.status, status, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, status);
}

describe('POST /enrichments/bank-account-verify', () => {
  let server: TestServer;
  /** token:create and token:use (reveal) on every container. */
  let user: { id: string; key: string };
  const bank: Record<'enabled' | 'inconclusive' | 'unknown', string> = { enabled: '', inconclusive: '', unknown: '' };
  const us: Record<'disabled' | 'enabled' | 'inconclusive' | 'unknown', string> = { disabled: '', enabled: '', inconclusive: '', unknown: '' };
  let card: string;
  let foreign: string;

  before(async () => {
    server = await startTestServer();
    user = await createApplication(server, { name: 'verifier', type: 'private', rules: [rule('reveal', ['token:create', 'token:use'])] });
    const create = (body: Record<string, unknown>) => createToken(server, user.key, body);
    const bankToken = (account: string) => create({ type: 'bank', data: { routing_number: '021000021', account_number: account } });
    const usToken = (account: string) => create({ type: 'us_bank_account_number', data: account });
    bank.enabled = await bankToken('00001');
    bank.inconclusive = await bankToken('00002');
    bank.unknown = await bankToken(ACCOUNT);
    us.disabled = await usToken('00000');
    us.enabled = await usToken('00001');
    us.inconclusive = await usToken('00002');
    us.unknown = await usToken(ACCOUNT);
    card = await create({ type: 'card_number', data: '4242424242424242' });

    const t = await createOtherTenant(server);
    const otherApp = await createApplication(server, { name: 'other', type: 'private', rules: [rule('reveal', ['token:create', 'token:use'])] }, t.api_key);
    foreign = await createToken(server, otherApp.key, { type: 'bank', data: { routing_number: '021000021', account_number: ACCOUNT_OTHER } });
  });
  after(() => server.stop());

  const verify = (body: unknown, key = user.key, headers?: Record<string, string>) => call(server, 'POST', PATH, { key, body, headers });
  const status = async (body: unknown, key = user.key) => {
    const res = await verify(body, key);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body), ['status']);
    return res.body.status as string;
  };
  /** The token's audit events of operation `use`, newest first. */
  const uses = async (id: string) => {
    const res = await call(server, 'GET', `/logs?entity_type=token&entity_id=${encodeURIComponent(id)}&size=100`, { key: server.key });
    assert.equal(res.status, 200, res.text);
    return (res.body.data as { operation: string; entity_id: string; actor_id: string; actor_type: string; message: string }[]).filter((e) => e.operation === 'use');
  };

  describe('the test accounts', () => {
    it('bank tokens: 021000021/00001 is enabled, 021000021/00002 inconclusive', async () => {
      assert.equal(await status({ token_id: bank.enabled }), 'enabled');
      assert.equal(await status({ token_id: bank.inconclusive, country_code: 'US' }), 'inconclusive');
    });

    it('us_bank_account_number tokens with routing_number: 021000020/00000 disabled, 021000021/00001 enabled, 021000021/00002 inconclusive', async () => {
      // 021000020 fails the ABA checksum: taken in the body all the same, or the disabled account could not be reached.
      assert.equal(await status({ token_id: us.disabled, routing_number: '021000020' }), 'disabled');
      assert.equal(await status({ token_id: us.enabled, routing_number: '021000021' }), 'enabled');
      assert.equal(await status({ token_id: us.inconclusive, routing_number: '021000021', country_code: 'US' }), 'inconclusive');
    });

    it('every other account is inconclusive, whichever token type holds it', async () => {
      assert.equal(await status({ token_id: bank.unknown }), 'inconclusive');
      assert.equal(await status({ token_id: us.unknown, routing_number: '021000021' }), 'inconclusive');
      // A test account's number under another routing number is another account.
      assert.equal(await status({ token_id: us.disabled, routing_number: '021000021' }), 'inconclusive');
      assert.equal(await status({ token_id: us.enabled, routing_number: '123456789' }), 'inconclusive');
    });

    it('the response carries the status only, never the account', async () => {
      const res = await verify({ token_id: bank.unknown });
      assert.equal(res.status, 200);
      assert.ok(!res.text.includes(ACCOUNT));
    });
  });

  describe('audit', () => {
    it('each verification is one use of the token in the audit log, by the caller', async () => {
      const was = (await uses(bank.unknown)).length;
      await status({ token_id: bank.unknown });
      const after = await uses(bank.unknown);
      assert.equal(after.length, was + 1);
      assert.equal(after[0].entity_id, bank.unknown);
      assert.equal(after[0].actor_id, user.id);
      assert.equal(after[0].actor_type, 'application');
      assert.equal(after[0].message, 'Token used for bank account verification (reveal)');
      assert.ok(!JSON.stringify(after).includes(ACCOUNT));
      await status({ token_id: bank.unknown });
      assert.equal((await uses(bank.unknown)).length, was + 2);
    });

    it('a refused verification used nothing, and audits nothing', async () => {
      const was = { us: (await uses(us.unknown)).length, bank: (await uses(bank.unknown)).length, card: (await uses(card)).length };
      problem(await verify({ token_id: us.unknown }), 400);
      problem(await verify({ token_id: bank.unknown, routing_number: '021000021' }), 400);
      problem(await verify({ token_id: bank.unknown, country_code: 'CA' }), 400);
      problem(await verify({ token_id: card }), 400);
      const generalOnly = await createApplication(server, { name: 'general only', type: 'private', rules: [rule('reveal', ['token:use'], '/general/')] });
      problem(await verify({ token_id: bank.unknown }, generalOnly.key), 403);
      assert.deepEqual({ us: (await uses(us.unknown)).length, bank: (await uses(bank.unknown)).length, card: (await uses(card)).length }, was);
    });

    it('SVC-IDEMPOTENCY-KEY is ignored: every request is checked, audited and answered afresh', async () => {
      const was = (await uses(bank.enabled)).length;
      for (let i = 0; i < 2; i++) {
        const res = await verify({ token_id: bank.enabled }, user.key, { 'svc-idempotency-key': 'verify-1' });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.headers.get('svc-idempotent-replayed'), null);
        assert.deepEqual(res.body, { status: 'enabled' });
      }
      assert.equal((await uses(bank.enabled)).length, was + 2);
    });
  });

  describe('errors', () => {
    it('token_id is required: 400 naming body.token_id', async () => {
      assertInvalid(await verify({}), 'body.token_id');
      assertInvalid(await verify({ country_code: 'US', routing_number: '021000021' }), 'body.token_id');
      assertInvalid(await verify({ token_id: 42 }), 'body.token_id');
      assertInvalid(await verify({ token_id: '' }), 'body.token_id');
      assertInvalid(await verify({ token_id: 'a/b' }), 'body.token_id');
    });

    it('an unknown property is 400 naming it', async () => {
      assertInvalid(await verify({ token_id: bank.enabled, account_number: '00001' }), 'body.account_number');
    });

    it('an unknown token is 404', async () => {
      assertNotFound(await verify({ token_id: 'no-such-token' }));
      assertNotFound(await verify({ token_id: '00000000-0000-4000-8000-000000000000' }));
    });

    it("another tenant's token is 404, as if unknown, and shows nothing of it", async () => {
      const res = await verify({ token_id: foreign });
      assertNotFound(res);
      assert.ok(!res.text.includes(ACCOUNT_OTHER));
    });

    it('a token of another type is 400 naming the type', async () => {
      const res = await verify({ token_id: card });
      assertInvalid(res, 'body.token_id');
      assert.match(res.body.errors['body.token_id'][0], /of type card_number/);
      assert.match(res.body.detail, /card_number: bank account verification takes a token of type bank or us_bank_account_number/);
      assert.ok(!res.text.includes('4242424242424242'));
    });

    it('country_code other than US is 400 "unsupported country"; a malformed one is 400 too', async () => {
      for (const country_code of ['CA', 'GB', 'DE']) {
        const res = await verify({ token_id: bank.enabled, country_code });
        assertInvalid(res, 'body.country_code');
        assert.match(res.body.errors['body.country_code'][0], new RegExp(`unsupported country "${country_code}"`));
      }
      for (const country_code of ['us', 'USA', 'U', '', '12', 1]) assertInvalid(await verify({ token_id: bank.enabled, country_code }), 'body.country_code');
    });

    it('routing_number with a bank token is 400 naming the field', async () => {
      const res = await verify({ token_id: bank.enabled, routing_number: '021000021' });
      assertInvalid(res, 'body.routing_number');
      assert.match(res.body.errors['body.routing_number'][0], /only to a us_bank_account_number token/);
    });

    it('a us_bank_account_number token without routing_number is 400 naming the field', async () => {
      const res = await verify({ token_id: us.enabled });
      assertInvalid(res, 'body.routing_number');
      assert.match(res.body.errors['body.routing_number'][0], /is required with a us_bank_account_number token/);
    });

    it('routing_number must be 9 digits (it is not checksum-validated)', async () => {
      for (const routing_number of ['02100002', '0210000210', '02100002a', ' 021000021', '', 21000021]) {
        assertInvalid(await verify({ token_id: us.enabled, routing_number }), 'body.routing_number');
      }
    });

    it('errors never show the account number', async () => {
      for (const body of [{ token_id: us.unknown }, { token_id: bank.unknown, routing_number: '021000021' }, { token_id: bank.unknown, country_code: 'FR' }]) {
        const res = await verify(body);
        assert.equal(res.status, 400, res.text);
        assert.ok(!res.text.includes(ACCOUNT));
      }
    });
  });

  describe('security', () => {
    it('needs a key with token:use', async () => {
      await assertAuthCases(server, { method: 'POST', path: PATH, permissions: ['token:use'], type: 'private', body: { token_id: bank.enabled } });
    });

    it('token:read does not allow it, nor does the management key', async () => {
      const reader = await createApplication(server, { name: 'reader', type: 'private', rules: [rule('reveal', ['token:read'])] });
      problem(await verify({ token_id: bank.enabled }, reader.key), 403);
      problem(await verify({ token_id: bank.enabled }, server.key), 403);
    });

    it("token:use as a plain permission (no rules) reaches every container", async () => {
      const plain = await createApplication(server, { name: 'plain use', type: 'private', permissions: ['token:use'] });
      assert.equal(await status({ token_id: bank.enabled }, plain.key), 'enabled');
    });

    it('an access rule that does not reach the token\'s container is 403, one that does works', async () => {
      const generalOnly = await createApplication(server, { name: 'general use', type: 'private', rules: [rule('reveal', ['token:use'], '/general/')] });
      const res = await verify({ token_id: bank.enabled }, generalOnly.key);
      problem(res, 403);
      assert.match(res.body.detail, /token:use/);
      const bankOnly = await createApplication(server, { name: 'bank use', type: 'private', rules: [rule('reveal', ['token:use'], '/bank/')] });
      assert.equal(await status({ token_id: bank.enabled }, bankOnly.key), 'enabled');
    });

    it('a rule that masks or redacts the data is 403: the account cannot be verified from what it shows', async () => {
      for (const transform of ['mask', 'redact']) {
        const app = await createApplication(server, { name: `${transform} use`, type: 'private', rules: [rule(transform, ['token:use'], '/bank/')] });
        const res = await verify({ token_id: us.enabled, routing_number: '021000021' }, app.key);
        problem(res, 403);
        assert.match(res.body.detail, transform === 'mask' ? /masks its data/ : /redacts its data/);
      }
    });

    it('the first matching rule decides: a higher-priority redact on /bank/high/ overrides a reveal on /', async () => {
      const app = await createApplication(server, {
        name: 'denied by priority', type: 'private',
        rules: [rule('redact', ['token:use'], '/bank/high/', 1), rule('reveal', ['token:use'], '/', 2)],
      });
      problem(await verify({ token_id: bank.enabled }, app.key), 403);
      assert.equal(await status({ token_id: bank.enabled }), 'enabled');
    });
  });

  it('is in the OpenAPI document with its body and response schemas', async () => {
    const res = await call(server, 'GET', '/openapi.json');
    assert.equal(res.status, 200);
    const op = res.body.paths[PATH]?.post;
    assert.ok(op, 'the route is documented');
    const body = op.requestBody.content['application/json'].schema;
    assert.deepEqual(body.required, ['token_id']);
    assert.equal(body.properties.country_code.default, 'US');
    assert.deepEqual(op.responses['200'].content['application/json'].schema.properties.status.enum, ['enabled', 'disabled', 'inconclusive']);
    for (const s of ['400', '401', '403', '404', '502']) assert.ok(op.responses[s], `documents ${s}`);
  });
});

describe('bank account verification providers', () => {
  /** A provider of the test's own, handed to start() as code embedding Coffer would. */
  const seen: BankAccount[] = [];
  let answer: (account: BankAccount) => Promise<unknown> = async () => 'enabled';
  const provider: BankAccountVerifier = { verify: (account) => (seen.push(account), answer(account)) as never };
  let server: TestServer;
  let user: string;
  let bankToken: string;
  let usToken: string;

  before(async () => {
    server = await startTestServer({}, { providers: { bankAccountVerifier: provider } });
    user = (await createApplication(server, { name: 'user', type: 'private', rules: [rule('reveal', ['token:create', 'token:use'])] })).key;
    bankToken = await createToken(server, user, { type: 'bank', data: { routing_number: '011000015', account_number: ACCOUNT } });
    usToken = await createToken(server, user, { type: 'us_bank_account_number', data: ACCOUNT_OTHER });
  });
  after(() => server.stop());

  const verify = (body: unknown) => call(server, 'POST', PATH, { key: user, body });

  it('a provider handed in replaces the configured one, and gets the plain account: the routing number from the token or the body', async () => {
    seen.length = 0;
    answer = async () => 'enabled';
    assert.deepEqual((await verify({ token_id: bankToken })).body, { status: 'enabled' });
    answer = async () => 'disabled';
    assert.deepEqual((await verify({ token_id: usToken, routing_number: '021000020' })).body, { status: 'disabled' });
    assert.deepEqual(seen, [
      { country: 'US', routingNumber: '011000015', accountNumber: ACCOUNT },
      { country: 'US', routingNumber: '021000020', accountNumber: ACCOUNT_OTHER },
    ]);
  });

  it('a provider that fails is 502, showing and logging nothing of the account (the log scan checks)', async () => {
    answer = async (a) => {
      throw new Error(`account ${a.accountNumber} at ${a.routingNumber} refused`);
    };
    const res = await verify({ token_id: bankToken });
    problem(res, 502);
    assert.ok(!res.text.includes(ACCOUNT));
  });

  it('a provider answering no known status is 502, not a made-up status', async () => {
    for (const bad of ['ENABLED', 'maybe', undefined, null, 1]) {
      answer = async () => bad;
      problem(await verify({ token_id: usToken, routing_number: '021000021' }), 502);
    }
  });

  it('the use is audited before the provider is called, so a failed call was audited too', async () => {
    const count = async () => {
      const res = await call(server, 'GET', `/logs?entity_type=token&entity_id=${bankToken}&size=100`, { key: server.key });
      return (res.body.data as { operation: string }[]).filter((e) => e.operation === 'use').length;
    };
    const was = await count();
    answer = async () => {
      throw new Error('down');
    };
    problem(await verify({ token_id: bankToken }), 502);
    assert.equal(await count(), was + 1);
  });
});

describe('bank account verification service', () => {
  const principal = { kind: 'application', tenantId: 't', actorId: 'a' } as Principal;
  const row = (type: string) => ({ id: 'tok', type, containers: ['/bank/high/'] }) as TokenRow;

  it("a bank token whose stored routing number fails the ABA checksum is disabled, and is never sent to the provider", async () => {
    const calls: BankAccount[] = [];
    const written: Item[][] = [];
    const service = createEnrichmentService({
      tokens: { useOne: async (_p, _id, use) => (use.audit.push({} as Item), { row: row('bank'), transform: 'reveal', data: { routing_number: '021000020', account_number: '00000' } }) as TokenView },
      logs: { writeItems: async (items) => void written.push(items) },
      verifier: { verify: async (a) => (calls.push(a), 'enabled') },
      log: createLogger('silent'),
    });
    assert.deepEqual(await service.verifyBankAccount(principal, { token_id: 'tok' }), { status: 'disabled' });
    assert.equal(calls.length, 0);
    // The data was read all the same: the use is audited.
    assert.equal(written.flat().length, 1);
  });
});

describe('BANK_VERIFICATION_PROVIDER', () => {
  it('defaults to the built-in test provider, and refuses names it does not know', () => {
    assert.equal(loadConfig({}).bankVerificationProvider, 'test');
    assert.equal(loadConfig({ BANK_VERIFICATION_PROVIDER: 'test' }).bankVerificationProvider, 'test');
    assert.throws(() => loadConfig({ BANK_VERIFICATION_PROVIDER: 'plaid' }), (err: unknown) => err instanceof ConfigError && /BANK_VERIFICATION_PROVIDER must be one of test/.test(err.message));
  });
});
