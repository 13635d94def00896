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

    it('never receive fingerprints, which would confirm guessed values; nor do session keys', async () => {
      const browser = (await createApplication(server, { name: 'browser without fingerprints', type: 'public', permissions: ['token:create'] })).key;
      const created = await call(server, 'POST', '/tokens', { key: browser, body: { type: 'card', data: CARD } });
      assert.equal(created.status, 201, created.text);
      assert.equal('fingerprint' in created.body, false);
      assert.equal(created.body.fingerprint_expression, '{{ data.number }}');
      const tokenized = await call(server, 'POST', '/tokenize', { key: browser, body: { cards: [{ type: 'card', data: CARD }, { type: 'card_number', data: MASTERCARD }] } });
      assert.equal(tokenized.status, 201, tokenized.text);
      for (const t of tokenized.body.cards) assert.equal('fingerprint' in t, false);
      // The token has one, which a private key reads.
      assert.match((await get(created.body.id, admin)).body.fingerprint, /^[\w-]{20,}$/);

      // A session is in the browser too: it reads what it was granted, without fingerprints.
      const authorizer = await keyWith({ permissions: ['session:authorize'] });
      const session = await call(server, 'POST', '/sessions', { key: browser });
      rememberSecret(session.body.session_key, session.body.nonce);
      const rule = { priority: 1, conditions: [{ attribute: 'id', operator: 'equals', value: created.body.id }], transform: 'reveal', permissions: ['token:read', 'token:search', 'token:create'] };
      const authorized = await call(server, 'POST', '/sessions/authorize', { key: authorizer, body: { nonce: session.body.nonce, rules: [rule] } });
      assert.equal(authorized.status, 204, authorized.text);
      const key = session.body.session_key;
      const read = await get(created.body.id, key);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(read.body.data, CARD);
      assert.equal('fingerprint' in read.body, false);
      const lists = [
        await call(server, 'GET', '/tokens', { key }),
        await call(server, 'GET', '/v2/tokens', { key }),
        await call(server, 'POST', '/v2/tokens/search', { key, body: { query: `id:${created.body.id}` } }),
      ];
      for (const list of lists) {
        assert.equal(list.status, 200, list.text);
        assert.deepEqual(list.body.data.map((t: { id: string }) => t.id), [created.body.id]);
        assert.equal('fingerprint' in list.body.data[0], false, list.text);
      }
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

  describe('keys that cannot read a token', () => {
    // Containers of their own, so the applications the tests above made see them all alike.
    const MOVES = '/moves/pci/';
    const OPEN = '/moves/open/';
    const ARCHIVE = '/moves/archive/';
    const MERGE = 'application/merge-patch+json';
    const patch = (id: string, body: unknown, key: string) => call(server, 'PATCH', `/tokens/${id}`, { key, body, contentType: MERGE });
    let updater: string;
    let reader: string;

    before(async () => {
      // A public key that may create and update tokens anywhere (never read them), and a backend
      // key that reads whatever is in the open container in the clear.
      updater = (await createApplication(server, { name: 'browser updater', type: 'public', permissions: ['token:create', 'token:update'] })).key;
      reader = await keyWith({ rules: [{ priority: 1, container: OPEN, transform: 'reveal', permissions: ['token:read'] }] });
    });

    it('rewriting a token\'s data needs token:update on every container it is in; its metadata, on one', async () => {
      // Containers of its own: the keys it makes must not change who sees the other tests' tokens.
      const t = await token({ type: 'token', data: { note: 'kept' }, containers: ['/rewrites/a/', '/rewrites/b/'] });
      const onOne = await keyWith({ rules: [{ priority: 1, container: '/rewrites/b/', transform: 'reveal', permissions: ['token:update'] }] });
      const rewrite = await patch(t.id, { data: { note: 'overwritten' } }, onOne);
      assert.equal(rewrite.status, 403, rewrite.text);
      assert.match(rewrite.body.detail, /needs token:update on every container it is in; the API key lacks it on \/rewrites\/a\//);
      assert.deepEqual((await get(t.id, admin)).body.data, { note: 'kept' });
      const tagged = await patch(t.id, { metadata: { tag: 'x' } }, onOne);
      assert.equal(tagged.status, 200, tagged.text);
      const onBoth = await keyWith({ rules: [{ priority: 1, container: '/rewrites/', transform: 'reveal', permissions: ['token:update'] }] });
      const rewritten = await patch(t.id, { data: { note: 'rewritten' } }, onBoth);
      assert.equal(rewritten.status, 200, rewritten.text);
      assert.deepEqual((await get(t.id, admin)).body.data, { note: 'rewritten' });
    });

    it('a public key\'s deduplicating create never answers with, nor touches, a token it cannot read', async () => {
      const victim = await token({ type: 'card', data: CARD, containers: [MOVES], metadata: { owner: 'victim' }, deduplicate_token: true });
      const res = await call(server, 'POST', '/tokens', { key: updater, body: { type: 'card', data: { number: VISA, expiration_month: 1, expiration_year: YEAR }, containers: [MOVES], deduplicate_token: true } });
      assert.equal(res.status, 201, res.text);
      assert.notEqual(res.body.id, victim.id);
      assert.ok(!res.text.includes(victim.id), res.text);
      assert.equal('fingerprint' in res.body, false);
      // Nor through tokenize, nor when it names the victim's id.
      const tokenized = await call(server, 'POST', '/tokenize', { key: updater, body: { a: { type: 'card', data: CARD, containers: [MOVES], deduplicate_token: true } } });
      assert.equal(tokenized.status, 201, tokenized.text);
      assert.notEqual(tokenized.body.a.id, victim.id);
      const named = await call(server, 'POST', '/tokens', { key: updater, body: { id: victim.id, type: 'card', data: CARD, containers: [MOVES], deduplicate_token: true } });
      assert.equal(named.status, 409, named.text);
      // The victim is as it was.
      const after = await get(victim.id, admin);
      assert.deepEqual(after.body.data, CARD);
      assert.deepEqual(after.body.metadata, { owner: 'victim' });
      // A private key that may create there still gets the token it duplicates.
      const backend = await keyWith({ permissions: ['token:create', 'token:read'] });
      assert.equal((await token({ type: 'card', data: CARD, containers: [MOVES], deduplicate_token: true }, backend)).id, victim.id);
    });

    it('a public key cannot move a token where another key would see more of it', async () => {
      const victim = await token({ type: 'card', data: CARD, containers: [MOVES] });
      assert.equal((await get(victim.id, reader)).status, 403);
      const res = await patch(victim.id, { containers: [OPEN] }, updater);
      assert.equal(res.status, 403, res.text);
      assert.match(res.body.detail, /other keys of the tenant see more of its data/);
      assert.ok(!res.text.includes(VISA));
      // Adding the open container beside the old one is the same move.
      assert.equal((await patch(victim.id, { containers: [MOVES, OPEN] }, updater)).status, 403);
      assert.deepEqual((await get(victim.id, admin)).body.containers, [MOVES]);
      assert.equal((await get(victim.id, reader)).status, 403);
      // Taking it out of a container can show more as well: here a rule on /moves/shadow/ comes
      // first and redacts, so the reveal of /moves/ applies once the token has left it.
      const shadowed = await keyWith({
        rules: [
          { priority: 1, container: '/moves/shadow/', transform: 'redact', permissions: ['token:read'] },
          { priority: 2, container: '/moves/', transform: 'reveal', permissions: ['token:read'] },
        ],
      });
      const hidden = await token({ type: 'card', data: CARD, containers: [MOVES, '/moves/shadow/'] });
      assert.equal('data' in (await get(hidden.id, shadowed)).body, false);
      assert.equal((await patch(hidden.id, { containers: [MOVES] }, updater)).status, 403);
      assert.equal('data' in (await get(hidden.id, shadowed)).body, false);
      // Where nobody sees more than now, it may move it.
      const archived = await patch(victim.id, { containers: [ARCHIVE] }, updater);
      assert.equal(archived.status, 200, archived.text);
      assert.deepEqual(archived.body.containers, [ARCHIVE]);
      assert.equal('fingerprint' in archived.body, false);
    });

    it('a key that sees the mask may not move a token where another key reveals it; one that reveals it may', async () => {
      const victim = await token({ type: 'card', data: CARD, containers: [MOVES] });
      const masking = await keyWith({ permissions: ['token:read', 'token:update'] });
      const refused = await patch(victim.id, { containers: [OPEN] }, masking);
      assert.equal(refused.status, 403, refused.text);
      assert.equal((await get(victim.id, reader)).status, 403);
      // Moved where another key would see the mask it sees itself: no more than it reads.
      const masker = await keyWith({ rules: [{ priority: 1, container: '/moves/masked/', transform: 'mask', permissions: ['token:read'] }] });
      const masked = await patch(victim.id, { containers: ['/moves/masked/'] }, masking);
      assert.equal(masked.status, 200, masked.text);
      assert.deepEqual((await get(victim.id, masker)).body.data, MASKED);
      // A key that reads the data in the clear could hand it on anyway.
      const revealing = await keyWith({ rules: [{ priority: 1, container: '/moves/', transform: 'reveal', permissions: ['token:read', 'token:update'] }] });
      const moved = await patch(victim.id, { containers: [OPEN] }, revealing);
      assert.equal(moved.status, 200, moved.text);
      assert.deepEqual((await get(victim.id, reader)).body.data, CARD);
    });

    it('a move counts what sessions would see: one whose rule is on the container is another key', async () => {
      const victim = await token({ type: 'card', data: CARD, containers: [MOVES] });
      const pub = (await createApplication(server, { name: 'checkout for moves', type: 'public', permissions: ['token:create'] })).key;
      const authorizer = await keyWith({ permissions: ['session:authorize'] });
      const session = await call(server, 'POST', '/sessions', { key: pub });
      rememberSecret(session.body.session_key, session.body.nonce);
      const authorized = await call(server, 'POST', '/sessions/authorize', {
        key: authorizer,
        body: { nonce: session.body.nonce, rules: [{ priority: 1, conditions: [{ attribute: 'container', operator: 'starts_with', value: '/moves/cart-7/' }], transform: 'reveal', permissions: ['token:read'] }] },
      });
      assert.equal(authorized.status, 204, authorized.text);
      const res = await patch(victim.id, { containers: ['/moves/cart-7/'] }, updater);
      assert.equal(res.status, 403, res.text);
      assert.equal((await get(victim.id, session.body.session_key)).status, 403);
      // Nor into the container of a session rule that names a container rather than conditions.
      const other = await call(server, 'POST', '/sessions', { key: pub });
      rememberSecret(other.body.session_key, other.body.nonce);
      const byContainer = await call(server, 'POST', '/sessions/authorize', {
        key: authorizer,
        body: { nonce: other.body.nonce, rules: [{ priority: 1, container: '/moves/cart-9/', transform: 'mask', permissions: ['token:read'] }] },
      });
      assert.equal(byContainer.status, 204, byContainer.text);
      assert.equal((await patch(victim.id, { containers: ['/moves/cart-9/checkout/'] }, updater)).status, 403);
      assert.equal((await get(victim.id, other.body.session_key)).status, 403);
      // A container no session's rule names is no concern of theirs.
      assert.equal((await patch(victim.id, { containers: ['/moves/cart-8/'] }, updater)).status, 200);
    });

    it('setting or bringing forward an expiry needs token:delete; putting it off needs only token:update', async () => {
      const soon = () => new Date(Date.now() + 2000).toISOString();
      const hour = (n: number) => new Date(Date.now() + n * 3_600_000).toISOString();
      const t = await token({ type: 'card', data: CARD, containers: [MOVES] });
      const updateOnly = await keyWith({ permissions: ['token:read', 'token:update'] });
      for (const key of [updater, updateOnly]) {
        const res = await patch(t.id, { expires_at: soon() }, key);
        assert.equal(res.status, 403, res.text);
        assert.match(res.body.detail, /needs token:delete/);
      }
      assert.equal((await get(t.id, admin)).body.expires_at, undefined);
      const deleter = await keyWith({ permissions: ['token:read', 'token:update', 'token:delete'] });
      const set = await patch(t.id, { expires_at: hour(2) }, deleter);
      assert.equal(set.status, 200, set.text);
      // Later, or none at all: the token lives longer, which updating may do.
      assert.equal((await patch(t.id, { expires_at: hour(3) }, updateOnly)).status, 200);
      assert.equal((await patch(t.id, { expires_at: hour(1) }, updateOnly)).status, 403);
      assert.equal((await patch(t.id, { expires_at: hour(1) }, updater)).status, 403);
      assert.equal((await patch(t.id, { expires_at: null }, updateOnly)).status, 200);
      assert.equal((await get(t.id, admin)).body.expires_at, undefined);
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
