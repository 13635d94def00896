/** Headers inside the isolate, case by case against Node's (undici's). */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';
import { cases, compareWithNode, outcomesInSandbox } from './compare.ts';

const sb = new Sandbox();
after(() => sb.dispose());

describe('Headers', () => {
  it('is made from a record, a sequence or Headers like Node’s', async () => {
    await compareWithNode(sb, cases([
      ['from a record', `return [...new Headers({ B: '1', a: '2', 'X-Y': 3 })];`],
      ['from pairs', `return [...new Headers([['b', '1'], ['A', '2'], ['a', '3']])];`],
      ['from a Map', `return [...new Headers(new Map([['m', 'n']]))];`],
      ['from Headers', `const h = new Headers({ a: '1' }); const c = new Headers(h); h.set('a', '2'); return [...c];`],
      ['from undefined', `return [...new Headers(undefined), ...new Headers()];`],
      ['from null', `return new Headers(null);`],
      ['from a string', `return new Headers('a: b');`],
      ['from a number', `return new Headers(1);`],
      ['pairs that are strings', `return new Headers(['ab']);`],
      ['a pair of three', `return new Headers([['a', 'b', 'c']]);`],
      ['a pair of one', `return new Headers([['a']]);`],
      ['record with a Symbol key', `return new Headers({ [Symbol('s')]: 'x' });`],
      ['an iterator that is not a function', `return new Headers({ [Symbol.iterator]: 1 });`],
      ['called without new', `return Headers();`],
    ]));
  });

  it('reads a record’s own enumerable keys only, as WebIDL asks (Node’s also takes the non-enumerable ones)', async () => {
    const list = cases([
      ['record skips non-enumerable keys', `const o = { a: '1' }; Object.defineProperty(o, 'b', { value: '2' }); return JSON.stringify([...new Headers(o)]);`],
      ['a function is a record of its enumerable keys', `const f = () => {}; f.a = '1'; return JSON.stringify([...new Headers(f)]);`],
    ]);
    assert.deepEqual(await outcomesInSandbox(sb, list), [{ returned: '[["a","1"]]' }, { returned: '[["a","1"]]' }]);
  });

  it('checks names and values like Node’s', async () => {
    await compareWithNode(sb, cases([
      ['invalid names', `return ['', 'a b', 'a:', 'é', 'a\\n', '(x)', '{}', '"', 'a/b', 'a@b'].map((n) => { try { new Headers().append(n, 'v'); return 'ok'; } catch (e) { return e.name; } });`],
      ['valid names', `return ["!#$%&'*+-.^_\`|~", 'Az09'].map((n) => new Headers([[n, 'v']]).has(n));`],
      ['invalid values', `return ['a\\nb', 'a\\rb', 'a\\0b', '\\u0100', '😀'].map((v) => { try { new Headers().set('a', v); return 'ok'; } catch (e) { return e.name; } });`],
      ['values kept as written', `return ['a\\tb', 'a\\u007fb', '\\u00ff', 'a  b', '\\u0001'].map((v) => new Headers({ a: v }).get('a'));`],
      ['values trimmed of HTTP whitespace', `return [' \\t\\r\\na \\t\\r\\n', '\\u000ba\\u000c', '\\u00a0a'].map((v) => { try { return new Headers({ a: v }).get('a'); } catch (e) { return e.name; } });`],
      ['a value that is only whitespace', `return new Headers({ a: ' \\t ' }).get('a');`],
      ['a value that is a number or null', `const h = new Headers(); h.append('a', 1); h.append('b', null); h.append('c', undefined); return [...h];`],
      ['a Symbol as a value', `return new Headers().append('a', Symbol('s'));`],
      ['a Symbol as a name', `return new Headers().get(Symbol('s'));`],
      ['get, has, delete of an invalid name', `const h = new Headers(); return ['get', 'has', 'delete'].map((m) => { try { h[m]('a b'); return 'ok'; } catch (e) { return e.name; } });`],
      ['missing arguments', `const h = new Headers(); return [() => h.append('a'), () => h.set('a'), () => h.get(), () => h.has(), () => h.delete(), () => h.forEach()].map((f) => { try { f(); return 'ok'; } catch (e) { return e.name; } });`],
    ]));
  });

  it('reads and changes like Node’s', async () => {
    await compareWithNode(sb, cases([
      ['get is case-insensitive', `const h = new Headers({ 'Content-Type': 'text/x' }); return [h.get('content-type'), h.get('CONTENT-TYPE'), h.has('Content-type'), h.get('nope')];`],
      ['append combines with a comma and a space', `const h = new Headers(); h.append('a', '1'); h.append('A', '2'); h.append('a', ''); return [h.get('a'), [...h]];`],
      ['set replaces every value', `const h = new Headers([['a', '1'], ['a', '2']]); h.set('A', '3'); return [...h];`],
      ['delete', `const h = new Headers({ a: '1', b: '2' }); h.delete('A'); h.delete('nope'); return [...h];`],
      ['set-cookie values stay apart when iterating', `const h = new Headers(); h.append('Set-Cookie', 'a=1'); h.append('set-cookie', 'b=2'); h.append('x', '1'); return [...h];`],
      ['set-cookie get joins them', `const h = new Headers([['set-cookie', 'a=1'], ['set-cookie', 'b=2, c=3']]); return h.get('set-cookie');`],
      ['getSetCookie', `const h = new Headers([['set-cookie', 'a=1'], ['Set-Cookie', 'b=2']]); return [h.getSetCookie(), new Headers().getSetCookie()];`],
      ['set replaces every set-cookie', `const h = new Headers([['set-cookie', 'a=1'], ['set-cookie', 'b=2']]); h.set('set-cookie', 'c=3'); return [...h];`],
      ['empty values', `const h = new Headers({ a: '' }); return [h.get('a'), h.has('a'), [...h]];`],
    ]));
  });

  it('iterates like Node’s, sorted and lower-cased', async () => {
    await compareWithNode(sb, cases([
      ['sorted by lower-cased name', `return [...new Headers({ b: '1', A: '2', C: '3', 'a-b': '4', '_': '5', 'Z': '6' })];`],
      ['keys and values', `const h = new Headers({ b: '1', a: '2' }); return [[...h.keys()], [...h.values()], [...h.entries()]];`],
      ['forEach arguments and this', `const h = new Headers({ a: '1' }); const out = []; const t = {}; h.forEach(function (v, k, o) { out.push(v, k, o === h, this === t); }, t); return out;`],
      ['forEach with a non-function', `return new Headers().forEach(1);`],
      ['iterator sees headers added while iterating', `const h = new Headers({ b: '1' }); const out = []; for (const [k] of h) { out.push(k); if (k === 'b') h.append('c', ''); } return out;`],
      ['iterator sees headers removed while iterating', `const h = new Headers({ a: '1', b: '2', c: '3' }); const out = []; for (const [k] of h) { out.push(k); if (k === 'a') h.delete('b'); } return out;`],
      ['forEach sees changes made while iterating', `const h = new Headers({ a: '1', b: '2', c: '3' }); const out = []; h.forEach((v, k) => { out.push(k); if (k === 'a') h.delete('b'); }); return out;`],
      ['iterator toStringTag', `return Object.prototype.toString.call(new Headers().entries());`],
      ['iterator prototype', `const p = Object.getPrototypeOf(new Headers().keys()); return [Object.getOwnPropertyNames(p), Object.getPrototypeOf(p) === Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()))];`],
      ['Symbol.iterator is entries', `return Headers.prototype[Symbol.iterator] === Headers.prototype.entries;`],
      ['members are enumerable', `return Object.keys(Headers.prototype).sort();`],
      ['toStringTag is a data property', `return Object.getOwnPropertyDescriptor(Headers.prototype, Symbol.toStringTag);`],
      ['method on another object', `return Headers.prototype.get.call({}, 'a');`],
      ['own keys', `return Object.getOwnPropertyNames(new Headers({ a: '1' }));`],
    ]));
  });
});
