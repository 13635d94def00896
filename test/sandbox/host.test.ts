import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Sandbox, type FetchBridge, type FetchRequest, type SdkHost } from '../../src/sandbox/index.ts';
import { failed, runner, value } from './helpers.ts';

const sb = new Sandbox();
after(() => sb.dispose());
const run = runner(sb);

class HttpError extends Error {
  status: number;
  errors?: unknown;
  constructor(status: number, message: string, errors?: unknown) {
    super(message);
    this.status = status;
    this.errors = errors;
  }
}

function recordingSdk(impl: Partial<Record<string, (...args: unknown[]) => unknown>> = {}) {
  const calls: { method: string; args: unknown[] }[] = [];
  const names = ['tokens.create', 'tokens.retrieve', 'tokens.update', 'tokens.delete', 'tokens.list', 'tokenize', 'detokenize'];
  const sdk: SdkHost = {};
  for (const method of names) {
    sdk[method] = async (...args: unknown[]) => {
      calls.push({ method, args });
      const f = impl[method];
      return f ? f(...args) : { method, args };
    };
  }
  return { sdk, calls };
}

describe('bt: the SDK object over host methods', () => {
  it('maps bt.tokens.* / bt.tokenize / bt.detokenize to the host methods, JSON in and out', async () => {
    const { sdk, calls } = recordingSdk({ 'tokens.retrieve': (id) => ({ id, data: { number: '4242' } }) });
    const r = await run(
      `module.exports = async ({ bt }) => {
        const t = await bt.tokens.retrieve('tok_1');
        await bt.tokens.create({ type: 'card', data: { number: '4242' } });
        await bt.tokens.update('tok_1', { metadata: { a: 'b' } });
        await bt.tokens.delete('tok_1');
        await bt.tokens.list({ size: 5 });
        await bt.tokenize({ a: { type: 'token', data: 'x' } });
        await bt.detokenize({ n: '{{ tok_1 }}' });
        return { t, groups: Object.keys(bt).sort(), tokenMethods: Object.keys(bt.tokens).sort(), frozen: Object.isFrozen(bt) && Object.isFrozen(bt.tokens) };
      };`,
      { sdk },
    );
    assert.deepEqual(value(r), {
      t: { id: 'tok_1', data: { number: '4242' } },
      groups: ['detokenize', 'tokenize', 'tokens'],
      tokenMethods: ['create', 'delete', 'list', 'retrieve', 'update'],
      frozen: true,
    });
    assert.deepEqual(
      calls.map((c) => c.method),
      ['tokens.retrieve', 'tokens.create', 'tokens.update', 'tokens.delete', 'tokens.list', 'tokenize', 'detokenize'],
    );
    assert.deepEqual(calls[1].args, [{ type: 'card', data: { number: '4242' } }]);
  });

  it('hands the host copied plain data, and the host’s objects never reach user code', async () => {
    const kept: unknown[] = [];
    const hostObject = { data: { n: 1 } };
    const { sdk } = recordingSdk({
      'tokens.create': (arg) => {
        kept.push(arg);
        (arg as Record<string, unknown>).mutatedByHost = true;
        return hostObject;
      },
    });
    const r = await run(
      `module.exports = async ({ bt }) => {
        const arg = { a: [1, { b: 2 }], d: new Date(0), u: undefined };
        const got = await bt.tokens.create(arg);
        got.data.n = 99;
        got.__proto__.polluted = 'yes';
        return { argAfter: arg, got };
      };`,
      { sdk },
    );
    assert.deepEqual(value(r), { argAfter: { a: [1, { b: 2 }], d: '1970-01-01T00:00:00.000Z' }, got: { data: { n: 99 } } });
    assert.deepEqual(kept[0], { a: [1, { b: 2 }], d: '1970-01-01T00:00:00.000Z', mutatedByHost: true });
    assert.equal(Object.getPrototypeOf(kept[0]), Object.prototype);
    assert.deepEqual(hostObject, { data: { n: 1 } }, 'the host object is untouched');
    assert.equal(({} as Record<string, unknown>).polluted, undefined, 'the host prototype is untouched');
    const next = await run(`module.exports = async () => [({}).polluted, Object.prototype.polluted];`, { sdk });
    assert.deepEqual(value(next), [null, null], 'nor does a later run see it');
  });

  it('__proto__ keys in arguments are dropped before the host sees them', async () => {
    const { sdk, calls } = recordingSdk();
    value(await run(`module.exports = async ({ bt }) => bt.tokens.create(JSON.parse('{"type":"token","__proto__":{"isAdmin":true},"x":{"constructor":{"prototype":{"p":1}}}}'));`, { sdk }));
    const arg = calls[0].args[0] as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(arg), Object.prototype);
    assert.equal(arg.isAdmin, undefined);
    assert.deepEqual(arg, { type: 'token', x: {} });
  });

  it('host errors arrive as exceptions with status, message and data, of the matching class', async () => {
    const { sdk } = recordingSdk({
      'tokens.retrieve': () => {
        throw new HttpError(404, 'The token was not found.');
      },
      'tokens.create': () => {
        throw new HttpError(400, 'The request is invalid.', { 'body.type': ['is required'] });
      },
    });
    const r = await run(
      `const { NotFoundError, BadRequestError } = require('@coffer/errors');
      module.exports = async ({ bt }) => {
        const out = [];
        try { await bt.tokens.retrieve('nope'); } catch (e) { out.push([e instanceof NotFoundError, e.status, e.message]); }
        try { await bt.tokens.create({}); } catch (e) { out.push([e instanceof BadRequestError, e.status, e.message, e.data]); }
        return out;
      };`,
      { sdk },
    );
    assert.deepEqual(value(r), [
      [true, 404, 'The token was not found.'],
      [true, 400, 'The request is invalid.', { 'body.type': ['is required'] }],
    ]);
  });

  it('an uncaught host error ends the run with the same status', async () => {
    const { sdk } = recordingSdk({
      'tokens.retrieve': () => {
        throw new HttpError(403, 'The key may not use this token.');
      },
      detokenize: () => {
        throw new HttpError(409, 'Conflict here.');
      },
    });
    failed(await run(`module.exports = async ({ bt }) => bt.tokens.retrieve('x');`, { sdk }), { status: 403, kind: 'user_error', detail: 'The key may not use this token.' });
    failed(await run(`module.exports = async ({ bt }) => { await bt.detokenize({}); };`, { sdk }), { status: 409, kind: 'user_error' });
  });

  it('a host error without a status hides its message (it may hold internals) and is a 500', async () => {
    const { sdk } = recordingSdk({
      'tokens.list': () => {
        throw new Error('relation "tokens" does not exist at /srv/app/store.ts:12');
      },
    });
    const r = await run(
      `module.exports = async ({ bt }) => { try { await bt.tokens.list(); } catch (e) { return [e.status, e.message]; } };`,
      { sdk },
    );
    assert.deepEqual(value(r), [500, 'The operation failed.']);
    failed(await run(`module.exports = async ({ bt }) => bt.tokens.list();`, { sdk }), { status: 500, kind: 'runtime', detail: 'The operation failed.' });
  });

  it('bt is null without an SdkHost, and only the host’s own methods exist', async () => {
    assert.equal(value(await run('module.exports = async (req) => req.bt;')), null);
    const sdk: SdkHost = { tokenize: async () => 1 };
    assert.deepEqual(value(await run('module.exports = async ({ bt }) => [Object.keys(bt), typeof bt.tokens];', { sdk })), [['tokenize'], 'undefined']);
  });

  it('many calls may run at once', async () => {
    const { sdk } = recordingSdk({ 'tokens.retrieve': async (id) => ({ id }) });
    const r = await run(`module.exports = async ({ bt }) => (await Promise.all(Array.from({ length: 20 }, (_, i) => bt.tokens.retrieve('t' + i)))).map((t) => t.id);`, { sdk });
    assert.deepEqual(value(r), Array.from({ length: 20 }, (_, i) => `t${i}`));
  });

  it('too large an argument or reply is refused', async () => {
    const { sdk } = recordingSdk({ 'tokens.retrieve': () => ({ big: 'x'.repeat(2000) }) });
    failed(await run(`module.exports = async ({ bt }) => bt.tokens.create({ big: 'x'.repeat(2000) });`, { sdk, limits: { maxIoBytes: 1000 } }), {
      status: 422,
      kind: 'too_large',
    });
    const r = await run(`module.exports = async ({ bt }) => { try { await bt.tokens.retrieve('x'); } catch (e) { return e.message; } };`, { sdk, limits: { maxIoBytes: 1000 } });
    assert.match(value(r) as string, /larger than 1000 bytes/);
  });

  it('arguments nested deeper than 128 levels are a 400 to the code, and the host never sees them', async () => {
    const { sdk, calls } = recordingSdk();
    const r = await run(
      `module.exports = async ({ bt }) => { let v = 'x'; for (let i = 0; i < 200; i++) v = [v]; try { await bt.tokenize({ v }); } catch (e) { return [e.status, e.message]; } };`,
      { sdk },
    );
    const [status, message] = value(r) as [number, string];
    assert.equal(status, 400);
    assert.match(message, /deeper than 128 levels/);
    assert.equal(calls.length, 0);
  });

  it('arguments JSON cannot hold reject the returned promise (a .catch() sees them); the host never sees them', async () => {
    const { sdk, calls } = recordingSdk();
    const r = await run(
      `module.exports = async ({ bt }) => {
        const cyclic = {}; cyclic.self = cyclic;
        const args = [{ n: 1n }, cyclic, { toJSON() { throw new Error('no'); } }];
        return Promise.all(args.map((a) => bt.tokens.create(a).then(() => 'sent', (e) => e.name + ': ' + e.message.split('\\n')[0])));
      };`,
      { sdk },
    );
    assert.deepEqual(value(r), [
      'TypeError: The arguments of bt.tokens.create cannot be sent as JSON: Do not know how to serialize a BigInt',
      'TypeError: The arguments of bt.tokens.create cannot be sent as JSON: Converting circular structure to JSON',
      'TypeError: The arguments of bt.tokens.create cannot be sent as JSON: no',
    ]);
    assert.equal(calls.length, 0);
  });

  it('calls made after the function settled are never started', async () => {
    const { sdk, calls } = recordingSdk();
    const r = await run(`module.exports = async ({ bt }) => { Promise.resolve().then(() => 0).then(() => 0).then(() => bt.tokens.delete('t')); return 'done'; };`, { sdk });
    assert.equal(value(r), 'done');
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(calls, []);
  });

  it('calls still pending when the function returns are dropped', async () => {
    let finish!: () => void;
    const sdk: SdkHost = { tokenize: () => new Promise<void>((r) => (finish = r)).then(() => 'late') };
    const r = await run(`module.exports = async ({ bt }) => { bt.tokenize({}); return 'done'; };`, { sdk });
    assert.equal(value(r), 'done');
    finish();
  });
});

