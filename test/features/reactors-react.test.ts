import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createOtherTenant, createToken, type Response } from '../helpers/http.ts';
import { createReactorCallers } from '../helpers/reactor-callers.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { until } from '../helpers/until.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * POST /reactors/{id}/react on a real server: detokenized args, configuration, raw,
 * the tokenize block, `bt` with the reactor application's permissions, token:use per
 * container, the 100-token limit, errors thrown by the code, time and memory limits,
 * require and fetch, events and the audit log. Every failure is a problem+json, never a
 * 500, and the server keeps serving other tenants.
 */

const PAN = '4242424242424242';
const PAN_2 = '5555555555554444';
const SECRET = 'reactor-test-secret-value-5521';
const YEAR = new Date().getUTCFullYear() + 3;
const CARD = { number: PAN, expiration_month: 12, expiration_year: YEAR, cvc: '123' };
const TIMEOUT_MS = 1500;

function assertProblem(res: Response, status: number, detail?: RegExp): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status} ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, status);
  assert.match(res.body.request_id, /^[0-9a-f-]{36}$/);
  if (detail) assert.match(res.body.detail, detail);
}

describe('POST /reactors/{id}/react', () => {
  let server: TestServer;
  let sql: pg.Client;
  let receiver: Receiver;
  let other: { tenant_id: string; api_key: string };
  let otherReactor: string;
  /** Creates and reads back tokens in every container. */
  let writer: string;
  /** token:use in every container, and token:create (a reactor without an application tokenizes as its caller). */
  let invoker: { id: string; key: string };
  /** token:use in /general/ only. */
  let generalOnly: string;
  /** The application `bt` acts as: create, read, update, delete in every container. */
  let btApp: { id: string; key: string };
  /** An application that may create tokens but not read them. */
  let createOnlyApp: { id: string; key: string };
  let card: string;
  let secret: string;

  before(async () => {
    rememberSecret(PAN, PAN_2, SECRET);
    receiver = await startReceiver();
    server = await startTestServer({ WORKERS: '0', OUTBOUND_ALLOWLIST: '127.0.0.1', REACTOR_TIMEOUT_MS: String(TIMEOUT_MS), REACTOR_MEMORY_MB: '32' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    ({ writer, invoker, generalOnly } = await createReactorCallers(server));
    btApp = await createApplication(server, {
      name: 'bt',
      type: 'private',
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update', 'token:delete'] }],
    });
    createOnlyApp = await createApplication(server, { name: 'create only', type: 'private', permissions: ['token:create'] });
    card = await token({ type: 'card', data: CARD });
    secret = await token({ type: 'token', data: SECRET });

    other = await createOtherTenant(server);
    const theirs = await call(server, 'POST', '/reactors', {
      key: other.api_key,
      body: { name: 'theirs', code: `module.exports = async () => ({ raw: { ok: true } });`, configuration: {} },
    });
    assert.equal(theirs.status, 201, theirs.text);
    otherReactor = theirs.body.id;
    const otherInvoker = await call(server, 'POST', '/applications', { key: other.api_key, body: { name: 'their invoker', type: 'private', permissions: ['token:use'] } });
    assert.equal(otherInvoker.status, 201, otherInvoker.text);
    rememberSecret(otherInvoker.body.key);
    other = { ...other, api_key: otherInvoker.body.key };
  });
  after(async () => {
    await sql?.end();
    await server?.stop();
    await receiver?.close();
  });

  const token = (body: Record<string, unknown>) => createToken(server, writer, body);

  async function reactor(code: string, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await call(server, 'POST', '/reactors', { key: server.key, body: { name: 'r', code, configuration: {}, ...extra } });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  }

  const react = (id: string, body: unknown = {}, key = invoker.key) => call(server, 'POST', `/reactors/${id}/react`, { key, body });

  async function reacted(id: string, body: unknown = {}, key = invoker.key) {
    const res = await react(id, body, key);
    assert.equal(res.status, 200, res.text);
    return res.body;
  }

  /** The other tenant's reactor answers at once: the server is up and its event loop free. */
  async function otherTenantServed(): Promise<void> {
    const started = Date.now();
    const res = await call(server, 'POST', `/reactors/${otherReactor}/react`, { key: other.api_key, body: {} });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { raw: { ok: true } });
    assert.ok(Date.now() - started < TIMEOUT_MS, 'answered well within the time limit');
  }

  const eventsOf = async (reactorId: string) =>
    (await sql.query(`SELECT type, payload FROM events WHERE tenant_id = $1 AND entity_id = $2 ORDER BY id`, [server.tenantId, reactorId])).rows as {
      type: string;
      payload: any;
    }[];

  const ECHO = `module.exports = async function (req) { return { raw: { args: req.args, configuration: req.configuration } }; };`;

  describe('arguments, configuration and the Reactor Response', () => {
    it('detokenizes args: a whole-value expression keeps the JSON type, card data arrives as an object', async () => {
      const number = await token({ type: 'token', data: 42 });
      const object = await token({ type: 'token', data: { nested: [1, 'two'] } });
      const id = await reactor(ECHO);
      const res = await reacted(id, {
        args: {
          card: `{{ ${card} }}`,
          secret: `{{${secret}}}`,
          number: `{{ ${number} }}`,
          object: `{{ ${object} }}`,
          month: `{{ ${card} | json: '$.expiration_month' }}`,
          mixed: `last4 ${'{{'} ${card} | json: '$.number' | reveal_last: 4 }} and ${'{{'} ${number} }}`,
          deep: [{ value: `{{ ${secret} }}` }],
          whole: `{{ token: ${secret} }}`,
          plain: 'no expression',
          n: 7,
          flag: false,
          none: null,
        },
      });
      const args = res.raw.args;
      assert.deepEqual(args.card, CARD);
      assert.equal(args.secret, SECRET);
      assert.equal(args.number, 42);
      assert.deepEqual(args.object, { nested: [1, 'two'] });
      assert.equal(args.month, 12);
      assert.equal(args.mixed, 'last4 XXXXXXXXXXXX4242 and 42');
      assert.deepEqual(args.deep, [{ value: SECRET }]);
      assert.equal(args.whole.id, secret);
      assert.equal(args.whole.type, 'token');
      assert.equal(args.whole.data, SECRET);
      assert.equal(args.plain, 'no expression');
      assert.equal(args.n, 7);
      assert.equal(args.flag, false);
      assert.equal(args.none, null);
    });

    it('passes the configuration, and null args when there are none', async () => {
      const id = await reactor(ECHO, { configuration: { API_KEY: 'k-1', REGION: 'eu' } });
      assert.deepEqual(await reacted(id), { raw: { args: null, configuration: { API_KEY: 'k-1', REGION: 'eu' } } });
      assert.deepEqual(await reacted(id, { args: null }), { raw: { args: null, configuration: { API_KEY: 'k-1', REGION: 'eu' } } });
      const bodyless = await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key });
      assert.equal(bodyless.status, 200, bodyless.text);
      assert.deepEqual(bodyless.body.raw.args, null, 'the body is optional');
      assert.deepEqual((await reacted(id, { args: { a: [1, { b: 'c' }] } })).raw.args, { a: [1, { b: 'c' }] });
    });

    it('args that are not an object (nor null) are a 400 on body.args, and nothing runs', async () => {
      const id = await reactor(ECHO);
      for (const args of [[1, 2], 'plain', `{{ ${secret} }}`, 42, true]) {
        const res = await react(id, { args });
        assertProblem(res, 400);
        assert.ok(res.body.errors?.['body.args'], `${JSON.stringify(args)}: ${res.text}`);
      }
      assert.deepEqual(await eventsOf(id), [], 'no run, no event');
    });

    it('a member the body does not have (a misspelt args) is a 400 naming it, and nothing runs', async () => {
      const id = await reactor(ECHO);
      const res = await react(id, { arg: { a: 1 } });
      assertProblem(res, 400);
      assert.ok(res.body.errors?.['body.arg'], res.text);
      const asyncRes = await call(server, 'POST', `/reactors/${id}/react-async`, { key: invoker.key, body: { args: {}, callback_url: 'https://example.com/' } });
      assertProblem(asyncRes, 400);
      assert.ok(asyncRes.body.errors?.['body.callback_url'], asyncRes.text);
      assert.deepEqual(await eventsOf(id), [], 'no run, no event');
    });

    it('answers with an empty Reactor Response when the code returns nothing or no raw', async () => {
      assert.deepEqual(await reacted(await reactor(`module.exports = async () => {};`)), {});
      assert.deepEqual(await reacted(await reactor(`module.exports = async () => ({});`)), {});
      assert.deepEqual(await reacted(await reactor(`module.exports = async () => ({ raw: null });`)), { raw: null });
      assert.deepEqual(await reacted(await reactor(`module.exports = () => ({ raw: 'sync functions work too' });`)), { raw: 'sync functions work too' });
    });

    it('a return value that is not an object is a 422', async () => {
      assertProblem(await react(await reactor(`module.exports = async () => 5;`)), 422, /object/);
      assertProblem(await react(await reactor(`module.exports = async () => [1];`)), 422, /object/);
    });

    it('stored code that exports no function is a 400', async () => {
      assertProblem(await react(await reactor(`module.exports = 42;`)), 400);
    });

    it('answers 404 for an unknown reactor and 400 for a malformed id', async () => {
      assertProblem(await react(randomUUID()), 404);
      assertProblem(await react('nope'), 400);
    });
  });

  describe('the tokenize block', () => {
    const TOKENIZING = `module.exports = async function (req) {
      return {
        raw: { kept: 'plain' },
        tokenize: {
          card: { type: 'card', data: req.args.card },
          list: [{ type: 'token', data: req.args.secret }, 'not a token request'],
          nested: { deeper: { type: 'token', data: { any: 'json' }, metadata: { source: 'reactor' } } },
          untouched: 17,
        },
      };
    };`;

    it('creates tokens; the response mirrors the block with tokens that never hold data', async () => {
      const id = await reactor(TOKENIZING);
      const res = await reacted(id, { args: { card: `{{ ${card} }}`, secret: `{{ ${secret} }}` } });
      assert.deepEqual(res.raw, { kept: 'plain' });
      const t = res.tokens;
      assert.deepEqual(Object.keys(t).sort(), ['card', 'list', 'nested', 'untouched']);
      assert.equal(t.card.type, 'card');
      assert.deepEqual(t.card.containers, ['/pci/high/']);
      assert.equal(t.list[0].type, 'token');
      assert.equal(t.list[1], 'not a token request');
      assert.deepEqual(t.nested.deeper.metadata, { source: 'reactor' });
      assert.equal(t.untouched, 17);
      for (const created of [t.card, t.list[0], t.nested.deeper]) {
        assert.match(created.id, /^[0-9a-f-]{36}$/);
        assert.equal(created.data, undefined, 'no data in a created token');
        assert.equal(created.created_by, invoker.id, 'without an application the caller tokenizes');
      }
      assert.ok(!JSON.stringify(res).includes(PAN) && !JSON.stringify(res).includes(SECRET));
      assert.deepEqual(t.card.card, { bin: '424242', last4: '4242', expiration_month: 12, expiration_year: YEAR, brand: 'visa' });

      // The tokens hold what the code handed over.
      const back = await call(server, 'GET', `/tokens/${t.card.id}`, { key: writer });
      assert.deepEqual(back.body.data, CARD);
      assert.equal((await call(server, 'GET', `/tokens/${t.list[0].id}`, { key: writer })).body.data, SECRET);
    });

    it('tokenizes with the reactor\'s application when it has one', async () => {
      const id = await reactor(TOKENIZING, { application: { id: btApp.id } });
      const res = await reacted(id, { args: { card: `{{ ${card} }}`, secret: `{{ ${secret} }}` } });
      assert.equal(res.tokens.card.created_by, btApp.id);
      assert.equal(res.tokens.card.data, undefined, 'no data even though the application reveals it');
    });

    it('an invalid token request in the block is a 422 naming it, and creates nothing', async () => {
      const before = (await sql.query(`SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1`, [server.tenantId])).rows[0].n;
      const id = await reactor(`module.exports = async () => ({ tokenize: { good: { type: 'token', data: 'x' }, bad: { type: 'card', data: { number: '1234' } } } });`);
      const res = await react(id);
      assertProblem(res, 422, /tokenize/);
      assert.ok(Object.keys(res.body.errors ?? {}).some((f) => f.includes('bad')), res.text);
      const afterCount = (await sql.query(`SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1`, [server.tenantId])).rows[0].n;
      assert.equal(afterCount, before, 'all or nothing');
    });

    it('a block the tokenizing key may not create is a 403', async () => {
      const id = await reactor(`module.exports = async () => ({ tokenize: { t: { type: 'token', data: 'x' } } });`);
      assertProblem(await react(id, {}, generalOnly), 403, /token:create/);
      const withApp = await reactor(`module.exports = async () => ({ tokenize: { t: { type: 'token', data: 'x' } } });`, { application: { id: createOnlyApp.id } });
      assert.equal((await reacted(withApp, {}, generalOnly)).tokens.t.created_by, createOnlyApp.id, 'the application\'s token:create is what counts');
    });
  });

  describe('bt', () => {
    it('is null without an application', async () => {
      const id = await reactor(`module.exports = async (req) => ({ raw: { bt: req.bt === null, keys: Object.keys(req).sort() } });`);
      assert.deepEqual(await reacted(id), { raw: { bt: true, keys: ['args', 'bt', 'configuration'] } });
    });

    it('creates, retrieves, updates, lists, tokenizes, detokenizes and deletes with the application\'s permissions', async () => {
      const id = await reactor(
        `module.exports = async function ({ bt, args }) {
          const created = await bt.tokens.create({ type: 'token', data: args.value, metadata: { step: 'create' } });
          const retrieved = await bt.tokens.retrieve(created.id);
          const updated = await bt.tokens.update(created.id, { metadata: { step: 'update' } });
          const listed = await bt.tokens.list({ size: 100 });
          const tokenized = await bt.tokenize({ a: { type: 'token', data: 'tokenized-by-bt' } });
          const detokenized = await bt.detokenize({ v: '{{ ' + created.id + ' }}', w: '{{ ' + args.existing + ' }}' });
          await bt.tokens.delete(created.id);
          let afterDelete;
          try { await bt.tokens.retrieve(created.id); } catch (e) { afterDelete = { name: e.name, status: e.status }; }
          return { raw: { created, retrieved, updated, listed: listed.data.map((t) => t.id), tokenized, detokenized, afterDelete } };
        };`,
        { application: { id: btApp.id } },
      );
      const { raw } = await reacted(id, { args: { value: SECRET, existing: secret } });
      assert.equal(raw.created.data, SECRET);
      assert.equal(raw.created.created_by, btApp.id, 'bt acts as the reactor\'s application');
      assert.deepEqual(raw.created.metadata, { step: 'create' });
      assert.equal(raw.retrieved.id, raw.created.id);
      assert.equal(raw.retrieved.data, SECRET);
      assert.deepEqual(raw.updated.metadata, { step: 'update' });
      assert.equal(raw.updated.modified_by, btApp.id);
      assert.ok(raw.listed.includes(raw.created.id) && raw.listed.includes(secret));
      assert.equal(raw.tokenized.a.data, 'tokenized-by-bt');
      assert.deepEqual(raw.detokenized, { v: SECRET, w: SECRET });
      assert.deepEqual(raw.afterDelete, { name: 'NotFoundError', status: 404 });
      assert.equal((await call(server, 'GET', `/tokens/${raw.created.id}`, { key: writer })).status, 404, 'really deleted');
      assert.equal((await call(server, 'GET', `/tokens/${raw.tokenized.a.id}`, { key: writer })).body.created_by, btApp.id);
    });

    it('cannot do what the application may not: an uncaught AuthorizationError is a 403', async () => {
      const code = `module.exports = async ({ bt, args }) => ({ raw: await bt.tokens.retrieve(args.id) });`;
      const denied = await reactor(code, { application: { id: createOnlyApp.id } });
      assertProblem(await react(denied, { args: { id: secret } }), 403, /token:read/);

      const caught = await reactor(
        `const { AuthorizationError } = require('@coffer/errors');
         module.exports = async ({ bt, args }) => {
           try { await bt.detokenize({ v: '{{ ' + args.id + ' }}' }); } catch (e) { return { raw: { isAuthz: e instanceof AuthorizationError, status: e.status } }; }
         };`,
        { application: { id: createOnlyApp.id } },
      );
      assert.deepEqual(await reacted(caught, { args: { id: secret } }), { raw: { isAuthz: true, status: 403 } });
      // The caller's own token:use does not leak into bt: the same call with the reveal app works.
      const allowed = await reactor(code, { application: { id: btApp.id } });
      assert.equal((await reacted(allowed, { args: { id: secret } })).raw.data, SECRET);
    });

    it('validates what the code passes like an API body', async () => {
      const id = await reactor(
        `module.exports = async ({ bt }) => {
           const out = {};
           for (const [name, call] of Object.entries({
             noType: () => bt.tokens.create({ data: 'x' }),
             badCard: () => bt.tokens.create({ type: 'card', data: { number: '12' } }),
             missing: () => bt.tokens.retrieve('${randomUUID()}'),
           })) {
             try { await call(); out[name] = 'resolved'; } catch (e) { out[name] = e.status; }
           }
           return { raw: out };
         };`,
        { application: { id: btApp.id } },
      );
      assert.deepEqual(await reacted(id), { raw: { noType: 400, badCard: 400, missing: 404 } });
    });

    it('holds bt.detokenize to POST /detokenize\'s limits, with its errors', async () => {
      const reader = await createApplication(server, { name: 'reader', type: 'private', permissions: ['token:read'] });
      const id = await reactor(
        `module.exports = async ({ bt, args }) => {
          const out = [];
          const bodies = [
            Object.fromEntries(Array.from({ length: 101 }, (_, i) => ['k' + i, '{{ ' + args.secret + ' }}'])),
            { list: Array.from({ length: 60000 }, () => 0) },
          ];
          for (const body of bodies) {
            try { await bt.detokenize(body); out.push('resolved'); } catch (e) { out.push({ status: e.status, message: e.message, data: e.data }); }
          }
          return { raw: out };
        };`,
        { application: { id: btApp.id } },
      );
      // Over the tenant's Detokenize Limit (100), and 60,000 values with no expression at all.
      const overLimit = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, `{{ ${secret} }}`]));
      const manyValues = { list: Array.from({ length: 60_000 }, () => 0) };
      const { raw } = await reacted(id, { args: { secret } });
      for (const [i, body] of [overLimit, manyValues].entries()) {
        const route = await call(server, 'POST', '/detokenize', { key: reader.key, body });
        assertProblem(route, 400);
        assert.deepEqual(raw[i], { status: 400, message: route.body.detail, data: route.body.errors }, JSON.stringify(raw[i]));
      }
      assert.match(raw[0].message, /101 detokenization expressions exceed the tenant's limit of 100/);
      assert.match(raw[1].message, /holds more than 10000 values/);
    });

    it('uses the application as it is now: a deleted application leaves bt null', async () => {
      const app = await createApplication(server, { name: 'temporary', type: 'private', permissions: ['token:create'] });
      const id = await reactor(`module.exports = async (req) => ({ raw: { bt: req.bt !== null } });`, { application: { id: app.id } });
      assert.deepEqual(await reacted(id), { raw: { bt: true } });
      assert.equal((await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key })).status, 204);
      assert.deepEqual(await reacted(id), { raw: { bt: false } });
    });
  });

  describe('token:use on every token\'s container', () => {
    it('a token in a container the caller lacks token:use on is a 403, and the code never runs', async () => {
      const path = `/ran-${randomUUID()}`;
      const id = await reactor(`module.exports = async (req) => { await fetch(${JSON.stringify(receiver.url(path))}, { method: 'POST', body: 'x' }); return { raw: { ran: true } }; };`);

      // The control: a /general/ token is allowed, so the code runs and calls the receiver.
      assert.deepEqual(await reacted(id, { args: { s: `{{ ${secret} }}` } }, generalOnly), { raw: { ran: true } });
      assert.equal(receiver.at(path).length, 1);
      const invoked = (await eventsOf(id)).filter((e) => e.type === 'reactor.invoked').length;

      for (const args of [{ c: `{{ ${card} }}` }, { s: `{{ ${secret} }}`, c: `{{ ${card} | json: '$.number' }}` }, { whole: `{{ token: ${card} }}` }]) {
        const res = await react(id, { args }, generalOnly);
        assertProblem(res, 403, new RegExp(card));
        assert.ok(!res.text.includes(PAN));
      }
      assert.equal(receiver.at(path).length, 1, 'the code did not run again');
      assert.equal((await eventsOf(id)).filter((e) => e.type === 'reactor.invoked').length, invoked, 'no invocation was recorded');
    });

    it('token:read does not stand in for token:use', async () => {
      const id = await reactor(ECHO);
      assertProblem(await react(id, { args: { c: `{{ ${card} }}` } }, writer), 403);
    });

    it('an unknown token id is a 400', async () => {
      const missing = randomUUID();
      const res = await react(await reactor(ECHO), { args: { a: `{{ ${missing} }}` } });
      assertProblem(res, 400, new RegExp(missing));
    });

    it('a malformed expression is a 400 naming where it is', async () => {
      const res = await react(await reactor(ECHO), { args: { a: { b: `{{ ${secret} | no_such_filter }}` } } });
      assertProblem(res, 400);
      assert.ok(res.body.errors?.['body.args.a.b'], res.text);
    });

    it('at most 100 distinct tokens: 100 work, 101 are a 400', async () => {
      const requests = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`t${i}`, { type: 'token', data: `value-${i}` }]));
      const tokenized = await call(server, 'POST', '/tokenize', { key: writer, body: requests });
      assert.equal(tokenized.status, 201, tokenized.text);
      const ids = Object.values(tokenized.body).map((t: any) => t.id as string);
      assert.equal(ids.length, 100);
      const count = await reactor(`module.exports = async (req) => ({ raw: { n: Object.keys(req.args).length, last: req.args.t99 } });`);
      const args = Object.fromEntries(ids.map((id, i) => [`t${i}`, `{{ ${id} }}`]));
      assert.deepEqual(await reacted(count, { args }), { raw: { n: 100, last: 'value-99' } });

      const before = (await eventsOf(count)).length;
      const res = await react(count, { args: { ...args, one_more: `{{ ${secret} }}` } });
      assertProblem(res, 400, /100/);
      assert.ok(res.body.errors?.['body.args'], res.text);
      assert.equal((await eventsOf(count)).length, before, 'the code did not run');
    });
  });

  describe('errors thrown by the code', () => {
    it('throw new Error(message) is a 422 problem with the message', async () => {
      const res = await react(await reactor(`module.exports = async () => { throw new Error('card declined by the issuer'); };`));
      assertProblem(res, 422, /card declined by the issuer/);
      assert.equal(res.body.title, 'Unprocessable Content');
    });

    it('a TypeError and a thrown string are 422 too', async () => {
      assertProblem(await react(await reactor(`module.exports = async () => { null.x; };`)), 422, /TypeError/);
      assertProblem(await react(await reactor(`module.exports = async () => { throw 'just a string'; };`)), 422, /just a string/);
    });

    it('the @coffer/errors classes set the status', async () => {
      const cases: [string, number][] = [
        ['BadRequestError', 400],
        ['AuthenticationError', 401],
        ['AuthorizationError', 403],
        ['NotFoundError', 404],
        ['UnprocessableEntityError', 422],
        ['RateLimitError', 429],
        ['ReactorRuntimeError', 422],
      ];
      for (const [cls, status] of cases) {
        const id = await reactor(`const errors = require('@coffer/errors'); module.exports = async () => { throw new errors.${cls}('${cls} from the code'); };`);
        assertProblem(await react(id), status, new RegExp(`${cls} from the code`));
      }
    });

    it('the data of an error class comes back in the problem', async () => {
      const id = await reactor(`const { BadRequestError } = require('@coffer/errors'); module.exports = async () => { throw new BadRequestError('card is required', { field: 'card' }); };`);
      const res = await react(id);
      assertProblem(res, 400, /card is required/);
      assert.deepEqual(res.body.data, { field: 'card' });
    });

    it('a status set by hand cannot forge a 5xx', async () => {
      const id = await reactor(`module.exports = async () => { const e = new Error('forged'); e.status = 500; throw e; };`);
      assertProblem(await react(id), 422, /forged/);
    });

    it('require of a Node module is an error, not a crash', async () => {
      for (const mod of ['fs', 'child_process', 'node:net']) {
        const res = await react(await reactor(`const m = require('${mod}'); module.exports = async () => ({ raw: typeof m });`));
        assertProblem(res, 422, new RegExp(`Cannot find module '${mod}'`));
      }
      await otherTenantServed();
    });

    it('the host is out of reach', async () => {
      const id = await reactor(`module.exports = async () => { const p = this.constructor.constructor('return typeof process')(); return { raw: { p, buffer: typeof Buffer, req: typeof require('@coffer/errors') } }; };`);
      assert.deepEqual(await reacted(id), { raw: { p: 'undefined', buffer: 'undefined', req: 'object' } });
    });
  });

  describe('errors never echo what was detokenized', () => {
    /** May only use tokens: it must never see their data. */
    let useOnly: { id: string; key: string };
    before(async () => {
      useOnly = await createApplication(server, { name: 'use only', type: 'private', permissions: ['token:use'] });
    });

    /** The problem (but its request id, which may hold any digits) holds none of the card's or the secret's values. */
    const assertScrubbed = (text: string) => {
      const { request_id: _, ...problem } = JSON.parse(text);
      const shown = JSON.stringify(problem);
      for (const value of [PAN, CARD.cvc, String(YEAR), SECRET]) assert.ok(!shown.includes(value), `${value} in ${shown}`);
    };

    it('an ordinary error message: BigInt of a detokenized amount', async () => {
      const id = await reactor(`module.exports = async (req) => ({ raw: { cents: String(BigInt(req.args.amount)) } });`);
      const res = await react(id, { args: { amount: `{{ ${card} | json: "$.cvc" }}x{{ ${card} | json: "$.number" }}` } }, useOnly.key);
      assertProblem(res, 422, /^SyntaxError: Cannot convert \[redacted\]x\[redacted\] to a BigInt$/);
      assertScrubbed(res.text);
      // The kept result, which its events name, is scrubbed the same way.
      const [invoked] = await eventsOf(id);
      const kept = await call(server, 'GET', `/reactors/${id}/results/${invoked.payload.request_id}`, { key: useOnly.key });
      assertProblem(kept, 422, /\[redacted\]/);
      assertScrubbed(kept.text);
    });

    it('values inside other text, escaped as JSON, in field names, and in an error class\'s data', async () => {
      const id = await reactor(`const { BadRequestError } = require('@coffer/errors');
        module.exports = async (req) => {
          throw new BadRequestError('declined: ' + JSON.stringify(req.args), { card: req.args.card, [req.args.secret]: 'key', list: [req.args.card.number + '!'] });
        };`);
      const res = await react(id, { args: { card: `{{ ${card} }}`, secret: `{{ ${secret} }}` } }, useOnly.key);
      assertProblem(res, 400, /^declined: /);
      assertScrubbed(res.text);
      assert.deepEqual(res.body.data, {
        card: { number: '[redacted]', expiration_month: 12, expiration_year: '[redacted]', cvc: '[redacted]' },
        '[redacted]': 'key',
        list: ['[redacted]!'],
      });
    });

    it('what a failing run logged stays out of the answer', async () => {
      const id = await reactor(`module.exports = async (req) => {
        console.log('number', req.args.number);
        console.error(req.args);
        throw new Error('failed after logging');
      };`);
      const res = await react(id, { args: { number: `{{ ${card} | json: '$.number' }}` } }, useOnly.key);
      assertProblem(res, 422, /^failed after logging$/);
      assertScrubbed(res.text);
      assert.deepEqual(Object.keys(res.body).sort(), ['detail', 'request_id', 'status', 'title', 'type']);
    });

    it('data bt read for the run is scrubbed too', async () => {
      const id = await reactor(`module.exports = async ({ bt, args }) => {
        const t = await bt.tokens.retrieve(args.id);
        const d = await bt.detokenize({ v: '{{ ' + args.other + ' }}' });
        throw new Error('looked at ' + t.data.number + ' and ' + d.v);
      };`, { application: { id: btApp.id } });
      const res = await react(id, { args: { id: card, other: secret } }, useOnly.key);
      assertProblem(res, 422, /^looked at \[redacted\] and \[redacted\]$/);
      assertScrubbed(res.text);
    });

    it('short values are left alone, and a message holding nothing detokenized is kept whole', async () => {
      const id = await reactor(`module.exports = async (req) => { throw new Error('month ' + req.args.month + ' of 12 checked at step 123'); };`);
      // The month (12) is too short to scrub; the card's cvc (123) is scrubbed wherever it appears.
      const res = await react(id, { args: { month: `{{ ${card} | json: '$.expiration_month' }}` } }, useOnly.key);
      assertProblem(res, 422, /^month 12 of 12 checked at step \[redacted\]$/);
      const plain = await react(id, { args: { month: 7 } }, useOnly.key);
      assertProblem(plain, 422, /^month 7 of 12 checked at step 123$/);
    });
  });

  describe('replays under SVC-IDEMPOTENCY-KEY', () => {
    it('a stored reply is shown again only while its tokens exist and the caller may still use them as it did, each showing audited', async () => {
      const VALUE = 'replayed-reactor-secret-2210';
      rememberSecret(VALUE);
      const all = ['token:use', 'token:delete'];
      const app = await createApplication(server, { name: 'retrying invoker', type: 'private', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: all }] });
      const mine = await token({ type: 'token', data: VALUE });
      const id = await reactor(ECHO);
      const key = randomUUID();
      const send = () => call(server, 'POST', `/reactors/${id}/react`, { key: app.key, body: { args: { s: `{{ ${mine} }}` } }, headers: { 'svc-idempotency-key': key } });
      const uses = async () => (await sql.query(`SELECT count(*)::int AS n FROM audit_events WHERE entity_id = $1 AND operation = 'use' AND actor_id = $2`, [mine, app.id])).rows[0].n;

      const first = await send();
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.raw.args.s, VALUE);
      assert.equal(await uses(), 1);
      const replayed = await send();
      assert.equal(replayed.status, 200, replayed.text);
      assert.equal(replayed.headers.get('svc-idempotent-replayed'), 'true');
      assert.deepEqual(replayed.body, first.body);
      assert.equal(await uses(), 2, 'the replay is audited as a use');
      assert.equal((await eventsOf(id)).filter((e) => e.type === 'reactor.invoked').length, 1, 'and did not run the code again');

      // The rule revoked: the stored plaintext is not shown.
      const put = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'retrying invoker', rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: all }] } });
      assert.equal(put.status, 200, put.text);
      const revoked = await send();
      assertProblem(revoked, 409, /may no longer see as it did: it is not shown again/);
      assert.ok(!revoked.text.includes(VALUE));
      // Restored, it replays; once the token is deleted, it does not.
      const back = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'retrying invoker', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: all }] } });
      assert.equal(back.status, 200, back.text);
      assert.equal((await send()).status, 200);
      assert.equal((await call(server, 'DELETE', `/tokens/${mine}`, { key: app.key })).status, 204);
      const gone = await send();
      assertProblem(gone, 409, /no longer exists/);
      assert.ok(!gone.text.includes(VALUE));
    });

    it('a reply showing what bt read is not shown again once that token is deleted', async () => {
      const VALUE = 'bt-read-replay-secret-8812';
      rememberSecret(VALUE);
      const read = await token({ type: 'token', data: VALUE });
      const id = await reactor(`module.exports = async ({ bt, args }) => ({ raw: { seen: (await bt.tokens.retrieve(args.id)).data } });`, { application: { id: btApp.id } });
      const key = randomUUID();
      const send = () => call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: { args: { id: read } }, headers: { 'svc-idempotency-key': key } });
      assert.deepEqual((await send()).body, { raw: { seen: VALUE } });
      assert.equal((await send()).headers.get('svc-idempotent-replayed'), 'true');
      assert.equal((await call(server, 'DELETE', `/tokens/${read}`, { key: btApp.key })).status, 204);
      const gone = await send();
      assertProblem(gone, 409, /no longer exists/);
      assert.ok(!gone.text.includes(VALUE));
    });
  });

  describe('limits', () => {
    it('an endless loop is a 408 at the time limit, and other tenants are served during and after it', async () => {
      const id = await reactor(`module.exports = async () => { while (true) {} };`);
      const started = Date.now();
      const pending = react(id);
      // While the loop spins on an isolate thread, the server answers another tenant.
      await otherTenantServed();
      const res = await pending;
      assertProblem(res, 408, /time limit/);
      assert.ok(Date.now() - started >= TIMEOUT_MS - 100, 'ran until the limit');
      assert.ok(Date.now() - started < TIMEOUT_MS + 5000, 'and not much longer');
      await otherTenantServed();
    });

    it('a loop after an await is stopped too', async () => {
      const res = await react(await reactor(`module.exports = async () => { await new Promise((r) => setTimeout(r, 10)); for (;;) {} };`));
      assertProblem(res, 408);
      await otherTenantServed();
    });

    it('code awaiting a timer past the limit is a 408', async () => {
      const started = Date.now();
      const res = await react(await reactor(`module.exports = async () => { await new Promise((r) => setTimeout(r, 600000)); return { raw: 1 }; };`));
      assertProblem(res, 408, /time limit/);
      assert.ok(Date.now() - started >= TIMEOUT_MS - 100);
      await otherTenantServed();
    });

    it('code awaiting a promise nothing can settle is a 408', async () => {
      const res = await react(await reactor(`module.exports = async () => { await new Promise(() => {}); };`));
      assertProblem(res, 408);
      await otherTenantServed();
    });

    it('the same reactor works again after it timed out (the isolate is replaced)', async () => {
      const id = await reactor(`module.exports = async (req) => { if (req.args.spin) while (true) {} return { raw: 'fine' }; };`);
      assertProblem(await react(id, { args: { spin: true } }), 408);
      assert.deepEqual(await reacted(id, { args: { spin: false } }), { raw: 'fine' });
    });

    it('a memory bomb is a 422, and the server carries on', async () => {
      const id = await reactor(`module.exports = async () => { const a = []; for (;;) a.push(new Array(100000).fill(1.5)); };`);
      assertProblem(await react(id), 422, /memory/);
      await otherTenantServed();
    });

    it('deep recursion is a 422', async () => {
      assertProblem(await react(await reactor(`module.exports = async () => { const f = (n) => f(n + 1) + 1; return { raw: f(0) }; };`)), 422, /RangeError|stack/i);
    });

    it('a result over 1 MiB is a 422', async () => {
      assertProblem(await react(await reactor(`module.exports = async () => ({ raw: 'x'.repeat(2 * 1024 * 1024) });`)), 422);
    });
  });

  describe('fetch', () => {
    it('reaches an allow-listed local server', async () => {
      const id = await reactor(`module.exports = async (req) => {
        const res = await fetch(req.args.url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: req.args.body });
        return { raw: { status: res.status, echo: res.headers.get('x-echo'), json: await res.json() } };
      };`);
      const path = `/fetch-${randomUUID()}`;
      const res = await reacted(id, { args: { url: receiver.url(path), body: `{{ ${secret} }}` } });
      assert.deepEqual(res.raw, { status: 200, echo: 'yes', json: { echoed: SECRET, path } });
      assert.equal(receiver.at(path)[0].body, SECRET, 'the detokenized value went out');
    });

    it('internal addresses stay blocked: the error reaches the code and the caller, never a 500', async () => {
      const id = await reactor(`module.exports = async (req) => {
        try { await fetch(req.args.url); return { raw: 'fetched' }; } catch (e) { return { raw: { name: e.name, message: e.message } }; }
      };`);
      for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://[::1]/']) {
        const { raw } = await reacted(id, { args: { url } });
        assert.equal(raw.name, 'TypeError', url);
        assert.match(raw.message, /^fetch failed: (?!fetch failed)/, url);
      }
      const uncaught = await reactor(`module.exports = async () => { await fetch('http://10.0.0.1/'); };`);
      assertProblem(await react(uncaught), 422, /fetch failed/);
    });

    it('an answer declared larger than the fetch limit fails that fetch, and the server keeps serving', async () => {
      const big = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(Buffer.alloc(12 * 1024 * 1024));
      });
      await new Promise<void>((resolve) => big.listen(0, '127.0.0.1', resolve));
      try {
        const id = await reactor(`module.exports = async (req) => {
          try { await fetch(req.args.url); return { raw: 'fetched' }; } catch (e) { return { raw: { name: e.name, message: e.message } }; }
        };`);
        const url = `http://127.0.0.1:${(big.address() as { port: number }).port}/large`;
        for (let i = 0; i < 3; i++) {
          const { raw } = await reacted(id, { args: { url } });
          assert.equal(raw.name, 'TypeError');
          assert.match(raw.message, /fetch failed/);
        }
        assert.equal((await call(server, 'GET', '/health/ready')).status, 200);
      } finally {
        big.closeAllConnections();
        await new Promise((resolve) => big.close(resolve));
      }
    });

    it('without OUTBOUND_ALLOWLIST, 127.0.0.1 is blocked', async () => {
      const plain = await startTestServer({ WORKERS: '0' });
      try {
        const created = await call(plain, 'POST', '/reactors', {
          key: plain.key,
          body: { name: 'local', code: `module.exports = async (req) => { await fetch(req.args.url); return { raw: 'fetched' }; };`, configuration: {} },
        });
        assert.equal(created.status, 201, created.text);
        const app = await createApplication(plain, { name: 'invoker', type: 'private', permissions: ['token:use'] });
        const path = `/blocked-${randomUUID()}`;
        const res = await call(plain, 'POST', `/reactors/${created.body.id}/react`, { key: app.key, body: { args: { url: receiver.url(path) } } });
        assertProblem(res, 422, /fetch failed.*(blocked|not allowed|internal|private)/i);
        assert.equal(receiver.at(path).length, 0, 'nothing was sent');
      } finally {
        await plain.stop();
      }
    });
  });

  describe('events and the audit log', () => {
    it('a completed run records reactor.invoked and reactor.completed with one request id', async () => {
      const id = await reactor(ECHO);
      await reacted(id, { args: { s: `{{ ${secret} }}` } });
      const events = await eventsOf(id);
      assert.deepEqual(events.map((e) => e.type), ['reactor.invoked', 'reactor.completed']);
      const requestId = events[0].payload.request_id;
      assert.match(requestId, /^[0-9a-f-]{36}$/);
      for (const e of events) {
        assert.equal(e.payload.request_id, requestId);
        assert.equal(e.payload.reactor_id, id);
      }
      assert.ok(!JSON.stringify(events).includes(SECRET), 'events never carry data');

      // The audit log names the same request.
      const logs = await call(server, 'GET', `/logs?entity_type=reactor&entity_id=${id}`, { key: server.key });
      const react = (logs.body.data as any[]).filter((e) => e.operation === 'react');
      assert.equal(react.length, 1, logs.text);
      assert.equal(react[0].actor_id, invoker.id);
      assert.ok(react[0].message.includes(requestId), react[0].message);
      // And the token used.
      const uses = await call(server, 'GET', `/logs?entity_type=token&entity_id=${secret}`, { key: server.key });
      assert.ok((uses.body.data as any[]).some((e) => e.operation === 'use' && e.actor_id === invoker.id), uses.text);
    });

    it("the invocation's audit entries and reactor.invoked are durable before the code's first call leaves Coffer", async () => {
      const id = await reactor(`module.exports = async (req) => {
        await fetch(req.args.url, { method: 'POST', body: req.args.body });
        return { raw: { sent: true } };
      };`);
      const path = `/audit-first-${randomUUID()}`;
      // What the database held at the moment the request arrived, read by another connection.
      let seen: { uses: number; reacts: number; invoked: number; completed: number } | undefined;
      receiver.answer(path, () =>
        sql.query(
          `SELECT (SELECT count(*)::int FROM audit_events WHERE entity_id = $1 AND operation = 'use' AND actor_id = $3) AS uses,
                  (SELECT count(*)::int FROM audit_events WHERE entity_id = $2 AND operation = 'react') AS reacts,
                  (SELECT count(*)::int FROM events WHERE entity_id = $2 AND type = 'reactor.invoked') AS invoked,
                  (SELECT count(*)::int FROM events WHERE entity_id = $2 AND type = 'reactor.completed') AS completed`,
          [secret, id, invoker.id],
        ).then((r) => {
          seen = r.rows[0];
          return 200;
        }),
      );
      const usesBefore = (await sql.query(`SELECT count(*)::int AS n FROM audit_events WHERE entity_id = $1 AND operation = 'use' AND actor_id = $2`, [secret, invoker.id])).rows[0].n;
      await reacted(id, { args: { url: receiver.url(path), body: `{{ ${secret} }}` } });
      assert.equal(receiver.at(path)[0].body, SECRET);
      assert.deepEqual(seen, { uses: usesBefore + 1, reacts: 1, invoked: 1, completed: 0 });
      assert.deepEqual((await eventsOf(id)).map((e) => e.type), ['reactor.invoked', 'reactor.completed']);
    });

    it("reactor.invoked's request id answers 202 pending while the run is under way, then the run's answer", async () => {
      const id = await reactor(`module.exports = async (req) => {
        const res = await fetch(req.args.url);
        return { raw: { status: res.status } };
      };`);
      const path = `/in-flight-${randomUUID()}`;
      const release = receiver.hold(path);
      const answered = react(id, { args: { url: receiver.url(path) } });
      try {
        // The code's fetch has arrived, so reactor.invoked is on record and a webhook may deliver it.
        await until(() => receiver.at(path).length === 1, 'the reactor to call out');
        const [invoked] = await eventsOf(id);
        assert.equal(invoked.type, 'reactor.invoked');
        const pending = await call(server, 'GET', `/reactors/${id}/results/${invoked.payload.request_id}`, { key: invoker.key });
        assert.equal(pending.status, 202, pending.text);
        assert.deepEqual(pending.body, { status: 'pending' });
      } finally {
        release();
      }
      const res = await answered;
      assert.equal(res.status, 200, res.text);
      const events = await eventsOf(id);
      assert.deepEqual(events.map((e) => e.type), ['reactor.invoked', 'reactor.completed']);
      const done = await call(server, 'GET', `/reactors/${id}/results/${events[0].payload.request_id}`, { key: invoker.key });
      assert.equal(done.status, 200, done.text);
      assert.deepEqual(done.body, res.body);
      assert.deepEqual(done.body, { raw: { status: 200 } });
    });

    it('a failed run records reactor.invoked and reactor.failed with the status', async () => {
      const id = await reactor(`module.exports = async () => { throw new Error('nope'); };`);
      await react(id);
      const events = await eventsOf(id);
      assert.deepEqual(events.map((e) => e.type), ['reactor.invoked', 'reactor.failed']);
      assert.equal(events[1].payload.request_id, events[0].payload.request_id);
      assert.equal(events[1].payload.status, 422);
    });

    it('under an idempotency key, a failed run is on record too: its uses, audit entry, events and result', async () => {
      // The error message carries the detokenized data back to the caller: the use must be recorded.
      const quiet = await reactor(`module.exports = async (req) => { throw new Error('got ' + req.args.s); };`);
      // The same after a fetch (the entries before egress are written then, the outcome at the end).
      const path = `/idem-failed-${randomUUID()}`;
      const loud = await reactor(`module.exports = async (req) => { await fetch(req.args.url, { method: 'POST', body: req.args.s }); throw new Error('after'); };`);
      for (const [id, args] of [[quiet, { s: `{{ ${secret} }}` }], [loud, { s: `{{ ${secret} }}`, url: receiver.url(path) }]] as const) {
        const usesBefore = (await sql.query(`SELECT count(*)::int AS n FROM audit_events WHERE entity_id = $1 AND operation = 'use'`, [secret])).rows[0].n;
        const res = await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: { args }, headers: { 'svc-idempotency-key': randomUUID() } });
        assertProblem(res, 422);
        const events = await eventsOf(id);
        assert.deepEqual(events.map((e) => e.type), ['reactor.invoked', 'reactor.failed']);
        const requestId = events[0].payload.request_id;
        const logs = await call(server, 'GET', `/logs?entity_type=reactor&entity_id=${id}`, { key: server.key });
        assert.ok((logs.body.data as any[]).some((e) => e.operation === 'react' && e.message.includes(requestId)), logs.text);
        const usesAfter = (await sql.query(`SELECT count(*)::int AS n FROM audit_events WHERE entity_id = $1 AND operation = 'use'`, [secret])).rows[0].n;
        assert.equal(usesAfter, usesBefore + 1, 'the use of the token');
        assertProblem(await call(server, 'GET', `/reactors/${id}/results/${requestId}`, { key: invoker.key }), 422);
      }
      assert.equal(receiver.at(path).length, 1);
    });

    it('a timed-out run records reactor.failed with 408', async () => {
      const id = await reactor(`module.exports = async () => { while (true) {} };`);
      await react(id);
      const events = await eventsOf(id);
      assert.deepEqual(events.map((e) => e.type), ['reactor.invoked', 'reactor.failed']);
      assert.equal(events[1].payload.status, 408);
    });
  });

  describe('security', () => {
    it('requires token:use', async () => {
      const id = await reactor(ECHO);
      await assertAuthCases(server, { method: 'POST', path: `/reactors/${id}/react`, permissions: ['token:use'], type: 'private', body: {} });
      assertProblem(await react(id, {}, server.key), 403);
      const pub = await createApplication(server, { name: 'public', type: 'public', permissions: ['token:create'] });
      assertProblem(await react(id, {}, pub.key), 403);
    });

    it('another tenant\'s key cannot invoke this tenant\'s reactor, nor use its tokens', async () => {
      const id = await reactor(ECHO);
      assertProblem(await react(id, {}, other.api_key), 404);
      const theirs = await call(server, 'POST', `/reactors/${otherReactor}/react`, { key: other.api_key, body: { args: { s: `{{ ${secret} }}` } } });
      assertProblem(theirs, 400, new RegExp(secret));
      assert.ok(!theirs.text.includes(SECRET));
    });
  });

});
