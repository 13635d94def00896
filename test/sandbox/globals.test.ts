/** The web-platform globals inside the isolate, checked against Node's own implementations. */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';
import { runner, value } from './helpers.ts';

const sb = new Sandbox();
after(() => sb.dispose());
const run = runner(sb);

/** Runs `body` (an async function body receiving `input`) in the isolate. */
async function inside(body: string, input: unknown = null): Promise<unknown> {
  return value(await run(`module.exports = async ({ args }) => { const input = args.input; ${body} };`, { req: { args: { input }, configuration: {} } }));
}

const URL_CASES: [string, string?][] = [
  ['http://a/^{}`|"<>x y?q=^{}`\'"<> #f^{}`"<> '],
  ['HTTP://User:P@ss@EXAMPLE.com:80/a/./b/../c/%2e%2E/d?x#y'],
  ['foo://Host/a/../b'],
  ['mailto:Me@Ex.com'],
  ['//x.com/p', 'https://a/b'],
  ['../z?q', 'http://a/b/c/d'],
  ['http:foo', 'http://a/b/c'],
  ['http://0x7f.1/'],
  ['http://[::1]:8080/'],
  ['http://[2001:db8:0:0:1:0:0:1]/'],
  ['http://[::ffff:1.2.3.4]/'],
  ['http://münchen.de/straße?ä=ö#ü'],
  ['https://BÜCHER.example/'],
  ['file:///etc/passwd'],
  ['file://localhost/x'],
  ['non-spec:/a/../b'],
  ['http://a/b\\c'],
  ['ws://a:80/'],
  ['wss://a:443/x'],
  ['https://a:8443'],
  ['http://a/%zz'],
  ['http://a@b@c/'],
  ['https://a/?a=b c&d=é'],
  ['web+x:'],
  ['http://%41.com/'],
  ['http://xn--nxasmq6b.com/'],
  ['non-special://[1:2::3]:80/'],
  ['#hash', 'http://a/b?c'],
  ['?x', 'http://a/b?c#d'],
  ['', 'http://a/b?c#d'],
  ['  https://trim.me/\t\n '],
  ['https://a/b/./c/..'],
  ['https://a/%2e%2E/x'],
  ['https://user@host/'],
  ['https://:pass@host/'],
  ['data:text/plain,hello world'],
  ['javascript:alert(1)'],
  ['https://a/b?'],
  ['https://a/b#'],
  ['ftp://f.test:21/x'],
  ['http://1.2.3/'],
  ['https://example.com./'],
  ['/only/path', 'https://base.test/x/y'],
  ['x', 'foo://h/a/b'],
  ['sc://ñ/x'],
  // UTS #46 mapping of domains: fullwidth forms, ignored characters, ideographic full stops, ligatures
  ['http://ＥＸＡＭＰＬＥ．ｃｏｍ/'],
  ['http://ex\u00adample.com/'],
  ['http://example。com/'],
  ['http://example｡com/'],
  ['http://ﬁ.com/'],
  ['http://①②⑦.0.0.1/'],
  ['http://ＭÜNCHEN.de/'],
  ['http://ǅ.com/'],
];
const URL_INVALID: [string, string?][] = [
  ['http://a:65536'],
  ['http://a b/'],
  ['http://1.2.3.4.5/'],
  ['http://256.0.0.1/'],
  ['relative/only'],
  ['http://'],
  ['https://[1::2::3]/'],
  ['https://a<b/'],
  ['x', 'mailto:m@x'],
  ['http://xn--ñ.com/'],
  ['http://\u200d.com/'],
  ['http://a／b.com/'],
  ['http://%ef%bf%bf/'],
];

const PARTS = ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'] as const;

