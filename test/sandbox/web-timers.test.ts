/**
 * Timers and queueMicrotask inside the isolate, case by case against Node's; where Node departs
 * from the HTML standard (its timers are objects, a string is no handler, its delays are not
 * WebIDL longs, `this` is the Timeout), the standard's behaviour is asserted on its own.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';
import { cases, compareWithNode, outcomesInSandbox } from './compare.ts';

const sb = new Sandbox();
after(() => sb.dispose());

/** The order in which timers set by `setup` (which pushes into `order`) fire, once `done` ms have passed. */
const order = (setup: string, done = 60) => `const order = []; ${setup}; await new Promise((r) => setTimeout(r, ${done})); return order;`;

describe('timers', () => {
  it('behave like Node’s where Node follows the standard', async () => {
    await compareWithNode(sb, cases([
      ['extra arguments reach the callback', `return await new Promise((r) => setTimeout((...a) => r(a), 0, 'x', 2, undefined));`],
      ['extra arguments of an interval', `return await new Promise((r) => { const id = setInterval((a, b) => { clearInterval(id); r([a, b]); }, 1, 'p', 'q'); });`],
      // '25' rather than a few ms: the others must fire before it even when the host stalls while they are set.
      ['negative, NaN, string and missing delays fire', order(`for (const d of [-5, NaN, '25', undefined, null, {}, '']) setTimeout(() => order.push(String(d)), d)`)],
      ['a string delay counts as a number', order(`setTimeout(() => order.push('20'), '20'); setTimeout(() => order.push('5'), 5)`)],
      ['a delay from valueOf', order(`setTimeout(() => order.push('obj'), { valueOf: () => 20 }); setTimeout(() => order.push('5'), 5)`)],
      ['a Symbol delay', `return setTimeout(() => {}, Symbol('s'));`],
      ['a BigInt delay', `return setTimeout(() => {}, 1n);`],
      ['equal delays fire in the order they were set', order(`for (let i = 0; i < 8; i++) setTimeout(() => order.push(i), 10)`)],
      ['shorter delays fire first', order(`setTimeout(() => order.push(30), 30); setTimeout(() => order.push(10), 10); setTimeout(() => order.push(20), 20)`)],
      ['clearTimeout of unknown ids is ignored', `clearTimeout(); clearTimeout(undefined); clearTimeout(null); clearTimeout(123456); clearTimeout({}); clearTimeout('x'); clearInterval(-1); return 'ok';`],
      ['clearTimeout cancels', order(`const id = setTimeout(() => order.push('cancelled'), 5); setTimeout(() => order.push('kept'), 5); clearTimeout(id)`)],
      // Cleared from its own second tick, so the count does not hang on how busy the host is.
      ['clearTimeout clears an interval', order(`let n = 0; const id = setInterval(() => { order.push(++n); if (n === 2) clearTimeout(id); }, 2)`)],
      ['clearInterval clears a timeout', order(`const id = setTimeout(() => order.push('cancelled'), 5); clearInterval(id)`)],
      ['a timeout cleared in its own callback', order(`const id = setTimeout(() => { clearTimeout(id); order.push('ran'); }, 1)`)],
      ['an interval cleared in its own callback', order(`let n = 0; const id = setInterval(() => { order.push(++n); if (n === 3) clearInterval(id); }, 2)`)],
      ['microtasks before timers', order(`setTimeout(() => order.push('timer'), 0); queueMicrotask(() => order.push('micro')); Promise.resolve().then(() => order.push('then'))`)],
    ]));
  });

  it('follow the HTML standard where Node departs from it', async () => {
    const list = cases([
      ['ids are positive integers', `const a = setTimeout(() => {}, 1), b = setInterval(() => {}, 1); clearTimeout(a); clearInterval(b); return JSON.stringify([Number.isInteger(a) && a > 0, b > a]);`],
      ['this is the global object', `return await new Promise((r) => setTimeout(function () { r(this === globalThis); }, 0));`],
      ['this is the global object in strict code', `return await new Promise((r) => setTimeout(function () { 'use strict'; r(this === globalThis); }, 0));`],
      ['a string handler is code', `globalThis.__ran = []; setTimeout('__ran.push(1)', 0); setTimeout(42, 0); await new Promise((r) => setTimeout(r, 10)); const ran = __ran; delete globalThis.__ran; return JSON.stringify(ran);`],
      ['a Symbol handler', `try { setTimeout(Symbol('s'), 0); return 'no error'; } catch (e) { return e.name; }`],
      ['delays are WebIDL longs: 2 ** 32 + 40 is 40, 2 ** 31 and Infinity are 0', `const order = []; setTimeout(() => order.push('2^32+40'), 2 ** 32 + 40); setTimeout(() => order.push('20'), 20);
        setTimeout(() => order.push('2^31'), 2 ** 31); setTimeout(() => order.push('Infinity'), Infinity); setTimeout(() => order.push('5'), 5);
        await new Promise((r) => setTimeout(r, 80)); return JSON.stringify(order);`],
      ['clearTimeout takes the id as a WebIDL long', `const order = []; const a = setTimeout(() => order.push('a'), 5), b = setTimeout(() => order.push('b'), 5), c = setTimeout(() => order.push('c'), 5);
        clearTimeout(String(a)); clearTimeout(b + 0.5); clearTimeout({ valueOf: () => c + 2 ** 32 }); await new Promise((r) => setTimeout(r, 20)); return JSON.stringify(order);`],
      ['clearTimeout of a Symbol', `try { clearTimeout(Symbol('s')); return 'no error'; } catch (e) { return e.name; }`],
      ['lengths', `return JSON.stringify([setTimeout.length, setInterval.length, clearTimeout.length, clearInterval.length, queueMicrotask.length]);`],
    ]);
    assert.deepEqual(await outcomesInSandbox(sb, list), [
      { returned: '[true,true]' },
      { returned: true },
      { returned: true },
      { returned: '[1]' },
      { returned: 'TypeError' },
      { returned: '["2^31","Infinity","5","20","2^32+40"]' },
      { returned: '[]' },
      { returned: 'TypeError' },
      { returned: '[1,1,0,0,1]' },
    ]);
  });
});

describe('queueMicrotask', () => {
  it('behaves like Node’s', async () => {
    await compareWithNode(sb, cases([
      ['runs after the current task, in order', `const order = []; queueMicrotask(() => order.push(1)); Promise.resolve().then(() => order.push(2)); queueMicrotask(() => order.push(3)); order.push(0); await null; await null; return order;`],
      ['a non-function is a TypeError', `return [1, 'x', null, undefined, {}, Symbol('s')].map((v) => { try { queueMicrotask(v); return 'ok'; } catch (e) { return e.name; } });`],
      ['no argument is a TypeError', `return queueMicrotask();`],
      ['returns undefined', `return queueMicrotask(() => {});`],
      ['this is undefined (the global object in sloppy code)', `return await new Promise((r) => queueMicrotask(function () { r(this === globalThis || this === undefined); }));`],
      ['no arguments reach the callback', `return await new Promise((r) => queueMicrotask((...a) => r(a.length)));`],
    ]));
  });
});
