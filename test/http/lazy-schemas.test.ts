import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from 'typebox';
import { compileRouteSchemas, LazySchemas } from '../../src/http/lazy-schemas.ts';
import { createServer } from '../../src/http/server.ts';
import { createLogger } from '../../src/logger.ts';
import { call } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

describe('LazySchemas', () => {
  it('compiles a validator on its first call, once, and hands Fastify its errors', () => {
    const schemas = new LazySchemas();
    let compiled = 0;
    const failures = [{ instancePath: '/a', message: 'must be a string' }];
    const check = Object.assign((data: unknown) => {
      check.errors = typeof data === 'string' ? null : failures;
      return typeof data === 'string';
    }, { errors: null as unknown });
    const lazy = schemas.validator(() => {
      compiled++;
      return check as never;
    });
    assert.equal(compiled, 0);
    assert.equal(lazy(5), false);
    assert.deepEqual(lazy.errors, failures);
    assert.equal(lazy('x'), true);
    assert.equal(lazy.errors, null);
    assert.equal(compiled, 1);
    assert.equal(schemas.compileAll(), 0, 'nothing is left to compile');
  });

  it('compileAll compiles what no call has yet, and a schema that cannot compile fails it', () => {
    const schemas = new LazySchemas();
    let compiled = 0;
    schemas.validator(() => {
      compiled++;
      return (() => true) as never;
    });
    assert.equal(schemas.compileAll(), 1);
    assert.equal(compiled, 1);
    schemas.validator(() => {
      throw new Error('schema is invalid: unknown keyword');
    });
    assert.throws(() => schemas.compileAll(), /schema is invalid/);
  });
});

describe('route schemas compiled on first use', () => {
  it('a response schema still shapes the answer, and validation still names the field', async () => {
    const app = createServer(createLogger('silent'));
    app.post('/shaped', {
      config: { access: 'public' },
      schema: {
        body: Type.Object({ name: Type.String() }),
        response: { 200: Type.Object({ name: Type.String(), count: Type.Integer() }) },
      },
    }, async (request) => ({ name: (request.body as { name: string }).name, count: 2, secret: 'not in the schema' }));
    await app.ready();
    try {
      // One validator (the body) and one serializer (200) were declared; none compiled yet.
      const shaped = await app.inject({ method: 'POST', url: '/shaped', payload: { name: 'a' } });
      assert.equal(shaped.statusCode, 200);
      assert.deepEqual(shaped.json(), { name: 'a', count: 2 });
      const refused = await app.inject({ method: 'POST', url: '/shaped', payload: { name: 5 } });
      assert.equal(refused.statusCode, 400);
      assert.match(refused.headers['content-type'] as string, /^application\/problem\+json/);
      assert.deepEqual(refused.json().errors, { 'body.name': ['must be a string'] });
      assert.equal(compileRouteSchemas(app), 0, 'both were compiled by the requests');
    } finally {
      await app.close();
    }
  });

  describe('in the whole service', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer();
    });
    after(() => server.stop());

    it('a route’s first request that fails validation is answered as any other', async () => {
      const res = await call(server, 'POST', '/applications', { key: server.key, body: { name: 5, type: 'private' } });
      assert.equal(res.status, 400, res.text);
      assert.deepEqual(res.body.errors['body.name'], ['must be a string']);
    });

    it('every route’s schemas compile', () => {
      const compiled = compileRouteSchemas(server.running.app);
      // Every route has a validator or a serializer for some part: the service has hundreds (943 when this was written).
      assert.ok(compiled > 200, `compiled ${compiled}`);
      assert.equal(compileRouteSchemas(server.running.app), 0);
    });
  });
});
