import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/http/errors.ts';
import { parseJsonBody, refuseUnstorable } from '../../src/http/json-body.ts';

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
      [{ 'k\u0000': 'v' }, ['body["k\\u0000"]']],
      [{ 'a.b': { '': ['\u0000'] } }, ['body["a.b"][""][0]']],
      [{ a: { b: [{ c: '\u0000' }] } }, ['body.a.b[0].c']],
    ];
    for (const [value, fields] of table) assert.deepEqual(refused(value), fields, JSON.stringify(value));
  });

  it('ignores what is not the value\'s own (inherited properties)', () => {
    const parent = { bad: '\u0000' };
    assert.deepEqual(refused(Object.create(parent)), []);
  });
});

describe('parseJsonBody: numbers it would change', () => {
  function errorsOf(text: string): Record<string, string[]> {
    try {
      parseJsonBody(text);
      return {};
    } catch (err) {
      assert.ok(err instanceof ApiError, String(err));
      assert.equal(err.status, 400);
      return err.errors ?? {};
    }
  }

  it('refuses, naming the field, an integer beyond ±2^53 that would be rounded, or a number out of range', () => {
    const rows: [text: string, fields: string[]][] = [
      ['{"a":12345678901234567890}', ['body.a']],
      ['{"a":{"b":[1, -9007199254740993]}}', ['body.a.b[1]']],
      ['[1e400, -1E+400, 2]', ['body[0]', 'body[1]']],
      ['12345678901234567890', ['body']],
      ['{"x": 1e309, "y": 99999999999999999999}', ['body.x', 'body.y']],
      ['{"a":\n\t -1.5e400, "b": [\r\n2.0E+999]}', ['body.a', 'body.b[0]']],
      ['{"id":"4f1c9e51-0d3e-4e21-9e51-2a7c1e400aa0","n":0.5e0400}', ['body.n']],
    ];
    for (const [text, fields] of rows) {
      const errors = errorsOf(text);
      assert.deepEqual(Object.keys(errors).sort(), [...fields].sort(), text);
      for (const f of fields) assert.match(errors[f][0], /cannot be held exactly.*send it as a string/, text);
    }
  });

  it('keeps every number it holds exactly, and digits in strings', () => {
    for (const text of [
      '{"a":9007199254740991,"b":-9007199254740991}',
      '{"a":9007199254740992}',
      '{"a":1e20,"b":1e308,"c":1.5e-300,"d":0.1}',
      '{"number":"4242424242424242","long":"12345678901234567890123"}',
      '{"a":100000000000000000000}',
      '{"x":"{{ 4f1c9e51-0d3e-4e21-9e51-2a7c1e400aa0 | json: \'$.number\' }}","y":"1e400"}',
    ]) {
      assert.deepEqual(errorsOf(text), {}, text);
      assert.deepEqual(parseJsonBody(text), JSON.parse(text), text);
    }
  });
});
