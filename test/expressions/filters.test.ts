import assert from 'node:assert/strict';
import { createHmac, createSecretKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, it } from 'node:test';
import { evaluate, ExpressionError, parseTemplate, render, type Scope } from '../../src/expressions/index.ts';

/** `{ v, f, out }`: `{{ v | f }}` renders to `out`; `{ v, f, error }`: it throws an ExpressionError matching `error`. */
type Row = { v: unknown; f: string; out?: unknown; error?: RegExp; parse?: true };

const card = { number: '4242424242424242', expiration_month: 3, expiration_year: 2027, cvc: '123' };
const key = createSecretKey(Buffer.from('a secret of thirty-two bytes....'));
const keys: Record<string, KeyObject> = { k: key };
const scopeFor = (v: unknown): Scope => ({ variables: { v }, hmacKey: (name) => keys[name] });

function table(name: string, rows: Row[]): void {
  describe(name, () => {
    for (const row of rows) {
      const source = `{{ v | ${row.f} }}`;
      it(`${JSON.stringify(row.v)} | ${row.f}`, () => {
        if (row.error) {
          // Argument errors are found by the parser, value errors by the renderer.
          if (row.parse) assert.throws(() => parseTemplate(source, 'template'), isExpressionError(row.error));
          else assert.throws(() => evaluate(source, 'template', scopeFor(row.v)), isExpressionError(row.error));
        } else {
          assert.deepEqual(evaluate(source, 'template', scopeFor(row.v)), row.out);
        }
      });
    }
  });
}

function isExpressionError(re: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof ExpressionError, String(err));
    assert.match(err.message, re);
    return true;
  };
}

table('json', [
  { v: { a: { b: 1 } }, f: "json: '$.a.b'", out: 1 },
  { v: { a: { b: 1 } }, f: "json: '$'", out: { a: { b: 1 } } },
  { v: { a: { b: 1 } }, f: "json: '$.a'", out: { b: 1 } },
  { v: { a: [1, 2, 3] }, f: "json: '$.a[0]'", out: 1 },
  { v: { a: [1, 2, 3] }, f: "json: '$.a[-1]'", out: 3 },
  { v: { a: [1, 2, 3] }, f: "json: '$.a[5]'", out: null },
  { v: { a: [1, 2, 3] }, f: "json: \"$['a'][1]\"", out: 2 },
  { v: { a: [1, 2, 3] }, f: "json: '$.a[*]'", out: [1, 2, 3] },
  { v: { a: [1, 2, 3] }, f: "json: '$.a[ * ]'", out: [1, 2, 3] },
  { v: { items: [{ n: 1 }, { n: 2 }, {}, { n: null }] }, f: "json: '$.items[*].n'", out: [1, 2, null] },
  { v: { x: { p: 1, q: 2 } }, f: "json: '$.x.*'", out: [1, 2] },
  { v: { x: 'str' }, f: "json: '$.x[*]'", out: [] },
  { v: { a: 1 }, f: "json: '$.nope.deeper'", out: null },
  { v: { a: null }, f: "json: '$.a'", out: null },
  { v: { 'a b': 1, 'é': 2 }, f: "json: '$[\"a b\"]'", out: 1 },
  { v: { 'a b': 1, 'é': 2 }, f: "json: '$.é'", out: 2 },
  { v: { "it's": 1 }, f: "json: \"$['it\\\\'s']\"", out: 1 },
  { v: { a: { b: 1 } }, f: "json: '$.constructor'", out: null },
  { v: { a: { b: 1 } }, f: "json: '$.__proto__'", out: null },
  { v: 'a string', f: "json: '$.a'", out: null },
  { v: 'a string', f: "json: '$'", out: 'a string' },
  { v: null, f: "json: '$.a'", out: null },
  // Null in, null out, as every filter but json_stringify and to_string: not an empty list of matches.
  { v: null, f: "json: '$[*]'", out: null },
  { v: null, f: "json: '$.items[*].n'", out: null },
  { v: [{ a: 1 }], f: "json: '$[0].a'", out: 1 },
  { v: { a: 1 }, f: "json: 'a.b'", error: /invalid JSON path in argument 1 of json: a JSON path starts with '\$' \(offset 0 of the path\) at 13/, parse: true },
  { v: { a: 1 }, f: "json: '$.a..b'", error: /recursive descent/, parse: true },
  { v: { a: 1 }, f: "json: '$['", error: /expected an index, '\*' or a quoted name after '\['/, parse: true },
  { v: { a: 1 }, f: "json: '$.a[x]'", error: /expected an index/, parse: true },
  { v: { a: 1 }, f: "json: '$.a[0'", error: /expected '\]'/, parse: true },
  { v: { a: 1 }, f: "json: '$.'", error: /expected a property name after '\.'/, parse: true },
  { v: { a: 1 }, f: "json: '$a'", error: /expected '\.' or '\['/, parse: true },
  { v: { a: 1 }, f: "json: \"$['a\"", error: /unterminated quoted name/, parse: true },
  { v: { a: 1 }, f: 'json: 1', error: /expected a string as argument 1 \(path\) of json at 13/, parse: true },
  { v: { a: 1 }, f: 'json', error: /json needs argument 1 \(path\) at 7/, parse: true },
  { v: { a: 1 }, f: "json: '$', '$'", error: /json takes at most 1 argument, got 2 at 18/, parse: true },
]);

