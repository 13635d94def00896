import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { evaluate, ExpressionError, MAX_GROWTH, MAX_SOURCE, parseTemplate, type Mode, type Scope } from '../../src/expressions/index.ts';

const variables = {
  data: { number: '4242424242424242', a: [{ b: 'x' }, { b: 'y' }], 'odd key': 1, n: 5, t: true, z: null, k: 2 },
};

describe('template syntax: what parses and what it renders to', () => {
  const rows: [source: string, expected: unknown][] = [
    ['{{ data.number }}', '4242424242424242'],
    ['{{data.number}}', '4242424242424242'],
    ['{{\n\tdata.number\r\n}}', '4242424242424242'],
    ["{{ data['number'] }}", '4242424242424242'],
    ['{{ data["odd key"] }}', 1],
    ['{{ data.a[0].b }}', 'x'],
    ['{{ data.a[ 1 ].b }}', 'y'],
    ['{{ data.a[-1].b }}', 'y'],
    ["{{ data.a[0]['b'] }}", 'x'],
    ['{{ data.a.1.b }}', 'y'],
    ['{{ data.a[2].b }}', null],
    ['{{ data.missing.deeper }}', null],
    ['{{ nothing }}', null],
    ['{{ data.n }}', 5],
    ['{{ data.t }}', true],
    ['{{ data.z }}', null],
    ['{{ data.a }}', variables.data.a],
    ['  {{ data.n }}\n', 5],
    ['n={{ data.n }}', 'n=5'],
    ['{{ data.n }}{{ data.n }}', '55'],
    ['{{ data.z }}|{{ nothing }}|{{ data.t }}', '||true'],
    ['{{ data.a }}!', '[{"b":"x"},{"b":"y"}]!'],
    ["{{ 'lit' }}", 'lit'],
    ['{{ "a\\"b\\\\c" }}', 'a"b\\c'],
    ["{{ 'it\\'s' }}", "it's"],
    ["{{ '\\u00e9\\n\\t\\/' }}", 'é\n\t/'],
    ["{{ 'a}}b' }}", 'a}}b'],
    ["{{ '' }}", ''],
    ['{{ 42 }}', 42],
    ['{{ -1.5 }}', -1.5],
    ['{{ 2e3 }}', 2000],
    ['{{ true }}', true],
    ['{{ false }}', false],
    ['{{ null }}', null],
    ['{{ nil }}', null],
    ['no tags at all', 'no tags at all'],
    ['', ''],
    ['a } b }} c { d', 'a } b }} c { d'],
    ['{% if %} is plain text', '{% if %} is plain text'],
    ['{{ data.number | last4 | pad_left: 6, "*" }}', '**4242'],
    ["{{ data.number|reveal_last:2,'#' }}", '##############42'],
    ['{{\n  data.number\n  | last4\n}}', '4242'],
    ['{{ data.number | reveal_last: data.k }}', 'XXXXXXXXXXXXXX42'],
    ['{{ data.number | reveal: nothing }}', '4242424242424242'],
    ["{{ data.number | reveal: 2, null }}", '42XXXXXXXXXXXXXX'],
    // Own properties only: nothing of the prototype chain is reachable.
    ['{{ data.constructor }}', null],
    ['{{ data.__proto__ }}', null],
    ["{{ data['__proto__'] }}", null],
    ['{{ data.number.length }}', null],
    ['{{ data.a.length }}', null],
    ['{{ toString }}', null],
    ['{{ constructor.name }}', null],
  ];
  for (const [source, expected] of rows) {
    it(JSON.stringify(source), () => assert.deepEqual(evaluate(source, 'template', { variables }), expected));
  }
});

const tokens = new Map<string, { data: unknown; token: unknown }>([
  ['3f6c1a8e-2d5e-4b43-9b7e-0c1c2f3d4e5f', { data: { number: '4242424242424242', expiration_month: 3, expiration_year: 2027 }, token: { id: '3f6c1a8e-2d5e-4b43-9b7e-0c1c2f3d4e5f', type: 'card' } }],
  ['my-custom_id.1', { data: '123-45-6789', token: { id: 'my-custom_id.1', type: 'social_security_number' } }],
  ['token', { data: 'a token called token', token: { id: 'token' } }],
  ['7', { data: 7, token: { id: '7' } }],
]);
const ID = '3f6c1a8e-2d5e-4b43-9b7e-0c1c2f3d4e5f';

