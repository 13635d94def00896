import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication } from '../helpers/http.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/** GET, PATCH and DELETE /tokens/{id}, and the audit trail of a token's life. */

const YEAR = new Date().getUTCFullYear() + 2;
const VISA = '4012888888881881';
const MASTERCARD = '5105105105105100';
const ACCOUNT = '661234567890';
const MERGE = 'application/merge-patch+json';

describe('token lifecycle', () => {
  let server: TestServer;
  let sql: pg.Client;
  /** Every token permission, with reveal: sees and changes everything. */
  let owner: { id: string; key: string };
  /** Plain permissions: masked. */
  let masked: string;

  const get = (id: string, key = owner.key) => call(server, 'GET', `/tokens/${id}`, { key });
  const patch = (id: string, body: unknown, key = owner.key, contentType = MERGE) => call(server, 'PATCH', `/tokens/${id}`, { key, body, contentType });
  async function card(extra: Record<string, unknown> = {}, key = owner.key) {
    const res = await call(server, 'POST', '/tokens', {
      key,
      body: { type: 'card', data: { number: VISA, expiration_month: 5, expiration_year: YEAR, cvc: '456' }, ...extra },
    });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  before(async () => {
    server = await startTestServer({ WORKERS: '0' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    rememberSecret(VISA, MASTERCARD, ACCOUNT);
    const all = ['token:create', 'token:read', 'token:update', 'token:delete'];
    owner = await createApplication(server, { name: 'owner', type: 'private', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: all }] });
    masked = (await createApplication(server, { name: 'masked', type: 'private', permissions: all })).key;
  });
  after(async () => {
    await sql.end();
    await server.stop();
  });

  describe('GET /tokens/{id}', () => {
    it('returns the token with its fields', async () => {
      const t = await card({ metadata: { customer: 'c-1' } });
      const res = await get(t.id);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, t, 'what create returned is what get returns (both reveal)');
    });

    it('404 for an unknown id, 400 for an id that cannot exist', async () => {
      const res = await get('no-such-token');
      assert.equal(res.status, 404);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal((await get('bad%20id')).status, 400);
    });

    it('403 when the key has no token:read on the token\'s container', async () => {
      const bankOnly = (await createApplication(server, {
        name: 'bank reader',
        type: 'private',
        rules: [{ priority: 1, container: '/bank/', transform: 'reveal', permissions: ['token:read'] }],
      })).key;
      const t = await card();
      const res = await get(t.id, bankOnly);
      assert.equal(res.status, 403);
      assert.ok(!res.text.includes(VISA));
      const account = await call(server, 'POST', '/tokens', { key: owner.key, body: { type: 'us_bank_account_number', data: ACCOUNT } });
      assert.equal((await get(account.body.id, bankOnly)).body.data, ACCOUNT);
    });

    it('security', async () => {
      const t = await card();
      await assertAuthCases(server, { method: 'GET', path: `/tokens/${t.id}`, permissions: ['token:read'], type: 'private' });
    });
  });

  describe('PATCH /tokens/{id}', () => {
    it('needs Content-Type application/merge-patch+json', async () => {
      const t = await card();
      const res = await patch(t.id, { metadata: { a: 'b' } }, owner.key, 'application/json');
      assert.equal(res.status, 415, res.text);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.deepEqual((await get(t.id)).body.metadata, {});
    });

    it('merges data: the rest of the data stays, the card view and mask follow, the fingerprint stays with the number', async () => {
      const t = await card();
      const res = await patch(t.id, { data: { expiration_year: YEAR + 1 } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.data, { number: VISA, expiration_month: 5, expiration_year: YEAR + 1, cvc: '456' });
      assert.equal(res.body.card.expiration_year, YEAR + 1);
      assert.equal(res.body.fingerprint, t.fingerprint);
      assert.equal(res.body.created_at, t.created_at);
      assert.equal(res.body.created_by, owner.id);
      assert.equal(res.body.modified_by, owner.id);
      assert.ok(Date.parse(res.body.modified_at) >= Date.parse(t.created_at));
      // The mask is rendered again from the new data.
      const view = await get(t.id, masked);
      assert.deepEqual(view.body.data, { number: '401288XXXXXX1881', expiration_month: 5, expiration_year: YEAR + 1 });

      // null removes a data member; a new number changes fingerprint, view and mask.
      const changed = await patch(t.id, { data: { number: MASTERCARD, cvc: null } });
      assert.equal(changed.status, 200, changed.text);
      assert.deepEqual(changed.body.data, { number: MASTERCARD, expiration_month: 5, expiration_year: YEAR + 1 });
      assert.notEqual(changed.body.fingerprint, t.fingerprint);
      assert.deepEqual(changed.body.card, { bin: '510510', last4: '5100', expiration_month: 5, expiration_year: YEAR + 1, brand: 'mastercard' });
      assert.equal((await get(t.id, masked)).body.data.number, '510510XXXXXX5100');
    });

    it('re-validates the merged data; an invalid patch changes nothing', async () => {
      const t = await card({ metadata: { keep: 'me' } });
      for (const [body, field] of [
        [{ data: { expiration_month: 13 } }, 'body.data.expiration_month'],
        [{ data: { number: '4012888888881882' } }, 'body.data.number'],
        [{ data: { pin: '0000' } }, 'body.data.pin'],
        [{ data: { number: null } }, 'body.data.number'],
        [{ data: 'not an object' }, 'body.data'],
        [{ containers: ['pci/'] }, 'body.containers[0]'],
        [{ metadata: { n: 5 } }, 'body.metadata.n'],
        [{ metadata: { '': 'v' } }, 'body.metadata'],
        [{ metadata: { ['k'.repeat(101)]: null } }, 'body.metadata'],
        [{ metadata: { note: 'v'.repeat(501) } }, 'body.metadata.note'],
        [{ mask: '{{ data.number | nope }}' }, 'body.mask'],
        [{ expires_at: new Date(Date.now() - 1000).toISOString() }, 'body.expires_at'],
        [{ expires_at: '9999-12-31T23:59:59-23:59' }, 'body.expires_at'],
        // 50 new keys next to the one there: 51 after the merge.
        [{ metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'])) }, 'body.metadata'],
        [{ mask: 'x'.repeat(2001) }, 'body.mask'],
        [{ type: 'token' }, 'body.type'],
        [{ id: 'renamed' }, 'body.id'],
      ] as const) {
        const res = await patch(t.id, body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
        assert.ok(res.body.errors?.[field], `${JSON.stringify(body)} names ${field}: ${res.text}`);
      }
      const after = await get(t.id);
      assert.deepEqual(after.body, t);
    });

    it('merges metadata: null deletes a key; metadata: null clears it', async () => {
      const t = await card({ metadata: { a: '1', b: '2' } });
      const res = await patch(t.id, { metadata: { b: null, c: '3' } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.metadata, { a: '1', c: '3' });
      assert.deepEqual((await get(t.id)).body.metadata, { a: '1', c: '3' });
      assert.deepEqual(res.body.data.number, VISA, 'data is untouched by a metadata patch');
      const cleared = await patch(t.id, { metadata: null });
      assert.deepEqual(cleared.body.metadata, {});
    });

    it('a card whose expiry has since passed can still be patched; only a new expiry must be current', async (t) => {
      const now = new Date();
      const token = await card({ data: { number: VISA, expiration_month: now.getUTCMonth() + 1, expiration_year: now.getUTCFullYear() } });
      // Forty days on, the card's month is over.
      t.mock.timers.enable({ apis: ['Date'], now: now.getTime() + 40 * 86_400_000 });
      const res = await patch(token.id, { metadata: { customer: 'c-1' }, data: { cvc: '789' } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.cvc, '789');
      const past = await patch(token.id, { data: { expiration_year: now.getUTCFullYear() - 1 } });
      assert.equal(past.status, 400, past.text);
      assert.deepEqual(Object.keys(past.body.errors), ['body.data.expiration_year']);
    });

    it('a mask patch merges into an object mask (null removes a member); search_indexes: null removes them', async () => {
      const t = await card({ search_indexes: ['{{ data.number | last4 }}'] });
      const res = await patch(t.id, { mask: { number: '{{ data.number | reveal_last: 4 }}' } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body.mask).sort(), ['expiration_month', 'expiration_year', 'number']);
      const dropped = await patch(t.id, { mask: { expiration_year: null }, search_indexes: null });
      assert.equal(dropped.status, 200, dropped.text);
      assert.deepEqual(dropped.body.mask, { number: '{{ data.number | reveal_last: 4 }}', expiration_month: '{{ data.expiration_month }}' });
      assert.deepEqual(dropped.body.search_indexes, []);
      assert.deepEqual((await get(t.id, masked)).body.data, { number: 'XXXXXXXXXXXX1881', expiration_month: 5 });
      // A mask that is not an object replaces the mask whole.
      assert.equal((await patch(t.id, { mask: '{{ data.number | last4 }}' })).body.mask, '{{ data.number | last4 }}');
    });

    it('a replayed patch shows its data again only while the key may still see it so, and never a deleted token\'s', async () => {
      const all = ['token:create', 'token:read', 'token:update', 'token:delete'];
      const app = await createApplication(server, { name: 'retrying patcher', type: 'private', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: all }] });
      const t = await card({}, app.key);
      const send = () => call(server, 'PATCH', `/tokens/${t.id}`, { key: app.key, body: { metadata: { a: 'b' } }, contentType: MERGE, headers: { 'svc-idempotency-key': `patch-${t.id}` } });
      const reads = async () => (await sql.query(`SELECT count(*)::int AS n FROM audit_events WHERE entity_id = $1 AND operation = 'read'`, [t.id])).rows[0].n;
      const first = await send();
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.data.number, VISA);
      // Unchanged access: the stored reply, audited as the data it shows again.
      const replayed = await send();
      assert.equal(replayed.status, 200, replayed.text);
      assert.equal(replayed.headers.get('svc-idempotent-replayed'), 'true');
      assert.deepEqual(replayed.body, first.body);
      assert.equal(await reads(), 1);
      // The key now only sees the mask: the stored plaintext is not shown.
      const put = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'retrying patcher', permissions: all } });
      assert.equal(put.status, 200, put.text);
      const masked = await send();
      assert.equal(masked.status, 409, masked.text);
      assert.match(masked.body.detail, /may no longer see as it did: it is not shown again/);
      assert.ok(!masked.text.includes(VISA));
      // Nor once the token is gone, whatever the key's access.
      const back = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'retrying patcher', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: all }] } });
      assert.equal(back.status, 200, back.text);
      assert.equal((await send()).status, 200);
      assert.equal((await call(server, 'DELETE', `/tokens/${t.id}`, { key: app.key })).status, 204);
      const gone = await send();
      assert.equal(gone.status, 409, gone.text);
      assert.match(gone.body.detail, /no longer exists/);
      assert.ok(!gone.text.includes(VISA));
    });

    it('changes expiry and the fields that hold expressions', async () => {
      const t = await card();
      const later = new Date(Date.now() + 3_600_000).toISOString();
      const res = await patch(t.id, { expires_at: later, search_indexes: ['{{ data.number | last4 }}'], mask: '{{ data.number | last4 }}' });
      assert.equal(res.status, 200, res.text);
      assert.equal(Date.parse(res.body.expires_at), Date.parse(later));
      assert.deepEqual(res.body.search_indexes, ['{{ data.number | last4 }}']);
      assert.equal((await get(t.id, masked)).body.data, '1881');
      const unexpire = await patch(t.id, { expires_at: null });
      assert.equal(unexpire.body.expires_at, undefined);
    });

    it('moving to other containers needs token:update on the new containers too', async () => {
      const key = (await createApplication(server, {
        name: 'pci updater',
        type: 'private',
        rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:update', 'token:read'] }],
      })).key;
      const t = await card();
      const moved = await patch(t.id, { containers: ['/pci/low/'] }, key);
      assert.equal(moved.status, 200, moved.text);
      assert.deepEqual(moved.body.containers, ['/pci/low/']);
      const out = await patch(t.id, { containers: ['/general/'] }, key);
      assert.equal(out.status, 403, out.text);
      assert.deepEqual((await get(t.id)).body.containers, ['/pci/low/']);
      // Nor can it touch a token outside its containers at all.
      const elsewhere = await card({ containers: ['/general/cards/'] });
      assert.equal((await patch(elsewhere.id, { metadata: { a: 'b' } }, key)).status, 403);
    });

    it('a move needs token:update on every container it adds or removes, not on one of them', async () => {
      const key = (await createApplication(server, {
        name: 'pci mover',
        type: 'private',
        rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:update', 'token:read'] }],
      })).key;
      const t = await card();
      // Adding a container the key holds nothing on would hand the token to whoever reads that one.
      const added = await patch(t.id, { containers: ['/pci/high/', '/general/'] }, key);
      assert.equal(added.status, 403, added.text);
      assert.match(added.body.detail, /token:update on \/general\//);
      // Taking it out of one it holds nothing on would take it from whoever reads that one.
      const shared = await card({ containers: ['/pci/high/', '/customers/c-9/'] });
      const removed = await patch(shared.id, { containers: ['/pci/high/'] }, key);
      assert.equal(removed.status, 403, removed.text);
      assert.match(removed.body.detail, /token:update on \/customers\/c-9\//);
      assert.deepEqual((await get(t.id)).body.containers, ['/pci/high/']);
      assert.deepEqual((await get(shared.id)).body.containers, ['/pci/high/', '/customers/c-9/']);
      // Within its containers it moves the token freely, leaving the others as they are.
      const moved = await patch(shared.id, { containers: ['/pci/low/', '/customers/c-9/'] }, key);
      assert.equal(moved.status, 200, moved.text);
      assert.deepEqual(moved.body.containers, ['/pci/low/', '/customers/c-9/']);
    });

    it('a move never shows the key more of a token than it sees where the token is', async () => {
      // Masked PCI data, and a staging container this key reads (and updates) in the clear.
      const key = (await createApplication(server, {
        name: 'stager',
        type: 'private',
        rules: [
          { priority: 1, container: '/staging/', transform: 'reveal', permissions: ['token:update', 'token:read'] },
          { priority: 2, container: '/pci/', transform: 'mask', permissions: ['token:update', 'token:read'] },
        ],
      })).key;
      const t = await card();
      assert.equal((await get(t.id, key)).body.data.number, '401288XXXXXX1881');
      const res = await patch(t.id, { containers: ['/staging/'] }, key);
      assert.equal(res.status, 403, res.text);
      assert.ok(!res.text.includes(VISA));
      assert.deepEqual((await get(t.id)).body.containers, ['/pci/high/']);
      assert.equal((await get(t.id, key)).body.data.number, '401288XXXXXX1881');

      // token:read counts as well as token:update: here updates mask everywhere, but /general/ is read in the clear.
      const reader = (await createApplication(server, {
        name: 'general reader',
        type: 'private',
        rules: [
          { priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:read'] },
          { priority: 2, container: '/', transform: 'mask', permissions: ['token:update', 'token:read'] },
        ],
      })).key;
      const viaRead = await patch(t.id, { containers: ['/general/cards/'] }, reader);
      assert.equal(viaRead.status, 403, viaRead.text);
      // A move that shows no more is fine: /pci/low/ is masked for it too.
      const same = await patch(t.id, { containers: ['/pci/low/'] }, reader);
      assert.equal(same.status, 200, same.text);
      assert.equal(same.body.data.number, '401288XXXXXX1881');

      // Each permission on its own: revealing through token:use everywhere (data only reactors
      // and proxies see) does not let a move reveal it through token:read.
      const user = (await createApplication(server, {
        name: 'user and general reader',
        type: 'private',
        permissions: ['token:use'],
        rules: [
          { priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:read'] },
          { priority: 2, container: '/', transform: 'mask', permissions: ['token:update', 'token:read'] },
        ],
      })).key;
      const viaUse = await patch(t.id, { containers: ['/general/cards/'] }, user);
      assert.equal(viaUse.status, 403, viaUse.text);
      assert.match(viaUse.body.detail, /through token:read/);
      assert.ok(!viaUse.text.includes(VISA));
    });

    it('a key that only sees the mask cannot redefine what the mask, fingerprint or search indexes show', async () => {
      const t = await card();
      for (const body of [
        { mask: '{{ data.number }}' },
        { mask: { all: '{{ data | json_stringify }}' } },
        { fingerprint_expression: '{{ data.number | reveal: 1 }}' },
        { search_indexes: ['{{ data.number | reveal: 1 }}'] },
      ]) {
        const res = await patch(t.id, body, masked);
        assert.equal(res.status, 403, `${JSON.stringify(body)}: ${res.text}`);
        assert.ok(!res.text.includes(VISA));
      }
      const after = await get(t.id, masked);
      assert.deepEqual(after.body.data, { number: '401288XXXXXX1881', expiration_month: 5, expiration_year: YEAR });
      assert.equal(after.body.fingerprint, t.fingerprint);
      // The same key may still change what it is allowed to: data, metadata.
      const ok = await patch(t.id, { metadata: { a: 'b' }, data: { expiration_month: 6 } }, masked);
      assert.equal(ok.status, 200, ok.text);
      assert.deepEqual(ok.body.data, { number: '401288XXXXXX1881', expiration_month: 6, expiration_year: YEAR });
      // Sending the expressions unchanged is not a change.
      const same = await patch(t.id, { mask: t.mask, fingerprint_expression: t.fingerprint_expression, search_indexes: [] }, masked);
      assert.equal(same.status, 200, same.text);
    });

    it('404 for an unknown token', async () => {
      const res = await patch('no-such-token', { metadata: { a: 'b' } });
      assert.equal(res.status, 404);
    });

    it('security', async () => {
      const t = await card();
      await assertAuthCases(server, { method: 'PATCH', path: `/tokens/${t.id}`, permissions: ['token:update'], type: 'private', body: { metadata: { a: 'b' } }, contentType: MERGE });
    });
  });

  describe('DELETE /tokens/{id}', () => {
    it('204, then the token is gone for every route', async () => {
      const t = await card();
      const res = await call(server, 'DELETE', `/tokens/${t.id}`, { key: owner.key });
      assert.equal(res.status, 204);
      assert.equal(res.text, '');
      assert.equal((await get(t.id)).status, 404);
      assert.equal((await patch(t.id, { metadata: { a: 'b' } })).status, 404);
      assert.equal((await call(server, 'DELETE', `/tokens/${t.id}`, { key: owner.key })).status, 404);
      assert.equal((await sql.query('SELECT 1 FROM tokens WHERE id = $1', [t.id])).rowCount, 0);
      // Its id is free again.
      const again = await call(server, 'POST', '/tokens', { key: owner.key, body: { id: t.id, type: 'token', data: 'reused' } });
      assert.equal(again.status, 201, again.text);
    });

    it('403 without token:delete on the token\'s container', async () => {
      const key = (await createApplication(server, {
        name: 'bank deleter',
        type: 'private',
        rules: [{ priority: 1, container: '/bank/', transform: 'redact', permissions: ['token:delete'] }],
      })).key;
      const t = await card();
      assert.equal((await call(server, 'DELETE', `/tokens/${t.id}`, { key })).status, 403);
      assert.equal((await get(t.id)).status, 200);
    });

    it('security', async () => {
      const t = await card();
      await assertAuthCases(server, { method: 'DELETE', path: `/tokens/${t.id}`, permissions: ['token:delete'], type: 'private' });
      assert.equal((await get(t.id)).status, 200, 'none of the refused calls deleted it');
    });
  });

  describe('expiry', () => {
    const status = (code: number) => (err: { status?: number }) => err.status === code;

    it('a token expiring while a transaction runs is unreadable from that instant inside it too', async () => {
      // Requests under SVC-IDEMPOTENCY-KEY run whole in one transaction, reactor and proxy
      // code included, so "now" must be the time of each read, not of the transaction's start.
      const { tokens, authenticator } = server.running.services;
      const db = server.running.database.db;
      const principal = await authenticator.authenticate(owner.key);
      const expires = Date.now() + 1500;
      const t = await card({ expires_at: new Date(expires).toISOString() });
      await db.transaction(async () => {
        assert.equal((await tokens.get(principal, t.id)).data && t.id, t.id, 'readable when the transaction starts');
        await new Promise((r) => setTimeout(r, Math.max(0, expires - Date.now()) + 150));
        await assert.rejects(tokens.get(principal, t.id), status(404));
        await assert.rejects(tokens.resolveForUse(principal, [t.id], 'token:read'), status(400));
        assert.equal((await tokens.listV2(principal, { id: [t.id], type: [], size: 10 })).data.length, 0);
        assert.equal((await tokens.list(principal, { id: [t.id], type: [], page: 1, size: 10 })).data.length, 0);
        await assert.rejects(tokens.update(principal, t.id, { metadata: { a: 'b' } }), status(404));
        await assert.rejects(tokens.remove(principal, t.id), status(404));
      });
      assert.equal((await get(t.id)).status, 404);
    });

    it('one sweep deletes every expired token, however many, each with its audit entry and token.expired', async () => {
      const t = await card();
      const n = 2500;
      // Copies of a real row (its ciphertext is never opened), expired a second ago.
      await sql.query(
        `INSERT INTO tokens (tenant_id, id, type, ciphertext, data_key_id, containers, expires_at)
         SELECT tenant_id, 'bulk-expired-' || g, type, ciphertext, data_key_id, containers, statement_timestamp() - interval '1 second'
         FROM tokens, generate_series(1, $2::int) g WHERE id = $1`,
        [t.id, n],
      );
      assert.ok((await server.running.services.tokens.sweepExpired()) >= n);
      assert.equal((await sql.query(`SELECT 1 FROM tokens WHERE id LIKE 'bulk-expired-%'`)).rowCount, 0, 'none is left for later sweeps');
      const audit = await sql.query(`SELECT DISTINCT entity_id FROM audit_events WHERE operation = 'expire' AND actor_type = 'system' AND entity_id LIKE 'bulk-expired-%'`);
      assert.equal(audit.rowCount, n);
      const expired = await sql.query(`SELECT DISTINCT entity_id FROM events WHERE type = 'token.expired' AND entity_id LIKE 'bulk-expired-%'`);
      assert.equal(expired.rowCount, n);
      assert.equal((await get(t.id)).status, 200, 'a live token is not swept');
      assert.equal(await server.running.services.tokens.sweepExpired(), 0);
    });
  });

  it('concurrent creates are each written whole: the token, its audit entry, token.created and one delivery per subscribed webhook', async () => {
    const hooks = [];
    for (const events of [['token.created'], ['*'], ['token.deleted']]) {
      const res = await call(server, 'POST', '/webhooks', { key: server.key, body: { name: `hook ${events[0]}`, url: 'https://hooks.example.com/coffer', events } });
      assert.equal(res.status, 201, res.text);
      rememberSecret(res.body.secret);
      hooks.push(res.body.id);
    }
    try {
      // Created at once, these share group-committed batches (src/db/group-commit.ts).
      const tokens = await Promise.all(Array.from({ length: 40 }, () => card()));
      const ids = tokens.map((t) => t.id);
      assert.equal(new Set(ids).size, 40);
      const stored = await sql.query('SELECT id, containers FROM tokens WHERE id = ANY($1)', [ids]);
      assert.equal(stored.rows.length, 40);
      const audit = await sql.query(`SELECT entity_id, actor_id FROM audit_events WHERE operation = 'create' AND entity_id = ANY($1)`, [ids]);
      assert.deepEqual(audit.rows.map((r) => r.entity_id).sort(), [...ids].sort());
      assert.ok(audit.rows.every((r) => r.actor_id === owner.id));
      const events = await sql.query(`SELECT id, entity_id FROM events WHERE type = 'token.created' AND entity_id = ANY($1)`, [ids]);
      assert.deepEqual(events.rows.map((r) => r.entity_id).sort(), [...ids].sort());
      const jobs = await sql.query(
        `SELECT payload->>'webhook_id' AS webhook_id, payload->'event'->>'id' AS event_id, payload->'event'->'data'->>'id' AS token_id
         FROM jobs WHERE kind = 'webhook.deliver' AND payload->'event'->'data'->>'id' = ANY($1)`,
        [ids],
      );
      // The token.created and * subscribers get one delivery per token; the token.deleted one none.
      assert.equal(jobs.rows.length, 80);
      for (const hook of hooks.slice(0, 2)) assert.deepEqual(jobs.rows.filter((j) => j.webhook_id === hook).map((j) => j.token_id).sort(), [...ids].sort());
      const eventIds = new Map(events.rows.map((r) => [r.entity_id, r.id]));
      assert.ok(jobs.rows.every((j) => eventIds.get(j.token_id) === j.event_id), 'each delivery carries its own event');
    } finally {
      for (const id of hooks) await call(server, 'DELETE', `/webhooks/${id}`, { key: server.key });
    }
  });

  it('the audit log holds create, update, reveal reads and delete, with events for webhooks', async () => {
    const t = await card();
    assert.equal((await patch(t.id, { metadata: { a: 'b' } })).status, 200);
    assert.equal((await get(t.id)).status, 200); // reveal
    assert.equal((await get(t.id, masked)).status, 200); // mask: not a reveal
    assert.equal((await call(server, 'DELETE', `/tokens/${t.id}`, { key: owner.key })).status, 204);
    const logs = await call(server, 'GET', `/logs?entity_type=token&entity_id=${t.id}`, { key: server.key });
    assert.equal(logs.status, 200, logs.text);
    const ops = logs.body.data.map((e: { operation: string }) => e.operation).reverse();
    assert.deepEqual(ops, ['create', 'update', 'read', 'delete']);
    for (const e of logs.body.data) {
      assert.equal(e.actor_id, owner.id);
      assert.equal(e.entity_type, 'token');
      assert.ok(!JSON.stringify(e).includes(VISA));
    }
    const events = await sql.query('SELECT type FROM events WHERE entity_id = $1 ORDER BY created_at, type', [t.id]);
    assert.deepEqual(events.rows.map((e) => e.type).sort(), ['token.created', 'token.deleted', 'token.updated']);
  });
});