table('json_stringify', [
  { v: { a: 1 }, f: 'json_stringify', out: '{"a":1}' },
  { v: 'x', f: 'json_stringify', out: '"x"' },
  { v: '', f: 'json_stringify', out: '""' },
  { v: null, f: 'json_stringify', out: 'null' },
  { v: 5, f: 'json_stringify', out: '5' },
  { v: ['é', '💳'], f: 'json_stringify', out: '["é","💳"]' },
  { v: 1, f: 'json_stringify: 1', error: /json_stringify takes no arguments, got 1/, parse: true },
]);

table('last4', [
  { v: '4242424242424242', f: 'last4', out: '4242' },
  { v: 'abc', f: 'last4', out: 'abc' },
  { v: '', f: 'last4', out: '' },
  { v: null, f: 'last4', out: null },
  { v: 123456, f: 'last4', out: '3456' },
  { v: true, f: 'last4', out: 'true' },
  { v: 'ab💳cdé', f: 'last4', out: '💳cdé' },
  { v: card, f: 'last4', out: '4242' },
  { v: { account_number: '000123456789', routing_number: '021000021' }, f: 'last4', out: '6789' },
  { v: { x: 1 }, f: 'last4', error: /last4 expects a string, a number, or card or bank data \(got an object\) at 7/ },
  { v: [1, 2], f: 'last4', error: /got an array/ },
  { v: 'x', f: 'last4: 2', error: /last4 takes no arguments/, parse: true },
]);

table('reveal', [
  { v: 'abcdef', f: 'reveal: 2', out: 'abXXXX' },
  { v: 'abcdef', f: "reveal: 2, '*'", out: 'ab****' },
  { v: 'abcdef', f: 'reveal', out: 'abcdef' },
  { v: 12345, f: 'reveal', out: 12345 },
  { v: 'abcdef', f: 'reveal: 0', out: 'XXXXXX' },
  { v: 'abcdef', f: 'reveal: 6', out: 'abcdef' },
  { v: 'abcdef', f: 'reveal: 10', out: 'abcdef' },
  { v: '', f: 'reveal: 2', out: '' },
  { v: null, f: 'reveal: 2', out: null },
  { v: 12345, f: 'reveal: 2', out: '12XXX' },
  { v: 'héllo💳', f: 'reveal: 2', out: 'héXXXX' },
  { v: 'abc', f: "reveal: 1, '💳'", out: 'a💳💳' },
  { v: 'abc', f: 'reveal: -1', error: /expected a non-negative integer as argument 1 \(n\) of reveal at 15/, parse: true },
  { v: 'abc', f: "reveal: 'a'", error: /expected a non-negative integer as argument 1/, parse: true },
  { v: 'abc', f: 'reveal: 1.5', error: /expected a non-negative integer as argument 1/, parse: true },
  { v: 'abc', f: "reveal: 2, 'XY'", error: /expected a string of exactly one character as argument 2 \(mask_char\) of reveal at 18/, parse: true },
  { v: 'abc', f: "reveal: 2, ''", error: /exactly one character/, parse: true },
  { v: 'abc', f: 'reveal: 1, 2', error: /exactly one character/, parse: true },
]);

