import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

/**
 * SANDBOX_CONCURRENCY and a tenant's share of it: a tenant's runs past its share wait (up to
 * SANDBOX_TENANT_QUEUE), and past that they are turned away with 429 before anything starts —
 * no request id, no events, no stored result. Another tenant's runs do not wait behind them.
 */
describe('reactor runs past a tenant\'s share', () => {
  let server: TestServer;
  let sql: pg.Client;
  let receiver: Receiver;
  let invoker: string;

  before(async () => {
    receiver = await startReceiver();
    server = await startTestServer({ SANDBOX_CONCURRENCY: '2', SANDBOX_TENANT_CONCURRENCY: '1', SANDBOX_TENANT_QUEUE: '10', OUTBOUND_ALLOWLIST: '127.0.0.1' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    invoker = (await createApplication(server, { name: 'invoker', type: 'private', permissions: ['token:use'] })).key;
  });
  after(async () => {
    await sql?.end();
    await server?.stop();
    await receiver?.close();
  });

  it('one runs, ten wait, the twelfth gets 429 and records nothing', async () => {
    const gate = '/busy-gate';
    const release = receiver.hold(gate);
    const code = `module.exports = async () => { await fetch(${JSON.stringify(receiver.url(gate))}); return { raw: 'done' }; };`;
    const created = await call(server, 'POST', '/reactors', { key: server.key, body: { name: 'slow', code, configuration: {} } });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id;
    const react = () => call(server, 'POST', `/reactors/${id}/react`, { key: invoker, body: {} });

    const first = react();
    await until(() => receiver.at(gate).length === 1, 'the first run to reach the gate');
    // With the one run held, the queue has room for ten: of eleven more, exactly one is refused.
    const more = Array.from({ length: 11 }, () => {
      const entry: { res?: Awaited<ReturnType<typeof react>>; done: Promise<unknown> } = { done: Promise.resolve() };
      entry.done = react().then((res) => (entry.res = res));
      return entry;
    });
    await until(() => more.some((m) => m.res), 'a request past the queue to be answered');
    const refused = more.filter((m) => m.res);
    assert.equal(refused.length, 1);
    assert.equal(refused[0].res!.status, 429, refused[0].res!.text);
    assert.match(refused[0].res!.body.detail, /Too many reactor runs/);
    assert.equal(refused[0].res!.headers.get('retry-after'), '1');
    assert.equal(receiver.at(gate).length, 1, 'the queued runs wait for the one in progress');

    release();
    await Promise.all(more.map((m) => m.done));
    const answers = [await first, ...more.filter((m) => m !== refused[0]).map((m) => m.res!)];
    for (const res of answers) assert.equal(res.status, 200, res.text);
    const ran = answers.length;
    assert.equal(ran, 11);

    const counts = (await sql.query(
      `SELECT (SELECT count(*)::int FROM events WHERE entity_id::text = $1 AND type = 'reactor.invoked') AS invoked,
              (SELECT count(*)::int FROM events WHERE entity_id::text = $1 AND type = 'reactor.completed') AS completed,
              (SELECT count(*)::int FROM reactor_results WHERE reactor_id::text = $1) AS results`,
      [id],
    )).rows[0];
    assert.deepEqual(counts, { invoked: ran, completed: ran, results: ran }, 'only the runs that started left a trace');
  });

  it('a tenant whose share and queue are full delays no other tenant', async () => {
    const gate = '/fair-gate';
    const release = receiver.hold(gate);
    const code = `module.exports = async () => { await fetch(${JSON.stringify(receiver.url(gate))}); return { raw: 'done' }; };`;
    const slow = await call(server, 'POST', '/reactors', { key: server.key, body: { name: 'slow again', code, configuration: {} } });
    assert.equal(slow.status, 201, slow.text);
    const held = Array.from({ length: 11 }, () => call(server, 'POST', `/reactors/${slow.body.id}/react`, { key: invoker, body: {} }));
    await until(() => receiver.at(gate).length === 1, 'the first run to reach the gate');

    const other = await createOtherTenant(server);
    const quick = await call(server, 'POST', '/reactors', { key: other.api_key, body: { name: 'quick', code: 'module.exports = async () => ({ raw: 42 });', configuration: {} } });
    assert.equal(quick.status, 201, quick.text);
    const otherInvoker = (await createApplication(server, { name: 'other invoker', type: 'private', permissions: ['token:use'] }, other.api_key)).key;
    for (let i = 0; i < 3; i++) {
      const res = await call(server, 'POST', `/reactors/${quick.body.id}/react`, { key: otherInvoker, body: {} });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.raw, 42);
    }
    assert.equal(receiver.at(gate).length, 1, 'the first tenant still holds its one slot, its queue waiting');
    release();
    for (const res of await Promise.all(held)) assert.equal(res.status, 200, res.text);
  });
});

/**
 * A run under SVC-IDEMPOTENCY-KEY holds a pooled database connection (its request's
 * transaction) from before it is admitted until its reply: it never waits for a slot, and
 * such runs take at most half the pool, so slow code cannot starve everyone else's requests.
 */
describe('reactor runs under an idempotency key', () => {
  let receiver: Receiver;
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver?.close();
  });

  async function slowReactor(server: TestServer, gate: string): Promise<(key?: string) => Promise<Awaited<ReturnType<typeof call>>>> {
    const invoker = (await createApplication(server, { name: `invoker ${gate}`, type: 'private', permissions: ['token:use'] })).key;
    const code = `module.exports = async () => { await fetch(${JSON.stringify(receiver.url(gate))}); return { raw: 'done' }; };`;
    const created = await call(server, 'POST', '/reactors', { key: server.key, body: { name: `slow ${gate}`, code, configuration: {} } });
    assert.equal(created.status, 201, created.text);
    return (key) => call(server, 'POST', `/reactors/${created.body.id}/react`, { key: invoker, body: {}, headers: key ? { 'svc-idempotency-key': key } : {} });
  }

  it('do not wait for a busy slot: 429 at once, and the key is free for the retry', async () => {
    const server = await startTestServer({ SANDBOX_CONCURRENCY: '1', OUTBOUND_ALLOWLIST: '127.0.0.1' });
    try {
      const gate = '/idem-wait';
      const release = receiver.hold(gate);
      const react = await slowReactor(server, gate);
      const first = react();
      await until(() => receiver.at(gate).length === 1, 'the first run to reach the gate');
      const queued = react();
      let queuedAnswered = false;
      void queued.then(() => (queuedAnswered = true));
      const refused = await react('idem-busy-1');
      assert.equal(refused.status, 429, refused.text);
      assert.match(refused.body.detail, /SVC-IDEMPOTENCY-KEY does not wait/);
      assert.equal(refused.headers.get('retry-after'), '1');
      assert.equal(queuedAnswered, false, 'a run without a key still queues');
      release();
      assert.equal((await first).status, 200);
      assert.equal((await queued).status, 200);
      const retried = await react('idem-busy-1');
      assert.equal(retried.status, 200, retried.text);
      assert.deepEqual(retried.body.raw, 'done');
      assert.equal(retried.headers.get('svc-idempotent-replayed'), null, 'the refused attempt stored nothing');
    } finally {
      await server.stop();
    }
  });

  it('take at most half the pool\'s connections; runs without a key still get slots', async () => {
    const server = await startTestServer({ SANDBOX_CONCURRENCY: '4', SANDBOX_TENANT_CONCURRENCY: '4', DATABASE_POOL_SIZE: '2', OUTBOUND_ALLOWLIST: '127.0.0.1' });
    try {
      const gate = '/idem-pool';
      const release = receiver.hold(gate);
      const react = await slowReactor(server, gate);
      const holding = react('idem-pool-1');
      await until(() => receiver.at(gate).length === 1, 'the idempotent run to reach the gate');
      const refused = await react('idem-pool-2');
      assert.equal(refused.status, 429, refused.text);
      assert.match(refused.body.detail, /holds a database connection/);
      const plain = react();
      await until(() => receiver.at(gate).length === 2, 'a run without a key to start beside it');
      release();
      assert.equal((await holding).status, 200);
      assert.equal((await plain).status, 200);
    } finally {
      await server.stop();
    }
  });
});
