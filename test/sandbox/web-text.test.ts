/** TextEncoder, TextDecoder, atob and btoa inside the isolate, case by case against Node's. */
import { after, describe, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';
import { cases, compareWithNode } from './compare.ts';

const sb = new Sandbox();
after(() => sb.dispose());

const decode = (bytes: string, options = '{}', decodeOptions = '') => `return new TextDecoder('utf-8', ${options}).decode(new Uint8Array([${bytes}])${decodeOptions ? ', ' + decodeOptions : ''});`;

describe('TextEncoder and TextDecoder', () => {
  it('decode like Node: fatal, BOM, inputs of every kind, labels', async () => {
    await compareWithNode(sb, cases([
      ['BOM is removed', decode('0xef, 0xbb, 0xbf, 0x41')],
      ['BOM kept with ignoreBOM', decode('0xef, 0xbb, 0xbf, 0x41', '{ ignoreBOM: true }')],
      ['only a BOM', decode('0xef, 0xbb, 0xbf')],
      ['two BOMs', decode('0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf')],
      ['fatal on a bad byte', decode('0x41, 0xff', '{ fatal: true }')],
      ['fatal on a truncated sequence', decode('0xe2, 0x82', '{ fatal: true }')],
      ['fatal on a surrogate', decode('0xed, 0xa0, 0x80', '{ fatal: true }')],
      ['fatal with a good input', decode('0xe2, 0x82, 0xac', '{ fatal: true }')],
      ['fatal, then streaming an incomplete end', `const d = new TextDecoder('utf-8', { fatal: true }); return [d.decode(new Uint8Array([0xe2]), { stream: true }), d.decode()];`],
      ['streaming keeps nothing after a non-streaming call', `const d = new TextDecoder(); return [d.decode(new Uint8Array([0xe2]), { stream: true }), d.decode(new Uint8Array([0x82, 0xac]))];`],
      ['streaming a BOM split in two', `const d = new TextDecoder(); return [d.decode(new Uint8Array([0xef, 0xbb]), { stream: true }), d.decode(new Uint8Array([0xbf, 0x41]))];`],
      ['BOM looked for again after the stream ends', `const d = new TextDecoder(); return [d.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), d.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x42]))];`],
      ['ArrayBuffer input', `return new TextDecoder().decode(new Uint8Array([104, 105]).buffer);`],
      ['DataView input', `return new TextDecoder().decode(new DataView(new Uint8Array([0, 104, 105]).buffer, 1));`],
      ['Uint16Array input', `return new TextDecoder().decode(new Uint16Array([0x6968]));`],
      ['string input', `return new TextDecoder().decode('hi');`],
      ['null input', `return new TextDecoder().decode(null);`],
      ['no input', `return new TextDecoder().decode();`],
      ['labels', `return ['utf-8', 'UTF8', ' unicode-1-1-utf-8 ', 'unicode11utf8', 'x-unicode20utf8', 'nope', 'utf-8\\0'].map((l) => { try { return new TextDecoder(l).encoding; } catch (e) { return e.name; } });`],
      ['options read', `const d = new TextDecoder(undefined, { fatal: 1, ignoreBOM: 'yes' }); return [d.encoding, d.fatal, d.ignoreBOM];`],
      ['toStringTag', `return [Object.prototype.toString.call(new TextDecoder()), Object.prototype.toString.call(new TextEncoder())];`],
    ]));
  });

  it('encode like Node, encodeInto included', async () => {
    await compareWithNode(sb, cases([
      ['encode undefined', `return new TextEncoder().encode(undefined);`],
      ['encode null', `return new TextEncoder().encode(null);`],
      ['encode a Symbol', `return new TextEncoder().encode(Symbol('x'));`],
      ['encodeInto a Symbol', `return new TextEncoder().encodeInto(Symbol('x'), new Uint8Array(4));`],
      ['encode a number', `return new TextEncoder().encode(12);`],
      ['encode a lone surrogate', `return new TextEncoder().encode('a\\ud800b');`],
      ['encoding', `return new TextEncoder().encoding;`],
      ['encodeInto a small buffer', `const d = new Uint8Array(5); return [new TextEncoder().encodeInto('a€😀', d), d];`],
      ['encodeInto splits no character', `const d = new Uint8Array(3); return [new TextEncoder().encodeInto('€€', d), d];`],
      ['encodeInto a lone surrogate', `const d = new Uint8Array(8); return [new TextEncoder().encodeInto('\\udc00x', d), d];`],
      ['encodeInto an empty buffer', `return new TextEncoder().encodeInto('abc', new Uint8Array(0));`],
      ['encodeInto part of a buffer', `const b = new Uint8Array(6); new TextEncoder().encodeInto('abc', b.subarray(2, 4)); return b;`],
      ['encodeInto a Uint16Array', `return new TextEncoder().encodeInto('abc', new Uint16Array(4));`],
      ['encodeInto result shape', `const r = new TextEncoder().encodeInto('ab', new Uint8Array(4)); return [Object.keys(r), Object.getPrototypeOf(r) === Object.prototype];`],
      ['encode result type', `const r = new TextEncoder().encode('ab'); return [r.buffer.byteLength, r.byteOffset];`],
    ]));
  });
});

describe('atob and btoa', () => {
  it('decode and refuse like Node', async () => {
    const inputs = ['Zm9v', 'Zm9vYg', 'Zm9vYg=', 'Zm9vYg==', 'Zm9vYg===', ' Zm 9v\\nYmE= ', '\\tZg\\f==\\r', 'Zm9=v', '=Zm9v', 'Zm\\u000b9v', 'Zm9v\\u00a0', 'Z', 'Zg', 'Zh==', 'YQ', 'Y-_=', '', '====', 'ab=c', 'abc=d', '\\u0100', 'Zm9vYmFy!'];
    await compareWithNode(sb, cases([
      ...inputs.map((s): [string, string] => [`atob('${s}')`, `return atob('${s}');`]),
      ['atob(null)', `return atob(null);`],
      ['atob(undefined)', `return atob(undefined);`],
      ['atob(12)', `return atob(12);`],
      ['atob()', `return atob();`],
      ['atob of a Symbol', `return atob(Symbol('x'));`],
      ['btoa of Latin-1', `return btoa('\\u0000\\u00ff\\u0080 é');`],
      ['btoa of €', `return btoa('€');`],
      ['btoa(null)', `return btoa(null);`],
      ['btoa(undefined)', `return btoa(undefined);`],
      ['btoa()', `return btoa();`],
      ['btoa of an object', `return btoa({ toString() { return 'hi'; } });`],
      ['btoa of a Symbol', `return btoa(Symbol('x'));`],
    ]));
  });
});