table('reveal_last', [
  { v: '4242424242424242', f: 'reveal_last: 4', out: 'XXXXXXXXXXXX4242' },
  { v: '4242424242424242', f: "reveal_last: 4, '#'", out: '############4242' },
  { v: 'ab', f: 'reveal_last: 4', out: 'ab' },
  { v: 'abcd', f: 'reveal_last: 0', out: 'XXXX' },
  { v: '', f: 'reveal_last: 4', out: '' },
  { v: null, f: 'reveal_last: 4', out: null },
  { v: 1234567, f: 'reveal_last: 2', out: 'XXXXX67' },
  { v: 'ñandú💳', f: 'reveal_last: 2', out: 'XXXXú💳' },
  { v: 'x', f: 'reveal_last', error: /reveal_last needs argument 1 \(n\)/, parse: true },
  { v: 'x', f: "reveal_last: 'a'", error: /expected a non-negative integer as argument 1 \(n\) of reveal_last/, parse: true },
  { v: 'x', f: 'reveal_last: -1', error: /non-negative integer/, parse: true },
  { v: 'x', f: 'reveal_last: true', error: /non-negative integer/, parse: true },
  { v: 'x', f: 'reveal_last: null', error: /non-negative integer/, parse: true },
]);

table('card_bin', [
  { v: '4242424242424242', f: 'card_bin', out: '424242' },
  { v: '4242 4242 4242 4242', f: 'card_bin', out: '424242' },
  { v: '4242-42', f: 'card_bin', out: '424242' },
  { v: 4242424242424242, f: 'card_bin', out: '424242' },
  { v: { number: '5555555555554444' }, f: 'card_bin', out: '555555' },
  { v: null, f: 'card_bin', out: null },
  { v: '12345', f: 'card_bin', error: /card_bin expects a card number of at least 6 digits at 7/ },
  { v: '', f: 'card_bin', error: /at least 6 digits/ },
  { v: 'abc123456', f: 'card_bin', error: /card_bin expects a card number \(digits, spaces and dashes\)/ },
  { v: '４２４２４２４２', f: 'card_bin', error: /digits, spaces and dashes/ },
  { v: true, f: 'card_bin', error: /card_bin expects a card number or card data with a number \(got a boolean\)/ },
  { v: { name: 'x' }, f: 'card_bin', error: /got an object/ },
  { v: '4242424242', f: 'card_bin: 8', error: /card_bin takes no arguments/, parse: true },
]);

table('card_exp', [
  { v: card, f: 'card_exp', out: '03/27' },
  { v: card, f: "card_exp: 'MM/YY'", out: '03/27' },
  { v: card, f: "card_exp: 'MM/YYYY'", out: '03/2027' },
  { v: card, f: "card_exp: 'M/YY'", out: '3/27' },
  { v: card, f: "card_exp: 'YYYY-MM'", out: '2027-03' },
  { v: card, f: "card_exp: 'MMYY'", out: '0327' },
  { v: card, f: "card_exp: 'M of YYYY'", out: '3 of 2027' },
  { v: card, f: "card_exp: ''", out: '' },
  { v: { expiration_month: '12', expiration_year: '27' }, f: 'card_exp', out: '12/27' },
  { v: { expiration_month: 12, expiration_year: 2030 }, f: "card_exp: 'YY'", out: '30' },
  { v: { expiration_month: 1, expiration_year: 2005 }, f: "card_exp: 'MM-YY'", out: '01-05' },
  { v: null, f: 'card_exp', out: null },
  { v: { expiration_month: 13, expiration_year: 2027 }, f: 'card_exp', error: /card_exp: expiration_month must be an integer from 1 to 12 at 7/ },
  { v: { expiration_month: 0, expiration_year: 2027 }, f: 'card_exp', error: /expiration_month/ },
  { v: { expiration_month: 1.5, expiration_year: 2027 }, f: 'card_exp', error: /expiration_month/ },
  { v: { expiration_month: 3, expiration_year: 'abc' }, f: 'card_exp', error: /expiration_year must be a 4-digit/ },
  { v: { expiration_month: 3, expiration_year: 123 }, f: 'card_exp', error: /expiration_year/ },
  { v: { expiration_month: 3 }, f: 'card_exp', error: /expiration_year/ },
  { v: '03/27', f: 'card_exp', error: /card_exp expects card data with expiration_month and expiration_year \(got a string\)/ },
  { v: [], f: 'card_exp', error: /got an array/ },
  { v: card, f: 'card_exp: 5', error: /expected a string as argument 1 \(format\) of card_exp/, parse: true },
]);

