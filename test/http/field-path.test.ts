import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { childPath, MAX_KEY_CHARACTERS, placePath, pointerPath, truncated } from '../../src/http/field-path.ts';

describe('childPath', () => {
  it('writes indexes in brackets, plain names after a dot, and quotes every other key', () => {
    const table: [key: string | number, path: string][] = [
      // Plain names, as every path Coffer names by itself: unchanged.
      ['card', 'body.card'],
      ['customer_id', 'body.customer_id'],
      ['_private', 'body._private'],
      ['$ref', 'body.$ref'],
      ['svc-idempotency-key', 'body.svc-idempotency-key'],
      ['Camel9', 'body.Camel9'],
      // Indexes.
      [0, 'body[0]'],
      [12, 'body[12]'],
      // Keys a dot or bare brackets would misread.
      ['a.b', 'body["a.b"]'],
      ['', 'body[""]'],
      ['123', 'body["123"]'],
      ['0', 'body["0"]'],
      ['9lives', 'body["9lives"]'],
      ['-x', 'body["-x"]'],
      ['x[0]', 'body["x[0]"]'],
      ['a b', 'body["a b"]'],
      ['a/b~c', 'body["a/b~c"]'],
      // Not ASCII: quoted, shown as it is.
      ['名前', 'body["名前"]'],
      ['café', 'body["café"]'],
      ['😀', 'body["😀"]'],
      // Quotes, backslashes, line breaks and control characters are escaped as JSON escapes them.
      ['say "hi"', 'body["say \\"hi\\""]'],
      ['back\\slash', 'body["back\\\\slash"]'],
      ['a\nb', 'body["a\\nb"]'],
      ['a\r\tb', 'body["a\\r\\tb"]'],
      ['nul\u0000', 'body["nul\\u0000"]'],
      ['lone \ud800', 'body["lone \\ud800"]'],
    ];
    for (const [key, path] of table) assert.equal(childPath('body', key), path, JSON.stringify(key));
  });

  it('reads back to the key it names, as JavaScript reads it', () => {
    for (const key of ['a.b', '', '123', 'say "hi"', 'back\\slash', 'a\nb', '名前', '😀', 'x[0]']) {
      const path = childPath('body', key);
      const quoted = path.slice('body['.length, -1);
      assert.equal(JSON.parse(quoted), key, path);
    }
  });

  it('tells keys that a dot would join alike apart', () => {
    assert.notEqual(childPath('body', 'a.b'), childPath(childPath('body', 'a'), 'b'));
    assert.notEqual(childPath('body', '0'), childPath('body', 0));
    assert.notEqual(childPath('body', ''), 'body');
  });

  it('cuts a long key to MAX_KEY_CHARACTERS characters, quoted and ending in …', () => {
    const whole = 'k'.repeat(MAX_KEY_CHARACTERS);
    assert.equal(childPath('body', whole), `body.${whole}`);
    assert.equal(childPath('body', `${whole}k`), `body["${whole}…"]`);
    assert.equal(childPath('body', 'x'.repeat(1_000_000)).length, 'body[""]'.length + MAX_KEY_CHARACTERS + 1);
    // Characters, not UTF-16 units: a key of emoji is cut between two, never inside one.
    const emoji = '😀'.repeat(MAX_KEY_CHARACTERS);
    assert.equal(childPath('body', emoji), `body["${emoji}"]`);
    assert.equal(childPath('body', `${emoji}😀`), `body["${emoji}…"]`);
  });

  it('builds paths step by step', () => {
    assert.equal(childPath(childPath(childPath('body', 'rules'), 0), 'priority'), 'body.rules[0].priority');
    assert.equal(childPath(childPath('body', 'metadata'), 'customer_id'), 'body.metadata.customer_id');
    assert.equal(childPath(childPath('body', 'a.b'), 2), 'body["a.b"][2]');
  });
});

describe('truncated', () => {
  it('keeps short text and cuts long text by characters', () => {
    assert.equal(truncated('abc', 3), 'abc');
    assert.equal(truncated('abcd', 3), 'abc…');
    assert.equal(truncated('😀😀😀', 3), '😀😀😀');
    assert.equal(truncated('😀😀😀😀', 3), '😀😀😀…');
    assert.equal(truncated('', 0), '');
  });
});

describe('placePath', () => {
  it('names a place from the root down', () => {
    assert.equal(placePath('body', undefined), 'body');
    const list = { up: undefined, key: 'list' };
    const item = { up: list, key: 1 };
    assert.equal(placePath('body', { up: item, key: 'x.y' }), 'body.list[1]["x.y"]');
  });
});

describe('pointerPath', () => {
  it('unescapes ~1 and ~0, in that order', () => {
    assert.equal(pointerPath('body', '/a~1b', { 'a/b': 1 }), 'body["a/b"]');
    assert.equal(pointerPath('body', '/a~0b', { 'a~b': 1 }), 'body["a~b"]');
    // "~01" is "~1" once unescaped, not "/".
    assert.equal(pointerPath('body', '/~01', { '~1': 1 }), 'body["~1"]');
  });

  it('reads the data to tell an index from a key made of digits', () => {
    const data = { rules: [{ priority: 0 }], metadata: { '0': 5, '123': 6 } };
    assert.equal(pointerPath('body', '/rules/0/priority', data), 'body.rules[0].priority');
    assert.equal(pointerPath('body', '/metadata/0', data), 'body.metadata["0"]');
    assert.equal(pointerPath('body', '/metadata/123', data), 'body.metadata["123"]');
    assert.equal(pointerPath('body', '', data), 'body');
    assert.equal(pointerPath('body', '/', { '': 1 }), 'body[""]');
    assert.equal(pointerPath('body', '//', { '': { '': 1 } }), 'body[""][""]');
    assert.equal(pointerPath('query', '/metadata.customer_id', { 'metadata.customer_id': 'x' }), 'query["metadata.customer_id"]');
  });

  it('without the data, takes digits written as an index for one', () => {
    assert.equal(pointerPath('body', '/rules/0/priority'), 'body.rules[0].priority');
    assert.equal(pointerPath('body', '/a/007'), 'body.a["007"]');
    assert.equal(pointerPath('body', '/a/12345678901234567890'), 'body.a["12345678901234567890"]');
  });

  it('never walks into what an object inherits', () => {
    assert.equal(pointerPath('body', '/constructor/0', {}), 'body.constructor[0]');
  });
});
