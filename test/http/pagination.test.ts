import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cursorPage, decodeCursor, encodeCursor, offsetOf, offsetPage } from '../../src/http/pagination.ts';
import { ApiError } from '../../src/http/errors.ts';
import { call, createApplication } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

describe('pagination helpers', () => {
  it('turns page and size into limit and offset', () => {
    assert.deepEqual(offsetOf({ page: 1, size: 20 }), { limit: 20, offset: 0 });
    assert.deepEqual(offsetOf({ page: 3, size: 7 }), { limit: 7, offset: 14 });
  });

  it('counts pages, rounding up, and zero pages for nothing', () => {
    assert.deepEqual(offsetPage(['a'], 41, { page: 3, size: 20 }).pagination, { total_items: 41, page_number: 3, page_size: 20, total_pages: 3 });
    assert.deepEqual(offsetPage([], 0, { page: 1, size: 20 }).pagination, { total_items: 0, page_number: 1, page_size: 20, total_pages: 0 });
    assert.equal(offsetPage([], 40, { page: 1, size: 20 }).pagination.total_pages, 2);
  });

  it('cursors round-trip and anything else is a 400 on query.start', () => {
    const cursor = encodeCursor({ id: 'abc', at: '2024' });
    assert.match(cursor, /^[\w-]+$/);
    assert.deepEqual(decodeCursor(cursor, ['id', 'at']), { id: 'abc', at: '2024' });
    for (const bad of ['!!!', encodeCursor({ at: '2024' }), Buffer.from('[1]').toString('base64url'), Buffer.from('null').toString('base64url'), Buffer.from('"id"').toString('base64url')]) {
      assert.throws(() => decodeCursor(bad, ['id']), (err: unknown) => err instanceof ApiError && err.status === 400 && err.errors?.['query.start'] !== undefined, bad);
    }
  });

  it('cursorPage has a next only when one more row than the page was found', () => {
    const rows = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];
    const full = cursorPage(rows, 2, (r) => ({ id: r.id }));
    assert.deepEqual(full.data, rows.slice(0, 2));
    assert.deepEqual(decodeCursor(full.pagination.next!, ['id']), { id: 'b' });
    assert.equal(full.pagination.page_size, 2);
    const last = cursorPage(rows.slice(0, 2), 2, (r) => ({ id: r.id }));
    assert.equal('next' in last.pagination, false);
  });
});

describe('pagination on list endpoints', () => {
  let server: TestServer;
  const names: string[] = [];
  before(async () => {
    server = await startTestServer();
    for (let i = 0; i < 22; i++) {
      await createApplication(server, { name: `paged ${String(i).padStart(2, '0')}`, type: 'private', permissions: ['token:read'] });
      names.push(`paged ${String(i).padStart(2, '0')}`);
    }
  });
  after(() => server.stop());

  it('defaults to page 1 of size 20', async () => {
    const res = await call(server, 'GET', '/applications', { key: server.key });
    assert.equal(res.status, 200);
    const total = res.body.pagination.total_items;
    assert.ok(total >= 23, `${total}`);
    assert.deepEqual(res.body.pagination, { total_items: total, page_number: 1, page_size: 20, total_pages: Math.ceil(total / 20) });
    assert.equal(res.body.data.length, 20);
  });

  it('walks every page without gaps or repeats', async () => {
    const first = await call(server, 'GET', '/applications?size=100', { key: server.key });
    const all = first.body.data.map((a: { id: string }) => a.id);
    assert.equal(all.length, first.body.pagination.total_items);
    const seen: string[] = [];
    for (let page = 1; page <= Math.ceil(all.length / 7); page++) {
      const res = await call(server, 'GET', `/applications?page=${page}&size=7`, { key: server.key });
      assert.equal(res.status, 200);
      assert.equal(res.body.pagination.page_number, page);
      assert.equal(res.body.pagination.total_pages, Math.ceil(all.length / 7));
      seen.push(...res.body.data.map((a: { id: string }) => a.id));
    }
    assert.deepEqual(seen, all);
    for (const name of names) assert.ok(first.body.data.some((a: { name: string }) => a.name === name), name);
    const beyond = await call(server, 'GET', `/applications?page=${Math.ceil(all.length / 7) + 1}&size=7`, { key: server.key });
    assert.equal(beyond.status, 200);
    assert.deepEqual(beyond.body.data, []);
    assert.equal(beyond.body.pagination.total_items, all.length);
  });

  it('rejects out-of-range and non-numeric values with 400 and the field path, never clamping', async () => {
    const cases: [string, string, string][] = [
      ['/applications', 'page=0', 'query.page'],
      ['/applications', 'page=-1', 'query.page'],
      ['/applications', 'page=abc', 'query.page'],
      ['/applications', 'page=1.5', 'query.page'],
      ['/applications', 'page=1000001', 'query.page'],
      ['/applications', 'size=0', 'query.size'],
      ['/applications', 'size=101', 'query.size'],
      ['/applications', 'size=abc', 'query.size'],
      ['/applications', 'size=', 'query.size'],
      ['/logs', 'size=0', 'query.size'],
      ['/logs', 'size=101', 'query.size'],
      ['/logs', 'size=abc', 'query.size'],
    ];
    for (const [path, query, field] of cases) {
      const res = await call(server, 'GET', `${path}?${query}`, { key: server.key });
      assert.equal(res.status, 400, `${path}?${query}: ${res.text}`);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(res.body.status, 400);
      assert.ok(res.body.errors?.[field]?.length, `${path}?${query}: expected ${field}, got ${JSON.stringify(res.body.errors)}`);
    }
    const both = await call(server, 'GET', '/applications?page=0&size=0', { key: server.key });
    assert.equal(both.status, 400);
    assert.ok(both.body.errors['query.page'] && both.body.errors['query.size'], 'every problem is reported at once');
  });

  it('accepts the limits themselves', async () => {
    const max = await call(server, 'GET', '/applications?page=1&size=100', { key: server.key });
    assert.equal(max.status, 200);
    assert.equal(max.body.pagination.page_size, 100);
    const min = await call(server, 'GET', '/applications?page=2&size=1', { key: server.key });
    assert.equal(min.status, 200);
    assert.equal(min.body.data.length, 1);
    assert.equal(min.body.pagination.page_number, 2);
    const logs = await call(server, 'GET', '/logs?size=100', { key: server.key });
    assert.equal(logs.status, 200);
    assert.equal(logs.body.pagination.page_size, 100);
    const logsDefault = await call(server, 'GET', '/logs', { key: server.key });
    assert.equal(logsDefault.body.pagination.page_size, 20);
    assert.equal(logsDefault.body.data.length, 20);
    assert.ok(logsDefault.body.pagination.next);
  });
});
