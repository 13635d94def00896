import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/** Who may see which token data: plain permissions, rule transforms and precedence, public keys, session keys, tenants. */

const YEAR = new Date().getUTCFullYear() + 2;
const VISA = '4000056655665556';
const MASTERCARD = '5200828282828210';
const CARD = { number: VISA, expiration_month: 7, expiration_year: YEAR, cvc: '321' };
const MASKED = { number: '400005XXXXXX5556', expiration_month: 7, expiration_year: YEAR };

type Rule = { priority: number; container?: string; conditions?: unknown[]; transform: string; permissions: string[] };

describe('token access rules and transforms', () => {
  let server: TestServer;
  /** Creates tokens anywhere and reveals them: the test's own view of the truth. */
  let admin: string;

  const keyWith = async (body: { permissions?: string[]; rules?: Rule[]; type?: string }) =>
    (await createApplication(server, { name: 'under test', type: 'private', ...body })).key;
  const get = (id: string, key: string) => call(server, 'GET', `/tokens/${id}`, { key });
  async function token(body: Record<string, unknown>, key = admin) {
    const res = await call(server, 'POST', '/tokens', { key, body });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  before(async () => {
    server = await startTestServer({ WORKERS: '0' });
    rememberSecret(VISA, MASTERCARD);
    admin = await keyWith({ rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }] });
  });
  after(() => server.stop());

  it('plain permissions mask: create and read show the mask, never the number or cvc', async () => {
    const key = await keyWith({ permissions: ['token:create', 'token:read'] });
    const created = await token({ type: 'card', data: CARD }, key);
    assert.deepEqual(created.data, MASKED);
    const read = await get(created.id, key);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body.data, MASKED);
    assert.ok(!read.text.includes(VISA) && !read.text.includes('"321"'));
    // The non-sensitive card view is there whatever the transform.
    assert.equal(read.body.card.last4, '5556');
  });

  it('reveal returns the plaintext on create and read', async () => {
    const key = await keyWith({ rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:create', 'token:read'] }] });
    const created = await token({ type: 'card', data: CARD }, key);
    assert.deepEqual(created.data, CARD);
    assert.deepEqual((await get(created.id, key)).body.data, CARD);
  });

  it('redact omits data entirely', async () => {
    const key = await keyWith({ rules: [{ priority: 1, container: '/pci/', transform: 'redact', permissions: ['token:create', 'token:read'] }] });
    const created = await token({ type: 'card', data: CARD }, key);
    assert.equal('data' in created, false);
    const read = await get(created.id, key);
    assert.equal(read.status, 200);
    assert.equal('data' in read.body, false);
    assert.equal(read.body.card.bin, '400005');
    assert.ok(!read.text.includes(VISA));
  });

  it('a rule without a transform redacts', async () => {
    const res = await call(server, 'POST', '/applications', {
      key: server.key,
      body: { name: 'default transform', type: 'private', rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'] }] },
    });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.key);
    const t = await token({ type: 'card', data: CARD });
    const read = await get(t.id, res.body.key);
    assert.equal(read.status, 200);
    assert.equal('data' in read.body, false);
  });

  it('mask on a type without a mask (token) omits data', async () => {
    const key = await keyWith({ rules: [{ priority: 1, container: '/general/', transform: 'mask', permissions: ['token:create', 'token:read'] }] });
    const created = await token({ type: 'token', data: { secret: 'value' } }, key);
    assert.equal('data' in created, false);
    const read = await get(created.id, key);
    assert.equal(read.status, 200);
    assert.equal('data' in read.body, false);
    assert.ok(!read.text.includes('value'));
  });

  it('the first matching rule decides: a narrower rule first masks, the broader one reveals the rest', async () => {
    const key = await keyWith({
      rules: [
        { priority: 1, container: '/pci/high/', transform: 'mask', permissions: ['token:read'] },
        { priority: 2, container: '/pci/', transform: 'reveal', permissions: ['token:read'] },
      ],
    });
    const high = await token({ type: 'card', data: CARD, containers: ['/pci/high/'] });
    const low = await token({ type: 'card', data: CARD, containers: ['/pci/low/'] });
    assert.deepEqual((await get(high.id, key)).body.data, MASKED);
    assert.deepEqual((await get(low.id, key)).body.data, CARD);
  });

  it('priority, not the order rules were written in, decides', async () => {
    const key = await keyWith({
      rules: [
        { priority: 2, container: '/pci/', transform: 'reveal', permissions: ['token:read'] },
        { priority: 1, container: '/pci/high/', transform: 'redact', permissions: ['token:read'] },
      ],
    });
    const high = await token({ type: 'card', data: CARD, containers: ['/pci/high/'] });
    const low = await token({ type: 'card', data: CARD, containers: ['/pci/low/'] });
    assert.equal('data' in (await get(high.id, key)).body, false);
    assert.deepEqual((await get(low.id, key)).body.data, CARD);
    // And the broad rule first: it wins everywhere under /pci/.
    const broadFirst = await keyWith({
      rules: [
        { priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:read'] },
        { priority: 2, container: '/pci/high/', transform: 'redact', permissions: ['token:read'] },
      ],
    });
    assert.deepEqual((await get(high.id, broadFirst)).body.data, CARD);
  });

  it('a matching rule that does not grant the permission is passed over', async () => {
    const key = await keyWith({
      rules: [
        { priority: 1, container: '/pci/', transform: 'redact', permissions: ['token:create'] },
        { priority: 2, container: '/pci/', transform: 'reveal', permissions: ['token:read'] },
      ],
    });
    const created = await token({ type: 'card', data: CARD }, key);
    assert.equal('data' in created, false, 'create used rule 1 (redact)');
    assert.deepEqual((await get(created.id, key)).body.data, CARD, 'read used rule 2 (reveal)');
  });

  it('no matching rule is a 403, and containers match by whole path segments', async () => {
    const key = await keyWith({ rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }] });
    const general = await token({ type: 'token', data: 'x' });
    const lookalike = await token({ type: 'card_number', data: VISA, containers: ['/pcix/'] });
    for (const t of [general, lookalike]) {
      const res = await get(t.id, key);
      assert.equal(res.status, 403, res.text);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(res.body.data, undefined);
    }
  });

  it('a token in several containers is reachable through any of them', async () => {
    const key = await keyWith({ rules: [{ priority: 1, container: '/customers/', transform: 'reveal', permissions: ['token:read'] }] });
    const t = await token({ type: 'card_number', data: MASTERCARD, containers: ['/pci/high/', '/customers/c-9/'] });
    assert.equal((await get(t.id, key)).body.data, MASTERCARD);
  });

  it('rules decide before plain permissions; plain permissions mask the rest', async () => {
    const key = await keyWith({
      permissions: ['token:read'],
      rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }],
    });
    const card = await token({ type: 'card', data: CARD });
    const account = await token({ type: 'us_bank_account_number', data: '44556677889900' });
    rememberSecret('44556677889900');
    assert.deepEqual((await get(card.id, key)).body.data, CARD);
    assert.equal((await get(account.id, key)).body.data, 'XXXXXXXXXX9900');
  });

  describe('public application keys', () => {
    it('create tokens (201) but never see data, and cannot read them back; a rule cannot say otherwise', async () => {
      const plain = (await createApplication(server, { name: 'browser', type: 'public', permissions: ['token:create'] })).key;
      const revealing = await call(server, 'POST', '/applications', {
        key: server.key,
        body: { name: 'browser with rule', type: 'public', rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:create'] }] },
      });
      assert.equal(revealing.status, 400, revealing.text);
      assert.ok(revealing.body.errors['body.rules[0].transform'], revealing.text);
      const ruled = (await createApplication(server, {
        name: 'browser with rule',
        type: 'public',
        rules: [{ priority: 1, container: '/pci/', permissions: ['token:create'] }],
      })).key;
      for (const key of [plain, ruled]) {
        const created = await call(server, 'POST', '/tokens', { key, body: { type: 'card', data: CARD } });
        assert.equal(created.status, 201, created.text);
        assert.equal('data' in created.body, false);
        assert.ok(!created.text.includes(VISA));
        assert.equal(created.body.card.last4, '5556');
        const read = await get(created.body.id, key);
        assert.equal(read.status, 403);
        // The token exists: the private side can read it.
        assert.deepEqual((await get(created.body.id, admin)).body.data, CARD);
      }
    });

    it('create only in containers they hold token:create on, every one of those the token is put in', async () => {
      // A public key is in every browser: its rule's container is the only bound on where tokens go.
      const browser = (await createApplication(server, {
        name: 'browser confined',
        type: 'public',
        rules: [{ priority: 1, container: '/browser/', transform: 'redact', permissions: ['token:create'] }],
      })).key;
      const before = (await call(server, 'GET', '/tokens?container=%2Fpci%2Fhigh%2F', { key: admin })).body.pagination.total_items;
      const planted = await call(server, 'POST', '/tokens', { key: browser, body: { type: 'card', data: CARD, containers: ['/browser/', '/pci/high/'] } });
      assert.equal(planted.status, 403, planted.text);
      assert.match(planted.body.detail, /token:create on \/pci\/high\//);
      const tokenized = await call(server, 'POST', '/tokenize', { key: browser, body: { card: { type: 'card', data: CARD, containers: ['/pci/high/', '/browser/'] } } });
      assert.equal(tokenized.status, 403, tokenized.text);
      assert.equal((await call(server, 'GET', '/tokens?container=%2Fpci%2Fhigh%2F', { key: admin })).body.pagination.total_items, before);
      const fine = await call(server, 'POST', '/tokens', { key: browser, body: { type: 'card', data: CARD, containers: ['/browser/', '/browser/checkout/'] } });
      assert.equal(fine.status, 201, fine.text);
    });

    it('cannot be given token:read', async () => {
      const res = await call(server, 'POST', '/applications', { key: server.key, body: { name: 'x', type: 'public', permissions: ['token:read'] } });
      assert.equal(res.status, 400);
    });
  });

  describe('session keys', () => {
    it('read exactly the token their authorization names, revealed, and get 403 for any other', async () => {
      const pub = (await createApplication(server, { name: 'checkout', type: 'public', permissions: ['token:create'] })).key;
      const authorizer = await keyWith({ permissions: ['session:authorize'] });
      const mine = await token({ type: 'card', data: CARD });
      const other = await token({ type: 'card', data: CARD });

      const session = await call(server, 'POST', '/sessions', { key: pub });
      assert.equal(session.status, 201, session.text);
      const { session_key: sessionKey, nonce } = session.body;
      rememberSecret(sessionKey, nonce);
      // Before authorization the session key reads nothing.
      assert.equal((await get(mine.id, sessionKey)).status, 403);

      const authorized = await call(server, 'POST', '/sessions/authorize', {
        key: authorizer,
        body: { nonce, rules: [{ priority: 1, conditions: [{ attribute: 'id', operator: 'equals', value: mine.id }], transform: 'reveal', permissions: ['token:read'] }] },
      });
      assert.equal(authorized.status, 204, authorized.text);

      const read = await get(mine.id, sessionKey);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(read.body.data, CARD);
      assert.equal((await get(other.id, sessionKey)).status, 403);
      // Lists hold only the authorized token, on the first page however many tokens the tenant
      // has, and count only it.
      const list = await call(server, 'GET', '/tokens?size=1', { key: sessionKey });
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(list.body.data.map((t: { id: string }) => t.id), [mine.id]);
      assert.deepEqual(list.body.pagination, { total_items: 1, page_number: 1, page_size: 1, total_pages: 1 });
      const v2 = await call(server, 'GET', '/v2/tokens?size=1', { key: sessionKey });
      assert.deepEqual(v2.body.data.map((t: { id: string }) => t.id), [mine.id]);
      assert.equal(v2.body.pagination.next, undefined);
    });

    it('container conditions scope a session to a container prefix', async () => {
      const pub = (await createApplication(server, { name: 'checkout 2', type: 'public', permissions: ['token:create'] })).key;
      const authorizer = await keyWith({ permissions: ['session:authorize'] });
      const inside = await token({ type: 'card_number', data: VISA, containers: ['/sessions/s-1/'] });
      const outside = await token({ type: 'card_number', data: VISA, containers: ['/sessions/s-2/'] });
      const session = await call(server, 'POST', '/sessions', { key: pub });
      rememberSecret(session.body.session_key, session.body.nonce);
      const authorized = await call(server, 'POST', '/sessions/authorize', {
        key: authorizer,
        body: {
          nonce: session.body.nonce,
          rules: [{ priority: 1, conditions: [{ attribute: 'container', operator: 'starts_with', value: '/sessions/s-1/' }], transform: 'mask', permissions: ['token:read'] }],
        },
      });
      assert.equal(authorized.status, 204, authorized.text);
      const read = await get(inside.id, session.body.session_key);
      assert.equal(read.status, 200);
      assert.equal(read.body.data, '400005XXXXXX5556');
      assert.equal((await get(outside.id, session.body.session_key)).status, 403);
      const list = await call(server, 'GET', '/tokens?size=1', { key: session.body.session_key });
      assert.deepEqual(list.body.data.map((t: { id: string }) => t.id), [inside.id]);
      assert.equal(list.body.pagination.total_items, 1);
    });

    it('conditions of one rule must all hold; an equals condition on containers matches the whole container', async () => {
      const pub = (await createApplication(server, { name: 'checkout 3', type: 'public', permissions: ['token:create'] })).key;
      const authorizer = await keyWith({ permissions: ['session:authorize'] });
      const a = await token({ id: 'order-1-card', type: 'card_number', data: VISA, containers: ['/orders/o-1/'] });
      await token({ id: 'order-1-other', type: 'card_number', data: VISA, containers: ['/orders/o-2/'] });
      await token({ id: 'order-1-deeper', type: 'card_number', data: VISA, containers: ['/orders/o-1/deeper/'] });
      await token({ id: 'order-2-card', type: 'card_number', data: VISA, containers: ['/orders/o-1/'] });
      const session = await call(server, 'POST', '/sessions', { key: pub });
      rememberSecret(session.body.session_key, session.body.nonce);
      const authorized = await call(server, 'POST', '/sessions/authorize', {
        key: authorizer,
        body: {
          nonce: session.body.nonce,
          rules: [{
            priority: 1,
            conditions: [{ attribute: 'id', operator: 'starts_with', value: 'order-1-' }, { attribute: 'container', operator: 'equals', value: '/orders/o-1/' }],
            transform: 'reveal',
            permissions: ['token:read'],
          }],
        },
      });
      assert.equal(authorized.status, 204, authorized.text);
      const key = session.body.session_key;
      for (const id of ['order-1-other', 'order-1-deeper', 'order-2-card']) assert.equal((await get(id, key)).status, 403, id);
      assert.equal((await get(a.id, key)).body.data, VISA);
      const list = await call(server, 'GET', '/tokens', { key });
      assert.deepEqual(list.body.data.map((t: { id: string }) => t.id), [a.id]);
      assert.equal(list.body.pagination.total_items, 1);
    });
  });

  describe('tenants', () => {
    it('another tenant\'s token is a 404 for every route, with the keys of both tenants crossing', async () => {
      const other = await createOtherTenant(server);
      const all = ['token:create', 'token:read', 'token:update', 'token:delete'];
      const theirKey = (await createApplication(server, { name: 'theirs', type: 'private', permissions: all }, other.api_key)).key;
      const ourKey = await keyWith({ permissions: all });
      const ours = await token({ type: 'card', data: CARD }, ourKey);
      const theirs = await token({ type: 'card', data: CARD }, theirKey);
      for (const [key, id] of [[ourKey, theirs.id], [theirKey, ours.id]]) {
        assert.equal((await get(id, key)).status, 404);
        const patch = await call(server, 'PATCH', `/tokens/${id}`, { key, body: { metadata: { a: 'b' } }, contentType: 'application/merge-patch+json' });
        assert.equal(patch.status, 404, patch.text);
        assert.equal((await call(server, 'DELETE', `/tokens/${id}`, { key })).status, 404);
      }
      // Both still exist and are unchanged for their owners.
      assert.deepEqual((await get(ours.id, ourKey)).body.metadata, {});
      assert.deepEqual((await get(theirs.id, theirKey)).body.metadata, {});
      // And the 404 says nothing about existence: same answer as an id nobody has.
      const missing = await get('no-such-token', ourKey);
      const crossed = await get(theirs.id, ourKey);
      assert.equal(crossed.body.detail, missing.body.detail);
    });
  });
});
