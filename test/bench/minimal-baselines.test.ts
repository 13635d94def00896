import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createMinimalProxy } from '../../bench/minimal-proxy.ts';
import { AUDIT_TABLE, createMinimalReact, type MinimalReact } from '../../bench/minimal-react.ts';
import { createTokenWork, TOKEN_AUDIT_TABLE, type TokenWork } from '../../bench/minimal-token-work.ts';
import { suiteDatabase } from '../helpers/server.ts';

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('proxy.minimal', () => {
  let seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  /** Lets the destination finish its streamed answer. */
  let finish: () => void = () => {};
  const destination = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/plain', 'x-answer': 'yes' });
        res.write('first ');
        finish = () => res.end('last');
      } else {
        res.writeHead(201, { 'content-type': req.headers['content-type'] ?? 'text/plain', connection: 'keep-alive' });
        res.end(Buffer.concat(chunks));
      }
    });
  });
  let proxy: http.Server;
  let url: string;

  before(async () => {
    proxy = createMinimalProxy(await listen(destination));
    url = await listen(proxy);
  });
  after(async () => {
    proxy.closeAllConnections();
    destination.closeAllConnections();
    await Promise.all([new Promise((r) => proxy.close(r)), new Promise((r) => destination.close(r))]);
  });

  it('forwards the method, path with its query, end-to-end headers and body; answers with the status, headers and body', async () => {
    seen = [];
    const res = await fetch(`${url}/echo/a?b=1`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-caller': 'c', 'svc-api-key': 'k' },
      body: '{"amount":1000}',
    });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(await res.text(), '{"amount":1000}');
    assert.equal(seen.length, 1);
    assert.equal(seen[0].method, 'PUT');
    assert.equal(seen[0].url, '/echo/a?b=1');
    assert.equal(seen[0].headers['x-caller'], 'c');
    assert.equal(seen[0].headers['svc-api-key'], 'k');
    assert.equal(seen[0].headers['content-length'], '15');
    assert.equal(seen[0].body, '{"amount":1000}');
    // The host is the destination's, not the proxy's.
    assert.equal(seen[0].headers.host, `127.0.0.1:${(destination.address() as AddressInfo).port}`);
  });

  it('streams the answer: its first bytes arrive before the destination has finished it', async () => {
    const res = await fetch(`${url}/stream`);
    assert.equal(res.headers.get('x-answer'), 'yes');
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.equal(Buffer.from(first.value!).toString(), 'first ');
    finish();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    assert.equal(rest, 'last');
  });
});