describe('URL', () => {
  it('parses like Node (WHATWG URL)', async () => {
    const got = (await inside(
      `return input.map(([u, b]) => { const x = new URL(u, b === null ? undefined : b); return [${PARTS.map((p) => `x.${p}`).join(', ')}]; });`,
      URL_CASES.map(([u, b]) => [u, b ?? null]),
    )) as string[][];
    URL_CASES.forEach(([u, b], i) => {
      const x = new URL(u, b);
      assert.deepEqual(got[i], PARTS.map((p) => x[p]), `new URL(${JSON.stringify(u)}, ${JSON.stringify(b)})`);
    });
  });

  it('throws a TypeError where Node does', async () => {
    const got = (await inside(`return input.map(([u, b]) => { try { new URL(u, b === null ? undefined : b); return 'parsed'; } catch (e) { return e.name; } });`, URL_INVALID.map(([u, b]) => [u, b ?? null]))) as string[];
    URL_INVALID.forEach(([u, b], i) => {
      assert.throws(() => new URL(u, b), TypeError, `Node: ${u}`);
      assert.equal(got[i], 'TypeError', `isolate: ${u}`);
    });
    assert.deepEqual(await inside(`return [URL.canParse('https://a'), URL.canParse('nope'), URL.parse('nope'), URL.canParse('/x', 'https://a')];`), [true, false, null, true]);
  });

  it('agrees with Node on 5000 generated inputs (Windows drive letters in file URLs aside)', async () => {
    const pieces = ['http:', 'https:', 'ws:', 'foo:', 'file:', 'mailto:', '//', '/', '\\', 'a', 'B', '.', '..', '%2e', '%2E%2e', '%41', '@', ':', '8080', '?', '#', '&', '=',
      ' ', 'é', '[::1]', '[1:2::]', '1.2.3.4', '0x10', '09', '%zz', 'x.y', 'A.B', '~', '^', '|', '`', '{', "'", '"', '\t', '\n', 'ä.com', '%00'];
    let seed = 7;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    const bases = [null, 'http://base.test/a/b?q#f', 'foo://h/x/y', 'file:///dir/f'];
    const cases: [string, string | null][] = [];
    while (cases.length < 5000) {
      let u = '';
      for (let j = 2 + rnd(8); j > 0; j--) u += pieces[rnd(pieces.length)];
      const b = bases[cases.length % bases.length];
      if ((b?.startsWith('file:') || /file:/i.test(u)) && /(^|[/\\:])[A-Za-z][:|]/.test(u)) continue;
      cases.push([u, b]);
    }
    const got = (await inside(`return input.map(([u, b]) => { try { return new URL(u, b === null ? undefined : b).href; } catch { return 'invalid'; } });`, cases)) as string[];
    const wrong = cases.filter(([u, b], i) => {
      let expected: string;
      try {
        expected = new URL(u, b ?? undefined).href;
      } catch {
        expected = 'invalid';
      }
      return got[i] !== expected;
    });
    assert.deepEqual(wrong.slice(0, 5), []);
  });

  it('setters behave like Node’s for common cases', async () => {
    const script = `
      const u = new URL('https://user:pw@a.test:8080/p/q?x=1#h');
      const out = [];
      u.protocol = 'http'; out.push(u.href);
      u.port = '80'; out.push(u.href);
      u.hostname = 'B.Test'; out.push(u.href);
      u.host = 'c.test:81'; out.push(u.href);
      u.pathname = '/a b/../c?d'; out.push(u.href);
      u.search = 'k=v w'; out.push(u.href);
      u.hash = 'frag ment'; out.push(u.href);
      u.username = 'n@me'; u.password = ''; out.push(u.href);
      u.search = ''; u.hash = ''; out.push(u.href);
      u.protocol = 'mailto'; out.push(u.href);
      u.href = 'https://z.test/'; out.push(u.href);
      return out;`;
    const node = new Function(script)();
    assert.deepEqual(await inside(script), node);
  });

  it('URLSearchParams parses, serializes, mutates and stays linked to its URL', async () => {
    const script = `
      const out = [];
      const p = new URLSearchParams('?a=1&b=x+y&a=%E2%82%AC&c&=e&d=%zz');
      out.push([...p], p.get('a'), p.getAll('a'), p.has('c'), p.get('nope'), p.size, p.toString());
      p.append('z', 'é &='); p.set('a', '2'); p.delete('b'); p.sort(); out.push(p.toString());
      out.push(new URLSearchParams({ x: 1, y: 'two' }).toString(), new URLSearchParams([['k', 'v'], ['k', 'w']]).toString());
      const u = new URL('https://h.test/?q=1');
      u.searchParams.append('r', 'a b'); out.push(u.href);
      u.search = '?s=2'; out.push(u.searchParams.get('s'), u.searchParams.get('q'));
      u.searchParams.delete('s'); out.push(u.href);
      const keys = []; p.forEach((v, k) => keys.push(k)); out.push(keys);
      return out;`;
    assert.deepEqual(await inside(script), JSON.parse(JSON.stringify(new Function(script)())));
  });
});