describe('detokenize syntax', () => {
  const rows: [source: string, expected: unknown][] = [
    [`{{ ${ID} }}`, tokens.get(ID)!.data],
    [`{{${ID}}}`, tokens.get(ID)!.data],
    [`{{ token: ${ID} }}`, tokens.get(ID)!.token],
    [`{{token:${ID}}}`, tokens.get(ID)!.token],
    [`{{ token : ${ID} | json: '$.type' }}`, 'card'],
    [`{{ ${ID} | json: '$.number' }}`, '4242424242424242'],
    [`{{ ${ID}|json:"$.number"|last4 }}`, '4242'],
    ['{{ my-custom_id.1 | last4 }}', '6789'],
    ['{{ token }}', 'a token called token'],
    ['{{ token | to_base16 }}', Buffer.from('a token called token').toString('hex')],
    ['{{ token: token }}', { id: 'token' }],
    ['{{ 7 }}', 7],
    ['{{ 7 | to_string }}', '7'],
    [`Card {{ ${ID} | last4 }} exp {{ ${ID} | card_exp: 'MM/YY' }}`, 'Card 4242 exp 03/27'],
    [`{{ ${ID} }} and {{ 7 }}`, '{"number":"4242424242424242","expiration_month":3,"expiration_year":2027} and 7'],
    ['plain text', 'plain text'],
  ];
  for (const [source, expected] of rows) {
    it(JSON.stringify(source), () => assert.deepEqual(evaluate(source, 'detokenize', { tokens }), expected));
  }

  it('accepts token ids of up to 200 characters', () => {
    const id = 'a'.repeat(200);
    assert.equal(evaluate(`{{ ${id} }}`, 'detokenize', { tokens: new Map([[id, { data: 'ok', token: {} }]]) }), 'ok');
  });
});

describe('only spaces, tabs and new lines around a lone tag are ignored', () => {
  const variables = { data: { width: 6, a: [1] } };
  // The language's whitespace: the template is the tag alone and keeps its value's JSON type.
  const whole: [source: string, expected: unknown][] = [
    [' {{ data.width }} ', 6],
    ['\t{{ data.width }}\t', 6],
    ['\r\n{{ data.width }}\n', 6],
    [' \t\r\n{{ data.a }} \t\r\n', [1]],
  ];
  // Any other whitespace (which String.prototype.trim strips too) is text, kept around the value.
  const text: [source: string, expected: string][] = [
    ['\u00a0{{ data.width }}\u00a0', '\u00a06\u00a0'], // no-break space
    ['\ufeff{{ data.width }}', '\ufeff6'], // byte order mark
    ['{{ data.width }}\u2028', '6\u2028'], // line separator
    ['\u3000{{ data.width }}', '\u30006'], // ideographic space
    ['\v{{ data.width }}\f', '\v6\f'],
    [' \u00a0{{ data.a }}', ' \u00a0[1]'],
  ];
  for (const [source, expected] of [...whole, ...text]) {
    it(JSON.stringify(source), () => {
      assert.equal(parseTemplate(source, 'template').single !== null, typeof expected !== 'string');
      assert.deepEqual(evaluate(source, 'template', { variables }), expected);
    });
  }

  it('in detokenize mode too', () => {
    assert.equal(evaluate('\u00a0{{ 7 }}', 'detokenize', { tokens }), '\u00a07');
    assert.equal(evaluate('\n{{ 7 }} ', 'detokenize', { tokens }), 7);
  });
});