// A year has 4 digits, or 2 meaning 20YY. A number has no leading zeros, so a 2-digit one is 10–99.
const exp = (year: unknown) => ({ expiration_month: 1, expiration_year: year });
const YEAR_ERROR = /^card_exp: expiration_year must be a 4-digit \(or 2-digit\) year at 7$/;
table('card_exp years', [
  ...([
    [27, '01/2027'],
    ['27', '01/2027'],
    [10, '01/2010'],
    [99, '01/2099'],
    ['05', '01/2005'],
    ['00', '01/2000'],
    [' 27 ', '01/2027'],
    [2027, '01/2027'],
    ['2027', '01/2027'],
    [1000, '01/1000'],
    ['9999', '01/9999'],
  ] as const).map(([year, out]): Row => ({ v: exp(year), f: "card_exp: 'MM/YYYY'", out })),
  // Neither 2 nor 4 digits: not silently read as 20YY (7 → 2007, '0027' → 2027).
  ...[0, 7, 9, '0', '7', '007', '027', '0027', '0000', 100, 999, '100', '999', 10000, '10000', '02027', -27, '-27', '+27', 27.5, '27.0', 1e21, '', ' ', '2 7', '２７', true, [27], null].map(
    (year): Row => ({ v: exp(year), f: 'card_exp', error: YEAR_ERROR }),
  ),
]);

table('card_mask', [
  { v: '4242424242424242', f: 'card_mask', out: 'XXXXXXXXXXXX4242' },
  { v: '4242424242424242', f: 'card_mask: false', out: 'XXXXXXXXXXXXXXXX' },
  { v: '4242424242424242', f: 'card_mask: true, true', out: '424242XXXXXX4242' },
  { v: '4242424242424242', f: 'card_mask: false, true', out: '424242XXXXXXXXXX' },
  { v: '4242424242424242', f: "card_mask: true, false, '*'", out: '************4242' },
  { v: '4242 4242 4242 4242', f: 'card_mask', out: 'XXXX XXXX XXXX 4242' },
  { v: '4242-4242-4242-4242', f: "card_mask: true, true, '•'", out: '4242-42••-••••-4242' },
  { v: card, f: 'card_mask', out: 'XXXXXXXXXXXX4242' },
  { v: 4242424242424242, f: 'card_mask', out: 'XXXXXXXXXXXX4242' },
  { v: '', f: 'card_mask', out: '' },
  { v: null, f: 'card_mask', out: null },
  { v: true, f: 'card_mask', error: /card_mask expects a card number or card data with a number \(got a boolean\)/ },
  // Only ASCII digits are masked, so anything else would show through: it is an error, as in card_bin.
  { v: '٤٢٤٢٤٢٤٢٤٢٤٢٤٢٤٢', f: 'card_mask', error: /card_mask expects a card number \(digits, spaces and dashes\) at 7$/ },
  { v: '４２４２４２４２４２４２４２４２', f: 'card_mask: true, true', error: /card_mask expects a card number \(digits, spaces and dashes\)/ },
  { v: 'name Ada Lovelace 4242424242424242', f: 'card_mask', error: /card_mask expects a card number/ },
  { v: { number: '4242.4242.4242.4242' }, f: 'card_mask', error: /card_mask expects a card number/ },
  { v: '4242', f: "card_mask: 'yes'", error: /expected true or false as argument 1 \(reveal_last\) of card_mask/, parse: true },
  { v: '4242', f: "card_mask: true, 'no'", error: /expected true or false as argument 2 \(reveal_first\)/, parse: true },
  { v: '4242', f: "card_mask: true, true, 'XX'", error: /exactly one character as argument 3 \(mask_char\)/, parse: true },
]);