describe('react.minimal', () => {
  const database = suiteDatabase(2);
  let minimal: MinimalReact;
  // Proves where it runs: an isolate has no process or require, and args arrive as copied data.
  const code = 'module.exports = async (req) => ({ raw: { host: typeof process + typeof require, n: req.args.n + 1 } })';

  before(async () => {
    minimal = await createMinimalReact({ code, db: { connectionString: databaseUrl() }, logLevel: 'silent' });
  });
  after(async () => {
    await minimal?.close();
  });

  /** The suite database's URL, read from the pool's settings. */
  function databaseUrl(): string {
    const o = database.db.pool.options as { connectionString?: string };
    return o.connectionString!;
  }

  it('runs the code in a sandbox process\'s isolate and commits one audit row before it answers', async () => {
    const { rows: [{ count: before }] } = await database.db.pool.query(`SELECT count(*)::int AS count FROM ${AUDIT_TABLE}`);
    const res = await minimal.app.inject({ method: 'POST', url: '/react', payload: { args: { n: 41 } } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { raw: { host: 'undefinedundefined', n: 42 } });
    const { rows } = await database.db.pool.query(`SELECT entity_type, operation, message FROM ${AUDIT_TABLE}`);
    assert.equal(rows.length, before + 1);
    assert.equal(rows.at(-1).operation, 'react');
    assert.match(rows.at(-1).message, /^Reactor invoked \(request [0-9a-f-]{36}\)$/);
  });
});

describe('proxy.minimal_token', () => {
  const database = suiteDatabase(2);
  const card = { number: '4242424242424242', expiration_month: 7, expiration_year: 2031, cvc: '123' };
  let seen: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const destination = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.concat(chunks));
    });
  });
  let work: TokenWork;
  let proxy: http.Server;
  let url: string;

  before(async () => {
    const db = { connectionString: (database.db.pool.options as { connectionString?: string }).connectionString };
    work = await createTokenWork({ db, ids: ['tok_one', 'tok_two'], card });
    proxy = createMinimalProxy(await listen(destination), work);
    url = await listen(proxy);
  });
  after(async () => {
    proxy?.closeAllConnections();
    destination.closeAllConnections();
    await Promise.all([new Promise((r) => proxy?.close(r)), new Promise((r) => destination.close(r))]);
    await work?.close();
  });

  const auditRows = async (): Promise<{ entity_id: string; operation: string }[]> =>
    (await database.db.pool.query(`SELECT entity_id, operation FROM ${TOKEN_AUDIT_TABLE} ORDER BY created_at, entity_id`)).rows;

  it('forwards the body with the token\'s data in place of its expressions, and commits one audit row per token before', async () => {
    const before = (await auditRows()).length;
    seen = [];
    const body = JSON.stringify({ amount: 5, card: { number: "{{ tok_two | json: '$.number' }}", expiration: "{{ tok_two | card_exp: 'MM/YY' }}" } });
    const res = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(res.status, 200);
    const forwarded = { amount: 5, card: { number: '4242424242424242', expiration: '07/31' } };
    assert.deepEqual(await res.json(), forwarded);
    assert.equal(seen[0].headers['content-length'], String(JSON.stringify(forwarded).length));
    const rows = await auditRows();
    assert.equal(rows.length, before + 1);
    assert.deepEqual(rows.at(-1), { entity_id: 'tok_two', operation: 'use' });
  });

  it('gives concurrent calls, which share their reads and audit writes, each its own token and one audit row each', async () => {
    const before = (await auditRows()).length;
    const ids = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 'tok_one' : 'tok_two'));
    const answers = await Promise.all(
      ids.map(async (id, i) => {
        const body = JSON.stringify({ n: i, token: id, last4: `{{ ${id} | json: '$.number' }}` });
        const res = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        return res.json();
      }),
    );
    answers.forEach((a, i) => assert.deepEqual(a, { n: i, token: ids[i], last4: card.number }));
    const rows = (await auditRows()).slice(before);
    assert.equal(rows.length, 20);
    assert.deepEqual(rows.map((r) => r.entity_id).sort(), [...ids].sort());
  });

  it('forwards a body without expressions as it came, and refuses an unknown token without writing anything', async () => {
    const before = (await auditRows()).length;
    const plain = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":5}' });
    assert.equal(await plain.text(), '{"amount":5}');
    const unknown = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: "{{ tok_nope | json: '$.number' }}" }) });
    assert.equal(unknown.status, 502);
    assert.equal((await auditRows()).length, before);
  });
});

describe('react.minimal_token', () => {
  const database = suiteDatabase(2);
  const card = { number: '4111111111111111', expiration_month: 3, expiration_year: 2032, cvc: '123' };
  const code = 'module.exports = async (req) => ({ raw: { last4: req.args.card.number.slice(-4), month: req.args.card.expiration_month, other: req.args.other } })';
  let work: TokenWork;
  let minimal: MinimalReact;

  before(async () => {
    const db = { connectionString: (database.db.pool.options as { connectionString?: string }).connectionString };
    work = await createTokenWork({ db, ids: ['tok_a', 'tok_b'], card });
    minimal = await createMinimalReact({ code, db, tokens: work, logLevel: 'silent' });
  });
  after(async () => {
    await minimal?.close();
  });

  const count = async (table: string): Promise<number> => (await database.db.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;

  it('runs the code with the card in place of `{{ id }}`, after one committed token audit row, then the reactor\'s', async () => {
    const [tokenRows, reactRows] = [await count(TOKEN_AUDIT_TABLE), await count(AUDIT_TABLE)];
    const res = await minimal.app.inject({ method: 'POST', url: '/react', payload: { args: { card: '{{ tok_b }}', other: 'kept' } } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { raw: { last4: '1111', month: 3, other: 'kept' } });
    assert.equal(await count(TOKEN_AUDIT_TABLE), tokenRows + 1);
    assert.equal(await count(AUDIT_TABLE), reactRows + 1);
    const { rows } = await database.db.pool.query(`SELECT entity_id, operation FROM ${TOKEN_AUDIT_TABLE} ORDER BY created_at DESC LIMIT 1`);
    assert.deepEqual(rows[0], { entity_id: 'tok_b', operation: 'use' });
  });

  it('refuses an unknown token before running anything or writing any row', async () => {
    const [tokenRows, reactRows] = [await count(TOKEN_AUDIT_TABLE), await count(AUDIT_TABLE)];
    const res = await minimal.app.inject({ method: 'POST', url: '/react', payload: { args: { card: '{{ tok_nope }}' } } });
    assert.equal(res.statusCode, 422);
    assert.match(res.json().detail, /tok_nope not found/);
    assert.equal(await count(TOKEN_AUDIT_TABLE), tokenRows);
    assert.equal(await count(AUDIT_TABLE), reactRows);
  });
});
