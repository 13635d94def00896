/** crypto and crypto.subtle inside the isolate, case by case against Node's WebCrypto. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';
import { cases, compareWithNode, outcomesInSandbox } from './compare.ts';

const sb = new Sandbox();
after(() => sb.dispose());

const SOURCES: [string, string][] = [
  ['ArrayBuffer', `new TextEncoder().encode('abc').buffer`],
  ['Uint8Array', `new TextEncoder().encode('abc')`],
  ['Uint8Array on part of a buffer', `new Uint8Array([9, 97, 98, 99, 9]).subarray(1, 4)`],
  ['Int32Array', `new Int32Array([1, -2, 3])`],
  ['Float64Array', `new Float64Array([1.5])`],
  ['BigUint64Array', `new BigUint64Array([7n])`],
  ['DataView with offset', `new DataView(new Uint8Array([9, 97, 98, 99, 9]).buffer, 1, 3)`],
  ['empty Uint8Array', `new Uint8Array(0)`],
];
const NOT_SOURCES: [string, string][] = [
  ['a string', `'abc'`],
  ['a number', `3`],
  ['null', `null`],
  ['an array', `[97, 98, 99]`],
  ['a plain object', `({ length: 3 })`],
];

const hmacKey = (hash = `'SHA-256'`, usages = `['sign', 'verify']`) =>
  `await crypto.subtle.importKey('raw', new TextEncoder().encode('secret'), { name: 'HMAC', hash: ${hash} }, true, ${usages})`;

describe('crypto.subtle.digest', () => {
  it('accepts every spelling of the algorithm names like Node', async () => {
    const names = [`'SHA-1'`, `'SHA-256'`, `'SHA-384'`, `'SHA-512'`, `'sha-256'`, `'Sha-512'`, `{ name: 'SHA-256' }`, `{ name: 'sha-1' }`, `'SHA256'`, `'MD5'`, `'HMAC'`, `{}`, `{ name: 1 }`, `1`, `null`, `undefined`];
    await compareWithNode(sb, cases(names.map((n) => [`digest(${n})`, `return await crypto.subtle.digest(${n}, new Uint8Array([1, 2]));`])));
  });

  it('accepts every kind of BufferSource and nothing else, like Node', async () => {
    await compareWithNode(sb, cases([
      ...SOURCES.map(([name, src]): [string, string] => [name, `return await crypto.subtle.digest('SHA-256', ${src});`]),
      ...NOT_SOURCES.map(([name, src]): [string, string] => [name, `return await crypto.subtle.digest('SHA-256', ${src});`]),
      ['no data', `return await crypto.subtle.digest('SHA-256');`],
      ['no argument at all', `return await crypto.subtle.digest();`],
      ['rejects instead of throwing', `const p = crypto.subtle.digest('nope', new Uint8Array(1)); const t = typeof p.then; try { await p; } catch (e) { return [t, e.name]; }`],
      ['the bytes are taken when it is called', `const u = new Uint8Array([1]); const p = crypto.subtle.digest('SHA-256', u); u[0] = 2; return [await p, await crypto.subtle.digest('SHA-256', new Uint8Array([1]))];`],
    ]));
  });
});

describe('crypto.subtle HMAC', () => {
  it('imports keys like Node', async () => {
    await compareWithNode(sb, cases([
      ['raw key from Uint8Array', `return ${hmacKey()};`],
      ['raw key from ArrayBuffer', `return await crypto.subtle.importKey('raw', new Uint8Array([1, 2]).buffer, { name: 'HMAC', hash: 'SHA-1' }, false, ['sign']);`],
      ['raw key from DataView', `return await crypto.subtle.importKey('raw', new DataView(new Uint8Array([0, 1, 2]).buffer, 1), { name: 'HMAC', hash: 'SHA-512' }, false, ['verify']);`],
      ['hash spelled in lower case', `return ${hmacKey(`'sha-384'`)};`],
      ['hash as an object', `return ${hmacKey(`{ name: 'sha-256' }`)};`],
      ['algorithm name in lower case', `return await crypto.subtle.importKey('raw', new Uint8Array([1]), { name: 'hmac', hash: 'SHA-256' }, true, ['sign']);`],
      ['algorithm as a string', `return await crypto.subtle.importKey('raw', new Uint8Array([1]), 'HMAC', true, ['sign']);`],
      ['no hash', `return await crypto.subtle.importKey('raw', new Uint8Array([1]), { name: 'HMAC' }, true, ['sign']);`],
      ['unknown hash', `return ${hmacKey(`'SHA-3'`)};`],
      ['length equal to the key', `return await crypto.subtle.importKey('raw', new Uint8Array([1, 2]), { name: 'HMAC', hash: 'SHA-256', length: 16 }, true, ['sign']);`],
      ['length a few bits shorter', `return await crypto.subtle.importKey('raw', new Uint8Array([1, 2]), { name: 'HMAC', hash: 'SHA-256', length: 12 }, true, ['sign']);`],
      ['length a byte shorter', `return await crypto.subtle.importKey('raw', new Uint8Array([1, 2]), { name: 'HMAC', hash: 'SHA-256', length: 8 }, true, ['sign']);`],
      ['length longer than the key', `return await crypto.subtle.importKey('raw', new Uint8Array([1, 2]), { name: 'HMAC', hash: 'SHA-256', length: 24 }, true, ['sign']);`],
      ['empty raw key', `return await crypto.subtle.importKey('raw', new Uint8Array(0), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
      ['no usages', `return ${hmacKey(`'SHA-256'`, '[]')};`],
      ['usages in any order and repeated', `return ${hmacKey(`'SHA-256'`, `['verify', 'sign', 'verify']`)};`],
      ['a usage HMAC has not', `return ${hmacKey(`'SHA-256'`, `['sign', 'encrypt']`)};`],
      ['an unknown usage', `return ${hmacKey(`'SHA-256'`, `['nope']`)};`],
      ['usages not a sequence', `return ${hmacKey(`'SHA-256'`, `'sign'`)};`],
      ['extractable not a boolean', `return await crypto.subtle.importKey('raw', new Uint8Array([1]), { name: 'HMAC', hash: 'SHA-256' }, 'yes', ['sign']);`],
      ['unknown format', `return await crypto.subtle.importKey('bogus', new Uint8Array([1]), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
      ['spki format for HMAC', `return await crypto.subtle.importKey('spki', new Uint8Array([1]), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
      ['raw key data a string', `return await crypto.subtle.importKey('raw', 'secret', { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
      ['raw key data a JWK', `return await crypto.subtle.importKey('raw', { kty: 'oct', k: 'AQ' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
      ['unknown algorithm', `return await crypto.subtle.importKey('raw', new Uint8Array([1]), { name: 'FOO' }, true, ['sign']);`],
      ['missing arguments', `return await crypto.subtle.importKey('raw', new Uint8Array([1]));`],
      ['the key bytes are taken when it is called', `const u = new Uint8Array([1]); const p = crypto.subtle.importKey('raw', u, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']); u[0] = 2; return await crypto.subtle.exportKey('raw', await p);`],
    ]));
  });

  it('imports JWKs like Node', async () => {
    const jwk = (fields: string, alg = `{ name: 'HMAC', hash: 'SHA-256' }`, extractable = 'true', usages = `['sign']`) =>
      `const k = await crypto.subtle.importKey('jwk', { kty: 'oct', k: 'c2VjcmV0', ${fields} }, ${alg}, ${extractable}, ${usages}); return [k, await crypto.subtle.exportKey('raw', k).catch((e) => e.name)];`;
    await compareWithNode(sb, cases([
      ['plain', jwk('')],
      ['with matching alg', jwk(`alg: 'HS256'`)],
      ['with another alg', jwk(`alg: 'HS512'`)],
      ['with use sig', jwk(`use: 'sig'`)],
      ['with use enc', jwk(`use: 'enc'`)],
      ['with key_ops covering the usages', jwk(`key_ops: ['sign', 'verify']`)],
      ['with key_ops missing a usage', jwk(`key_ops: ['verify']`)],
      ['ext false but extractable asked', jwk(`ext: false`)],
      ['ext false and not extractable', jwk(`ext: false`, undefined, 'false')],
      ['base64url characters', `const k = await crypto.subtle.importKey('jwk', { kty: 'oct', k: '-_-_' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']); return crypto.subtle.exportKey('raw', k);`],
      ['padded k', `return await crypto.subtle.importKey('jwk', { kty: 'oct', k: 'AQ==' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
      ['k with standard base64 characters', `return await crypto.subtle.importKey('jwk', { kty: 'oct', k: 'a+b/' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
      ['empty k', `return await crypto.subtle.importKey('jwk', { kty: 'oct', k: '' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
      ['kty RSA', `return await crypto.subtle.importKey('jwk', { kty: 'RSA', k: 'AQ' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
      ['no k', `return await crypto.subtle.importKey('jwk', { kty: 'oct' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
    ]));
  });

  it('signs and verifies every kind of BufferSource like Node', async () => {
    await compareWithNode(sb, cases([
      ...SOURCES.map(([name, src]): [string, string] => [`sign ${name}`, `const key = ${hmacKey()}; return await crypto.subtle.sign('HMAC', key, ${src});`]),
      ...NOT_SOURCES.map(([name, src]): [string, string] => [`sign ${name}`, `const key = ${hmacKey()}; return await crypto.subtle.sign('HMAC', key, ${src});`]),
      ...SOURCES.map(([name, src]): [string, string] => [
        `verify a signature given as ${name}`,
        `const key = ${hmacKey()}; const data = ${src}; const sig = await crypto.subtle.sign('HMAC', key, data);
         const bytes = new Uint8Array(sig); return [await crypto.subtle.verify('HMAC', key, sig, data), await crypto.subtle.verify('HMAC', key, new DataView(sig), data),
           await crypto.subtle.verify('HMAC', key, bytes.subarray(1), data), await crypto.subtle.verify({ name: 'hmac' }, key, new Uint8Array(32), data)];`,
      ]),
      ...NOT_SOURCES.map(([name, src]): [string, string] => [`verify a signature given as ${name}`, `const key = ${hmacKey()}; return await crypto.subtle.verify('HMAC', key, ${src}, new Uint8Array(1));`]),
      ['sign with every hash', `const out = []; for (const h of ['SHA-1', 'SHA-256', 'SHA-384', 'SHA-512']) out.push(await crypto.subtle.sign('HMAC', ${hmacKey('h')}, new Uint8Array([1])));  return out;`],
      ['sign with a key that only verifies', `return await crypto.subtle.sign('HMAC', ${hmacKey(`'SHA-256'`, `['verify']`)}, new Uint8Array(1));`],
      ['verify with a key that only signs', `return await crypto.subtle.verify('HMAC', ${hmacKey(`'SHA-256'`, `['sign']`)}, new Uint8Array(32), new Uint8Array(1));`],
      ['sign with another algorithm than the key’s', `return await crypto.subtle.sign('RSASSA-PKCS1-v1_5', ${hmacKey()}, new Uint8Array(1));`],
      ['verify with another algorithm than the key’s', `return await crypto.subtle.verify('Ed25519', ${hmacKey()}, new Uint8Array(64), new Uint8Array(1));`],
      ['sign with an unknown algorithm', `return await crypto.subtle.sign('FOO', ${hmacKey()}, new Uint8Array(1));`],
      ['sign with something that is not a key', `return await crypto.subtle.sign('HMAC', { type: 'secret' }, new Uint8Array(1));`],
      ['sign with no data', `return await crypto.subtle.sign('HMAC', ${hmacKey()});`],
      ['verify with no data', `return await crypto.subtle.verify('HMAC', ${hmacKey()}, new Uint8Array(32));`],
      ['sign rejects instead of throwing', `const p = crypto.subtle.sign('HMAC', {}, new Uint8Array(1)); const t = typeof p.then; try { await p; } catch (e) { return [t, e.name]; }`],
      ['the signature is taken when verify is called', `const key = ${hmacKey()}; const data = new Uint8Array([1]); const sig = new Uint8Array(await crypto.subtle.sign('HMAC', key, data));
         const p = crypto.subtle.verify('HMAC', key, sig, data); sig[0] ^= 1; return await p;`],
    ]));
  });

  it('generates and exports keys like Node', async () => {
    await compareWithNode(sb, cases([
      ['generateKey defaults to the block size', `const k = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['sign']); return [k.algorithm, (await crypto.subtle.exportKey('raw', k)).byteLength];`],
      ['generateKey SHA-512', `const k = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-512' }, true, ['sign']); return k.algorithm;`],
      ['generateKey with a length', `const k = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256', length: 128 }, true, ['sign']); return [k.algorithm, (await crypto.subtle.exportKey('raw', k)).byteLength];`],
      ['generateKey with a length that is not whole bytes', `const k = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256', length: 12 }, true, ['sign']); return [k.algorithm, (await crypto.subtle.exportKey('raw', k)).byteLength];`],
      ['generateKey with length 0', `return await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256', length: 0 }, true, ['sign']);`],
      ['generateKey with no usages', `return await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, []);`],
      ['generateKey with a usage HMAC has not', `return await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['decrypt']);`],
      ['generateKey with no hash', `return await crypto.subtle.generateKey({ name: 'HMAC' }, true, ['sign']);`],
      ['exportKey raw', `return await crypto.subtle.exportKey('raw', ${hmacKey()});`],
      ['exportKey jwk', `return await crypto.subtle.exportKey('jwk', ${hmacKey(`'SHA-384'`, `['verify', 'sign']`)});`],
      ['exportKey jwk of a key with no whole bytes length', `const k = await crypto.subtle.importKey('raw', new Uint8Array([1, 2]), { name: 'HMAC', hash: 'SHA-1', length: 12 }, true, ['sign']); return await crypto.subtle.exportKey('jwk', k);`],
      ['exportKey spki', `return await crypto.subtle.exportKey('spki', ${hmacKey()});`],
      ['exportKey of an unknown format', `return await crypto.subtle.exportKey('bogus', ${hmacKey()});`],
      ['exportKey of something that is not a key', `return await crypto.subtle.exportKey('raw', {});`],
      ['exportKey of a key that is not extractable', `return await crypto.subtle.exportKey('raw', await crypto.subtle.importKey('raw', new Uint8Array([1]), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']));`],
    ]));
  });

  it('gives CryptoKeys the shape Node gives them', async () => {
    await compareWithNode(sb, cases([
      ['own properties', `const k = ${hmacKey()}; return [Object.keys(k), JSON.stringify(k), Object.prototype.toString.call(k), k instanceof CryptoKey];`],
      ['the same algorithm and usages objects on every read', `const k = ${hmacKey()}; return [k.algorithm === k.algorithm, k.usages === k.usages];`],
      ['the getters of the prototype', `return Object.getOwnPropertyNames(CryptoKey.prototype).sort();`],
      ['a getter on something else', `try { return Object.getOwnPropertyDescriptor(CryptoKey.prototype, 'type').get.call({}); } catch (e) { return e.name; }`],
      ['new CryptoKey()', `return new CryptoKey();`],
    ]));
  });
});

describe('crypto.getRandomValues and randomUUID', () => {
  it('accept and refuse the same arrays as Node', async () => {
    const arrays = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array', 'Float32Array', 'Float64Array', 'Float16Array'];
    await compareWithNode(sb, cases([
      ...arrays.map((a): [string, string] => [a, `const x = new ${a}(4); const r = crypto.getRandomValues(x); return [r === x, x.length];`]),
      ['DataView', `return crypto.getRandomValues(new DataView(new ArrayBuffer(4)));`],
      ['no argument', `return crypto.getRandomValues();`],
      ['65536 bytes', `return crypto.getRandomValues(new Uint8Array(65536)).length;`],
      ['65537 bytes', `return crypto.getRandomValues(new Uint8Array(65537)).length;`],
      ['16385 Uint32s', `return crypto.getRandomValues(new Uint32Array(16385)).length;`],
      ['a view on part of a buffer is filled only there', `const b = new Uint8Array(8); crypto.getRandomValues(b.subarray(2, 4)); return [b[0], b[1], b[4], b[5], b[6], b[7]];`],
      ['called on something else than crypto', `const g = crypto.getRandomValues; return g(new Uint8Array(2)).length;`],
      ['randomUUID shape', `const u = crypto.randomUUID(); return [typeof u, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(u)];`],
      ['randomUUID called on something else', `const r = crypto.randomUUID; return typeof r();`],
    ]));
  });
});

describe('where Node differs from the WebIDL the standard is written in', () => {
  it('refuses what is not of the argument\'s type with a TypeError, as browsers do', async () => {
    const typeError = { thrown: 'TypeError', constructor: 'TypeError', domException: false };
    const list = cases([
      // Node: TypeMismatchError. The argument is an ArrayBufferView: anything else fails its conversion.
      ['getRandomValues of an ArrayBuffer', `return crypto.getRandomValues(new ArrayBuffer(4));`],
      ['getRandomValues of an array', `return crypto.getRandomValues([1, 2]);`],
      // Node: DataError. (BufferSource or JsonWebKey) makes bytes a BufferSource, which a jwk import refuses.
      ['a jwk import of bytes', `return await crypto.subtle.importKey('jwk', new Uint8Array([1]), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);`],
    ]);
    assert.deepEqual(await outcomesInSandbox(sb, list), list.map(() => typeError));
  });

  it('offers Crypto and SubtleCrypto as the interfaces of crypto and crypto.subtle, frozen', async () => {
    const list = cases([
      ['interfaces', `return [crypto instanceof Crypto, crypto.subtle instanceof SubtleCrypto, Object.prototype.toString.call(crypto.subtle), Object.isFrozen(Crypto.prototype), Object.isFrozen(SubtleCrypto.prototype)];`],
      ['new Crypto()', `return new Crypto();`],
      ['new SubtleCrypto()', `return new SubtleCrypto();`],
      ['a SubtleCrypto method called on something else rejects', `const { digest } = crypto.subtle; const p = digest('SHA-256', new Uint8Array(1)); try { await p; } catch (e) { return [typeof p.then, e.name]; }`],
    ]);
    const expected: unknown[] = [
      { returned: { array: [true, true, '[object SubtleCrypto]', true, true], proto: 'Array', extra: [] } },
      { thrown: 'TypeError', constructor: 'TypeError', domException: false },
      { thrown: 'TypeError', constructor: 'TypeError', domException: false },
      { returned: { array: ['function', 'TypeError'], proto: 'Array', extra: [] } },
    ];
    assert.deepEqual(await outcomesInSandbox(sb, list), expected);
  });
});