table('pad_left and pad_right', [
  { v: '42', f: 'pad_left: 5', out: '   42' },
  { v: '42', f: "pad_left: 5, '0'", out: '00042' },
  { v: 7, f: "pad_left: 3, '0'", out: '007' },
  { v: 'abcdef', f: 'pad_left: 3', out: 'abcdef' },
  { v: '', f: "pad_left: 2, '*'", out: '**' },
  { v: 'é', f: "pad_left: 3, '·'", out: '··é' },
  { v: '💳', f: "pad_left: 2, '-'", out: '-💳' },
  { v: null, f: 'pad_left: 3', out: null },
  { v: '42', f: 'pad_right: 5', out: '42   ' },
  { v: '42', f: "pad_right: 4, '💳'", out: '42💳💳' },
  { v: 'abc', f: 'pad_right: 0', out: 'abc' },
  { v: null, f: 'pad_right: 3', out: null },
  { v: 'x', f: 'pad_left', error: /pad_left needs argument 1 \(length\)/, parse: true },
  { v: 'x', f: 'pad_left: -1', error: /expected an integer from 0 to 100000 as argument 1 \(length\) of pad_left/, parse: true },
  { v: 'x', f: 'pad_right: 100001', error: /an integer from 0 to 100000/, parse: true },
  { v: 'x', f: "pad_left: '3'", error: /an integer from 0 to 100000/, parse: true },
  { v: 'x', f: "pad_left: 3, 'ab'", error: /exactly one character as argument 2 \(char\) of pad_left/, parse: true },
  { v: 'x', f: "pad_right: 3, ''", error: /exactly one character/, parse: true },
]);

table('to_string', [
  { v: 'x', f: 'to_string', out: 'x' },
  { v: '', f: 'to_string', out: '' },
  { v: 5, f: 'to_string', out: '5' },
  { v: 1.5, f: 'to_string', out: '1.5' },
  { v: true, f: 'to_string', out: 'true' },
  { v: null, f: 'to_string', out: '' },
  { v: { a: 'é' }, f: 'to_string', out: '{"a":"é"}' },
  { v: [1], f: 'to_string', out: '[1]' },
]);

table('to_number', [
  { v: '42', f: 'to_number', out: 42 },
  { v: ' -3.5 ', f: 'to_number', out: -3.5 },
  { v: '+1e3', f: 'to_number', out: 1000 },
  { v: '.5', f: 'to_number', out: 0.5 },
  { v: '007', f: 'to_number', out: 7 },
  { v: 7, f: 'to_number', out: 7 },
  { v: null, f: 'to_number', out: null },
  { v: '', f: 'to_number', error: /to_number: the value is not numeric \(an empty string\) at 7/ },
  { v: 'abc', f: 'to_number', error: /not numeric \(a string\)/ },
  { v: '0x10', f: 'to_number', error: /not numeric/ },
  { v: 'Infinity', f: 'to_number', error: /not numeric/ },
  { v: 'NaN', f: 'to_number', error: /not numeric/ },
  { v: '1e400', f: 'to_number', error: /out of range/ },
  { v: true, f: 'to_number', error: /not numeric \(a boolean\)/ },
  { v: {}, f: 'to_number', error: /not numeric \(an object\)/ },
  { v: '٣', f: 'to_number', error: /not numeric/ },
]);

table('to_boolean', [
  { v: true, f: 'to_boolean', out: true },
  { v: false, f: 'to_boolean', out: false },
  { v: 'true', f: 'to_boolean', out: true },
  { v: 'false', f: 'to_boolean', out: false },
  { v: ' TRUE ', f: 'to_boolean', out: true },
  { v: '1', f: 'to_boolean', out: true },
  { v: '0', f: 'to_boolean', out: false },
  { v: 1, f: 'to_boolean', out: true },
  { v: 0, f: 'to_boolean', out: false },
  { v: null, f: 'to_boolean', out: null },
  { v: 'yes', f: 'to_boolean', error: /to_boolean: expected true, false, 'true', 'false', 1 or 0 \(got a string\)/ },
  { v: 2, f: 'to_boolean', error: /got a number/ },
  { v: '', f: 'to_boolean', error: /got an empty string/ },
  { v: {}, f: 'to_boolean', error: /got an object/ },
]);

table('to_base64 and to_base16', [
  { v: 'hello', f: 'to_base64', out: 'aGVsbG8=' },
  { v: '', f: 'to_base64', out: '' },
  { v: 'é', f: 'to_base64', out: 'w6k=' },
  { v: 123, f: 'to_base64', out: 'MTIz' },
  { v: null, f: 'to_base64', out: null },
  { v: 'hi', f: 'to_base16', out: '6869' },
  { v: 'é', f: 'to_base16', out: 'c3a9' },
  { v: '💳', f: 'to_base16', out: 'f09f92b3' },
  { v: '', f: 'to_base16', out: '' },
  { v: false, f: 'to_base16', out: '66616c7365' },
  { v: null, f: 'to_base16', out: null },
  { v: 'x', f: "to_base64: 'url'", error: /to_base64 takes no arguments/, parse: true },
]);

