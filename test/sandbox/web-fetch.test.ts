/** Response and Headers inside the isolate, case by case against Node's (undici's). */
import { after, describe, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';
import { cases, compareWithNode } from './compare.ts';

const sb = new Sandbox();
after(() => sb.dispose());

describe('Response and Headers', () => {
  it('behave like Node’s', async () => {
    await compareWithNode(sb, cases([
      ['text, json, ok, status', `const r = new Response('{"a":1}', { status: 201, statusText: 'Created' }); return [r.ok, r.status, r.statusText, await r.json(), r.bodyUsed];`],
      ['body read twice', `const r = new Response('x'); await r.text(); return await r.text();`],
      ['json after text', `const r = new Response('{}'); await r.text(); return await r.json();`],
      ['clone after reading', `const r = new Response('x'); await r.text(); return r.clone();`],
      ['clone then read both', `const r = new Response('x'); const c = r.clone(); return [await r.text(), await c.text()];`],
      ['invalid json', `return await new Response('{').json();`],
      ['not ok', `const r = new Response('', { status: 404 }); return [r.ok, r.status];`],
      ['status out of range', `return new Response('', { status: 600 });`],
      ['status 199', `return new Response('', { status: 199 });`],
      ['headers case-insensitive', `const r = new Response('', { headers: { 'Content-Type': 'text/x' } }); return [r.headers.get('CONTENT-TYPE'), r.headers.has('content-type'), r.headers.get('nope')];`],
      ['default content type of a string body', `return new Response('x').headers.get('content-type');`],
      ['no body', `const r = new Response(); return [await r.text(), r.headers.get('content-type')];`],
      ['content type given wins', `return new Response('x', { headers: { 'content-type': 'application/json' } }).headers.get('content-type');`],
      ['no content type for bytes', `return new Response(new Uint8Array([1])).headers.get('content-type');`],
      ['form content type for URLSearchParams', `return new Response(new URLSearchParams('a=1')).headers.get('content-type');`],
      ['arrayBuffer', `return await new Response('é').arrayBuffer();`],
      ['body from bytes', `return await new Response(new Uint8Array([104, 105])).text();`],
      ['Response.json', `const r = Response.json({ a: [1] }, { status: 202 }); return [r.status, r.headers.get('content-type'), await r.text()];`],
      ['Response.json of undefined', `return Response.json(undefined);`],
      ['Headers append and get', `const h = new Headers(); h.append('a', '1'); h.append('A', '2'); return [h.get('a'), [...h]];`],
      ['Headers sorted iteration', `return [...new Headers({ b: '1', a: '2', C: '3' })];`],
      ['Headers invalid name', `return new Headers({ 'a b': '1' });`],
      ['Headers value with a newline', `return new Headers({ a: 'x\\ny' });`],
      ['Headers value trimmed', `return new Headers({ a: ' \\t x \\t ' }).get('a');`],
      ['Headers from pairs', `return [...new Headers([['a', '1'], ['b', '2']])];`],
      ['Headers from a bad pair', `return new Headers([['a']]);`],
      ['Headers toStringTag', `return Object.prototype.toString.call(new Headers());`],
      ['Response toStringTag', `return Object.prototype.toString.call(new Response());`],
      ['Response type and redirected', `const r = new Response(); return [r.type, r.redirected, r.url];`],
    ]));
  });
});
