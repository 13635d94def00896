import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createOtherTenant, createToken, type Response } from '../helpers/http.ts';
import { createReactorCallers } from '../helpers/reactor-callers.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

/**
 * Asynchronous reactor runs: POST /reactors/{id}/react-async, GET /reactors/{id}/results/{request_id}
 * (pending, completed, failed), results stored encrypted, events carrying the request id, and the
 * deprecated callback_url on react, delivered to a local receiver through the guarded client.
 */

const PAN = '4111111111111111';
const SECRET = 'async-reactor-secret-value-7390';
const YEAR = new Date().getUTCFullYear() + 2;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ASYNC_TIMEOUT_MS = 1500;

function assertProblem(res: Response, status: number, detail?: RegExp): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status} ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, status);
  if (detail) assert.match(res.body.detail, detail);
}

describe('asynchronous reactor runs', () => {
  let server: TestServer;
  let sql: pg.Client;
  let receiver: Receiver;
  let writer: string;
  let invoker: { id: string; key: string };
  let generalOnly: string;
  let btApp: { id: string; key: string };
  let card: string;
  let secret: string;
  let other: { tenant_id: string; api_key: string };

  before(async () => {
    rememberSecret(PAN, SECRET);
    receiver = await startReceiver();
    server = await startTestServer({
      JOB_POLL_MS: '50',
      JOB_BACKOFF_BASE_MS: '50',
      JOB_BACKOFF_MAX_MS: '200',
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      REACTOR_ASYNC_TIMEOUT_MS: String(ASYNC_TIMEOUT_MS),
    });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    ({ writer, invoker, generalOnly } = await createReactorCallers(server));
    btApp = await createApplication(server, {
      name: 'bt',
      type: 'private',
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    });
    card = await token({ type: 'card', data: { number: PAN, expiration_month: 1, expiration_year: YEAR } });
    secret = await token({ type: 'token', data: SECRET });
    const t = await createOtherTenant(server);
    const theirInvoker = await call(server, 'POST', '/applications', { key: t.api_key, body: { name: 'their invoker', type: 'private', permissions: ['token:use'] } });
    assert.equal(theirInvoker.status, 201, theirInvoker.text);
    rememberSecret(theirInvoker.body.key);
    other = { tenant_id: t.tenant_id, api_key: theirInvoker.body.key };
  });
  after(async () => {
    await sql?.end();
    await server?.stop();
    await receiver?.close();
  });

  const token = (body: Record<string, unknown>) => createToken(server, writer, body);

  async function reactor(code: string, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await call(server, 'POST', '/reactors', { key: server.key, body: { name: 'async', code, configuration: { MODE: 'async' }, ...extra } });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  }

  async function reactAsync(id: string, body: unknown = {}, key = invoker.key): Promise<string> {
    const res = await call(server, 'POST', `/reactors/${id}/react-async`, { key, body });
    assert.equal(res.status, 202, res.text);
    assert.deepEqual(Object.keys(res.body), ['asyncReactorRequestId']);
    assert.match(res.body.asyncReactorRequestId, UUID);
    return res.body.asyncReactorRequestId;
  }

  const result = (id: string, requestId: string, key = invoker.key) => call(server, 'GET', `/reactors/${id}/results/${requestId}`, { key });

  /** Polls until the run is no longer pending. */
  const settled = (id: string, requestId: string) =>
    until(async () => {
      const res = await result(id, requestId);
      return res.status !== 202 && res;
    }, `the result of ${requestId}`);

  const eventsOf = async (reactorId: string) =>
    (await sql.query(`SELECT type, payload FROM events WHERE tenant_id = $1 AND entity_id = $2 ORDER BY id`, [server.tenantId, reactorId])).rows as {
      type: string;
      payload: any;
    }[];

  describe('react-async and results', () => {
    it('accepts with 202, is pending (202) while it runs, then answers the Reactor Response', async () => {
      const gate = `/gate-${randomUUID()}`;
      const release = receiver.hold(gate);
      const id = await reactor(`module.exports = async (req) => {
        await fetch(${JSON.stringify(receiver.url(gate))});
        return {
          raw: { number: req.args.card.number, secret: req.args.secret, mode: req.configuration.MODE },
          tokenize: { copy: { type: 'token', data: req.args.secret } },
        };
      };`);
      const requestId = await reactAsync(id, { args: { card: `{{ ${card} }}`, secret: `{{ ${secret} }}` } });

      // The run is held at the gate: certainly pending.
      await until(() => receiver.at(gate).length > 0, 'the run to reach the gate');
      const pending = await result(id, requestId);
      assert.equal(pending.status, 202, pending.text);
      assert.deepEqual(pending.body, { status: 'pending' });
      assert.deepEqual((await eventsOf(id)).map((e) => e.type), ['reactor.invoked'], 'invoked as soon as it was accepted');

      release();
      const done = await settled(id, requestId);
      assert.equal(done.status, 200, done.text);
      assert.deepEqual(done.body.raw, { number: PAN, secret: SECRET, mode: 'async' });
      assert.match(done.body.tokens.copy.id, UUID);
      assert.equal(done.body.tokens.copy.data, undefined);
      assert.equal(done.body.tokens.copy.created_by, invoker.id, 'tokenized as the caller, as a sync run would');
      assert.equal((await call(server, 'GET', `/tokens/${done.body.tokens.copy.id}`, { key: writer })).body.data, SECRET);

      // The same answer every time it is asked.
      assert.deepEqual((await result(id, requestId)).body, done.body);

      const events = await eventsOf(id);
      assert.deepEqual(events.map((e) => e.type), ['reactor.invoked', 'reactor.completed']);
      for (const e of events) assert.deepEqual(e.payload, { reactor_id: id, request_id: requestId });

      const logs = await call(server, 'GET', `/logs?entity_type=reactor&entity_id=${id}`, { key: server.key });
      const reacts = (logs.body.data as any[]).filter((e) => e.operation === 'react');
      assert.equal(reacts.length, 1, logs.text);
      assert.equal(reacts[0].actor_id, invoker.id);
      assert.ok(reacts[0].message.includes(requestId));
    });

    it('keeps the result, the arguments and the job only encrypted', async () => {
      const id = await reactor(`module.exports = async (req) => ({ raw: { number: req.args.number, secret: req.args.secret } });`);
      const requestId = await reactAsync(id, { args: { number: `{{ ${card} | json: '$.number' }}`, secret: `{{ ${secret} }}` } });
      const done = await settled(id, requestId);
      assert.deepEqual(done.body, { raw: { number: PAN, secret: SECRET } });

      const row = (await sql.query(`SELECT status, ciphertext, data_key_id FROM reactor_results WHERE id = $1`, [requestId])).rows[0];
      assert.equal(row.status, 'completed');
      assert.ok(Buffer.isBuffer(row.ciphertext) && row.ciphertext.length > 0);
      assert.ok(row.data_key_id);
      for (const plain of [PAN, SECRET]) {
        assert.ok(!row.ciphertext.includes(Buffer.from(plain)), `the stored result does not hold ${plain === PAN ? 'the PAN' : 'the secret'}`);
      }
      const rows = await sql.query(`SELECT payload::text AS payload FROM jobs WHERE payload->>'request_id' = $1`, [requestId]);
      assert.equal(rows.rows.length, 1);
      assert.ok(!rows.rows[0].payload.includes(PAN) && !rows.rows[0].payload.includes(SECRET), 'the job holds the arguments sealed');
    });

    it('runs bt with the reactor\'s application', async () => {
      const id = await reactor(
        `module.exports = async ({ bt }) => { const t = await bt.tokens.create({ type: 'token', data: 'made async' }); return { raw: { id: t.id, by: t.created_by } }; };`,
        { application: { id: btApp.id } },
      );
      const done = await settled(id, await reactAsync(id));
      assert.equal(done.status, 200, done.text);
      assert.equal(done.body.raw.by, btApp.id);
      assert.equal((await call(server, 'GET', `/tokens/${done.body.raw.id}`, { key: writer })).body.data, 'made async');
    });

    it('tokenizes as the caller is when the run tokenizes: an application deleted since creates nothing', async () => {
      const caller = await createApplication(server, { name: 'short-lived invoker', type: 'private', permissions: ['token:use', 'token:create'] });
      const gate = `/async-caller-gate-${randomUUID()}`;
      const release = receiver.hold(gate);
      const id = await reactor(`module.exports = async (req) => {
        await fetch(req.args.url);
        return { tokenize: { t: { type: 'token', data: 'made for a caller' } } };
      };`);
      const requestId = await reactAsync(id, { args: { url: receiver.url(gate) } }, caller.key);
      await until(() => receiver.at(gate).length === 1, 'the run to start');
      assert.equal((await call(server, 'DELETE', `/applications/${caller.id}`, { key: server.key })).status, 204);
      release();
      // Only the caller reads the result, and its key is gone with it: the run's event and the stored outcome tell.
      const failed = await until(async () => (await eventsOf(id)).find((e) => e.type === 'reactor.failed'), 'the run to fail');
      assert.deepEqual(failed.payload, { reactor_id: id, request_id: requestId, status: 403 });
      const row = (await sql.query(`SELECT ciphertext, data_key_id FROM reactor_results WHERE id = $1`, [requestId])).rows[0];
      const outcome = (await server.running.services.vault.decrypt(server.tenantId, `reactor-result:${requestId}`, row.ciphertext, row.data_key_id)) as any;
      assert.equal(outcome.status, 403);
      assert.match(outcome.detail, /no longer valid/);
      assertProblem(await result(id, requestId), 404);
      const made = (await sql.query(`SELECT count(*)::int AS n FROM tokens WHERE created_by = $1`, [caller.id])).rows[0].n;
      assert.equal(made, 0, 'no token was created as the deleted application');
    });

    it('a body is optional', async () => {
      const id = await reactor(`module.exports = async (req) => ({ raw: { args: req.args } });`);
      const res = await call(server, 'POST', `/reactors/${id}/react-async`, { key: invoker.key });
      assert.equal(res.status, 202, res.text);
      assert.deepEqual((await settled(id, res.body.asyncReactorRequestId)).body, { raw: { args: null } });
    });
  });

  describe('failed runs', () => {
    it('an error thrown by the code is the result: its problem, with its status', async () => {
      const id = await reactor(`module.exports = async () => { throw new Error('async boom'); };`);
      const requestId = await reactAsync(id);
      const res = await settled(id, requestId);
      assertProblem(res, 422, /async boom/);
      assertProblem(await result(id, requestId), 422, /async boom/);
      const events = await eventsOf(id);
      assert.deepEqual(events.map((e) => e.type), ['reactor.invoked', 'reactor.failed']);
      assert.deepEqual(events[1].payload, { reactor_id: id, request_id: requestId, status: 422 });
      const row = (await sql.query(`SELECT status FROM reactor_results WHERE id = $1`, [requestId])).rows[0];
      assert.equal(row.status, 'failed');
    });

    it('an error class keeps its status and data', async () => {
      const id = await reactor(`const { BadRequestError } = require('@coffer/errors'); module.exports = async () => { throw new BadRequestError('amount missing', { field: 'amount' }); };`);
      const res = await settled(id, await reactAsync(id));
      assertProblem(res, 400, /amount missing/);
      assert.deepEqual(res.body.data, { field: 'amount' });
    });

    it('what the arguments were detokenized to is scrubbed from the failure: the result, the callback, the logs', async () => {
      const useOnly = await createApplication(server, { name: 'async use only', type: 'private', permissions: ['token:use'] });
      const path = `/callback-scrubbed-${randomUUID()}`;
      const id = await reactor(`const { BadRequestError } = require('@coffer/errors');
        module.exports = async (req) => { throw new BadRequestError('cannot charge ' + req.args.number, { secret: req.args.secret }); };`);
      const args = { number: `{{ ${card} | json: '$.number' }}`, secret: `{{ ${secret} }}` };
      const res = await call(server, 'POST', `/reactors/${id}/react`, { key: useOnly.key, body: { args, callback_url: receiver.url(path) } });
      assert.equal(res.status, 202, res.text);
      const requestId = res.body.asyncReactorRequestId;
      const [delivery] = await until(() => receiver.at(path).length > 0 && receiver.at(path), 'the callback');
      const body = JSON.parse(delivery.body);
      assert.deepEqual(body.error, { status: 400, detail: 'cannot charge [redacted]', data: { secret: '[redacted]' } });
      const kept = await result(id, requestId, useOnly.key);
      assertProblem(kept, 400, /^cannot charge \[redacted\]$/);
      assert.deepEqual(kept.body.data, { secret: '[redacted]' });
      for (const text of [delivery.body, kept.text]) assert.ok(!text.includes(PAN) && !text.includes(SECRET), text);
    });

    it('a run past REACTOR_ASYNC_TIMEOUT_MS is a 408', async () => {
      const id = await reactor(`module.exports = async () => { while (true) {} };`);
      const started = Date.now();
      const res = await settled(id, await reactAsync(id));
      assertProblem(res, 408, new RegExp(String(ASYNC_TIMEOUT_MS)));
      assert.ok(Date.now() - started >= ASYNC_TIMEOUT_MS - 100);
    });
  });

  describe('errors and isolation', () => {
    it('a token the caller may not use is a 403 at once, and nothing is queued', async () => {
      const id = await reactor(`module.exports = async () => ({});`);
      const jobs = async () => (await sql.query(`SELECT count(*)::int AS n FROM jobs WHERE payload->>'reactor_id' = $1`, [id])).rows[0].n;
      const res = await call(server, 'POST', `/reactors/${id}/react-async`, { key: generalOnly, body: { args: { c: `{{ ${card} }}` } } });
      assertProblem(res, 403);
      assert.equal(await jobs(), 0);
      assert.equal((await sql.query(`SELECT count(*)::int AS n FROM reactor_results WHERE reactor_id = $1`, [id])).rows[0].n, 0);
      assert.deepEqual(await eventsOf(id), []);
      assertProblem(await call(server, 'POST', `/reactors/${id}/react-async`, { key: invoker.key, body: { args: { c: `{{ ${randomUUID()} }}` } } }), 400);
      assert.equal(await jobs(), 0);
      // The control: a token it may use is accepted.
      await reactAsync(id, { args: { s: `{{ ${secret} }}` } }, generalOnly);
      assert.equal(await jobs(), 1);
    });

    it('arguments over 1 MiB once detokenized are a 413 at once, and nothing is queued', async () => {
      const id = await reactor(`module.exports = async () => ({});`);
      // Under the request body limit, but more than 1 MiB once the token's value is in each place.
      const big = await token({ type: 'token', data: 'x'.repeat(60_000) });
      const res = await call(server, 'POST', `/reactors/${id}/react-async`, { key: invoker.key, body: { args: { list: Array.from({ length: 20 }, () => `{{ ${big} }}`) } } });
      assertProblem(res, 413, /larger than 1048576 bytes/);
      assert.equal((await sql.query(`SELECT count(*)::int AS n FROM jobs WHERE payload->>'reactor_id' = $1`, [id])).rows[0].n, 0);
      assert.deepEqual(await eventsOf(id), []);
      // Nothing used either: the token's data never left.
      const uses = async (tokenId: string) =>
        (await sql.query(`SELECT count(*)::int AS n FROM audit_events WHERE entity_type = 'token' AND entity_id = $1 AND operation = 'use'`, [tokenId])).rows[0].n;
      assert.equal(await uses(big), 0);
      // The control: an accepted call records its use with the job.
      const small = await token({ type: 'token', data: 'y' });
      await reactAsync(id, { args: { s: `{{ ${small} }}` } });
      assert.equal(await uses(small), 1);
    });

    it('args that are not an object (nor null) are a 400 on body.args, and nothing is queued', async () => {
      const id = await reactor(`module.exports = async () => ({});`);
      for (const args of [['a'], 'plain', 7]) {
        const res = await call(server, 'POST', `/reactors/${id}/react-async`, { key: invoker.key, body: { args } });
        assertProblem(res, 400);
        assert.ok(res.body.errors?.['body.args'], `${JSON.stringify(args)}: ${res.text}`);
      }
      assert.equal((await sql.query(`SELECT count(*)::int AS n FROM jobs WHERE payload->>'reactor_id' = $1`, [id])).rows[0].n, 0);
      assert.deepEqual(await eventsOf(id), []);
    });

    it('answers 404 for an unknown reactor', async () => {
      assertProblem(await call(server, 'POST', `/reactors/${randomUUID()}/react-async`, { key: invoker.key, body: {} }), 404);
    });

    it('results: unknown request ids, another reactor\'s ids and another tenant\'s are all 404', async () => {
      const id = await reactor(`module.exports = async () => ({ raw: 'mine' });`);
      const sibling = await reactor(`module.exports = async () => ({ raw: 'sibling' });`);
      const requestId = await reactAsync(id);
      assert.equal((await settled(id, requestId)).status, 200);

      assertProblem(await result(id, randomUUID()), 404);
      assertProblem(await result(sibling, requestId), 404);
      assertProblem(await result(randomUUID(), requestId), 404);
      assertProblem(await result(id, requestId, other.api_key), 404);
      assertProblem(await result(id, 'not-a-uuid'), 400);

      // The other tenant's own result is out of reach the same way.
      const theirs = await call(server, 'POST', '/reactors', { key: (await createOtherTenant(server)).api_key, body: { name: 'x', code: 'module.exports = async () => ({});', configuration: {} } });
      assert.equal(theirs.status, 201);
      assertProblem(await result(theirs.body.id, requestId), 404);
    });

    it('a sync run\'s request id, from its events, retrieves what the run answered', async () => {
      const id = await reactor(`module.exports = async (req) => ({ raw: { secret: req.args.s } });`);
      const res = await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: { args: { s: `{{ ${secret} }}` } } });
      assert.equal(res.status, 200, res.text);
      const events = await eventsOf(id);
      assert.deepEqual(events.map((e) => e.type), ['reactor.invoked', 'reactor.completed']);
      const requestId = events[0].payload.request_id;
      assert.equal(events[1].payload.request_id, requestId);
      const got = await result(id, requestId);
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.body, res.body);
      const row = (await sql.query(`SELECT status, ciphertext FROM reactor_results WHERE id = $1`, [requestId])).rows[0];
      assert.equal(row.status, 'completed');
      assert.ok(!row.ciphertext.includes(Buffer.from(SECRET)), 'kept sealed');
      assertProblem(await result(id, requestId, other.api_key), 404);
    });

    it('a failed sync run\'s request id retrieves its problem', async () => {
      const id = await reactor(`module.exports = async () => { throw new Error('sync boom'); };`);
      assertProblem(await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: {} }), 422, /sync boom/);
      const events = await eventsOf(id);
      assert.deepEqual(events.map((e) => e.type), ['reactor.invoked', 'reactor.failed']);
      assertProblem(await result(id, events[1].payload.request_id), 422, /sync boom/);
    });

    it('react-async requires token:use', async () => {
      const id = await reactor(`module.exports = async () => ({});`);
      await assertAuthCases(server, { method: 'POST', path: `/reactors/${id}/react-async`, permissions: ['token:use'], type: 'private', body: {} });
      assertProblem(await call(server, 'POST', `/reactors/${id}/react-async`, { key: server.key, body: {} }), 403);
    });

    it('results require token:use', async () => {
      const id = await reactor(`module.exports = async () => ({ raw: 'x' });`);
      const requestId = await reactAsync(id);
      await settled(id, requestId);
      await assertAuthCases(server, { method: 'GET', path: `/reactors/${id}/results/${requestId}`, permissions: ['token:use'], type: 'private' });
      assertProblem(await result(id, requestId, server.key), 403);
    });
  });

  describe('who reads a result, and for how long', () => {
    const ECHO_CARD = `module.exports = async (req) => ({ raw: { number: req.args.card.number } });`;

    it('only the application that started a run reads its result (any of its keys); to every other key it does not exist', async () => {
      const id = await reactor(ECHO_CARD);
      const requestId = await reactAsync(id, { args: { card: `{{ ${card} }}` } });
      const done = await settled(id, requestId);
      assert.equal(done.status, 200, done.text);
      assert.equal(done.body.raw.number, PAN);

      // Another application of the tenant that may use every token, having learnt the request id
      // from the audit log or a reactor.* event.
      const nosy = await createApplication(server, { name: 'nosy', type: 'private', permissions: ['token:use'] });
      for (const key of [nosy.key, generalOnly]) {
        const res = await result(id, requestId, key);
        assertProblem(res, 404, /reactor result was not found/);
        assert.ok(!res.text.includes(PAN));
      }
      // Another key of the application that started it is the same caller.
      const second = await call(server, 'POST', `/applications/${invoker.id}/keys`, { key: server.key });
      assert.equal(second.status, 201, second.text);
      rememberSecret(second.body.key);
      assert.deepEqual((await result(id, requestId, second.body.key)).body, done.body);

      // A synchronous run's kept result, which its events name, the same way.
      const sync = await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: { args: { card: `{{ ${card} }}` } } });
      assert.equal(sync.status, 200, sync.text);
      const syncId = (await eventsOf(id)).filter((e) => e.type === 'reactor.invoked').at(-1)!.payload.request_id;
      assert.deepEqual((await result(id, syncId)).body, sync.body);
      const theirs = await result(id, syncId, nosy.key);
      assertProblem(theirs, 404);
      assert.ok(!theirs.text.includes(PAN));
    });

    it('a run a session started is read by that session only', async () => {
      const browser = await createApplication(server, { name: 'browser', type: 'public', permissions: ['token:create'] });
      const backend = await createApplication(server, { name: 'backend', type: 'private', permissions: ['session:authorize', 'token:use'] });
      const session = async () => {
        const created = await call(server, 'POST', '/sessions', { key: browser.key });
        assert.equal(created.status, 201, created.text);
        rememberSecret(created.body.session_key, created.body.nonce);
        const authorized = await call(server, 'POST', '/sessions/authorize', { key: backend.key, body: { nonce: created.body.nonce, permissions: ['token:use'] } });
        assert.equal(authorized.status, 204, authorized.text);
        return created.body.session_key as string;
      };
      const [mine, another] = [await session(), await session()];
      const id = await reactor(ECHO_CARD);
      const requestId = await reactAsync(id, { args: { card: `{{ ${card} }}` } }, mine);
      const done = await until(async () => {
        const res = await result(id, requestId, mine);
        return res.status !== 202 && res;
      }, 'the session\'s result');
      assert.equal(done.status, 200, done.text);
      assert.equal(done.body.raw.number, PAN);
      // Neither another session of the same application nor the application that authorized it.
      for (const key of [another, backend.key, invoker.key]) {
        const res = await result(id, requestId, key);
        assertProblem(res, 404);
        assert.ok(!res.text.includes(PAN));
      }
    });

    it('a result kept before its starter was recorded is read by no one', async () => {
      const id = await reactor(ECHO_CARD);
      const requestId = await reactAsync(id, { args: { card: `{{ ${card} }}` } });
      assert.equal((await settled(id, requestId)).status, 200);
      await sql.query(`UPDATE reactor_results SET started_by = NULL WHERE id = $1`, [requestId]);
      assertProblem(await result(id, requestId), 404);
    });

    it('a result is shown only while its tokens exist and the caller may still use them as it could, each showing audited as a use', async () => {
      const app = await createApplication(server, {
        name: 'result reader',
        type: 'private',
        rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:use'] }],
      });
      const mine = await token({ type: 'token', data: 'kept-result-secret-4471' });
      rememberSecret('kept-result-secret-4471');
      const id = await reactor(`module.exports = async (req) => ({ raw: { s: req.args.s } });`);
      const requestId = await reactAsync(id, { args: { s: `{{ ${mine} }}` } }, app.key);
      const read = () => result(id, requestId, app.key);
      const uses = async () => (await sql.query(`SELECT count(*)::int AS n FROM audit_events WHERE entity_id = $1 AND operation = 'use' AND actor_id = $2`, [mine, app.id])).rows[0].n;
      const done = await until(async () => {
        const res = await read();
        return res.status !== 202 && res;
      }, 'the result');
      assert.deepEqual(done.body, { raw: { s: 'kept-result-secret-4471' } });
      const before = await uses();
      assert.equal((await read()).status, 200);
      assert.equal(await uses(), before + 1, 'each showing is a use');

      // The application may now only use what the token's mask shows: the result is withheld.
      const put = await call(server, 'PUT', `/applications/${app.id}`, {
        key: server.key,
        body: { name: 'result reader', rules: [{ priority: 1, container: '/', transform: 'mask', permissions: ['token:use'] }] },
      });
      assert.equal(put.status, 200, put.text);
      const narrowed = await read();
      assertProblem(narrowed, 409, /may no longer use as it did: it is not shown again/);
      assert.ok(!narrowed.text.includes('kept-result-secret-4471'));
      // Back as it was, then the token deleted.
      const back = await call(server, 'PUT', `/applications/${app.id}`, {
        key: server.key,
        body: { name: 'result reader', rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:use'] }] },
      });
      assert.equal(back.status, 200, back.text);
      assert.equal((await read()).status, 200);
      const deleter = await createApplication(server, { name: 'deleter', type: 'private', permissions: ['token:delete'] });
      assert.equal((await call(server, 'DELETE', `/tokens/${mine}`, { key: deleter.key })).status, 204);
      const gone = await read();
      assertProblem(gone, 409, /no longer exists/);
      assert.ok(!gone.text.includes('kept-result-secret-4471'));
    });
  });

  describe('callback_url (deprecated)', () => {
    it('react with callback_url answers 202 and POSTs the result to the URL', async () => {
      const path = `/callback-${randomUUID()}`;
      const id = await reactor(`module.exports = async (req) => ({ raw: { echoed: req.args.value } });`);
      const res = await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: { args: { value: 'plain value' }, callback_url: receiver.url(path) } });
      assert.equal(res.status, 202, res.text);
      const requestId = res.body.asyncReactorRequestId;
      assert.match(requestId, UUID);

      const [delivery] = await until(() => receiver.at(path).length > 0 && receiver.at(path), 'the callback');
      assert.equal(delivery.method, 'POST');
      assert.match(delivery.headers['content-type'] ?? '', /application\/json/);
      assert.deepEqual(JSON.parse(delivery.body), { asyncReactorRequestId: requestId, status: 'completed', raw: { echoed: 'plain value' } });
      // The result can be fetched too.
      assert.deepEqual((await settled(id, requestId)).body, { raw: { echoed: 'plain value' } });
    });

    it('a failed run is delivered as failed, with its problem', async () => {
      const path = `/callback-${randomUUID()}`;
      const id = await reactor(`module.exports = async () => { throw new Error('callback boom'); };`);
      const res = await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: { callback_url: receiver.url(path) } });
      assert.equal(res.status, 202, res.text);
      const [delivery] = await until(() => receiver.at(path).length > 0 && receiver.at(path), 'the callback');
      const body = JSON.parse(delivery.body);
      assert.equal(body.asyncReactorRequestId, res.body.asyncReactorRequestId);
      assert.equal(body.status, 'failed');
      assert.equal(body.error.status, 422);
      assert.match(body.error.detail, /callback boom/);
    });

    it('a failing callback is retried without running the code again', async () => {
      const path = `/callback-${randomUUID()}`;
      const runs = `/runs-${randomUUID()}`;
      receiver.answer(path, (n) => (n < 3 ? 500 : 200));
      const id = await reactor(`module.exports = async () => { await fetch(${JSON.stringify(receiver.url(runs))}); return { raw: 'once' }; };`);
      const res = await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: { callback_url: receiver.url(path) } });
      assert.equal(res.status, 202, res.text);
      await until(() => receiver.at(path).length >= 3, 'three callback attempts');
      for (const d of receiver.at(path)) assert.deepEqual(JSON.parse(d.body), { asyncReactorRequestId: res.body.asyncReactorRequestId, status: 'completed', raw: 'once' });
      await until(async () => (await sql.query(`SELECT status FROM jobs WHERE payload->>'request_id' = $1`, [res.body.asyncReactorRequestId])).rows[0]?.status === 'done', 'the job to finish');
      assert.equal(receiver.at(runs).length, 1, 'the code ran once');
      assert.deepEqual((await eventsOf(id)).map((e) => e.type), ['reactor.invoked', 'reactor.completed'], 'and was reported once');
    });

    it('a callback_url the guarded client refuses is a 400 on body.callback_url, and nothing is queued', async () => {
      const id = await reactor(`module.exports = async () => ({});`);
      const spaced = [' https://hooks.example.com/x', 'https://hooks.exa\tmple.com/x', 'https://hooks.example.com/x\n', 'https://hooks.example.com/a b'];
      for (const url of ['http://10.0.0.1/', 'http://169.254.169.254/latest', 'not a url', 'ftp://example.com/x', 'http://user:pw@example.com/', ...spaced]) {
        const res = await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: { callback_url: url } });
        assertProblem(res, 400);
        assert.ok(res.body.errors?.['body.callback_url'], `${url}: ${res.text}`);
      }
      assert.equal((await sql.query(`SELECT count(*)::int AS n FROM reactor_results WHERE reactor_id = $1`, [id])).rows[0].n, 0);
      assert.deepEqual(await eventsOf(id), []);
    });

    it('a null callback_url is a plain sync call', async () => {
      const id = await reactor(`module.exports = async () => ({ raw: 'sync' });`);
      const res = await call(server, 'POST', `/reactors/${id}/react`, { key: invoker.key, body: { callback_url: null } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { raw: 'sync' });
    });
  });
});
