/** structuredClone inside the isolate, case by case against Node's own. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';
import { cases, compareWithNode, outcomesInSandbox, threwDOMException } from './compare.ts';

const sb = new Sandbox();
after(() => sb.dispose());

const clone = (expr: string) => `return structuredClone(${expr});`;

describe('structuredClone', () => {
  it('clones primitives, boxed primitives, dates and regular expressions like Node', async () => {
    await compareWithNode(sb, cases([
      ['number', clone('1.5')],
      ['-0', clone('-0')],
      ['NaN', clone('NaN')],
      ['string', clone("'é€😀'")],
      ['null', clone('null')],
      ['undefined', clone('undefined')],
      ['bigint', clone('10n ** 30n')],
      ['boolean', clone('false')],
      ['Number object', clone('new Number(7)')],
      ['String object', clone("new String('s')")],
      ['Boolean object', clone('new Boolean(false)')],
      ['BigInt object', clone('Object(5n)')],
      ['Date', clone('new Date(86400000)')],
      ['invalid Date', clone("new Date('nope')")],
      ['RegExp keeps source and flags, not lastIndex', `const r = /a+b/gimsuy; r.lastIndex = 3; return structuredClone(r);`],
      ['RegExp with v flag', clone('/[\\p{L}--[a-z]]/v')],
      ['object made from Date.prototype is a plain object', clone('Object.create(Date.prototype)')],
      ['object made from Map.prototype is a plain object', clone('Object.create(Map.prototype)')],
      ['object made from RegExp.prototype is a plain object', clone('Object.create(RegExp.prototype)')],
      ['object made from Error.prototype is a plain object', clone('Object.create(Error.prototype)')],
      ['object made from ArrayBuffer.prototype is a plain object', clone('Object.create(ArrayBuffer.prototype)')],
      ['RegExp.prototype is a plain object', clone('RegExp.prototype')],
      ['patched flags getter is not asked', `const flags = Object.getOwnPropertyDescriptor(RegExp.prototype, 'flags'); Object.defineProperty(RegExp.prototype, 'flags', { get: () => 'g', configurable: true });
        try { return structuredClone(/x/i); } finally { Object.defineProperty(RegExp.prototype, 'flags', flags); }`],
      ['object with a Date toStringTag is a plain object', clone("({ [Symbol.toStringTag]: 'Date', a: 1 })")],
    ]));
  });

  it('clones Map, Set, arrays and plain objects like Node', async () => {
    await compareWithNode(sb, cases([
      ['Map with object keys', `const k = { k: 1 }; const m = new Map([[k, 'a'], ['x', k]]); const c = structuredClone(m); const [ck] = c.keys(); return [c, ck === c.get('x'), ck !== k];`],
      ['Set', clone("new Set([1, 'a', { b: 2 }, 1])")],
      ['sparse array', clone('[1, , 3, , ]')],
      ['array with extra properties', `const a = [1, 2]; a.extra = 'x'; return structuredClone(a);`],
      ['array length', clone('new Array(5)')],
      ['nested objects', clone("({ a: { b: { c: [1, { d: 'e' }] } } })")],
      ['null prototype object', `const o = Object.create(null); o.a = 1; return structuredClone(o);`],
      ['getters run, non-enumerables and symbol keys are left out', `const o = { get g() { return 'got'; } }; Object.defineProperty(o, 'hidden', { value: 1 }); o[Symbol('s')] = 1; return structuredClone(o);`],
      ['class instance becomes a plain object', `class Point { constructor() { this.x = 1; } get len() { return 1; } } return structuredClone(new Point());`],
      ['inherited properties are left out', `const o = Object.create({ inherited: 1 }); o.own = 2; return structuredClone(o);`],
      ['an own __proto__ key stays an own property', `const c = structuredClone(JSON.parse('{"__proto__": {"x": 1}}')); return [Object.keys(c), Object.getPrototypeOf(c) === Object.prototype, c.x];`],
      ['a setter on Object.prototype is not called', `Object.defineProperty(Object.prototype, 'trap', { set(v) { throw new Error('called'); }, configurable: true }); try { return structuredClone({ trap: 1 }); } finally { delete Object.prototype.trap; }`],
      ['patched Map.prototype.set and Set.prototype.add are not used', `const s = Map.prototype.set, a = Set.prototype.add; Map.prototype.set = Set.prototype.add = () => { throw new Error('patched'); };
        try { return structuredClone([new Map([[1, 2]]), new Set([3])]); } finally { Map.prototype.set = s; Set.prototype.add = a; }`],
      ['key order', clone("({ b: 1, a: 2, 1: 'one', 0: 'zero' })")],
    ]));
  });

  it('keeps shared references and cycles like Node', async () => {
    await compareWithNode(sb, cases([
      ['self cycle', `const o = { n: 1 }; o.self = o; const c = structuredClone(o); return [c.self === c, c !== o];`],
      ['shared object', `const s = { s: 1 }; const c = structuredClone({ a: s, b: [s] }); return c.a === c.b[0];`],
      ['array cycle', `const a = [1]; a.push(a); const c = structuredClone(a); return c[1] === c;`],
      ['Map containing itself', `const m = new Map(); m.set(m, m); const c = structuredClone(m); return c.get(c) === c;`],
      ['Set containing itself', `const s = new Set(); s.add(s); const c = structuredClone(s); return c.has(c);`],
      ['nested cycle through Map and array', `const o = { list: [] }; const m = new Map([['o', o]]); o.list.push(m); const c = structuredClone(o); return c.list[0].get('o') === c;`],
      ['two views of one buffer share the copy', `const b = new ArrayBuffer(8); const c = structuredClone({ x: new Uint8Array(b, 2, 3), y: new DataView(b) }); return [c, c.x.buffer === c.y.buffer];`],
      ['error in a cycle', `const e = new Error('m'); e.cause = { e }; const c = structuredClone(e); return c.cause.e === c;`],
    ]));
  });

  it('clones buffers and views like Node', async () => {
    await compareWithNode(sb, cases([
      ['ArrayBuffer', clone('new Uint8Array([1, 2, 3]).buffer')],
      ['Uint8Array', clone('new Uint8Array([1, 2, 255])')],
      ['Int16Array on part of a buffer keeps its offset and the whole buffer', clone('new Int16Array(new ArrayBuffer(16), 4, 2)')],
      ['subarray', clone('new Uint8Array([1, 2, 3, 4, 5]).subarray(1, 3)')],
      ['Float64Array', clone('new Float64Array([1.5, -0, NaN])')],
      ['BigInt64Array', clone('new BigInt64Array([1n, -1n])')],
      ['Uint8ClampedArray', clone('new Uint8ClampedArray([300])')],
      ['DataView with offset', clone('new DataView(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2)')],
      ['copies do not share memory', `const u = new Uint8Array([1]); const c = structuredClone(u); c[0] = 2; return u[0];`],
      ['transfer moves an ArrayBuffer', `const b = new Uint8Array([1, 2]).buffer; const c = structuredClone(b, { transfer: [b] }); return [b.byteLength, c];`],
      ['transfer of the buffer of a view', `const u = new Uint8Array([1, 2, 3]); const c = structuredClone(u, { transfer: [u.buffer] }); return [u.length, c];`],
      ['transfer of a buffer not in the value', `const b = new ArrayBuffer(4); structuredClone(1, { transfer: [b] }); return b.byteLength;`],
      ['transfer of a non-buffer', `return structuredClone(1, { transfer: [{}] });`],
      ['transfer of the same buffer twice', `const b = new ArrayBuffer(4); return structuredClone(b, { transfer: [b, b] });`],
      ['transfer of a detached buffer', `const b = new ArrayBuffer(4); b.transfer(); return structuredClone(1, { transfer: [b] });`],
      ['detached buffer', `const b = new ArrayBuffer(4); b.transfer(); return structuredClone(b);`],
      ['empty transfer list', `return structuredClone({ a: 1 }, { transfer: [] });`],
      ['transfer of a primitive', `return structuredClone(1, { transfer: [1] });`],
      ['failed clone transfers nothing', `const b = new ArrayBuffer(2); try { structuredClone({ b, f() {} }, { transfer: [b] }); } catch (e) { return [e.name, b.byteLength, b.detached]; }`],
      ['transfer not iterable', `return structuredClone(1, { transfer: 5 });`],
      ['options not an object', `return structuredClone(1, 5);`],
      ['options null', `return structuredClone(1, null);`],
    ]));
  });

  it('clones errors like Node', async () => {
    await compareWithNode(sb, cases([
      ['Error', `const c = structuredClone(new Error('m')); return [c, typeof c.stack];`],
      ['TypeError with cause', clone("new TypeError('t', { cause: { why: 1 } })")],
      ['RangeError', clone("new RangeError('r')")],
      ['EvalError, ReferenceError, SyntaxError, URIError', clone("[new EvalError('a'), new ReferenceError('b'), new SyntaxError('c'), new URIError('d')]")],
      ['AggregateError', clone("new AggregateError([1], 'agg')")],
      ['subclass becomes its base', `class MyError extends TypeError {} return structuredClone(new MyError('x'));`],
      ['unknown name becomes Error', `const e = new Error('x'); e.name = 'Custom'; return structuredClone(e);`],
      ['error without a message', clone('new Error()')],
      ['error with extra own property', `const e = new Error('x'); e.extra = 1; return structuredClone(e);`],
      ['DOMException', clone("new DOMException('gone', 'NotFoundError')")],
      ['DOMException code', `const c = structuredClone(new DOMException('x', 'DataCloneError')); return [c.code, c.name, c.message, c instanceof DOMException];`],
    ]));
  });

  it('refuses what cannot be cloned with a DataCloneError, like Node', async () => {
    await compareWithNode(sb, cases([
      ['no argument', `return structuredClone();`],
      ['function', clone('() => 1')],
      ['named function', clone('function f() {}')],
      ['class', clone('class A {}')],
      ['symbol', clone("Symbol('s')")],
      ['method in an object', clone('({ f() {} })')],
      ['symbol in a Map', clone("new Map([[Symbol('k'), 1]])")],
      ['symbol in a Set', clone("new Set([Symbol('k')])")],
      ['function nested deep', clone('[{ a: [new Map([[1, { f: () => 1 }]])] }]')],
      ['Promise', clone('Promise.resolve(1)')],
      ['WeakMap', clone('new WeakMap()')],
      ['WeakSet', clone('new WeakSet()')],
      ['WeakRef', clone('new WeakRef({})')],
      ['getter that throws', `return structuredClone({ get x() { throw new RangeError('no'); } });`],
      ['Headers', clone("new Headers({ a: '1' })")],
      ['Response', clone("new Response('x')")],
      ['URL', clone("new URL('https://a.test/')")],
      ['URLSearchParams', clone("new URLSearchParams('a=1')")],
    ]));
  });

  it('refuses the runtime\'s web API objects as browsers do (Node copies some of them as plain objects)', async () => {
    const list = cases([
      ['TextEncoder', clone('new TextEncoder()')],
      ['TextDecoder', clone('new TextDecoder()')],
      ['crypto', clone('crypto')],
      ['crypto.subtle', clone('crypto.subtle')],
      ['Headers in an object', clone("{ h: new Headers() }")],
    ]);
    assert.deepEqual(await outcomesInSandbox(sb, list), list.map(() => threwDOMException('DataCloneError', 25)));
  });

  it('refuses a Proxy, as Node does, without running its traps', async () => {
    await compareWithNode(sb, cases([
      ['Proxy', clone('new Proxy({ a: 1 }, {})')],
      ['revocable Proxy', clone('Proxy.revocable({ a: 1 }, {}).proxy')],
      ['Proxy in a Map', clone('new Map([[1, new Proxy({}, {})]])')],
    ]));
    const traps = `let asked = 0; const p = new Proxy([1], { get() { asked++; return 1; }, ownKeys() { asked++; return []; }, getPrototypeOf() { asked++; return null; } });`;
    const list = cases([
      ['Proxy of an array', `${traps} try { structuredClone(p); } catch (e) { return [e.name, e.message, asked]; }`],
      ['Proxy of a subclass', `class P extends Array {} ${traps.replace('[1]', 'new P()')} try { structuredClone({ p }); } catch (e) { return [e.name, e.message, asked]; }`],
    ]);
    const refused = { returned: { array: ['DataCloneError', '#<Object> could not be cloned.', 0], proto: 'Array', extra: [] } };
    assert.deepEqual(await outcomesInSandbox(sb, list), [refused, refused]);
  });

  it('Proxy itself behaves as the engine\'s', async () => {
    await compareWithNode(sb, cases([
      ['shape', `return [typeof Proxy, Proxy.name, Proxy.length, 'prototype' in Proxy, Object.keys(Proxy), typeof Proxy.revocable, Proxy.revocable.length, Proxy.revocable.name];`],
      ['call without new', `return Proxy({}, {});`],
      ['bad handler', `return new Proxy({}, 1);`],
      ['extends', `class X extends Proxy {} return 1;`],
      ['traps work', `const p = new Proxy({}, { get: (t, k) => 'got ' + String(k) }); return p.anything;`],
      ['revoke', `const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); return proxy.x;`],
      ['Reflect.construct', `return typeof Reflect.construct(Proxy, [{}, {}]);`],
    ]));
  });

  it('copies a generator as the object it shows (the documented difference: the standard refuses it)', async () => {
    const list = cases([['generator', `return structuredClone((function* () {})());`]]);
    assert.deepEqual(await outcomesInSandbox(sb, list), [{ returned: { object: 'Object', proto: 'Object', own: {} } }]);
  });

  it('clones a CryptoKey like Node', async () => {
    await compareWithNode(sb, cases([
      ['HMAC key', `const k = await crypto.subtle.importKey('raw', new Uint8Array([1, 2, 3]), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);
        const c = structuredClone(k);
        const raw = await crypto.subtle.exportKey('raw', c);
        return [c, c !== k, c instanceof CryptoKey, raw, await crypto.subtle.sign('HMAC', c, new Uint8Array([4]))];`],
    ]));
  });
});
