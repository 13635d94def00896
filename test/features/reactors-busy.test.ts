import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication } from '../helpers/http.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

/**
 * REACTOR_CONCURRENCY: runs past it wait (up to ten times as many), and past that they are
 * turned away with 429 before anything starts — no request id, no events, no stored result.
 */
describe('reactor runs past REACTOR_CONCURRENCY', () => {
  let server: TestServer;
  let sql: pg.Client;
  let receiver: Receiver;
  let invoker: string;

  before(async () => {
    receiver = await startReceiver();
    server = await startTestServer({ REACTOR_CONCURRENCY: '1', OUTBOUND_ALLOWLIST: '127.0.0.1' });
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
});
