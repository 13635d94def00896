import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, describe, it } from 'node:test';
import { Sandbox, type SdkHost } from '../../src/sandbox/index.ts';

/**
 * User code runs in sandbox processes: code that makes V8 end its process (an out-of-memory
 * isolated-vm's limit does not catch) costs that process, not the caller's, and not the runs of
 * other tenants.
 */
const BOMBS: Record<string, string> = {
  'an object with millions of properties': `module.exports = () => { const o = {}; for (let i = 0; i < 2e6; i++) o['k' + i] = 1; return { raw: 1 }; };`,
  'a module-level Map that keeps growing': `const m = new Map(); module.exports = () => { for (let i = 0; i < 5e6; i++) m.set(i, { i }); return { raw: 1 }; };`,
  'a growing Set': `const s = new Set(); module.exports = () => { for (let i = 0; i < 1e7; i++) s.add('x' + i); return { raw: 1 }; };`,
  'a holey array': `module.exports = () => { const a = []; a[5e7] = 1; for (let i = 0; i < 5e7; i++) a[i] = i; return { raw: 1 }; };`,
};

/** The sandbox processes this process runs now. */
function sandboxPids(): string[] {
  return fs.readdirSync('/proc').filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
      return ppid === String(process.pid) && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('process/child.ts');
    } catch {
      return false;
    }
  });
}

const slow = (ms: number, value: unknown) => `module.exports = async () => { await new Promise((r) => setTimeout(r, ${ms})); return ${JSON.stringify(value)}; };`;