const mac = (alg: string, s: string) => createHmac(alg, key).update(s, 'utf8').digest('hex');

table('hmac', [
  { v: 'hello', f: "hmac: 'k'", out: mac('sha256', 'hello') },
  { v: 'hello', f: "hmac: 'k', 'sha256'", out: mac('sha256', 'hello') },
  { v: 'hello', f: "hmac: 'k', 'sha512'", out: mac('sha512', 'hello') },
  { v: 'hello', f: "hmac: 'k', 'SHA512'", out: mac('sha512', 'hello') },
  { v: '', f: "hmac: 'k'", out: mac('sha256', '') },
  { v: 'é', f: "hmac: 'k'", out: mac('sha256', 'é') },
  { v: 123, f: "hmac: 'k'", out: mac('sha256', '123') },
  { v: null, f: "hmac: 'k'", out: null },
  { v: 'hello', f: "hmac: 'other'", error: /hmac: unknown key at 7/ },
  { v: 'x', f: 'hmac', error: /hmac needs argument 1 \(key_name\)/, parse: true },
  { v: 'x', f: 'hmac: 1', error: /expected a string as argument 1 \(key_name\) of hmac/, parse: true },
  { v: 'x', f: "hmac: 'k', 'md5'", error: /expected one of 'sha256', 'sha512' as argument 2 \(algorithm\) of hmac/, parse: true },
]);

describe('hmac and its key provider', () => {
  it('is an error without a key provider', () => {
    assert.throws(() => evaluate("{{ v | hmac: 'k' }}", 'template', { variables: { v: 'x' } }), /hmac is not available here \(no HMAC keys\) at 7/);
  });
  it('passes through what the key provider throws', () => {
    const own = new Error('the caller’s own error');
    assert.throws(
      () =>
        evaluate("{{ v | hmac: 'k' }}", 'template', {
          variables: { v: 'x' },
          hmacKey: () => {
            throw own;
          },
        }),
      (err) => err === own,
    );
  });
  it('is an ExpressionError when the key is not a secret key', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    assert.throws(() => evaluate("{{ v | hmac: 'k' }}", 'template', { variables: { v: 'x' }, hmacKey: () => privateKey }), /hmac: the key cannot be used for HMAC/);
  });
});

describe('filters chain and take variable arguments', () => {
  const rows: [source: string, expected: unknown][] = [
    ["{{ v | json: '$.number' | reveal_last: 4, '*' }}", '************4242'],
    ["{{ v | json: '$.number' | card_bin | to_number }}", 424242],
    ["{{ v | json: '$.expiration_month' | to_string | pad_left: 2, '0' }}", '03'],
    ['{{ v | json_stringify | to_base64 }}', Buffer.from(JSON.stringify(card)).toString('base64')],
    ["{{ v | json: '$.number' | reveal_last: w.n, w.c }}", '############4242'],
    ["{{ v | json: '$.cvc' | reveal: w.none }}", '123'],
    ["{{ v | card_exp: w.fmt }}", '2027-03'],
    ["{{ v | json: w.path }}", '123'],
  ];
  for (const [source, expected] of rows) {
    it(source, () => assert.deepEqual(evaluate(source, 'template', { variables: { v: card, w: { n: 4, c: '#', fmt: 'YYYY-MM', path: '$.cvc' } } }), expected));
  }
  it('checks a variable argument when rendering, at the argument', () => {
    const source = "{{ v | reveal_last: w.c }}";
    const t = parseTemplate(source, 'template');
    assert.throws(() => evaluate(source, 'template', { variables: { v: 'abc', w: { c: '#' } } }), /expected a non-negative integer as argument 1 \(n\) of reveal_last at 20/);
    assert.equal(typeof t, 'object');
    assert.throws(() => evaluate('{{ v | json: w.path }}', 'template', { variables: { v: {}, w: { path: 'nope' } } }), /invalid JSON path in argument 1 of json: a JSON path starts with '\$' \(offset 0 of the path\) at 13/);
    assert.throws(() => evaluate('{{ v | reveal_last: missing }}', 'template', { variables: { v: 'abc' } }), /reveal_last at 20/);
  });
});

