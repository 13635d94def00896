import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { createLogger } from '../../src/logger.ts';
import { createServer } from '../../src/http/server.ts';
import { ApiError, FieldErrorList, toApiError } from '../../src/http/errors.ts';
import { MapOf } from '../../src/http/schemas.ts';
import { call, type Response } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

function assertProblem(res: Response, status: number): void {
  assert.equal(res.status, status, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, status);
  assert.equal(res.body.type, 'about:blank');
  assert.equal(typeof res.body.title, 'string');
  assert.ok(res.body.title.length > 0);
  assert.equal(typeof res.body.detail, 'string');
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
}

describe('error responses of the service', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.stop());

  const valid = { name: 'errors', type: 'private', permissions: ['token:read'] };

  it('an unknown route is a 404 problem', async () => {
    for (const [method, path] of [['GET', '/nope'], ['POST', '/applications/x/y/z'], ['DELETE', '/logs']]) {
      const res = await call(server, method, path, { key: server.key });
      assertProblem(res, 404);
    }
  });

  it('invalid JSON is a 400 on body', async () => {
    for (const raw of ['{"name":', '{name: "x"}', "{'a':1}", '[1,]']) {
      const res = await call(server, 'POST', '/applications', { key: server.key, raw, contentType: 'application/json' });
      assertProblem(res, 400);
      assert.ok(res.body.errors.body, raw);
    }
  });

  it('JSON that carries __proto__ or constructor.prototype is a 400 on body', async () => {
    for (const raw of [
      JSON.stringify(valid).replace('{', '{"__proto__":{"polluted":true},'),
      JSON.stringify(valid).replace('{', '{"rules":[{"__proto__":{"x":1}}],'),
      JSON.stringify(valid).replace('{', '{"constructor":{"prototype":{"polluted":true}},'),
    ]) {
      const res = await call(server, 'POST', '/applications', { key: server.key, raw, contentType: 'application/json' });
      assertProblem(res, 400);
      assert.ok(res.body.errors.body, raw);
      // Valid JSON: the answer says which keys are refused, not that the JSON is broken.
      assert.match(res.body.detail, /"__proto__" key, or a "constructor" object with a "prototype" key/, raw);
    }
    assert.equal(({} as { polluted?: unknown }).polluted, undefined);
  });

  it('JSON that does not parse is a 400 saying where, without quoting the text', async () => {
    const table: [string, RegExp][] = [
      ['{"name": "x",}', /not valid JSON: unexpected text at line 1, column 14\./],
      ['{\n  "name": "4111111111111111"\n  "type": "private"\n}', /not valid JSON: unexpected text at line 3, column 3\./],
      ['{"name":', /not valid JSON: it ends before its value is complete\./],
      ['4111111111111111x', /^The body is not valid JSON/],
    ];
    for (const [raw, detail] of table) {
      const res = await call(server, 'POST', '/applications', { key: server.key, raw, contentType: 'application/json' });
      assertProblem(res, 400);
      assert.match(res.body.detail, detail, raw);
      assert.deepEqual(res.body.errors.body, [res.body.detail]);
      assert.ok(!res.text.includes('4111111111111111'), 'the body text is never quoted back');
    }
  });

  it('schema failures name every field', async () => {
    const res = await call(server, 'POST', '/applications', { key: server.key, body: { type: 'nope', permissions: 'token:read', rules: [{ priority: 0 }] } });
    assertProblem(res, 400);
    for (const field of ['body.name', 'body.type', 'body.permissions', 'body.rules[0].priority', 'body.rules[0].permissions']) {
      assert.ok(res.body.errors[field]?.length, `${field} in ${JSON.stringify(res.body.errors)}`);
    }
    // A type error is said in words, nullable types too (Ajv's own is "must be object,null").
    assert.deepEqual(res.body.errors['body.permissions'], ['must be an array']);
    const nullable = await call(server, 'POST', '/reactors', { key: server.key, body: { name: 'n', code: 'module.exports = () => ({})', configuration: {}, application: 5 } });
    assertProblem(nullable, 400);
    assert.deepEqual(nullable.body.errors['body.application'], ['must be an object or null']);
    const params = await call(server, 'GET', '/applications/not-a-uuid', { key: server.key });
    assertProblem(params, 400);
    assert.ok(params.body.errors['params.id']);
  });

  it('an empty or missing body where one is required is a 400', async () => {
    const empty = await call(server, 'POST', '/applications', { key: server.key, raw: '', contentType: 'application/json' });
    assertProblem(empty, 400);
    const none = await call(server, 'POST', '/applications', { key: server.key });
    assertProblem(none, 400);
  });

  it('a body over 1 MB is a 413', async () => {
    const raw = JSON.stringify({ ...valid, name: 'x'.repeat(1_100_000) });
    const res = await call(server, 'POST', '/applications', { key: server.key, raw, contentType: 'application/json' });
    assertProblem(res, 413);
    // Just under the limit is parsed (and then rejected by the schema for the long name).
    const under = JSON.stringify({ ...valid, name: 'x'.repeat(1_000_000) });
    const ok = await call(server, 'POST', '/applications', { key: server.key, raw: under, contentType: 'application/json' });
    assertProblem(ok, 400);
    assert.ok(ok.body.errors['body.name']);
  });

  it('an unsupported content type on POST is a 415', async () => {
    const res = await call(server, 'POST', '/applications', { key: server.key, raw: 'name=x', contentType: 'application/x-www-form-urlencoded' });
    assertProblem(res, 415);
  });

  it('authentication runs before the body is parsed: no key and bad JSON is a 401', async () => {
    const res = await call(server, 'POST', '/applications', { raw: '{bad', contentType: 'application/json' });
    assertProblem(res, 401);
  });
});