describe('sandbox processes', () => {
  const logged: { msg: string; obj: Record<string, unknown> }[] = [];
  const sb = new Sandbox({ processes: 1, log: { warn: (obj, msg) => logged.push({ obj: obj as Record<string, unknown>, msg }) } });
  after(() => sb.dispose());

  for (const [name, code] of Object.entries(BOMBS)) {
    it(`${name}: the run fails as out of memory, nothing else does, and the sandbox goes on`, async () => {
      const restarts = sb.restarts;
      const tenant = `bomber-${name}`;
      const result = await sb.run({ tenantId: tenant, cacheKey: 'bomb', code, req: {} });
      assert.equal(result.ok, false);
      assert.ok(!result.ok);
      // Either isolated-vm's limit caught it (422 memory), or V8 ended the process, told the same way.
      assert.equal(result.error.status, 422, JSON.stringify(result.error));
      assert.equal(result.error.kind, 'memory');
      const next = await sb.run({ tenantId: 'bystander', cacheKey: 'ok', code: 'module.exports = () => ({ raw: "still here" });', req: {} });
      assert.deepEqual(next.ok && next.value, { raw: 'still here' });
      assert.ok(sb.restarts >= restarts);
    });
  }

  it('a run of another tenant in the process that ended is run again, once, elsewhere, when nothing of it was seen outside', async () => {
    const bomb = BOMBS['a holey array'];
    const logs = logged.length;
    // Both in the one shared process: the victim's timer outlives the bomb's second or two, on a loaded machine too.
    const victim = sb.run({ tenantId: 'victim', cacheKey: 'v', code: slow(10_000, { raw: 'v' }), req: {} });
    await new Promise((r) => setTimeout(r, 100));
    const restarts = sb.restarts;
    const bombed = await sb.run({ tenantId: 'culprit', cacheKey: 'b', code: bomb, req: {} });
    assert.equal(bombed.ok, false);
    const v = await victim;
    assert.deepEqual(v.ok && v.value, { raw: 'v' }, JSON.stringify(v));
    assert.ok(sb.restarts > restarts, 'the shared process ended');
    const warn = logged.slice(logs).find((l) => (l.obj.tenants as string[]).includes('victim'));
    assert.ok(warn, 'the end is logged with the tenants that had runs in it');
    assert.equal(warn.obj.outOfMemory, true);

    // Both now run in processes of their own: the culprit's next bomb ends only its own.
    const again = sb.run({ tenantId: 'victim', cacheKey: 'v', code: slow(5000, { raw: 'v2' }), req: {} });
    await new Promise((r) => setTimeout(r, 100));
    const second = await sb.run({ tenantId: 'culprit', cacheKey: 'b', code: bomb, req: {} });
    assert.equal(second.ok, false);
    const v2 = await again;
    assert.deepEqual(v2.ok && v2.value, { raw: 'v2' });
  });

  it('a run that had called its host is not run again: it fails with a clear error', async () => {
    const sole = new Sandbox({ processes: 1 });
    try {
      let calls = 0;
      const sdk: SdkHost = { ping: async () => ++calls };
      const code = `module.exports = async (req) => { await req.bt.ping(); await new Promise((r) => setTimeout(r, 6000)); return { raw: 'late' }; };`;
      const withEffects = sole.run({ tenantId: 'effects', cacheKey: 'e', code, req: {}, sdk });
      while (calls === 0) await new Promise((r) => setTimeout(r, 20));
      const bombed = await sole.run({ tenantId: 'culprit', cacheKey: 'b', code: BOMBS['a holey array'], req: {} });
      assert.equal(bombed.ok, false);
      const r = await withEffects;
      assert.ok(!r.ok);
      assert.match(r.error.detail, /sandbox process running this code/);
      assert.equal(calls, 1, 'the SDK call was made once: the run did not start again');
    } finally {
      await sole.dispose();
    }
  });

  it('a process that stops answering is ended past its runs\' time limit, and replaced', async () => {
    const sole = new Sandbox({ processes: 1, limits: { timeoutMs: 200 } });
    try {
      const first = await sole.run({ tenantId: 't', cacheKey: 'l', code: 'module.exports = () => ({ raw: 1 });', req: {} });
      assert.ok(first.ok);
      const [pid] = sole.pids;
      // Stopped, it can neither finish the run nor say that it cannot.
      process.kill(pid, 'SIGSTOP');
      const r = await sole.run({ tenantId: 't', cacheKey: 'l', code: 'module.exports = () => ({ raw: 2 });', req: {} });
      assert.ok(!r.ok);
      assert.match(r.error.detail, /sandbox process running this code stopped unexpectedly/);
      assert.equal(sole.restarts, 1);
      const after = await sole.run({ tenantId: 't', cacheKey: 'l', code: 'module.exports = () => ({ raw: 3 });', req: {} });
      assert.deepEqual(after.ok && after.value, { raw: 3 });
    } finally {
      await sole.dispose();
    }
  });

  it('no secret of the API process is in a sandbox process\'s environment', async () => {
    process.env.COFFER_TEST_SECRET_ENV = 'must-not-reach-the-sandbox';
    const sole = new Sandbox({ processes: 1 });
    try {
      const r = await sole.run({ tenantId: 't', cacheKey: 'env', code: `module.exports = () => ({ raw: typeof process });`, req: {} });
      assert.deepEqual(r.ok && r.value, { raw: 'undefined' });
      // The process's own environment, read from /proc, holds none of the API process's variables but a few Node needs.
      const pids = sole.pids;
      assert.equal(pids.length, 1);
      assert.ok(sandboxPids().includes(String(pids[0])), 'a child of this process, running the sandbox');
      for (const pid of pids) assert.doesNotMatch(fs.readFileSync(`/proc/${pid}/environ`, 'utf8'), /must-not-reach-the-sandbox|COFFER_TEST_ADMIN_URL|DATABASE_URL/);
    } finally {
      delete process.env.COFFER_TEST_SECRET_ENV;
      await sole.dispose();
    }
  });

  it('a sandbox process keeps two malloc arenas unless the operator sets MALLOC_ARENA_MAX', async () => {
    const arenas = async (): Promise<string | undefined> => {
      const sandbox = new Sandbox({ processes: 1 });
      try {
        const r = await sandbox.run({ tenantId: 't', cacheKey: 'arenas', code: `module.exports = () => ({ raw: 1 });`, req: {} });
        assert.ok(r.ok);
        const environ = fs.readFileSync(`/proc/${sandbox.pids[0]}/environ`, 'utf8').split('\0');
        return environ.find((v) => v.startsWith('MALLOC_ARENA_MAX='));
      } finally {
        await sandbox.dispose();
      }
    };
    const before = process.env.MALLOC_ARENA_MAX;
    try {
      delete process.env.MALLOC_ARENA_MAX;
      assert.equal(await arenas(), 'MALLOC_ARENA_MAX=2');
      process.env.MALLOC_ARENA_MAX = '4';
      assert.equal(await arenas(), 'MALLOC_ARENA_MAX=4');
    } finally {
      if (before === undefined) delete process.env.MALLOC_ARENA_MAX;
      else process.env.MALLOC_ARENA_MAX = before;
    }
  });
});