describe('filters cannot build values without bound', () => {
  const grow = (n: number) => `{{ v${' | to_base16'.repeat(n)} }}`;

  it('a chain that would multiply the text is an ExpressionError at the filter that goes over, not gigabytes or a RangeError', () => {
    // 100000 characters, then doubled six times: 6.4 million, more than MAX_GROWTH adds.
    const source = `{{ v | pad_left: 100000${' | to_base16'.repeat(6)} }}`;
    assert.throws(() => evaluate(source, 'template', { variables: { v: 'x' } }), isExpressionError(/to_base16 makes the value too long: filters may add at most 4194304 characters in all at \d+$/));
    assert.throws(() => evaluate(grow(40), 'template', { variables: { v: 'x' } }), isExpressionError(/too long/));
    // Escaping multiplies too.
    assert.throws(() => evaluate(`{{ v${' | json_stringify'.repeat(40)} }}`, 'template', { variables: { v: '"' } }), isExpressionError(/json_stringify makes the value too long/));
  });

  it('the bound is on what filters add, over every tag of the template', () => {
    const tag = '{{ v | pad_left: 100000 }}';
    assert.equal((evaluate(tag.repeat(41), 'template', { variables: { v: 'x' } }) as string).length, 4_100_000);
    assert.throws(() => evaluate(tag.repeat(42), 'template', { variables: { v: 'x' } }), isExpressionError(/pad_left makes the value too long/));
  });

  it('text made of the data itself does not count: a large value can still be stringified or masked', () => {
    const big = { blob: 'y'.repeat(5_000_000) };
    assert.equal((evaluate('{{ v | json_stringify }}', 'template', { variables: { v: big } }) as string).length, 5_000_011);
    assert.equal((evaluate('{{ v.blob | reveal_last: 4 }}', 'template', { variables: { v: big } }) as string).length, 5_000_000);
  });

  it('the text of an object or array is its JSON: padding or encoding it counts as for any text', () => {
    const tag = '{{ v | pad_left: 100000 }}';
    for (const v of [{}, [], { a: 1 }, [1, 'x']]) {
      const json = JSON.stringify(v);
      assert.equal(evaluate('{{ v | pad_left: 100000 }}', 'template', { variables: { v } }), json.padStart(100_000, ' '));
      assert.throws(() => evaluate(tag.repeat(42), 'template', { variables: { v } }), isExpressionError(/pad_left makes the value too long/), json);
      assert.throws(() => evaluate(`{{ v${' | to_base16'.repeat(40)} }}`, 'template', { variables: { v } }), isExpressionError(/to_base16 makes the value too long/), json);
      assert.throws(() => evaluate(`{{ v | pad_right: 100000, '💳' }}`.repeat(21), 'template', { variables: { v } }), isExpressionError(/pad_right makes the value too long/), json);
    }
  });

  it('what a filter adds to an object is counted against the length of its JSON exactly', () => {
    // Plain data, data JSON leaves values out of, data with toJSON, and arrays with holes; each
    // padded to a little more than its JSON, and to much more.
    const values = [{ a: 'x'.repeat(1000), n: [1, null, true] }, Array(30).fill(7), { k: 1, l: false, m: null, o: 'p' }, { a: undefined, b: 'y' }, { d: new Date(0) }, [undefined, 'z', () => 1]];
    for (const v of values) {
      const json = JSON.stringify(v);
      for (const width of [json.length + 1, json.length + 7, 100_000]) {
        const scope: Scope = { variables: { v }, growth: { left: 4_194_304 } };
        render(parseTemplate(`{{ v | pad_left: ${width} }}`, 'template'), scope);
        assert.equal(scope.growth!.left, 4_194_304 - (width - json.length), `${json} to ${width}`);
      }
    }
  });

  it('a field taken out of an object adds nothing', () => {
    const v = { number: '4242424242424242', blob: 'y'.repeat(100) };
    const scope: Scope = { variables: { v }, growth: { left: 10 } };
    assert.equal(render(parseTemplate("{{ v | json: '$.number' }}", 'template'), scope), '4242424242424242');
    assert.equal(scope.growth!.left, 10);
  });

  it('renders given one scope share the bound', () => {
    const scope: Scope = { variables: { v: 'x' }, growth: { left: 4_194_304 } };
    const t = parseTemplate('{{ v | pad_left: 100000 }}', 'template');
    for (let i = 0; i < 41; i++) render(t, scope);
    assert.throws(() => render(t, scope), isExpressionError(/too long/));
    // Without a shared budget, each render has its own.
    for (let i = 0; i < 50; i++) render(t, { variables: { v: 'x' } });
  });
});
