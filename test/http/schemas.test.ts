import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../../src/http/errors.ts';
import { MapOf, StringMap } from '../../src/http/schemas.ts';
import { createServer } from '../../src/http/server.ts';
import { compileValidator } from '../../src/http/validate.ts';
import { createLogger } from '../../src/logger.ts';
import { call } from '../helpers/http.ts';

/** Keys a `.` in a regular expression does not match: each must be checked and kept like any other. */
const LINE_BREAK_KEYS = ['a\nb', 'a\rb', 'a\u2028b', 'a\u2029b', '\n'];

function fieldErrors(fn: () => unknown): Record<string, string[]> {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    return err.errors ?? {};
  }
  assert.fail('expected a validation error');
}

describe('StringMap and MapOf', () => {
  const validate = compileValidator<Record<string, string>>(StringMap({ minLength: 1, maxLength: 5 }, Type.String({ maxLength: 3 })));

  it('checks the value under every key, line breaks included', () => {
    for (const key of LINE_BREAK_KEYS) {
      assert.deepEqual(validate({ [key]: 'ok' }, 'body'), { [key]: 'ok' }, JSON.stringify(key));
      // Quoted in the path, as JSON quotes it: a key with a line break is no plain name.
      const field = `body[${JSON.stringify(key)}]`;
      assert.deepEqual(fieldErrors(() => validate({ [key]: 5 }, 'body')), { [field]: ['must be a string'] }, JSON.stringify(key));
      assert.ok(fieldErrors(() => validate({ [key]: 'long' }, 'body'))[field], JSON.stringify(key));
    }
  });

  it('checks each key against its limits, naming it', () => {
    assert.deepEqual(fieldErrors(() => validate({ toolong: 'x' }, 'body')), { body: ['has a key "toolong" that must be at most 5 characters'] });
    assert.deepEqual(fieldErrors(() => validate({ '': 'x' }, 'body')), { body: ['has a key "" that must not be empty'] });
  });

  describe('in a response', () => {
    let app: FastifyInstance;
    let url: string;
    const sent = Object.fromEntries([...LINE_BREAK_KEYS, 'plain', 'with.dot', ''].map((k, i) => [k, `v${i}`]));
    before(async () => {
      app = createServer(createLogger('silent'));
      const response = { 200: Type.Object({ map: MapOf(Type.String()) }) };
      app.get('/map', { config: { access: 'public' }, schema: { response } }, async () => ({ map: sent }));
      url = await app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(() => app.close());

    it('keeps every entry, whatever its key holds', async () => {
      const res = await call(url, 'GET', '/map');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { map: sent });
    });
  });
});
