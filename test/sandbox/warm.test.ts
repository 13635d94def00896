/**
 * Warm contexts: the context of a run that ended cleanly serves the next run of the same code
 * under the same key (tenant + cache key), so module-level state may persist — and nothing
 * per call does: req, console, timers, pending calls, bridges, limits, deadlines, randomness.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Sandbox, type FetchBridge, type RunRequest, type SdkHost } from '../../src/sandbox/index.ts';
import { failed, value } from './helpers.ts';

const sb = new Sandbox();
after(() => sb.dispose());

let keys = 0;
/** A key of its own for each test, so tests never share a context. */
function keyed(code: string, base: Partial<RunRequest> = {}) {
  const cacheKey = `warm:${++keys}`;
  return (more: Partial<RunRequest> = {}) => sb.run({ tenantId: 'T', cacheKey, code, req: { args: {}, configuration: {} }, ...base, ...more });
}
const args = (a: unknown) => ({ req: { args: a, configuration: {} } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const COUNTER = `let n = 0;
module.exports = async () => { n += 1; globalThis.g = (globalThis.g || 0) + 1; return [n, globalThis.g]; };`;

describe('module state: Lambda-style warm semantics', () => {
  it('persists between calls of the same code under the same key', async () => {
    const go = keyed(COUNTER);
    for (let i = 1; i <= 4; i++) assert.deepEqual(value(await go()), [i, i]);
    assert.equal(sb.warmIsolates > 0, true);
  });

  it('is never shared across tenants, even under the same cache key', async () => {
    const s = new Sandbox();
    try {
      const go = (tenantId: string) => s.run({ tenantId, cacheKey: 'same', code: COUNTER, req: {} });
      assert.deepEqual(value(await go('A')), [1, 1]);
      assert.deepEqual(value(await go('A')), [2, 2]);
      assert.deepEqual(value(await go('B')), [1, 1], 'tenant B starts clean');
      assert.deepEqual(value(await go('A')), [3, 3]);
      assert.equal(s.warmIsolates, 2);
    } finally {
      s.dispose();
    }
  });

  it('is never shared across code versions: another cache key, or other code under the same key', async () => {
    const s = new Sandbox();
    try {
      const go = (cacheKey: string, code = COUNTER) => s.run({ tenantId: 'T', cacheKey, code, req: {} });
      assert.deepEqual(value(await go('T:r:1')), [1, 1]);
      assert.deepEqual(value(await go('T:r:1')), [2, 2]);
      assert.deepEqual(value(await go('T:r:2')), [1, 1], 'version 2 starts clean');
      // A proxy's key carries no version: other code under it gets a fresh context.
      const v2 = `${COUNTER}\n// changed`;
      assert.deepEqual(value(await go('T:r:1', v2)), [1, 1]);
      assert.deepEqual(value(await go('T:r:1', v2)), [2, 2]);
      assert.deepEqual(value(await go('T:r:1')), [1, 1], 'and back again: clean, not the old state');
    } finally {
      s.dispose();
    }
  });

  it('survives a call that threw, but not one that failed otherwise', async () => {
    const go = keyed(`let n = 0;
      module.exports = async ({ args }) => {
        n += 1;
        if (args.mode === 'throw') throw new Error('plain');
        if (args.mode === 'reject') { Promise.reject(new Error('unhandled')); await new Promise((r) => setTimeout(r, 10)); }
        if (args.mode === 'loop') for (;;) {}
        return n;
      };`);
    assert.equal(value(await go(args({}))), 1);
    failed(await go(args({ mode: 'throw' })), { status: 422, detail: 'plain' });
    assert.equal(value(await go(args({}))), 3, 'a plain throw keeps the context');
    failed(await go(args({ mode: 'reject' })), { status: 422, detail: /unhandled/ });
    assert.equal(value(await go(args({}))), 1, 'an unhandled rejection: a fresh context');
    assert.equal(value(await go(args({}))), 2);
    failed(await go({ ...args({ mode: 'loop' }), limits: { timeoutMs: 150 } }), { status: 408, kind: 'timeout' });
    assert.equal(value(await go(args({}))), 1, 'a timeout: a fresh isolate');
  });

  it('the module loads once per context; one that fails to load is loaded again by the next call', async () => {
    const ok = keyed(`console.log('loading'); let n = 0; module.exports = async () => { console.log('call', ++n); return n; };`);
    assert.deepEqual((await ok()).console, ['loading', 'call 1']);
    assert.deepEqual((await ok()).console, ['call 2']);
    const throws = keyed(`globalThis.loads = (globalThis.loads || 0) + 1; throw new Error('load ' + globalThis.loads);`);
    failed(await throws(), { status: 422, detail: 'load 1' });
    failed(await throws(), { status: 422, detail: 'load 1' }, );
    const noFunction = keyed(`globalThis.loads = (globalThis.loads || 0) + 1; module.exports = globalThis.loads;`);
    failed(await noFunction(), { status: 400, kind: 'invalid_code' });
    failed(await noFunction(), { status: 400, kind: 'invalid_code' });
  });

  it('a call stuck on a promise nothing can settle does not hand its context on', async () => {
    const go = keyed(`let n = 0; module.exports = async ({ args }) => { n += 1; if (args.stuck) await new Promise(() => {}); return n; };`);
    assert.equal(value(await go(args({}))), 1);
    failed(await go(args({ stuck: true })), { status: 408, detail: /can never settle/ });
    assert.equal(value(await go(args({}))), 1);
  });
});

describe('per-call state is always fresh', () => {
  it('req is this call’s, and bt is this call’s', async () => {
    const go = keyed(`module.exports = async (req) => { const before = globalThis.last; globalThis.last = req.args.i; return [req.args.i, before ?? null, req.bt === null]; };`);
    assert.deepEqual(value(await go(args({ i: 1 }))), [1, null, true]);
    assert.deepEqual(value(await go({ ...args({ i: 2 }), sdk: { tokenize: async () => 1 } })), [2, 1, false]);
    assert.deepEqual(value(await go(args({ i: 3 }))), [3, 2, true]);
  });

  it('console lines belong to their call, and the line limit counts per call', async () => {
    const go = keyed(`module.exports = async ({ args }) => { for (let i = 0; i < args.lines; i++) console.log(args.tag, i); return 1; };`, { limits: { maxConsoleLines: 3 } });
    const a = await go(args({ tag: 'a', lines: 10 }));
    assert.deepEqual(a.console, ['a 0', 'a 1', 'a 2', '[console] output truncated: only the first 3 lines are kept']);
    const b = await go(args({ tag: 'b', lines: 2 }));
    assert.deepEqual(b.console, ['b 0', 'b 1']);
  });

  it('a timer left pending never fires later, and its call does not hand its context on', async () => {
    const go = keyed(`let n = 0;
      module.exports = async ({ args }) => {
        n += 1;
        if (args.leave) setTimeout(() => console.log('late from call', n), 5);
        if (args.wait) await new Promise((r) => setTimeout(r, args.wait));
        return n;
      };`);
    assert.equal(value(await go(args({}))), 1);
    assert.equal(value(await go(args({ leave: true }))), 2);
    await sleep(30);
    const next = await go(args({ wait: 40 }));
    assert.equal(value(next), 1, 'a fresh context after a call that left a timer');
    assert.deepEqual(next.console, []);
  });

  it('timers cleared before returning keep the context; ids never collide across calls', async () => {
    const go = keyed(`let n = 0; const kept = [];
      module.exports = async () => {
        n += 1;
        // A timer id of an earlier call, cleared now: no effect on this call's timers.
        for (const id of kept) clearTimeout(id);
        const fired = [];
        await new Promise((resolve) => {
          const t = setTimeout(() => fired.push('cancelled'), 1000);
          kept.push(t);
          setTimeout(() => { fired.push('mine'); resolve(); }, 5);
          clearTimeout(t);
        });
        return [n, fired];
      };`);
    for (let i = 1; i <= 3; i++) assert.deepEqual(value(await go()), [i, ['mine']]);
  });

  it('an interval of one call never ticks in the next', async () => {
    const go = keyed(`module.exports = async ({ args }) => {
      if (args.start) { setInterval(() => console.log('tick'), 2); return 'started'; }
      await new Promise((r) => setTimeout(r, 30));
      return 'waited';
    };`);
    assert.equal(value(await go(args({ start: true }))), 'started');
    const r = await go(args({}));
    assert.equal(value(r), 'waited');
    assert.deepEqual(r.console, []);
  });

  it('a call still pending on the host is dropped: its late reply reaches no later call', async () => {
    let release!: () => void;
    const late = new Promise<void>((r) => (release = r));
    const seen: string[] = [];
    const slow: SdkHost = {
      tokenize: async (x) => {
        seen.push(`slow ${JSON.stringify(x)}`);
        await late;
        return 'late reply';
      },
    };
    const fast: SdkHost = {
      tokenize: async (x) => {
        seen.push(`fast ${JSON.stringify(x)}`);
        return 'fast reply';
      },
    };
    const go = keyed(`let n = 0; module.exports = async ({ args, bt }) => {
      n += 1;
      if (args.leave) { bt.tokenize({ call: n }).then((v) => console.log('resolved in', n, v)); return 'left'; }
      const v = await bt.tokenize({ call: n });
      await new Promise((r) => setTimeout(r, 20));
      return [n, v];
    };`);
    assert.equal(value(await go({ ...args({ leave: true }), sdk: slow })), 'left');
    const pending = go({ ...args({}), sdk: fast });
    release();
    const r = await pending;
    assert.deepEqual(value(r), [1, 'fast reply'], 'a fresh context, and only its own reply');
    assert.deepEqual(r.console, []);
    assert.deepEqual(seen, ['slow {"call":1}', 'fast {"call":1}']);
  });

  it('a bt kept from an earlier call refuses to be used; this call’s bt goes to this call’s host', async () => {
    const calls: string[] = [];
    const sdkOf = (name: string): SdkHost => ({ 'tokens.retrieve': async (id) => (calls.push(`${name}:${id}`), { id, from: name }) });
    const go = keyed(`let kept;
      module.exports = async ({ bt, args }) => {
        const out = [];
        if (kept) { try { await kept.tokens.retrieve('old'); out.push('stale bt used'); } catch (e) { out.push(e.message); } }
        kept = bt;
        out.push(await bt.tokens.retrieve(args.id));
        return out;
      };`);
    assert.deepEqual(value(await go({ ...args({ id: 'a' }), sdk: sdkOf('one') })), [{ id: 'a', from: 'one' }]);
    assert.deepEqual(value(await go({ ...args({ id: 'b' }), sdk: sdkOf('two') })), [
      'This bt belongs to an earlier call: use the bt of the current call (req.bt).',
      { id: 'b', from: 'two' },
    ]);
    assert.deepEqual(calls, ['one:a', 'two:b']);
  });

  it('fetch goes to this call’s bridge', async () => {
    const seen: string[] = [];
    const bridge = (name: string): FetchBridge => async (r) => (seen.push(`${name} ${r.url}`), { status: 200, headers: {}, body: name });
    const go = keyed(`module.exports = async ({ args }) => (await fetch('https://x.test/' + args.i)).text();`);
    assert.equal(value(await go({ ...args({ i: 1 }), fetch: bridge('first') })), 'first');
    assert.equal(value(await go({ ...args({ i: 2 }), fetch: bridge('second') })), 'second');
    failed(await go(args({ i: 3 })), { status: 422, detail: /fetch failed: outbound requests are not available/ });
    assert.deepEqual(seen, ['first https://x.test/1', 'second https://x.test/2']);
  });

  it('limits and deadlines are the call’s own', async () => {
    const go = keyed(`let n = 0; module.exports = async ({ args }) => { n += 1; if (args.big) return 'x'.repeat(2000); if (args.wait) await new Promise((r) => setTimeout(r, args.wait)); return n; };`);
    assert.equal((value(await go({ ...args({ big: true }), limits: { maxIoBytes: 100_000 } })) as string).length, 2000);
    failed(await go({ ...args({ big: true }), limits: { maxIoBytes: 1000 } }), { status: 422, kind: 'too_large' });
    assert.equal(value(await go(args({ wait: 120 }))), 3, 'a longer wait passes under the default limit, in the same context');
    failed(await go({ ...args({ wait: 5000 }), limits: { timeoutMs: 100 } }), { status: 408, kind: 'timeout' });
  });

  it('every call gets its own random stream', async () => {
    const go = keyed(`module.exports = async () => [crypto.randomUUID(), Array.from(crypto.getRandomValues(new Uint8Array(8)))];`);
    const seen = new Set<string>();
    for (let i = 0; i < 5; i++) seen.add(JSON.stringify(value(await go())));
    assert.equal(seen.size, 5);
  });
});

describe('globals the code replaces do not break the next call', () => {
  const SDK: SdkHost = {
    'tokens.retrieve': async () => {
      throw Object.assign(new Error('The token was not found.'), { status: 404 });
    },
  };
  const ECHO: FetchBridge = async (r) => ({ status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: r.url }) });

  /** The first call runs `tamper`; every later call uses the runtime and reports what it saw. */
  const code = (tamper: string) => `const errors = require('@coffer/errors');
    let calls = 0;
    module.exports = async ({ args, bt }) => {
      calls += 1;
      if (calls === 1) { ${tamper}; return 'tampered'; }
      console.log('line', calls);
      const res = await fetch('https://x.test/' + calls);
      const body = await res.json();
      await new Promise((r) => setTimeout(r, 1));
      let error;
      try { await bt.tokens.retrieve('t'); } catch (e) { error = [e instanceof errors.NotFoundError, e instanceof Error, e.status, e.message]; }
      return { calls, args, status: res.status, body, error, parsed: JSON.parse('{"a":1}'), text: JSON.stringify({ b: 2 }) };
    };`;

  const tamperings: [string, string][] = [
    ['console replaced and console.log patched', `console.log = () => {}; globalThis.console = { log() {} }`],
    ['fetch, Response and Headers replaced', `globalThis.fetch = async () => ({ json: async () => 'fake', status: 299 }); globalThis.Response = null; globalThis.Headers = null`],
    ['timers replaced', `globalThis.setTimeout = () => { throw new Error('no timers'); }; globalThis.clearTimeout = null; globalThis.queueMicrotask = null`],
    ['JSON replaced, and its methods', `JSON.parse = () => 'hijacked'; JSON.stringify = () => '"hijacked"'; globalThis.JSON = { parse: () => 1, stringify: () => '1' }`],
    [
      'the error classes attacked',
      `for (const C of Object.values(errors)) { try { C.prototype.toString = () => 'x'; } catch {} try { Object.setPrototypeOf(C.prototype, null); } catch {} try { C.status = 500; } catch {} }
       try { errors.NotFoundError = class {}; } catch {}`,
    ],
    [
      'Object.prototype polluted with accessors, setters and toJSON',
      `Object.defineProperty(Object.prototype, 'bt', { __proto__: null, set() {}, configurable: true });
       Object.defineProperty(Object.prototype, 'data', { __proto__: null, set() { throw new Error('data setter'); }, configurable: true });
       Object.defineProperty(Object.prototype, 'status', { __proto__: null, set() { throw new Error('status setter'); }, configurable: true });
       // Would rewrite the runtime's own messages (a fetch request, the outcome report) if they were plain objects.
       Object.prototype.toJSON = function () { return this.method !== undefined || this.ok !== undefined || this.op !== undefined ? { hijacked: true } : this; };
       Object.defineProperty(Object.prototype, 'set', { __proto__: null, value: () => 1, configurable: true, writable: true });
       Object.defineProperty(Object.prototype, 'get', { __proto__: null, value: () => 1, configurable: true, writable: true })`,
    ],
    [
      'Promise, Reflect, Array.isArray, Math and the array iterator replaced',
      `Promise.prototype.then = function () { return this; }; Promise.resolve = () => 1; Reflect.apply = () => 'hijacked';
       Array.isArray = () => false; Math.max = () => -1; Math.min = () => -1; Array.prototype[Symbol.iterator] = function* () {}`,
    ],
  ];

  for (const [name, tamper] of tamperings) {
    it(`${name}: the next call still has its req, console, fetch, timers, bt errors and JSON`, async () => {
      const go = keyed(code(tamper), { sdk: SDK, fetch: ECHO });
      assert.equal(value(await go(args({ i: 1 }))), 'tampered');
      const r = await go(args({ i: 2 }));
      const got = value(r) as Record<string, unknown>;
      // JSON.parse / stringify inside the code are the originals again, so the whole value is comparable.
      assert.deepEqual(got, {
        calls: 2,
        args: { i: 2 },
        status: 201,
        body: { url: 'https://x.test/2' },
        error: [true, true, 404, 'The token was not found.'],
        parsed: { a: 1 },
        text: '{"b":2}',
      });
      assert.deepEqual(r.console, ['line 2']);
      assert.equal((value(await go(args({ i: 3 }))) as { calls: number }).calls, 3, 'and the context stays warm');
    });
  }

  it('the runtime’s globals are put back between calls; changes last one call', async () => {
    const go = keyed(`let calls = 0;
      module.exports = async () => {
        calls += 1;
        const seen = [typeof fetch, typeof console.log, typeof URL, typeof setTimeout, typeof crypto.randomUUID, globalThis.global === globalThis];
        globalThis.fetch = 1; globalThis.URL = 2; console.log = 3; globalThis.global = 4; globalThis.mine = calls;
        return [calls, seen, globalThis.mine];
      };`);
    const good = ['function', 'function', 'function', 'function', 'function', true];
    assert.deepEqual(value(await go()), [1, good, 1]);
    assert.deepEqual(value(await go()), [2, good, 2], 'the code’s own globals persist; the runtime’s are back');
  });

  it('a global left holding its own value, but as an accessor or with other attributes, is put back too', async () => {
    const go = keyed(`let calls = 0;
      module.exports = async () => {
        calls += 1;
        const d = (o, n) => { const x = Object.getOwnPropertyDescriptor(o, n); return [typeof x.value, x.writable, x.enumerable, x.configurable, 'get' in x]; };
        const seen = [d(globalThis, 'setTimeout'), d(globalThis, 'URL'), d(globalThis, 'JSON'), d(JSON, 'parse')];
        const { setTimeout: t, URL: u, JSON: j } = globalThis, parse = JSON.parse;
        Object.defineProperty(globalThis, 'setTimeout', { value: t, writable: false, enumerable: true });
        Object.defineProperty(globalThis, 'URL', { get: () => u, configurable: true });
        Object.defineProperty(globalThis, 'JSON', { value: j, enumerable: true });
        Object.defineProperty(JSON, 'parse', { value: parse, writable: false });
        return [calls, seen];
      };`);
    const installed = (type: string) => [type, true, false, true, false];
    const good = [installed('function'), installed('function'), installed('object'), installed('function')];
    assert.deepEqual(value(await go()), [1, good]);
    assert.deepEqual(value(await go()), [2, good], 'put back, in the same context');
  });

  it('the error classes and the objects behind crypto are frozen at install', async () => {
    const go = keyed(`const e = require('@coffer/errors');
      module.exports = async () => [Object.values(e).every((C) => Object.isFrozen(C) && Object.isFrozen(C.prototype)), Object.isFrozen(crypto), Object.isFrozen(crypto.subtle)];`);
    assert.deepEqual(value(await go()), [true, true, true]);
  });

  it('a global the runtime cannot put back (non-configurable, or a frozen globalThis): the next call gets a fresh context', async () => {
    for (const tamper of [
      `Object.defineProperty(globalThis, 'fetch', { value: () => 'mine', configurable: false, writable: false })`,
      `Object.defineProperty(globalThis, 'console', { value: { log() {} }, configurable: false })`,
      `Object.freeze(globalThis)`,
    ]) {
      const go = keyed(`let n = 0; module.exports = async ({ args }) => { n += 1; if (args.tamper) { ${tamper}; } return [n, typeof fetch, String(fetch).includes('mine')]; };`);
      assert.deepEqual(value(await go(args({}))), [1, 'function', false]);
      value(await go(args({ tamper: true })));
      assert.deepEqual(value(await go(args({}))), [1, 'function', false], tamper);
      const r = await go(args({ log: true }));
      assert.deepEqual(value(r), [2, 'function', false]);
    }
  });
});

