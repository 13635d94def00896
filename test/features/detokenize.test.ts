import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

const PAN = '4242424242424242';
const PAN_OTHER = '5555555555554444';
const SSN = '123-45-6789';
const ACCOUNT = '000123456789';
const SECRET_NOTE = 'the launch code is 0000';
rememberSecret(PAN, PAN_OTHER, SSN, ACCOUNT, SECRET_NOTE);

const year = new Date().getUTCFullYear() + 2;
const CARD = { number: PAN, expiration_month: 12, expiration_year: year, cvc: '123' };
const LIMIT = 3;

const rule = (transform: string, permissions: string[], container = '/') => ({ priority: 1, container, transform, permissions });

describe('POST /detokenize', () => {
  let server: TestServer;
  /** Reveal rule on every container. */
  let reader: { id: string; key: string };
  /** Plain permissions: token:read's implicit transform is mask. */
  let plain: string;
  let redactor: string;
  /** token:read only on /general/. */
  let generalOnly: string;
  let card: string;
  let ssn: string;
  let bank: string;
  let doc: string;
  let num: string;
  let braces: string;
  const custom = 'order_42.card-1';
  let other: { tenant_id: string; token: string };

  before(async () => {
    server = await startTestServer({ DETOKENIZE_LIMIT: String(LIMIT) });
    reader = await createApplication(server, { name: 'reader', type: 'private', rules: [rule('reveal', ['token:create', 'token:read', 'token:use'])] });
    plain = (await createApplication(server, { name: 'plain', type: 'private', permissions: ['token:read'] })).key;
    redactor = (await createApplication(server, { name: 'redactor', type: 'private', rules: [rule('redact', ['token:read'])] })).key;
    generalOnly = (await createApplication(server, { name: 'general only', type: 'private', rules: [rule('reveal', ['token:read'], '/general/')] })).key;

    const create = async (body: Record<string, unknown>, key = reader.key) => {
      const res = await call(server, 'POST', '/tokens', { key, body });
      assert.equal(res.status, 201, res.text);
      return res.body.id as string;
    };
    card = await create({ type: 'card', data: CARD, metadata: { customer: 'c-1' } });
    ssn = await create({ type: 'social_security_number', data: SSN });
    bank = await create({ type: 'bank', data: { routing_number: '021000021', account_number: ACCOUNT } });
    doc = await create({ type: 'token', data: { note: SECRET_NOTE, nested: { list: [1, 'two', null] } } });
    num = await create({ type: 'token', data: 42 });
    // Data that looks like an expression is data: it must come back as it is, never be expanded.
    braces = await create({ type: 'token', data: `{{ ${ssn} }}` });
    await create({ id: custom, type: 'card_number', data: PAN_OTHER });

    const t = await createOtherTenant(server);
    const otherApp = await createApplication(server, { name: 'other reader', type: 'private', rules: [rule('reveal', ['token:create', 'token:read'])] }, t.api_key);
    other = { tenant_id: t.tenant_id, token: await create({ type: 'card_number', data: PAN_OTHER }, otherApp.key) };
  });
  after(() => server.stop());

  const detokenize = (body: unknown, key = reader.key) => call(server, 'POST', '/detokenize', { key, body });
  const ok = async (body: unknown, key = reader.key) => {
    const res = await detokenize(body, key);
    assert.equal(res.status, 200, res.text);
    return res.body;
  };

  describe('happy paths', () => {
    it('{{ <id> }} is the token data, keeping its JSON type when it is the whole string', async () => {
      assert.deepEqual(await ok({ card: `{{ ${card} }}` }), { card: CARD });
      assert.deepEqual(await ok({ doc: `{{${doc}}}`, n: `  {{ ${num} }}\n` }), { doc: { note: SECRET_NOTE, nested: { list: [1, 'two', null] } }, n: 42 });
      assert.deepEqual(await ok({ ssn: `{{ ${ssn} }}` }), { ssn: SSN });
      assert.deepEqual(await ok({ c: `{{ ${custom} }}` }), { c: PAN_OTHER }, 'caller-chosen ids with . _ - work');
    });

    it('json filter picks a value by JSON path, keeping its type', async () => {
      // At most LIMIT expressions per request.
      assert.deepEqual(await ok({
        number: `{{ ${card} | json: '$.number' }}`,
        month: `{{ ${card} | json: '$.expiration_month' }}`,
        account: `{{ ${bank} | json: '$.account_number' }}`,
      }), { number: PAN, month: 12, account: ACCOUNT });
      assert.deepEqual(await ok({
        second: `{{ ${doc} | json: '$.nested.list[1]' }}`,
        list: `{{ ${doc} | json: '$.nested.list' }}`,
        missing: `{{ ${card} | json: '$.nope' }}`,
      }), { second: 'two', list: [1, 'two', null], missing: null });
    });

    it('filters chain left to right', async () => {
      assert.deepEqual(await ok({
        last4: `{{ ${card} | json: '$.number' | last4 }}`,
        padded: `{{ ${card} | json: '$.expiration_month' | to_string | pad_left: 4, '0' }}`,
      }), { last4: '4242', padded: '0012' });
    });

    it('interpolates several expressions in one string, as text', async () => {
      const body = { text: `Card ending {{ ${card} | json: '$.number' | last4 }}, exp {{ ${card} | json: '$.expiration_month' }}/{{ ${card} | json: '$.expiration_year' }}.` };
      assert.deepEqual(await ok(body), { text: `Card ending 4242, exp 12/${year}.` });
      assert.deepEqual(await ok({ text: `n={{ ${num} }}, doc={{ ${doc} | json: '$.nested' }}` }), { text: `n=42, doc={"list":[1,"two",null]}` });
    });

    it('{{ token: <id> }} is the Detokenized token', async () => {
      const body = await ok({ t: `{{ token: ${card} }}` });
      const got = await call(server, 'GET', `/tokens/${card}`, { key: reader.key });
      assert.deepEqual(body.t, {
        id: card,
        type: 'card',
        tenant_id: server.tenantId,
        data: CARD,
        containers: ['/pci/high/'],
        metadata: { customer: 'c-1' },
        created_by: reader.id,
        created_at: got.body.created_at,
      });
      assert.match(body.t.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      assert.deepEqual(await ok({ type: `{{ token: ${ssn} | json: '$.type' }}`, data: `{{ token: ${ssn} | json: '$.data' }}` }), { type: 'social_security_number', data: SSN });
      // Both forms of one token in one body: the data form beside the whole token's metadata and author.
      assert.deepEqual(
        await ok({ n: `{{ ${card} | json: '$.number' }}`, m: `{{ token: ${card} | json: '$.metadata' }}`, by: `{{ token: ${card} | json: '$.created_by' }}` }),
        { n: CARD.number, m: { customer: 'c-1' }, by: reader.id },
      );
    });

    it('walks nested objects and arrays, leaving everything else untouched', async () => {
      const body = {
        plain: 'no braces here',
        almost: '{ single } and }} and {',
        n: 7,
        b: false,
        z: null,
        empty: {},
        list: [],
        deep: { a: [{ b: [`{{ ${ssn} }}`, 'x', 1] }, `{{ ${num} }}`], c: { d: `{{ ${card} | json: '$.number' | last4 }}` } },
      };
      assert.deepEqual(await ok(body), { ...body, deep: { a: [{ b: [SSN, 'x', 1] }, 42], c: { d: '4242' } } });
    });

    it('a body without expressions comes back unchanged as JSON, whatever its JSON type', async () => {
      for (const body of [{ a: 'b', c: [1, 2, { d: 'e' }] }, [1, 'two', null], 'just a string', '', 12.5, 0, true, null]) {
        const res = await detokenize(body);
        assert.equal(res.status, 200, res.text);
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/, JSON.stringify(body));
        assert.deepEqual(res.body, body);
      }
    });

    it('a top-level string or array body is detokenized too, and answered as JSON', async () => {
      const res = await detokenize(`{{ ${ssn} }}`);
      assert.equal(res.status, 200, res.text);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(res.text, JSON.stringify(SSN));
      assert.deepEqual(await ok(`{{ ${num} }}`), 42);
      assert.deepEqual(await ok([`{{ ${ssn} }}`, 'x']), [SSN, 'x']);
    });

    it('token data that looks like an expression is returned as data, never expanded', async () => {
      assert.deepEqual(await ok({ v: `{{ ${braces} }}` }), { v: `{{ ${ssn} }}` });
    });

    it('object keys that look like paths do not confuse which string is replaced', async () => {
      // "a.b" and a → b, "x[0]" and x → [0] name the same path if paths are joined naively.
      assert.deepEqual(await ok({ 'a.b': `{{ ${ssn} }}`, a: { b: 'plain' } }), { 'a.b': SSN, a: { b: 'plain' } });
      assert.deepEqual(await ok({ a: { b: `{{ ${num} }}` }, 'a.b': 'plain' }), { a: { b: 42 }, 'a.b': 'plain' });
      assert.deepEqual(await ok({ x: ['plain'], 'x[0]': `{{ ${num} }}` }), { x: ['plain'], 'x[0]': 42 });
      assert.deepEqual(await ok({ 'a.b': `{{ ${num} }}`, a: { b: `{{ ${ssn} }}` } }), { 'a.b': 42, a: { b: SSN } });
    });

    it('with plain permissions (no rules) the implicit mask transform applies: the masked value', async () => {
      const masked = (await call(server, 'GET', `/tokens/${ssn}`, { key: plain })).body.data;
      assert.equal(typeof masked, 'string');
      assert.notEqual(masked, SSN);
      assert.ok(masked.endsWith('6789'));
      assert.deepEqual(await ok({ s: `{{ ${ssn} }}` }, plain), { s: masked });
      const cardMasked = await ok({ c: `{{ ${card} }}`, n: `{{ ${card} | json: '$.number' }}` }, plain);
      assert.equal(cardMasked.n, cardMasked.c.number);
      assert.ok(!JSON.stringify(cardMasked).includes(PAN), 'the full number is not shown');
      assert.match(cardMasked.n, /4242$/);
      const whole = await ok({ t: `{{ token: ${ssn} }}` }, plain);
      assert.equal(whole.t.data, masked);
      // The reveal rule shows the plaintext.
      assert.deepEqual(await ok({ s: `{{ ${ssn} }}` }), { s: SSN });
    });

    it('a type without a mask shows nothing under the mask transform: 403 for its data, no data in the whole token', async () => {
      const res = await detokenize({ d: `{{ ${doc} }}` }, plain);
      assert.equal(res.status, 403, res.text);
      assert.ok(!res.text.includes(SECRET_NOTE));
      const whole = await ok({ t: `{{ token: ${doc} }}` }, plain);
      assert.equal(whole.t.id, doc);
      assert.equal('data' in whole.t, false);
    });

    it('audit-logs each detokenized token with operation detokenize', async () => {
      const events = async (id: string) => {
        const res = await call(server, 'GET', `/logs?entity_type=token&entity_id=${encodeURIComponent(id)}&size=100`, { key: server.key });
        assert.equal(res.status, 200, res.text);
        return (res.body.data as { operation: string; entity_id: string; actor_id: string }[]).filter((e) => e.operation === 'detokenize');
      };
      const before = { bank: (await events(bank)).length, custom: (await events(custom)).length };
      await ok({ a: `{{ ${bank} | json: '$.routing_number' }}`, b: `{{ token: ${custom} }}` });
      const afterBank = await events(bank);
      assert.equal(afterBank.length, before.bank + 1);
      assert.equal(afterBank[0].entity_id, bank);
      assert.equal(afterBank[0].actor_id, reader.id);
      assert.equal((await events(custom)).length, before.custom + 1);
      // One event per token per request, however often the request names it.
      await ok(`{{ ${bank} | json: '$.routing_number' }} {{ ${bank} | json: '$.routing_number' }}`);
      assert.equal((await events(bank)).length, before.bank + 2);
      // A request refused (403) or failing in a filter (400) detokenized nothing, and audits nothing.
      const was = { card: (await events(card)).length, doc: (await events(doc)).length };
      const refused = await detokenize({ c: `{{ ${card} }}`, d: `{{ ${doc} }}` }, plain);
      assert.equal(refused.status, 403, refused.text);
      assert.match(refused.body.detail, /its transform masks it, and the token has no mask/);
      const failed = await detokenize({ a: `{{ ${card} | json: '$.number' | to_boolean }}` });
      assert.equal(failed.status, 400, failed.text);
      assert.deepEqual({ card: (await events(card)).length, doc: (await events(doc)).length }, was);
    });
  });

  describe('errors', () => {
    const problem = (res: Awaited<ReturnType<typeof detokenize>>, status: number) => {
      assert.equal(res.status, status, res.text);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(res.body.status, status);
    };

    it('an unknown token id is 400 naming it', async () => {
      const res = await detokenize({ a: `{{ ${ssn} }}`, b: '{{ no-such-token }}' });
      problem(res, 400);
      assert.match(res.body.detail, /no-such-token/);
      assert.ok(!res.text.includes(SSN));
      assert.deepEqual(res.body.errors, { 'body.b': ['token "no-such-token" not found'] });
    });

    it('the 400 of an unknown token names every field that refers to it', async () => {
      const res = await detokenize({ list: ['x', 'card {{ gone }} and {{ gone | last4 }}'], deep: { c: '{{ token: gone }}' } });
      problem(res, 400);
      assert.deepEqual(res.body.errors, { 'body.list[1]': ['token "gone" not found'], 'body.deep.c': ['token "gone" not found'] });
    });

    it("another tenant's token id is 400 as if unknown, never its data", async () => {
      for (const body of [{ a: `{{ ${other.token} }}` }, { a: `{{ token: ${other.token} }}` }]) {
        const res = await detokenize(body);
        problem(res, 400);
        assert.ok(!res.text.includes(PAN_OTHER));
        assert.ok(!res.text.includes(other.tenant_id));
      }
    });

    it('a token in a container the key may not read is 403, and nothing is revealed', async () => {
      const res = await detokenize({ s: `{{ ${ssn} }}`, c: `{{ ${card} }}` }, generalOnly);
      problem(res, 403);
      assert.ok(!res.text.includes(SSN) && !res.text.includes(PAN));
      // The container it may read works.
      assert.deepEqual(await ok({ s: `{{ ${ssn} }}` }, generalOnly), { s: SSN });
    });

    it('a redact rule is 403 for the data form; the whole-token form comes without data', async () => {
      for (const body of [{ s: `{{ ${ssn} }}` }, { s: `x {{ ${ssn} | last4 }}` }]) {
        const res = await detokenize(body, redactor);
        problem(res, 403);
        assert.ok(!res.text.includes(SSN));
      }
      const whole = await ok({ t: `{{ token: ${ssn} }}` }, redactor);
      assert.equal(whole.t.id, ssn);
      assert.equal('data' in whole.t, false);
    });

    it('a malformed expression is 400 naming the field path and the expression', async () => {
      const long = `{{ ${ssn} | ${'x'.repeat(300)} | }}`;
      const rows: [body: unknown, field: string, tag: string][] = [
        [{ a: { b: `{{ ${ssn}` } }, 'body.a.b', `{{ ${ssn}`],
        [{ a: { b: `{{ ${ssn} | no_such_filter }}` } }, 'body.a.b', `{{ ${ssn} | no_such_filter }}`],
        [{ list: ['ok', { x: '{{ }}' }] }, 'body.list[1].x', '{{ }}'],
        [{ a: `{{ ${ssn} | json: }}` }, 'body.a', `{{ ${ssn} | json: }}`],
        [{ a: `{{ ${ssn} | json: data.x }}` }, 'body.a', `{{ ${ssn} | json: data.x }}`],
        [{ a: '{{ not an id }}' }, 'body.a', '{{ not an id }}'],
        ['{{', 'body', '{{'],
        // In text, only the tag at fault: not the text around it, nor the other tags.
        [{ a: `Dear {{ ${ssn} }}, private note {{ ${ssn} | nope }} end` }, 'body.a', `{{ ${ssn} | nope }}`],
        // A long one is cut.
        [{ a: long }, 'body.a', `${long.slice(0, 200)}…`],
      ];
      for (const [body, field, tag] of rows) {
        const res = await detokenize(body);
        problem(res, 400);
        assert.deepEqual(Object.keys(res.body.errors ?? {}), [field], `${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.body.errors[field][0].startsWith(`invalid detokenization expression "${tag}": `), true, res.text);
        assert.ok(!res.text.includes('private note') && !res.text.includes('Dear'));
      }
    });

    it('a key that is not a plain name is quoted in the field path, so no two fields share one', async () => {
      // An invalid expression, an unknown token and a failing filter, each under keys a dot would join alike.
      const cases: [body: unknown, field: string][] = [
        [{ 'a.b': '{{ }}' }, 'body["a.b"]'],
        [{ a: { b: '{{ }}' } }, 'body.a.b'],
        [{ '': '{{ }}' }, 'body[""]'],
        [{ '': { '': '{{ }}' } }, 'body[""][""]'],
        [{ '0': '{{ }}' }, 'body["0"]'],
        [['{{ }}'], 'body[0]'],
        [{ 'x[0]': '{{ }}', x: ['plain'] }, 'body["x[0]"]'],
        [{ 'say "hi"\n': '{{ }}' }, 'body["say \\"hi\\"\\n"]'],
      ];
      for (const [body, field] of cases) {
        const res = await detokenize(body);
        problem(res, 400);
        assert.deepEqual(Object.keys(res.body.errors ?? {}), [field], `${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.body.errors[field][0].startsWith('invalid detokenization expression "{{ }}": '), true, res.text);
      }
      const unknown = await detokenize({ 'a.b': '{{ gone }}', a: { b: '{{ gone }}' }, '': '{{ token: gone }}' });
      problem(unknown, 400);
      assert.deepEqual(unknown.body.errors, {
        'body["a.b"]': ['token "gone" not found'],
        'body.a.b': ['token "gone" not found'],
        'body[""]': ['token "gone" not found'],
      });
      const failing = await detokenize({ 'a.b': `{{ ${card} | json: '$.number' | to_boolean }}`, a: { b: `{{ ${ssn} }}` } });
      problem(failing, 400);
      assert.deepEqual(Object.keys(failing.body.errors), ['body["a.b"]']);
      assert.ok(!failing.text.includes(PAN) && !failing.text.includes(SSN));
    });

    it('a very long key is cut in the field path', async () => {
      const key = `k.${'x'.repeat(5000)}`;
      const res = await detokenize({ [key]: '{{ }}' });
      problem(res, 400);
      assert.deepEqual(Object.keys(res.body.errors), [`body["${key.slice(0, 100)}…"]`]);
    });

    it('a filter that fails on the data is 400 naming the field path, without the data', async () => {
      const tag = `{{ ${card} | json: '$.number' | to_boolean }}`;
      const res = await detokenize({ a: { b: `Card ${PAN.slice(0, 4)} on file: ${tag}, thanks` } });
      problem(res, 400);
      assert.deepEqual(Object.keys(res.body.errors), ['body.a.b']);
      // The message names the failing tag, not the text around it, nor the data.
      assert.equal(res.body.errors['body.a.b'][0].startsWith(`detokenization failed in "${tag}": `), true, res.text);
      assert.ok(!res.text.includes('on file') && !res.text.includes(PAN));
    });

    it(`more expressions than DETOKENIZE_LIMIT (${LIMIT}) is 400 with a clear message; exactly the limit is fine`, async () => {
      const atLimit = { a: `{{ ${ssn} }}`, b: [`{{ ${num} }}`], c: `{{ ${ssn} | last4 }}` };
      assert.deepEqual(await ok(atLimit), { a: SSN, b: [42], c: '6789' });
      for (const body of [
        { ...atLimit, d: `{{ ${doc} }}` },
        { t: `{{ ${ssn} }}{{ ${ssn} }}{{ ${ssn} }}{{ ${ssn} }}` },
      ]) {
        const res = await detokenize(body);
        problem(res, 400);
        assert.match(res.body.detail, /4 detokenization expressions exceed the tenant's limit of 3 per request/);
        assert.ok(!res.text.includes(SSN));
      }
    });

    it('a body may hold at most 10,000 values (or 4 per expression the Detokenize Limit allows, if more), expression or not: 400 beyond', async () => {
      // The object, the array and 9,998 items: 10,000 values, the last one an expression.
      const items = (n: number) => [...Array.from({ length: n - 1 }, () => 0), `{{ ${ssn} | last4 }}`];
      const atBound = await ok({ list: items(9_998) });
      assert.equal(atBound.list.length, 9_998);
      assert.equal(atBound.list.at(-1), '6789');
      for (const body of [{ list: items(9_999) }, { list: Array.from({ length: 60_000 }, () => 0) }, Array.from({ length: 10_000 }, () => ({}))]) {
        const res = await detokenize(body);
        problem(res, 400);
        assert.equal(res.body.detail, 'holds more than 10000 values (strings, numbers, booleans, nulls, arrays and objects each count): at most 10000 per request');
        assert.deepEqual(Object.keys(res.body.errors), ['body']);
        assert.ok(!res.text.includes(SSN));
      }
    });

    it('the filters of one request together may add at most 4194304 characters: 400, not a process building gigabytes', async () => {
      // Each string adds 100000 + 200000 + … + 1600000 = 3.1 million characters: one is fine, two are not.
      const grow = `{{ ${num} | pad_left: 100000${' | to_base16'.repeat(5)} }}`;
      const one = await ok({ a: grow });
      assert.equal(one.a.length, 3_200_000);
      const res = await detokenize({ a: grow, b: [grow] });
      problem(res, 400);
      assert.deepEqual(Object.keys(res.body.errors), ['body.b[0]']);
      assert.equal(res.body.errors['body.b[0]'][0].startsWith(`detokenization failed in "${grow}": to_base16 makes the value too long: `), true, res.text);
      assert.match(res.body.errors['body.b[0]'][0], /filters may add at most 4194304 characters in all at \d+$/);
      // A chain that would double its way past any memory fails alike.
      problem(await detokenize({ a: `{{ ${num}${' | to_base16'.repeat(40)} }}` }), 400);
    });

    it('a body nested more than 128 levels deep is 400, not a stack overflow', async () => {
      const nest = (depth: number) => '['.repeat(depth) + JSON.stringify(`{{ ${ssn} }}`) + ']'.repeat(depth);
      const deepest = await call(server, 'POST', '/detokenize', { key: reader.key, raw: nest(128), contentType: 'application/json' });
      assert.equal(deepest.status, 200, deepest.text);
      assert.equal(deepest.text, nest(128).replace(`{{ ${ssn} }}`, SSN));
      for (const depth of [129, 20_000]) {
        const res = await call(server, 'POST', '/detokenize', { key: reader.key, raw: nest(depth), contentType: 'application/json' });
        problem(res, 400);
        assert.match(res.body.detail, /nested too deeply: at most 128 levels/);
      }
      // Plain nesting, without any expression, is refused alike.
      problem(await call(server, 'POST', '/detokenize', { key: reader.key, raw: '{"a":'.repeat(5000) + '1' + '}'.repeat(5000), contentType: 'application/json' }), 400);
    });

    it('an empty or non-JSON body is 400', async () => {
      for (const raw of ['', '  ', '{"a":', `{{ ${ssn} }}`]) {
        const res = await call(server, 'POST', '/detokenize', { key: reader.key, raw, contentType: 'application/json' });
        problem(res, 400);
        assert.deepEqual(Object.keys(res.body.errors), ['body']);
      }
    });
  });

  describe('security', () => {
    it('SVC-IDEMPOTENCY-KEY is ignored: every request is checked and audited, and no reply is stored', async () => {
      const count = async () => {
        const res = await call(server, 'GET', `/logs?entity_type=token&entity_id=${ssn}&size=100`, { key: server.key });
        return (res.body.data as { operation: string }[]).filter((e) => e.operation === 'detokenize').length;
      };
      const before = await count();
      const headers = { 'svc-idempotency-key': 'order-1234' };
      for (let i = 0; i < 2; i++) {
        const res = await call(server, 'POST', '/detokenize', { key: reader.key, body: { s: `{{ ${ssn} }}` }, headers });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.headers.get('svc-idempotent-replayed'), null);
        assert.deepEqual(res.body, { s: SSN });
      }
      assert.equal(await count(), before + 2);
      const db = new pg.Client({ connectionString: server.config.databaseUrl });
      await db.connect();
      try {
        assert.equal((await db.query('SELECT count(*)::int AS n FROM idempotency_keys')).rows[0].n, 0);
      } finally {
        await db.end();
      }
    });

    it('needs a key with token:read', async () => {
      await assertAuthCases(server, { method: 'POST', path: '/detokenize', permissions: ['token:read'], type: 'private', body: { a: `{{ ${ssn} }}` } });
    });

    it('token:use alone does not allow detokenize', async () => {
      const user = await createApplication(server, { name: 'user', type: 'private', rules: [rule('reveal', ['token:use'])] });
      const res = await detokenize({ a: `{{ ${ssn} }}` }, user.key);
      assert.equal(res.status, 403);
      assert.ok(!res.text.includes(SSN));
    });

    it('the management key cannot detokenize', async () => {
      const res = await detokenize({ a: `{{ ${ssn} }}` }, server.key);
      assert.equal(res.status, 403);
    });
  });
});
