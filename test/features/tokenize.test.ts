import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/** POST /tokenize: a JSON document whose token-request leaves become tokens, all or nothing. */

const YEAR = new Date().getUTCFullYear() + 4;
const VISA = '4917610000000000';
const MASTERCARD = '5425233430109903';
const SSN = '219-45-6677';
const ACCOUNT = '123400005678';

describe('POST /tokenize', () => {
  let server: TestServer;
  let key: string;
  let reveal: string;

  const tokenize = (body: unknown, k = key) => call(server, 'POST', '/tokenize', { key: k, body });
  async function count(k = reveal): Promise<number> {
    const res = await call(server, 'GET', '/tokens?size=1', { key: k });
    assert.equal(res.status, 200, res.text);
    return res.body.pagination.total_items;
  }

  before(async () => {
    server = await startTestServer({ WORKERS: '0' });
    rememberSecret(VISA, MASTERCARD, SSN, SSN.replaceAll('-', ''), ACCOUNT);
    key = (await createApplication(server, { name: 'tokenizer', type: 'private', permissions: ['token:create'] })).key;
    reveal = (await createApplication(server, {
      name: 'reader',
      type: 'private',
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:read', 'token:create'] }],
    })).key;
  });
  after(() => server.stop());

  it('replaces every token request with its token and keeps the rest of the document as it was', async () => {
    const doc = {
      customer: { name: 'Ada', age: 36, vip: true, nothing: null },
      card: { type: 'card', data: { number: VISA, expiration_month: 9, expiration_year: YEAR, cvc: '987' }, metadata: { source: 'checkout' } },
      identity: [{ type: 'social_security_number', data: SSN }, 'plain text', 7],
      bank: { primary: { type: 'us_bank_account_number', data: ACCOUNT, containers: ['/bank/customers/'] } },
      lookalike: { type: 'not-a-type', data: 'left alone' },
      // Names of what every object inherits are no token types either.
      inherited: [{ type: 'toString', data: 'x' }, { type: 'constructor', data: 'y' }, { type: '__proto__', data: 'z' }],
      no_data: { type: 'card' },
      empty: {},
      list: [],
    };
    const before = await count();
    const res = await tokenize(doc);
    assert.equal(res.status, 201, res.text);
    const out = res.body;
    assert.deepEqual(out.customer, doc.customer);
    assert.deepEqual(out.identity.slice(1), ['plain text', 7]);
    assert.deepEqual(out.lookalike, doc.lookalike);
    assert.deepEqual(out.inherited, doc.inherited);
    assert.deepEqual(out.no_data, doc.no_data);
    assert.deepEqual(out.empty, {});
    assert.deepEqual(out.list, []);
    assert.deepEqual(Object.keys(out), Object.keys(doc));

    assert.equal(out.card.type, 'card');
    assert.deepEqual(out.card.data, { number: '491761XXXXXX0000', expiration_month: 9, expiration_year: YEAR });
    assert.deepEqual(out.card.metadata, { source: 'checkout' });
    assert.equal(out.card.card.brand, 'visa');
    assert.deepEqual(out.identity[0].containers, ['/general/high/']);
    assert.equal(out.identity[0].data, 'XXXXXXX6677');
    assert.deepEqual(out.bank.primary.containers, ['/bank/customers/']);
    assert.ok(!res.text.includes(VISA) && !res.text.includes(SSN) && !res.text.includes(ACCOUNT));

    assert.equal(await count(), before + 3);
    const read = async (id: string) => (await call(server, 'GET', `/tokens/${id}`, { key: reveal })).body.data;
    assert.deepEqual(await read(out.card.id), doc.card.data);
    assert.equal(await read(out.identity[0].id), SSN);
    assert.equal(await read(out.bank.primary.id), ACCOUNT);
  });

  it('takes a top-level array, and a document that is a single token request', async () => {
    const arr = await tokenize([{ type: 'token', data: 'a' }, { type: 'token', data: 'b' }]);
    assert.equal(arr.status, 201, arr.text);
    assert.equal(arr.body.length, 2);
    assert.notEqual(arr.body[0].id, arr.body[1].id);
    const single = await tokenize({ type: 'card_number', data: MASTERCARD });
    assert.equal(single.status, 201, single.text);
    assert.equal(single.body.type, 'card_number');
    assert.equal(single.body.card.brand, 'mastercard');
  });

  it('an invalid leaf is a 400 whose field path points into the document, and no token is made', async () => {
    const before = await count();
    const res = await tokenize({
      first: { type: 'token', data: 'fine' },
      cards: [
        { type: 'card', data: { number: VISA, expiration_month: 1, expiration_year: YEAR } },
        { type: 'card', data: { number: '4917610000000001', expiration_month: 1, expiration_year: YEAR } },
      ],
    });
    assert.equal(res.status, 400, res.text);
    assert.ok(res.body.errors['body.cards[1].data.number'], res.text);
    assert.equal(await count(), before, 'the valid leaves before the bad one were rolled back');
    assert.ok(!res.text.includes('4917610000000001'));
  });

  it('schema errors inside a leaf name their path too', async () => {
    const before = await count();
    const cases: [unknown, string][] = [
      [{ a: { b: [{ type: 'token', data: 'x', containers: 'not-a-list' }] } }, 'body.a.b[0].containers'],
      [{ a: { type: 'token', data: 'x', metadata: { n: 1 } } }, 'body.a.metadata.n'],
      [{ a: { type: 'token', data: 'x', metadata: { note: 'v'.repeat(501) } } }, 'body.a.metadata.note'],
      [{ a: { type: 'token', data: 'x', id: 'bad id' } }, 'body.a.id'],
      [{ a: { type: 'token', data: 'x', containers: ['pci/'] } }, 'body.a.containers[0]'],
      [{ a: { type: 'token', data: 'x', mask: '{{ data | nope }}' } }, 'body.a.mask'],
      [{ a: { type: 'token', data: 'x', expires_at: '2001-01-01T00:00:00Z' } }, 'body.a.expires_at'],
      [{ a: [{ type: 'social_security_number', data: '666-12-3456' }] }, 'body.a[0].data'],
    ];
    for (const [doc, field] of cases) {
      const res = await tokenize(doc);
      assert.equal(res.status, 400, `${field}: ${res.text}`);
      assert.ok(res.body.errors?.[field], `${field}: ${res.text}`);
    }
    assert.equal(await count(), before);
  });

  it('a key that is not a plain name is quoted in the field path, so no two leaves share one', async () => {
    const before = await count();
    const bad = { type: 'token', data: 'x', metadata: { n: 1 } };
    const badCard = { type: 'card', data: { number: '4917610000000001' } };
    const cases: [unknown, string][] = [
      [{ 'a.b': bad, a: { b: { type: 'token', data: 'fine' } } }, 'body["a.b"].metadata.n'],
      [{ a: { b: bad }, 'a.b': { type: 'token', data: 'fine' } }, 'body.a.b.metadata.n'],
      [{ '': bad }, 'body[""].metadata.n'],
      [{ '0': bad }, 'body["0"].metadata.n'],
      [[bad], 'body[0].metadata.n'],
      [{ 'cards.0': badCard }, 'body["cards.0"].data.number'],
      [{ 'a.b': { type: 'token', data: 'x', 'x.y': 1 } }, 'body["a.b"]["x.y"]'],
      [{ 'a.b': { type: 'token', data: 'x', metadata: { 'c.d': 1 } } }, 'body["a.b"].metadata["c.d"]'],
    ];
    for (const [doc, field] of cases) {
      const res = await tokenize(doc);
      assert.equal(res.status, 400, `${field}: ${res.text}`);
      assert.deepEqual(Object.keys(res.body.errors ?? {}), [field], `${JSON.stringify(doc)}: ${res.text}`);
    }
    assert.equal(await count(), before);
  });

  it('a duplicate caller-chosen id inside one document is a 409 and rolls back the whole document', async () => {
    const before = await count();
    const res = await tokenize({ a: { id: 'twice', type: 'token', data: 'x' }, b: { id: 'twice', type: 'token', data: 'y' } });
    assert.equal(res.status, 409, res.text);
    assert.equal(await count(), before);
    assert.equal((await call(server, 'GET', '/tokens/twice', { key: reveal })).status, 404);
  });

  it('a leaf the key may not create is a 403 and rolls back the rest', async () => {
    const general = (await createApplication(server, {
      name: 'general only',
      type: 'private',
      rules: [{ priority: 1, container: '/general/', transform: 'mask', permissions: ['token:create'] }],
    })).key;
    const before = await count();
    const res = await tokenize({ ok: { type: 'token', data: 'x' }, card: { type: 'card_number', data: VISA } }, general);
    assert.equal(res.status, 403, res.text);
    assert.equal(await count(), before);
  });

  it('deduplicates within one document', async () => {
    const res = await tokenize([
      { type: 'card_number', data: MASTERCARD, deduplicate_token: true, containers: ['/dedup/'] },
      { type: 'card_number', data: MASTERCARD, deduplicate_token: true, containers: ['/dedup/'] },
    ]);
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body[0].id, res.body[1].id);
  });

  it('a replayed reply showing a token it found is shown again only while that token lives and the key sees it as it did', async () => {
    const DINERS = '30569309025904';
    rememberSecret(DINERS);
    const all = ['token:create', 'token:read', 'token:delete'];
    const app = await createApplication(server, { name: 'retrying tokenizer', type: 'private', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: all }] });
    // The token found holds a cvc the request does not send: the reply shows more than the request did.
    const existing = await call(server, 'POST', '/tokens', { key: app.key, body: { type: 'card', data: { number: DINERS, expiration_month: 3, expiration_year: YEAR, cvc: '4471' } } });
    assert.equal(existing.status, 201, existing.text);
    const doc = { c: { type: 'card', data: { number: DINERS, expiration_month: 3, expiration_year: YEAR }, deduplicate_token: true } };
    const send = () => call(server, 'POST', '/tokenize', { key: app.key, body: doc, headers: { 'svc-idempotency-key': `tokenize-${existing.body.id}` } });
    const first = await send();
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.c.id, existing.body.id);
    assert.equal(first.body.c.data.cvc, '4471');
    const replayed = await send();
    assert.equal(replayed.headers.get('svc-idempotent-replayed'), 'true');
    assert.deepEqual(replayed.body, first.body);
    assert.equal((await call(server, 'DELETE', `/tokens/${existing.body.id}`, { key: app.key })).status, 204);
    const gone = await send();
    assert.equal(gone.status, 409, gone.text);
    assert.match(gone.body.detail, /no longer exists/);
    // Without the request id and the token's id: random values that may hold the digits by chance.
    const { request_id: _requestId, ...problem } = gone.body;
    const shown = JSON.stringify(problem).replaceAll(existing.body.id, '<id>');
    assert.ok(!shown.includes(DINERS) && !shown.includes('4471'), gone.text);
  });

  it('a document without any token request, or with more than 100, is a 400', async () => {
    for (const doc of [{ nothing: 'here' }, [], 'text', 5, null, { a: { type: 'card' } }]) {
      const res = await tokenize(doc);
      assert.equal(res.status, 400, `${JSON.stringify(doc)}: ${res.text}`);
    }
    const before = await count();
    const many = await tokenize(Array.from({ length: 101 }, (_, i) => ({ type: 'token', data: i })));
    assert.equal(many.status, 400, many.text);
    assert.deepEqual(many.body.errors, { body: ['at most 100 tokens per tokenize request'] });
    assert.equal(await count(), before);
    // Counted before any is made or even checked: the bad first card is never reached.
    const badFirst = await tokenize([{ type: 'card', data: { number: '1' } }, ...Array.from({ length: 100 }, (_, i) => ({ type: 'token', data: i }))]);
    assert.deepEqual(badFirst.body.errors, { body: ['at most 100 tokens per tokenize request'] });
    const hundred = await tokenize(Array.from({ length: 100 }, (_, i) => ({ type: 'token', data: i })));
    assert.equal(hundred.status, 201, hundred.text);
    assert.equal(await count(), before + 100);
  });

  it('public keys tokenize but see no data; the tokens are the tenant\'s', async () => {
    const pub = (await createApplication(server, { name: 'browser', type: 'public', permissions: ['token:create'] })).key;
    const res = await tokenize({ card: { type: 'card', data: { number: VISA, expiration_month: 2, expiration_year: YEAR } } }, pub);
    assert.equal(res.status, 201, res.text);
    assert.equal('data' in res.body.card, false);
    assert.equal(res.body.card.tenant_id, server.tenantId);
    const other = await createOtherTenant(server);
    const theirs = (await createApplication(server, { name: 'x', type: 'private', permissions: ['token:read'] }, other.api_key)).key;
    assert.equal((await call(server, 'GET', `/tokens/${res.body.card.id}`, { key: theirs })).status, 404);
  });

  it('security', async () => {
    await assertAuthCases(server, { method: 'POST', path: '/tokenize', permissions: ['token:create'], type: 'private', body: { a: { type: 'token', data: 'x' } } });
  });
});