describe('unexpected errors', () => {
  let app: FastifyInstance;
  let url: string;
  before(async () => {
    app = createServer(createLogger('silent'));
    app.get('/boom', { config: { access: 'public' } }, async () => {
      throw new Error('connection to db-internal.example:5432 failed for user coffer_admin');
    });
    app.get('/boom-coded', { config: { access: 'public' } }, async () => {
      throw Object.assign(new Error('SELECT secret FROM vault'), { code: '42P01', statusCode: 500 });
    });
    app.get('/db-down', { config: { access: 'public' } }, async () => {
      throw Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:5432'), { code: 'ECONNREFUSED' });
    });
    app.get('/db-pool-timeout', { config: { access: 'public' } }, async () => {
      throw new Error('timeout exceeded when trying to connect');
    });
    app.get('/db-shutdown', { config: { access: 'public' } }, async () => {
      throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    });
    app.get('/typed', { config: { access: 'public' } }, async () => {
      throw new ApiError(422, 'The refund is above the balance.', { 'body.amount': ['too much'] });
    });
    app.get('/conflict', { config: { access: 'public' } }, async () => {
      throw ApiError.conflict('Already exists.');
    });
    app.post('/echo', { config: { access: 'public' }, schema: { body: Type.Object({ n: Type.Integer() }) } }, async (request) => request.body);
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => app.close());

  it('become a 500 with a request id and nothing of the cause', async () => {
    for (const path of ['/boom', '/boom-coded']) {
      const res = await call(url, 'GET', path, { headers: { 'x-request-id': `req-${path.slice(1)}` } });
      assertProblem(res, 500);
      assert.equal(res.body.request_id, `req-${path.slice(1)}`);
      assert.deepEqual(Object.keys(res.body).sort(), ['detail', 'request_id', 'status', 'title', 'type']);
      assert.doesNotMatch(res.text, /db-internal|coffer_admin|5432|SELECT|vault|42P01|stack/);
    }
  });

  it('a database that cannot be reached is a 503 to retry, with Retry-After and nothing of the cause', async () => {
    for (const path of ['/db-down', '/db-pool-timeout', '/db-shutdown']) {
      const res = await call(url, 'GET', path);
      assertProblem(res, 503);
      assert.equal(res.headers.get('retry-after'), '1');
      assert.match(res.body.detail, /retry/);
      assert.doesNotMatch(res.text, /10\.1\.2\.3|5432|ECONNREFUSED|57P01|administrator/);
    }
  });

  it('a request without an id gets a fresh one, echoed in the header and the body', async () => {
    const a = await call(url, 'GET', '/boom');
    const b = await call(url, 'GET', '/boom');
    assert.match(a.body.request_id, /^[0-9a-f-]{36}$/);
    assert.notEqual(a.body.request_id, b.body.request_id);
    // An unusable request id is replaced rather than echoed.
    const odd = await call(url, 'GET', '/boom', { headers: { 'x-request-id': 'has spaces <and> tags' } });
    assert.notEqual(odd.body.request_id, 'has spaces <and> tags');
    assert.match(odd.body.request_id, /^[0-9a-f-]{36}$/);
  });

  it('ApiErrors keep their status, detail and field errors', async () => {
    const res = await call(url, 'GET', '/typed');
    assertProblem(res, 422);
    assert.equal(res.body.title, 'Unprocessable Content');
    assert.equal(res.body.detail, 'The refund is above the balance.');
    assert.deepEqual(res.body.errors, { 'body.amount': ['too much'] });
    const conflict = await call(url, 'GET', '/conflict');
    assertProblem(conflict, 409);
    assert.equal(conflict.body.errors, undefined);
  });

  it('body validation does not coerce types', async () => {
    const res = await call(url, 'POST', '/echo', { body: { n: '5' } });
    assertProblem(res, 400);
    assert.ok(res.body.errors['body.n']);
    const ok = await call(url, 'POST', '/echo', { body: { n: 5 } });
    assert.deepEqual(ok.body, { n: 5 });
  });
});

describe('field paths of schema failures', () => {
  let app: FastifyInstance;
  let url: string;
  before(async () => {
    app = createServer(createLogger('silent'));
    // Any keys, each an integer, or a map or list of integers: keys of every kind reach a path.
    const Leaf = { type: ['integer', 'object', 'array'], additionalProperties: { type: 'integer' }, items: { type: 'integer' } };
    app.post('/any', { config: { access: 'public' }, schema: { body: MapOf(Type.Unsafe(Leaf)) } }, async () => ({}));
    app.post('/closed', { config: { access: 'public' }, schema: { body: Type.Object({ n: Type.Integer() }, { additionalProperties: false }) } }, async () => ({}));
    const query = Type.Object({ id: Type.Array(Type.Integer(), { default: [] }) }, { patternProperties: { '^m\\.': Type.String({ maxLength: 1 }) } });
    app.get('/query', { config: { access: 'public' }, schema: { querystring: query } }, async () => ({}));
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => app.close());

  it('quote every key that is not a plain name, and tell indexes from keys made of digits', async () => {
    const res = await call(url, 'POST', '/any', {
      body: { plain: 'x', 'a.b': 'x', a: { b: 'x' }, '': 'x', '123': 'x', list: [1, 'x'], map: { '0': 'x', 'c.d': 'x' }, 'a~/b': 'x', 'line\nbreak': 'x' },
    });
    assertProblem(res, 400);
    assert.deepEqual(Object.keys(res.body.errors).sort(), [
      'body[""]',
      'body["123"]',
      'body["a.b"]',
      'body["a~/b"]',
      'body["line\\nbreak"]',
      'body.a.b',
      'body.list[1]',
      'body.map["0"]',
      'body.map["c.d"]',
      'body.plain',
    ].sort());
  });

  it('name an unknown or missing property the same way', async () => {
    const res = await call(url, 'POST', '/closed', { body: { 'x.y': 1, '7': 2 } });
    assertProblem(res, 400);
    assert.deepEqual(res.body.errors, { 'body.n': ['is required'], 'body["7"]': ['is not a known property'], 'body["x.y"]': ['is not a known property'] });
  });

  it('in the query string too', async () => {
    const res = await call(url, 'GET', `/query?${new URLSearchParams([['id', 'x'], ['m.k', 'long']])}`);
    assertProblem(res, 400);
    assert.deepEqual(Object.keys(res.body.errors).sort(), ['query.id[0]', 'query["m.k"]']);
  });
});

describe('error helpers', () => {
  it('FieldErrorList collects every message per field', () => {
    const list = new FieldErrorList();
    assert.equal(list.empty, true);
    list.throwIfAny();
    list.add('body.a', 'one');
    list.add('body.a', 'two');
    list.add('body.b', 'three');
    assert.throws(() => list.throwIfAny(), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 400);
      assert.deepEqual(err.errors, { 'body.a': ['one', 'two'], 'body.b': ['three'] });
      return true;
    });
  });

  it('toApiError leaves unknown errors to the 500 path', () => {
    assert.equal(toApiError(new Error('x')), undefined);
    assert.equal(toApiError(Object.assign(new Error('x'), { statusCode: 503 })), undefined);
    assert.equal(toApiError('a string'), undefined);
    assert.equal(toApiError(undefined), undefined);
    const e = ApiError.notFound('widget');
    assert.equal(toApiError(e), e);
    assert.equal(toApiError(Object.assign(new Error('too big'), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' }))?.status, 413);
  });
});

describe('a client that trickles its request', () => {
  it('is answered 408 and disconnected once the request timeout passes', async () => {
    const app = createServer(createLogger('silent'), { requestTimeoutMs: 500 });
    app.post('/slow', { config: { access: 'public' } }, async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as net.AddressInfo;
      const socket = net.connect(port, '127.0.0.1');
      const started = Date.now();
      let answer = '';
      // A byte every 200 ms: never idle, never done; until the answer comes, since a byte written
      // after the server has closed its end is answered with a reset, and the socket's error.
      const drip = setInterval(() => socket.write(' '), 200);
      socket.on('data', (chunk) => {
        clearInterval(drip);
        answer += chunk.toString();
      });
      socket.on('error', () => clearInterval(drip));
      socket.write('POST /slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');
      await new Promise((resolve) => socket.on('close', resolve));
      clearInterval(drip);
      const took = Date.now() - started;
      assert.ok(took >= 450 && took < 5000, `closed after ${took} ms`);
      assert.match(answer, /^HTTP\/1\.1 408/);
    } finally {
      await app.close();
    }
  });
});
