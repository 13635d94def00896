import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '../../src/logger.ts';
import { createServer } from '../../src/http/server.ts';
import { applyMergePatch, MERGE_PATCH, registerMergePatch } from '../../src/http/merge-patch.ts';
import { call } from '../helpers/http.ts';

describe('applyMergePatch', () => {
  it('follows every example of RFC 7386 appendix A', () => {
    const examples: [unknown, unknown, unknown][] = [
      [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
      [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
      [{ a: 'b' }, { a: null }, {}],
      [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
      [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
      [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
      [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
      [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
      [['a', 'b'], ['c', 'd'], ['c', 'd']],
      [{ a: 'b' }, ['c'], ['c']],
      [{ a: 'foo' }, null, null],
      [{ a: 'foo' }, 'bar', 'bar'],
      [{ e: null }, { a: 1 }, { e: null, a: 1 }],
      [[1, 2], { a: 'b', c: null }, { a: 'b' }],
      [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    ];
    for (const [target, patch, result] of examples) {
      assert.deepEqual(applyMergePatch(target, patch), result, `${JSON.stringify(target)} + ${JSON.stringify(patch)}`);
    }
  });

  it('deletes nested members with null, keeps the rest, and replaces arrays whole', () => {
    const target = {
      name: 'proxy',
      configuration: { a: '1', b: '2', nested: { keep: true, drop: 'x' } },
      tags: ['x', 'y', 'z'],
      count: 3,
    };
    const patch = { configuration: { b: null, c: '3', nested: { drop: null } }, tags: ['q'], count: null };
    assert.deepEqual(applyMergePatch(target, patch), {
      name: 'proxy',
      configuration: { a: '1', c: '3', nested: { keep: true } },
      tags: ['q'],
    });
  });

  it('does not change the target it was given', () => {
    const target = { a: { b: 1, c: [1, 2] }, d: 'x' };
    const copy = structuredClone(target);
    applyMergePatch(target, { a: { b: null, c: [3] }, d: null, e: { f: 1 } });
    assert.deepEqual(target, copy);
  });

  it('an empty patch changes nothing; a patch onto a scalar builds an object', () => {
    assert.deepEqual(applyMergePatch({ a: 1 }, {}), { a: 1 });
    assert.deepEqual(applyMergePatch('text', { a: 1, b: null }), { a: 1 });
    assert.deepEqual(applyMergePatch(undefined, { a: { b: 2 } }), { a: { b: 2 } });
  });

  it('treats __proto__ and constructor as ordinary member names', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}');
    const result = applyMergePatch<Record<string, unknown>>({ a: 1 }, patch);
    assert.equal(Object.getPrototypeOf(result), Object.prototype);
    assert.equal((result as { polluted?: unknown }).polluted, undefined);
    assert.equal(({} as { polluted?: unknown }).polluted, undefined);
    assert.deepEqual(Object.keys(result).sort(), ['__proto__', 'a', 'constructor']);
    assert.deepEqual(Object.getOwnPropertyDescriptor(result, '__proto__')?.value, { polluted: true });
    // And deleting them deletes only the own member.
    const cleared = applyMergePatch<Record<string, unknown>>(result, JSON.parse('{"__proto__": null, "constructor": null}'));
    assert.deepEqual(Object.keys(cleared), ['a']);
    assert.equal(Object.getPrototypeOf(cleared), Object.prototype);
  });
});

describe('PATCH content type', () => {
  let app: FastifyInstance;
  let url: string;
  const received: unknown[] = [];
  before(async () => {
    app = createServer(createLogger('silent'));
    registerMergePatch(app);
    app.patch('/things', { config: { access: 'public' } }, async (request) => {
      received.push(request.body);
      return { patched: applyMergePatch({ kept: 'yes', dropped: 'no' }, request.body) };
    });
    app.post('/things', { config: { access: 'public' } }, async (request) => ({ posted: request.body }));
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => app.close());

  it('handles application/merge-patch+json, with or without parameters', async () => {
    const res = await call(url, 'PATCH', '/things', { body: { dropped: null, added: 1 }, contentType: MERGE_PATCH });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { patched: { kept: 'yes', added: 1 } });
    const withCharset = await call(url, 'PATCH', '/things', { body: { added: 2 }, contentType: `${MERGE_PATCH}; charset=utf-8` });
    assert.equal(withCharset.status, 200, withCharset.text);
    assert.deepEqual(withCharset.body, { patched: { kept: 'yes', dropped: 'no', added: 2 } });
    const upper = await call(url, 'PATCH', '/things', { body: { added: 3 }, contentType: 'Application/Merge-Patch+JSON' });
    assert.equal(upper.status, 200, upper.text);
  });

  it('answers any other content type with 415 problem+json, before the handler runs', async () => {
    const handled = received.length;
    for (const contentType of ['application/json', 'text/plain', 'application/json-patch+json']) {
      const res = await call(url, 'PATCH', '/things', { body: { added: 1 }, contentType });
      assert.equal(res.status, 415, contentType);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(res.body.status, 415);
      assert.match(res.body.detail, /merge-patch/);
    }
    const none = await call(url, 'PATCH', '/things', { raw: '{"added":1}' });
    assert.equal(none.status, 415);
    assert.equal(received.length, handled);
  });

  it('leaves other methods alone', async () => {
    const res = await call(url, 'POST', '/things', { body: { a: 1 } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { posted: { a: 1 } });
  });

  it('rejects a merge patch that is not JSON, or that smuggles __proto__, with 400 on body', async () => {
    const bad = await call(url, 'PATCH', '/things', { raw: '{"added":', contentType: MERGE_PATCH });
    assert.equal(bad.status, 400);
    assert.ok(bad.body.errors.body);
    const proto = await call(url, 'PATCH', '/things', { raw: '{"__proto__":{"polluted":true}}', contentType: MERGE_PATCH });
    assert.equal(proto.status, 400, proto.text);
    assert.ok(proto.body.errors.body);
  });

  it('a PATCH to an unknown route is still a 404, not a 415', async () => {
    const res = await call(url, 'PATCH', '/nothing-here', { body: {}, contentType: 'application/json' });
    assert.equal(res.status, 404);
  });
});