describe('error positions count characters (code points), not UTF-16 code units', () => {
  const C = '💳'; // one character, two code units
  const PAD = `{{ '${C}' | pad_left: 100000 }}`; // 28 characters; the 42nd in a row goes over MAX_GROWTH
  const rows: [source: string, mode: Mode, scope: Scope, message: string][] = [
    // Found by the lexer and parser.
    [`${C}${C} {{ data`, 'template', {}, "unterminated '{{' at 3"],
    [`${C} {{ data # }}`, 'template', {}, "unexpected character '#' at 10"],
    [`${C} {{ data ${C} }}`, 'template', {}, 'unexpected character U+1F4B3 at 10'],
    [`${C} {{ 'abc }}`, 'template', {}, 'unterminated string at 5'],
    [`{{ '${C}\\q' }}`, 'template', {}, "unknown escape '\\q' in string at 5"],
    [`{{ '${C}\\u12' }}`, 'template', {}, "expected 4 hex digits after '\\u' at 5"],
    [`${C} {{ 1e999 }}`, 'template', {}, 'number out of range at 5'],
    [`${C}{{ 12abc }}`, 'template', {}, "unexpected character 'a' in number at 6"],
    [`${C} {{ data.  }}`, 'template', {}, "expected a property name after '.' at 10"],
    [`{{ '${C}${C}' | revael }}`, 'template', {}, 'unknown filter "revael" at 10'],
    [`${C} {{ }}`, 'detokenize', {}, "expected a token id, found '}}' at 5"],
    [`${C} {{ ${'a'.repeat(201)} }}`, 'detokenize', {}, 'token id longer than 200 characters at 5'],
    // Literal arguments, checked when parsing.
    [`{{ '${C}' | reveal_last: 'a' }}`, 'template', {}, 'expected a non-negative integer as argument 1 (n) of reveal_last at 22'],
    [`${C} {{ data | reveal_last }}`, 'template', {}, 'reveal_last needs argument 1 (n) at 12'],
    // The path's offset counts characters of the path, the tag's those of the source.
    [`{{ '${C}' | json: '$.${C}..a' }}`, 'template', {}, "invalid JSON path in argument 1 of json: recursive descent '..' is not supported (offset 3 of the path) at 15"],
    [`{{ data | json: "$['${C}'x" }}`, 'template', {}, "invalid JSON path in argument 1 of json: expected ']' (offset 5 of the path) at 16"],
    // Found when rendering.
    [`{{ '${C}' | reveal_last: w }}`, 'template', { variables: { w: '#' } }, 'expected a non-negative integer as argument 1 (n) of reveal_last at 22'],
    [`${C} {{ data | json: w }}`, 'template', { variables: { w: `$.${C}..a` } }, "invalid JSON path in argument 1 of json: recursive descent '..' is not supported (offset 3 of the path) at 18"],
    [`${C}${C}{{ data | to_number }}`, 'template', { variables: { data: 'abc' } }, 'to_number: the value is not numeric (a string) at 12'],
    [`${C} {{ nope }}`, 'detokenize', { tokens: new Map() }, 'unknown token "nope" at 5'],
    [PAD.repeat(42), 'template', {}, `pad_left makes the value too long: filters may add at most ${MAX_GROWTH} characters in all at ${41 * 28 + 9}`],
  ];
  for (const [source, mode, scope, message] of rows) {
    it(`${mode}: ${JSON.stringify(source.length > 60 ? `${source.slice(0, 60)}…` : source)}`, () => {
      assert.throws(
        () => evaluate(source, mode, scope),
        (err: unknown) => {
          assert.ok(err instanceof ExpressionError, String(err));
          assert.equal(err.message, message);
          assert.equal(err.position, Number(/at (\d+)$/.exec(message)![1]));
          return true;
        },
      );
    });
  }
});