describe('the wrapper a module is loaded in', () => {
  const sb = new Sandbox();
  after(() => sb.dispose());
  // The script's last expression would be its completion value, copied out of the isolate.
  const escape = `module.exports = async () => ({ raw: 'ok' }); }); (() => { const a = []; for (let i = 0; i < 1e5; i++) a.push({ i }); return a; })() || String({`;

  it('cannot be closed by the code: refused when written', () => {
    const f = sb.check(escape);
    assert.equal(f?.status, 400);
    assert.equal(f?.kind, 'invalid_code');
    assert.match(f!.detail, /may not close the function/);
    assert.match(f!.detail, /^SyntaxError: Unexpected token '\}' /, 'names the brace that closes the wrapper');
    assert.equal(sb.check(`module.exports = async () => ({ raw: '}); ({' });`), undefined, 'braces in strings are fine');
  });

  it('cannot be closed by code stored before the check: refused when run', async () => {
    const r = await sb.run({ tenantId: 't', cacheKey: 'escape', code: escape, req: {} });
    assert.ok(!r.ok);
    assert.equal(r.error.status, 400);
    assert.match(r.error.detail, /may not close the function/);
    assert.match(r.error.detail, /^SyntaxError: Unexpected token '\}' /);
  });
});

describe('bt calls of a run', () => {
  it('stop at the run\'s budget of host-call time', async () => {
    const sb = new Sandbox({ hostCallBudgetMs: 300 });
    try {
      const sdk: SdkHost = { slow: () => new Promise((r) => setTimeout(() => r('done'), 50)) };
      const code = `module.exports = async (req) => {
        let n = 0;
        try { for (;;) { await req.bt.slow(); n++; } } catch (e) { return { raw: { n, status: e.status, message: e.message } }; }
      };`;
      const r = await sb.run({ tenantId: 't', cacheKey: 'budget', code, req: {}, sdk });
      assert.ok(r.ok, JSON.stringify(r));
      const raw = (r.value as { raw: { n: number; status: number; message: string } }).raw;
      assert.equal(raw.status, 429);
      assert.match(raw.message, /budget of 300 ms/);
      assert.ok(raw.n >= 4 && raw.n <= 8, `${raw.n} calls of 50 ms fit in 300 ms`);
    } finally {
      await sb.dispose();
    }
  });

  it('of one tenant run at most SANDBOX_TENANT_HOST_CALLS at once; another tenant\'s do not wait for them', async () => {
    const sb = new Sandbox({ tenantHostCalls: 2 });
    try {
      let running = 0;
      let most = 0;
      const sdk: SdkHost = {
        work: async () => {
          most = Math.max(most, ++running);
          await new Promise((r) => setTimeout(r, 30));
          running--;
          return 1;
        },
      };
      const code = `module.exports = async (req) => ({ raw: (await Promise.all(Array.from({ length: 10 }, () => req.bt.work()))).length });`;
      const busy = sb.run({ tenantId: 'busy', cacheKey: 'w', code, req: {}, sdk });
      let otherCalls = 0;
      const other = await sb.run({ tenantId: 'other', cacheKey: 'w', code: `module.exports = async (req) => ({ raw: await req.bt.one() });`, req: {}, sdk: { one: async () => ++otherCalls } });
      assert.deepEqual(other.ok && other.value, { raw: 1 });
      const r = await busy;
      assert.deepEqual(r.ok && r.value, { raw: 10 });
      assert.equal(most, 2);
    } finally {
      await sb.dispose();
    }
  });
});
