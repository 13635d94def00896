/** URL and URLSearchParams inside the isolate, case by case against Node's. */
import { after, describe, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';
import { cases, compareWithNode } from './compare.ts';

const sb = new Sandbox();
after(() => sb.dispose());

const PARTS = ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'];
/** Every part of `new URL(url, base)`, or what it throws. */
const parts = (url: string, base?: string) => `const u = new URL(${JSON.stringify(url)}${base === undefined ? '' : ', ' + JSON.stringify(base)}); return [${PARTS.map((p) => `u.${p}`).join(', ')}];`;
/** The href after each assignment of `values` to `setter`, starting from `url` every time. */
const setter = (url: string, name: string, values: string) =>
  `return ${values}.map((v) => { const u = new URL(${JSON.stringify(url)}); try { u.${name} = v; } catch (e) { return e.name; } return [u.href, u.${name}]; });`;

describe('URL', () => {
  it('parses odd inputs like Node', async () => {
    await compareWithNode(sb, cases([
      ['IPv4 shorthand in hex', parts('http://0x7f.1/')],
      ['IPv4 as one number', parts('http://2130706433/')],
      ['IPv4 in octal', parts('http://0177.0.0.01/')],
      ['IPv4 with a trailing dot', parts('http://1.2.3.4./')],
      ['IPv4 part too big', parts('http://1.2.3.256/')],
      ['IPv4 number too big', parts('http://4294967296/')],
      ['IPv4 with five parts', parts('http://1.2.3.4.5/')],
      ['a last label that is a number', parts('http://foo.1/')],
      ['hex digits without 0x', parts('http://0x/')],
      ['IPv6 compressed', parts('http://[0:0:0:0:0:0:0:1]/')],
      ['IPv6 with IPv4', parts('http://[::127.0.0.1]/')],
      ['IPv6 upper case', parts('http://[ABCD::EF]:0/')],
      ['IPv6 invalid', parts('http://[::1::]/')],
      ['IPv6 unclosed', parts('http://[::1/')],
      ['IDNA host', parts('https://Bücher.Example/')],
      ['IDNA fullwidth', parts('https://ｅｘａｍｐｌｅ．com/')],
      ['punycode host kept', parts('https://xn--bcher-kva.example/')],
      ['an invalid punycode host', parts('https://xn--/')],
      ['emoji host', parts('https://☃.net/')],
      ['percent-encoded host', parts('https://%62%C3%BCcher.example/')],
      ['forbidden host code point', parts('https://a<b/')],
      ['host with a space', parts('https://a b/')],
      ['non-special host kept as written', parts('foo://Ex%41mple.COM/')],
      ['non-special host with a forbidden code point', parts('foo://a<b/')],
      ['path percent-encoding', parts("https://a/ \"#<>?`{}|^'~é")],
      ['query percent-encoding', parts("https://a/?\"#<>` '{}|^é")],
      ['non-special query keeps a quote', parts("foo://a/?'x")],
      ['fragment percent-encoding', parts("https://a/#\"<>` '{}|^é#")],
      ['backslashes in a special URL', parts('https:\\\\a\\b\\c')],
      ['backslashes in a non-special URL', parts('foo://a\\b\\c')],
      ['port 0', parts('http://a:0/')],
      ['port with leading zeros', parts('http://a:00080/')],
      ['port too big', parts('http://a:65536/')],
      ['port not a number', parts('http://a:8x/')],
      ['default port of a non-special scheme', parts('foo://a:80/')],
      ['empty host with credentials', parts('http://user@/')],
      ['opaque path', parts('mailto:a b?c d#e f')],
      ['opaque path with trailing spaces', parts('data:a  ?b')],
      ['relative to an opaque base', parts('x', 'mailto:a')],
      ['fragment relative to an opaque base', parts('#x', 'mailto:a')],
      ['scheme-relative', parts('//h/p', 'foo://a/b')],
      ['dot segments', parts('./a/../../b/./c/.', 'http://h/x/y/z')],
      ['encoded dot segments', parts('/a/%2e%2E/b/%2e', 'http://h/')],
      ['non-special path starting //', parts('foo:/.//p')],
      ['file with a host', parts('file://host.example/share')],
      ['file with localhost', parts('file://LOCALHOST/x')],
      ['file relative', parts('../y', 'file:///a/b/c')],
      ['base that is invalid', parts('/x', 'nope')],
      ['no base', parts('/x')],
      ['a URL object as input', `return new URL(new URL('https://a/b?c#d')).href;`],
      ['an object with toString', `return new URL({ toString: () => 'https://t/' }).href;`],
      ['URL as base', `return new URL('c', new URL('https://a/b/')).href;`],
      ['no arguments', `return new URL();`],
      ['called without new', `return URL('https://a/');`],
      ['a Symbol', `return new URL(Symbol('x'));`],
      ['undefined base is no base', `return new URL('https://a/', undefined).href;`],
      ['null base', `return new URL('/x', null).href;`],
      ['a Symbol as base', `return new URL('https://a/', Symbol('x'));`],
      ['a base with a throwing toString', `return new URL('x', { toString() { throw new RangeError('mine'); } });`],
    ]));
  });

  it('canParse and parse like Node', async () => {
    await compareWithNode(sb, cases([
      ['canParse', `return [URL.canParse('https://a'), URL.canParse('nope'), URL.canParse('/x', 'https://a'), URL.canParse('/x', 'nope'), URL.canParse('x', undefined)];`],
      ['canParse without arguments', `return URL.canParse();`],
      ['parse', `return [URL.parse('https://a/b').href, URL.parse('nope'), URL.parse('c', 'https://a/b').href, URL.parse('/x', 'nope')];`],
      ['parse returns a URL', `return URL.parse('https://a') instanceof URL;`],
      ['parse without arguments', `return URL.parse();`],
      ['function lengths', `return [URL.length, URL.canParse.length, URL.parse.length];`],
    ]));
  });

  it('setters like Node, invalid values included', async () => {
    await compareWithNode(sb, cases([
      ['href invalid throws', setter('https://a/', 'href', `['nope', '', 'https://b/c']`)],
      ['href relative throws', setter('https://a/', 'href', `['/x']`)],
      ['protocol', setter('https://u:p@a:8080/x', 'protocol', `['http', 'ftp:', 'foo', 'file', 'HTTPS:', 'ws:x', ' http', '1http', 'http:/', '']`)],
      ['protocol of a non-special URL', setter('foo://a/x', 'protocol', `['bar', 'http', 'bar:junk']`)],
      ['protocol of a file URL', setter('file:///x', 'protocol', `['http', 'foo']`)],
      ['protocol dropping a default port', setter('https://a:80/', 'protocol', `['http']`)],
      ['username', setter('https://a/', 'username', `['n@m:e', '', 'é /']`)],
      ['username of a file URL', setter('file:///x', 'username', `['a']`)],
      ['password', setter('https://u@a/', 'password', `['p@ss:w', '']`)],
      ['host', setter('https://a:1/x', 'host', `['b', 'b:2', 'b:', 'b:x', 'b:99999', '', 'b/c', 'b?c', 'b#c', '[::1]:3', 'a b', 'xn--', 'Bücher', '0x7f.1', ':8']`)],
      ['host of a non-special URL', setter('foo://a/x', 'host', `['B', '', 'b:2', 'a b']`)],
      ['host of an opaque URL', setter('mailto:x', 'host', `['b']`)],
      ['host of a file URL', setter('file://h/x', 'host', `['localhost', 'b', '', 'b:2']`)],
      ['hostname', setter('https://a:1/x', 'hostname', `['b', 'b:2', '', 'b/c', '[::1]', '1.2.3', 'a%20b']`)],
      ['port', setter('https://a/x', 'port', `['8080', '443', '', '0', '65535', '65536', '12ab', 'ab', ' 1', '-1', '1.5', '+1', '080']`)],
      ['port as a number', `const u = new URL('https://a/'); u.port = 8080.9; return u.href;`],
      ['port of a file URL', setter('file:///x', 'port', `['1']`)],
      ['port of a host-less URL', setter('foo:/x', 'port', `['1']`)],
      ['pathname', setter('https://a/x', 'pathname', `['b c', '/a/../b', '', '?#', '\\\\x', 'é', '%2e']`)],
      ['pathname of a non-special URL', setter('foo://a/x', 'pathname', `['b', '', '\\\\x']`)],
      ['pathname of an opaque URL', setter('mailto:x', 'pathname', `['y']`)],
      ['search', setter('https://a/x?q#f', 'search', `['a=b c', '?', '??a', '', '#x', "'"]`)],
      ['search of a non-special URL', setter('foo://a/x', 'search', `["'"]`)],
      ['hash', setter('https://a/x?q#f', 'hash', `['x y', '#', '##a', '', '<>']`)],
      ['search and hash on an opaque path with spaces', `const u = new URL('data:a  #f'); u.hash = ''; return [u.href, u.pathname];`],
      ['tabs and newlines are skipped', `const u = new URL('https://a/x'); u.pathname = 'b\\tc\\n'; u.search = '\\t?q=\\r1'; u.hash = 'h\\ni'; u.host = 'd\\t.e'; u.port = '8\\t1'; u.protocol = 'ht\\ntp'; u.username = 'u\\ts'; return u.href;`],
      ['host emptied on a non-special URL with credentials or a port', setter('foo://u@a:1/x', 'host', `['', ':8']`)],
      ['host after a colon alone', setter('foo://a/x', 'host', `[':8']`)],
      ['hostname with a port', setter('foo://a/x', 'hostname', `['b:1', '[::1]:1']`)],
      ['pathname emptied without a host', setter('foo:/x', 'pathname', `['']`)],
      ['a Symbol to each setter', `const u = new URL('https://a/'); return ['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'].map((k) => { try { u[k] = Symbol('s'); return u.href; } catch (e) { return e.name; } });`],
      ['an invalid href leaves the URL as it was', `const u = new URL('https://a/?x=1'); try { u.href = 'nope'; } catch {} return [u.href, [...u.searchParams]];`],
      ['origin is read-only', `const u = new URL('https://a/'); u.origin = 'https://b'; return u.href;`],
      ['searchParams is read-only', `const u = new URL('https://a/'); u.searchParams = 1; return u.href;`],
    ]));
  });

  it('origins like Node', async () => {
    await compareWithNode(sb, cases([
      ['origins', `return ['https://a:443/', 'http://a:81/', 'foo://a/', 'file:///x', 'ws://a/', 'ftp://a/', 'data:x', 'https://[::1]/', 'http://Bücher/']
        .map((u) => new URL(u).origin);`],
      ['blob origins', `return ['blob:https://a:1/x', 'blob:foo://a/', 'blob:nope'].map((u) => new URL(u).origin);`],
    ]));
  });

  it('keeps searchParams live in both directions', async () => {
    await compareWithNode(sb, cases([
      ['the same object every time', `const u = new URL('https://a/?x=1'); return u.searchParams === u.searchParams;`],
      ['params change the URL', `const u = new URL('https://a/?x=1#f'); u.searchParams.append('y', 'a b'); return u.href;`],
      ['emptied params drop the ?', `const u = new URL('https://a/?x=1#f'); u.searchParams.delete('x'); return [u.href, u.search];`],
      ['sort changes the URL', `const u = new URL('https://a/?b=1&a=2'); u.searchParams.sort(); return u.href;`],
      ['set changes the URL', `const u = new URL('https://a/?b=1&b=2'); u.searchParams.set('b', '3'); return u.href;`],
      ['search changes the params', `const u = new URL('https://a/?x=1'); const p = u.searchParams; u.search = 'y=2'; return [...p];`],
      ['href changes the params', `const u = new URL('https://a/?x=1'); const p = u.searchParams; u.href = 'https://b/?z=3'; return [...p];`],
      ['params re-serialize the query', `const u = new URL('https://a/?a=b%20c&d=e+f'); u.searchParams.append('g', 'h'); return u.href;`],
      ['search of an empty ?', `const u = new URL('https://a/?'); return [u.search, u.href, u.searchParams.size];`],
      ['empty params keep a ?', `const u = new URL('https://a/?'); u.searchParams.sort(); return u.href;`],
      ['params of a non-special URL', `const u = new URL('foo://a/?x'); u.searchParams.append('y', "'"); return u.href;`],
      ['params of an opaque URL', `const u = new URL('mailto:a?x=1'); u.searchParams.set('y', '2'); return [u.href, u.pathname];`],
      ['removing the query of an opaque path with trailing spaces', `const u = new URL('data:a  ?x=1'); u.searchParams.delete('x'); return [u.href, u.pathname];`],
      ['a URLSearchParams from a URL’s is not linked', `const u = new URL('https://a/?x=1'); const p = new URLSearchParams(u.searchParams); p.append('y', '2'); return [u.href, p.toString()];`],
    ]));
  });

  it('serializes and describes itself like Node', async () => {
    await compareWithNode(sb, cases([
      ['toString and toJSON', `const u = new URL('https://a/b'); return [u.toString(), u.toJSON(), JSON.stringify({ u }), String(u), \`\${u}\`];`],
      ['toStringTag', `return [Object.prototype.toString.call(new URL('https://a/')), Object.prototype.toString.call(URL.prototype)];`],
      ['toStringTag is a data property', `return Object.getOwnPropertyDescriptor(URL.prototype, Symbol.toStringTag);`],
      ['static methods are enumerable', `return Object.keys(URL).filter((k) => k === 'parse' || k === 'canParse').sort();`],
      ['own keys', `return [Object.keys(new URL('https://a/')), Object.getOwnPropertyNames(new URL('https://a/'))];`],
      ['prototype members are enumerable', `return Object.keys(URL.prototype).sort();`],
      ['href descriptor', `const d = Object.getOwnPropertyDescriptor(URL.prototype, 'href'); return [typeof d.get, typeof d.set, d.enumerable, d.configurable];`],
      ['getter on another object', `return Object.getOwnPropertyDescriptor(URL.prototype, 'href').get.call({});`],
      ['toString on another object', `return URL.prototype.toString.call({});`],
      ['structuredClone of a URL', `return structuredClone(new URL('https://a/'));`],
    ]));
  });
});

describe('URLSearchParams', () => {
  it('is made from a string, a record or a sequence like Node', async () => {
    await compareWithNode(sb, cases([
      ['from a string', `return [...new URLSearchParams('?a=1&b=x+y&a=%E2%82%AC&c&=e&d=%zz&&f==g')];`],
      ['only the first ? is dropped', `return [...new URLSearchParams('??a=1')];`],
      ['invalid UTF-8 in percent escapes', `return [...new URLSearchParams('a=%FF%C3&b=%E2%82')];`],
      ['from a record', `return [...new URLSearchParams({ b: 1, a: 'two', c: null, d: undefined })];`],
      ['record with symbol and non-enumerable keys', `const o = { a: 1, [Symbol('s')]: 2 }; Object.defineProperty(o, 'h', { value: 3 }); return [...new URLSearchParams(o)];`],
      ['from a sequence', `return [...new URLSearchParams([['a', 1], ['b', null]])];`],
      ['sequence of strings', `return [...new URLSearchParams(['ab', 'cd'])];`],
      ['sequence with a bad pair', `return new URLSearchParams([['a', 'b', 'c']]);`],
      ['sequence with a non-iterable pair', `return new URLSearchParams([1]);`],
      ['from a Map', `return [...new URLSearchParams(new Map([['m', 'n']]))];`],
      ['from another URLSearchParams', `return [...new URLSearchParams(new URLSearchParams('a=1'))];`],
      ['from undefined and null', `return [[...new URLSearchParams(undefined)], [...new URLSearchParams(null)], [...new URLSearchParams()]];`],
      ['from a number', `return [...new URLSearchParams(12)];`],
      ['from a function', `const f = () => {}; f.a = 1; return [...new URLSearchParams(f)];`],
      ['from a Symbol', `return new URLSearchParams(Symbol('x'));`],
      ['record with lone surrogates', `return [...new URLSearchParams({ '\\ud800': '\\udc00' })];`],
      ['string with a lone surrogate', `return new URLSearchParams('a=\\ud800').get('a');`],
      ['record keys that become the same name', `return [...new URLSearchParams({ '\\ud800': '1', a: '2', '\\udc00': '3' })];`],
      ['names and values with lone surrogates', `const p = new URLSearchParams(); p.append('\\ud800', '\\udfff'); p.set('x', '\\ud800'); return [[...p], p.get('\\udc00'), p.has('\\ufffd')];`],
      ['a throwing value stops the record', `return new URLSearchParams({ a: { toString() { throw new RangeError('mine'); } } });`],
      ['an iterator that is not a function', `return new URLSearchParams({ [Symbol.iterator]: 1 });`],
      ['called without new', `return URLSearchParams('a=1');`],
    ]));
  });

  it('reads and changes like Node', async () => {
    await compareWithNode(sb, cases([
      ['get, getAll, has', `const p = new URLSearchParams('a=1&a=2&b='); return [p.get('a'), p.getAll('a'), p.get('b'), p.get('c'), p.has('b'), p.has('c'), p.getAll('c')];`],
      ['has with a value', `const p = new URLSearchParams('a=1&a=2'); return [p.has('a', '2'), p.has('a', '3'), p.has('a', undefined), p.has('a', 1)];`],
      ['delete with a value', `const p = new URLSearchParams('a=1&a=2&a=1&b=1'); p.delete('a', '1'); return p.toString();`],
      ['delete with undefined deletes every one', `const p = new URLSearchParams('a=1&a=2'); p.delete('a', undefined); return p.toString();`],
      ['delete with a number value', `const p = new URLSearchParams('a=1&a=2'); p.delete('a', 2); return p.toString();`],
      ['set replaces the first and drops the rest', `const p = new URLSearchParams('a=1&b=2&a=3'); p.set('a', 'x'); return p.toString();`],
      ['set appends a new name', `const p = new URLSearchParams('a=1'); p.set('b', 'x'); return p.toString();`],
      ['size', `const p = new URLSearchParams('a=1&a=2&b'); const s = p.size; p.append('c', ''); return [s, p.size];`],
      ['sort is stable and by code units', `const p = new URLSearchParams('z=1&a=2&\\u{1F600}=3&\\uFFFD=4&a=5&A=6&=7'); p.sort(); return [...p];`],
      ['append without enough arguments', `return new URLSearchParams().append('a');`],
      ['get without arguments', `return new URLSearchParams().get();`],
      ['has without arguments', `return new URLSearchParams('undefined=1').has();`],
      ['delete without arguments', `return new URLSearchParams().delete();`],
      ['set without enough arguments', `return new URLSearchParams().set('a');`],
      ['getAll without arguments', `return new URLSearchParams().getAll();`],
      ['name as a Symbol', `return new URLSearchParams().get(Symbol('x'));`],
      ['values are strings', `const p = new URLSearchParams(); p.append(1, null); p.append(undefined, {}); return [...p];`],
      ['method on another object', `return URLSearchParams.prototype.get.call({}, 'a');`],
    ]));
  });

  it('serializes like Node', async () => {
    await compareWithNode(sb, cases([
      ['spaces and reserved characters', `return new URLSearchParams({ 'a b': "c+d&e=f/g?h#i%j'k(l)m!n~o*p-q.r_s" }).toString();`],
      ['non-ASCII and lone surrogates', `return new URLSearchParams({ 'é€😀': '\\ud800' }).toString();`],
      ['every ASCII character', `let s = ''; for (let i = 0; i < 128; i++) s += String.fromCharCode(i); return new URLSearchParams({ s }).toString();`],
      ['round trip', `const s = 'a=%2B+%20&b=%26'; return [new URLSearchParams(s).toString(), new URLSearchParams(s).get('a')];`],
      ['empty', `return new URLSearchParams('').toString();`],
      ['String()', `return String(new URLSearchParams('a=1'));`],
      ['toStringTag', `return [Object.prototype.toString.call(new URLSearchParams()), Object.prototype.toString.call(URLSearchParams.prototype)];`],
    ]));
  });

  it('iterates like Node', async () => {
    await compareWithNode(sb, cases([
      ['entries, keys, values', `const p = new URLSearchParams('a=1&b=2'); return [[...p.entries()], [...p.keys()], [...p.values()], [...p]];`],
      ['forEach arguments and this', `const p = new URLSearchParams('a=1'); const out = []; const t = {}; p.forEach(function (v, k, o) { out.push(v, k, o === p, this === t); }, t); return out;`],
      ['forEach with a non-function', `return new URLSearchParams('a=1').forEach(1);`],
      ['forEach of nothing with a non-function', `return new URLSearchParams().forEach(1);`],
      ['an iterator keeps its place past the end', `const p = new URLSearchParams('a=1'); const it = p.keys(); const out = [it.next().value, it.next().done]; p.append('b', ''); out.push(it.next().value); return out;`],
      ['iterator next on another object', `const next = Object.getPrototypeOf(new URLSearchParams().keys()).next; return next.call({});`],
      ['iterator sees appends made during iteration', `const p = new URLSearchParams('a=1'); const out = []; for (const [k] of p) { out.push(k); if (out.length < 3) p.append('n' + out.length, ''); } return out;`],
      ['iterator sees deletions made during iteration', `const p = new URLSearchParams('a=1&b=2&c=3'); const out = []; for (const [k] of p) { out.push(k); if (k === 'a') p.delete('a'); } return out;`],
      ['forEach sees changes made during iteration', `const p = new URLSearchParams('a=1&b=2&c=3'); const out = []; p.forEach((v, k) => { out.push(k); if (k === 'a') p.delete('a'); }); return out;`],
      ['iterator toStringTag', `return Object.prototype.toString.call(new URLSearchParams().entries());`],
      ['iterator prototype chain', `const it = new URLSearchParams().entries(); const proto = Object.getPrototypeOf(it); return [Object.getPrototypeOf(proto) === Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())), Object.getOwnPropertyNames(proto)];`],
      ['iterator next result', `const it = new URLSearchParams('a=1').keys(); return [it.next(), it.next()];`],
      ['Symbol.iterator is entries', `return URLSearchParams.prototype[Symbol.iterator] === URLSearchParams.prototype.entries;`],
      ['prototype members are enumerable', `return Object.keys(URLSearchParams.prototype).sort();`],
      ['size descriptor', `const d = Object.getOwnPropertyDescriptor(URLSearchParams.prototype, 'size'); return [typeof d.get, d.set, d.enumerable];`],
      ['own keys', `return Object.getOwnPropertyNames(new URLSearchParams('a=1'));`],
    ]));
  });
});