describe('encoding', () => {
  const STRINGS = ['', 'ascii', 'héllo wörld', '€𝄞😀', 'a\u0000b', 'lone \ud800 surrogate', 'end \udfff', 'x'.repeat(10000) + '€'];

  it('TextEncoder / TextDecoder round-trip like Node', async () => {
    const got = (await inside(`return input.map((s) => { const b = new TextEncoder().encode(s); return [Array.from(b), new TextDecoder().decode(b)]; });`, STRINGS)) as [number[], string][];
    STRINGS.forEach((s, i) => {
      const b = new TextEncoder().encode(s);
      assert.deepEqual(got[i][0], Array.from(b), `encode ${JSON.stringify(s.slice(0, 20))}`);
      assert.equal(got[i][1], new TextDecoder().decode(b));
    });
  });

  it('TextDecoder replaces invalid UTF-8 like Node, honours fatal, BOM and streaming', async () => {
    const BYTES = [[0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98], [0xc0, 0xaf], [0xef, 0xbb, 0xbf, 0x41], [0xf4, 0x90, 0x80, 0x80], [0x61, 0xe2, 0x28, 0xa1, 0x62]];
    const got = (await inside(
      `const out = input.map((b) => new TextDecoder().decode(new Uint8Array(b)));
      let fatal; try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xff])); fatal = 'no'; } catch (e) { fatal = e.name; }
      const d = new TextDecoder(); const parts = [[0xe2], [0x82], [0xac, 0xf0, 0x9f], [0x98, 0x80]].map((c) => d.decode(new Uint8Array(c), { stream: true }));
      parts.push(d.decode());
      return { out, fatal, parts, ignore: new TextDecoder('utf8', { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), enc: new TextDecoder('UTF-8').encoding };`,
      BYTES,
    )) as { out: string[]; fatal: string; parts: string[]; ignore: string; enc: string };
    BYTES.forEach((b, i) => assert.equal(got.out[i], new TextDecoder().decode(new Uint8Array(b)), `decode ${b}`));
    assert.equal(got.fatal, 'TypeError');
    assert.equal(got.parts.join(''), '€😀');
    assert.equal(got.ignore, '\ufeffA');
    assert.equal(got.enc, 'utf-8');
    assert.equal(await inside(`try { new TextDecoder('latin1'); } catch (e) { return e.name; }`), 'RangeError');
  });

  it('encodeInto reports read and written', async () => {
    assert.deepEqual(await inside(`const d = new Uint8Array(5); const r = new TextEncoder().encodeInto('a€😀', d); return [r, Array.from(d)];`), [
      { read: 2, written: 4 },
      [0x61, 0xe2, 0x82, 0xac, 0],
    ]);
  });

  it('atob / btoa like Node', async () => {
    const bin = ['', 'f', 'fo', 'foo', 'foob', '\u0000\u00ff\u0080', 'Hello, World!'];
    const b64 = ['Zm9v', 'Zm9vYg', 'Zm9vYg==', ' Zm 9v\nYmE= ', 'AP+A'];
    const got = (await inside(`return [input[0].map(btoa), input[1].map(atob)];`, [bin, b64])) as [string[], string[]];
    assert.deepEqual(got[0], bin.map((s) => btoa(s)));
    assert.deepEqual(got[1], b64.map((s) => atob(s)));
    assert.deepEqual(await inside(`return ['€', null].map((s, i) => { try { return i ? atob('a') : btoa(s); } catch (e) { return [e.name, e instanceof DOMException, e.code]; } });`), [
      ['InvalidCharacterError', true, 5],
      ['InvalidCharacterError', true, 5],
    ]);
  });
});

describe('structuredClone', () => {
  it('clones nested data, cycles and the built-in types', async () => {
    const r = (await inside(`
      const src = { n: 1, s: 'x', d: new Date(5), re: /a/gi, m: new Map([[1, { k: 'v' }]]), set: new Set([1, 2]), u8: new Uint8Array([1, 2, 3]),
                    arr: [1, , 3], err: new RangeError('r'), big: 10n };
      src.self = src;
      const c = structuredClone(src);
      return [c !== src, c.self === c, c.d instanceof Date && c.d.getTime(), c.re.source + c.re.flags, c.m.get(1).k, c.m.get(1) !== src.m.get(1),
              [...c.set], Array.from(c.u8), c.u8.buffer !== src.u8.buffer, 1 in c.arr, c.err instanceof RangeError && c.err.message, typeof c.big];`)) as unknown[];
    assert.deepEqual(r, [true, true, 5, 'agi', 'v', true, [1, 2], [1, 2, 3], true, false, 'r', 'bigint']);
  });

  it('refuses functions and symbols with a DataCloneError', async () => {
    assert.deepEqual(await inside(`return [() => 1, Symbol('s'), { f() {} }].map((v) => { try { structuredClone(v); return 'cloned'; } catch (e) { return e.name; } });`), [
      'DataCloneError',
      'DataCloneError',
      'DataCloneError',
    ]);
  });
});

