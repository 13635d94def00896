import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { redactUrl } from '../../src/logger.ts';
import { call, createApplication, type Response } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Regressions for what `npm run test:fuzz` found, pinned as plain cases so `npm test` keeps
 * them fixed: each was a 5xx, a non-problem answer, an amplified response or a leaked key.
 */

function assertProblem(res: Response, status: number, field?: string): void {
  assert.equal(res.status, status, res.text.slice(0, 300));
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, status);
  if (field) assert.ok(res.body.errors?.[field], `errors names ${field}: ${res.text.slice(0, 300)}`);
}

/** A request exactly as written: fetch refuses oversized headers and normalises paths. */
function raw(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<Response> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) for (const x of [v ?? []].flat()) h.append(k, x);
        resolve({ status: res.statusCode!, headers: h, body: /json/.test(h.get('content-type') ?? '') ? JSON.parse(text) : undefined, text });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('hostile input', () => {
  let server: TestServer;
  let writer: string;
  let publicKey: string;
  before(async () => {
    server = await startTestServer();
    publicKey = (await createApplication(server, { name: 'web', type: 'public', permissions: [], rules: [{ priority: 1, container: '/', permissions: ['token:create'] }] })).key;
    writer = (await createApplication(server, { name: 'writer', type: 'private', permissions: [], rules: [{ priority: 1, container: '/', permissions: ['token:create', 'token:read', 'token:update', 'token:use', 'token:search'] }] })).key;
  });
  after(() => server?.stop());

  it('headers over the size limit get a 431 problem, not Fastify\'s plain JSON', async () => {
    assertProblem(await raw(server.url, 'GET', '/tenants/self', { 'svc-api-key': server.key, 'x-filler': 'f'.repeat(20_000) }), 431);
  });

  it('a malformed percent-encoding in the path is a 400 naming the path; an overlong segment a 414', async () => {
    assertProblem(await raw(server.url, 'GET', '/applications/%zz', { 'svc-api-key': server.key }), 400, 'path');
    const long = await raw(server.url, 'GET', `/applications/${'a'.repeat(600)}`, { 'svc-api-key': server.key });
    assertProblem(long, 414);
    assert.ok(!long.text.includes('a'.repeat(600)), 'the path is not echoed back');
  });

  it('bodies nested deeper than 128 levels are 400 on every JSON route, with or without an idempotency key', async () => {
    const deep = '[{"a":'.repeat(5000) + 'null' + '}]'.repeat(5000);
    for (const [path, key] of [['/tokenize', writer], ['/sessions', publicKey], ['/applications', server.key]] as const) {
      for (const headers of [{}, { 'svc-idempotency-key': 'deep-1' }] as Record<string, string>[]) {
        assertProblem(await call(server, 'POST', path, { key, raw: deep, contentType: 'application/json', headers }), 400, 'body');
      }
    }
    const proxy = await call(server, 'POST', '/proxies', { key: server.key, body: { name: 'p', destination_url: 'https://example.com' } });
    const patch = await call(server, 'PATCH', `/proxies/${proxy.body.id}`, {
      key: server.key, raw: `{"destination_url":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`, contentType: 'application/merge-patch+json',
    });
    assertProblem(patch, 400, 'body');
  });

  it('U+0000 and unpaired surrogates are 400 naming the field, in bodies, query strings and reactor results', async () => {
    assertProblem(await call(server, 'POST', '/webhooks', { key: server.key, body: { name: 'a\u0000b', url: 'https://example.com', events: ['*'] } }), 400, 'body.name');
    assertProblem(await call(server, 'POST', '/tokens', { key: writer, raw: '{"type":"token","data":"x","metadata":{"k":"x\\udbffy"}}', contentType: 'application/json' }), 400, 'body.metadata.k');
    assertProblem(await call(server, 'GET', '/reactors?name=a%00b', { key: server.key }), 400, 'query.name');
    const reactor = await call(server, 'POST', '/reactors', {
      key: server.key,
      body: { name: 'nul', code: "module.exports = async () => ({ tokenize: { t: { type: 'token', data: 'x', metadata: { k: 'a\\u0000b' } } } });", configuration: {} },
    });
    const res = await call(server, 'POST', `/reactors/${reactor.body.id}/react`, { key: writer, body: {} });
    assert.equal(res.status, 422, res.text);
  });

  it('a search query with non-ASCII whitespace is answered, not an endless loop', async () => {
    for (const query of ['\u2028\u2029', 'a\u00a0b', '\u000b', 'type:card\u3000OR\u3000id:x']) {
      const res = await call(server, 'POST', '/v2/tokens/search', { key: writer, body: { query } });
      assert.ok(res.status === 200 || res.status === 400, `${JSON.stringify(query)}: ${res.status} ${res.text.slice(0, 200)}`);
    }
  });

  it('a huge invalid array answers at most 100 field errors, quickly', async () => {
    const started = performance.now();
    const res = await call(server, 'POST', '/webhooks', { key: server.key, body: { name: 'w', url: 'https://example.com', events: Array(100_000).fill(1) } });
    assertProblem(res, 400);
    assert.ok(Object.keys(res.body.errors).length <= 100, `${Object.keys(res.body.errors).length} fields`);
    assert.ok(res.text.length < 50_000, `${res.text.length} bytes`);
    assert.ok(performance.now() - started < 2_000);
  });

  it('a reactor can be replaced and patched through an upper-case spelling of its id', async () => {
    const body = { name: 'r', code: 'module.exports = async () => ({})', configuration: { a: 'b' } };
    const created = await call(server, 'POST', '/reactors', { key: server.key, body });
    const upper = created.body.id.toUpperCase();
    assert.equal((await call(server, 'PUT', `/reactors/${upper}`, { key: server.key, body: { ...body, name: 'r2' } })).status, 200);
    assert.equal((await call(server, 'PATCH', `/reactors/${upper}`, { key: server.key, body: { name: 'r3' }, contentType: 'application/merge-patch+json' })).status, 204);
    const read = await call(server, 'GET', `/reactors/${created.body.id}`, { key: server.key });
    assert.equal(read.status, 200);
    assert.deepEqual([read.body.name, read.body.configuration], ['r3', { a: 'b' }]);
  });

  it('a proxy key in the query is redacted from logged URLs however its name is spelled', () => {
    for (const url of ['/proxy?svc-proxy-key=SECRET', '/proxy?x=1&SVC-PROXY-KEY=SECRET', '/proxy?svc%2Dproxy%2Dkey=SECRET', '/proxy/??svc-proxy-key=SECRET&a=%zz', '/proxy?svc-proxy-ke%79=SECRET']) {
      assert.ok(!redactUrl(url).includes('SECRET'), `${url} → ${redactUrl(url)}`);
    }
    assert.equal(redactUrl('/proxy/a?x=1&y=2'), '/proxy/a?x=1&y=2');
  });
});
