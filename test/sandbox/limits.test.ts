import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DEFAULT_LIMITS, DEFAULT_MAX_WARM_ISOLATES, Sandbox, type FetchBridge } from '../../src/sandbox/index.ts';
import { failed, runner, value } from './helpers.ts';

const sb = new Sandbox();
after(() => sb.dispose());
const run = runner(sb);
const ok = 'module.exports = async (req) => ({ fine: true });';

describe('limits', () => {
  it('has the documented defaults', () => {
    assert.deepEqual(DEFAULT_LIMITS, { memoryMb: 128, timeoutMs: 30_000, maxCodeChars: 50_000, maxIoBytes: 1_048_576, maxConsoleLines: 200 });
    assert.equal(DEFAULT_MAX_WARM_ISOLATES, 50);
  });

  it('memory: a heap bomb → 422 memory, and the sandbox keeps working', async () => {
    const r = await run(`module.exports = async () => { const a = []; for (;;) a.push(new Array(100000).fill(1.5)); };`, { limits: { memoryMb: 16 } });
    failed(r, { status: 422, kind: 'memory' });
    assert.deepEqual(value(await run(ok)), { fine: true });
  });

  it('memory: an ArrayBuffer bomb → 422 memory', async () => {
    failed(await run(`module.exports = async () => { const a = []; for (;;) a.push(new Uint8Array(1 << 20).fill(1)); };`, { limits: { memoryMb: 16 } }), {
      status: 422,
      kind: 'memory',
    });
  });

  it('memory: the limit is per run, so a bigger limit lets the same allocation through', async () => {
    const code = `module.exports = async () => { const a = []; for (let i = 0; i < 40; i++) a.push(new Uint8Array(1 << 20).fill(1)); return a.length; };`;
    failed(await run(code, { limits: { memoryMb: 16 } }), { kind: 'memory' });
    assert.equal(value(await run(code, { limits: { memoryMb: 128 } })), 40);
  });

  it('wall time: a synchronous loop → 408 timeout, on time', async () => {
    const r = await run(`module.exports = () => { for (;;) {} };`, { limits: { timeoutMs: 150 } });
    failed(r, { status: 408, kind: 'timeout', detail: /150 ms/ });
    assert.ok(r.durationMs < 2000, `took ${r.durationMs} ms`);
  });

  it('wall time: a loop at the top level of the module', async () => {
    failed(await run(`for (;;) {} module.exports = async () => 1;`, { limits: { timeoutMs: 150 } }), { status: 408, kind: 'timeout' });
  });

  it('wall time: a loop after an await (past V8’s own per-task timeout)', async () => {
    const r = await run(`module.exports = async () => { await new Promise((r) => setTimeout(r, 20)); for (;;) {} };`, { limits: { timeoutMs: 200 } });
    failed(r, { status: 408, kind: 'timeout' });
    assert.ok(r.durationMs < 2000);
  });

  it('wall time: waiting on a timer longer than the limit', async () => {
    const r = await run(`module.exports = async () => { await new Promise((r) => setTimeout(r, 60000)); };`, { limits: { timeoutMs: 150 } });
    failed(r, { status: 408, kind: 'timeout', detail: /150 ms/ });
    assert.ok(r.durationMs >= 140 && r.durationMs < 2000, `took ${r.durationMs} ms`);
  });

  it('wall time: a fetch that never answers', async () => {
    const hang: FetchBridge = () => new Promise(() => {});
    failed(await run(`module.exports = async () => fetch('https://slow.test');`, { fetch: hang, limits: { timeoutMs: 150 } }), { status: 408, kind: 'timeout' });
  });

  it('wall time: a promise nothing can settle fails at once instead of holding the isolate', async () => {
    const r = await run(`module.exports = async () => { await new Promise(() => {}); };`);
    failed(r, { status: 408, kind: 'timeout', detail: /can never settle/ });
    assert.ok(r.durationMs < 1000, `took ${r.durationMs} ms`);
  });

  it('wall time: work that runs on after the function returned still counts', async () => {
    const r = await run(
      `module.exports = async () => { Promise.resolve().then(() => 0).then(() => 0).then(() => 0).then(() => { for (;;) {} }); return 'early'; };`,
      { limits: { timeoutMs: 150 } },
    );
    failed(r, { status: 408, kind: 'timeout' });
    assert.deepEqual(value(await run(ok)), { fine: true });
  });

  it('wall time: callers pass longer limits for asynchronous runs', async () => {
    assert.equal(value(await run(`module.exports = async () => { await new Promise((r) => setTimeout(r, 120)); return 'waited'; };`, { limits: { timeoutMs: 300_000 } })), 'waited');
  });

  it('arguments over maxIoBytes → 413 too_large, before any code runs', async () => {
    const r = await run(`module.exports = async () => { console.log('ran'); };`, { req: { args: { big: 'x'.repeat(2000) } }, limits: { maxIoBytes: 1000 } });
    failed(r, { status: 413, kind: 'too_large', detail: /arguments are larger than 1000 bytes/ });
    assert.deepEqual(r.console, []);
  });

  it('arguments are measured in UTF-8 bytes', async () => {
    // 400 '€' are 1200 bytes but 400 characters.
    failed(await run(ok, { req: { args: { s: '€'.repeat(400) } }, limits: { maxIoBytes: 1000 } }), { status: 413, kind: 'too_large' });
  });

  it('a result over maxIoBytes → 422 too_large', async () => {
    failed(await run(`module.exports = async () => 'x'.repeat(2 * 1024 * 1024);`), { status: 422, kind: 'too_large', detail: /1048576 bytes/ });
    failed(await run(`module.exports = async () => ({ s: '€'.repeat(400) });`, { limits: { maxIoBytes: 1000 } }), { status: 422, kind: 'too_large' });
    assert.ok(value(await run(`module.exports = async () => 'x'.repeat(900 * 1024);`)));
  });

  it('a result nested deeper than 128 levels → 422 too_large; 128 levels pass', async () => {
    const nest = (levels: number) => `module.exports = async () => { let v = 1; for (let i = 0; i < ${levels}; i++) v = [v]; return v; };`;
    failed(await run(nest(129)), { status: 422, kind: 'too_large', detail: /deeper than 128 levels/ });
    // So deep that the isolate's own JSON.stringify gives up first: still a 422 that says why.
    failed(await run(nest(100_000)), { status: 422, detail: /cannot be serialized as JSON/ });
    let v = value(await run(nest(128)));
    for (let i = 0; i < 128; i++) v = (v as unknown[])[0];
    assert.equal(v, 1);
  });

  it('the configuration does not count against maxIoBytes; the arguments do', async () => {
    const echo = 'module.exports = async (req) => req.configuration.K.length;';
    assert.equal(value(await run(echo, { req: { args: null, configuration: { K: 'c'.repeat(2000) } }, limits: { maxIoBytes: 1000 } })), 2000);
    failed(await run(echo, { req: { args: 'a'.repeat(2000), configuration: { K: 'c' } }, limits: { maxIoBytes: 1000 } }), { status: 413, kind: 'too_large' });
  });

  it('console output is bounded in lines and line length', async () => {
    const r = await run(`module.exports = async () => { for (let i = 0; i < 1000; i++) console.log('line', i); console.log('x'.repeat(20000)); return 1; };`, {
      limits: { maxConsoleLines: 5 },
    });
    assert.equal(value(r), 1);
    assert.deepEqual(r.console, ['line 0', 'line 1', 'line 2', 'line 3', 'line 4', '[console] output truncated: only the first 5 lines are kept']);
    const long = await run(`module.exports = async () => { console.log('y'.repeat(20000)); };`);
    assert.ok(long.console[0].length <= 8193);
  });

  it('a loop that logs forever times out with its console still bounded', async () => {
    const r = await run(`module.exports = () => { for (;;) console.log('spam'); };`, { limits: { timeoutMs: 150, maxConsoleLines: 3 } });
    failed(r, { status: 408, kind: 'timeout' });
    assert.equal(r.console.length, 4);
  });

  it('limits given to the constructor apply to every run; per-run limits override them; nonsense is ignored', async () => {
    const strict = new Sandbox({ limits: { timeoutMs: 100, maxIoBytes: 100 } });
    try {
      const s = runner(strict);
      failed(await s(`module.exports = async () => { for (;;) {} };`), { status: 408, detail: /100 ms/ });
      failed(await s(`module.exports = async () => 'x'.repeat(200);`), { status: 422, kind: 'too_large' });
      assert.equal((value(await s(`module.exports = async () => 'x'.repeat(200);`, { limits: { maxIoBytes: 1000 } })) as string).length, 200);
      assert.equal(value(await s(`module.exports = async () => 1;`, { limits: { timeoutMs: -5, memoryMb: Number.NaN, maxIoBytes: 0 } })), 1);
    } finally {
      strict.dispose();
    }
  });

  it('timers: at most 10000 per run, so a loop cannot flood the host', async () => {
    failed(await run(`module.exports = async () => { for (;;) clearTimeout(setTimeout(() => {}, 1000)); };`), { status: 422, detail: /at most 10000 per run/ });
  });

  it('host calls: at most 50 unfinished at once', async () => {
    const r = await run(
      `module.exports = async ({ bt }) => {
        const ps = Array.from({ length: 60 }, (_, i) => bt.tokenize({ i }).then(() => 'ok', (e) => e.name));
        return (await Promise.all(ps)).filter((x) => x !== 'ok');
      };`,
      { sdk: { tokenize: async () => 1 } },
    );
    assert.deepEqual(value(r), Array(10).fill('RangeError'));
  });
});