/** A warm call reports once, after every message it sent: whether it settles at once or many microtasks later. */
describe('a warm call’s outcome', () => {
  it('reports the same value, failure and console lines however many microtasks it takes', async () => {
    const go = keyed(`let n = 0;
      module.exports = async ({ args }) => {
        n += 1;
        console.log('first', n);
        for (let i = 0; i < args.awaits; i++) await null;
        console.log('last', n);
        if (args.fail === 'throw') throw new Error('thrown after ' + args.awaits);
        if (args.fail === 'data') { const { BadRequestError } = require('@coffer/errors'); throw new BadRequestError('declined', { code: 'card' }); }
        return { n, awaits: args.awaits, big: 'x'.repeat(args.big || 0) };
      };`);
    assert.equal((value(await go(args({ awaits: 0 }))) as { n: number }).n, 1, 'the cold call loads the module');
    let n = 1;
    for (const awaits of [0, 1, 3, 7, 8, 20, 200]) {
      n += 1;
      const ok = await go(args({ awaits }));
      assert.deepEqual(value(ok), { n, awaits, big: '' }, `${awaits} awaits`);
      assert.deepEqual(ok.console, [`first ${n}`, `last ${n}`]);
      n += 1;
      const thrown = await go(args({ awaits, fail: 'throw' }));
      failed(thrown, { status: 422, kind: 'user_error', detail: `thrown after ${awaits}` });
      assert.deepEqual(thrown.console, [`first ${n}`, `last ${n}`]);
    }
    const data = await go(args({ awaits: 2, fail: 'data' }));
    failed(data, { status: 400, detail: 'declined' });
    assert.deepEqual(!data.ok && data.error.data, { code: 'card' });
    const big = await go(args({ awaits: 1, big: 100_000 }));
    assert.equal((value(big) as { big: string }).big.length, 100_000);
    const undef = keyed(`module.exports = async () => undefined;`);
    for (let i = 0; i < 3; i++) assert.equal(value(await undef()), undefined);
  });

  it('a host call it starts and does not await is still made, and while it is pending the context is not handed on', async () => {
    const seen: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // Still pending when the call ends, whatever the timing (one that has answered by then leaves nothing behind).
    const sdk: SdkHost = { tokenize: async (x) => (seen.push(JSON.stringify(x)), await held, 'reply') };
    const go = keyed(`let n = 0; module.exports = async ({ args, bt }) => {
      n += 1;
      if (args.leave) bt.tokenize({ call: n });
      return n;
    };`, { sdk });
    assert.equal(value(await go(args({}))), 1);
    assert.equal(value(await go(args({}))), 2);
    assert.equal(value(await go(args({ leave: true }))), 3);
    assert.deepEqual(seen, ['{"call":3}']);
    assert.equal(value(await go(args({}))), 1, 'a call left pending: a fresh context');
    release();
  });
});

