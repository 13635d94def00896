import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/http/errors.ts';
import { refuseUnstorable } from '../../src/http/json-body.ts';

/** The field paths refuseUnstorable names, or [] when it lets the value through. */
function refused(value: unknown): string[] {
  try {
    refuseUnstorable(value, 'body');
    return [];
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    return Object.keys(err.errors ?? {});
  }
}

describe('refuseUnstorable', () => {
  it('lets through every value PostgreSQL can store', () => {
    for (const value of [null, 1, true, '', 'plain', 'emoji \ud83d\ude00', [], {}, { a: [1, 'x', { b: 'é' }] }, Object.assign(Object.create(null), { k: 'v' })]) {
      assert.deepEqual(refused(value), [], JSON.stringify(value));
    }
  });

  it('names each field holding NUL or an unpaired surrogate, in values and in keys, at any depth', () => {
    const table: [unknown, string[]][] = [
      ['a\u0000b', ['body']],
      ['\ud800', ['body']],
      [{ name: 'x\u0000' }, ['body.name']],
      [{ list: ['ok', 'lone \udc00'] }, ['body.list[1]']],
      [{ 'k\u0000': 'v' }, ['body.k\u0000']],
      [{ a: { b: [{ c: '\u0000' }] } }, ['body.a.b[0].c']],
    ];
    for (const [value, fields] of table) assert.deepEqual(refused(value), fields, JSON.stringify(value));
  });

  it('ignores what is not the value\'s own (inherited properties)', () => {
    const parent = { bad: '\u0000' };
    assert.deepEqual(refused(Object.create(parent)), []);
  });
});