describe('fetch through the host bridge', () => {
  function bridge(reply: (r: FetchRequest) => { status: number; headers: Record<string, string>; body: string } | Promise<never>) {
    const seen: FetchRequest[] = [];
    const f: FetchBridge = async (req) => {
      seen.push(req);
      return reply(req);
    };
    return { f, seen };
  }

  it('sends {url, method, headers, body} and wraps the reply in a Response', async () => {
    const { f, seen } = bridge(() => ({ status: 201, headers: { 'Content-Type': 'application/json', 'X-Id': '7' }, body: '{"ok":true}' }));
    const r = await run(
      `module.exports = async () => {
        const res = await fetch('https://api.example.com/v1/x?y=1#frag', {
          method: 'post', headers: { 'X-Api-Key': 'k', 'content-type': 'application/json' }, body: JSON.stringify({ a: 1 }),
        });
        return { status: res.status, ok: res.ok, type: res.headers.get('content-type'), id: res.headers.get('x-id'), missing: res.headers.get('nope'), json: await res.json(), url: res.url };
      };`,
      { fetch: f },
    );
    assert.deepEqual(value(r), { status: 201, ok: true, type: 'application/json', id: '7', missing: null, json: { ok: true }, url: 'https://api.example.com/v1/x?y=1' });
    assert.deepEqual(seen, [{ url: 'https://api.example.com/v1/x?y=1', method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k' }, body: '{"a":1}' }]);
    assert.equal(Object.getPrototypeOf(seen[0].headers), Object.prototype);
  });

  it('a reply without a content type keeps none, in its clone too, and its type is basic', async () => {
    const { f } = bridge(() => ({ status: 200, headers: {}, body: 'plain' }));
    const r = await run(
      `module.exports = async () => { const res = await fetch('https://x.test/'); return [res.headers.get('content-type'), res.clone().headers.get('content-type'), res.type, new Response('x').type]; };`,
      { fetch: f },
    );
    assert.deepEqual(value(r), [null, null, 'basic', 'default']);
  });

  it('accepts URL objects, Headers, URLSearchParams bodies and text()', async () => {
    const { f, seen } = bridge(() => ({ status: 404, headers: {}, body: 'not here' }));
    const r = await run(
      `module.exports = async () => {
        const res = await fetch(new URL('/p', 'http://h.test'), { method: 'PUT', headers: new Headers([['a', '1']]), body: new URLSearchParams({ q: 'a b' }) });
        return [res.status, res.ok, await res.text(), res.bodyUsed];
      };`,
      { fetch: f },
    );
    assert.deepEqual(value(r), [404, false, 'not here', true]);
    assert.deepEqual(seen[0], { url: 'http://h.test/p', method: 'PUT', headers: { a: '1', 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8' }, body: 'q=a+b' });
  });

  it('refuses bad input before the host sees it', async () => {
    const { f, seen } = bridge(() => ({ status: 200, headers: {}, body: '' }));
    const r = await run(
      `module.exports = async () => {
        const out = [];
        for (const args of [['not a url'], ['file:///etc/passwd'], ['https://x.test', { method: 'GET', body: 'b' }], ['https://x.test', { headers: { 'bad name': 'v' } }]]) {
          try { await fetch(...args); out.push('sent'); } catch (e) { out.push(e.name); }
        }
        return out;
      };`,
      { fetch: f },
    );
    assert.deepEqual(value(r), ['TypeError', 'TypeError', 'TypeError', 'TypeError']);
    assert.equal(seen.length, 0);
  });

  it('header values the standard refuses (line breaks, NUL, beyond U+00FF) are a TypeError that never shows the value; replies keep theirs', async () => {
    const { f, seen } = bridge(() => ({ status: 200, headers: { 'content-disposition': 'attachment; filename="€.txt"' }, body: '' }));
    const r = await run(
      `module.exports = async () => {
        const out = [];
        for (const v of ['secret\\r\\nx-injected: 1', 'a\\nb', 'nul\\0', 'ключ']) {
          try { await fetch('https://x.test', { headers: { 'x-key': v } }); out.push('sent'); } catch (e) { out.push(e.name + ': ' + e.message); }
        }
        const h = new Headers();
        try { h.set('x', 'a\\rb'); } catch (e) { out.push(e.name); }
        h.append('x', ' \\té  ');
        const res = await fetch('https://x.test', { headers: h });
        out.push(res.headers.get('content-disposition'), new Response('', { headers: res.headers }).headers.get('content-disposition'));
        return out;
      };`,
      { fetch: f },
    );
    const msg = 'TypeError: Invalid value for the header x-key: a line break, a NUL or a character above U+00FF cannot be sent.';
    assert.deepEqual(value(r), [msg, msg, msg, msg, 'TypeError', 'attachment; filename="€.txt"', 'attachment; filename="€.txt"']);
    assert.deepEqual(seen.map((s) => s.headers), [{ x: 'é' }]);
  });

  it('methods: the common ones in any case are upper-cased, others sent as written, CONNECT/TRACE/TRACK refused', async () => {
    const { f, seen } = bridge(() => ({ status: 200, headers: {}, body: '' }));
    const r = await run(
      `module.exports = async () => {
        const out = [];
        for (const method of ['get', 'Post', 'patch', 'delete', 'options', 'PROPFIND', 'purge', 'M-Search', 'trace', 'Connect', 'track']) {
          try { await fetch('https://x.test', { method }); out.push('sent'); } catch (e) { out.push(e.name + ': ' + e.message); }
        }
        return out;
      };`,
      { fetch: f },
    );
    assert.deepEqual(value(r), [
      ...Array(8).fill('sent'),
      'TypeError: fetch cannot send a TRACE request.',
      'TypeError: fetch cannot send a CONNECT request.',
      'TypeError: fetch cannot send a TRACK request.',
    ]);
    assert.deepEqual(seen.map((s) => s.method), ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND', 'purge', 'M-Search']);
  });

  it('without a bridge, fetch rejects with a TypeError', async () => {
    const r = await run(`module.exports = async () => { try { await fetch('https://x.test'); } catch (e) { return [e.name, e.message]; } };`);
    assert.deepEqual(value(r), ['TypeError', 'fetch failed: outbound requests are not available to this code']);
  });

  it('bridge errors: a status or expose: true means the message may be shown; otherwise it is hidden', async () => {
    const shown = bridge(() => Promise.reject(new HttpError(403, 'The destination 10.0.0.1 is not allowed.')));
    const exposed = bridge(() => Promise.reject(Object.assign(new Error('request to x.test:443 timed out'), { expose: true })));
    const hidden = bridge(() => Promise.reject(new Error('connect ECONNREFUSED 10.1.2.3:5432 (internal)')));
    const code = `module.exports = async () => { try { await fetch('https://x.test'); } catch (e) { return e.message; } };`;
    assert.equal(value(await run(code, { fetch: shown.f })), 'fetch failed: The destination 10.0.0.1 is not allowed.');
    assert.equal(value(await run(code, { fetch: exposed.f })), 'fetch failed: request to x.test:443 timed out');
    assert.equal(value(await run(code, { fetch: hidden.f })), 'fetch failed: the request could not be sent');
    failed(await run(`module.exports = async () => fetch('https://x.test');`, { fetch: hidden.f }), { status: 422, kind: 'user_error', detail: /TypeError: fetch failed/ });
  });

  it('a bridge message that already starts with "fetch failed: " is not prefixed twice', async () => {
    const { f } = bridge(() => Promise.reject(new HttpError(400, 'fetch failed: The destination 10.0.0.1 is not allowed.')));
    const r = await run(`module.exports = async () => { try { await fetch('https://x.test'); } catch (e) { return [e.name, e.message]; } };`, { fetch: f });
    assert.deepEqual(value(r), ['TypeError', 'fetch failed: The destination 10.0.0.1 is not allowed.']);
  });

  it('a response body over maxIoBytes is refused', async () => {
    const { f } = bridge(() => ({ status: 200, headers: {}, body: 'x'.repeat(5000) }));
    const r = await run(`module.exports = async () => { try { await fetch('https://x.test'); } catch (e) { return e.message; } };`, { fetch: f, limits: { maxIoBytes: 1000 } });
    assert.match(value(r) as string, /larger than 1000 bytes/);
  });

  it('prototype pollution through a fetched body stays inside the run', async () => {
    const { f } = bridge(() => ({ status: 200, headers: {}, body: '{"__proto__":{"polluted":1}}' }));
    const r = await run(
      `module.exports = async () => { const j = await (await fetch('https://x.test')).json(); Object.prototype.polluted2 = 1; j.__proto__.polluted3 = 1; return [({}).polluted]; };`,
      { fetch: f },
    );
    assert.deepEqual(value(r), [null]);
    assert.equal(({} as Record<string, unknown>).polluted2, undefined);
    assert.equal(({} as Record<string, unknown>).polluted3, undefined);
    assert.deepEqual(value(await run(`module.exports = async () => [({}).polluted2 ?? 'clean', ({}).polluted3 ?? 'clean'];`, { fetch: f })), ['clean', 'clean']);
  });
});