describe('the overhead it saves', () => {
  it('serves repeated calls from one isolate and one context', async () => {
    const s = new Sandbox();
    try {
      const code = `let n = 0; module.exports = async () => ++n;`;
      for (let i = 1; i <= 50; i++) assert.equal(value(await s.run({ tenantId: 'T', cacheKey: 'k', code, req: {} })), i);
      assert.equal(s.warmIsolates, 1);
    } finally {
      s.dispose();
    }
  });
});

describe('dispose', () => {
  it('ends the runs under way and resolves only once they have settled, so no isolate work outlives it', async () => {
    const s = new Sandbox();
    const running = s.run({ tenantId: 'T', cacheKey: 'dispose', code: 'module.exports = async () => { await new Promise((r) => setTimeout(r, 5000)); return 1; };', req: {} });
    let settled = false;
    void running.then(() => (settled = true));
    await sleep(100);
    const started = performance.now();
    await s.dispose();
    assert.equal(settled, true, 'the run had settled when dispose resolved');
    assert.ok(performance.now() - started < 1000, 'at once: the run is ended, not waited for');
    failed(await running, { kind: 'runtime', detail: /shut down/ });
    failed(await s.run({ tenantId: 'T', cacheKey: 'dispose', code: 'module.exports = async () => 1;', req: {} }), { detail: /shut down/ });
  });
});
