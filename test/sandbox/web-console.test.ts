/**
 * console inside the isolate: each line the sandbox captures is compared with what Node's
 * util.format (console.log's formatter) makes of the same arguments; where Node departs from
 * the Console standard's formatter (%d, %i and %f read the argument as parseInt and parseFloat
 * do), the standard's result is asserted on its own.
 */
import assert from 'node:assert/strict';
import { format } from 'node:util';
import { after, describe, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';
import { runner } from './helpers.ts';

const sb = new Sandbox();
after(() => sb.dispose());
const run = runner(sb);

/** The console lines of logging each list of arguments (JavaScript array expressions) in the sandbox. */
async function linesInSandbox(argLists: string[], method = 'log'): Promise<string[]> {
  const code = `module.exports = () => { ${argLists.map((a) => `console.${method}(...${a});`).join('\n')} };`;
  const r = await run(code);
  assert.ok(r.ok, JSON.stringify(r));
  return r.console;
}

/** Each row: [name, arguments as a JavaScript array expression]; the line must be util.format's. */
async function compareWithNodeFormat(rows: [string, string][]): Promise<void> {
  const got = await linesInSandbox(rows.map(([, a]) => a));
  const wrong: string[] = [];
  rows.forEach(([name, args], i) => {
    const expected = format(...(new Function(`return ${args};`)() as unknown[]));
    if (got[i] !== expected) wrong.push(`${name}\n  sandbox: ${JSON.stringify(got[i])}\n  node:    ${JSON.stringify(expected)}`);
  });
  assert.ok(wrong.length === 0, `${wrong.length} of ${rows.length} lines differ from Node:\n${wrong.join('\n')}`);
}

describe('console', () => {
  it('formats specifiers like Node', async () => {
    await compareWithNodeFormat([
      ['%s of a string', `['a %s b', 'x']`],
      ['%s of numbers', `['%s %s', 1.5, NaN]`],
      ['%s of null, undefined, booleans', `['%s %s %s', null, undefined, true]`],
      ['%s of a Symbol', `['%s', Symbol('s')]`],
      ['%d of integers', `['%d %d', 42, -7]`],
      ['%d of a Symbol', `['%d', Symbol('s')]`],
      ['%i of a string', `['%i', '42abc']`],
      ['%i of a float', `['%i', 42.9]`],
      ['%f of a string', `['%f', '1.5e3x']`],
      ['%f of a Symbol', `['%f', Symbol('s')]`],
      ['%j', `['%j', { a: [1, 'x'] }]`],
      ['%j of a cycle', `(() => { const o = {}; o.o = o; return ['%j', o]; })()`],
      ['%j of undefined', `['%j', undefined]`],
      ['%%', `['100%% %s', 'sure']`],
      ['%% without arguments', `['100%%']`],
      ['%c is consumed', `['%cred%c', 'color: red', '']`],
      ['%o of a number', `['%o', 1]`],
      ['%O of a string', `['%O', 'x']`],
      ['unknown specifier', `['%x %s', 'a']`],
      ['a trailing %', `['50% %s', 'off']`],
      ['more specifiers than arguments', `['%s and %s', 'one']`],
      ['more arguments than specifiers', `['%s', 'a', 'b', 1, { c: 2 }]`],
      ['a specifier that is not first', `[1, '%s', 'x']`],
      ['no arguments', `[]`],
      ['a string alone', `['%s']`],
      ['strings are not quoted at the top', `['a', 'b']`],
    ]);
  });

  it('inspects values like Node', async () => {
    await compareWithNodeFormat([
      ['primitives', `[1, -0, NaN, 10n, true, null, undefined, Symbol('s')]`],
      ['a plain object', `[{ a: 1, b: 'x', 'c-d': [1, 2] }]`],
      ['an empty object and array', `[{}, []]`],
      ['a nested object past the depth', `[{ a: { b: { c: { d: 1 } } } }]`],
      ['a nested array past the depth', `[[[[[1]]]]]`],
      ['a cycle', `(() => { const o = { x: 1 }; o.self = o; return [o]; })()`],
      ['a function', `[function named() {}, () => {}]`],
      ['a class', `[class A {}]`],
      ['a Map and a Set', `[new Map([['a', 1]]), new Set(['x'])]`],
      ['a Date', `[new Date(0)]`],
      ['a RegExp', `[/a+/g]`],
      ['a null-prototype object', `[Object.assign(Object.create(null), { a: 1 })]`],
      ['a class instance', `[new (class Point { constructor() { this.x = 1; } })()]`],
      ['a string with quotes in an object', `[{ s: "it's" }]`],
      ['a symbol key', `[{ [Symbol('k')]: 1 }]`],
      ['a typed array', `[new Uint8Array([1, 2])]`],
      ['a boxed primitive', `[new Number(3), new String('s')]`],
    ]);
  });

  it('formats %s, %d, %i and %f as the Console standard does where Node differs', async () => {
    const lines = await linesInSandbox([`['%s %s %s', 10n, -0, { a: 1 }]`, `['%d %i %f', 12n, 12n, 1.5e3]`, `['%d', 42.5]`, `['%d %d', '42px', '']`]);
    assert.deepEqual(lines, ['10 0 [object Object]', '12 12 1500', '42', '42 NaN']);
  });

  it('shows an error inside a value as [Name: message], on one line (Node prints its stack)', async () => {
    assert.deepEqual(await linesInSandbox([`[{ e: new RangeError('bad') }]`]), ['{ e: [RangeError: bad] }']);
  });

  it('counts console.assert and prints its message like Node', async () => {
    const got = await linesInSandbox([`[false, 'x %s', 'y']`, `[false]`, `[false, { a: 1 }]`, `[true, 'never']`, `[0, 'n', 1]`], 'assert');
    assert.deepEqual(got, ['[error] Assertion failed: x y', '[error] Assertion failed', "[error] Assertion failed: { a: 1 }", '[error] Assertion failed: n 1']);
  });
});