describe('syntax errors name what is wrong and where', () => {
  const long = 'a'.repeat(201);
  const rows: [source: string, mode: Mode, message: string][] = [
    ['text {{ data', 'template', "unterminated '{{' at 5"],
    ['{{', 'template', "unterminated '{{' at 0"],
    ['{{', 'detokenize', "unterminated '{{' at 0"],
    ['a {{ b }} c {{ d', 'template', "unterminated '{{' at 12"],
    ['{{ data | last4', 'template', "unterminated '{{' at 0"],
    ['{{ data | reveal: ', 'template', "unterminated '{{' at 0"],
    ['{{ abc', 'detokenize', "unterminated '{{' at 0"],
    ['{{ }}', 'template', "expected a variable or a literal, found '}}' at 3"],
    ['{{ }}', 'detokenize', "expected a token id, found '}}' at 3"],
    ['{{ data.number | revael: 4 }}', 'template', 'unknown filter "revael" at 17'],
    ['{{ data.number | reveal_last: "a" }}', 'template', 'expected a non-negative integer as argument 1 (n) of reveal_last at 30'],
    ['{{ data.number | reveal_last }}', 'template', 'reveal_last needs argument 1 (n) at 17'],
    ['{{ data | reveal_last: 4, "X", 3 }}', 'template', 'reveal_last takes at most 2 arguments, got 3 at 31'],
    ['{{ data | last4: 1 }}', 'template', 'last4 takes no arguments, got 1 at 17'],
    ['{{ data | }}', 'template', "expected a filter name after '|', found '}}' at 10"],
    ['{{ data || last4 }}', 'template', "expected a filter name after '|', found '|' at 9"],
    ['{{ data | 4 }}', 'template', "expected a filter name after '|', found a number at 10"],
    ['{{ data | reveal_last 4 }}', 'template', "expected ':', '|' or '}}' after reveal_last, found a number at 22"],
    ['{{ data | reveal_last: 4,, }}', 'template', "expected a literal or a variable as argument 2 of reveal_last, found ',' at 25"],
    ['{{ data.  }}', 'template', "expected a property name after '.' at 8"],
    ['{{ data . a }}', 'template', "unexpected character '.' at 8"],
    ['{{ data[ }}', 'template', "expected an integer or a quoted name inside '[ ]', found '}}' at 9"],
    ['{{ data[0 }}', 'template', "expected ']', found '}}' at 10"],
    ['{{ data[1.5] }}', 'template', "expected an integer or a quoted name inside '[ ]', found a number at 8"],
    ['{{ data[', 'template', "expected ']' at 8"],
    ["{{ 'abc }}", 'template', 'unterminated string at 3'],
    ["{{ 'abc\\", 'template', 'unterminated string at 3'],
    ["{{ 'a\\q' }}", 'template', "unknown escape '\\q' in string at 5"],
    ["{{ '\\u12' }}", 'template', "expected 4 hex digits after '\\u' at 4"],
    ['{{ data # }}', 'template', "unexpected character '#' at 8"],
    ['{{ data } }}', 'template', "unexpected character '}' at 8"],
    ['{{ data\u00a0}}', 'template', 'unexpected character U+00A0 at 7'],
    ['{{ data last4 }}', 'template', `expected '|' or '}}', found "last4" at 8`],
    ["{{ 'a' 'b' }}", 'template', "expected '|' or '}}', found a string at 7"],
    ['{{ 1e999 }}', 'template', 'number out of range at 3'],
    ['{{ 12abc }}', 'template', "unexpected character 'a' in number at 5"],
    ['{{ 1. }}', 'template', "unexpected character '.' in number at 4"],
    ['{{ -x }}', 'template', "unexpected character '-' at 3"],
    ['{{ {{ x }} }}', 'template', "unexpected character '{' at 3"],
    ['{{ abc def }}', 'detokenize', `expected '|' or '}}', found "def" at 7`],
    ['{{ token: }}', 'detokenize', "expected a token id, found '}}' at 10"],
    ['{{ token: | last4 }}', 'detokenize', "expected a token id, found '|' at 10"],
    ['{{ abc | json: path }}', 'detokenize', 'expected a literal (a quoted string, a number, true, false or null) as argument 1 of json, found "path" at 15'],
    ['{{ abc | reveal_last: }}', 'detokenize', "expected a literal (a quoted string, a number, true, false or null) as argument 1 of reveal_last, found '}}' at 22"],
    [`{{ ${long} }}`, 'detokenize', 'token id longer than 200 characters at 3'],
    ["{{ 'abc' }}", 'detokenize', 'expected a token id, found a string at 3'],
    ['{{ a/b }}', 'detokenize', "unexpected character '/' at 4"],
    ['x'.repeat(MAX_SOURCE + 1), 'template', `expression too long: ${MAX_SOURCE + 1} characters (at most ${MAX_SOURCE}) at 0`],
    ['💳'.repeat(MAX_SOURCE + 1), 'template', `expression too long: ${MAX_SOURCE + 1} characters (at most ${MAX_SOURCE}) at 0`],
  ];
  it('the length limit counts characters: the limit of characters outside the BMP parses', () => {
    const source = `{{ v }}${'💳'.repeat(MAX_SOURCE - 7)}`;
    assert.equal(parseTemplate(source, 'template').parts.length, 2);
  });
  for (const [source, mode, message] of rows) {
    it(`${mode}: ${JSON.stringify(source.length > 60 ? `${source.slice(0, 60)}…` : source)}`, () => {
      assert.throws(
        () => parseTemplate(source, mode),
        (err: unknown) => {
          assert.ok(err instanceof ExpressionError, String(err));
          assert.equal(err.message, message);
          assert.equal(err.name, 'ExpressionError');
          assert.equal(typeof err.position, 'number');
          assert.ok(err.position >= 0 && err.position <= Array.from(source).length);
          assert.equal(err.expression, source);
          return true;
        },
      );
    });
  }

  it('a source of exactly the limit parses', () => {
    assert.equal(evaluate('x'.repeat(MAX_SOURCE), 'template', {}), 'x'.repeat(MAX_SOURCE));
  });

  it('rejects what is not a string or not a mode', () => {
    for (const bad of [undefined, null, 42, {}, Object.create(null), Symbol('s')]) {
      assert.throws(() => parseTemplate(bad as unknown as string, 'template'), ExpressionError);
    }
    assert.throws(() => parseTemplate('{{ a }}', 'other' as Mode), /unknown expression mode "other" at 0/);
  });
});
