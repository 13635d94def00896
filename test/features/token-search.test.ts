import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { createTokenSdk } from '../../src/features/tokens/sdk.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/** GET /tokens, GET /v2/tokens and POST /v2/tokens/search: filters, paging, container scoping, tenants, HMAC-only search values. */

const YEAR = new Date().getUTCFullYear() + 1;
const VISA = '4242424242424242';
const VISA_2 = '4000002500003155';
const MASTERCARD = '5454545454545454';
const AMEX = '371449635398431';
const ACCOUNT = '7712345678';

type Token = { id: string; type: string; containers: string[]; fingerprint?: string; metadata: Record<string, string>; data?: unknown };
const ids = (list: Token[]) => list.map((t) => t.id);
const sorted = (list: string[]) => [...list].sort();

describe('token listing and search', () => {
  let server: TestServer;
  let sql: pg.Client;
  let admin: string;
  let other: { key: string; tenantId: string };
  /** The fixture: every token of the tenant, by name. */
  const t: Record<string, Token> = {};
  const all: Token[] = [];

  async function make(key: string, body: Record<string, unknown>): Promise<Token> {
    const res = await call(server, 'POST', '/tokens', { key, body });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  const list = (path: string, key = admin) => call(server, 'GET', path, { key });
  const search = (body: Record<string, unknown>, key = admin) => call(server, 'POST', '/v2/tokens/search', { key, body });
  async function found(query: string, key = admin): Promise<string[]> {
    const res = await search({ query, size: 100 }, key);
    assert.equal(res.status, 200, `${query}: ${res.text}`);
    assert.equal(res.body.pagination.next, undefined);
    return sorted(ids(res.body.data));
  }

  before(async () => {
    server = await startTestServer({ WORKERS: '0' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    rememberSecret(VISA, VISA_2, MASTERCARD, AMEX, ACCOUNT);
    admin = (await createApplication(server, {
      name: 'admin',
      type: 'private',
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:search', 'token:update'] }],
    })).key;
    const last4 = ['{{ data.number | last4 }}'];
    const entries: [string, Record<string, unknown>][] = [
      ['visa', { id: 'visa-1', type: 'card', data: { number: VISA, expiration_month: 1, expiration_year: YEAR }, metadata: { customer: 'c-1', note: 'hello world' }, search_indexes: [...last4, '{{ data.number }}'] }],
      ['visaLow', { type: 'card', data: { number: VISA_2, expiration_month: 2, expiration_year: YEAR }, containers: ['/pci/low/'], metadata: { customer: 'c-2' }, search_indexes: last4 }],
      ['master', { type: 'card', data: { number: MASTERCARD }, metadata: { customer: 'c-1', tier: 'gold' }, search_indexes: last4 }],
      ['visaAgain', { type: 'card', data: { number: VISA, expiration_month: 3, expiration_year: YEAR }, metadata: { customer: 'c-3' } }],
      ['amexNumber', { type: 'card_number', data: AMEX, metadata: { customer: 'c-2' }, search_indexes: ['{{ data | last4 }}'] }],
      ['account', { type: 'us_bank_account_number', data: ACCOUNT, metadata: { customer: 'c-1' }, search_indexes: ['{{ data | last4 }}'] }],
      ['general', { type: 'token', data: { any: 'json' }, metadata: { 'with space': 'yes' } }],
    ];
    for (const [name, body] of entries) {
      t[name] = await make(admin, body);
      all.push(t[name]);
    }

    const o = await createOtherTenant(server);
    const otherKey = (await createApplication(server, {
      name: 'other',
      type: 'private',
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:search'] }],
    }, o.api_key)).key;
    other = { key: otherKey, tenantId: o.tenant_id };
    // The other tenant has look-alikes of everything: same id, number, metadata, search values.
    await make(otherKey, { id: 'visa-1', type: 'card', data: { number: VISA }, metadata: { customer: 'c-1', note: 'hello world' }, search_indexes: last4 });
    await make(otherKey, { type: 'card_number', data: AMEX, metadata: { customer: 'c-2' }, search_indexes: ['{{ data | last4 }}'] });
  });
  after(async () => {
    await sql.end();
    await server.stop();
  });

  describe('GET /tokens', () => {
    it('lists the tenant\'s tokens in creation order with offset pagination', async () => {
      const res = await list('/tokens');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.pagination, { total_items: all.length, page_number: 1, page_size: 20, total_pages: 1 });
      assert.deepEqual(ids(res.body.data), ids(all));
      assert.deepEqual(res.body.data[0].data.number, VISA, 'each item is shown with the caller\'s transform');

      const page2 = await list('/tokens?size=3&page=2');
      assert.deepEqual(page2.body.pagination, { total_items: all.length, page_number: 2, page_size: 3, total_pages: 3 });
      assert.deepEqual(ids(page2.body.data), ids(all.slice(3, 6)));
      const beyond = await list('/tokens?size=3&page=9');
      assert.deepEqual(beyond.body.data, []);
    });

    it('filters by id (repeatable), type (repeatable), container, fingerprint and metadata, combined with AND', async () => {
      const q = async (query: string) => {
        const res = await list(`/tokens?${query}`);
        assert.equal(res.status, 200, `${query}: ${res.text}`);
        assert.equal(res.body.pagination.total_items, res.body.data.length);
        return sorted(ids(res.body.data));
      };
      assert.deepEqual(await q(`id=visa-1&id=${t.master.id}`), sorted(['visa-1', t.master.id]));
      assert.deepEqual(await q('id=visa-1'), ['visa-1']);
      assert.deepEqual(await q('type=card'), sorted(ids([t.visa, t.visaLow, t.master, t.visaAgain])));
      assert.deepEqual(await q('type=card_number&type=token'), sorted(ids([t.amexNumber, t.general])));
      assert.deepEqual(await q(`container=${encodeURIComponent('/pci/low/')}`), [t.visaLow.id]);
      assert.deepEqual(await q(`container=${encodeURIComponent('/bank/high/')}`), [t.account.id]);
      assert.deepEqual(await q(`container=${encodeURIComponent('/pci/')}`), [], 'container filters match whole containers');
      assert.deepEqual(await q(`fingerprint=${encodeURIComponent(t.visa.fingerprint!)}`), sorted(ids([t.visa, t.visaAgain])));
      assert.deepEqual(await q('metadata.customer=c-1'), sorted(ids([t.visa, t.master, t.account])));
      assert.deepEqual(await q('metadata.customer=c-1&metadata.tier=gold'), [t.master.id]);
      assert.deepEqual(await q('metadata.with%20space=yes'), [t.general.id]);
      assert.deepEqual(await q('metadata.customer=c-1&type=card'), sorted(ids([t.visa, t.master])));
      assert.deepEqual(await q('metadata.customer=nobody'), []);
      assert.deepEqual(await q('id=no-such-token'), []);
    });

    it('rejects unknown parameters and bad sizes or pages', async () => {
      for (const query of ['size=0', 'size=101', 'size=abc', 'page=0', 'page=-1', 'colour=red', 'type=passport', 'id=bad%20id', 'metadata=x', 'metadata.=x']) {
        const res = await list(`/tokens?${query}`);
        assert.equal(res.status, 400, `${query}: ${res.text}`);
        assert.ok(res.body.errors, query);
      }
      assert.ok((await list('/tokens?colour=red')).body.errors['query.colour']);
    });

    it('an empty fingerprint or a container that is no container path is a 400, never a filter left out', async () => {
      for (const path of ['/tokens', '/v2/tokens']) {
        const empty = await list(`${path}?fingerprint=`);
        assert.equal(empty.status, 400, `${path}: ${empty.text}`);
        assert.ok(empty.body.errors['query.fingerprint'], empty.text);
        for (const container of ['PCI', '/pci/high', 'pci/high/']) {
          const res = await list(`${path}?container=${encodeURIComponent(container)}`);
          assert.equal(res.status, 400, `${path} ${container}: ${res.text}`);
          assert.match(res.body.errors['query.container'][0], /starts and ends with "\/"/, res.text);
        }
      }
    });

    it('lists only tokens in containers the key may read, and counts only those', async () => {
      const pci = (await createApplication(server, {
        name: 'pci reader',
        type: 'private',
        rules: [{ priority: 1, container: '/pci/', transform: 'mask', permissions: ['token:read'] }],
      })).key;
      const res = await list('/tokens', pci);
      assert.equal(res.status, 200);
      assert.deepEqual(ids(res.body.data), ids([t.visa, t.visaLow, t.master, t.visaAgain, t.amexNumber]));
      assert.equal(res.body.pagination.total_items, 5);
      assert.equal(res.body.data[0].data.number, '424242XXXXXX4242');
      const lowOnly = (await createApplication(server, {
        name: 'low reader',
        type: 'private',
        rules: [{ priority: 1, container: '/pci/low/', transform: 'reveal', permissions: ['token:read'] }],
      })).key;
      assert.deepEqual(ids((await list('/tokens', lowOnly)).body.data), [t.visaLow.id]);
    });

    it('never lists another tenant\'s tokens', async () => {
      const res = await list('/tokens', other.key);
      assert.equal(res.body.pagination.total_items, 2);
      for (const token of res.body.data) assert.equal(token.tenant_id, other.tenantId);
      const mine = await list('/tokens?id=visa-1');
      assert.equal(mine.body.data.length, 1);
      assert.equal(mine.body.data[0].tenant_id, server.tenantId);
    });

    it('security', async () => {
      await assertAuthCases(server, { method: 'GET', path: '/tokens', permissions: ['token:read'], type: 'private' });
    });
  });

  describe('GET /v2/tokens', () => {
    it('pages through 30 tokens with size 10, visiting each exactly once', async () => {
      const batch: string[] = [];
      for (let i = 0; i < 30; i++) batch.push((await make(admin, { type: 'token', data: `item ${i}`, metadata: { batch: 'paging' } })).id);
      const seen: string[] = [];
      let start: string | undefined;
      let pages = 0;
      do {
        const res = await list(`/v2/tokens?metadata.batch=paging&size=10${start ? `&start=${encodeURIComponent(start)}` : ''}`);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.pagination.page_size, 10);
        seen.push(...ids(res.body.data));
        start = res.body.pagination.next;
        pages++;
      } while (start && pages < 10);
      assert.equal(pages, 3);
      assert.deepEqual(seen, batch, 'every token once, in creation order');

      // Without filters the paging covers the whole tenant, also exactly once.
      const everything: string[] = [];
      start = undefined;
      do {
        const res = await list(`/v2/tokens?size=7${start ? `&start=${encodeURIComponent(start)}` : ''}`);
        everything.push(...ids(res.body.data));
        start = res.body.pagination.next;
      } while (start);
      assert.equal(everything.length, all.length + 30);
      assert.equal(new Set(everything).size, everything.length);
    });

    it('takes the same filters', async () => {
      const res = await list(`/v2/tokens?type=card&metadata.customer=c-1&container=${encodeURIComponent('/pci/high/')}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(sorted(ids(res.body.data)), sorted(ids([t.visa, t.master])));
      const byFingerprint = await list(`/v2/tokens?fingerprint=${encodeURIComponent(t.visa.fingerprint!)}&id=${t.visaAgain.id}`);
      assert.deepEqual(ids(byFingerprint.body.data), [t.visaAgain.id]);
    });

    it('rejects bad cursors, sizes and unknown parameters', async () => {
      const forged = Buffer.from(JSON.stringify({ created_at: 'yesterday', id: 'x' })).toString('base64url');
      const wrongShape = Buffer.from(JSON.stringify({ offset: 5 })).toString('base64url');
      for (const query of ['start=garbage', `start=${forged}`, `start=${wrongShape}`, 'start=', 'size=0', 'size=101', 'size=ten', 'page=2', 'colour=red']) {
        const res = await list(`/v2/tokens?${query}`);
        assert.equal(res.status, 400, `${query}: ${res.text}`);
      }
      assert.ok((await list('/v2/tokens?start=garbage')).body.errors['query.start']);
    });

    it('a cursor whose position was altered is a 400 on the cursor, never a database error', async () => {
      const cursor = (position: Record<string, unknown>) => Buffer.from(JSON.stringify(position)).toString('base64url');
      const page = await list('/v2/tokens?size=2');
      const genuine = JSON.parse(Buffer.from(page.body.pagination.next, 'base64url').toString('utf8'));
      // Each parses as a date for Date.parse, or holds an id no token can have; none is what a page returns.
      const positions = [
        { ...genuine, created_at: '2020' },
        { ...genuine, created_at: '1' },
        { ...genuine, created_at: '+275760-09-13T00:00:00.000Z' },
        { ...genuine, created_at: '2026-02-30T00:00:00.000Z' },
        { ...genuine, created_at: '0000-01-01T00:00:00.000Z' },
        { ...genuine, id: 'a\u0000b' },
        { ...genuine, id: 'x'.repeat(201) },
      ];
      for (const position of positions) {
        const res = await list(`/v2/tokens?size=2&start=${cursor(position)}`);
        assert.equal(res.status, 400, `${JSON.stringify(position)}: ${res.text}`);
        assert.ok(res.body.errors['query.start'], res.text);
        const searched = await search({ query: 'type:card', start: cursor(position) });
        assert.equal(searched.status, 400, `${JSON.stringify(position)}: ${searched.text}`);
        assert.ok(searched.body.errors['body.start'], searched.text);
      }
      const resumed = await list(`/v2/tokens?size=2&start=${cursor(genuine)}`);
      assert.equal(resumed.status, 200, resumed.text);
    });

    it('lists only readable containers and only the tenant\'s tokens', async () => {
      const bank = (await createApplication(server, {
        name: 'bank reader',
        type: 'private',
        rules: [{ priority: 1, container: '/bank/', transform: 'mask', permissions: ['token:read'] }],
      })).key;
      const res = await list('/v2/tokens', bank);
      assert.deepEqual(ids(res.body.data), [t.account.id]);
      assert.equal(res.body.data[0].data, 'XXXXXX5678');
      const theirs = await list('/v2/tokens?size=100', other.key);
      assert.equal(theirs.body.data.length, 2);
      for (const token of theirs.body.data) assert.equal(token.tenant_id, other.tenantId);
    });

    it('bt.tokens.list in reactor and proxy code checks size and start as this endpoint does, never quietly pages from the start', async () => {
      const { tokens, authenticator } = server.running.services;
      const sdk = createTokenSdk(await authenticator.authenticate(admin), tokens, async () => null);
      const listed = (await sdk['tokens.list']({ size: 2 })) as { pagination: { next?: string }; data: Token[] };
      assert.equal(listed.data.length, 2);
      const next = (await sdk['tokens.list']({ size: 2, start: listed.pagination.next })) as { data: Token[] };
      assert.notDeepEqual(ids(next.data), ids(listed.data));
      assert.equal(((await sdk['tokens.list'](undefined)) as { data: Token[] }).data.length, 20);
      // The spec's cursor defaults to null: a null start, like one left undefined, is the first page.
      for (const query of [{ size: 2, start: null }, { size: 2, start: undefined }]) {
        assert.deepEqual(ids(((await sdk['tokens.list'](query)) as { data: Token[] }).data), ids(listed.data));
      }
      assert.equal(((await sdk['tokens.list']({ size: undefined })) as { data: Token[] }).data.length, 20);
      for (const [query, field] of [
        [{ size: 500 }, 'query.size'],
        [{ size: 0 }, 'query.size'],
        [{ size: '5' }, 'query.size'],
        [{ start: 5 }, 'query.start'],
        [{ start: '' }, 'query.start'],
        [{ start: 'garbage' }, 'query.start'],
        ['size=5', 'query'],
      ] as const) {
        await assert.rejects(sdk['tokens.list'](query), (err: { status?: number; errors?: Record<string, string[]> }) => {
          assert.equal(err.status, 400, JSON.stringify(query));
          assert.ok(err.errors?.[field], `${JSON.stringify(query)}: ${JSON.stringify(err.errors)}`);
          return true;
        });
      }
    });

    it('bt.tokens.list takes the filters of this endpoint, and refuses a member it does not know instead of listing everything', async () => {
      const { tokens, authenticator } = server.running.services;
      const sdk = createTokenSdk(await authenticator.authenticate(admin), tokens, async () => null);
      const listed = async (query: unknown) => sorted(ids(((await sdk['tokens.list'](query)) as { data: Token[] }).data));
      assert.deepEqual(await listed({ type: 'card_number', size: 100 }), [t.amexNumber.id]);
      assert.deepEqual(await listed({ type: ['card_number'], size: 100 }), [t.amexNumber.id]);
      assert.deepEqual(await listed({ id: 'visa-1' }), ['visa-1']);
      assert.deepEqual(await listed({ container: '/pci/low/', size: 100 }), [t.visaLow.id]);
      assert.deepEqual(await listed({ fingerprint: t.visa.fingerprint, size: 100 }), sorted(ids([t.visa, t.visaAgain])));
      assert.deepEqual(await listed({ 'metadata.customer': 'c-2', size: 100 }), sorted(ids([t.visaLow, t.amexNumber])));
      for (const [query, field] of [
        [{ color: 'red' }, 'query.color'],
        [{ type: 'lizard' }, 'query.type'],
        [{ fingerprint: '' }, 'query.fingerprint'],
      ] as const) {
        await assert.rejects(sdk['tokens.list'](query), (err: { status?: number; errors?: Record<string, string[]> }) => {
          assert.equal(err.status, 400, JSON.stringify(query));
          assert.ok(Object.keys(err.errors ?? {}).some((k) => k.startsWith(field)), `${JSON.stringify(query)}: ${JSON.stringify(err.errors)}`);
          return true;
        });
      }
    });

    it('security', async () => {
      await assertAuthCases(server, { method: 'GET', path: '/v2/tokens', permissions: ['token:read'], type: 'private' });
    });
  });

  describe('POST /v2/tokens/search', () => {
    it('finds by id, type, container, fingerprint and metadata', async () => {
      assert.deepEqual(await found('id:visa-1'), ['visa-1']);
      assert.deepEqual(await found('type:card_number'), [t.amexNumber.id]);
      assert.deepEqual(await found('container:/pci/low/'), [t.visaLow.id]);
      assert.deepEqual(await found(`fingerprint:${t.visa.fingerprint}`), sorted(ids([t.visa, t.visaAgain])));
      assert.deepEqual(await found('metadata.customer:c-2'), sorted(ids([t.visaLow, t.amexNumber])));
      assert.deepEqual(await found('metadata.customer:nobody'), []);
      assert.deepEqual(await found('type:bank'), []);
    });

    it('finds by search index values, with data: or as a bare term', async () => {
      assert.deepEqual(await found('data:4242'), [t.visa.id], 'visaAgain has the same number but no search index');
      assert.deepEqual(await found('4242'), [t.visa.id]);
      assert.deepEqual(await found('data:3155'), [t.visaLow.id]);
      assert.deepEqual(await found('data:8431'), [t.amexNumber.id]);
      assert.deepEqual(await found('data:5678'), [t.account.id]);
      assert.deepEqual(await found(`data:${VISA}`), [t.visa.id]);
      assert.deepEqual(await found('data:424242'), [], 'exact values only, no prefixes');
      assert.deepEqual(await found('data:9999'), []);
    });

    it('the mask, fingerprint and search indexes of a token together may add at most 4194304 characters through filters', async () => {
      const grow = `{{ data | pad_left: 100000${' | to_base16'.repeat(5)} }}`;
      const res = await call(server, 'POST', '/tokens', { key: admin, body: { type: 'token', data: 'x', search_indexes: [grow, `${grow}!`] } });
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.errors['body.search_indexes[1]'][0], /to_base16 makes the value too long/);
      const doubling = await call(server, 'POST', '/tokens', { key: admin, body: { type: 'token', data: 'x', fingerprint_expression: `{{ data${' | to_base16'.repeat(40)} }}` } });
      assert.equal(doubling.status, 400, doubling.text);
      assert.match(doubling.body.errors['body.fingerprint_expression'][0], /too long/);
    });

    it('joins terms with AND / OR (AND binds tighter) and parentheses; values may be quoted', async () => {
      assert.deepEqual(await found('type:card AND metadata.customer:c-1'), sorted(ids([t.visa, t.master])));
      assert.deepEqual(await found('metadata.customer:c-2 OR metadata.tier:gold'), sorted(ids([t.visaLow, t.amexNumber, t.master])));
      assert.deepEqual(await found('type:card AND (metadata.customer:c-2 OR metadata.customer:c-3)'), sorted(ids([t.visaLow, t.visaAgain])));
      // Without the parentheses AND binds first: (type:card AND c-2) OR c-3 — the same here, so check a case where it differs.
      assert.deepEqual(await found('type:card_number AND metadata.customer:c-2 OR metadata.customer:c-3'), sorted(ids([t.amexNumber, t.visaAgain])));
      assert.deepEqual(await found('type:card_number AND (metadata.customer:c-2 OR metadata.customer:c-3)'), [t.amexNumber.id]);
      assert.deepEqual(await found('metadata.note:"hello world"'), ['visa-1']);
      assert.deepEqual(await found('"4242" AND type:card'), [t.visa.id]);
      assert.deepEqual(await found('data:"5454" OR data:5678'), sorted(ids([t.master, t.account])));
    });

    it('a malformed query is a 400 on body.query', async () => {
      for (const query of ['type:card AND', '(type:card', 'type:card)', 'type:card type:bank', 'colour:red', 'metadata.:x', '"unterminated', 'type:', 'AND', 'type:card and id:x',
        // Values no token can hold, refused as the list filters refuse them, not matched to nothing.
        'id:a/b', 'id:..', `id:${'i'.repeat(201)}`, `fingerprint:${'f'.repeat(101)}`, `metadata.customer:"${'m'.repeat(501)}"`]) {
        const res = await search({ query });
        assert.equal(res.status, 400, `${query}: ${res.text}`);
        assert.ok(res.body.errors?.['body.query'], `${query}: ${res.text}`);
      }
      const fifty = Array.from({ length: 50 }, (_, i) => `id:x${i}`).join(' OR ');
      assert.equal((await search({ query: fifty })).status, 200);
      const tooMany = await search({ query: `${fifty} OR id:x50` });
      assert.equal(tooMany.status, 400);
      assert.ok(tooMany.body.errors['body.query']);
      const empty = await search({ query: '' });
      assert.equal(empty.status, 400);
      assert.ok(empty.body.errors['body.query']);
    });

    it('a type that is no token type, or a container that is no container path, is a 400 on body.query as in the list filters', async () => {
      for (const [query, message] of [
        ['type:passport', /"passport" is not a token type/],
        ['metadata.customer:c-1 AND type:credit_card', /"credit_card" is not a token type/],
        ['container:/pci/high', /container "\/pci\/high" must be a path/],
        ['container:PCI OR id:visa-1', /container "PCI" must be a path/],
      ] as const) {
        const res = await search({ query });
        assert.equal(res.status, 400, `${query}: ${res.text}`);
        assert.match(res.body.errors['body.query'][0], message, res.text);
      }
    });

    it('pages with start and size; bad values are 400s', async () => {
      const first = await search({ query: 'type:card', size: 3 });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.data.length, 3);
      assert.ok(first.body.pagination.next);
      const second = await search({ query: 'type:card', size: 3, start: first.body.pagination.next });
      assert.equal(second.body.data.length, 1);
      assert.equal(second.body.pagination.next, undefined);
      assert.deepEqual(sorted([...ids(first.body.data), ...ids(second.body.data)]), sorted(ids([t.visa, t.visaLow, t.master, t.visaAgain])));
      for (const body of [{ query: 'type:card', size: 0 }, { query: 'type:card', size: 101 }, { query: 'type:card', start: 'garbage' }, { size: 5 }]) {
        const res = await search(body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      }
      const badStart = await search({ query: 'type:card', start: 'garbage' });
      assert.ok(badStart.body.errors['body.start'], badStart.text);
      // An empty cursor is no cursor this endpoint returns (null is how to ask for the first page).
      const emptyStart = await search({ query: 'type:card', start: '' });
      assert.equal(emptyStart.status, 400, emptyStart.text);
      assert.ok(emptyStart.body.errors['body.start'], emptyStart.text);
      assert.equal((await search({ query: 'type:card', start: null })).status, 200);
    });

    it('never matches another tenant\'s tokens, even with equal ids, metadata and search values', async () => {
      assert.deepEqual(await found('id:visa-1 OR data:8431 OR metadata.customer:c-2'), sorted(['visa-1', t.amexNumber.id, t.visaLow.id]));
      const res = await search({ query: 'id:visa-1 OR data:4242 OR data:8431', size: 100 }, other.key);
      assert.equal(res.body.data.length, 2);
      for (const token of res.body.data) assert.equal(token.tenant_id, other.tenantId);
      assert.ok(!res.body.data.some((x: Token) => x.id === t.amexNumber.id));
    });

    it('searches only containers where the key holds token:search, showing data per that rule', async () => {
      const bankSearcher = (await createApplication(server, {
        name: 'bank searcher',
        type: 'private',
        rules: [{ priority: 1, container: '/bank/', transform: 'mask', permissions: ['token:search'] }],
      })).key;
      assert.deepEqual(await found('metadata.customer:c-1', bankSearcher), [t.account.id]);
      const res = await search({ query: 'data:5678' }, bankSearcher);
      assert.equal(res.body.data[0].data, 'XXXXXX5678');
      // token:search alone (plain permission) finds everything and shows the mask.
      const plain = (await createApplication(server, { name: 'searcher', type: 'private', permissions: ['token:search'] })).key;
      assert.deepEqual(await found('metadata.customer:c-1', plain), sorted(ids([t.visa, t.master, t.account])));
      const masked = await search({ query: 'id:visa-1' }, plain);
      assert.equal(masked.body.data[0].data.number, '424242XXXXXX4242');
    });

    it('search index values are stored only as keyed HMACs', async () => {
      const { rows } = await sql.query('SELECT search_indexes, search_hashes FROM tokens WHERE tenant_id = $1 AND id = $2', [server.tenantId, 'visa-1']);
      assert.deepEqual(rows[0].search_indexes, ['{{ data.number | last4 }}', '{{ data.number }}']);
      assert.equal(rows[0].search_hashes.length, 2);
      for (const h of rows[0].search_hashes) {
        assert.match(h, /^[\w-]{43}$/);
        assert.ok(!h.includes('4242'));
      }
      const everything = await sql.query('SELECT search_hashes::text AS h FROM tokens');
      for (const { h } of everything.rows) for (const plain of [VISA, VISA_2, MASTERCARD, AMEX, ACCOUNT, '4242', '3155', '8431', '5678']) assert.ok(!h.includes(plain));
      // Keyed per tenant: the same value hashes differently in the other tenant.
      const theirs = await sql.query('SELECT search_hashes FROM tokens WHERE tenant_id = $1 AND id = $2', [other.tenantId, 'visa-1']);
      assert.ok(!rows[0].search_hashes.includes(theirs.rows[0].search_hashes[0]));
    });

    it('revealed search results are audit-logged', async () => {
      const res = await search({ query: `id:${t.master.id}` });
      assert.equal(res.body.data[0].data.number, MASTERCARD);
      const logs = await call(server, 'GET', `/logs?entity_type=token&entity_id=${t.master.id}`, { key: server.key });
      assert.ok(logs.body.data.some((e: { operation: string }) => e.operation === 'search'), logs.text);
    });

    it('follows updates: the new values are found, the old ones no longer; deleted tokens never', async () => {
      rememberSecret('6011000990139424', '6011111111111117');
      const moving = await make(admin, { type: 'card_number', data: '6011000990139424', search_indexes: ['{{ data | last4 }}'], metadata: { phase: 'one' } });
      assert.deepEqual(await found('data:9424'), [moving.id]);
      const res = await call(server, 'PATCH', `/tokens/${moving.id}`, {
        key: admin,
        body: { data: '6011111111111117', metadata: { phase: 'two' } },
        contentType: 'application/merge-patch+json',
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(await found('data:9424'), []);
      assert.deepEqual(await found('data:1117 AND metadata.phase:two'), [moving.id]);
      assert.deepEqual(await found('metadata.phase:one'), []);
      const gone = await call(server, 'DELETE', `/tokens/${moving.id}`, { key: (await createApplication(server, { name: 'deleter', type: 'private', permissions: ['token:delete'] })).key });
      assert.equal(gone.status, 204);
      assert.deepEqual(await found('data:1117'), []);
    });

    it('%, _ and * are plain characters in filters and search terms, never wildcards', async () => {
      const percent = await make(admin, { id: 'wild_1', type: 'token', data: 'w', metadata: { pattern: '50%' } });
      const star = await make(admin, { id: 'wild-2', type: 'token', data: 'w', metadata: { pattern: '5*' } });
      await make(admin, { id: 'wildx1', type: 'token', data: 'w', metadata: { pattern: '500' } });
      assert.deepEqual(await found('metadata.pattern:50%'), [percent.id]);
      assert.deepEqual(await found('metadata.pattern:5*'), [star.id]);
      assert.deepEqual(await found('metadata.pattern:%'), []);
      assert.deepEqual(await found('id:wild_1'), ['wild_1'], '_ matches only itself, not wildx1');
      // % can be in no token id: a 400, as GET /tokens?id=wild%25 answers.
      assert.equal((await search({ query: 'id:wild%' })).status, 400);
      assert.equal((await list('/tokens?id=wild%25')).status, 400);
      assert.deepEqual(ids((await list('/tokens?metadata.pattern=50%25')).body.data), [percent.id]);
      assert.deepEqual(ids((await list('/tokens?id=wild_1')).body.data), ['wild_1']);
    });

    it('another tenant\'s cursor pages only through the caller\'s own tokens', async () => {
      const theirs = await list('/v2/tokens?size=1', other.key);
      const cursor = theirs.body.pagination.next;
      assert.ok(cursor);
      const res = await list(`/v2/tokens?size=100&start=${encodeURIComponent(cursor)}`);
      assert.equal(res.status, 200, res.text);
      for (const token of res.body.data) assert.equal(token.tenant_id, server.tenantId);
      const searched = await search({ query: 'id:visa-1 OR data:8431', size: 100, start: cursor });
      assert.equal(searched.status, 200, searched.text);
      for (const token of searched.body.data) assert.equal(token.tenant_id, server.tenantId);
    });

    it('filters and searches by metadata keys holding dots', async () => {
      const dotted = await make(admin, { type: 'token', data: 'dotted', metadata: { 'order.id': 'o-1', 'a.b.c': 'x' } });
      for (const path of ['/tokens?metadata.order.id=o-1', '/v2/tokens?metadata.order.id=o-1&metadata.a.b.c=x']) {
        const res = await list(path);
        assert.equal(res.status, 200, `${path}: ${res.text}`);
        assert.deepEqual(ids(res.body.data), [dotted.id], path);
      }
      assert.deepEqual(ids((await list('/tokens?metadata.order.id=o-2')).body.data), []);
      assert.deepEqual(await found('metadata.order.id:o-1'), [dotted.id]);
      assert.deepEqual(await found('metadata.a.b.c:x AND metadata.order.id:o-1'), [dotted.id]);
      assert.deepEqual(await found('metadata.order:o-1'), []);
    });

    it('any metadata key and value a token holds can be filtered and searched for, and __proto__ is a key like any other', async () => {
      const astral = '😀'.repeat(100);
      const odd = await make(admin, {
        type: 'token',
        data: 'odd keys',
        metadata: { 'k:y': 'v', [astral]: 'w', long: '😀'.repeat(500), empty: '', path: 'C:\\dir\\"q"', 'sp ace': 'x y' },
      });
      const decoy = await make(admin, { type: 'token', data: 'decoy', metadata: { k: 'y:v', empty: 'not empty' } });
      // The field ends at the first colon: `metadata.k:y:v` is key "k", value "y:v"; a key holding a colon is quoted.
      assert.deepEqual(await found('metadata.k:y:v'), [decoy.id]);
      assert.deepEqual(await found('metadata."k:y":v'), [odd.id]);
      assert.deepEqual(await found('metadata."sp ace":"x y"'), [odd.id]);
      // Keys of up to 100 and values of up to 500 characters, counted as the filters count them (code points).
      assert.deepEqual(await found(`metadata.${astral}:w`), [odd.id]);
      assert.deepEqual(await found(`metadata.long:${'😀'.repeat(500)}`), [odd.id]);
      assert.equal((await search({ query: `metadata.${astral}😀:w` })).status, 400);
      assert.equal((await search({ query: `metadata.long:${'😀'.repeat(501)}` })).status, 400);
      // An empty value, quoted; left out altogether it is still a malformed term.
      assert.deepEqual(await found('metadata.empty:""'), [odd.id]);
      assert.equal((await search({ query: 'metadata.empty:' })).status, 400);
      // Inside quotes \" and \\ are escapes; any other backslash is itself.
      assert.deepEqual(await found('metadata.path:"C:\\dir\\\\\\"q\\""'), [odd.id]);
      assert.deepEqual(await found('metadata.path:"C:\\\\dir\\\\\\"q\\""'), [odd.id]);
      assert.deepEqual(await found('metadata.path:C:\\dir'), []);
      for (const bad of ['metadata."k:y"', 'metadata."k:y" :v', 'metadata."":v']) {
        const res = await search({ query: bad });
        assert.equal(res.status, 400, `${bad}: ${res.text}`);
        assert.ok(res.body.errors['body.query'], bad);
      }
      // A filter on __proto__ matches no token (no JSON body may carry that key), never every token.
      for (const path of ['/tokens?metadata.__proto__=x', '/v2/tokens?metadata.__proto__=x']) {
        const res = await list(path);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(ids(res.body.data), [], path);
      }
      assert.deepEqual(await found('metadata.__proto__:x'), []);
    });

    it('SVC-IDEMPOTENCY-KEY is ignored: a repeated search is checked against the rules of the moment and audited again', async () => {
      const app = await createApplication(server, {
        name: 'retrying searcher',
        type: 'private',
        rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:search'] }],
      });
      const headers = { 'svc-idempotency-key': 'find-visa-1' };
      const searches = async () => {
        const res = await call(server, 'GET', '/logs?entity_type=token&entity_id=visa-1&size=100', { key: server.key });
        return (res.body.data as { operation: string; actor_id: string }[]).filter((e) => e.operation === 'search' && e.actor_id === app.id).length;
      };
      const first = await call(server, 'POST', '/v2/tokens/search', { key: app.key, body: { query: 'id:visa-1' }, headers });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.data[0].data.number, VISA);
      // The key keeps token:search, but only with the mask: the same request must not read the plaintext again.
      const narrowed = await call(server, 'PUT', `/applications/${app.id}`, {
        key: server.key,
        body: { name: 'retrying searcher', rules: [{ priority: 1, container: '/pci/', transform: 'mask', permissions: ['token:search'] }] },
      });
      assert.equal(narrowed.status, 200, narrowed.text);
      const again = await call(server, 'POST', '/v2/tokens/search', { key: app.key, body: { query: 'id:visa-1' }, headers });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.headers.get('svc-idempotent-replayed'), null);
      assert.equal(again.body.data[0].data.number, '424242XXXXXX4242');
      assert.ok(!again.text.includes(VISA));
      const restored = await call(server, 'PUT', `/applications/${app.id}`, {
        key: server.key,
        body: { name: 'retrying searcher', rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:search'] }] },
      });
      assert.equal(restored.status, 200, restored.text);
      await call(server, 'POST', '/v2/tokens/search', { key: app.key, body: { query: 'id:visa-1' }, headers });
      assert.equal(await searches(), 2, 'each revealing search has its audit entry');
      const stored = await sql.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE tenant_id = $1 AND actor_id = $2', [server.tenantId, app.id]);
      assert.equal(stored.rows[0].n, 0);
    });

    it('security', async () => {
      await assertAuthCases(server, { method: 'POST', path: '/v2/tokens/search', permissions: ['token:search'], type: 'private', body: { query: 'type:card' } });
    });
  });
});
