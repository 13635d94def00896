import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/** POST /tokens: every type, its defaults, its validation, ids, containers, metadata, expressions, deduplication. */

const NOW = new Date();
const THIS_YEAR = NOW.getUTCFullYear();
const THIS_MONTH = NOW.getUTCMonth() + 1;
const YEAR = THIS_YEAR + 3;

// Well-known test card numbers (Luhn-valid) and made-up bank and identity numbers.
const VISA = '4242424242424242';
const VISA_2 = '4111111111111111';
const MASTERCARD = '5555555555554444';
const MASTERCARD_2_SERIES = '2223003122003222';
const AMEX = '378282246310005';
const DISCOVER = '6011111111111117';
const JCB = '3530111333300000';
const ACCOUNT = '987654321012';
const ACCOUNT_2 = '876543210987';
const SSN = '512-34-7788';
const SSN_DIGITS = '512347788';
const EIN = '12-3456789';
const EIN_2_DIGITS = '987654321';
const CARDS = [VISA, VISA_2, MASTERCARD, MASTERCARD_2_SERIES, AMEX, DISCOVER, JCB];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('POST /tokens', () => {
  let server: TestServer;
  let sql: pg.Client;
  /** Plain permissions: tokens come back masked. */
  let plain: { id: string; key: string };
  /** A rule revealing every container, to read back exactly what was stored. */
  let reveal: string;

  const create = (body: unknown, key = plain.key) => call(server, 'POST', '/tokens', { key, body });
  const read = (id: string, key = reveal) => call(server, 'GET', `/tokens/${encodeURIComponent(id)}`, { key });

  async function created(body: unknown, key = plain.key) {
    const res = await create(body, key);
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  /** A 400 problem naming exactly these fields. */
  function assertInvalid(res: { status: number; body: any; text: string }, ...fields: string[]) {
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.status, 400);
    for (const f of fields) assert.ok(res.body.errors?.[f], `expected an error on ${f}, got ${res.text}`);
  }

  before(async () => {
    server = await startTestServer({ WORKERS: '0' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    rememberSecret(...CARDS, '4242420000000000', ACCOUNT, ACCOUNT_2, SSN, SSN_DIGITS, EIN, EIN.replace('-', ''), EIN_2_DIGITS);
    plain = await createApplication(server, { name: 'backend', type: 'private', permissions: ['token:create', 'token:read', 'token:delete'] });
    reveal = (await createApplication(server, {
      name: 'reveals',
      type: 'private',
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    })).key;
  });
  after(async () => {
    await sql.end();
    await server.stop();
  });

  describe('types, default containers, masks and views', () => {
    it('card: masked number and expiry without the cvc, /pci/high/, a fingerprint and the card view', async () => {
      const data = { number: VISA, expiration_month: 12, expiration_year: YEAR, cvc: '123' };
      const before = Date.now();
      const t = await created({ type: 'card', data });
      assert.match(t.id, UUID);
      assert.equal(t.type, 'card');
      assert.equal(t.tenant_id, server.tenantId);
      assert.deepEqual(t.containers, ['/pci/high/']);
      assert.deepEqual(t.metadata, {});
      assert.deepEqual(t.data, { number: '424242XXXXXX4242', expiration_month: 12, expiration_year: YEAR });
      assert.deepEqual(t.mask, {
        number: '{{ data.number | card_mask: true, true }}',
        expiration_month: '{{ data.expiration_month }}',
        expiration_year: '{{ data.expiration_year }}',
      });
      assert.equal(t.fingerprint_expression, '{{ data.number }}');
      assert.match(t.fingerprint, /^[\w-]{20,}$/);
      assert.deepEqual(t.search_indexes, []);
      assert.equal(t.deduplicate_token, false);
      assert.deepEqual(t.card, { bin: '424242', last4: '4242', expiration_month: 12, expiration_year: YEAR, brand: 'visa' });
      assert.equal(t.bank, undefined);
      assert.equal(t.created_by, plain.id);
      assert.ok(Date.parse(t.created_at) >= before - 1000 && Date.parse(t.created_at) <= Date.now() + 1000);
      assert.equal(t.expires_at, undefined);
      assert.equal(t.modified_at, undefined);
      assert.ok(!JSON.stringify(t).includes(VISA), 'the plaintext number is nowhere in a masked response');
      // Without an expiry, the masked view has no expiry fields, rather than null ones.
      assert.deepEqual((await created({ type: 'card', data: { number: VISA } })).data, { number: '424242XXXXXX4242' });

      // What was stored is the data as sent, cvc included.
      const back = await read(t.id);
      assert.equal(back.status, 200);
      assert.deepEqual(back.body.data, data);
      assert.equal(back.body.fingerprint, t.fingerprint);
    });

    it('what POST /tokens answers is what GET /tokens/{id} then reads, every field', async () => {
      const t = await created(
        {
          type: 'token',
          data: { reference: 'order-77', amount: 1250 },
          containers: ['/general/orders/'],
          metadata: { customer: 'c-1', channel: 'web' },
          search_indexes: ['{{ data.reference }}'],
          fingerprint_expression: '{{ data.reference }}',
          expires_at: new Date(Date.now() + 86_400_000).toISOString(),
        },
        reveal,
      );
      const back = await read(t.id);
      assert.equal(back.status, 200, back.text);
      assert.deepEqual(back.body, t);
    });

    it('card fingerprints follow the number only', async () => {
      const a = await created({ type: 'card', data: { number: VISA, expiration_month: 1, expiration_year: YEAR } });
      const b = await created({ type: 'card', data: { number: VISA, expiration_month: 2, expiration_year: YEAR + 1, cvc: '999' } });
      const c = await created({ type: 'card', data: { number: VISA_2, expiration_month: 1, expiration_year: YEAR } });
      assert.notEqual(a.id, b.id);
      assert.equal(a.fingerprint, b.fingerprint);
      assert.notEqual(a.fingerprint, c.fingerprint);
    });

    it('a card without expiration is valid and its view has no expiration fields', async () => {
      const t = await created({ type: 'card', data: { number: MASTERCARD } });
      assert.deepEqual(t.card, { bin: '555555', last4: '4444', brand: 'mastercard' });
      assert.equal(t.data.number, '555555XXXXXX4444');
    });

    it('card_number: the brand of visa, mastercard (both ranges), amex and discover numbers', async () => {
      const cases = [
        [VISA_2, 'visa', '411111XXXXXX1111'],
        [MASTERCARD, 'mastercard', '555555XXXXXX4444'],
        [MASTERCARD_2_SERIES, 'mastercard', '222300XXXXXX3222'],
        [AMEX, 'american-express', '378282XXXXX0005'],
        [DISCOVER, 'discover', '601111XXXXXX1117'],
      ];
      for (const [number, brand, masked] of cases) {
        const t = await created({ type: 'card_number', data: number });
        assert.deepEqual(t.containers, ['/pci/high/']);
        assert.equal(t.data, masked, number.slice(-4));
        assert.equal(t.mask, '{{ data | card_mask: true, true }}');
        assert.deepEqual(t.card, { bin: number.slice(0, 6), last4: number.slice(-4), brand });
        assert.equal((await read(t.id)).body.data, number);
      }
    });

    it('bank: /bank/high/, account number masked to its last 4, the bank view', async () => {
      const data = { routing_number: '021000021', account_number: ACCOUNT };
      const t = await created({ type: 'bank', data });
      assert.deepEqual(t.containers, ['/bank/high/']);
      assert.deepEqual(t.data, { routing_number: '021000021', account_number: 'XXXXXXXX1012' });
      assert.deepEqual(t.bank, { routing_number: '021000021', account_number_last4: '1012' });
      assert.equal(t.card, undefined);
      assert.match(t.fingerprint, /^[\w-]{20,}$/);
      assert.deepEqual((await read(t.id)).body.data, data);
    });

    it('us_bank_account_number and us_bank_routing_number', async () => {
      const account = await created({ type: 'us_bank_account_number', data: ACCOUNT_2 });
      assert.deepEqual(account.containers, ['/bank/high/']);
      assert.equal(account.data, 'XXXXXXXX0987');
      assert.deepEqual(account.bank, { account_number_last4: '0987' });
      assert.equal((await read(account.id)).body.data, ACCOUNT_2);

      for (const routing of ['021000021', '011000015', '110000000']) {
        const t = await created({ type: 'us_bank_routing_number', data: routing });
        assert.deepEqual(t.containers, ['/bank/high/']);
        assert.equal(t.data, routing, 'a routing number is not secret: its mask shows it');
        assert.deepEqual(t.bank, { routing_number: routing });
      }
    });

    it('social_security_number: stored as 123-45-6789 however typed, one fingerprint for both forms', async () => {
      const dashed = await created({ type: 'social_security_number', data: SSN });
      const digits = await created({ type: 'social_security_number', data: SSN_DIGITS });
      assert.deepEqual(dashed.containers, ['/general/high/']);
      assert.equal(dashed.data, 'XXXXXXX7788');
      assert.equal(dashed.card, undefined);
      assert.equal(dashed.bank, undefined);
      assert.equal((await read(dashed.id)).body.data, SSN);
      assert.equal((await read(digits.id)).body.data, SSN);
      assert.equal(dashed.fingerprint, digits.fingerprint);
    });

    it('employer_id_number: stored as 12-3456789 however typed', async () => {
      const t = await created({ type: 'employer_id_number', data: EIN_2_DIGITS });
      assert.deepEqual(t.containers, ['/general/high/']);
      assert.equal(t.data, 'XXXXXX4321');
      assert.equal((await read(t.id)).body.data, '98-7654321');
      const dashed = await created({ type: 'employer_id_number', data: EIN });
      assert.equal((await read(dashed.id)).body.data, EIN);
    });

    it('token: any JSON, /general/high/, no mask (so no data under the mask transform), a fingerprint of its JSON', async () => {
      const data = { nested: { list: [1, 'two', { three: true }], none: null }, text: 'héllo' };
      const t = await created({ type: 'token', data });
      assert.deepEqual(t.containers, ['/general/high/']);
      assert.equal('data' in t, false);
      assert.equal('mask' in t, false);
      assert.match(t.fingerprint, /^[\w-]{20,}$/);
      assert.deepEqual((await read(t.id)).body.data, data);
      for (const scalar of ['just a string', 42, true, [1, 2]]) {
        const s = await created({ type: 'token', data: scalar });
        assert.deepEqual((await read(s.id)).body.data, scalar);
      }
      assert.equal((await created({ type: 'token', data })).fingerprint, t.fingerprint);
      assert.notEqual((await created({ type: 'token', data: { ...data, text: 'hello' } })).fingerprint, t.fingerprint);
    });
  });

  describe('per-type validation', () => {
    const card = (over: Record<string, unknown>) => ({ type: 'card', data: { number: VISA, expiration_month: 12, expiration_year: YEAR, ...over } });

    it('card numbers: Luhn, length, digits only, a string, required', async () => {
      assertInvalid(await create(card({ number: '4242424242424241' })), 'body.data.number');
      assertInvalid(await create(card({ number: '42424242424' })), 'body.data.number');
      assertInvalid(await create(card({ number: '42424242424242424242' })), 'body.data.number');
      assertInvalid(await create(card({ number: '4242 4242 4242 4242' })), 'body.data.number');
      assertInvalid(await create(card({ number: '4242-4242-4242-4242' })), 'body.data.number');
      assertInvalid(await create(card({ number: 4242424242424242 })), 'body.data.number');
      assertInvalid(await create({ type: 'card', data: { expiration_month: 12, expiration_year: YEAR } }), 'body.data.number');
      assertInvalid(await create({ type: 'card_number', data: '4242424242424241' }), 'body.data');
      assertInvalid(await create({ type: 'card_number', data: '12345' }), 'body.data');
      assertInvalid(await create({ type: 'card_number', data: { number: VISA } }), 'body.data');
    });

    it('card expiration: month 1..12, a four-digit year, not in the past, both or neither', async () => {
      assertInvalid(await create(card({ expiration_month: 0 })), 'body.data.expiration_month');
      assertInvalid(await create(card({ expiration_month: 13 })), 'body.data.expiration_month');
      assertInvalid(await create(card({ expiration_month: '12' })), 'body.data.expiration_month');
      assertInvalid(await create(card({ expiration_month: 6.5 })), 'body.data.expiration_month');
      assertInvalid(await create(card({ expiration_year: THIS_YEAR - 1 })), 'body.data.expiration_year');
      // A two-digit year is one error, not also "expired".
      const twoDigits = await create(card({ expiration_year: 30 }));
      assertInvalid(twoDigits, 'body.data.expiration_year');
      assert.deepEqual(twoDigits.body.errors['body.data.expiration_year'], ['must be a four-digit year']);
      assertInvalid(await create({ type: 'card', data: { number: VISA, expiration_month: 12 } }), 'body.data.expiration_year');
      assertInvalid(await create({ type: 'card', data: { number: VISA, expiration_year: YEAR } }), 'body.data.expiration_month');
      // The current month is still valid: a card expires at the end of its month.
      await created(card({ expiration_month: THIS_MONTH, expiration_year: THIS_YEAR }));
      await created(card({ expiration_month: 12, expiration_year: THIS_YEAR }));
      if (THIS_MONTH > 1) {
        assertInvalid(await create(card({ expiration_month: THIS_MONTH - 1, expiration_year: THIS_YEAR })), 'body.data.expiration_year');
      } else {
        assertInvalid(await create(card({ expiration_month: 12, expiration_year: THIS_YEAR - 1 })), 'body.data.expiration_year');
      }
    });

    it('card cvc: a string of 3 or 4 digits; unknown card fields are refused; data must be an object', async () => {
      await created(card({ cvc: '123' }));
      await created({ type: 'card', data: { number: AMEX, expiration_month: 1, expiration_year: YEAR, cvc: '1234' } });
      assertInvalid(await create(card({ cvc: '12' })), 'body.data.cvc');
      assertInvalid(await create(card({ cvc: '12345' })), 'body.data.cvc');
      assertInvalid(await create(card({ cvc: 123 })), 'body.data.cvc');
      assertInvalid(await create(card({ cvc: '12a' })), 'body.data.cvc');
      assertInvalid(await create(card({ pin: '1234' })), 'body.data.pin');
      assertInvalid(await create({ type: 'card', data: VISA }), 'body.data');
      assertInvalid(await create({ type: 'card', data: [VISA] }), 'body.data');
      // Every problem is reported at once.
      const many = await create(card({ number: '4242424242424241', expiration_month: 13, cvc: '1' }));
      assertInvalid(many, 'body.data.number', 'body.data.expiration_month', 'body.data.cvc');
    });

    it('bank and routing numbers: the ABA checksum, 9 digits, account numbers of 4 to 17 digits', async () => {
      const bank = (over: Record<string, unknown>) => ({ type: 'bank', data: { routing_number: '021000021', account_number: ACCOUNT, ...over } });
      assertInvalid(await create(bank({ routing_number: '021000022' })), 'body.data.routing_number');
      assertInvalid(await create(bank({ routing_number: '02100002' })), 'body.data.routing_number');
      assertInvalid(await create(bank({ routing_number: 21000021 })), 'body.data.routing_number');
      assertInvalid(await create(bank({ account_number: '123' })), 'body.data.account_number');
      assertInvalid(await create(bank({ account_number: '123456789012345678' })), 'body.data.account_number');
      assertInvalid(await create(bank({ account_number: '12-34-56' })), 'body.data.account_number');
      assertInvalid(await create(bank({ iban: 'x' })), 'body.data.iban');
      assertInvalid(await create({ type: 'bank', data: { account_number: ACCOUNT } }), 'body.data.routing_number');
      assertInvalid(await create({ type: 'us_bank_routing_number', data: '123456789' }), 'body.data');
      assertInvalid(await create({ type: 'us_bank_routing_number', data: '0210000210' }), 'body.data');
      assertInvalid(await create({ type: 'us_bank_account_number', data: '12a45' }), 'body.data');
      assertInvalid(await create({ type: 'us_bank_account_number', data: 12345678 }), 'body.data');
    });

    it('social security numbers: 9 digits, never area 000, 666 or 9xx, group 00 or serial 0000', async () => {
      for (const bad of ['512-347788', '51234-7788', '51-234-7788', '5123477880', '51234778', 'abc-de-fghi', '512 34 7788', '000-12-3456', '666-12-3456', '900-12-3456', '999-12-3456', '512-00-7788', '512-34-0000']) {
        assertInvalid(await create({ type: 'social_security_number', data: bad }), 'body.data');
      }
      assertInvalid(await create({ type: 'social_security_number', data: 512347788 }), 'body.data');
      await created({ type: 'social_security_number', data: '899-12-3456' });
    });

    it('employer identification numbers: 9 digits as 12-3456789 or 123456789', async () => {
      for (const bad of ['1-23456789', '12345678', '1234567890', '12-345-6789', 'ab-cdefghi']) {
        assertInvalid(await create({ type: 'employer_id_number', data: bad }), 'body.data');
      }
    });

    it('the body: a known type, data present, no unknown token fields', async () => {
      assertInvalid(await create({ type: 'passport', data: 'x' }), 'body.type');
      assertInvalid(await create({ data: 'x' }), 'body.type');
      assertInvalid(await create({ type: 'token' }), 'body.data');
      assertInvalid(await create({ type: 'token', data: null }), 'body.data');
      assertInvalid(await create({ type: 'token', data: 'x', deduplicate_token: 'yes' }), 'body.deduplicate_token');
      const notJson = await call(server, 'POST', '/tokens', { key: plain.key, raw: '{"type":', contentType: 'application/json' });
      assertInvalid(notJson, 'body');
    });
  });

  describe('ids', () => {
    it('makes UUIDv7 ids that sort in the order the tokens were created, the millisecond of each in its first 48 bits', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const before = Date.now();
        const { id } = await created({ type: 'token', data: `v7-${i}` });
        assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
        assert.ok(ms >= before && ms <= Date.now(), `${id}: ${new Date(ms).toISOString()}`);
        ids.push(id);
      }
      assert.deepEqual([...ids].sort(), ids);
      // Ascending ids, so the primary key grows at its right edge rather than at random pages.
      const stored = await sql.query('SELECT id FROM tokens WHERE id = ANY($1) ORDER BY id', [ids]);
      assert.deepEqual(stored.rows.map((r) => r.id), ids);
    });

    it('uses a caller-chosen id, and a second token with that id is a 409 whatever its type', async () => {
      const t = await created({ id: 'customer_42.card-1', type: 'card_number', data: VISA });
      assert.equal(t.id, 'customer_42.card-1');
      assert.equal((await read('customer_42.card-1')).body.data, VISA);
      const again = await create({ id: 'customer_42.card-1', type: 'token', data: 'other' });
      assert.equal(again.status, 409, again.text);
      assert.match(again.headers.get('content-type') ?? '', /^application\/problem\+json/);
      // The first token is untouched.
      assert.equal((await read('customer_42.card-1')).body.data, VISA);
    });

    it('refuses ids with characters outside letters, digits, _ - .', async () => {
      for (const id of ['with space', 'a/b', 'quote"', 'brace}}', 'ü', '', 'x'.repeat(201), '.', '..']) {
        assertInvalid(await create({ id, type: 'token', data: 'x' }), 'body.id');
      }
      // Dots are fine inside an id, or several of them: only `.` and `..` are path segments.
      assert.equal((await created({ id: '...', type: 'token', data: 'x' })).id, '...');
      assert.equal((await read('...')).status, 200);
    });

    it('ids are per tenant: another tenant may use the same id, and each sees only its own token', async () => {
      const other = await createOtherTenant(server);
      const otherKey = (await createApplication(server, {
        name: 'other backend',
        type: 'private',
        rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
      }, other.api_key)).key;
      await created({ id: 'shared-id', type: 'token', data: 'ours' }, reveal);
      const theirs = await created({ id: 'shared-id', type: 'token', data: 'theirs' }, otherKey);
      assert.equal(theirs.tenant_id, other.tenant_id);
      assert.equal((await read('shared-id')).body.data, 'ours');
      assert.equal((await read('shared-id', otherKey)).body.data, 'theirs');
    });
  });

  describe('containers and metadata', () => {
    it('takes the caller\'s containers, validated as lowercase paths that start and end with /', async () => {
      const t = await created({ type: 'card_number', data: VISA, containers: ['/pci/low/', '/customers/c-1/'] });
      assert.deepEqual(t.containers, ['/pci/low/', '/customers/c-1/']);
      for (const bad of ['pci/', '/pci', '/PCI/', '/pci//', 'pci', '/pci high/']) {
        assertInvalid(await create({ type: 'card_number', data: VISA, containers: [bad] }), 'body.containers[0]');
      }
      assertInvalid(await create({ type: 'card_number', data: VISA, containers: ['/pci/', 'nope'] }), 'body.containers[1]');
      assertInvalid(await create({ type: 'card_number', data: VISA, containers: [] }), 'body.containers');
      const repeated = await create({ type: 'card_number', data: VISA, containers: ['/a/', '/b/', '/a/'] });
      assertInvalid(repeated, 'body.containers');
      assert.deepEqual(repeated.body.errors['body.containers'], ['must not repeat an item (items 0 and 2 are the same)']);
    });

    it('metadata is a map of strings to strings', async () => {
      const t = await created({ type: 'token', data: 'x', metadata: { customer: 'c-1', note: 'hello world' } });
      assert.deepEqual(t.metadata, { customer: 'c-1', note: 'hello world' });
      assertInvalid(await create({ type: 'token', data: 'x', metadata: { n: 1 } }), 'body.metadata.n');
      assertInvalid(await create({ type: 'token', data: 'x', metadata: { nested: { a: 'b' } } }), 'body.metadata.nested');
      assertInvalid(await create({ type: 'token', data: 'x', metadata: ['a'] }), 'body.metadata');
      // Keys of 1 to 100 characters: the schema's key limits are checked, naming the key.
      const empty = await create({ type: 'token', data: 'x', metadata: { '': 'v' } });
      assertInvalid(empty, 'body.metadata');
      assert.deepEqual(empty.body.errors['body.metadata'], ['has a key "" that must not be empty']);
      assertInvalid(await create({ type: 'token', data: 'x', metadata: { ['k'.repeat(101)]: 'v' } }), 'body.metadata');
      assert.equal((await create({ type: 'token', data: 'x', metadata: { ['k'.repeat(100)]: 'v' } })).status, 201);
      // Values of up to 500 characters.
      assertInvalid(await create({ type: 'token', data: 'x', metadata: { note: 'v'.repeat(501) } }), 'body.metadata.note');
      assert.equal((await create({ type: 'token', data: 'x', metadata: { note: 'v'.repeat(500) } })).status, 201);
    });

    it('a metadata key that is not a plain name is quoted in the field path', async () => {
      const cases: [metadata: Record<string, unknown>, field: string][] = [
        [{ customer_id: 1 }, 'body.metadata.customer_id'],
        [{ 'order.id': 1 }, 'body.metadata["order.id"]'],
        [{ '123': 1 }, 'body.metadata["123"]'],
        [{ 'a b': 1 }, 'body.metadata["a b"]'],
        [{ 'quote"\\': 1 }, 'body.metadata["quote\\"\\\\"]'],
        [{ ['k'.repeat(100)]: 1 }, `body.metadata.${'k'.repeat(100)}`],
      ];
      for (const [metadata, field] of cases) {
        const res = await create({ type: 'token', data: 'x', metadata });
        assertInvalid(res, field);
        assert.deepEqual(Object.keys(res.body.errors), [field], res.text);
        assert.deepEqual(res.body.errors[field], ['must be a string']);
      }
      // The empty key: its own failure on the map, and its value's under [""].
      const empty = await create({ type: 'token', data: 'x', metadata: { '': 1 } });
      assert.deepEqual(empty.body.errors, { 'body.metadata': ['has a key "" that must not be empty'], 'body.metadata[""]': ['must be a string'] });
      // A card's data: a field it does not have, under a key a dot would misread.
      const card = await create({ type: 'card', data: { number: VISA, 'number.x': '1' } });
      assertInvalid(card, 'body.data["number.x"]');
      assert.deepEqual(card.body.errors['body.data["number.x"]'], ['is not a field of this token type']);
      // A metadata filter is one query key, dot and all.
      const listed = await call(server, 'GET', `/tokens?${new URLSearchParams({ 'metadata.order.id': 'v'.repeat(501) })}`, { key: plain.key });
      assertInvalid(listed, 'query["metadata.order.id"]');
    });

    it('a number in the data that JSON would round or overflow is a 400 naming it, never stored changed', async () => {
      for (const [raw, field] of [
        ['{"type":"token","data":{"acct":1e400}}', 'body.data.acct'],
        ['{"type":"token","data":12345678901234567890}', 'body.data'],
      ]) {
        const res = await call(server, 'POST', '/tokens', { key: plain.key, raw, contentType: 'application/json' });
        assertInvalid(res, field);
      }
      const exact = await created({ type: 'token', data: { big: 9007199254740991, small: 1e-300 } });
      assert.deepEqual((await read(exact.id)).body.data, { big: 9007199254740991, small: 1e-300 });
    });

    it('text that JSON escapes (quotes, backslashes, control characters, astral characters) is stored as sent', async () => {
      // Created rows reach the database inside one JSON document per batch: what it escapes must come back unescaped.
      const text = 'a "quoted" \\path\\ \t tab\nline \u0001 é 😀';
      const body = {
        type: 'token',
        data: { value: text },
        metadata: { [`key ${text}`]: text },
        mask: `masked ${text}`,
        search_indexes: [`{{ data.value }}`],
        fingerprint_expression: `{{ data.value }} ${text}`,
      };
      const t = await created(body);
      assert.equal(t.data, `masked ${text}`);
      for (const got of [t, (await call(server, 'GET', `/tokens/${t.id}`, { key: plain.key })).body]) {
        assert.deepEqual(got.metadata, { [`key ${text}`]: text });
        assert.equal(got.mask, `masked ${text}`);
        assert.equal(got.fingerprint_expression, `{{ data.value }} ${text}`);
        assert.deepEqual(got.search_indexes, ['{{ data.value }}']);
      }
      assert.deepEqual((await read(t.id)).body.data, { value: text });
      // A key with a line break is a metadata key like any other: filtered by, and its value checked.
      const listed = await call(server, 'GET', `/tokens?${new URLSearchParams({ [`metadata.key ${text}`]: text })}`, { key: plain.key });
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(listed.body.data.map((x: { id: string }) => x.id), [t.id]);
      assertInvalid(await create({ type: 'token', data: 'x', metadata: { 'a\nb': 5 } }), 'body.metadata["a\\nb"]');
    });
  });

  describe('expressions', () => {
    it('a custom mask replaces the default one', async () => {
      const t = await created({ type: 'card', data: { number: VISA }, mask: '{{ data.number | reveal_last: 4 }}' });
      assert.equal(t.mask, '{{ data.number | reveal_last: 4 }}');
      assert.equal(t.data, 'XXXXXXXXXXXX4242');
      const object = await created({ type: 'bank', data: { routing_number: '011000015', account_number: ACCOUNT }, mask: { last: '{{ data.account_number | last4 }}', fixed: 'n/a' } });
      assert.deepEqual(object.data, { last: '1012', fixed: 'n/a' });
    });

    it('mask: null stores no mask, so the mask transform shows no data', async () => {
      const t = await created({ type: 'card_number', data: VISA, mask: null });
      assert.equal('mask' in t, false);
      assert.equal('data' in t, false);
      assert.equal((await read(t.id)).body.data, VISA);
    });

    it('a custom fingerprint expression decides what counts as the same value; null means no fingerprint', async () => {
      const expr = '{{ data | card_bin }}';
      const a = await created({ type: 'card_number', data: VISA, fingerprint_expression: expr });
      const b = await created({ type: 'card_number', data: '4242420000000000', fingerprint_expression: expr });
      const c = await created({ type: 'card_number', data: VISA_2, fingerprint_expression: expr });
      assert.equal(a.fingerprint_expression, expr);
      assert.equal(a.fingerprint, b.fingerprint);
      assert.notEqual(a.fingerprint, c.fingerprint);
      const none = await created({ type: 'card_number', data: VISA, fingerprint_expression: null });
      assert.equal('fingerprint' in none, false);
      assert.equal('fingerprint_expression' in none, false);
    });

    it('echoes search_indexes', async () => {
      const t = await created({ type: 'card', data: { number: VISA }, search_indexes: ['{{ data.number | last4 }}', '{{ data.number | card_bin }}'] });
      assert.deepEqual(t.search_indexes, ['{{ data.number | last4 }}', '{{ data.number | card_bin }}']);
    });

    it('a bad expression is a 400 naming the field that holds it', async () => {
      const base = { type: 'card', data: { number: VISA } };
      /** The error on `field` quotes the expression. */
      const names = (res: { body: any; text: string }, field: string, source: string) =>
        assert.equal(res.body.errors[field][0].startsWith(`invalid expression "${source}": `), true, res.text);
      for (const [body, field, source] of [
        [{ mask: '{{ data.number | no_such_filter }}' }, 'body.mask', '{{ data.number | no_such_filter }}'],
        [{ mask: '{{ data.number' }, 'body.mask', '{{ data.number'],
        [{ mask: { number: '{{ data.number | reveal_last }}' } }, 'body.mask.number', '{{ data.number | reveal_last }}'],
        [{ fingerprint_expression: '{{ data.number | nope }}' }, 'body.fingerprint_expression', '{{ data.number | nope }}'],
        [{ search_indexes: ['{{ data.number | last4 }}', '{{ | }}'] }, 'body.search_indexes[1]', '{{ | }}'],
      ] as [Record<string, unknown>, string, string][]) {
        const res = await create({ ...base, ...body });
        assertInvalid(res, field);
        names(res, field, source);
      }
      // A filter that cannot handle the value it gets fails the same way, never a 500.
      assertInvalid(await create({ type: 'token', data: { a: 1 }, mask: '{{ data | card_bin }}' }), 'body.mask');
      // The message names the expression but never the data it was evaluated on.
      const res = await create({ type: 'card_number', data: VISA, mask: '{{ data | card_bin | nope }}' });
      assertInvalid(res, 'body.mask');
      assert.ok(!res.text.includes(VISA));
    });

    it('a mask is bounded in each expression, in all, in nesting and in what it renders', async () => {
      const base = { type: 'token', data: 'secret' };
      const pad = (n: number) => `{{ data | pad_left: ${n} }}`;
      let nested: unknown = 'x';
      for (let i = 0; i < 40; i++) nested = [nested];
      const cases: [string, unknown][] = [
        ['one expression over 2,000 characters', 'x'.repeat(2001)],
        ['expressions over 20,000 characters in all', Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'x'.repeat(2000)]))],
        ['nested 40 levels deep', nested],
        ['two tags of 100,000 characters in one expression', pad(100_000) + pad(100_000)],
        ['rendered parts adding up past 100,000 characters', Array.from({ length: 3 }, () => pad(40_000))],
      ];
      for (const [name, mask] of cases) {
        const res = await create({ ...base, mask });
        assert.equal(res.status, 400, `${name}: ${res.text.slice(0, 300)}`);
        assert.ok(res.body.errors['body.mask'], `${name}: ${res.text.slice(0, 300)}`);
      }
      const largest = await created({ ...base, mask: [pad(50_000), pad(49_000)] });
      assert.equal((largest.data as string[])[0].length, 50_000);
    });

    it('hmac: each key name is a tenant key; equal values give equal HMACs, other names and tenants differ', async () => {
      const mask = (name: string, alg = '') => ({ type: 'card_number', data: VISA, mask: `{{ data | hmac: '${name}'${alg} }}` });
      const a = await created(mask('customer-join'));
      const b = await created(mask('customer-join'));
      assert.match(a.data, /^[0-9a-f]{64}$/);
      assert.equal(b.data, a.data);
      assert.notEqual((await created({ ...mask('customer-join'), data: VISA_2 })).data, a.data);
      assert.notEqual((await created(mask('another-name'))).data, a.data);
      assert.match((await created(mask('customer-join', ", 'sha512'"))).data, /^[0-9a-f]{128}$/);
      const other = await createOtherTenant(server);
      const otherKey = (await createApplication(server, { name: 'hmac', type: 'private', permissions: ['token:create'] }, other.api_key)).key;
      assert.notEqual((await created(mask('customer-join'), otherKey)).data, a.data);
      // Detokenization reaches the same key under the same name.
      const detokenized = await call(server, 'POST', '/detokenize', { key: reveal, body: { v: `{{ ${a.id} | hmac: 'customer-join' }}` } });
      assert.equal(detokenized.status, 200, detokenized.text);
      assert.equal(detokenized.body.v, a.data);
      for (const name of ['', 'n'.repeat(101), '🔑'.repeat(101)]) assertInvalid(await create(mask(name)), 'body.mask');
      // Characters, not UTF-16 units: 100 emoji are 200 units and still a name.
      assert.match((await created(mask('🔑'.repeat(100)))).data, /^[0-9a-f]{64}$/);
    });
  });

  describe('deduplicate_token', () => {
    it('returns the existing token of the same fingerprint; without it a new token is made', async () => {
      const first = await created({ type: 'card', data: { number: DISCOVER, expiration_month: 3, expiration_year: YEAR }, deduplicate_token: true });
      assert.equal(first.deduplicate_token, true);
      const again = await created({ type: 'card', data: { number: DISCOVER, expiration_month: 4, expiration_year: YEAR }, deduplicate_token: true });
      assert.equal(again.id, first.id);
      assert.deepEqual(again.card, first.card, 'the existing token is returned as it was');
      const fresh = await created({ type: 'card', data: { number: DISCOVER, expiration_month: 3, expiration_year: YEAR } });
      assert.notEqual(fresh.id, first.id);
      assert.equal(fresh.fingerprint, first.fingerprint);
      const other = await created({ type: 'card', data: { number: MASTERCARD_2_SERIES }, deduplicate_token: true });
      assert.notEqual(other.id, first.id);
    });

    it('matches only a token whose fingerprint came from the same expression: another expression rendering its value cannot claim it', async () => {
      // A planted token whose fingerprint expression renders the victim's number as a constant.
      const planted = await created({ type: 'card_number', data: JCB, fingerprint_expression: '3566002020360505' });
      const victim = await created({ type: 'card_number', data: '3566002020360505', deduplicate_token: true });
      assert.equal(planted.fingerprint, victim.fingerprint, 'equal canonical values give equal fingerprints');
      assert.notEqual(victim.id, planted.id);
      assert.deepEqual((await read(victim.id)).body.data, '3566002020360505');
      // The same expression on both sides still deduplicates.
      const again = await created({ type: 'card_number', data: JCB, fingerprint_expression: '3566002020360505', deduplicate_token: true });
      assert.equal(again.id, planted.id);
    });

    it('a caller-chosen id is kept: a match under another id is a 409 naming it, under the same id it is returned', async () => {
      const first = await created({ type: 'card_number', data: '5105105105105100', deduplicate_token: true });
      const res = await create({ id: 'order-42-card', type: 'card_number', data: '5105105105105100', deduplicate_token: true });
      assert.equal(res.status, 409, res.text);
      assert.match(res.body.detail, new RegExp(`same fingerprint already exists, with id "${first.id}"`));
      assert.equal((await read('order-42-card')).status, 404);
      const named = await created({ id: 'order-43-card', type: 'card_number', data: '6011000990139424', deduplicate_token: true });
      assert.equal((await created({ id: 'order-43-card', type: 'card_number', data: '6011000990139424', deduplicate_token: true })).id, named.id);
    });

    it('a found token shown with its data is audited as a read', async () => {
      const revealing = (await createApplication(server, {
        name: 'dedupe reveal',
        type: 'private',
        rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
      })).key;
      const first = await created({ type: 'card', data: { number: '4012888888881881', cvc: '321' }, deduplicate_token: true }, revealing);
      const reads = async () => (await sql.query(`SELECT count(*)::int AS n FROM audit_events WHERE entity_id = $1 AND operation = 'read'`, [first.id])).rows[0].n;
      assert.equal(await reads(), 0);
      const found = await created({ type: 'card', data: { number: '4012888888881881' }, deduplicate_token: true }, revealing);
      assert.equal(found.id, first.id);
      assert.equal(found.data.cvc, '321', 'the cvc the second request never sent');
      assert.equal(await reads(), 1);
      // Shown masked (plain permissions), nothing is revealed and nothing more is audited.
      assert.equal((await created({ type: 'card', data: { number: '4012888888881881' }, deduplicate_token: true })).id, first.id);
      assert.equal(await reads(), 1);
      // Under an idempotency key, the found token's data is shown again only while the token lives.
      const headers = { 'svc-idempotency-key': 'dedupe-once' };
      const body = { type: 'card', data: { number: '4012888888881881' }, deduplicate_token: true };
      assert.equal((await call(server, 'POST', '/tokens', { key: revealing, body, headers })).body.data.cvc, '321');
      const replayed = await call(server, 'POST', '/tokens', { key: revealing, body, headers });
      assert.equal(replayed.headers.get('svc-idempotent-replayed'), 'true');
      assert.equal(replayed.body.data.cvc, '321');
      assert.equal(await reads(), 3);
      await sql.query('DELETE FROM tokens WHERE id = $1', [first.id]);
      const gone = await call(server, 'POST', '/tokens', { key: revealing, body, headers });
      assert.equal(gone.status, 409, gone.text);
      // The problem's text, without its request id and the token's id: random values that may hold the digits by chance.
      const { request_id: _requestId, ...problem } = gone.body;
      assert.ok(!JSON.stringify(problem).replaceAll(first.id, '<id>').includes('321'), gone.text);
    });

    it('deduplicates only within the same containers, so it reveals nothing about other containers', async () => {
      const high = await created({ type: 'card_number', data: VISA_2, deduplicate_token: true });
      const reordered = await created({ type: 'card_number', data: VISA_2, containers: ['/a/', '/b/'], deduplicate_token: true });
      assert.equal((await created({ type: 'card_number', data: VISA_2, containers: ['/b/', '/a/'], deduplicate_token: true })).id, reordered.id);
      const low = await created({ type: 'card_number', data: VISA_2, containers: ['/pci/low/'], deduplicate_token: true });
      assert.notEqual(low.id, high.id);
      assert.deepEqual(low.containers, ['/pci/low/']);
      // A key confined to /general/ gets a new token of its own, not a 403 betraying the /pci/high/ one.
      const confined = (await createApplication(server, {
        name: 'general only',
        type: 'private',
        rules: [{ priority: 1, container: '/general/', transform: 'mask', permissions: ['token:create'] }],
      })).key;
      const res = await create({ type: 'card_number', data: VISA_2, containers: ['/general/cards/'], deduplicate_token: true }, confined);
      assert.equal(res.status, 201, res.text);
      assert.notEqual(res.body.id, high.id);
      assert.deepEqual(res.body.containers, ['/general/cards/']);
    });

    it('a session whose rules reach tokens by id learns nothing of a duplicate it may not create: it gets a token of its own', async () => {
      const MASTERCARD_DEBIT = '5200828282828210';
      rememberSecret(MASTERCARD_DEBIT);
      const victim = await created({ type: 'card_number', data: MASTERCARD_DEBIT, containers: ['/pci/high/'], deduplicate_token: true }, reveal);
      // Session rules may grant by id alone, whatever the container.
      const publicKey = (await createApplication(server, { name: 'browser', type: 'public', permissions: ['token:create'] })).key;
      const authorizer = (await createApplication(server, { name: 'authorizer', type: 'private', permissions: ['session:authorize'] })).key;
      const session = await call(server, 'POST', '/sessions', { key: publicKey });
      assert.equal(session.status, 201, session.text);
      const rules = [{ priority: 1, conditions: [{ attribute: 'id', operator: 'starts_with', value: 'cust-42-' }], transform: 'reveal', permissions: ['token:create', 'token:read'] }];
      const authorized = await call(server, 'POST', '/sessions/authorize', { key: authorizer, body: { nonce: session.body.nonce, rules } });
      assert.equal(authorized.status, 204, authorized.text);
      const sessionKey = session.body.session_key;
      rememberSecret(sessionKey);
      assert.equal((await call(server, 'GET', `/tokens/${victim.id}`, { key: sessionKey })).status, 403);

      // The same value in the same container: before, a 409 named the victim's id.
      for (const [id, data] of [['cust-42-1', MASTERCARD_DEBIT], ['cust-42-2', '4242424242424242']]) {
        const res = await create({ id, type: 'card_number', data, containers: ['/pci/high/'], deduplicate_token: true }, sessionKey);
        assert.equal(res.status, 201, res.text);
        assert.equal(res.body.id, id);
        assert.ok(!res.text.includes(victim.id), res.text);
      }
      // The victim is untouched, and the new token is the session's own.
      assert.equal((await call(server, 'GET', `/tokens/${victim.id}`, { key: reveal })).body.data, MASTERCARD_DEBIT);
      assert.equal((await call(server, 'GET', '/tokens/cust-42-1', { key: sessionKey })).body.data, MASTERCARD_DEBIT);
    });

    it('shows a found token no more than the key may read it: without token:read, only as a reference', async () => {
      const stored = await created(
        { type: 'card', data: { number: JCB, expiration_month: 7, expiration_year: YEAR, cvc: '321' }, metadata: { customer: 'c-77' }, deduplicate_token: true },
        reveal,
      );
      // Create-only keys, one that would see the data revealed and one masked: neither may read.
      const createOnly = async (transform: string) =>
        (await createApplication(server, {
          name: `create only ${transform}`,
          type: 'private',
          rules: [{ priority: 1, container: '/', transform, permissions: ['token:create'] }],
        })).key;
      for (const transform of ['reveal', 'mask']) {
        const res = await create({ type: 'card', data: { number: JCB, expiration_month: 1, expiration_year: YEAR }, deduplicate_token: true }, await createOnly(transform));
        assert.equal(res.status, 201, res.text);
        assert.equal(res.body.id, stored.id);
        assert.deepEqual(Object.keys(res.body).sort(), ['containers', 'created_at', 'deduplicate_token', 'fingerprint', 'id', 'tenant_id', 'type']);
        // Not in what the key gets to read: the ids, fingerprint and created_at are random or a
        // time, and may hold the digits of the cvc by chance.
        const { id: _id, tenant_id: _tenant, fingerprint: _fingerprint, created_at: _createdAt, ...shown } = res.body;
        for (const secret of ['321', 'c-77', `"expiration_month":7`]) assert.ok(!JSON.stringify(shown).includes(secret), `${transform}: ${secret} is not shown`);
      }
      // A key that may read it masked gets it masked, though its create rule would reveal.
      const readsMasked = (await createApplication(server, {
        name: 'reveal create, masked read',
        type: 'private',
        rules: [
          { priority: 1, container: '/', transform: 'reveal', permissions: ['token:create'] },
          { priority: 2, container: '/', transform: 'mask', permissions: ['token:read'] },
        ],
      })).key;
      const masked = await create({ type: 'card', data: { number: JCB, expiration_month: 1, expiration_year: YEAR }, deduplicate_token: true }, readsMasked);
      assert.equal(masked.body.id, stored.id);
      // As above: the random and time fields may hold the digits by chance.
      const { id: _maskedId, tenant_id: _maskedTenant, fingerprint: _maskedFingerprint, created_at: _maskedCreatedAt, ...maskedShown } = masked.body;
      assert.ok(!JSON.stringify(maskedShown).includes('321'), 'the cvc stays hidden');
      assert.notEqual(masked.body.data.number, JCB, 'the number is masked');
      assert.deepEqual(masked.body.metadata, { customer: 'c-77' });
    });

    it('concurrent deduplicating creates of one value make one token', async () => {
      const body = { type: 'us_bank_account_number', data: '55512345678', deduplicate_token: true };
      rememberSecret('55512345678');
      const results = await Promise.all(Array.from({ length: 6 }, () => create(body)));
      for (const r of results) assert.equal(r.status, 201, r.text);
      assert.equal(new Set(results.map((r) => r.body.id)).size, 1);
    });

    it('never deduplicates across tenants, whose fingerprints differ', async () => {
      const other = await createOtherTenant(server);
      const otherKey = (await createApplication(server, { name: 'b', type: 'private', permissions: ['token:create'] }, other.api_key)).key;
      const ours = await created({ type: 'card_number', data: AMEX, deduplicate_token: true });
      const theirs = await created({ type: 'card_number', data: AMEX, deduplicate_token: true }, otherKey);
      assert.notEqual(theirs.id, ours.id);
      assert.notEqual(theirs.fingerprint, ours.fingerprint, 'fingerprints are keyed per tenant');
    });
  });

  describe('expires_at', () => {
    it('must be a future ISO 8601 time', async () => {
      assertInvalid(await create({ type: 'token', data: 'x', expires_at: new Date(Date.now() - 1000).toISOString() }), 'body.expires_at');
      assertInvalid(await create({ type: 'token', data: 'x', expires_at: 'tomorrow' }), 'body.expires_at');
      // The offset carries it into year 10000.
      assertInvalid(await create({ type: 'token', data: 'x', expires_at: '9999-12-31T23:59:59-23:59' }), 'body.expires_at');
      assert.equal(Date.parse((await created({ type: 'token', data: 'x', expires_at: '9999-12-31T23:59:59Z' })).expires_at), Date.parse('9999-12-31T23:59:59Z'));
      const later = new Date(Date.now() + 3_600_000).toISOString();
      const t = await created({ type: 'token', data: 'x', expires_at: later });
      assert.equal(Date.parse(t.expires_at), Date.parse(later));
    });

    it('a token is readable until it expires, 404 from that instant, and the sweep deletes it with a token.expired event', async () => {
      const expires = Date.now() + 2000;
      const t = await created({ type: 'card_number', data: VISA_2, expires_at: new Date(expires).toISOString() });
      const named = await created({ id: 'short-lived', type: 'token', data: 'first', expires_at: new Date(expires).toISOString() });
      assert.equal((await read(t.id)).status, 200);
      assert.equal((await read(named.id)).status, 200);
      assert.equal((await create({ id: 'short-lived', type: 'token', data: 'too early' })).status, 409);
      await new Promise((r) => setTimeout(r, Math.max(0, expires - Date.now()) + 100));
      assert.equal((await read(t.id)).status, 404);

      // The id of an expired token is free again, before any sweep.
      const reused = await create({ id: 'short-lived', type: 'token', data: 'second' }, reveal);
      assert.equal(reused.status, 201, reused.text);
      assert.equal((await read('short-lived')).body.data, 'second');
      const namedEvents = await sql.query('SELECT type FROM events WHERE entity_id = $1 ORDER BY created_at, id', [named.id]);
      assert.deepEqual(namedEvents.rows.map((e) => e.type), ['token.created', 'token.expired', 'token.created']);
      assert.equal((await call(server, 'DELETE', `/tokens/${t.id}`, { key: plain.key })).status, 404);
      // Unreadable before any sweep ran: the row is still there (WORKERS=0 runs no sweeper).
      assert.equal((await sql.query('SELECT 1 FROM tokens WHERE id = $1', [t.id])).rowCount, 1);

      assert.ok((await server.running.services.tokens.sweepExpired()) >= 1);
      assert.equal((await sql.query('SELECT 1 FROM tokens WHERE id = $1', [t.id])).rowCount, 0);
      const events = await sql.query('SELECT tenant_id, type, payload FROM events WHERE entity_id = $1 ORDER BY created_at', [t.id]);
      assert.deepEqual(events.rows.map((e) => e.type), ['token.created', 'token.expired']);
      assert.equal(events.rows[1].tenant_id, server.tenantId);
      assert.ok(!JSON.stringify(events.rows).includes(VISA_2), 'events carry no token data');
      const logs = await call(server, 'GET', `/logs?entity_type=token&entity_id=${t.id}`, { key: server.key });
      assert.ok(logs.body.data.some((e: { operation: string }) => e.operation === 'expire'), logs.text);
      assert.equal(await server.running.services.tokens.sweepExpired(), 0, 'a second sweep finds nothing');
    });
  });

  it('SVC-IDEMPOTENCY-KEY: a retried create returns the same token and makes no second one', async () => {
    const headers = { 'svc-idempotency-key': 'create-card-once' };
    const body = { type: 'card', data: { number: MASTERCARD, expiration_month: 8, expiration_year: YEAR, cvc: '777' }, metadata: { idem: 'yes' } };
    const first = await call(server, 'POST', '/tokens', { key: reveal, body, headers });
    assert.equal(first.status, 201, first.text);
    const again = await call(server, 'POST', '/tokens', { key: reveal, body, headers });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.body.id, first.body.id);
    assert.deepEqual(again.body.data, body.data);
    assert.equal((await sql.query(`SELECT 1 FROM tokens WHERE metadata->>'idem' = 'yes'`)).rowCount, 1);
    const different = await call(server, 'POST', '/tokens', { key: reveal, body: { ...body, metadata: { idem: 'other' } }, headers });
    assert.equal(different.status, 422, different.text);
  });

  it('nothing at rest holds the plaintext: every column of every token row is scanned', async () => {
    const rows = await sql.query('SELECT t::text AS row FROM tokens t');
    assert.ok(rows.rowCount! > 20, 'the tests above made tokens');
    const secrets = [...CARDS, ACCOUNT, ACCOUNT_2, SSN, SSN_DIGITS, EIN, EIN_2_DIGITS, '98-7654321', 'héllo'];
    for (const { row } of rows.rows) for (const s of secrets) assert.ok(!row.includes(s), `a token row holds plaintext ${s.slice(-4)}`);
    // The scan itself can see what it looks for: a token's own caller-chosen id is in its row.
    assert.ok(rows.rows.some(({ row }) => row.includes('customer_42.card-1')));
    // Nor do the tables written alongside tokens: audit log, events, stored idempotent replies.
    for (const table of ['audit_events', 'events', 'idempotency_keys']) {
      const all = await sql.query(`SELECT t::text AS row FROM ${table} t`);
      assert.ok(all.rowCount! > 0, table);
      for (const { row } of all.rows) for (const s of secrets) assert.ok(!row.includes(s), `${table} holds plaintext ${s.slice(-4)}`);
    }
  });

  it('security: no key, unknown key, a key without token:create', async () => {
    await assertAuthCases(server, { method: 'POST', path: '/tokens', permissions: ['token:create'], type: 'private', body: { type: 'token', data: 'x' } });
    // token:create scoped by a rule: only in its container.
    const scoped = (await createApplication(server, {
      name: 'scoped',
      type: 'private',
      rules: [{ priority: 1, container: '/general/', transform: 'mask', permissions: ['token:create'] }],
    })).key;
    assert.equal((await create({ type: 'token', data: 'x' }, scoped)).status, 201);
    const denied = await create({ type: 'card_number', data: VISA }, scoped);
    assert.equal(denied.status, 403, denied.text);
    assert.equal((await create({ type: 'card_number', data: VISA, containers: ['/general/cards/'] }, scoped)).status, 201);
    // A management key holds no token permissions.
    assert.equal((await create({ type: 'token', data: 'x' }, server.key)).status, 403);
  });
});