describe('crypto', () => {
  it('randomUUID and getRandomValues', async () => {
    const r = (await inside(`
      const ids = Array.from({ length: 50 }, () => crypto.randomUUID());
      const a = crypto.getRandomValues(new Uint8Array(64)), b = crypto.getRandomValues(new Uint32Array(4));
      let tooBig; try { crypto.getRandomValues(new Uint8Array(65537)); } catch (e) { tooBig = e.name; }
      let float; try { crypto.getRandomValues(new Float64Array(2)); } catch (e) { float = e.name; }
      return { ids, distinct: new Set(ids).size, a: Array.from(a), b: Array.from(b), tooBig, float };`)) as { ids: string[]; distinct: number; a: number[]; b: number[]; tooBig: string; float: string };
    for (const id of r.ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(r.distinct, 50);
    assert.ok(new Set(r.a).size > 20, 'bytes look random');
    assert.ok(r.b.some((n) => n > 0xffffff));
    assert.equal(r.tooBig, 'QuotaExceededError');
    assert.equal(r.float, 'TypeMismatchError');
    const other = (await inside(`return crypto.randomUUID();`)) as string;
    assert.ok(!r.ids.includes(other), 'every run has its own seed');
  });

  it('subtle.digest matches node:crypto', async () => {
    const r = (await inside(`
      const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');
      const data = new TextEncoder().encode('abc');
      return Promise.all(['SHA-1', 'SHA-256', { name: 'sha-384' }, 'SHA-512'].map(async (a) => hex(await crypto.subtle.digest(a, data))));`)) as string[];
    assert.deepEqual(r, ['sha1', 'sha256', 'sha384', 'sha512'].map((h) => createHash(h).update('abc').digest('hex')));
  });

  it('HMAC sign and verify (raw and jwk keys) match node:crypto', async () => {
    const r = (await inside(`
      const enc = new TextEncoder();
      const key = await crypto.subtle.importKey('raw', enc.encode('secret'), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign', 'verify']);
      const sig = await crypto.subtle.sign('HMAC', key, enc.encode('message'));
      const ok = await crypto.subtle.verify('HMAC', key, sig, enc.encode('message'));
      const bad = await crypto.subtle.verify({ name: 'HMAC' }, key, sig, enc.encode('other'));
      const jwk = await crypto.subtle.exportKey('jwk', key);
      const again = await crypto.subtle.importKey('jwk', jwk, { name: 'HMAC', hash: { name: 'SHA-256' } }, false, ['sign']);
      const sig2 = await crypto.subtle.sign('HMAC', again, enc.encode('message'));
      let notExtractable; try { await crypto.subtle.exportKey('raw', again); } catch (e) { notExtractable = e.name; }
      let noVerify; try { await crypto.subtle.verify('HMAC', again, sig, enc.encode('message')); } catch (e) { noVerify = e.name; }
      let unsupported; try { await crypto.subtle.encrypt({ name: 'AES-GCM' }, key, enc.encode('x')); } catch (e) { unsupported = e.name; }
      let illegal; try { new CryptoKey(); } catch (e) { illegal = e.name; }
      const gen = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-512' }, true, ['sign']);
      return { sig: btoa(String.fromCharCode(...new Uint8Array(sig))), same: btoa(String.fromCharCode(...new Uint8Array(sig2))), ok, bad, alg: key.algorithm,
               type: key.type, notExtractable, noVerify, unsupported, illegal, genBits: gen.algorithm.length };`)) as Record<string, unknown>;
    const expected = createHmac('sha256', 'secret').update('message').digest('base64');
    assert.equal(r.sig, expected);
    assert.equal(r.same, expected);
    assert.equal(r.ok, true);
    assert.equal(r.bad, false);
    assert.deepEqual(r.alg, { name: 'HMAC', hash: { name: 'SHA-256' }, length: 48 });
    assert.equal(r.type, 'secret');
    assert.equal(r.notExtractable, 'InvalidAccessError');
    assert.equal(r.noVerify, 'InvalidAccessError');
    assert.equal(r.unsupported, 'NotSupportedError');
    assert.equal(r.illegal, 'TypeError');
    assert.equal(r.genBits, 1024);
  });
});

describe('timers and the rest', () => {
  it('setTimeout fires in delay order with arguments; clearTimeout cancels; queueMicrotask runs first', async () => {
    const r = await inside(`
      const order = [];
      await new Promise((resolve) => {
        setTimeout((a, b) => order.push('t30:' + a + b), 30, 'x', 'y');
        setTimeout(() => order.push('t0'), 0);
        const c = setTimeout(() => order.push('cancelled'), 10);
        clearTimeout(c);
        queueMicrotask(() => order.push('micro'));
        setTimeout(resolve, 60);
      });
      return order;`);
    assert.deepEqual(r, ['micro', 't0', 't30:xy']);
  });

  it('delays beyond 32 bits (Infinity too) fire at once as in Node, like NaN and negative ones', async () => {
    const r = await run(
      `module.exports = async () => {
        const order = [];
        await new Promise((resolve) => {
          setTimeout(() => order.push('infinity'), Infinity);
          setTimeout(() => order.push('2^31'), 2 ** 31);
          setTimeout(() => order.push('nan'), NaN);
          setTimeout(() => order.push('negative'), -5);
          setTimeout(resolve, 40);
        });
        return order;
      };`,
      { limits: { timeoutMs: 2000 } },
    );
    assert.deepEqual(value(r), ['infinity', '2^31', 'nan', 'negative']);
  });

  it('setInterval repeats until cleared; setImmediate runs soon', async () => {
    const r = await inside(`
      const ticks = [];
      await new Promise((resolve) => {
        setImmediate((x) => ticks.push('immediate:' + x), 'a');
        const id = setInterval(() => { ticks.push('tick'); if (ticks.length === 4) { clearInterval(id); setTimeout(resolve, 30); } }, 5);
      });
      return ticks;`);
    assert.deepEqual(r, ['immediate:a', 'tick', 'tick', 'tick']);
  });

  it('timers still pending when the function settles never fire', async () => {
    const r = await run(`module.exports = async () => { setTimeout(() => console.log('late'), 5); return 1; };`);
    assert.equal(value(r), 1);
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(r.console, []);
  });

  it('at most 100 timers may be pending', async () => {
    assert.equal(await inside(`for (let i = 0; i < 100; i++) setTimeout(() => {}, 1000); try { setTimeout(() => {}, 1); } catch (e) { return e.name + ': ' + e.message; }`), 'RangeError: Too many pending timers: at most 100.');
  });

  it('exposes the documented globals and nothing of Node', async () => {
    const r = (await inside(`return ['console', 'fetch', 'Headers', 'Response', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'atob', 'btoa', 'structuredClone',
      'crypto', 'setTimeout', 'clearTimeout', 'queueMicrotask', 'DOMException', 'global',
      'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate',
      'process', 'Buffer', 'require', 'module', 'WebAssembly', 'SharedArrayBuffer', 'Atomics', '__coffer_start', '__coffer_port']
      .map((n) => n + ':' + typeof globalThis[n]);`)) as string[];
    assert.deepEqual(r, [
      'console:object', 'fetch:function', 'Headers:function', 'Response:function', 'URL:function', 'URLSearchParams:function', 'TextEncoder:function',
      'TextDecoder:function', 'atob:function', 'btoa:function', 'structuredClone:function', 'crypto:object', 'setTimeout:function', 'clearTimeout:function',
      'queueMicrotask:function', 'DOMException:function', 'global:object',
      'setInterval:function', 'clearInterval:function', 'setImmediate:function', 'clearImmediate:function',
      'process:undefined', 'Buffer:undefined', 'require:undefined', 'module:undefined',
      'WebAssembly:undefined', 'SharedArrayBuffer:undefined', 'Atomics:undefined', '__coffer_start:undefined', '__coffer_port:undefined',
    ]);
  });

  it('Response and Headers can be built by user code', async () => {
    assert.deepEqual(
      await inside(`const r = Response.json({ a: 1 }, { status: 202, headers: { 'X-A': ' b ' } }); const h = new Headers({ A: '1' }); h.append('a', '2');
        return [r.status, r.ok, r.headers.get('content-type'), r.headers.get('x-a'), await r.clone().json(), h.get('A'), [...h.keys()]];`),
      [202, true, 'application/json', 'b', { a: 1 }, '1, 2', ['a']],
    );
  });
});
